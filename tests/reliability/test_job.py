"""The job (single-process path): one assemble step, a score store that resumes only what is still valid.

Scorers here are small deterministic fakes (a scorer of answer length) so that failures can be
injected; the real backends run in tests/workers/test_cli.py and test_ray_pipeline.py.
"""

import json
from importlib import resources

import pyarrow.parquet as pq
import pytest

from rubric.config import ScoringConfig
from rubric.errors import EngineError, InputError
from rubric.tables import table_provenance
from rubric.scoring import Provenance, Score
from rubric.scoring import RUBRICS
from workers.jobs.score import run_job
from workers.storage.index import ScoreIndex
from workers.storage.store import UnitStore, score_key

SPEC = RUBRICS.get("conciseness.lexical_density.v1")
SAMPLE = resources.files("rubric") / "data" / "sample_pairs.jsonl"


class LengthScorer:
    """conciseness := answer length / 1000; counts the answers it scores; can die after N calls."""

    specs = (SPEC,)

    def __init__(self, die_after: int | None = None, bad: str | None = None):
        self.die_after, self.bad = die_after, bad
        self.calls = self.scored = 0

    def provenance(self, rubric):
        return Provenance(SPEC.version, "test-length", "len", "1")

    def score_batch(self, items):
        self.calls += 1
        if self.die_after is not None and self.calls > self.die_after:
            raise EngineError("engine died")
        if self.bad is not None and any(self.bad in it.answer for it in items):
            raise ValueError("cannot score this one")
        self.scored += len(items)
        return [{"conciseness": Score.ok(min(1.0, len(it.answer) / 1000))} for it in items]


def _records():
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").split("\n") if line.strip()]


