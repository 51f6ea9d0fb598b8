"""The same assemble step over a job too large to hold: inputs are read twice, pairs streamed out
(:func:`assemble_stream`); the result equals :func:`rubric.tables.assemble.assemble` on the whole job."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from rubric.config import DEFAULT_SPLIT_FRACTIONS
from rubric.errors import BatchMismatchError, ConfigError, InputError
from rubric.io import AnswerItem, PairRecord, Reject
from rubric.scoring import FittedMinMax
from rubric.scoring import EVIDENCE_CUT, Provenance, Score
from rubric.scoring import RubricSpec
from rubric.io import SPLITS
from rubric.tables.assemble import JobInput, outcome_counts

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["StreamAssembled", "ScoreLookup", "MappingScores", "assemble_stream"]

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------------------------
# The same assemble step over a job too large to hold: inputs are read twice, pairs streamed out
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StreamAssembled:
    """What :func:`assemble_stream` returns; every table went to the caller's writers.

    Attributes: as :class:`Assembled`, without the tables; ``has_claims`` says whether a claims
    table was written.
    """

    has_claims: bool
    fitted: FittedMinMax | None
    split_source: str
    counts: dict = field(default_factory=dict)


class ScoreLookup(Protocol):
    """Scores by answer id, fetched a batch at a time (an on-disk store, or :class:`MappingScores`)."""

    def get(self, ids: Sequence[str]) -> Mapping[str, Mapping[str, Score]]:
        """answer_id -> rubric name -> Score for those of ``ids`` that have scores."""
        ...


class MappingScores:
    """A :class:`ScoreLookup` over an in-memory mapping answer_id -> rubric name -> Score."""

    def __init__(self, scores: Mapping[str, Mapping[str, Score]]) -> None:
        self._scores = scores

    def get(self, ids: Sequence[str]) -> dict[str, Mapping[str, Score]]:
        return {a: self._scores[a] for a in ids if a in self._scores}


class _Answers:
    """The job's unique answers in first-occurrence order, on disk (SQLite), with their question id
    and whether a pair of the inputs' own train split holds them."""

    def __init__(self, folder: str) -> None:
        import sqlite3

        self.db = sqlite3.connect(f"{folder}/answers.sqlite", isolation_level=None)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000;"
                              "CREATE TABLE a (aid TEXT PRIMARY KEY, seq INTEGER NOT NULL, qid TEXT NOT NULL, "
                              "question TEXT, answer TEXT, docs TEXT, reference TEXT, "
                              "train INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;"
                              "CREATE INDEX a_seq ON a (seq);")
        self._seq = 0

    def add(self, pairs: Sequence[PairRecord]) -> None:
        import json

        rows, train = [], []
        for p in pairs:
            for aid, ans, docs in ((p.answer_id_a, p.answer_a, p.docs_a), (p.answer_id_b, p.answer_b, p.docs_b)):
                rows.append((aid, self._seq, p.question_id, p.question, ans, json.dumps(list(docs)), p.reference))
                self._seq += 1
                if p.split == "train":
                    train.append((aid,))
        self.db.execute("BEGIN")
        self.db.executemany("INSERT OR IGNORE INTO a (aid, seq, qid, question, answer, docs, reference) "
                            "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
        self.db.executemany("UPDATE a SET train = 1 WHERE aid = ?", train)
        self.db.execute("COMMIT")

    def count(self) -> int:
        return self.db.execute("SELECT COUNT(*) FROM a").fetchone()[0]

    @staticmethod
    def _item(row) -> AnswerItem:
        import json

        aid, question, answer, docs, reference = row
        return AnswerItem(answer_id=aid, question=question, answer=answer, docs=tuple(json.loads(docs)),
                          reference=reference)

    def chunks(self, size: int) -> Iterator[list[tuple[AnswerItem, str, bool]]]:
        """Every answer in first-occurrence order, ``size`` at a time: (item, question id, in a given train pair)."""
        cur = self.db.execute("SELECT aid, question, answer, docs, reference, qid, train FROM a ORDER BY seq")
        for rows in iter(lambda: cur.fetchmany(size), []):
            yield [(self._item(r[:5]), r[5], bool(r[6])) for r in rows]

    def items(self, ids: Sequence[str]) -> dict[str, AnswerItem]:
        out: dict[str, AnswerItem] = {}
        for start in range(0, len(ids), 500):
            chunk = list(ids[start:start + 500])
            q = f"SELECT aid, question, answer, docs, reference FROM a WHERE aid IN ({','.join('?' * len(chunk))})"
            out.update((r[0], self._item(r)) for r in self.db.execute(q, chunk))
        return out

    def close(self) -> None:
        self.db.close()


class _Pieces:
    """A table written in pieces whose column types may differ (an all-null piece of a column is typed
    null): pieces go to temp Parquet files, then out in one schema that fits them all."""

    def __init__(self, folder: str, name: str) -> None:
        self._folder, self._name = folder, name
        self._files: list[str] = []
        self._schemas = []

    def add(self, table: "pa.Table") -> None:
        import pyarrow.parquet as pq

        path = f"{self._folder}/{self._name}-{len(self._files)}.parquet"
        pq.write_table(table, path)
        self._files.append(path)
        self._schemas.append(table.schema)

    def write(self, out: Callable[["pa.Table"], None]) -> None:
        import os

        import pyarrow as pa

        from rubric.io import read_parquet

        if not self._files:
            return
        schema = pa.unify_schemas(self._schemas, promote_options="permissive").with_metadata(
            self._schemas[0].metadata)
        for path in self._files:
            out(read_parquet(path).cast(schema))
            os.unlink(path)


class _PairIds:
    """Every pair id the job has accepted, on disk (SQLite), so memory does not grow with the pairs."""

    def __init__(self, folder: str) -> None:
        import sqlite3

        self.db = sqlite3.connect(f"{folder}/pair_ids.sqlite", isolation_level=None)
        self.db.executescript("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-16000;"
                              "CREATE TABLE ids (pid TEXT PRIMARY KEY, src TEXT, row INTEGER) WITHOUT ROWID;"
                              "CREATE TEMP TABLE cur (pid TEXT PRIMARY KEY, row INTEGER) WITHOUT ROWID;")

    def claim(self, pairs: Sequence[PairRecord], src: str) -> dict[str, tuple[str, int]]:
        """Claim ``pairs``' ids for ``src``; returns ``{pid: (first source, first row)}`` of ids claimed before."""
        db = self.db
        db.execute("BEGIN")
        db.execute("DELETE FROM cur")
        db.executemany("INSERT OR IGNORE INTO cur VALUES (?, ?)", ((p.pair_id, p.row) for p in pairs))
        seen = {pid: (s, r) for pid, s, r in db.execute(
            "SELECT cur.pid, ids.src, ids.row FROM cur JOIN ids ON ids.pid = cur.pid")}
        db.execute("INSERT OR IGNORE INTO ids SELECT pid, ?, row FROM cur", (src,))
        db.execute("COMMIT")
        return seen

    def close(self) -> None:
        self.db.close()


def _conform_pairs(table: "pa.Table", aspects: Sequence[str]) -> "pa.Table":
    """A batch's pairs table with every aspect column of the job, in ``pairs_table``'s column order."""
    import pyarrow as pa

    from rubric.tables.features import ASPECT_COLUMN_PREFIX

    names = table.column_names
    cut = names.index("has_reference") + 1
    head = [n for n in names[:cut]]
    tail = [n for n in names[cut:] if not n.startswith(ASPECT_COLUMN_PREFIX)]
    cols, fields = [], []
    for n in head + [f"{ASPECT_COLUMN_PREFIX}{a}" for a in aspects] + tail:
        if n in names:
            col = table.column(n)
        else:
            col = pa.nulls(table.num_rows, pa.string())
        if n == "expert" and col.type == pa.null():
            col = col.cast(pa.bool_())
        cols.append(col)
        fields.append(pa.field(n, col.type))
    return pa.Table.from_arrays(cols, schema=pa.schema(fields, metadata=table.schema.metadata))


def assemble_stream(read_inputs: Callable[[], Iterator[JobInput]], scores: ScoreLookup,
                    provenance: Mapping[str, Provenance], specs: Sequence[RubricSpec], *,
                    write_pairs: Callable[["pa.Table"], None], write_rejects: Callable[[Sequence[Reject]], None],
                    write_answers: Callable[["pa.Table"], None], write_claims: Callable[["pa.Table"], None],
                    rescale: str = "declared", seed: int = 0, workdir: str | None = None,
                    chunk: int = 20_000, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> StreamAssembled:
    """:func:`assemble` for a job too large to hold: the same tables, written in pieces.

    ``read_inputs()`` yields the job's inputs (whole files or blocks of them, :attr:`JobInput.group`
    naming the file a block belongs to) in job order, and is called twice: once to index the job
    (pair ids, unique answers, per-question summaries for the splits, counts) and once to write its
    pairs, one input at a time. The pair ids and the unique answers live in SQLite files under
    ``workdir``, and answers are laid out ``chunk`` at a time, so what is held grows with questions
    (one small summary each), not with pairs or answers.

    The tables equal :func:`assemble`'s for the same inputs when every input is a whole file; a pair
    id repeated across blocks of one file is rejected with the message the file's reader gives inside
    one file, so a file read in blocks gives the same tables and rejects as the file read whole.

    Args:
        scores: every answer's scores, fetched a batch at a time.
        write_pairs, write_answers, write_claims: receive the pairs, answers and claims tables in
            pieces, in job order (one schema per table); claims only when a rubric is "factuality".
        write_rejects: receives rejects in job order.
        workdir: folder for the on-disk indexes (default: a temp folder).
        chunk: answers per piece of the answers table.
        Other arguments: as :func:`assemble`.

    Raises:
        As :func:`assemble`.
    """
    import tempfile

    if rescale not in ("declared", "fitted"):
        raise ConfigError(f"'rescale' must be 'declared' or 'fitted', got {rescale!r}")
    missing_prov = [s.name for s in specs if s.name not in provenance]
    if missing_prov:
        raise ConfigError(f"no provenance for rubric(s) {missing_prov}")
    with tempfile.TemporaryDirectory(prefix="lfqa-assemble-", dir=workdir) as tmp:
        answers = _Answers(tmp)
        try:
            return _assemble_in_pieces(read_inputs, scores, provenance, specs, answers, tmp, write_pairs=write_pairs,
                                       write_rejects=write_rejects, write_answers=write_answers,
                                       write_claims=write_claims, rescale=rescale, seed=seed, chunk=chunk,
                                       fractions=fractions)
        finally:
            answers.close()


def _index_inputs(read_inputs: Callable[[], Iterator[JobInput]], answers: _Answers, tmp: str,
                  write_rejects: Callable[[Sequence[Reject]], None]) -> dict:
    """The first pass: reject repeated pair ids, write rejects, record unique answers and per-question summaries."""
    per_input: dict[str, dict] = {}
    dropped: dict[int, set[int]] = {}  # input position -> rows of pairs rejected for a repeated id
    questions: dict[str, list] = {}  # qid -> [n pairs, stratum of its first pair, given splits]
    aspects: set[str] = set()
    n_pairs = n_unlabeled = n_rejected = n_given = 0
    first_reason = None
    names: list[str] = []
    ids = _PairIds(tmp)
    try:
        for pos, inp in enumerate(read_inputs()):
            read = inp.read
            group = inp.group or inp.name
            names.append(repr(read.source_file))
            seen = ids.claim(read.pairs, read.source_file)
            same_file, other_file, kept = [], [], []
            for p in read.pairs:
                if p.pair_id in seen:
                    src, row = seen[p.pair_id]
                    if inp.fmt == "graded":
                        raise InputError(f"{read.source_file!r} and {src!r} both hold pair {p.pair_id!r}: a "
                                         "graded question's answers must sit in one input file")
                    if inp.group and src == read.source_file:
                        reason = f"row {p.row}: duplicate pair_id {p.pair_id!r} (first seen at row {row})"
                        same_file.append(Reject(row=p.row, field="pair_id", reason=reason, pair_id=p.pair_id,
                                                source_file=read.source_file))
                    else:
                        reason = f"row {p.row}: duplicate pair_id {p.pair_id!r} (first seen in {src} row {row})"
                        other_file.append(Reject(row=p.row, field="pair_id", pair_id=p.pair_id,
                                                 source_file=read.source_file, reason=reason))
                    dropped.setdefault(pos, set()).add(p.row)
                    continue
                kept.append(p)
            rejects = list(read.rejects)
            if same_file:
                rejects = sorted(rejects + same_file, key=lambda r: r.row if r.row is not None else -1)
            rejects += other_file
            if rejects:
                write_rejects(rejects)
                first_reason = first_reason or rejects[0].reason
            n_rejected += len(rejects)
            extra = len(same_file) + len(other_file)
            c = per_input.setdefault(group, {"path": read.source_file, "sha256": inp.sha256, "rows_in": 0,
                                             "rows_ok": 0, "rejected": 0, "pairs": 0, "unlabeled": 0})
            c["rows_in"] += read.rows_in
            c["rows_ok"] += read.rows_ok - extra
            c["rejected"] += len(read.rejects) + extra
            c["pairs"] += len(kept)
            c["unlabeled"] += sum(1 for p in kept if p.label is None)
            for p in kept:
                q = questions.get(p.question_id)
                if q is None:
                    questions[p.question_id] = q = [0, (p.source, str(p.expert), p.domain), set()]
                q[0] += 1
                if p.split is not None:
                    n_given += 1
                    q[2].add(p.split)
                if p.label is None:
                    n_unlabeled += 1
                for name, _ in p.aspects:
                    aspects.add(name)
            answers.add(kept)
            n_pairs += len(kept)
    finally:
        ids.close()
    if not n_pairs:
        first = f"; first reason: {first_reason}" if first_reason else ""
        raise InputError(f"no usable pair in {', '.join(names)}: {n_rejected} row(s) rejected{first}")
    return {"per_input": per_input, "dropped": dropped, "questions": questions, "aspects": aspects,
            "n_pairs": n_pairs, "n_unlabeled": n_unlabeled, "n_rejected": n_rejected, "n_given": n_given}


def _question_splits(index: dict, seed: int,
                     fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> tuple[dict[str, str] | None, str]:
    """The inputs' own splits (None: read them from the pairs) or splits assigned per question as job_splits does."""
    questions, n_given, n_pairs = index["questions"], index["n_given"], index["n_pairs"]
    if n_given == 0:
        from rubric.io import split_questions

        return split_questions({q: (v[0], v[1]) for q, v in questions.items()}, fractions, seed=seed), "assigned"
    if n_given != n_pairs:
        raise ConfigError(f"{n_given} of {n_pairs} pairs carry a 'split' field and {n_pairs - n_given} do not; "
                          "give every pair a split (train/dev/test) or none")
    bad = sorted({s for v in questions.values() for s in v[2] if s not in SPLITS})
    if bad:
        raise ConfigError(f"split values {bad} are not one of {', '.join(SPLITS)}")
    leaky = [q for q, v in questions.items() if len(v[2]) > 1]
    if leaky:
        log.warning("the input's split puts %d question(s) in more than one split (e.g. question id %s); "
                    "kept as given", len(leaky), leaky[0])
    return None, "input"


def _check_and_fit(answers: _Answers, scores: ScoreLookup, names: Sequence[str], of_question: dict[str, str] | None,
                   *, fitted: bool, chunk: int) -> tuple[FittedMinMax | None, dict, dict[str, set[str]]]:
    """A pass over every answer: each has every score (else BatchMismatchError, as :func:`assemble`), the
    training answers' raw ranges (for ``fitted``), errors and abstentions per rubric (``outcome_counts``), and every extra key per rubric."""
    n = lost = 0
    first_lost = no_rubric = None
    errors = dict.fromkeys(names, 0)
    abstained = dict.fromkeys(names, 0)
    cut = dict.fromkeys(names, 0)
    keys: dict[str, set[str]] = {r: set() for r in names}
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for part in answers.chunks(chunk):
        got = scores.get([it.answer_id for it, _, _ in part])
        for it, qid, given_train in part:
            n += 1
            s = got.get(it.answer_id)
            if s is None:
                lost += 1
                first_lost = first_lost or it.answer_id
                continue
            train = fitted and (given_train if of_question is None else of_question[qid] == "train")
            for r in names:
                sc = s.get(r)
                if sc is None:
                    no_rubric = no_rubric or (it.answer_id, r)
                    continue
                errors[r] += sc.error is not None and not sc.abstained
                abstained[r] += sc.abstained
                cut[r] += sc.extras.get(EVIDENCE_CUT) is True
                keys[r].update(sc.extras)
                if train and sc.raw is not None:  # a Score's raw value is finite
                    lo[r], hi[r] = min(lo.get(r, sc.raw), sc.raw), max(hi.get(r, sc.raw), sc.raw)
    if lost:
        raise BatchMismatchError(f"{lost} of {n} answers have no score (first: {first_lost})")
    if no_rubric:
        raise BatchMismatchError(f"answer {no_rubric[0]} has no {no_rubric[1]!r} score")
    fit = None
    if fitted:  # min and max of the pieces' ranges: the same bounds as fitting all values at once
        fit = FittedMinMax.fit({r: [lo[r], hi[r]] for r in names if r in lo})
    return fit, outcome_counts(errors, abstained, cut), keys


def _assemble_in_pieces(read_inputs, scores: ScoreLookup, provenance, specs, answers: _Answers, tmp: str, *,
                        write_pairs, write_rejects, write_answers, write_claims, rescale: str, seed: int,
                        chunk: int, fractions: Sequence[float] = DEFAULT_SPLIT_FRACTIONS) -> StreamAssembled:
    from rubric.tables.features import answers_table, pairs_table

    index = _index_inputs(read_inputs, answers, tmp, write_rejects)
    of_question, split_source = _question_splits(index, seed, fractions)
    names = [s.name for s in specs]
    fitted, errors, keys = _check_and_fit(answers, scores, names, of_question, fitted=rescale == "fitted",
                                          chunk=chunk)

    def table_of(items: Sequence[AnswerItem], got: Mapping[str, Mapping[str, Score]]) -> "pa.Table":
        return answers_table(items, specs, {r: [got[it.answer_id][r] for it in items] for r in names}, provenance,
                             fitted=fitted, extra_keys=keys)

    answer_pieces, claim_pieces = _Pieces(tmp, "answers"), _Pieces(tmp, "claims")
    has_claims = "factuality" in names
    no_claims = 0
    for part in answers.chunks(chunk):
        items = [it for it, _, _ in part]
        got = scores.get([it.answer_id for it in items])
        answer_pieces.add(table_of(items, got))
        if has_claims:
            from rubric.scoring import claims_table, count_no_claims

            fact = [got[it.answer_id]["factuality"] for it in items]
            claim_pieces.add(claims_table([it.answer_id for it in items], fact))
            no_claims += count_no_claims(fact)
    answer_pieces.write(write_answers)
    claim_pieces.write(write_claims)

    split_counts = dict.fromkeys(SPLITS, 0)
    all_aspects = sorted(index["aspects"])
    schema = None
    for pos, inp in enumerate(read_inputs()):
        drop = index["dropped"].get(pos, set())
        kept = [p for p in inp.read.pairs if p.row not in drop] if drop else inp.read.pairs
        if not kept:
            continue
        splits = [p.split if of_question is None else of_question[p.question_id] for p in kept]
        for s in splits:
            split_counts[s] += 1
        # the answers of this piece only: pairs_table indexes what it is given
        ids = list(dict.fromkeys(a for p in kept for a in (p.answer_id_a, p.answer_id_b)))
        items = answers.items(ids)
        table = _conform_pairs(pairs_table(kept, splits, table_of([items[a] for a in ids], scores.get(ids))),
                               all_aspects)
        if schema is None:
            schema = table.schema
        else:
            table = table.cast(schema)
        write_pairs(table)

    per_input = index["per_input"]
    counts = {
        "rows_in": sum(c["rows_in"] for c in per_input.values()),
        "rows_ok": sum(c["rows_ok"] for c in per_input.values()),
        "rejected": index["n_rejected"],
        "pairs": index["n_pairs"],
        "unlabeled": index["n_unlabeled"],
        "unique_answers": answers.count(),
        "splits": split_counts,
        **errors,
        "per_input": per_input,
    }
    if has_claims:  # answers with no verifiable claim, scored 0.0 by factuality.veriscore.v2
        counts["factuality_no_claims"] = no_claims
    if counts["rows_in"] != counts["rows_ok"] + counts["rejected"]:
        raise BatchMismatchError(f"row accounting is broken: rows_in={counts['rows_in']}, rows_ok={counts['rows_ok']}, "
                                 f"rejected={counts['rejected']}")
    return StreamAssembled(has_claims=has_claims, fitted=fitted, split_source=split_source, counts=counts)
