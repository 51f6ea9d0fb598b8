"""Perturbation attacks: words and budgets, character edits, synonyms, the greedy attack against a victim,
the rubric model as a victim, and the perturbed copy of an input in its own format.

The victim of most tests is a lexicon model: an answer scores one point per "strong" word it holds,
and P(a) is the logistic of the score difference, so which words matter (and what an edit does) is
known exactly.
"""

from __future__ import annotations

import csv
import json
import math
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rubric.errors import ConfigError, ProvenanceError
from rubric.perturbation import (ATTACKS, STOPWORDS, RubricVictim, Word, attack_pair, char_edits, decide, match_case,
                            p_label, replace_words, rewrite_input, rubric_victim_specs, same_stem,
                            synonym_candidates, word_budget, word_importance, words)
from rubric.io import read_input
from rubric.io.records import PairRecord, content_id, explode
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.signals import length_raw, whitespace_words
from rubric.scoring.specs import RUBRICS

STRONG = frozenset({"rigorous", "precise", "detailed", "evidence", "measured", "because"})


class LexiconVictim:
    """P(a) = sigmoid(scale * (strong words of a - strong words of b)); counts its probes."""

    name = "lexicon victim"

    def __init__(self, scale: float = 1.5):
        self.scale = scale
        self.calls = 0

    @staticmethod
    def score(text: str) -> int:
        return sum(w.text.lower() in STRONG for w in words(text))

    def p_a(self, triples):
        self.calls += len(triples)
        return np.array([1 / (1 + math.exp(-self.scale * (self.score(a) - self.score(b)))) for _, a, b in triples])


class DictSynonyms:
    """A synonym source from a dict (lower-case word -> candidates)."""

    name = "dict"

    def __init__(self, table):
        self.table = table

    def candidates(self, word):
        return list(self.table.get(word, []))


SYNONYMS = DictSynonyms({
    "rigorous": ["rigorous", "Rigorous", "rigorously", "strict", "the", "two words", "strict", "exact"],
    "precise": ["exact", "accurate"], "detailed": ["thorough"], "evidence": ["proof"], "measured": ["gauged"],
    "because": ["since"], "answer": ["reply"], "light": ["illumination"],
})

GOOD = ("A rigorous, precise answer: the light is scattered because the air molecules are small; detailed "
        "evidence was measured in 1871 (see **Rayleigh**).\n\n- It holds for blue light.\n- And for violet.")
POOR = "The sky is blue because of physics. It is a physics thing, basically, and that is the answer."
QUESTION = "Why is the sky blue?"


def random_text(rng: random.Random, n: int) -> str:
    vocab = ["the", "light", "is", "rigorous", "precise", "air", "blue", "detailed", "evidence", "because",
             "Sunlight", "don't", "well-known", "x-ray", "a", "I", "measured", "scattering", "OK"]
    seps = [" ", " ", " ", ", ", ". ", "\n", " - ", "  ", " (", ") ", ": 42 ", "\t"]
    return "".join(rng.choice(vocab) + rng.choice(seps) for _ in range(n)).strip() + "."


# --- words, budgets, edits ----------------------------------------------------------------------------

@pytest.mark.parametrize("text,expected", [
    ("Don't stop-me now, 425 times!", ["Don't", "stop-me", "now", "times"]),
    ("  leading\ttabs\nand newlines  ", ["leading", "tabs", "and", "newlines"]),
    ("COVID-19 in 2020: **bold** _x_", ["COVID", "in", "bold", "x"]),
    ("Übergrößen café naïve", ["Übergrößen", "café", "naïve"]),
    ("1. 2) 3.5 -- ...", []),
    ("", []),
])
def test_words_are_letter_runs_with_spans(text, expected):
    found = words(text)
    assert [w.text for w in found] == expected
    assert all(text[w.start:w.end] == w.text for w in found)
    assert [w.index for w in found] == list(range(len(found)))


@pytest.mark.parametrize("n,budget,expected", [
    (30, 0.1, 3), (31, 0.1, 4), (10, 0.1, 1), (1, 0.1, 1), (0, 0.1, 0), (5, 1.0, 5), (7, 0.5, 4), (100, 0.25, 25),
])
def test_word_budget_is_ceil_of_the_share(n, budget, expected):
    assert word_budget(n, budget) == expected


