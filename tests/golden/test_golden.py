"""The golden command set gives the recorded tables (see golden.py for what is compared, and how exactly)."""

import pytest

from tests.golden import golden


def test_compare_sees_a_changed_number_and_ignores_llm_noise():
    base = {"s": {"llm": True, "tables": {"X": {"t.parquet": {"rows": [{"p": 0.5, "v": "a"}]}}}}}
    moved = {"s": {"llm": True, "tables": {"X": {"t.parquet": {"rows": [{"p": 0.5 + 2e-5, "v": "a"}]}}}}}
    assert golden.compare(base, moved) == []
    flipped = {"s": {"llm": True, "tables": {"X": {"t.parquet": {"rows": [{"p": 0.5, "v": "b"}]}}}}}
    assert golden.compare(base, flipped) == ["s/X/t.parquet/rows[0]/v: expected 'a', got 'b'"]
    cpu = {"s": {"llm": False, "tables": base["s"]["tables"]}}
    assert golden.compare(cpu, {"s": {"llm": False, "tables": moved["s"]["tables"]}})  # CPU: a real move is seen
    ulp = {"s": {"llm": False, "tables": {"X": {"t.parquet": {"rows": [{"p": 0.5 + 2.2e-16, "v": "a"}]}}}}}
    assert golden.compare(cpu, ulp) == []  # ...the last bits of another numpy build are not


def test_compare_reads_json_cells_of_llm_steps_as_numbers():
    def cell(raw, err=None, llm=True):
        v = '{"raw": %r, "error": %s, "extras": {"n": 1}}' % (raw, "null" if err is None else '"%s"' % err)
        return {"s": {"llm": llm, "tables": {"X": {"t.parquet": {"rows": [{"score": v}]}}}}}

    assert golden.compare(cell(0.5022550), cell(0.5022547)) == []   # LLM noise inside a stored score
    assert golden.compare(cell(0.5), cell(0.5017)) == []             # the largest move seen between runs
    assert golden.compare(cell(0.50), cell(0.53))                     # a real change
    assert golden.compare(cell(0.5, None), cell(0.5, "boom"))          # strings inside stay exact
    assert golden.compare(cell(0.5022550, llm=False), cell(0.5022547, llm=False))  # CPU: exact


def test_compare_reads_markdown_numbers_with_the_printed_precision():
    def md(line, llm=True):
        return {"s": {"llm": llm, "tables": {"X": {"r.md": [line]}}}}

    assert golden.compare(md("| a | 0.667 [0.5, 1.000] |"), md("| a | 0.668 [0.5, 1.000] |")) == []
    assert golden.compare(md("| a | 0.667 |"), md("| a | 0.677 |")) == []  # within the tolerance
    assert golden.compare(md("| a | 0.667 |"), md("| a | 0.700 |"))
    assert golden.compare(md("| a | 0.667 |", llm=False), md("| a | 0.668 |", llm=False))


def test_the_chains_hold_every_step_once_in_order():
    names = [s.name for s in golden.steps()]
    chained = [n for chain in golden.CHAINS.values() for n in chain]
    assert sorted(chained) == sorted(names) and len(set(chained)) == len(chained)
    for chain in golden.CHAINS.values():
        assert [n for n in names if n in chain] == list(chain)


# Each chain is one test and an xdist group of its own (the Ray chain in the suite's Ray group: tests/conftest.py),
# so the two workers of `make test` share the check instead of one worker running every command.
@pytest.mark.skipif(not golden.DATA.is_dir(), reason=f"public test data not found at {golden.DATA}")
@pytest.mark.parametrize("chain", list(golden.CHAINS))
def test_golden_outputs_are_unchanged(tmp_path, chain):
    expected = {k: v for k, v in golden.load_expected().items() if k in golden.CHAINS[chain]}
    assert sorted(expected) == sorted(golden.CHAINS[chain]), "golden outputs missing: python tests/golden/golden.py --update"
    actual = golden.run(tmp_path, set(golden.CHAINS[chain]))
    problems = golden.compare(expected, actual)
    assert not problems, "golden outputs changed:\n" + "\n".join(problems)