def _write(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def _run(inputs, out, scorer, **kw):
    config = kw.pop("config", ScoringConfig(batch_size=4))
    return run_job(inputs, "lfqa-hp", [SPEC], out, config=config, progress=False,
                   scorers=[scorer], **kw)


def test_engine_failure_keeps_finished_chunks_and_resume_scores_only_the_rest(tmp_path, monkeypatch):
    monkeypatch.setattr("workers.jobs.score.CHECKPOINT_ANSWERS", 8)
    src = _write(tmp_path / "in.jsonl", _records())
    dying = LengthScorer(die_after=3)  # 3 batches of 4 = 12 answers, one whole 8-answer chunk stored
    with pytest.raises(EngineError):
        _run(src, tmp_path / "out", dying)
    assert not (tmp_path / "out" / "pairs.parquet").exists()
    stored = list((tmp_path / "out" / "scores" / "in").glob("part-*.parquet"))
    assert len(stored) == 1 and pq.read_table(stored[0]).num_rows == 8

    healthy = LengthScorer()
    manifest = _run(src, tmp_path / "out", healthy)
    n = manifest["counts"]["unique_answers"]
    assert healthy.scored == n - 8 == manifest["job"]["answers_scored_now"]
    clean = _run(src, tmp_path / "clean", LengthScorer())
    for table in ("answers.parquet", "pairs.parquet"):
        assert pq.read_table(tmp_path / "out" / table).equals(pq.read_table(tmp_path / "clean" / table))
    assert clean["counts"] == manifest["counts"]


def test_bad_row_is_bisected_out_of_its_batch(tmp_path):
    recs = _records()
    recs[2]["answer_1"] = "POISON " + recs[2]["answer_1"]
    src = _write(tmp_path / "in.jsonl", recs)
    scorer = LengthScorer(bad="POISON")
    _run(src, tmp_path / "out", scorer, config=ScoringConfig(batch_size=8))
    answers = pq.read_table(tmp_path / "out" / "answers.parquet").to_pylist()
    failed = [a for a in answers if a["conciseness_error"] is not None]
    assert [a["answer"][:6] for a in failed] == ["POISON"]
    assert "cannot score this one" in failed[0]["conciseness_error"]
    assert sum(a["conciseness"] is not None for a in answers) == len(answers) - 1
    # bounded: at most 2n - 1 calls per batch of n
    n_batches = -(-len(answers) // 8)
    assert scorer.calls <= n_batches + 2 * 8


def test_rescale_change_reuses_scores_and_rebuilds_the_tables(tmp_path):
    src = _write(tmp_path / "in.jsonl", _records())
    out = tmp_path / "out"
    _run(src, out, LengthScorer())
    declared = pq.read_table(out / "answers.parquet")
    again = LengthScorer()
    m = _run(src, out, again, config=ScoringConfig(batch_size=4, rescale="fitted"))
    assert again.scored == 0 and m["inputs"][0]["status"] == "reused"
    fitted = pq.read_table(out / "answers.parquet")
    assert fitted.column("conciseness_raw").equals(declared.column("conciseness_raw"))
    assert fitted.column("conciseness").to_pylist() != declared.column("conciseness").to_pylist()
    assert (out / "rescale.json").is_file()
    assert table_provenance(pq.read_table(out / "pairs.parquet"))["conciseness"]["rescale"]["kind"] == "fitted"
    # back to declared: the fitted bounds file does not linger beside tables it no longer describes
    _run(src, out, LengthScorer())
    assert not (out / "rescale.json").exists()
    assert pq.read_table(out / "answers.parquet").equals(declared)


def test_changed_file_at_the_same_path_is_rescored_and_the_log_says_why(tmp_path, caplog):
    recs = _records()
    src = _write(tmp_path / "in.jsonl", recs)
    out = tmp_path / "out"
    first = _run(src, out, LengthScorer())
    flipped = [{**r, "human_judgment": {"answer_1": "answer_2", "answer_2": "answer_1"}.get(r["human_judgment"],
                                                                                          r["human_judgment"])}
               for r in recs]
    extra = [{**recs[0], "id": f"new-{i}", "answer_1": f"A brand new answer number {i}."} for i in range(10)]
    _write(src, flipped + extra)
    scorer = LengthScorer()
    with caplog.at_level("INFO"):
        m = _run(src, out, scorer)
    assert "content changed" in m["inputs"][0]["rescored_because"]
    assert any("re-scoring shard in" in r.getMessage() and "content changed" in r.getMessage() for r in caplog.records)
    assert m["counts"]["rows_in"] == first["counts"]["rows_in"] + 10
    assert scorer.scored == m["counts"]["unique_answers"]
    labels = {r["pair_id"]: r["label"] for r in pq.read_table(out / "pairs.parquet").to_pylist()}
    assert labels["sample-01"] == "b"


def test_changed_scoring_config_is_rescored_with_the_field_named(tmp_path):
    src = _write(tmp_path / "in.jsonl", _records())
    out = tmp_path / "out"
    _run(src, out, LengthScorer())
    scorer = LengthScorer()
    m = _run(src, out, scorer, config=ScoringConfig(batch_size=16, llm_min_mass=0.2))
    assert "config.llm_min_mass: 0.01 -> 0.2" in m["inputs"][0]["rescored_because"]
    assert "batch_size" not in m["inputs"][0]["rescored_because"]
    assert scorer.scored == m["counts"]["unique_answers"]


def test_score_key_ignores_only_fields_that_cannot_change_a_score(tmp_path):
    base = dict(path="x", sha256="0", fmt="lfqa-hp", options={}, specs=[SPEC])
    k = score_key(config=ScoringConfig(), **base)
    assert k == score_key(config=ScoringConfig(batch_size=7, rescale="fitted", languagetool_threads=5), **base)
    for change in ({"llm_model": "other"}, {"llm_layout": "answer_first"}, {"engine_kwargs": {"dtype": "bf16"}},
                   {"spacy_model": "en_core_web_lg"}, {"factuality_corpus": "c.jsonl"}):
        assert k != score_key(config=ScoringConfig(**change), **base), change
    with ScoreIndex(tmp_path) as index:
        store = UnitStore(tmp_path, "s", k, index, [SPEC.version])
        assert store.why is None and not store.done


def test_questions_across_inputs_share_one_split_and_match_the_concatenation(tmp_path):
    # records without an id get one from their row number, which differs between the two layouts
    recs = [{**r, "id": r.get("id") or f"rec-{i}"} for i, r in enumerate(_records())]
    shards = [_write(tmp_path / f"part{k}.jsonl", recs[k::3]) for k in range(3)]
    concat = _write(tmp_path / "all.jsonl", [r for k in range(3) for r in recs[k::3]])
    split_m = _run(shards, tmp_path / "split", LengthScorer())
    whole_m = _run(concat, tmp_path / "whole", LengthScorer())
    a = pq.read_table(tmp_path / "split" / "pairs.parquet")
    b = pq.read_table(tmp_path / "whole" / "pairs.parquet")
    # the row number is per input file by design; everything else is the same
    assert a.drop_columns(["row"]).equals(b.drop_columns(["row"]))
    assert pq.read_table(tmp_path / "split" / "answers.parquet").equals(
        pq.read_table(tmp_path / "whole" / "answers.parquet"))
    by_q: dict = {}
    for r in a.to_pylist():
        by_q.setdefault(r["question_id"], set()).add(r["split"])
    assert all(len(s) == 1 for s in by_q.values())
    shards_of_q = {}
    for k, path in enumerate(shards):
        for line in path.read_text().split("\n"):
            if line.strip():
                shards_of_q.setdefault(json.loads(line).get("question_text"), set()).add(k)
    assert any(len(v) > 1 for v in shards_of_q.values()), "the test needs questions that cross inputs"
    assert split_m["counts"]["rows_in"] == whole_m["counts"]["rows_in"] == \
        split_m["counts"]["rows_ok"] + split_m["counts"]["rejected"]
    assert len(split_m["inputs"]) == 3


def test_duplicate_pair_id_across_inputs_is_a_reject_like_inside_one_file(tmp_path):
    recs = _records()
    a = _write(tmp_path / "a.jsonl", recs[:5])
    b = _write(tmp_path / "b.jsonl", recs[4:10])  # sample-05 in both
    m = _run([a, b], tmp_path / "out", LengthScorer())
    rejects = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text().split("\n") if line]
    dup = [r for r in rejects if r["field"] == "pair_id"]
    assert len(dup) == 1 and "first seen in" in dup[0]["reason"] and dup[0]["source_file"].endswith("b.jsonl")
    assert m["counts"]["rows_in"] == m["counts"]["rows_ok"] + m["counts"]["rejected"]


def test_unreadable_input_writes_no_tables_and_keeps_the_others_scores(tmp_path):
    good = _write(tmp_path / "good.jsonl", _records())
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="could not be read, so no tables were written"):
        _run([good, bad], tmp_path / "out", LengthScorer())
    assert not (tmp_path / "out" / "pairs.parquet").exists()
    bad.unlink()
    _write(tmp_path / "bad.jsonl", [{**r, "id": f"fixed-{i}"} for i, r in enumerate(_records()[:3])])
    scorer = LengthScorer()
    m = _run([good, tmp_path / "bad.jsonl"], tmp_path / "out", scorer)
    assert [i["status"] for i in m["inputs"]] == ["reused", "scored"]
    assert 0 < scorer.scored <= 6  # only the fixed input's answers; the good input's store is reused