@pytest.mark.parametrize("budget", [0, -0.1, 1.5, True, "0.1", float("nan")])
def test_word_budget_rejects_bad_shares(budget):
    with pytest.raises(ConfigError, match="budget"):
        word_budget(10, budget)


@pytest.mark.parametrize("template,word,expected", [
    ("Quick", "rapid", "Rapid"), ("QUICK", "rapid", "RAPID"), ("quick", "rapid", "rapid"), ("I", "me", "Me"),
])
def test_match_case(template, word, expected):
    assert match_case(template, word) == expected


def _one_edit(a: str, b: str) -> bool:
    """b is a with one adjacent swap, substitution, deletion or insertion."""
    if len(a) == len(b):
        diff = [i for i in range(len(a)) if a[i] != b[i]]
        return len(diff) == 1 or (len(diff) == 2 and diff[1] == diff[0] + 1 and a[diff[0]] == b[diff[1]]
                                  and a[diff[1]] == b[diff[0]])
    short, long_ = (a, b) if len(a) < len(b) else (b, a)
    return len(long_) == len(short) + 1 and any(long_[:i] + long_[i + 1:] == short for i in range(len(long_)))


@pytest.mark.parametrize("word", ["scattering", "Rayleigh", "blue", "an", "I", "don't", "well-known", "AAA", "NASA"])
def test_char_edits_change_one_character_and_never_give_the_word_back(word):
    for seed in range(20):
        variants = char_edits(word, random.Random(seed))
        assert variants and len(variants) == len(set(variants)) <= 4
        for v in variants:
            assert v != word and _one_edit(word, v), (word, v)
            # apostrophes and hyphens stay: only letters are edited
            assert [c for c in v if not c.isalpha()] == [c for c in word if not c.isalpha()]


def test_char_edits_follow_the_seed():
    words_ = ["scattering", "molecules", "wavelength", "atmosphere"]
    a = [char_edits(w, random.Random(7)) for w in words_]
    assert a == [char_edits(w, random.Random(7)) for w in words_]
    assert a != [char_edits(w, random.Random(8)) for w in words_]


def test_char_edits_keep_an_all_caps_word_in_caps():
    for seed in range(30):
        for v in char_edits("NASA", random.Random(seed)):
            assert v.isupper()


@pytest.mark.parametrize("a,b,same", [
    ("cook", "cooking", True), ("run", "runs", True), ("big", "large", False), ("rigorous", "rigorously", True),
    ("strict", "stricter", True), ("ensure", "insure", False), ("at", "as", False), ("quick", "quick", True),
])
def test_same_stem(a, b, same):
    assert same_stem(a, b) is same


def test_synonym_candidates_filter_the_word_itself_stems_stopwords_and_phrases():
    got = synonym_candidates("Rigorous", SYNONYMS)
    assert got == ["Strict", "Exact"]
    assert synonym_candidates("the", DictSynonyms({"the": ["a"]})) == []
    assert synonym_candidates("precise", SYNONYMS, max_candidates=1) == ["exact"]
    with pytest.raises(ConfigError, match="max_candidates"):
        synonym_candidates("precise", SYNONYMS, max_candidates=0)


def test_a_synonym_is_never_the_word_itself():
    class Echo:
        name = "echo"

        def candidates(self, word):
            return [word, word.upper(), word.capitalize(), word + "s", "other" if word != "other" else "another"]

    for w in words(GOOD + " " + POOR + " Other OTHER"):
        for c in synonym_candidates(w.text, Echo()):
            assert c.lower() != w.text.lower()


# --- replacing words keeps every other character ---------------------------------------------------------

def _outside(text: str, spans) -> list[str]:
    """The pieces of ``text`` between the given (start, end) spans."""
    out, pos = [], 0
    for s, e in sorted(spans):
        out.append(text[pos:s])
        pos = e
    return out + [text[pos:]]


