"""The CPU profile sets OpenMP's wait policy before torch loads, and leaves a user's setting alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: In a fresh interpreter (torch not imported): set it, then again once "torch" is in sys.modules (a stand-in
#: module: importing the real one takes seconds and would prove nothing more).
CODE = ("import os, sys, types; from models.rubric_backends.cpu_rubrics import prefer_passive_omp; first = prefer_passive_omp(); "
        "after = os.environ.get('OMP_WAIT_POLICY'); os.environ.pop('OMP_WAIT_POLICY', None); "
        "sys.modules['torch'] = types.ModuleType('torch'); "
        "print(first, prefer_passive_omp(), after, os.environ.get('OMP_WAIT_POLICY'))")


@pytest.mark.parametrize("given,want", [(None, "True False PASSIVE None"), ("ACTIVE", "True False ACTIVE None")])
def test_passive_unless_given_and_only_before_torch(given, want):
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if given:
        env["OMP_WAIT_POLICY"] = given
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split("\n")[-2] == want
