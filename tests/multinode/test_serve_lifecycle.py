"""``lfqa-rubric serve`` started as a user starts it (a process) and stopped with SIGTERM at each moment of its
start-up: it exits 0 and leaves no process and no ``lfqa-ray-*`` temp folder behind. And a replica plan the
local Ray cannot hold is refused in one line, before anything is deployed.

Every process the server starts is its descendant while it runs (local Ray's GCS, raylet, agents and
workers); a thread records them, and the temp folders their command lines name, every 0.1 s.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

from tests.multinode.cluster import free_port

pytestmark = [pytest.mark.multinode, pytest.mark.real_model]

REPO = Path(__file__).resolve().parents[2]
_TEMP = re.compile(r"/tmp/lfqa-ray-[A-Za-z0-9_]+")


class Server:
    """``python -m workers.cli serve ...`` with its process tree watched."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.port = free_port()
        self.log = tmp_path / f"serve-{self.port}.log"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)}
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "workers.cli", "serve", "--port", str(self.port),
                                          "--num-cpus", "2", *args], cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)
        self.seen: dict[int, float] = {}  # pid -> create time
        self.temp_dirs: set[str] = set()
        self._stop = threading.Event()
        self._watch = threading.Thread(target=self._run, daemon=True)
        self._watch.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                for p in psutil.Process(self.proc.pid).children(recursive=True):
                    try:
                        self.seen.setdefault(p.pid, p.create_time())
                        self.temp_dirs.update(_TEMP.findall(" ".join(p.cmdline())))
                    except psutil.Error:
                        continue
            except psutil.Error:
                return
            time.sleep(0.1)

    def get(self, path: str) -> int | None:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code
        except OSError:
            return None

    def wait_for(self, what, timeout_s: float = 400) -> float:
        t0 = time.monotonic()
        while not what():
            assert self.proc.poll() is None, f"the server exited {self.proc.returncode}:\n{self.log.read_text()[-3000:]}"
            assert time.monotonic() - t0 < timeout_s, f"not reached in {timeout_s} s:\n{self.log.read_text()[-3000:]}"
            time.sleep(0.1)
        return time.monotonic() - t0

    def leftovers(self, timeout_s: float = 30) -> list[str]:
        """After the server exited: the processes it started that still run (after ``timeout_s`` of grace)."""
        self._stop.set()
        self._watch.join()
        deadline = time.monotonic() + timeout_s
        while True:
            alive = []
            for pid, created in self.seen.items():
                try:
                    p = psutil.Process(pid)
                    if p.create_time() == created and p.status() != psutil.STATUS_ZOMBIE:
                        alive.append(f"{pid} {' '.join(p.cmdline())[:150]}")
                except psutil.Error:
                    continue
            if not alive or time.monotonic() > deadline:
                for line in alive:  # do not leave them to the next test
                    try:
                        psutil.Process(int(line.split()[0])).kill()
                    except psutil.Error:
                        pass
                return alive
            time.sleep(0.2)


def _ray_started(s: Server) -> bool:
    for pid in list(s.seen):
        try:
            if "raylet" in " ".join(psutil.Process(pid).cmdline()):
                return True
        except psutil.Error:
            continue
    return False


MOMENTS = {
    "before Ray": lambda s: time.sleep(1.0) or True,
    "Ray starting": _ray_started,
    "healthz answers, engine loading": lambda s: s.get("/healthz") == 200,
    "ready": lambda s: s.get("/readyz") == 200,
}


@pytest.mark.parametrize("moment", list(MOMENTS))
def test_sigterm_at_any_moment_of_start_up_leaves_nothing(tmp_path, moment):
    s = Server(tmp_path, "--rubrics", "conciseness,coherence", "--batch-size", "8")
    waited = s.wait_for(lambda: MOMENTS[moment](s))
    if moment == "healthz answers, engine loading":
        # the point of the moment: the ingress answers while the LLM replica is still loading
        assert s.get("/readyz") in (503, None), "ready already: the moment was missed"
    s.proc.send_signal(signal.SIGTERM)
    code = s.proc.wait(timeout=120)
    log = s.log.read_text()
    left = s.leftovers()
    # before Ray, the process may still be importing, with SIGTERM's default action (-15): nothing has started
    allowed = (0, -signal.SIGTERM) if moment == "before Ray" else (0,)
    assert code in allowed, f"exit {code} after SIGTERM at '{moment}' ({waited:.1f} s in):\n{log[-3000:]}"
    assert not left, f"processes left after SIGTERM at '{moment}': {left}"
    assert not [d for d in s.temp_dirs if Path(d).exists()], f"temp folders left: {s.temp_dirs}"
    if moment != "before Ray":
        assert s.temp_dirs, "the watch saw no Ray process: nothing was checked"


def test_unplaceable_plan_is_refused_in_one_line_at_start_up(tmp_path):
    s = Server(tmp_path, "--rubrics", "conciseness,grammar,coherence", "--replicas", "2")
    code = s.proc.wait(timeout=300)
    lines = [ln for ln in s.log.read_text().splitlines() if ln.strip()]
    assert code == 2, lines[-20:]
    assert lines[-1].startswith("lfqa-rubric: error: cannot place the service's replicas on this Ray cluster: ")
    assert "need 3 CPU in all; the cluster's 1 node(s) have 2 CPU" in lines[-1]
    assert "lower --replicas or --replica-cpus, or give the local Ray more CPUs (--num-cpus)" in lines[-1]
    assert not s.leftovers() and not [d for d in s.temp_dirs if Path(d).exists()]