def test_replace_words_changes_only_the_chosen_words():
    found = words(GOOD)
    new = replace_words(GOOD, {1: "exact", 5: "LIGHT", len(found) - 1: "indigo"}, found)
    after = words(new)
    assert len(after) == len(found)
    assert [after[i].text for i in (1, 5, len(found) - 1)] == ["exact", "LIGHT", "indigo"]
    assert _outside(GOOD, [(found[i].start, found[i].end) for i in (1, 5, len(found) - 1)]) == \
        _outside(new, [(after[i].start, after[i].end) for i in (1, 5, len(found) - 1)])
    with pytest.raises(ConfigError, match="out of range"):
        replace_words(GOOD, {len(found): "x"})


# --- the attack ------------------------------------------------------------------------------------------

def run(attack, a=GOOD, b=POOR, label="a", *, seed=0, budget=0.1, victim=None, **kw):
    victim = victim or LexiconVictim()
    return attack_pair(QUESTION, a, b, label, victim, attack=attack, rng=random.Random(seed), budget=budget,
                       synonyms=SYNONYMS, **kw), victim


@pytest.mark.parametrize("attack", ATTACKS)
@pytest.mark.parametrize("budget", [0.05, 0.1, 0.3, 1.0])
def test_the_budget_holds_on_every_answer(attack, budget):
    rng = random.Random(3)
    for k in range(15):
        a, b = random_text(rng, rng.randint(3, 60)), random_text(rng, rng.randint(3, 60))
        label = "a" if LexiconVictim.score(a) >= LexiconVictim.score(b) else "b"
        r, _ = run(attack, a, b, label, seed=k, budget=budget)
        for side, text in (("a", a), ("b", b)):
            mine = [c for c in r.changes if c.side == side]
            assert len(mine) <= math.ceil(round(budget * len(words(text)), 9)) == r.budget[side]
            assert len({c.index for c in mine}) == len(mine)  # a word changes at most once


@pytest.mark.parametrize("attack", ATTACKS)
def test_text_outside_the_changed_words_is_unchanged_character_for_character(attack):
    rng = random.Random(11)
    checked = 0
    for k in range(20):
        a, b = random_text(rng, rng.randint(10, 50)), random_text(rng, rng.randint(10, 50))
        label = "a" if LexiconVictim.score(a) >= LexiconVictim.score(b) else "b"
        r, _ = run(attack, a, b, label, seed=k, budget=0.3)
        for side, before, after in (("a", a, r.answer_a), ("b", b, r.answer_b)):
            mine = [c for c in r.changes if c.side == side]
            old_spans = [(c.start, c.end) for c in mine]
            new_words = words(after)
            assert len(new_words) == len(words(before))
            new_spans = [(new_words[c.index].start, new_words[c.index].end) for c in mine]
            assert _outside(before, old_spans) == _outside(after, new_spans)
            for c in mine:
                assert before[c.start:c.end] == c.old and new_words[c.index].text == c.new != c.old
                checked += 1
    assert checked > 20


def test_deepwordbug_is_deterministic_under_a_seed_and_changes_with_it():
    first, _ = run("deepwordbug", seed=5, budget=0.5)
    again, _ = run("deepwordbug", seed=5, budget=0.5)
    assert first == again and first.changes
    others = {run("deepwordbug", seed=s, budget=0.5)[0].changes for s in range(6, 12)}
    assert any(o != first.changes for o in others)


def test_deepwordbug_flips_the_victim_by_breaking_its_important_words():
    r, victim = run("deepwordbug", budget=0.2)
    assert r.status == "success" and r.reason == ""
    # every changed word is one the victim counts, and the final texts are what the victim sees as flipped
    assert {c.old.lower() for c in r.changes} <= STRONG
    p_final = victim.p_a([(QUESTION, r.answer_a, r.answer_b)])[0]
    assert decide(p_final) == "b" and p_final == pytest.approx(r.p_after)
    assert r.p_before > 0.5 > r.p_after
    # one probe of the pair, one leave-one-out probe per word, then the candidates of the words visited
    assert r.n_queries > 1 + len(words(GOOD)) + len(words(POOR))


