"""What the scoring service does with a request, without any server: limits, item checks, and the
response rows, built from the same functions as the batch job's tables.

A request body is ``{"items": [...]}``. Request-level problems raise: a body or an item list over a
limit raises :class:`~rubric.errors.LimitError` (the service answers 413), a body that is not such an
object raises :class:`~rubric.errors.InputError` (422). An item is checked exactly as the readers
check a row (:func:`rubric.io.read_item`: empty answer, no letters, too long, wrong type, ...);
a bad item becomes a :class:`~rubric.io.Reject` and is answered with its reason while the other
items are scored.

Scores are laid out by :func:`rubric.tables.answers_table` (declared-range rescaling, provenance
records) and preferences by :func:`rubric.preference.predict_pairs` over
:func:`rubric.tables.pairs_table`: the numbers the service returns are those ``score`` and
``predict`` write for the same answers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rubric.config import ScoringConfig, check_range
from rubric.errors import InputError, LimitError
from rubric.io import read_item
from rubric.io import SELF_REFERENCE, AnswerItem, PairRecord, Reject, content_id, self_reference
from rubric.scoring import Provenance, Score
from rubric.scoring import RubricSpec

__all__ = ["ServiceLimits", "check_body_size", "request_items", "answer_item", "preference_pair", "cache_key",
           "score_rows", "prefer_rows", "SERVE_SPLIT"]

#: The split value of a request's pairs in the pairs table (predictions do not depend on it).
SERVE_SPLIT = "serve"


@dataclass(frozen=True)
class ServiceLimits:
    """Bounds on what one request may ask for.

    Attributes:
        max_body_bytes: a larger request body is refused (413) before it is parsed.
        max_items: more items (answers or pairs) in one request are refused (413).
        max_answer_chars / max_question_chars: a longer field makes its item an error, as in the readers.
        request_timeout_s: a request not answered by then gets 504, saying so.
        cache_answers: scored answers kept for repeated requests (0: no cache).
    """

    max_body_bytes: int = 4 * 2**20
    max_items: int = 64
    max_answer_chars: int = ScoringConfig().max_answer_chars
    max_question_chars: int = ScoringConfig().max_question_chars
    request_timeout_s: float = 120.0
    cache_answers: int = 10_000

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_items", "max_answer_chars", "max_question_chars"):
            check_range(name, getattr(self, name), low=1, integer=True)
        check_range("request_timeout_s", self.request_timeout_s, above=0)
        check_range("cache_answers", self.cache_answers, low=0, integer=True)


def check_body_size(n_bytes: int, limits: ServiceLimits) -> None:
    """Raises LimitError when a body of ``n_bytes`` is over ``limits.max_body_bytes``."""
    if n_bytes > limits.max_body_bytes:
        raise LimitError(f"request body is over the limit of {limits.max_body_bytes:,} bytes "
                         f"(max_body_bytes, --max-body-bytes); got {n_bytes:,}")


def request_items(payload: Any, limits: ServiceLimits) -> list[Any]:
    """The ``items`` list of a parsed request body.

    Raises:
        InputError: the body is not an object with a non-empty ``items`` array.
        LimitError: more than ``limits.max_items`` items.
    """
    if not isinstance(payload, Mapping):
        raise InputError(f"request body must be a JSON object with an 'items' array, got a JSON {type(payload).__name__}")
    items = payload.get("items")
    if not isinstance(items, list):
        got = "nothing" if items is None else f"a JSON {type(items).__name__}"
        raise InputError(f"request body must have an 'items' array, got {got}")
    if not items:
        raise InputError("'items' is empty: send at least one item")
    if len(items) > limits.max_items:
        raise LimitError(f"{len(items)} items in one request, over the limit of {limits.max_items} "
                         "(max_items, --max-items): split the request")
    return items


def answer_item(rec: Any, limits: ServiceLimits) -> AnswerItem | Reject:
    """A ``/v1/score`` item ``{question, answer[, reference, docs]}`` -> the item to score, or why not."""
    got = read_item(rec, ("answer",), docs_fields=("docs",), max_answer_chars=limits.max_answer_chars,
                    max_question_chars=limits.max_question_chars)
    if isinstance(got, Reject):
        return got
    return AnswerItem(answer_id=content_id(got["question"], got["answer"], got["docs"], got["reference"]),
                      question=got["question"], answer=got["answer"], docs=got["docs"], reference=got["reference"])


def preference_pair(rec: Any, index: int, limits: ServiceLimits) -> PairRecord | Reject:
    """A ``/v1/prefer`` item ``{question, answer_a, answer_b[, reference, docs_a, docs_b]}`` -> an
    unlabeled pair (``pair_id`` ``item<index>``), or why not."""
    got = read_item(rec, ("answer_a", "answer_b"), docs_fields=("docs_a", "docs_b"),
                    max_answer_chars=limits.max_answer_chars, max_question_chars=limits.max_question_chars)
    if isinstance(got, Reject):
        return got
    pair = PairRecord(pair_id=f"item{index}", question=got["question"], answer_a=got["answer_a"],
                      answer_b=got["answer_b"], label=None, docs_a=got["docs_a"], docs_b=got["docs_b"], row=index,
                      reference=got["reference"])
    side = self_reference(pair)  # the batch job's rule (``rubric.io.without_self_references``), per item
    if side is not None:
        return Reject(row=index, field="reference", pair_id=pair.pair_id,
                      reason=f"its reference is its {side} {SELF_REFERENCE}")
    return pair


def cache_key(item: AnswerItem) -> str:
    """What an answer's scores depend on besides the scorers: its id, made of its question, answer,
    documents and reference (``rubric.io.content_id``, the batch job's deduplication key too).

    The scorers' part (rubric versions, score-changing config) is the store's key
    (``workers.storage.store.score_key``), fixed for one server.
    """
    return content_id(item.question, item.answer, item.docs, item.reference)


def _json_number(x: Any) -> Any:
    """JSON has no NaN or infinity: such a value is reported as null."""
    return None if isinstance(x, float) and not math.isfinite(x) else x


def score_rows(items: Sequence[AnswerItem], specs: Sequence[RubricSpec], scores: Mapping[str, Sequence[Score]],
               provenance: Mapping[str, Provenance]) -> tuple[list[dict], dict[str, dict]]:
    """Per item its 1-5 vector, raw scores, per-rubric errors and extras, as the answers table has them.

    Args:
        items: the scored answers.
        specs: the rubrics, in response order.
        scores: rubric -> one Score per item.
        provenance: rubric -> how its scores were made.

    Returns:
        (rows, provenance records ``{rubric: record}`` as the tables' metadata holds them).
    """
    from rubric.tables import answers_table
    from rubric.tables import table_provenance

    table = answers_table(items, specs, scores, provenance)
    cols = table.to_pydict()
    rows = []
    for i, it in enumerate(items):
        rows.append({
            "answer_id": it.answer_id,
            "scores": {s.name: _json_number(cols[s.name][i]) for s in specs},
            "raw": {s.name: _json_number(cols[f"{s.name}_raw"][i]) for s in specs},
            "errors": {s.name: cols[f"{s.name}_error"][i] for s in specs},
            "extras": {s.name: dict(scores[s.name][i].extras) for s in specs if scores[s.name][i].extras},
        })
    return rows, table_provenance(table)


def prefer_rows(model, pairs: Sequence[PairRecord], items: Sequence[AnswerItem], specs: Sequence[RubricSpec],
                scores: Mapping[str, Sequence[Score]], provenance: Mapping[str, Provenance]) -> list[dict]:
    """What ``predict`` writes for each pair: P(a), style-controlled P(a), the predicted label, the
    per-feature contributions and intercept (binary models), and why a pair has no prediction.

    Args:
        model: a fitted :class:`rubric.preference.PreferenceModel`.
        pairs: the request's valid pairs.
        items: their unique answers (``rubric.io.explode(pairs)``), scored in ``scores``.

    Raises:
        ProvenanceError: the server's rubrics are made differently from the model's.
    """
    from rubric.tables import answers_table, pairs_table
    from rubric.preference.predict import predict_pairs

    answers = answers_table(items, specs, scores, provenance)
    table = predict_pairs(model, pairs_table(pairs, [SERVE_SPLIT] * len(pairs), answers))
    cols = table.to_pydict()
    contrib = [c for c in table.column_names if c.startswith("contrib_")]
    probs = [c for c in table.column_names if c.startswith("p_")]
    rows = []
    for i in range(table.num_rows):
        row = {c: _json_number(cols[c][i]) for c in probs}
        row["predicted"] = cols["predicted"][i]
        if contrib:
            row["contributions"] = {c.removeprefix("contrib_"): _json_number(cols[c][i]) for c in contrib}
            row["intercept"] = _json_number(cols["intercept"][i])
        row["error"] = cols["error"][i]
        rows.append(row)
    return rows
