"""A judge that fails (no parseable vote, no majority, a context overflow) costs itself, not every system.

The case this pins (docs/paper.md's run): the embedded judge's votes named no verdict on almost every pair,
and because a failure dropped the pair for every system, Table 4 was empty for the rubric model and the
baselines too. With ``--judge-failures miss`` (the default) a failure is the judge's own miss; ``drop``
keeps the old intersection. Table 4 also shows each system on its own decided pairs (the reference
code's way), and Table 8 lists failed and undecided pairs per system.
"""

from __future__ import annotations

import pytest

from rubric.analysis import ALWAYS_A, LONGER_WINS, analysis_markdown, analyze, compare_systems, judge_systems
from rubric.judging.judgments import judgments_table, write_judgments
from tests.rubric.analysis.test_analysis import (JUDGE, TABLE4_PAIRS, _line, _records, _score_output, judgment_rows,
                                        pairs_of)

NO_VOTE = "no parseable vote in 3: no verdict (answer_1/answer_2) in '1. Preheat your oven...'"


def _failing_judge(out, *, perturbed: bool = False, fail=lambda q: True):
    """A judge output over the analysis tests' 12 x 6 pairs whose order-ab votes cannot be read on the
    questions ``fail`` picks (order ba answers; the debiased verdict needs both, so it fails too)."""
    recs, splits, _ = _records(perturbed)
    rows = []
    for (q, first, second, p), split in zip(recs, splits):
        spec = [(p.pair_id, p.question_id, p.answer_id_a, p.answer_id_b, p.label, len(p.answer_a.split()),
                 len(p.answer_b.split()))]
        better = "a" if first > second else "b"
        rows += judgment_rows(spec, {p.pair_id: (better, better)}, split=split,
                              errors={(p.pair_id, "ab"): NO_VOTE} if fail(q) else None)
    write_judgments(judgments_table(rows), out)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    from rubric.preference.evaluate import fit_model

    root = tmp_path_factory.mktemp("failures")
    table = _score_output(root / "score")
    model, _ = fit_model(table, split="train")
    model.to_json(root / "score" / "model.json")
    _failing_judge(root / "judge")
    _score_output(root / "score_typos", perturbed=True)
    # on the perturbed copy the judge fails on questions 10 and 11 only
    _failing_judge(root / "judge_typos", perturbed=True, fail=lambda q: q >= 10)
    return root


def test_a_judge_failing_on_every_pair_empties_table_4_only_with_drop(outputs):
    root = outputs
    dropped = analyze([root / "score", root / "judge"], split="test", n_boot=30, judge_failures="drop")
    assert dropped.comparison.pair_ids == () and dropped.comparison.n_dropped == 24  # the reported bug
    assert all(r.n == 0 for r in dropped.comparison.rows)

    a = analyze([root / "score", root / "judge"], split="test", n_boot=30)  # the default: miss
    c = a.comparison
    assert c.judge_failures == "miss" and len(c.pair_ids) == 24 and c.n_dropped == 0
    rows = {s.name: r for s, r in zip(c.systems, c.rows)}
    assert {r.n for r in rows.values()} == {24}  # every system, the judge included, on all 24 test pairs
    ab, ba, deb = (f"{JUDGE} (logprob), {o}" for o in ("order ab (as given)", "order ba (swapped)",
                                                      "debiased (mean of both orders)"))
    assert rows[ab].values["accuracy"] == 0.0 and rows[deb].values["accuracy"] == 0.0  # 24 misses each
    assert rows[ba].values["accuracy"] == 1.0
    model = next(s.name for s in c.systems if s.kind == "rubric model")
    assert rows[model].values["accuracy"] == dropped.comparison.own[0].values["accuracy"] == 1.0
    assert rows[ALWAYS_A].values["accuracy"] == 0.5
    failed = {u.system: (u.n, u.n_missed, u.n_left_out) for u in c.undecided}
    assert failed[ab] == failed[deb] == (24, 24, 0) and failed[ba] == (0, 0, 0) and failed[LONGER_WINS] == (0, 0, 0)
    # each on its own decided pairs, as the reference code scores a judge: the failing orders have none
    own = {s.name: r for s, r in zip(c.systems, c.own)}
    assert own[ab].n == 0 and own[ba].n == 24 and own[model].n == 24

    text = analysis_markdown(a, command="analyze")
    table4 = text[:text.index("### Pairs compared")]
    assert "24 pairs from 4 questions (labelled a or b in the test split and given to every system" in table4
    assert "is a miss for that system only, and every other system keeps it (`--judge-failures miss`)" in table4
    assert _line(table4, f"| {ab} | LLM judge | ").split(" | ")[2:6] == ["24", "0", "24", "0.0000 [0.000, 0.000]"]
    assert _line(text, f"| {ab} | 24 | 24 | 0 | error: ") == (
        f"| {ab} | 24 | 24 | 0 | error: {NO_VOTE} (24) | 0 | - |")
    own_table = text[text.index("### Each system on its own decided pairs"):text.index("## Table 5")]
    assert _line(own_table, f"| {ab} | LLM judge | ").split(" | ")[2:4] == ["0", "0"]
    # Table 7 on the same 24 pairs: the failures are disagreements with no side, counted apart
    verb = {r.system: r for r in a.verbosity.rows}
    assert (verb[ab].n, verb[ab].failed, verb[ab].n_disagreements, verb[ab].short_to_long) == (24, 24, 24, 0)


