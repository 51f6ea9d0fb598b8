"""Protocol plugins load at the entry points or on a judge-registry miss, never inside the judge job: building
``JudgeSettings`` imports no protocol, and a protocol's judge resolves in a process that imported
``workers.protocols`` (as the CLI and the Ray stage actor do) without anyone calling ``load_protocols``."""

import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_judge_settings_import_no_protocol():
    out = _run("""
        import sys
        from workers.jobs.judge import JudgeSettings
        s = JudgeSettings("plain,cot")
        print([x.version for x in s.specs], "workers.protocols" in sys.modules)
    """)
    assert out == "['judge.plain.v1', 'judge.cot.v1'] False"


def test_a_protocol_judge_loads_on_the_first_miss():
    out = _run("""
        import workers.protocols as wp
        from workers.jobs.judge import JudgeSettings
        before = len(wp.PROTOCOLS)
        s = JudgeSettings("arena.pairwise.v1")
        print(before, [x.version for x in s.specs], sorted(wp.PROTOCOLS.names()))
    """)
    assert out == "0 ['arena.pairwise.v1'] ['arena', 'lfqa-e', 'linkage']"


def test_the_stage_actor_module_is_an_entry_point():
    out = _run("""
        import sys
        import workers.cluster.actors
        from rubric.judging import resolve_judges
        print([x.version for x in resolve_judges("lfqa_e.reference_tie.v1")], "workers.protocols" in sys.modules)
    """)
    assert out == "['lfqa_e.reference_tie.v1'] True"
