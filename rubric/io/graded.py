"""Graded answer lists: one question with graded answers -> pairs of differently graded answers."""

from __future__ import annotations

import functools
import itertools
import json
import logging
import random
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rubric.config import DEFAULT_MAX_PAIRS_PER_QUESTION, check_range
from rubric.errors import InputError
from rubric.io.records import SELF_REFERENCE, PairRecord, Reject, content_id, normalised_text, question_id
from rubric.io.fields import DEFAULT_MAX_ANSWER_CHARS, DEFAULT_MAX_QUESTION_CHARS, ReadResult, RowError, _as_int, _has_bad_bytes, _meta, check_max_chars, text_field
from rubric.io.files import RepeatedKeys, _ObjectHook, _loads, _read_text, check_path
from rubric.io.pairs import _log_result

__all__ = ["WEBGLM_REFERENCE_GRADES", "GradedQuestion", "read_graded", "read_graded_labels", "graded_item", "load_graded"]

logger = logging.getLogger(__name__)


#: WebGLM's reference answers: key -> the grade it stands for. Graded answers themselves may use
#: any integer scale (TREC-DL 0-3, WebGLM 1-3, ANTIQUE 1-4); higher is better.
WEBGLM_REFERENCE_GRADES: Mapping[str, int] = {"ground0": 0, "ground1": 1, "ground2": 2, "ground3": 3}


# ---------------------------------------------------------------------------------------------
# Graded answer lists: one question with graded answers -> pairs of differently graded answers
# ---------------------------------------------------------------------------------------------


def _graded_answers(
    question: str, value: Any, include_references: bool, src: str,
) -> list[tuple[str, Any]]:
    """(answer key, raw item) for one question, in file order; raises InputError on a wrong shape."""
    if isinstance(value, list):  # TREC-DL style: [{"docid", "passage", "label"}, ...]
        return [(str(i), item) for i, item in enumerate(value)]
    if isinstance(value, dict) and isinstance(value.get("doc_list"), list):  # WebGLM style
        items: list[tuple[str, Any]] = [(str(i), item) for i, item in enumerate(value["doc_list"])]
        if include_references:
            for key, grade in WEBGLM_REFERENCE_GRADES.items():
                if key in value:
                    items.append((key, {"answer": value[key], "label": grade}))
        return items
    raise InputError(
        f"{src!r} is not a graded answer list: question {question[:60]!r} maps to a "
        f"{type(value).__name__}; expected a list of {{'passage', 'label'}} items or "
        "{'doc_list': [{'answer', 'label'}, ...]}"
    )


def _webglm_reference(value: Any) -> str | None:
    """The best reference answer of a WebGLM-style question (the highest-graded ``groundK``), if any.

    Used as the question's reference answer (for reference-based signals) when the references are
    not themselves paired (``include_references``): an answer compared with itself says nothing.
    """
    if not isinstance(value, dict):
        return None
    for key, _grade in sorted(WEBGLM_REFERENCE_GRADES.items(), key=lambda kv: -kv[1]):
        text = value.get(key)
        if isinstance(text, str) and text.strip() and not _has_bad_bytes(text):
            return text
    return None


_ANSWER_FIELDS: tuple[str, ...] = ("passage", "answer", "text")


def graded_item(item: Any, max_answer_chars: int) -> tuple[str, int]:
    """The text and integer grade of one graded answer; raises RowError naming what is wrong."""
    if not isinstance(item, Mapping):
        raise RowError(None, f"answer is a {type(item).__name__}, expected an object")
    if isinstance(item, RepeatedKeys):
        key = item.repeated[0]
        raise RowError(key, f"field {key!r} appears more than once in the answer")
    name = next((n for n in _ANSWER_FIELDS if item.get(n) is not None), None)
    if name is None:
        raise RowError("answer", "missing answer text: expected a field 'passage', 'answer' or 'text'")
    text = text_field(item, name, max_answer_chars)
    raw = item.get("label")
    if raw is None:
        raise RowError("label", "missing field 'label'")
    # Any integer scale (TREC-DL 0-3, ANTIQUE 1-4); strings ("high", even "2") and fractions are
    # not grades we can order safely, and bools are not grades at all.
    grade = None if isinstance(raw, str) else _as_int(raw)
    if grade is None:
        raise RowError("label", f"field 'label' has value {raw!r}; expected an integer grade (higher is better)")
    return text, grade