def test_a_job_with_no_usable_pair_fails_naming_the_input(tmp_path):
    src = _write(tmp_path / "in.jsonl", [{**r, "answer_1": " "} for r in _records()[:3]])
    with pytest.raises(InputError, match="no usable pair"):
        _run(src, tmp_path / "out", LengthScorer())


def test_inputs_without_pair_ids_do_not_collide(tmp_path):
    recs = [{k: v for k, v in r.items() if k != "id"} for r in _records()]
    a, b = _write(tmp_path / "a.jsonl", recs[:10]), _write(tmp_path / "b.jsonl", recs[10:20])
    m = _run([a, b], tmp_path / "out", LengthScorer())
    ids = pq.read_table(tmp_path / "out" / "pairs.parquet").column("pair_id").to_pylist()
    assert len(ids) == len(set(ids)) == m["counts"]["pairs"]
    assert {i.split(":")[0] for i in ids} == {"a", "b"}
    assert not any(r["field"] == "pair_id" for r in
                   map(json.loads, filter(None, (tmp_path / "out" / "rejects.jsonl").read_text().split("\n"))))


@pytest.mark.parametrize("sizes, size, want", [
    ([1] * 5, 2, [[0, 1], [2, 3], [4]]),  # one id per item (answers, pairs): chunks of `size` items
    ([2, 1, 3, 1, 1], 3, [[0, 1], [2], [3, 4]]),  # LINKAGE questions: whole questions up to `size` ids
    ([5, 1], 3, [[0], [1]]),  # an item with more ids than a checkpoint holds is a checkpoint of its own
    ([], 3, []),
])
def test_checkpoints_cut_items_by_store_ids_without_splitting_one(sizes, size, want):
    from workers.runner import checkpoints

    ids = [[f"{k}.{j}" for j in range(n)] for k, n in enumerate(sizes)]
    got = list(checkpoints(list(range(len(sizes))), ids, size))
    assert [items for items, _ in got] == want
    assert [i for _, chunk_ids in got for i in chunk_ids] == ids  # each item keeps its own ids, in order