def test_the_search_stops_at_the_first_flip():
    r, _ = run("deepwordbug", budget=1.0)
    # GOOD holds 6 strong words, POOR 1: P(a) falls below 0.5 when GOOD has fewer, i.e. after 6 edits
    assert r.status == "success" and len(r.changes) == 6


def test_a_small_budget_fails_with_the_budget_spent():
    r, _ = run("deepwordbug", budget=0.05)
    # 6 strong words would have to break; the budget allows 2 words of GOOD (edits of POOR change nothing)
    assert r.budget["a"] == math.ceil(0.05 * len(words(GOOD))) == 2
    assert r.status == "failed" and r.reason == "no remaining word lowers P(label)"
    assert len(r.changes) == 2 and {c.side for c in r.changes} == {"a"}
    assert r.p_after < r.p_before


def test_textfooler_swaps_in_synonyms_from_the_source_and_never_stopwords():
    r, _ = run("textfooler", budget=0.3)
    # "because" is strong for the victim but a stopword: the other 5 strong words of GOOD change, it stays,
    # so the scores tie (1 against POOR's "because") and the decision does not flip
    assert r.status == "failed" and len(r.changes) == 5 and r.p_after == pytest.approx(0.5)
    assert "because" not in {c.old for c in r.changes} and "because" in r.answer_a
    for c in r.changes:
        assert c.new.lower() in {x.lower() for x in SYNONYMS.candidates(c.old.lower())}
        assert c.new.lower() != c.old.lower() and c.old.lower() not in STOPWORDS


def test_textfooler_needs_a_synonym_source():
    with pytest.raises(ConfigError, match="synonym source"):
        attack_pair(QUESTION, GOOD, POOR, "a", LexiconVictim(), attack="textfooler", rng=random.Random(0))


def test_unknown_attack_is_refused():
    with pytest.raises(ConfigError, match="unknown attack"):
        run("hotflip")


def test_textfooler_without_any_synonym_fails_without_probing_every_word():
    victim = LexiconVictim()
    r = attack_pair(QUESTION, GOOD, POOR, "a", victim, attack="textfooler", rng=random.Random(0),
                    synonyms=DictSynonyms({}))
    assert r.status == "failed" and "synonym" in r.reason and victim.calls == 1


@pytest.mark.parametrize("label,why", [("tie", "tie"), (None, "unlabeled"), ("b", "already wrong")])
def test_pairs_with_nothing_to_flip_are_skipped_untouched(label, why):
    r, victim = run("deepwordbug", label=label)
    assert r.status == "skipped" and why in r.reason
    assert (r.answer_a, r.answer_b) == (GOOD, POOR) and not r.changes and victim.calls <= 1


def test_an_answer_that_is_not_editable_stays_as_it_is():
    r, _ = run("deepwordbug", budget=1.0, editable=("b",))
    assert r.answer_a == GOOD and all(c.side == "b" for c in r.changes) and r.budget["a"] == 0


@pytest.mark.parametrize("attack", ATTACKS)
def test_a_pair_with_no_answer_left_to_change_is_skipped_with_its_p_label(attack):
    r, victim = run(attack, editable=())
    assert r.status == "skipped" and "already changed" in r.reason and not r.changes
    assert r.p_before == r.p_after > 0.5 and victim.calls == 1


def test_word_importance_is_the_drop_in_p_label_when_the_word_is_removed():
    victim = LexiconVictim()
    cands = [("a", w) for w in words(GOOD)]
    base = float(p_label(victim.p_a([(QUESTION, GOOD, POOR)])[0], "a"))
    imp = word_importance(victim, QUESTION, {"a": GOOD, "b": POOR}, "a", cands, base)
    strong = np.array([w.text.lower() in STRONG for _, w in cands])
    assert np.all(imp[strong] > 0) and np.allclose(imp[~strong], 0)
    # for label b, removing a strong word of a raises P(b): negative importance
    imp_b = word_importance(victim, QUESTION, {"a": GOOD, "b": POOR}, "b", cands, 1 - base)
    assert np.all(imp_b[strong] < 0)


