"""The assemble step in pieces: answers kept on disk and laid out a chunk at a time give exactly the
tables of the in-memory assemble step, whatever the chunk size."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

from rubric.tables.assemble import JobInput, assemble
from rubric.tables.assemble_stream import MappingScores, assemble_stream
from rubric.scoring.claims import CheckedClaim, claims_to_json
from rubric.errors import BatchMismatchError
from rubric.io import read_lfqa_hp
from rubric.io.records import explode
from rubric.scoring.scorer import Provenance, Score
from rubric.scoring.specs import RUBRICS

CONC = RUBRICS.get("conciseness.lexical_density.v1")
FACT = RUBRICS.get("factuality.veriscore.v1")
PROV = {"conciseness": Provenance(CONC.version, "spacy"), "factuality": Provenance(FACT.version, "factuality")}


def _inputs(tmp_path) -> list[JobInput]:
    rows = []
    for i in range(14):  # 5 questions; answers repeat across pairs of a question
        q = i % 5
        rows.append({"id": f"p{i}", "question_text": f"Why is question {q} interesting?",
                     "answer_1": f"Answer {i % 3} to {q}.", "answer_2": f"Other answer {i % 4} to {q}.",
                     "human_judgment": ("answer_1", "answer_2", "tie")[i % 3]})
    f = tmp_path / "pairs.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return [JobInput("pairs", read_lfqa_hp(f), "lfqa-hp")]


def _scores(inputs) -> dict:
    """Scores whose extras differ by answer (a key only some have, an all-null run), some failed."""
    out = {}
    for i, it in enumerate(explode([p for inp in inputs for p in inp.read.pairs])):
        conc = Score.failed("no words") if i % 7 == 3 else \
            Score.ok(0.2 + 0.03 * i, n_words=i, **({"capped": True} if i % 4 == 0 else {}))
        claims = [CheckedClaim(claim=f"claim {i}", sentence_index=0, evidence="doc", verdict="supported",
                               p_supported=0.9)] if i % 2 else []
        fact = Score.ok(0.5 + 0.01 * i, claims=claims_to_json(claims), n_claims=len(claims)) if i % 5 else \
            Score.failed("no claims", n_claims=0)
        out[it.answer_id] = {"conciseness": conc, "factuality": fact}
    return out


def _stream(inputs, scores, tmp_path, *, chunk: int, rescale: str):
    got = {"pairs": [], "answers": [], "claims": [], "rejects": []}
    res = assemble_stream(lambda: iter(inputs), MappingScores(scores), PROV, [CONC, FACT],
                          write_pairs=got["pairs"].append, write_answers=got["answers"].append,
                          write_claims=got["claims"].append, write_rejects=got["rejects"].extend,
                          rescale=rescale, seed=3, workdir=str(tmp_path), chunk=chunk)
    return res, {k: pa.concat_tables(v) if k != "rejects" else v for k, v in got.items()}


@pytest.mark.parametrize("rescale", ["declared", "fitted"])
@pytest.mark.parametrize("chunk", [1, 4, 10_000])
def test_pieces_equal_the_in_memory_tables(tmp_path, chunk, rescale):
    inputs = _inputs(tmp_path)
    scores = _scores(inputs)
    whole = assemble(inputs, scores, PROV, [CONC, FACT], rescale=rescale, seed=3)
    res, got = _stream(inputs, scores, tmp_path, chunk=chunk, rescale=rescale)
    # schema (extras columns, types, provenance metadata) and values, not only values
    assert got["answers"].schema.equals(whole.answers.schema, check_metadata=True)
    assert got["answers"].equals(whole.answers)
    # (the streamed pairs table types an all-null 'expert' column bool, so compare values)
    assert got["pairs"].to_pydict() == whole.pairs.to_pydict()
    assert got["pairs"].schema.metadata == whole.pairs.schema.metadata
    assert got["claims"].equals(whole.claims)
    assert "conciseness_capped" in got["answers"].column_names
    assert res.fitted == whole.fitted and (res.fitted is None) == (rescale == "declared")
    assert {k: v for k, v in res.counts.items() if k != "per_input"} == \
        {k: v for k, v in whole.counts.items() if k != "per_input"}
    assert res.counts["errors_by_rubric"]["conciseness"] > 0
    # answers scored with no claim (v2's 0.0) are counted apart from errors, the same in both paths
    no_claims = sum(1 for s in scores.values() if s["factuality"].raw is not None
                    and s["factuality"].extras["n_claims"] == 0)
    assert res.counts["factuality_no_claims"] == no_claims > 0


def test_a_lost_answer_is_named_and_counted(tmp_path):
    inputs = _inputs(tmp_path)
    scores = _scores(inputs)
    lost = list(scores)[2:4]
    for a in lost:
        del scores[a]
    with pytest.raises(BatchMismatchError, match=rf"2 of {len(scores) + 2} answers have no score \(first: {lost[0]}\)"):
        _stream(inputs, scores, tmp_path, chunk=2, rescale="declared")
    scores = _scores(inputs)
    del scores[lost[0]]["factuality"]
    with pytest.raises(BatchMismatchError, match=f"answer {lost[0]} has no 'factuality' score"):
        _stream(inputs, scores, tmp_path, chunk=2, rescale="declared")
