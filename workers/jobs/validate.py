"""The validate job: minimal pairs of an input's answers -> the chosen rubric versions -> the validity table::

    check backends -> plan units (one whole input each: a family may take a sentence or an answer of
      another question) -> each unit's distinct answers, their perturbed copies (``rubric.validity``)
      -> score originals and copies (resume or re-score, as the score job) -> per rubric version and
      family: n, pass rate with a question-clustered CI, ties, fails, missing
      -> OUT/validity_pairs.parquet, validity.parquet, report.md, manifest.json (last)

The line is :func:`workers.runner.run`'s; :class:`ValidateKind` is the score job's kind with other work
items (originals and copies, stored by answer id as the score job stores answers) and another assemble
step. The store key holds the seed, the families, ``--max-questions`` and a digest of the items' ids: a
changed one changes the items, so the unit is scored again; the same run again reuses every score.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from rubric.config import ScoringConfig, check_range
from rubric.errors import BackendUnavailableError, ConfigError, InputError
from rubric.io import explode, question_id, read_scored
from rubric.scoring import RubricSpec
from rubric.validity import (DEFAULT_TOLERANCE, FAMILIES, OUTCOMES_FILE, REPORT_FILE, SUMMARY_FILE, VALIDATE_KIND,
                             MinimalPair, minimal_pairs, outcomes, outcomes_table, pair_items, resolve_families,
                             summary_of, summary_table, validity_page)
from workers.jobs.score import ScoreKind
from workers.runner import KindManifest, JobRun, ScoreIndex

__all__ = ["ValidateKind", "run_validate_job", "N_BOOT"]

log = logging.getLogger(__name__)

#: Bootstrap replicates of the pass rates' CIs.
N_BOOT = 1000


def _checking(families: list[str], rubrics: Sequence[str], *, given: bool) -> list[str]:
    """The families with an expectation for at least one of ``rubrics``: by default, the others are left out (their
    copies would be scored for nothing); a given one that checks none of them is an error.

    Raises:
        ConfigError: a given family checks none of the rubrics, or no family checks any.
    """
    idle = [f for f in families if not set(FAMILIES.get(f).expect) & set(rubrics)]
    if given and idle:
        raise ConfigError(f"--families {', '.join(idle)}: checks none of the rubrics {', '.join(rubrics)} (each "
                          "family's rubrics: lfqa-rubric validate --help, or report.md's family table)")
    chosen = [f for f in families if f not in idle]
    if not chosen:
        raise ConfigError(f"no family checks any of the rubrics {', '.join(rubrics)}")
    return chosen


def _synonyms_for(families: list[str], *, given: bool):
    """The synonym source of the families that need one (WordNet, each word's commonest sense), and the families
    left out, with why, when WordNet's files are not installed (an error when the families were asked for by name).

    Raises:
        BackendUnavailableError: a family asked for by name needs WordNet and its files are not installed.
    """
    needing = [f for f in families if "synonyms" in FAMILIES.get(f).needs]
    if not needing:
        return None, {}
    from models.attacks import WordNetSynonyms

    try:
        return WordNetSynonyms(max_senses=1), {}
    except BackendUnavailableError as e:
        if given:
            raise BackendUnavailableError(f"--families {', '.join(needing)}: {e}") from None
        log.warning("families %s left out: %s", ", ".join(needing), e)
        return None, {f: str(e) for f in needing}


class ValidateKind(ScoreKind):
    """The validate job: items are the originals and perturbed copies of a unit's answers, one score per rubric.

    Args:
        fmt, options: the input format and reader options; specs: the rubric versions; config: scoring settings;
        seed: the perturbations' seed (and the bootstrap's); families: family names (None: every family with an
        expectation for one of the rubrics);
        tolerance: the tie tolerance on raw scores; max_questions: only the first N questions of each input;
        n_boot: bootstrap replicates.
    """

    kind = VALIDATE_KIND
    blocks = False  # a family takes from the other questions of the input: a unit is a whole input
    read_on_driver = True
    outputs = (OUTCOMES_FILE, SUMMARY_FILE, REPORT_FILE)
    # no failure budget (issue 45's --max-failed is score's and judge's): a failed score is a missing outcome here
    max_failed = 1.0

    def __init__(self, fmt: str, options: Mapping[str, Any], specs: Sequence[RubricSpec | str], config: ScoringConfig,
                 seed: int = 0, families: Sequence[str] | None = None, tolerance: float = DEFAULT_TOLERANCE,
                 max_questions: int | None = None, n_boot: int = N_BOOT) -> None:
        super().__init__(fmt, options, specs, config, seed)
        check_range("tolerance", tolerance, low=0.0)
        check_range("n_boot", n_boot, low=1)
        if max_questions is not None:
            check_range("max_questions", max_questions, low=1)
        self.families = _checking(resolve_families(families), self.names, given=families is not None)
        self.synonyms, self.skipped = _synonyms_for(self.families, given=families is not None)
        self.families = [f for f in self.families if f not in self.skipped]
        if not self.families:
            raise ConfigError(f"no family left to check {', '.join(self.names)}: {self.skipped}")
        self.tolerance, self.max_questions, self.n_boot = float(tolerance), max_questions, n_boot
        self.key_fields = {**self.key_fields, "validity": {"families": self.families, "seed": seed,
                                                          "max_questions": max_questions}}
        self._pairs: dict[str, tuple[list[MinimalPair], int]] = {}
        self._first_reject: dict[str, str] = {}  # input -> the reason of its first rejected row

    def arguments(self) -> dict:
        return {**super().arguments(), "families": self.families, "tolerance": self.tolerance,
                "max_questions": self.max_questions, "n_boot": self.n_boot}

    def pairs(self, uri: str) -> tuple[list[MinimalPair], int]:
        """The minimal pairs of one input and its rejected rows (read once: the assemble step needs them again)."""
        if uri not in self._pairs:
            read = read_scored(uri, self.fmt, self.options)
            answers = explode(list(read.pairs))
            if self.max_questions is not None:
                keep = list(dict.fromkeys(question_id(a.question) for a in answers))[:self.max_questions]
                answers = [a for a in answers if question_id(a.question) in set(keep)]
            self._pairs[uri] = (minimal_pairs(answers, self.families, self.seed, synonyms=self.synonyms),
                                len(read.rejects))
            if read.rejects:
                self._first_reject[uri] = read.rejects[0].reason
        return self._pairs[uri]

    def unit_key(self, uri: str) -> Mapping[str, Any]:
        """The store key names the items themselves (a digest of their ids): copies made otherwise (another
        seed, other families, a family's rule changed in a later release) never find a store "done" that lacks
        their scores."""
        import hashlib

        ids = sorted({it.answer_id for it in pair_items(self.pairs(uri)[0])})
        return {**self.key_fields, "items": hashlib.sha256("\n".join(ids).encode()).hexdigest()[:16]}

    def work_items(self, uri: str, block) -> tuple[list, list[list[str]]]:
        items = pair_items(self.pairs(uri)[0])
        return items, [[it.answer_id] for it in items]

    def assemble(self, job: JobRun, scores: ScoreIndex, provenance) -> KindManifest:
        pairs: list[MinimalPair] = []
        per_input: dict[str, dict] = {}
        for u in {u.uri: u for u in job.units}.values():
            got, rejected = self.pairs(u.uri)
            pairs.extend(got)
            per_input[u.shard] = {"minimal_pairs": len(got), "rejected": rejected}
        if not pairs:  # as score stops on a file with no usable pair: an all-n/a table would say nothing
            rejected = sum(c["rejected"] for c in per_input.values())
            first = next(iter(self._first_reject.values()), None)
            raise InputError(f"nothing to validate in {', '.join(repr(s) for s in job.shards)}: {rejected} row(s) "
                             f"rejected{f' (first: {first})' if first else ''}, and no family made a minimal pair of "
                             "what is left")
        versions = {s.name: s.version for s in self.specs}
        lookup = scores.get([i for p in pairs for i in (p.original_id, p.perturbed_id)])
        results = outcomes(pairs, lookup, self.tolerance, versions=versions)
        table = summary_of(results, versions=versions, families=self.families, tolerance=self.tolerance,
                           n_boot=self.n_boot, seed=self.seed)
        job.output.table(OUTCOMES_FILE, outcomes_table(results))
        job.output.table(SUMMARY_FILE, summary_table(table))
        job.output.text(REPORT_FILE, validity_page(table, inputs=job.shards, seed=self.seed, families=self.families,
                                                   n_boot=self.n_boot))
        by_family = {f: sum(1 for p in pairs if p.family == f) for f in self.families}
        log.info("wrote %s: %d minimal pairs of %d questions, %d answers scored (%d now)", job.out / REPORT_FILE,
                 len(pairs), len({p.question_id for p in pairs}), len(lookup), job.step.scored)
        return KindManifest({"validity": {"seed": self.seed, "families": self.families, "tolerance": self.tolerance,
                                          "n_boot": self.n_boot, "max_questions": self.max_questions,
                                          "rubrics": versions, "pairs_by_family": by_family,
                                          "families_left_out": self.skipped,
                                          "synonyms": None if self.synonyms is None else self.synonyms.name,
                                          "pass_rates": {f"{r.version}/{r.family}": r.pass_rate for r in table.rows
                                                         if r.n > r.missing},
                                          "unchecked": table.unchecked},
                             "rubrics": {v: {"rubric_version": p.rubric_version, "backend": p.backend,
                                             "model_id": p.model_id, "model_revision": p.model_revision,
                                             "template_hash": p.template_hash} for v, p in provenance.items()},
                             "counts": {"minimal_pairs": len(pairs), "answers": len(lookup),
                                        "questions": len({p.question_id for p in pairs})}},
                            per_input=per_input, job={"answers_scored_now": job.step.scored})


def run_validate_job(inputs, fmt: str, specs: Sequence[RubricSpec], out, *, config: ScoringConfig,
                     reader_options: Mapping[str, Any] | None = None, seed: int = 0,
                     families: Sequence[str] | None = None, tolerance: float = DEFAULT_TOLERANCE,
                     max_questions: int | None = None, n_boot: int = N_BOOT, progress: bool = True, scorers=None,
                     force: bool = False) -> dict:
    """Score the minimal pairs of every input and write the validity table (see the module docstring).

    Args:
        inputs: files, folders, globs or URIs (one unit each); fmt: their format; specs: the rubric versions.
        out: the output folder; config: scoring settings; reader_options: passed to the reader.
        seed, families, tolerance, max_questions, n_boot: as :class:`ValidateKind`.
        scorers: prebuilt scorers (tests; run as a ``models.scorer_set.ScorerSet``, the backend check skipped).
        force: write into a folder that is not an lfqa-rubric output.

    Returns:
        The manifest (also ``OUT/manifest.json``).
    """
    from models.scorer_set import ScorerSet
    from workers.runner import run

    kind = ValidateKind(fmt, dict(reader_options or {}), list(specs), config, seed, families=families,
                        tolerance=tolerance, max_questions=max_questions, n_boot=n_boot)
    return run(kind, inputs, out, progress=progress, force=force, check=scorers is None,
               scorer=None if scorers is None else ScorerSet(scorers, config.batch_size))