def test_p_label_and_decide():
    assert p_label(0.8, "a") == 0.8 and p_label(0.8, "b") == pytest.approx(0.2)
    assert decide(0.5) == "a" and decide(0.4999) == "b"
    with pytest.raises(ConfigError):
        p_label(0.5, "tie")


# --- the rubric preference model as a victim -------------------------------------------------------------

LENGTH = RUBRICS.get("length.words.v1")
LENGTH_PROV = Provenance(rubric_version="length.words.v1", backend="length", model_id="str.split")


def length_scores(items):
    return [{"length": Score.ok(length_raw(whitespace_words(it.answer)))} for it in items]


def length_pairs():
    """Pairs whose longer answer wins, half of them with the longer answer first."""
    rng = random.Random(0)
    out = []
    for i in range(60):
        long_, short = random_text(rng, rng.randint(30, 60)), random_text(rng, rng.randint(3, 25))
        a, b, label = (long_, short, "a") if i % 2 else (short, long_, "b")
        out.append(PairRecord(pair_id=f"p{i}", question=f"Question {i}?", answer_a=a, answer_b=b, label=label, row=i))
    return out


@pytest.fixture(scope="module")
def length_model():
    from rubric.preference.evaluate import fit_model
    from rubric.tables.features import answers_table, pairs_table

    pairs = length_pairs()
    items = explode(pairs)
    answers = answers_table(items, [LENGTH], {"length": [s["length"] for s in length_scores(items)]},
                            {"length": LENGTH_PROV})
    table = pairs_table(pairs, ["train"] * len(pairs), answers)
    model, _ = fit_model(table, split="train", style=True)
    return model, table


def test_rubric_victim_scores_probes_as_a_table_row_would_be_scored(length_model):
    from rubric.preference.evaluate import model_inputs

    model, table = length_model
    specs, fitted = rubric_victim_specs(model)
    assert [s.version for s in specs] == ["length.words.v1"] and fitted is None
    calls = []

    def scorer(items):
        calls.extend(it.answer_id for it in items)
        return length_scores(items)

    victim = RubricVictim(model, specs, scorer, {"length": LENGTH_PROV})
    dm = model_inputs(model, table, split="train")
    triples = [(p.question, p.answer_a, p.answer_b) for p in length_pairs()]
    got = victim.p_a(triples)
    np.testing.assert_allclose(got, model.predict_proba(dm.X)[:, 0], rtol=1e-12, atol=1e-12)
    n_distinct = len({content_id(q, t) for q, a, b in triples for t in (a, b)})
    assert len(calls) == n_distinct
    victim.p_a(triples[:5])  # cached: no answer is scored twice
    assert len(calls) == n_distinct


def test_rubric_victim_is_attackable(length_model):
    model, _ = length_model
    victim = RubricVictim(model, rubric_victim_specs(model)[0], length_scores, {"length": LENGTH_PROV})
    p = length_pairs()[1]
    r = attack_pair(p.question, p.answer_a, p.answer_b, p.label, victim, attack="deepwordbug", rng=random.Random(0))
    assert r.status in ("success", "failed") and np.isfinite(r.p_before)
    assert r.p_after <= r.p_before


def test_rubric_victim_refuses_scorers_that_make_a_feature_differently(length_model):
    model, _ = length_model
    other = Provenance(rubric_version="length.words.v1", backend="length", model_id="something else")
    with pytest.raises(ProvenanceError, match="model_id"):
        RubricVictim(model, rubric_victim_specs(model)[0], length_scores, {"length": other})


# --- the perturbed copy, in the input's own format ------------------------------------------------------

def _hp(i, **extra):
    return {"id": f"hp-{i}", "question_text": f"Why does thing {i} happen?", "answer_1": f"Because of reason {i}, mostly.",
            "answer_2": f"No idea about {i}.", "human_judgment": "answer_1" if i % 2 else "answer_2", **extra}


def _write_jsonl(path, records, *, blank=True, crlf=False):
    end = "\r\n" if crlf else "\n"
    lines = [json.dumps(r) for r in records]
    if blank:
        lines.insert(2, "")
    path.write_bytes((end.join(lines) + end).encode())


