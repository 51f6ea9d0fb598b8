"""The agreement job (``validate --human``): rated answers -> the chosen rubric versions -> agreement with people::

    check backends -> plan units (one whole input each: a source's answers are compared together)
      -> each unit's rated answers (``rubric.io.read_ratings`` / ``read_graded_ratings``) or pairs with aspect
         judgements (any pair format, lfqa_eval's preferences) -> score their distinct answers (resume or re-score,
         as the score job) -> per scorer and aspect: Spearman and Kendall within sources, pooled and per system, with
         CIs over sources, length and every rubric side by side (``rubric.validity.agreement_table``)
      -> OUT/agreement.parquet, agreement_answers.parquet, report.md, manifest.json (last)

The line is :func:`workers.runner.run`'s; :class:`HumanKind` is the score job's kind with other work items (the rated
answers, stored by answer id as the score job stores answers) and another assemble step.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rubric.config import ScoringConfig, check_range
from rubric.errors import ConfigError, InputError
from rubric.io import RATING_FIELDS, explode, parse_aspects, read_graded_ratings, read_ratings, read_whole
from rubric.preference import OVERALL
from rubric.scoring import RubricSpec
from rubric.tables import word_count
from rubric.validity import (AGREEMENT_ANSWERS_FILE, AGREEMENT_FILE, HUMAN_KIND, REPORT_FILE, Rated, agreement_page,
                             agreement_rows_table, agreement_table)
from workers.jobs.score import ScoreKind
from workers.jobs.validate import N_BOOT  # validate's, one default for both
from workers.runner import JobRun, KindManifest, ScoreIndex

__all__ = ["HumanKind", "run_agreement_job", "N_BOOT", "RATED_FORMATS"]

log = logging.getLogger(__name__)

#: The formats read as rated answers (with ``--map`` naming ``answer``, for the tables); any other pair format is read
#: as pairs whose aspect judgements are compared.
RATED_FORMATS: tuple[str, ...] = ("jsonl", "parquet", "csv", "graded")


class HumanKind(ScoreKind):
    """Items are the distinct answers of a unit's rated answers (or pairs), one score per rubric.

    Args:
        fmt: the input format; options: reader options (for rated tables ``mapping`` is the ratings mapping,
            :data:`rubric.io.RATING_FIELDS`); specs: the rubric versions; config: scoring settings;
        aspects: aspect -> rating column (``--aspects``; for pairs: the aspects of the pairs' judgements to compare,
            None: every one they have, and the overall label); n_boot / seed: the bootstrap over sources.
    """

    kind = HUMAN_KIND
    blocks = False  # a source's answers are compared together: a unit is a whole input
    read_on_driver = True
    outputs = (AGREEMENT_FILE, AGREEMENT_ANSWERS_FILE, REPORT_FILE)
    # a failed or abstained score is a missing value here, counted in the table: no failure budget
    max_failed = 1.0

    def __init__(self, fmt: str, options: Mapping[str, Any], specs: Sequence[RubricSpec | str], config: ScoringConfig,
                 aspects: Mapping[str, str] | str | None = None, n_boot: int = N_BOOT, seed: int = 0) -> None:
        super().__init__(fmt, options, specs, config, seed)
        check_range("n_boot", n_boot, low=1)
        self.rated = fmt in RATED_FORMATS
        if self.rated and aspects is None:
            raise ConfigError("--human on rated answers needs --aspects: the rating columns to compare with "
                              "(e.g. coherence,fluency,factuality=consistency)")
        if self.rated and fmt != "graded" and "answer" not in (options.get("mapping") or {}):
            raise ConfigError(f"--human --format {fmt} needs --map naming the rated answers' columns: "
                              f"{', '.join(RATING_FIELDS)} (question and answer required)")
        self.aspects = None if aspects is None else parse_aspects(aspects)
        self.n_boot = n_boot
        self.key_fields = {**self.key_fields, "human": {"aspects": self.aspects}}
        self._read: dict[str, tuple[list, list[dict], int, list[str]]] = {}

    def arguments(self) -> dict:
        return {**super().arguments(), "aspects": self.aspects, "n_boot": self.n_boot}

    def read(self, uri: str) -> tuple[list, list[dict], int, list[str]]:
        """One input's rated answers, its pairs with aspect judgements, its rejected rows and its aspects (read
        once: the assemble step needs them again)."""
        if uri not in self._read:
            opts = dict(self.options)
            if self.fmt == "graded":
                got = read_graded_ratings(uri, self.aspects, max_answer_chars=opts.get("max_answer_chars"),
                                          include_references=bool(opts.get("include_references")))
                self._read[uri] = (got.answers, [], len(got.rejects), list(got.aspects))
            elif self.rated:
                got = read_ratings(uri, opts["mapping"], self.aspects, fmt=self.fmt,
                                   max_answer_chars=opts["max_answer_chars"],
                                   max_question_chars=opts["max_question_chars"])
                self._read[uri] = (got.answers, [], len(got.rejects), list(got.aspects))
            else:
                read = read_whole(uri, self.fmt, self.options)
                pairs = [{"question_id": p.question_id, "answer_id_a": p.answer_id_a, "answer_id_b": p.answer_id_b,
                          "n_words_a": word_count(p.answer_a), "n_words_b": word_count(p.answer_b),
                          "aspects": {**dict(p.aspects), OVERALL: p.label}, "item": p} for p in read.pairs]
                have = list(dict.fromkeys(a for p in read.pairs for a, _ in p.aspects)) + [OVERALL]
                wanted = have if self.aspects is None else list(self.aspects)
                unknown = [a for a in wanted if a not in have]
                if unknown:
                    raise InputError(f"{uri}: its pairs have no judgement of {', '.join(unknown)} (they have "
                                     f"{', '.join(have)})")
                self._read[uri] = ([], pairs, len(read.rejects), wanted)
        return self._read[uri]

    def _items(self, uri: str) -> list:
        rated, pairs, _, _ = self.read(uri)
        if pairs:
            return explode([p["item"] for p in pairs])
        return list({r.item.answer_id: r.item for r in rated}.values())

    def unit_key(self, uri: str) -> Mapping[str, Any]:
        """The store key names the items themselves (a digest of their ids): another mapping or reader option
        that reads other answers never finds a store "done" that lacks their scores."""
        ids = sorted(it.answer_id for it in self._items(uri))
        return {**self.key_fields, "items": hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]}

    def work_items(self, uri: str, block) -> tuple[list, list[list[str]]]:
        items = self._items(uri)
        return items, [[it.answer_id] for it in items]

    def assemble(self, job: JobRun, scores: ScoreIndex, provenance) -> KindManifest:
        rated, pairs, rejected, aspects, per_input = [], [], 0, [], {}
        for u in {u.uri: u for u in job.units}.values():
            r, p, n_rej, a = self.read(u.uri)
            rated += r
            pairs += p
            rejected += n_rej
            aspects += [x for x in a if x not in aspects]
            per_input[u.shard] = {"rated_answers": len(r), "pairs": len(p), "rejected": n_rej}
        if not rated and not pairs:
            raise InputError("no rated answer or judged pair to compare with: every row was rejected (rejects by "
                             f"input: {per_input})")
        items = {it.answer_id: it for u in {u.uri for u in job.units} for it in self._items(u)}
        got = scores.get(list(items))
        raw = {aid: {name: s.raw for name, s in by.items()} for aid, by in got.items()}
        versions = {s.name: s.version for s in self.specs}
        answers = [Rated(a.item.answer_id, a.source, a.system, dict(a.ratings), word_count(a.item.answer))
                   for a in rated]
        table = agreement_table(answers, raw, versions, aspects, n_boot=self.n_boot, seed=self.seed, pairs=pairs)
        job.output.table(AGREEMENT_FILE, agreement_rows_table(table))
        job.output.table(AGREEMENT_ANSWERS_FILE, _answers_table(rated, got, versions, aspects))
        counts = {"rated answers": len(rated), "sources": len({a.source for a in rated}),
                  "systems": len({a.system for a in rated if a.system}), "judged pairs": len(pairs),
                  "rejected rows": rejected}
        counts = {k: v for k, v in counts.items() if v or k in ("rated answers", "rejected rows")}
        columns = self.aspects or {a: a for a in aspects}
        job.output.text(REPORT_FILE, agreement_page(table, inputs=job.shards, counts=counts, columns=columns))
        log.info("wrote %s: %d rated answers of %d sources, %d judged pairs; %d answers scored now",
                 job.out / REPORT_FILE, len(rated), counts.get("sources", 0), len(pairs), job.step.scored)
        return KindManifest({"agreement": {"aspects": aspects, "columns": columns, "scorers": table.scorers,
                                           "rubric_of": table.rubric_of, "n_boot": self.n_boot, "seed": self.seed,
                                           "rubrics": versions},
                             "rubrics": {v: {"rubric_version": p.rubric_version, "backend": p.backend,
                                             "model_id": p.model_id, "model_revision": p.model_revision,
                                             "template_hash": p.template_hash} for v, p in provenance.items()},
                             "counts": counts},
                            per_input=per_input, job={"answers_scored_now": job.step.scored})


def _answers_table(rated, got, versions, aspects):
    """One row per rated answer: its ids, source, system, length, ratings and each rubric's raw score and error."""
    import pyarrow as pa

    cols: dict[str, list] = {"row_id": [a.row_id for a in rated], "answer_id": [a.item.answer_id for a in rated],
                             "source": [a.source for a in rated], "system": [a.system for a in rated],
                             "n_words": [word_count(a.item.answer) for a in rated]}
    types = {"n_words": pa.int64()}
    for aspect in aspects:
        cols[f"rating_{aspect}"] = [a.ratings.get(aspect) for a in rated]
        types[f"rating_{aspect}"] = pa.float64()
    for rubric in versions:
        cols[f"score_{rubric}"] = [getattr(got.get(a.item.answer_id, {}).get(rubric), "raw", None) for a in rated]
        cols[f"error_{rubric}"] = [getattr(got.get(a.item.answer_id, {}).get(rubric), "error", None) for a in rated]
        types[f"score_{rubric}"], types[f"error_{rubric}"] = pa.float64(), pa.string()
    return pa.table({k: pa.array(v, type=types.get(k, pa.string())) for k, v in cols.items()})


