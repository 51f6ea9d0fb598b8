"""Read output folders into one report object, and render it through the package's jinja2 template."""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rubric.errors import ConfigError, InputError, ProvenanceError
from rubric.html_report._cost import CostSection, cost_section
from rubric.html_report._model import ModelSection, model_section, pair_browser_data
from rubric.html_report._sections import CHECKS, HtmlSection
from rubric.html_report._score import ScoreSummary, score_summary
from rubric.io import folder_state, read_manifest

__all__ = ["Report", "folder_kinds", "build_report", "render_html", "report_html", "SNAPSHOT_TRIES"]

log = logging.getLogger(__name__)

#: Rows a paged table shows at once.
PAGE_SIZE = 15


@dataclass
class Report:
    """Every section of the HTML report; a section whose input is absent stays empty and is left out."""

    inputs: list[tuple[str, list[str]]]
    split: str
    n_boot: int
    seed: int
    scores: list[ScoreSummary] = field(default_factory=list)
    models: list[ModelSection] = field(default_factory=list)
    browsers: list[dict] = field(default_factory=list)
    analysis: object | None = None
    analysis_charts: dict[str, str] = field(default_factory=dict)
    protocols: list[tuple[HtmlSection, object]] = field(default_factory=list)
    checks: list[tuple[HtmlSection, object]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    costs: list[CostSection] = field(default_factory=list)

    def over_budget(self, folder: str) -> list[str]:
        """The rubrics or judges of ``folder`` over its run's failure budget (marked where they appear)."""
        return [n for c in self.costs if c.folder == str(folder) for n in c.over_budget]


def folder_kinds(folder: str | Path) -> list[str]:
    """What an output folder holds: "score", "judge", a protocol's name (its manifest's ``protocol``) or a
    check's (its manifest's ``kind``: "validate"), possibly several.

    Raises:
        InputError: it is not a folder, or holds none of the known outputs.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"{folder} is not an output folder (score, fit, judge or protocol output)")
    kinds = []
    if (folder / "pairs.parquet").is_file():
        kinds.append("score")
    manifest = read_manifest(folder) if (folder / "manifest.json").is_file() else {}
    protocol = manifest.get("protocol")
    if protocol:
        kinds.append(str(protocol))
    elif manifest.get("kind") in CHECKS:
        kinds.append(str(manifest["kind"]))
    elif (folder / "judgments.parquet").is_file():
        kinds.append("judge")
    if not kinds:
        raise InputError(f"{folder} holds no pairs.parquet, judgments.parquet or protocol output, nor a validate "
                         "run's: give the folder a score, judge, protocol or validate command wrote")
    return kinds


def build_report(folders: Sequence[str | Path], *, model: str | Path | None = None, split: str = "test",
                 n_boot: int = 1000, seed: int = 0, perturbed: Mapping[str, Sequence[str | Path]] | None = None,
                 allow_provenance_mismatch: bool = False, sections: Mapping[str, HtmlSection] | None = None) -> Report:
    """Read every folder and compute each section with the function its Markdown report uses.

    Args:
        folders: output folders (score, with or without model.json; judge; a protocol's).
        model: a model JSON for the first score output (default: each score output's own model.json).
        split: the split the model and the analysis are evaluated on (``evaluate``'s and ``analyze``'s
            ``--split``).
        n_boot: bootstrap replicates (their ``--n-boot``).
        seed: bootstrap seed (their ``--seed``).
        perturbed: perturbed sets for the analysis (``analyze --perturbed``).
        allow_provenance_mismatch: as ``evaluate --allow-provenance-mismatch``.
        sections: protocol name -> its section (``workers.protocols.html_sections()``); a protocol's
            folder without one is left out with a note.
    """
    from rubric.judging import read_judgments

    if not folders:
        raise ConfigError("give at least one output folder")
    kinds = [(str(f), folder_kinds(f)) for f in folders]
    rep = Report(inputs=kinds, split=split, n_boot=n_boot, seed=seed)
    score_dirs = [Path(f) for f, k in kinds if "score" in k]
    judge_dirs = [Path(f) for f, k in kinds if "judge" in k]
    judgments = [read_judgments(d) for d in judge_dirs]
    model_for: dict[Path, Path] = {}
    for i, d in enumerate(score_dirs):
        m = Path(model) if (model is not None and i == 0) else d / "model.json"
        if m.is_file():
            model_for[d] = m
        elif model is not None and i == 0:
            raise InputError(f"{m} not found")
    for d in score_dirs:
        summary = score_summary(d)
        rep.scores.append(summary)
        predictions = None
        if d in model_for:
            from rubric.preference import predict_pairs
            from rubric.preference import PreferenceModel

            try:
                rep.models.append(model_section(model_for[d], d, split=split, n_boot=n_boot, seed=seed,
                                                allow_provenance_mismatch=allow_provenance_mismatch))
                predictions = predict_pairs(PreferenceModel.from_json(model_for[d]), _pairs(d), split="all",
                                            allow_provenance_mismatch=allow_provenance_mismatch)
            except (ConfigError, ProvenanceError) as e:
                rep.notes.append(f"model {model_for[d]} on {d}: not evaluated ({e})")
        rep.browsers.append({"folder": str(d), **pair_browser_data(_pairs(d), summary.answers,
                                                                  predictions=predictions, judgments=judgments)})
    if judge_dirs or model_for:
        _add_analysis(rep, [*score_dirs, *judge_dirs], model=model, perturbed=perturbed,
                      allow_provenance_mismatch=allow_provenance_mismatch, several_models=len(model_for) > 1)
    for f, k in kinds:
        if "score" in k or "judge" in k:
            c = cost_section(f, "rubric" if "score" in k else "judge")
            if c is not None:
                rep.costs.append(c)
    sections = dict(sections or {})
    for f, k in kinds:
        for check in (x for x in k if x in CHECKS):
            # a check's table that cannot be read (damaged, a publish going on) stops the page in one line, as a
            # score output's does: a page without the section the user asked for would read as if all were well
            rep.checks.append((CHECKS[check], CHECKS[check].read(f, n_boot=n_boot, seed=seed)))
        for protocol in (x for x in k if x not in ("score", "judge") and x not in CHECKS):
            section = sections.get(protocol)
            if section is None:
                rep.notes.append(f"{f}: a {protocol} output, whose protocol has no section here; its tables are in "
                                 f"{Path(f) / 'report.md'}")
                continue
            try:
                rep.protocols.append((section, section.read(f, n_boot=n_boot, seed=seed)))
            except InputError as e:
                rep.notes.append(f"{f}: {protocol} output not shown ({e}); its tables are in {Path(f) / 'report.md'}")
    return rep


def _pairs(folder: Path):
    from rubric.preference import read_pairs

    return read_pairs(folder)


def _add_analysis(rep: Report, inputs: list[Path], *, model, perturbed, allow_provenance_mismatch: bool,
                  several_models: bool) -> None:
    from rubric.analysis import analyze, plot_perturbations, plot_position, plot_verbosity
    from rubric.html_report._charts import svg_of

    if several_models:
        rep.notes.append("judges and §5 analyses: left out, several score outputs bring a model (analyze takes one)")
        return
    try:
        a = analyze(inputs, model=model, perturbed=dict(perturbed or {}), split=rep.split, n_boot=rep.n_boot,
                    seed=rep.seed, allow_provenance_mismatch=allow_provenance_mismatch)
    except (ConfigError, ProvenanceError) as e:
        rep.notes.append(f"judges and §5 analyses: not computed ({e})")
        return
    rep.analysis = a
    from rubric.html_report._charts import plot_accuracy

    rep.analysis_charts["agreement"] = plot_accuracy(a.comparison.rows, title="agreement with people, same pairs")
    if a.position.rows:
        rep.analysis_charts["position"] = svg_of(plot_position, a.position)
    if a.verbosity.rows:
        rep.analysis_charts["verbosity"] = svg_of(plot_verbosity, a.verbosity)
    if any(p.rows for p in a.perturbations):
        rep.analysis_charts["perturbation"] = svg_of(plot_perturbations, a.perturbations)


def _nan(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x, fmt: str = ".4f") -> str:
    """A number as the Markdown reports write it ("n/a" when undefined)."""
    return "n/a" if _nan(x) else format(x, fmt)


def ci(pair, fmt: str = ".3f") -> str:
    """A CI as the Markdown reports write it: "lo, hi", or "n/a"."""
    lo, hi = pair
    return "n/a" if _nan(lo) or _nan(hi) else f"{lo:{fmt}}, {hi:{fmt}}"


def _json(obj) -> str:
    # inside <script type="application/json">: no "</script>" or "<!--" can end it early
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(rep: Report) -> str:
    """The report as one self-contained HTML page (inline CSS, JS and SVG; no external request)."""
    import jinja2
    from markupsafe import Markup

    from rubric.preference import METRICS
    from rubric.protocols import fmt_mean
    from rubric.preference import IN_SAMPLE_MARK, MIN_QUESTIONS_FOR_CI

    sources = {s.template: s.source for s, _ in rep.protocols if s.source is not None}
    loader = jinja2.ChoiceLoader([jinja2.DictLoader(sources), jinja2.PackageLoader("rubric.html_report", "templates")])
    env = jinja2.Environment(loader=loader, autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(num=num, ci=ci, isnan=_nan, mean=fmt_mean, data=lambda o: Markup(_json(o)))
    env.globals.update(zip=zip, METRICS=METRICS, MIN_Q=MIN_QUESTIONS_FOR_CI)
    protocols = [Markup(env.get_template(s.template).render(x=data)) for s, data in rep.protocols]
    checks = [Markup(env.get_template(s.template).render(x=data)) for s, data in rep.checks]
    tpl = env.get_template("report.html.j2")
    return tpl.render(rep=rep, protocols=protocols, checks=checks, IN_SAMPLE_MARK=IN_SAMPLE_MARK, PAGE_SIZE=PAGE_SIZE,
                      css=_static("report.css"), js=_static("report.js"))


def _static(name: str) -> str:
    from importlib import resources

    return (resources.files("rubric.html_report") / "templates" / name).read_text(encoding="utf-8")


#: Builds tried before giving up when an output folder keeps changing while the page is read.
SNAPSHOT_TRIES = 3


def report_html(folders: Sequence[str | Path], **kwargs) -> str:
    """The page of the folders, every one read as one published snapshot (the caller writes it).

    The build reads a folder's tables several times (the score summary, the model section, the pair
    browser, the analysis). Each folder is checked (``rubric.io.check_published``) and its files'
    identities taken before and after the build (``rubric.io.folder_state``); when a job published
    into a folder in between, the build is done again, so the page never mixes two runs.

    Raises:
        InputError: a folder changed during each of :data:`SNAPSHOT_TRIES` builds, or is not one
            run's complete set.
    """
    given = [*folders, *[p for ps in (kwargs.get("perturbed") or {}).values() for p in ps]]
    if kwargs.get("model") is not None:
        given.append(Path(kwargs["model"]).parent)
    for _ in range(SNAPSHOT_TRIES):
        before = [folder_state(f) for f in given]
        html = render_html(build_report(folders, **kwargs))
        changed = [str(f) for f, s in zip(given, before) if folder_state(f) != s]
        if not changed:
            return html
        log.warning("%s changed while the report was read (a job published into it); reading it again",
                    ", ".join(changed))
    raise InputError(f"{', '.join(changed)} changed during each of {SNAPSHOT_TRIES} attempts to read it: run report "
                     "when the job writing into it has finished")