CASES = ["lfqa-hp-jsonl", "lfqa-hp-json", "lfqa-hp-noid", "lfqa-hp-parquet", "lfqa-eval", "jsonl-table",
         "csv-table", "parquet-table", "graded-webglm", "graded-trec"]


def make_input(case, folder):
    """(path, format, reader options) of a small input of each shape, with one rejected row where the format has rows."""
    recs = [_hp(i) for i in range(5)]
    recs[3]["answer_2"] = ""  # a rejected row the copy must keep
    if case == "lfqa-hp-jsonl":
        path = folder / "in.jsonl"
        _write_jsonl(path, recs, crlf=True)
        return path, "lfqa-hp", {}
    if case == "lfqa-hp-json":
        path = folder / "in.json"
        path.write_text(json.dumps(recs))
        return path, "lfqa-hp", {}
    if case == "lfqa-hp-noid":
        path = folder / "in.jsonl"
        _write_jsonl(path, [{k: v for k, v in r.items() if k != "id"} for r in recs])
        return path, "lfqa-hp", {}
    if case == "lfqa-hp-parquet":
        path = folder / "in.parquet"
        pq.write_table(pa.Table.from_pylist(recs), path)
        return path, "lfqa-hp", {}
    if case == "lfqa-eval":
        path = folder / "in.jsonl"
        _write_jsonl(path, [{"pair_id": r["id"], "question": r["question_text"], "answer_a": r["answer_1"],
                             "answer_b": r["answer_2"], "overall_preference": -1 if i % 2 else 1,
                             "coherence_preference": 0} for i, r in enumerate(recs)])
        return path, "lfqa-eval", {}
    mapping = {"question": "q", "answer_a": "r1", "answer_b": "r2", "label": "win", "pair_id": "pid"}
    rows = [{"pid": r["id"], "q": r["question_text"], "r1": r["answer_1"], "r2": r["answer_2"],
             "win": "a" if i % 2 else "b", "other": i} for i, r in enumerate(recs)]
    if case == "jsonl-table":
        path = folder / "in.jsonl"
        _write_jsonl(path, rows)
        return path, "jsonl", {"mapping": mapping}
    if case == "csv-table":
        path = folder / "in.csv"
        with path.open("w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(rows[0]))
            w.writeheader()
            w.writerows(rows)
        return path, "csv", {"mapping": mapping}
    if case == "parquet-table":
        path = folder / "in.parquet"
        pq.write_table(pa.Table.from_pylist(rows), path)
        return path, "parquet", {"mapping": mapping}
    if case == "graded-webglm":
        data = {f"How do I do task {k}?": {
            "doc_list": [{"answer": f"Answer {j} to task {k}, with some words.", "model": "m", "label": j % 3 + 1}
                         for j in range(3)], "ground3": f"Best answer to task {k}."} for k in range(4)}
        path = folder / "in.json"
        path.write_text(json.dumps(data))
        return path, "graded", {"include_references": True}
    data = {f"what is topic {k}": [{"docid": f"d{j}", "passage": f"Passage {j} on topic {k}.", "label": j}
                                   for j in range(3)] for k in range(3)}
    path = folder / "in.json"
    path.write_text(json.dumps(data))
    return path, "graded", {}


@pytest.mark.parametrize("case", CASES)
def test_the_perturbed_copy_reads_back_with_the_same_reader_rows_and_ids(case, tmp_path):
    src, fmt, options = make_input(case, tmp_path)
    read = read_input(src, fmt, **options)
    assert read.pairs
    # perturb the answers of every other pair (graded: answer texts are shared, so change them consistently)
    texts: dict[str, str] = {}
    new = {}
    for k, p in enumerate(read.pairs):
        if k % 2 and fmt != "graded":
            new[p.pair_id] = (p.answer_a.replace("reason", "raeson"), "Perturbed " + p.answer_b)
    if fmt == "graded":
        for p in read.pairs[::2]:
            texts.setdefault(p.answer_id_a, "Changed: " + p.answer_a)
        for p in read.pairs:
            a, b = texts.get(p.answer_id_a, p.answer_a), texts.get(p.answer_id_b, p.answer_b)
            if (a, b) != (p.answer_a, p.answer_b):
                new[p.pair_id] = (a, b)
    assert new
    dest = tmp_path / "out" / f"copy{src.suffix}"  # another name: the ids must not depend on it
    rewrite_input(src, dest, fmt, read.pairs, new, mapping=options.get("mapping"))
    back = read_input(dest, fmt, **options)
    assert back.rows_in == read.rows_in and len(back.rejects) == len(read.rejects)
    assert [p.pair_id for p in back.pairs] == [p.pair_id for p in read.pairs]
    assert [p.label for p in back.pairs] == [p.label for p in read.pairs]
    assert [p.question for p in back.pairs] == [p.question for p in read.pairs]
    for p, q in zip(read.pairs, back.pairs):
        assert (q.answer_a, q.answer_b) == new.get(p.pair_id, (p.answer_a, p.answer_b))
        assert (q.split, q.reference, q.aspects, q.domain, q.expert) == (p.split, p.reference, p.aspects, p.domain,
                                                                          p.expert)


def test_untouched_json_lines_are_kept_byte_for_byte(tmp_path):
    src, fmt, options = make_input("lfqa-hp-jsonl", tmp_path)
    read = read_input(src, fmt)
    p = read.pairs[1]
    dest = tmp_path / "copy.jsonl"
    rewrite_input(src, dest, fmt, read.pairs, {p.pair_id: ("A changed answer.", p.answer_b)})
    before, after = src.read_bytes().split(b"\n"), dest.read_bytes().split(b"\n")
    assert len(before) == len(after)
    differ = [i for i, (x, y) in enumerate(zip(before, after)) if x != y]
    assert len(differ) == 1 and after[differ[0]].endswith(b"\r")


def test_derived_ids_survive_a_new_file_name_in_the_pair_formats(tmp_path):
    src, fmt, _ = make_input("lfqa-hp-noid", tmp_path)
    read = read_input(src, fmt)
    assert read.pairs[0].pair_id == "in:row0"
    p = read.pairs[0]
    dest = tmp_path / "perturbed.jsonl"
    rewrite_input(src, dest, fmt, read.pairs, {p.pair_id: ("Changed.", p.answer_b)})
    assert [q.pair_id for q in read_input(dest, fmt).pairs] == [q.pair_id for q in read.pairs]


def test_a_table_without_ids_must_keep_its_file_name(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("q,r1,r2\nWhy now?,Because it is late.,No.\n")
    read = read_input(path, "csv", mapping={"question": "q", "answer_a": "r1", "answer_b": "r2"})
    new = {read.pairs[0].pair_id: ("Since it is late.", "No.")}
    with pytest.raises(ConfigError, match="name the copy t.csv"):
        rewrite_input(path, tmp_path / "other.csv", "csv", read.pairs, new, mapping={"question": "q", "answer_a": "r1",
                                                                                      "answer_b": "r2"})
    rewrite_input(path, tmp_path / "sub" / "t.csv", "csv", read.pairs, new,
                  mapping={"question": "q", "answer_a": "r1", "answer_b": "r2"})
    back = read_input(tmp_path / "sub" / "t.csv", "csv", mapping={"question": "q", "answer_a": "r1", "answer_b": "r2"})
    assert back.pairs[0].pair_id == read.pairs[0].pair_id and back.pairs[0].answer_a == "Since it is late."


def test_the_copy_keeps_the_extension_and_never_overwrites_its_input(tmp_path):
    src, fmt, _ = make_input("lfqa-hp-jsonl", tmp_path)
    read = read_input(src, fmt)
    with pytest.raises(ConfigError, match="extension"):
        rewrite_input(src, tmp_path / "copy.json", fmt, read.pairs, {})
    with pytest.raises(ConfigError, match="overwrite"):
        rewrite_input(src, src, fmt, read.pairs, {})


def test_word_is_a_frozen_value():
    w = Word(0, 0, 3, "abc")
    with pytest.raises(AttributeError):
        w.text = "x"  # type: ignore[misc]