def run_agreement_job(inputs, fmt: str, specs: Sequence[RubricSpec], out, *, config: ScoringConfig,
                      reader_options: Mapping[str, Any] | None = None, aspects: Mapping[str, str] | str | None = None,
                      n_boot: int = N_BOOT, seed: int = 0, progress: bool = True, scorers=None,
                      force: bool = False) -> dict:
    """Score every input's rated answers (or judged pairs) and write the agreement table (see the module docstring).

    Args:
        inputs: files, folders, globs or URIs (one unit each); fmt: their format; specs: the rubric versions.
        out: the output folder; config: scoring settings; reader_options: passed to the reader.
        aspects, n_boot, seed: as :class:`HumanKind`.
        scorers: prebuilt scorers (tests; run as a ``models.scorer_set.ScorerSet``, the backend check skipped).
        force: write into a folder that is not an lfqa-rubric output.

    Returns:
        The manifest (also ``OUT/manifest.json``).
    """
    from models.scorer_set import ScorerSet
    from workers.runner import run

    kind = HumanKind(fmt, dict(reader_options or {}), list(specs), config, aspects=aspects, n_boot=n_boot, seed=seed)
    return run(kind, inputs, out, progress=progress, force=force, check=scorers is None,
               scorer=None if scorers is None else ScorerSet(scorers, config.batch_size))
