"""Named configurations, defined once: ``paper`` is LFQA-HP-1M's (Jahan, Iqbal and Ray Choudhury), as the
seed paper and its reference code describe it; ``cpu`` is the CPU rubric profile (the nine rubric names,
each with a version that runs well on a CPU, docs/cpu-profile.md).

Our defaults improve on the paper in ways that change its numbers (style covariates in the model,
logprob judges, a soft use-of-examples score, factuality 0 for no claim is the paper's rule and our
default too). A preset fixes every such setting at once, so "the paper's configuration" is one
switch (``--preset paper`` on ``score``, ``fit``, ``evaluate``, ``judge`` and ``analyze``) and a
report made with it says so in its title and in every row it computed. A model row says "[paper preset]"
only when the model is the preset's: all of its rubrics, at its versions, and nothing else
(:func:`model_preset_tag`); one fitted with the preset's settings on fewer rubrics says which it lacks.

The CLI reads the settings from here (``workers/cli/presets.py``); nothing else restates them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from rubric import cpu_profile as _cpu_profile  # noqa: F401  registers the CPU versions the cpu preset names
from rubric.config import MINILM_ENCODERS
from rubric.errors import ConfigError, UnknownNameError
from rubric.scoring import RUBRICS, TEMPLATE_VERSIONS, get_template

__all__ = ["Preset", "PAPER", "CPU", "PRESETS", "get_preset", "preset_rubric_versions", "preset_judges",
           "preset_tag", "preset_title", "model_preset", "table_problems", "judge_settings_problems", "PRESET_META_KEY",
           "model_preset_problems", "model_preset_tag"]

#: The key under which ``fit`` records a preset in the model's metadata.
PRESET_META_KEY = "preset"


def _frozen(d: Mapping[str, str]) -> Mapping[str, str]:
    return MappingProxyType(dict(d))


@dataclass(frozen=True)
class Preset:
    """One named configuration of every step.

    Attributes:
        name: the ``--preset`` value.
        title: what reports say about it (titles, row names).
        rubric_versions: rubric name -> the version it uses (``score``'s rubrics; bare names map here).
        signals: extra signal name -> its version (``qa_similarity``): a feature people reward that is no rubric,
            scored beside the rubrics and fitted under its own name (issue 56), never inside a rubric's.
        llm_layout: the G-Eval prompt layout.
        rescale: "declared" (fixed, the paper's reference code) or "fitted".
        split_fractions: train/dev/test shares of the question-level, stratified split that ``score`` and
            ``judge`` assign under the preset (``--split-fractions``, ``ScoringConfig.split_fractions``).
        fit_split / eval_split: where ``fit`` learns and where ``evaluate`` and ``analyze`` report.
        style: the model's style covariates (length, markdown differences).
        decorrelate: length decorrelation of the rubrics.
        C: the logistic regression's inverse regularisation.
        ties: "drop" (a binary model) or "three_way".
        judges: the pairwise judges (short names), in Table 4's order.
        judge_mode / n_votes / temperature / tie: how the judges run.
        sources: where each setting comes from (for docs/paper.md and the reports).
        minilm_encoder: how the MiniLM rubrics encode (``--minilm-encoder``, ``rubric.config.MINILM_ENCODERS``).
    """

    name: str
    title: str
    rubric_versions: Mapping[str, str]
    llm_layout: str
    rescale: str
    split_fractions: tuple[float, float, float]
    fit_split: str
    eval_split: str
    style: bool
    decorrelate: bool
    C: float
    ties: str
    judges: tuple[str, ...]
    judge_mode: str
    n_votes: int
    temperature: float
    tie: bool
    sources: Mapping[str, str] = field(default_factory=dict)
    signals: Mapping[str, str] = field(default_factory=dict)
    minilm_encoder: str = "fp32"

    @property
    def versions(self) -> Mapping[str, str]:
        """Every column the preset scores and its model uses: the rubrics' versions, then the signals'."""
        return MappingProxyType({**self.rubric_versions, **self.signals})

    def __post_init__(self) -> None:
        for name, version in self.rubric_versions.items():
            if RUBRICS.get(version).name != name:
                raise ConfigError(f"preset {self.name!r}: {version!r} is not a version of {name!r}")
        for name, version in self.signals.items():
            spec = RUBRICS.get(version)
            if spec.name != name or not spec.extra_signal:
                raise ConfigError(f"preset {self.name!r}: {version!r} is not a version of the extra signal {name!r}")
        if self.judge_mode not in ("logprob", "vote") or self.n_votes < 1:
            raise ConfigError(f"preset {self.name!r}: 'judge_mode' must be logprob or vote and 'n_votes' >= 1")
        if self.minilm_encoder not in MINILM_ENCODERS:
            raise ConfigError(f"preset {self.name!r}: 'minilm_encoder' must be one of {', '.join(MINILM_ENCODERS)}")
        if abs(sum(self.split_fractions) - 1.0) > 1e-9:
            raise ConfigError(f"preset {self.name!r}: 'split_fractions' must sum to 1, got {self.split_fractions}")


PAPER = Preset(
    name="paper",
    title="paper preset (LFQA-HP-1M configuration)",
    rubric_versions=_frozen({
        "specificity": "specificity.subjectiveqa.v1",
        "grammar": "grammar.languagetool.v1",
        "fluency": "fluency.geval.v1",
        "completeness": "completeness.geval.v1",
        "coherence": "coherence.geval.v1",
        "relevance": "relevance.geval.v1",
        "conciseness": "conciseness.lexical_density.v1",
        "use_of_examples": "use_of_examples.yesno.v2",
        "factuality": "factuality.veriscore.v2",
    }),
    llm_layout="paper",
    rescale="declared",
    split_fractions=(0.70, 0.15, 0.15),
    fit_split="train",
    eval_split="test",
    style=False,
    decorrelate=False,
    C=1.0,
    ties="drop",
    judges=("plain", "rubrics"),
    judge_mode="vote",
    n_votes=3,
    temperature=0.0,
    tie=False,
    sources=_frozen({
        "rubrics": "Table 2's nine rubrics; SubjECTive-QA SPECIFIC, LanguageTool, G-Eval (appendix A.6-A.9), the "
                   "reference code's use-of-examples prompt (yes when P(yes) > P(no)), VeriScore with "
                   "\"If C(r) = 0, return 0.0\"",
        "rescale": "min-max of each rubric's declared range to 1-5, as the reference code",
        "split": "70/15/15 by question, preserving sources, domains and annotator expertise (section 4's text; its "
                 "counts, 1,416 test instances in section 5.3 and Table 7, imply a larger test share: docs/paper.md)",
        "model": "binary logistic regression on rubric differences, no other features (section 4, Table 3)",
        "judges": "GPT-4o with the plain prompt and with the nine rubrics' definitions, GPT-4o (R) (Table 4); "
                  "the reference code parses 3 greedy generations and takes the majority",
    }),
)

CPU = Preset(
    name="cpu",
    title="cpu preset (CPU rubric profile)",
    # chosen by people (issue 56): each version by its agreement with people's ratings of its aspect (SummEval,
    # Topical-Chat: rubric/data/agreement.json) and the model by preference accuracy on TREC-DL-NF and WebGLM both ways,
    # validate a guard (docs/cpu-profile.md, "The preset chosen by people")
    rubric_versions=_frozen({
        "specificity": "specificity.concrete.v1",
        "grammar": "grammar.harper.v1",
        "fluency": "fluency.harper.v2",
        "completeness": "completeness.coverage.v7",
        "coherence": "coherence.minilm.v2",
        "relevance": "relevance.minilm.v7",
        "conciseness": "conciseness.lexical_density.v1",
        "use_of_examples": "use_of_examples.cues.v2",
        "factuality": "factuality.support.v3",
    }),
    # what the shared sets' people reward that is no rubric's reading, fitted under its own name, never inside a
    # rubric's: the whole answer's topical fit to its question (the held-out expert set: 0.695 -> 0.778 with
    # it), and what the answer says besides the question's words (the issue-44 relevance's reading)
    signals=_frozen({"qa_similarity": "qa_similarity.minilm.v1", "information": "information.minilm.v1"}),
    # Our defaults for everything but the rubrics: no LLM prompt is rendered (llm_layout is inert), the
    # model keeps its style covariates, so a rubric that is only length shows it style-controlled.
    llm_layout="paper",
    rescale="declared",
    split_fractions=(0.70, 0.15, 0.15),
    fit_split="train",
    eval_split="test",
    style=True,
    decorrelate=False,
    C=1.0,
    ties="drop",
    judges=(),  # a rubric profile: `judge` and `analyze` refuse it (workers/cli/presets.py)
    judge_mode="logprob",
    n_votes=1,
    temperature=0.0,
    tie=False,
    # int8 MiniLM on ONNX Runtime: within its measured bounds of fp32 and several times faster (docs/cpu-profile.md)
    minilm_encoder="int8",
    sources=_frozen({
        "rubrics": "the paper's nine rubric names, each with a version that runs on a CPU without an LLM: MiniLM "
                   "sentence embeddings (relevance, coherence, completeness, factuality), spaCy (specificity, "
                   "completeness's terms, conciseness), Harper (grammar, fluency), example cues "
                   "(rubric/cpu_profile/), each chosen by its agreement with people's ratings of its aspect "
                   "where shared data rates it; the answer's topical fit to its question and what it says besides the "
                   "question's words as signals of their own; what each carries is measured in docs/cpu-profile.md",
        "rescale": "min-max of each rubric's declared range to 1-5",
        "split": "70/15/15 by question (the score job's default)",
        "model": "logistic regression on rubric differences with the style covariates (length, markdown): "
                 "style-controlled figures beside every result",
    }),
)

#: Every preset by name.
PRESETS: Mapping[str, Preset] = MappingProxyType({PAPER.name: PAPER, CPU.name: CPU})


def get_preset(name: str) -> Preset:
    """The preset called ``name``.

    Raises:
        UnknownNameError: no such preset (lists those that exist).
    """
    try:
        return PRESETS[name]
    except KeyError:
        raise UnknownNameError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None


def preset_rubric_versions(preset: Preset, names: str | None) -> str:
    """``score --rubrics`` under a preset: the preset's versions of the rubrics asked for (all of them
    when ``names`` is None); a bare name takes the preset's version.

    Args:
        preset: the preset.
        names: comma-separated rubric names or versions, or None.

    Returns:
        The comma-separated versions.

    Raises:
        ConfigError: a name is not one of the preset's rubrics, or names another version than the preset's.
    """
    versions = preset.versions
    if names is None:
        return ",".join(versions.values())
    out = []
    by_version = {v: k for k, v in versions.items()}
    for n in (x.strip() for x in names.split(",") if x.strip()):
        if n in versions:
            out.append(versions[n])
        elif n in by_version:
            out.append(n)
        else:
            rubric = n.split(".")[0]
            want = versions.get(rubric)
            raise ConfigError(f"--preset {preset.name} " + (f"uses {want}, not {n}" if want else
                              f"has no rubric {n!r} (its rubrics: {', '.join(versions)})")
                              + f": drop --preset {preset.name} to use it")
    return ",".join(out)


def preset_judges(preset: Preset, names: str | None) -> str:
    """``judge --judges`` under a preset: the preset's judges, or the ones asked for when all are the preset's.

    Raises:
        ConfigError: a judge is not one of the preset's.
    """
    if names is None:
        return ",".join(preset.judges)
    asked = [n.strip() for n in names.split(",") if n.strip()]
    other = [n for n in asked if n not in preset.judges]
    if other:
        raise ConfigError(f"--preset {preset.name} runs the judges {', '.join(preset.judges)}, not {', '.join(other)}: "
                          f"drop --preset {preset.name} to run them")
    return ",".join(asked)


def preset_tag(preset_name: str | None) -> str:
    """What a row name carries when a preset made it: `` [paper preset]``, or nothing."""
    return f" [{preset_name} preset]" if preset_name else ""


def preset_title(title: str, preset_name: str | None) -> str:
    """A report title that names the configuration: ``title — paper preset (LFQA-HP-1M configuration)``."""
    return f"{title} — {get_preset(preset_name).title}" if preset_name else title


def model_preset(model) -> str | None:
    """The preset a fitted model was made with (recorded by ``fit --preset``), or None."""
    meta = model.metadata_ if isinstance(model.metadata_, dict) else {}
    value = meta.get(PRESET_META_KEY)
    return value if isinstance(value, str) and value in PRESETS else None


def _short(reason: str) -> str:
    """A fit's exclusion reason, cut to its head ("constant on the train split (every ...): ..." -> "constant
    on the train split")."""
    return str(reason).split(":")[0].split(" (")[0].strip() or "left out"


def model_preset_problems(preset: Preset, model) -> list[str]:
    """Why a model fitted under ``preset`` is not the preset's model (empty: it is).

    The preset's model has every one of the preset's rubrics, each at the preset's version, and nothing
    else: no other feature, style covariates only if the preset has them, length decorrelation only if
    the preset does. A rubric it lacks is named with why: the fit left it out (its recorded reason:
    constant, no values, mostly missing), ``fit --features`` did not ask for it, or the table had none.

    Args:
        preset: the preset.
        model: a fitted preference model (``features_``, ``provenance``, ``style_features_``,
            ``length_betas``, ``metadata_``).
    """
    meta = model.metadata_ if isinstance(model.metadata_, dict) else {}
    features = list(model.features_)
    provenance = model.provenance if isinstance(model.provenance, Mapping) else {}
    excluded = meta.get("excluded") if isinstance(meta.get("excluded"), Mapping) else {}
    given = meta.get("features_given")
    missing: dict[str, list[str]] = {}  # why -> rubrics
    other = []
    for rubric, version in preset.versions.items():
        if rubric in features:
            got = (provenance.get(rubric) or {}).get("rubric_version")
            if got != version:
                other.append(f"{rubric} is {got or 'of unrecorded version'}, not {version}")
            continue
        if rubric in excluded:
            why = f"left out by fit, {_short(excluded[rubric])}"
        elif isinstance(given, list) and rubric not in given:
            why = "not asked for by --features"
        else:
            why = "not in the scored table"
        missing.setdefault(why, []).append(rubric)
    problems = []
    if missing:
        n, k = len(preset.versions), sum(len(v) for v in missing.values())
        problems.append(f"{n - k} of {n} rubrics; " + "; ".join(f"{why}: {', '.join(r)}" for why, r in missing.items()))
    problems += other
    extra = [f for f in features if f not in preset.versions]
    if extra:
        problems.append("features not in the preset: " + ", ".join(extra))
    if tuple(model.style_features_) and not preset.style:
        problems.append("style covariates " + ", ".join(model.style_features_))
    if bool(model.length_betas) != preset.decorrelate:
        problems.append("length-decorrelated" if model.length_betas else "not length-decorrelated")
    return problems


def model_preset_tag(model) -> str:
    """What a fitted model's rows carry: `` [paper preset]`` when it is the preset's model; when it was fitted
    with the preset's settings but is not its model, which rubrics it lacks and why
    (:func:`model_preset_problems`); nothing without a preset."""
    name = model_preset(model)
    if name is None:
        return ""
    problems = model_preset_problems(get_preset(name), model)
    if not problems:
        return preset_tag(name)
    return f" [{name} preset settings, not its model: {'; '.join(problems)}]"



def table_problems(preset: Preset, provenance: Mapping[str, Mapping]) -> list[str]:
    """How a pairs table's rubrics differ from what the preset makes (empty: the preset made them).

    Args:
        preset: the preset.
        provenance: the table's ``{rubric: record}`` (:func:`rubric.tables.table_provenance`).
    """
    problems = []
    for rubric, rec in provenance.items():
        want = preset.versions.get(rubric)
        got = rec.get("rubric_version")
        if want is None:
            problems.append(f"{rubric} ({got}) is not one of the preset's rubrics")
            continue
        if got != want:
            problems.append(f"{rubric} is {got}, the preset's is {want}")
        kind = (rec.get("rescale") or {}).get("kind")
        if kind != preset.rescale:
            problems.append(f"{rubric} was rescaled {kind!r}, the preset rescales {preset.rescale!r}")
        if got == want and want in TEMPLATE_VERSIONS:
            expected = get_template(want, preset.llm_layout).template_hash
            if rec.get("template_hash") != expected:
                problems.append(f"{rubric}'s prompt is not the {preset.llm_layout!r} layout's (template "
                                f"{rec.get('template_hash')}, expected {expected})")
    return problems


def judge_settings_problems(preset: Preset, settings: Mapping, allowed: set[str]) -> list[str]:
    """How a judge run's settings (its manifest's ``settings``) differ from the preset's.

    Args:
        preset: the preset.
        settings: the judge run's settings.
        allowed: the judge versions the preset's judges resolve to (``rubric.judging.resolve_judges``;
            resolved by the caller, so this module stays below the judging room).
    """
    want = {"mode": preset.judge_mode, "n_votes": preset.n_votes, "temperature": preset.temperature,
            "tie": preset.tie}
    problems = [f"{k} is {settings.get(k)!r}, the preset's is {v!r}" for k, v in want.items() if settings.get(k) != v]
    other = sorted(set(settings.get("judges") or []) - allowed)
    if other:
        problems.append(f"judges {', '.join(other)} are not the preset's ({', '.join(sorted(allowed))})")
    return problems