@dataclass(frozen=True)
class GradedQuestion:
    """One question of a graded file: its index and answers, or the earlier question it repeats."""

    index: int
    question: str
    items: list[tuple[str, Any]]
    repeats: int | None = None
    exact: bool = True
    reference: str | None = None


def load_graded(path: str | Path, include_references: bool) -> tuple[Path, list[GradedQuestion]]:
    """A graded file's path and questions in file order, or an InputError naming the file.

    A question that appears twice (the same key, or the same text up to whitespace, which would
    give both the same question id) is kept once: later occurrences carry ``repeats``, the index
    of the first, so that their answers can be reported instead of vanishing as ``dict`` would.
    """
    p = check_path(path)
    src = str(p)
    hook = _ObjectHook()
    try:
        data = _loads(_read_text(p), hook)
    except json.JSONDecodeError as e:
        raise InputError(f"{src!r} is not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from e
    if not isinstance(data, dict):
        raise InputError(f"{src!r} is not a graded answer list: expected a JSON object mapping "
                         f"questions to graded answers, got a JSON {type(data).__name__}")
    if not data:
        raise InputError(f"{src!r} holds no records")
    first: dict[str, tuple[int, str]] = {}
    questions: list[GradedQuestion] = []
    # the outermost object is built last, so hook.last holds its pairs, repeated keys included
    for index, (question, value) in enumerate(hook.last):
        items = _graded_answers(question, value, include_references, src)
        qid = question_id(question)
        if qid in first:
            m, text = first[qid]
            questions.append(GradedQuestion(index, question, items, repeats=m, exact=text == question))
        else:
            first[qid] = (index, question)
            questions.append(GradedQuestion(index, question, items,
                                             reference=None if include_references else _webglm_reference(value)))
    if not any(q.items for q in questions):
        raise InputError(f"{src!r} holds no records: none of its {len(questions)} question(s) has an answer")
    return p, questions


def _answer_reject(
    rejects: list[Reject], src: str, q_index: int, question: str, key: str, field: str | None, reason: str,
) -> None:
    """Append the reject of answer ``key`` of question ``q_index``."""
    rejects.append(Reject(
        row=q_index, field=field, source_file=src,
        reason=f"question {q_index} ({question[:60]!r}) answer {key}: {reason}", extra={"answer": key},
    ))


def _no_pair_reason(key: str, grade: int, unique: list[tuple[str, str, int]], cap: int) -> str:
    if len(unique) == 1:
        return f"answer {key} is in no pair: it is the only usable answer of the question"
    if all(g == grade for _, _, g in unique):
        return f"answer {key} is in no pair: every other usable answer of the question has grade {grade}"
    return f"answer {key} was left out by --max-pairs-per-question {cap}"


def read_graded(
    path: str | Path,
    max_pairs_per_question: int = DEFAULT_MAX_PAIRS_PER_QUESTION,
    seed: int = 0,
    *,
    include_references: bool = False,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
    max_questions: int | None = None,
) -> ReadResult:
    """Read graded answer lists and pair answers of different grades.

    Two shapes are recognised, per question: TREC-DL style ``{question: [{"docid", "passage",
    "label"}, ...]}`` and WebGLM style ``{question: {"doc_list": [{"answer", "model", "label"}, ...],
    "ground0": str, ..., "ground3": str}}`` where ``groundK`` is a reference answer of grade K
    (:data:`WEBGLM_REFERENCE_GRADES`). An answer's text is its ``passage``, ``answer`` or ``text``
    field; its grade (``label``) is an integer on any scale, higher is better.

    Every two usable answers of one question with different grades make a candidate pair labelled
    with the higher-graded one; which answer is "a" is drawn from a per-question RNG so that
    "always a" is not trivially right. More than ``max_pairs_per_question`` candidates are
    subsampled with the same RNG. The RNG is seeded from ``seed`` and the question, so a question
    gets the same pairs whatever else is in the file.

    Row accounting: the unit of ``rows_in`` is one graded answer, and ``rows_ok`` counts the
    answers that are in at least one pair. Every other answer is a reject naming the question
    index and the answer key (``Reject.row`` is the question index, the answer key is in
    ``Reject.extra["answer"]``):

    - an invalid answer (no text, no letters, too long, a grade that is not an integer), or any
      answer of a question that is itself invalid (empty, no letters, too long);
    - every answer of a question that repeats an earlier one (same key, or the same text up to
      whitespace): only the first occurrence is used;
    - an answer with the same text as an earlier answer of its question (field "pairing"): the
      same text would be scored once but counted in several pairs, perhaps with two grades;
    - an answer that is the question's reference (field "reference": WebGLM's best ``groundK``, up to case, spaces
      and punctuation): every reference-reading rubric would read it against itself;
    - an answer in no pair (field "pairing"): all other usable answers share its grade, or the
      ``max_pairs_per_question`` cap left it out.

    ``PairRecord.row`` is the question's index in the file. ``PairRecord.answer_type_a`` /
    ``answer_type_b`` are who wrote each answer: its ``model`` field (WebGLM: ``gpt``, ``llama``,
    ``mistral``), "" when it has none (TREC-DL passages, WebGLM's ``groundK`` references) or when
    the field is not a usable string.

    Args:
        path: a JSON file of one of the shapes above.
        max_pairs_per_question: cap on pairs per question (>= 1).
        seed: seed of the pair sampling and of the a/b order.
        include_references: also pair WebGLM's ``groundK`` reference answers. Without it, the
            highest-graded ``groundK`` becomes every pair's ``reference`` (for reference-based signals).
        max_answer_chars: longer answers are rejected.
        max_question_chars: all answers of a longer question are rejected.
        max_questions: read only the first N questions of the file (None: all); the others are
            not read, so they are neither pairs nor rejects (``rows_in`` counts the answers read).

    Returns:
        Pairs with ids ``f"{question_id}:{i}:{j}"`` (``i``, ``j`` the answer keys in file order:
        list indices, or ``groundK``), ``source`` the file stem and ``domain`` "".

    Raises:
        InputError: the file is missing, a directory, not UTF-8 text, not JSON, not of a graded
            shape, or holds no answers.
        ConfigError: an option is out of range.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    check_range("max_pairs_per_question", max_pairs_per_question, low=1, integer=True)
    check_range("max_questions", max_questions, low=1, integer=True, optional=True)
    p, questions = load_graded(path, include_references)
    questions = questions[:max_questions]
    src = str(p)

    pairs: list[PairRecord] = []
    rejects: list[Reject] = []
    rows_in = rows_ok = 0
    for gq in questions:
        q_index, question, items = gq.index, gq.question, gq.items
        rows_in += len(items)
        reject = functools.partial(_answer_reject, rejects, src, q_index, question)
        if gq.repeats is not None:
            same = "same text" if gq.exact else "same text up to whitespace"
            for key, _item in items:
                reject(key, "question", f"question {q_index} repeats question {gq.repeats} ({same}); "
                                        f"its {len(items)} answers are not used")
            continue
        try:
            text_field({"question": question}, "question", max_question_chars, option="max_question_chars")
        except RowError as e:
            for key, _item in items:
                reject(key, e.field, e.reason)
            continue

        # usable answers in file order, each text once: (key, text, grade)
        unique: list[tuple[str, str, int]] = []
        first_with_text: dict[str, tuple[str, int]] = {}
        author: dict[str, str] = {}  # answer key -> who wrote it (WebGLM's "model"), "" when unknown
        reference = None if gq.reference is None else normalised_text(gq.reference)
        for key, item in items:
            try:
                text, grade = graded_item(item, max_answer_chars)
            except RowError as e:
                reject(key, e.field, e.reason)
                continue
            try:
                author[key] = _meta(item, "model").strip()
            except RowError:  # an unusable author field leaves the author unknown, not the answer rejected
                author[key] = ""
            if gq.reference is not None and normalised_text(text) == reference:
                reject(key, "reference", f"answer {key} is the question's reference answer {SELF_REFERENCE}")
                continue
            if text in first_with_text:
                k0, g0 = first_with_text[text]
                grades = f" (grades {g0} and {grade})" if g0 != grade else ""
                reject(key, "pairing",
                       f"answer {key} has the same text as answer {k0}{grades}; only the first is used")
                continue
            first_with_text[text] = (key, grade)
            unique.append((key, text, grade))

        candidates = [(x, y) for x, y in itertools.combinations(unique, 2) if x[2] != y[2]]
        # Seeded per question (str seeds hash deterministically) so pairs do not shift when
        # another question is added or removed.
        qid = question_id(question)
        rng = random.Random(f"{seed}:{qid}")
        if len(candidates) > max_pairs_per_question:
            keep = sorted(rng.sample(range(len(candidates)), max_pairs_per_question))
            candidates = [candidates[k] for k in keep]
        paired = {a[0] for pair in candidates for a in pair}
        rows_ok += len(paired)
        for key, _t, grade in unique:
            if key not in paired:
                reject(key, "pairing", _no_pair_reason(key, grade, unique, max_pairs_per_question))
        for x, y in candidates:
            pid = f"{qid}:{x[0]}:{y[0]}"
            if rng.random() < 0.5:
                x, y = y, x
            pairs.append(PairRecord(
                pair_id=pid, question=question, answer_a=x[1], answer_b=y[1],
                label="a" if x[2] > y[2] else "b", source=p.stem, domain="", row=q_index,
                reference=gq.reference, answer_type_a=author[x[0]], answer_type_b=author[y[0]],
            ))
    result = ReadResult(pairs=pairs, rejects=rejects, rows_in=rows_in, source_file=src, rows_ok=rows_ok)
    _log_result(result)
    return result


def read_graded_labels(
    path: str | Path,
    *,
    include_references: bool = False,
    max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
    max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS,
) -> dict[str, tuple[str, int]]:
    """The grade of every usable answer of a graded file, keyed by its content id.

    Used to correlate per-answer rubric scores with graded labels (Kendall tau per question).
    Answers and questions that :func:`read_graded` rejects for what they are (invalid text or
    grade, a repeated question, a repeated text) are skipped; ``read_graded`` reports them.
    Answers in no pair are kept: their grade is still a label to correlate with.

    Args:
        path: a graded JSON file (see :func:`read_graded`).
        include_references: also label WebGLM's ``groundK`` reference answers.
        max_answer_chars: longer answers are skipped.
        max_question_chars: questions longer than this are skipped.

    Returns:
        answer_id -> (question_id, grade).

    Raises:
        InputError: as :func:`read_graded`.
        ConfigError: a length limit is not a positive integer.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    _, questions = load_graded(path, include_references)
    out: dict[str, tuple[str, int]] = {}
    skipped = 0
    for gq in questions:
        try:
            if gq.repeats is not None:
                raise RowError("question", "repeated question")
            text_field({"question": gq.question}, "question", max_question_chars, option="max_question_chars")
        except RowError:
            skipped += len(gq.items)
            continue
        for _key, item in gq.items:
            try:
                text, grade = graded_item(item, max_answer_chars)
            except RowError:
                skipped += 1
                continue
            # the first answer with a text keeps its grade, as in read_graded
            # keyed as the pairs' answers are: with the reference read_graded attaches to them
            out.setdefault(content_id(gq.question, text, (), gq.reference), (question_id(gq.question), grade))
    if skipped:
        logger.warning("%d graded answers of %s skipped (read_graded reports why)", skipped, path)
    return out


