"""The English-only versions' language check (issue 59): ``rubric.scoring.not_english`` on written examples, and
grammar, fluency, conciseness and specificity abstaining on Hindi and Japanese answers, with their reason, counted
in the manifest, where they gave 5.0 (grammar, fluency) and meaningless values with no flag on f2de0e0."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from rubric.scoring import (ABSTAIN_PREFIX, ENGLISH_ONLY, LANGUAGE_CHECK, MIN_WORDS, RUBRICS, english_share,
                            language_checks, latin_words, letter_scripts, not_english)

EXAMPLES = json.loads((Path(__file__).resolve().parents[1] / "language_examples.json").read_text(encoding="utf-8"))


def _table(words: dict[str, tuple[float, float]]):
    """A frequency lookup from a table (unknown words: 0 everywhere)."""
    return lambda w: words.get(w, (0.0, 0.0))


def test_the_pure_rule_on_a_table_of_frequencies():
    freq = _table({"the": (7.7, 5.0), "sky": (5.0, 2.0), "blue": (5.1, 2.5), "el": (4.6, 7.2), "cielo": (1.5, 5.5),
                   "es": (3.5, 7.0), "azul": (1.2, 5.0)})
    assert not_english("The sky is blue.", freq) is None
    why = not_english("El cielo es azul.", freq)
    assert why == "not English: 0% of its 4 words read as English words (under 10%); this version reads English only"
    assert not_english("El cielo", freq) is None  # fewer than MIN_WORDS: not judged
    assert MIN_WORDS == 3 and latin_words("x = a + b, then y is 2x") == ["then", "is"]
    assert english_share(["the", "sky", "el"], freq) == (pytest.approx(2 / 3), 3)
    why = not_english("空が青いのは、光が散乱されるためです。", freq)
    assert why.startswith("not English: 0% of its letters are Latin (mostly ") and "CJK" in why and "Hiragana" in why
    assert letter_scripts("aé ж") == {"LATIN": 2, "CYRILLIC": 1}
    assert not_english("42 + 17 = 59", freq) is None and not_english(None, freq) is None  # nothing to judge


@pytest.fixture(scope="module")
def check():
    pytest.importorskip("wordfreq")
    from models.rubric_backends.language import english_check

    return english_check()


@pytest.mark.parametrize("name", sorted(EXAMPLES["not_english"]))
def test_an_answer_in_another_language_is_called_one(check, name):
    why = check(EXAMPLES["not_english"][name])
    assert why is not None and why.startswith("not English: ") and "\n" not in why


@pytest.mark.parametrize("name", sorted(EXAMPLES["english"]))
def test_an_english_answer_is_english(check, name):
    assert check(EXAMPLES["english"][name]) is None


def test_the_store_key_holds_the_check_of_the_english_only_versions():
    assert language_checks(["grammar.harper.v1", "coherence.geval.v1"]) == {"grammar.harper.v1": LANGUAGE_CHECK}
    assert language_checks(["coherence.geval.v1"]) == {}
    assert ENGLISH_ONLY <= set(RUBRICS.names())
    from rubric.config import ScoringConfig
    from workers.storage.store import key_differences, score_key

    base = dict(path="x", sha256="s", fmt="lfqa-hp", options={}, config=ScoringConfig())
    old = score_key(**base, specs=[RUBRICS.get("coherence.geval.v1")])
    assert "language_checks" not in old  # a job without an English-only version keeps its key
    new = score_key(**base, specs=[RUBRICS.get("grammar.harper.v1")])
    assert new["language_checks"] == {"grammar.harper.v1": LANGUAGE_CHECK}
    before = {k: v for k, v in new.items() if k != "language_checks"}  # a store made before the check
    assert key_differences(before, new) == [f"language_checks: '<absent>' -> {{'grammar.harper.v1': "
                                            f"'{LANGUAGE_CHECK}'}}"]


def test_the_english_only_versions_abstain_on_hindi_and_japanese_and_the_manifest_counts_them(tmp_path):
    """On f2de0e0 the Hindi and Japanese answers got grammar and fluency 5.0, conciseness and specificity values,
    with no flag; now each English-only version abstains on them with its reason, the English answers' scores are
    what they were, and the manifest counts the abstentions."""
    from rubric.config import ScoringConfig
    from workers.jobs.score import run_job

    sample = [json.loads(line) for line in (Path(__file__).resolve().parents[3] / "rubric" / "data" /
                                            "sample_pairs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    rows = sample[:4]
    rows[1] = {**rows[1], "answer_2": EXAMPLES["not_english"]["hi"]}
    rows[2] = {**rows[2], "answer_1": EXAMPLES["not_english"]["ja"]}
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    versions = ["grammar.harper.v1", "fluency.harper.v1", "conciseness.lexical_density.v1", "specificity.concrete.v1"]
    specs = [RUBRICS.get(v) for v in versions]
    m = run_job(src, "lfqa-hp", specs, tmp_path / "out", config=ScoringConfig(batch_size=4), progress=False)
    answers = {a["answer"]: a for a in pq.read_table(tmp_path / "out" / "answers.parquet").to_pylist()}
    for lang in ("hi", "ja"):
        a = answers[EXAMPLES["not_english"][lang]]
        for s in specs:
            assert a[s.name] is None and a[f"{s.name}_raw"] is None, (lang, s.name)
            assert a[f"{s.name}_error"].startswith(ABSTAIN_PREFIX + "not English: "), a[f"{s.name}_error"]
    english = [a for t, a in answers.items() if t not in (EXAMPLES["not_english"]["hi"], EXAMPLES["not_english"]["ja"])]
    assert len(english) == len(answers) - 2 >= 5 and all(a[s.name] is not None and a[f"{s.name}_error"] is None
                                     for a in english for s in specs)
    assert m["counts"]["abstained_by_rubric"] == {s.name: 2 for s in specs}
    assert all(m["cost"]["per_name"][s.name]["abstained"] == 2 and m["cost"]["per_name"][s.name]["failed"] == 0
               for s in specs)