def test_table_8_keeps_every_system_and_lists_each_ones_failures(outputs):
    root = outputs
    a = analyze([root / "score", root / "judge"], split="test", n_boot=30,
                perturbed={"typos": [root / "score_typos", root / "judge_typos"]})
    (p,) = a.perturbations
    assert p.judge_failures == "miss" and p.n == 24  # before: 0, every pair failed by the judge on one side
    rows = {r.system: r for r in p.rows}
    ab = f"{JUDGE} (logprob), order ab (as given)"
    assert (rows[ab].n_failed_original, rows[ab].n_failed_perturbed) == (24, 12)  # q10 and q11 on the typos
    assert rows[ab].deltas["accuracy"].base == 0.0 and rows[ab].deltas["accuracy"].other == 0.5
    und = {u.system: (u.n, u.n_missed) for u in p.undecided_perturbed}
    assert und[ab] == (12, 12) and und[LONGER_WINS] == (0, 0)
    text = analysis_markdown(a, command="analyze")
    table8 = text[text.index("### Perturbation: typos"):]
    assert _line(table8, f"| {ab} | 24 | 0 / 0 | 24 / 12 | ")
    original = table8[table8.index("Pairs each system failed on or left undecided, original side"):
                      table8.index("Pairs each system failed on or left undecided, perturbed side")]
    assert _line(original, f"| {ab} | 24 | 24 | 0 | error: {NO_VOTE} (24) |")
    perturbed = table8[table8.index("Pairs each system failed on or left undecided, perturbed side"):]
    assert _line(perturbed, f"| {ab} | 12 | 12 | 0 | error: {NO_VOTE} (12) |")

    dropped = analyze([root / "score", root / "judge"], split="test", n_boot=30, judge_failures="drop",
                      perturbed={"typos": [root / "score_typos", root / "judge_typos"]})
    assert dropped.perturbations[0].n == 0


def test_judge_failures_is_checked_and_the_cli_passes_it(outputs, capsys):
    from rubric.analysis import JUDGE_FAILURES
    from workers.cli import main
    from workers.cli.tables import JUDGE_FAILURES as CLI_CHOICES

    assert CLI_CHOICES == JUDGE_FAILURES  # restated for --help without importing the analysis
    pairs = pairs_of(TABLE4_PAIRS)
    with pytest.raises(ValueError, match="'judge_failures' must be one of miss, drop, got 'skip'"):
        compare_systems(pairs, judge_systems(judgments_table(judgment_rows(TABLE4_PAIRS, {}))), judge_failures="skip")
    md = outputs / "drop.md"
    assert main(["analyze", str(outputs / "score"), str(outputs / "judge"), "--judge-failures", "drop",
                 "--n-boot", "20", "--out", str(md)]) == 0
    text = md.read_text()
    assert "--judge-failures drop" in text.splitlines()[2]
    assert "— 0 pairs from 0 questions" in text and "(`--judge-failures drop`)" in text
