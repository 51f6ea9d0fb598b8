"""The rubric preference model as a victim of the attacks in :mod:`rubric.perturbation.attacks`: each probe re-scores one
answer with every rubric of the model (cheap CPU rubrics only; see that module's docstring)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from rubric.config import check_range
from rubric.errors import BatchMismatchError, ConfigError, ProvenanceError
from rubric.io import AnswerItem, PairRecord, content_id
from rubric.scoring import FittedMinMax
from rubric.scoring import Provenance, ScoreSet
from rubric.scoring import RUBRICS, RubricSpec

if TYPE_CHECKING:
    from rubric.preference import PreferenceModel

__all__ = ["RubricVictim", "rubric_victim_specs"]


def rubric_victim_specs(model: PreferenceModel) -> tuple[list[RubricSpec], FittedMinMax | None]:
    """The rubric specs and fitted rescale bounds a preference model's features were made with.

    Args:
        model: a fitted :class:`rubric.preference.model.PreferenceModel` that records its provenance.

    Returns:
        (specs in the model's feature order, a ``FittedMinMax`` for rubrics rescaled by fitted bounds
        or None).

    Raises:
        ProvenanceError: the model records no provenance (a v1 file: re-fit it).
        UnknownNameError: a rubric version is not registered here.
    """
    if model.provenance is None:
        raise ProvenanceError("the preference model records no provenance, so its rubrics cannot be re-scored "
                              "the same way: re-fit it with this version of lfqa-rubric")
    specs, bounds = [], {}
    for f in model.features_:
        record = model.provenance[f]
        specs.append(RUBRICS.get(record["rubric_version"]))
        if record["rescale"]["kind"] == "fitted":
            bounds[f] = (float(record["rescale"]["lo"]), float(record["rescale"]["hi"]))
    return specs, (FittedMinMax(bounds=bounds) if bounds else None)


class RubricVictim:
    """The rubric preference model as a victim: every probe re-scores the changed answer's rubrics.

    Probes go through the same code as a scoring job: scores become an answers table
    (:func:`rubric.tables.features.answers_table`, rescaled as the model's provenance says), then a pairs
    table, then the design matrix the model expects (:func:`rubric.preference.evaluate.model_inputs`: length
    betas, style covariates), so a probe is scored exactly as a table row would be. Scores are
    cached by (question, answer), so an answer is scored once however many probes share it.

    Args:
        model: a fitted binary :class:`rubric.preference.model.PreferenceModel`.
        specs: the rubric specs of its features (:func:`rubric_victim_specs`).
        score_batch: answers -> one ``{rubric: Score}`` per answer, in order (the scorers' merged
            ``score_batch``).
        provenance: rubric -> how the scorers make it; must agree with the model's records.
        fitted: fitted rescale bounds (:func:`rubric_victim_specs`).
        batch_size: answers per ``score_batch`` call.
        name: the victim's name in reports.

    Raises:
        ConfigError: a three-way model, or specs that are not the model's features.
        ProvenanceError: the scorers make a feature differently from the model's training table.
    """

    def __init__(self, model: PreferenceModel, specs: Sequence[RubricSpec],
                 score_batch: Callable[[Sequence[AnswerItem]], Sequence[ScoreSet]],
                 provenance: Mapping[str, Provenance], *, fitted: FittedMinMax | None = None, batch_size: int = 32,
                 name: str = "preference model (LR on rubric differences)") -> None:
        from rubric.tables import provenance_differences, rubric_provenance

        if [str(c) for c in model.classes_] != ["a", "b"]:
            raise ConfigError("the victim must be a binary a/b preference model")
        if [s.name for s in specs] != list(model.features_):
            raise ConfigError(f"specs {[s.name for s in specs]} are not the model's features {model.features_}")
        check_range("batch_size", batch_size, low=1)
        mine = {s.name: rubric_provenance(provenance[s.name], s, fitted) for s in specs}
        if model.provenance is not None:
            diffs = provenance_differences(model.provenance, mine, list(model.features_))
            if diffs:
                raise ProvenanceError("the victim's rubrics would be re-scored differently from its training table:\n- "
                                      + "\n- ".join(diffs))
        self.model = model
        self.specs = list(specs)
        self.provenance = dict(provenance)
        self.fitted = fitted
        self.batch_size = batch_size
        self.name = name
        self._score_batch = score_batch
        self._cache: dict[str, ScoreSet] = {}
        self._a = [str(c) for c in model.classes_].index("a")

    def _scores(self, items: Sequence[AnswerItem]) -> None:
        todo = [it for it in items if it.answer_id not in self._cache]
        for i in range(0, len(todo), self.batch_size):
            chunk = todo[i:i + self.batch_size]
            results = self._score_batch(chunk)
            if len(results) != len(chunk):
                raise BatchMismatchError(f"the scorers returned {len(results)} results for {len(chunk)} answers")
            for it, r in zip(chunk, results):
                self._cache[it.answer_id] = r

    def p_a(self, triples: Sequence[tuple[str, str, str]]) -> np.ndarray:
        """P(a preferred) for each (question, answer_a, answer_b); NaN where a rubric value is missing."""
        from rubric.preference import model_inputs
        from rubric.tables import answers_table, pairs_table

        if not triples:
            return np.zeros(0)
        items: dict[str, AnswerItem] = {}
        pairs = []
        for i, (q, a, b) in enumerate(triples):
            for text in (a, b):
                aid = content_id(q, text)
                items.setdefault(aid, AnswerItem(answer_id=aid, question=q, answer=text))
            pairs.append(PairRecord(pair_id=f"probe{i}", question=q, answer_a=a, answer_b=b, label=None, row=i))
        ordered = list(items.values())
        self._scores(ordered)
        columns = {s.name: [self._cache[it.answer_id][s.name] for it in ordered] for s in self.specs}
        answers = answers_table(ordered, self.specs, columns, self.provenance, fitted=self.fitted)
        table = pairs_table(pairs, ["test"] * len(pairs), answers)
        dm = model_inputs(self.model, table, keep_unlabeled=True, keep_ties=True)
        out = np.full(len(triples), np.nan)
        if len(dm.y):
            out[dm.row_index] = self.model.predict_proba(dm.X)[:, self._a]
        return out