def test_a_pair_whose_reference_is_one_of_its_answers_is_one_reject_not_the_whole_file(tmp_path):
    """Issue 59: on f2de0e0 one such pair refused the entire input ("1 pair(s) have a reference answer equal to one of
    their answers"), and a lower-cased copy of the answer passed as a reference; now that pair alone is a reject
    with its reason (compared after case, spaces and punctuation) and the others are scored."""
    rows = _records()[:6]
    rows[1]["reference"] = rows[1]["answer_2"]
    rows[3]["reference"] = rows[3]["answer_1"].lower().replace(",", "")
    rows[4]["reference"] = "A reference answer of its own, about something else entirely."
    m = _run(_write(tmp_path / "in.jsonl", rows), tmp_path / "out", LengthScorer())
    assert (m["counts"]["rows_in"], m["counts"]["pairs"], m["counts"]["rejected"]) == (6, 4, 2)
    rejects = [json.loads(line) for line in (tmp_path / "out" / "rejects.jsonl").read_text().splitlines()]
    assert [(r["row"], r["field"], r["pair_id"]) for r in rejects] == [(1, "reference", rows[1]["id"]),
                                                                        (3, "reference", rows[3]["id"])]
    assert "its reference is its answer_b up to case, spaces and punctuation" in rejects[0]["reason"]
    assert "its reference is its answer_a" in rejects[1]["reason"]
    pairs = pq.read_table(tmp_path / "out" / "pairs.parquet").column("pair_id").to_pylist()
    assert sorted(pairs) == sorted(r["id"] for i, r in enumerate(rows) if i not in (1, 3))


def test_the_service_answers_a_self_referencing_pair_with_its_reason():
    from rubric.io import Reject
    from rubric.preference.service import ServiceLimits, preference_pair

    item = {"question": "Why?", "answer_a": "Because it is so.", "answer_b": "Another answer.",
            "reference": "because it is so"}
    got = preference_pair(item, 3, ServiceLimits())
    assert isinstance(got, Reject) and got.field == "reference" and "its reference is its answer_a" in got.reason
    assert not isinstance(preference_pair({**item, "reference": "A reference."}, 3, ServiceLimits()), Reject)
