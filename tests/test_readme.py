"""The README's shell blocks run as written (on small data), in a copy of the checkout.

Every ```bash block of README.md carries a ``<!-- readme-test: KIND ... -->`` line just above it:
``offline`` blocks run as they are; ``shared-data`` blocks run with ``../shared/data/X`` cut to 12
questions of X with 6 answers each; the ``ray`` block (with ``LFQA_TEST_README_RAY=1``) starts a
real local head (its own temp dir and ports, so the test can stop exactly that head; the block's
closing ``ray stop`` would stop every Ray of this user on the machine); ``synopsis`` and ``skip``
blocks are not run (placeholders, or what runs this suite).
``.venv/bin/`` becomes this interpreter's folder and ``OUT`` a temporary folder.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
_BLOCK = re.compile(r"<!-- readme-test: (\w[\w-]*)[^>]*-->\n```bash\n(.*?)```", re.S)
KINDS = {"offline", "shared-data", "ray", "synopsis", "skip"}


def readme_blocks() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer((REPO / "README.md").read_text(encoding="utf-8"))]


def _checkout_copy(dest: Path) -> Path:
    """The tracked files of the checkout (what a fresh clone has), without the venv or outputs."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=REPO, capture_output=True,
                           text=True, check=True).stdout.split("\n")
    for f in filter(None, files):
        src = REPO / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    return dest


def _run(block: str, cwd: Path, out: Path, timeout: int, extra_env: dict | None = None) -> subprocess.CompletedProcess:
    venv_bin = str(Path(sys.executable).parent)
    script = block.replace("$PWD/.venv/bin", venv_bin).replace(".venv/bin/", venv_bin + "/")
    script = re.sub(r"\bOUT\b", str(out), script)
    env = {**os.environ, "PYTHONPATH": str(cwd), "HF_HUB_OFFLINE": "1", **(extra_env or {})}
    return subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def test_every_bash_block_says_whether_it_runs():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.count("```bash") == len(readme_blocks()), "a ```bash block without a <!-- readme-test: --> line"
    assert {k for k, _ in readme_blocks()} <= KINDS
    assert any(k == "offline" for k, _ in readme_blocks())


@pytest.mark.real_model
@pytest.mark.parametrize("index", [i for i, (k, _) in enumerate(readme_blocks()) if k in ("offline", "shared-data")])
def test_block_runs_as_written(index, tmp_path):
    kind, block = readme_blocks()[index]
    cwd = _checkout_copy(tmp_path / "clone")
    if kind == "shared-data":
        for name in set(re.findall(r"\.\./shared/data/([\w.-]+)", block)):
            if not (DATA / name).is_file():
                pytest.skip(f"test data not found at {DATA / name}")
            small = tmp_path / name
            data = json.loads((DATA / name).read_text(encoding="utf-8"))
            # enough questions that the seeded 70/15/15 split has a test question; few answers each
            small.write_text(json.dumps({q: data[q][:6] for q in list(data)[:12]}), encoding="utf-8")
            block = block.replace(f"../shared/data/{name}", str(small))
    done = _run(block, cwd, tmp_path / "out", timeout=600)
    assert done.returncode == 0, f"README block {index} failed:\n{block}\n{done.stderr[-3000:]}"
    assert (tmp_path / "out" / "answers.parquet").is_file()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _stop_head(temp_dir: Path) -> None:
    """Stop the processes of the head started with this temp dir, and only those."""
    import psutil

    mine = []
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(temp_dir) in a for a in p.info["cmdline"] or ()):
                mine.append(p)
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    for p in mine:
        p.terminate()
    _, alive = psutil.wait_procs(mine, timeout=15)
    for p in alive:
        p.kill()


@pytest.mark.real_model
@pytest.mark.skipif(not os.environ.get("LFQA_TEST_README_RAY"),
                    reason="starts a Ray head (~1.3 GB, 1-10 min): LFQA_TEST_README_RAY=1 runs it")
def test_ray_block_runs_as_written(tmp_path):
    pytest.importorskip("ray")
    pytest.importorskip("psutil")
    (kind, block), = [(k, b) for k, b in readme_blocks() if k == "ray"]
    assert "RAY_AUTH_MODE=token" in block  # what the block was missing before
    cwd = _checkout_copy(tmp_path / "clone")
    ray_tmp = Path("/tmp") / f"lfqa-readme-{os.getpid()}"  # short: Ray's socket paths are limited to ~107 bytes
    out = Path(re.search(r"--out (\S+)", block).group(1))
    # the head gets its own temp dir and ports (a shared machine may run other heads), and only it is stopped
    gcs, dashboard = _free_port(), _free_port()
    block = block.replace("ray start --head", f"ray start --head --temp-dir={ray_tmp} --port={gcs} "
                          f"--dashboard-port={dashboard} --dashboard-host=127.0.0.1")
    # a head just started may not have its job agent yet ("No available agent to submit job"; the
    # README says to run the submit again): retry that error only, a bounded number of times
    retry = ('submit() { for i in $(seq 12); do if out=$(ray job submit "$@" 2>&1); then echo "$out"; return 0; fi; '
             'echo "$out" | grep -q "No available agent" || { echo "$out" >&2; return 1; }; sleep 10; done; '
             'echo "$out" >&2; return 1; }\n')
    block = retry + block.replace("ray job submit", f"submit --address http://127.0.0.1:{dashboard}")
    block = re.sub(r"^ray stop.*$", "", block, flags=re.M)
    block = block.replace(str(out), str(tmp_path / "ray-out"))
    try:
        done = _run(block, cwd, tmp_path / "unused", timeout=600)
    finally:
        _stop_head(ray_tmp)
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert done.returncode == 0, f"README Ray block failed:\n{block}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert (tmp_path / "ray-out" / "answers.parquet").is_file()
