"""LINKAGE's inputs: a graded answer file as questions, each with a reference list and candidates to rank.

Pure: no model here. Two shapes, as :func:`rubric.io.graded.read_graded` reads them:

- WebGLM (``{question: {"doc_list": [{"answer", "model", "label"}, ...], "ground0": ..., "ground3": ...}}``):
  the reference list is ``ground3`` .. ``ground0`` (:func:`rubric.protocols.linkage.webglm_references`, best first,
  as LINKAGE's code orders it) and every ``doc_list`` answer is a candidate with its ``label``.
- TREC-DL style (``{question: [{"docid", "passage", "label"}, ...]}``): one answer per grade becomes the
  reference list and the others are the candidates (:func:`rubric.protocols.linkage.graded_reference_split`: the
  list does not depend on the candidate, so it cannot give a candidate's grade away, unlike
  ``references_above``).

A bad answer never kills the file: it is a :class:`~rubric.io.records.Reject` naming the question index
and the answer key (``extra["answer"]``), as ``read_graded`` reports them, and so is every answer of a
question that gets no reference list (fewer than two grades, or a WebGLM question without its four
references). ``rows_in`` counts the answers of the questions read (after ``max_questions``), and
``rows_in == n_candidates + n_references + len(rejects) + n_capped`` holds.

With ``references="generated"`` no reference list is read: each question gets its golden answer
(:attr:`LinkageQuestion.golden`: WebGLM's best reference ``ground3``, else the first answer of the best
grade, taken out of the candidates and counted in ``n_references``) and an empty ``references``, which
the LINKAGE job fills with the list the LLM writes from it (:mod:`rubric.protocols.linkage_references`). A
question whose only answer is the golden one has nothing to rank: that answer is a reject.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from pathlib import Path

from rubric.config import check_range
from rubric.errors import ConfigError
from rubric.protocols.linkage import WEBGLM_REFERENCE_KEYS, GradedAnswer, graded_reference_split, webglm_references
from rubric.io import (
    DEFAULT_MAX_ANSWER_CHARS,
    DEFAULT_MAX_QUESTION_CHARS,
    check_max_chars,
    graded_item,
    load_graded,
    RowError,
    text_field,
    check_text,
)
from rubric.io import Reject, content_id, question_id

__all__ = ["REFERENCE_SOURCES", "LinkageCandidate", "LinkageQuestion", "LinkageRead", "read_linkage"]

#: Where a question's reference list comes from: the data, or the LLM from one golden answer.
REFERENCE_SOURCES: tuple[str, ...] = ("data", "generated")

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LinkageCandidate:
    """One answer to place: its id, text and graded label (the label never reaches a prompt).

    Attributes:
        answer_id: ``content_id(question, text, (), reference)``, as ``read_graded``'s answers of that file.
        text: the answer.
        label: its integer grade, higher is better.
        key: its key in the file (list index or docid).
        system: who wrote it, when the file says (WebGLM's ``model``), else "".
    """

    answer_id: str
    text: str
    label: int
    key: str = ""
    system: str = ""


@dataclass(frozen=True)
class LinkageQuestion:
    """A question, its reference list (best first) and the candidates ranked against it.

    Attributes:
        question_id: ``question_id(question)``.
        question: the question.
        references: reference answers, best first (empty until generated with ``references="generated"``).
        candidates: the answers to score, in file order.
        index: the question's index in its file.
        golden: the golden answer the references are generated from ("" when they come from the data).
    """

    question_id: str
    question: str
    references: tuple[str, ...]
    candidates: tuple[LinkageCandidate, ...] = field(repr=False)
    index: int = -1
    golden: str = field(default="", repr=False)


@dataclass(frozen=True)
class LinkageRead:
    """What :func:`read_linkage` returns.

    Attributes:
        questions: questions with a reference list and at least one candidate, in file order.
        rejects: one per unusable answer.
        rows_in: answers of the questions read.
        n_references: answers used as references (TREC-DL style).
        n_capped: candidates left out by ``max_answers_per_question``.
        source_file: the path read.
    """

    questions: list[LinkageQuestion]
    rejects: list[Reject]
    rows_in: int
    n_references: int
    n_capped: int
    source_file: str

    @property
    def n_candidates(self) -> int:
        return sum(len(q.candidates) for q in self.questions)

    def __post_init__(self) -> None:
        if self.n_candidates + self.n_references + len(self.rejects) + self.n_capped != self.rows_in:
            raise ValueError(f"row accounting is broken for {self.source_file}: rows_in={self.rows_in}, "
                             f"candidates={self.n_candidates}, references={self.n_references}, "
                             f"rejects={len(self.rejects)}, capped={self.n_capped}")


def _positive(name: str, value: int | None) -> None:
    check_range(name, value, low=1, optional=True, integer=True)


def read_linkage(path: str | Path, *, max_questions: int | None = None, max_answers_per_question: int | None = None,
                 seed: int = 0, max_answer_chars: int = DEFAULT_MAX_ANSWER_CHARS,
                 max_question_chars: int = DEFAULT_MAX_QUESTION_CHARS, references: str = "data") -> LinkageRead:
    """Read a graded file as LINKAGE's questions (module docstring).

    Args:
        path: a graded JSON file (WebGLM or TREC-DL style).
        max_questions: read only the first N questions of the file (None: all).
        max_answers_per_question: keep at most N candidates per question, drawn with a per-question
            RNG seeded from ``seed`` and the question (None: all); the rest are counted in ``n_capped``.
        seed: the draw's seed.
        max_answer_chars: longer answers are rejected.
        max_question_chars: all answers of a longer question are rejected.
        references: ``data`` (the file's reference lists) or ``generated`` (a golden answer per question,
            no list yet; module docstring).

    Returns:
        A :class:`LinkageRead`.

    Raises:
        InputError: as :func:`rubric.io.graded.read_graded` (missing file, not JSON, not a graded shape).
        ConfigError: an option is out of range.
    """
    check_max_chars(max_answer_chars, max_question_chars)
    _positive("max_questions", max_questions)
    _positive("max_answers_per_question", max_answers_per_question)
    if references not in REFERENCE_SOURCES:
        raise ConfigError(f"'references' must be one of {list(REFERENCE_SOURCES)}, got {references!r}")
    p, graded = load_graded(path, include_references=False)
    src = str(p)
    import json

    raw = json.loads(Path(p).read_text(encoding="utf-8"))  # the groundK references (read_graded keeps only the best)
    questions: list[LinkageQuestion] = []
    rejects: list[Reject] = []
    rows_in = n_refs = n_capped = 0

    def reject(q_index: int, question: str, key: str, fld: str | None, reason: str) -> None:
        rejects.append(Reject(row=q_index, field=fld, source_file=src, extra={"answer": key},
                              reason=f"question {q_index} ({question[:60]!r}) answer {key}: {reason}"))

    for gq in graded[:max_questions]:
        rows_in += len(gq.items)
        if gq.repeats is not None:
            for key, _ in gq.items:
                reject(gq.index, gq.question, key, "question", f"question {gq.index} repeats question {gq.repeats}")
            continue
        try:
            text_field({"question": gq.question}, "question", max_question_chars, option="max_question_chars")
        except RowError as e:
            for key, _ in gq.items:
                reject(gq.index, gq.question, key, e.field, e.reason)
            continue
        answers: list[tuple[GradedAnswer, str]] = []
        seen: dict[str, str] = {}
        for key, item in gq.items:
            try:
                text, grade = graded_item(item, max_answer_chars)
            except RowError as e:
                reject(gq.index, gq.question, key, e.field, e.reason)
                continue
            norm = " ".join(text.split())
            if norm in seen:
                reject(gq.index, gq.question, key, "pairing", f"answer {key} has the same text as answer {seen[norm]}")
                continue
            seen[norm] = key
            model = item.get("model") if isinstance(item.get("model"), str) else ""
            try:
                check_text(model, "model")
            except RowError:  # an unusable author field leaves the author unknown, not the answer rejected
                model = ""
            answers.append((GradedAnswer(key=key, text=text, grade=grade), model))
        value = raw.get(gq.question) if isinstance(raw, dict) else None
        golden = ""
        if references == "generated":
            if isinstance(value, dict) and "doc_list" in value:
                ground = value.get(WEBGLM_REFERENCE_KEYS[0])
                why = None
                if not isinstance(ground, str) or not ground.strip():
                    why = "is missing or empty"
                else:
                    try:
                        check_text(ground, WEBGLM_REFERENCE_KEYS[0])
                    except RowError as e:
                        why = e.reason.removeprefix(f"field {WEBGLM_REFERENCE_KEYS[0]!r} ")
                if why:
                    for a, _ in answers:
                        reject(gq.index, gq.question, a.key, "reference",
                               f"no golden answer: WebGLM reference {WEBGLM_REFERENCE_KEYS[0]!r} {why}")
                    continue
                golden, cands = ground, answers
            else:
                if not answers:
                    continue
                best = max(a.grade for a, _ in answers)
                gold = next(a for a, _ in answers if a.grade == best)  # the first of the best grade, in file order
                cands = [(a, m) for a, m in answers if a is not gold]
                if not cands:
                    reject(gq.index, gq.question, gold.key, "reference",
                           f"answer {gold.key} is the question's only answer: as the golden answer it leaves "
                           "nothing to rank")
                    continue
                golden = gold.text
                n_refs += 1
            references_t: tuple[str, ...] = ()
        elif isinstance(value, dict) and "doc_list" in value:
            try:
                references_t = tuple(webglm_references(value))
            except ConfigError as e:
                for a, _ in answers:
                    reject(gq.index, gq.question, a.key, "reference", f"no reference list: {e}")
                continue
            cands = answers
        else:
            split = graded_reference_split([a for a, _ in answers])
            if split.error is not None:
                for a, _ in answers:
                    reject(gq.index, gq.question, a.key, "reference", f"no reference list: {split.error}")
                continue
            for key, why in split.skipped:  # _unique's repeats: already rejected above, never reached
                reject(gq.index, gq.question, key, "pairing", why)
            references_t = tuple(split.texts)
            n_refs += len(split.references)
            keep = {c.key for c in split.candidates}
            cands = [(a, m) for a, m in answers if a.key in keep]
        if not cands:
            continue
        if max_answers_per_question is not None and len(cands) > max_answers_per_question:
            rng = random.Random(f"{seed}:{question_id(gq.question)}")
            chosen = sorted(rng.sample(range(len(cands)), max_answers_per_question))
            n_capped += len(cands) - len(chosen)
            cands = [cands[i] for i in chosen]
        questions.append(LinkageQuestion(
            question_id=question_id(gq.question), question=gq.question, references=references_t, index=gq.index,
            golden=golden,
            # the id a score job over the same graded file gives the answer (its reference included), so
            # --rubric-scores finds it
            candidates=tuple(LinkageCandidate(answer_id=content_id(gq.question, a.text, (), gq.reference),
                                              text=a.text, label=a.grade,
                                              key=a.key, system=m) for a, m in cands)))
    result = LinkageRead(questions=questions, rejects=rejects, rows_in=rows_in, n_references=n_refs,
                         n_capped=n_capped, source_file=src)
    logger.info("read %d LINKAGE questions (%d candidates, %d references, %d rejected, %d capped) from %s",
                len(questions), result.n_candidates, n_refs, len(rejects), n_capped, src)
    return result
