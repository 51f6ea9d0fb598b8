"""One self-contained HTML page for every output: score, fit/evaluate, judge, analyze, and each protocol's.

The page is another view of the result objects the Markdown reports render (``evaluate``'s
:class:`~rubric.preference.evaluate.Evaluation`, ``analyze``'s :class:`~rubric.analysis.Analysis`, the protocol
reports' correlations and ratings), computed by the same functions with the same defaults, rendered
through a jinja2 template (``templates/report.html.j2``) with its CSS and script inline. A protocol's
part is its :class:`HtmlSection`, which the protocol declares (``workers.protocols``). Charts are
the reports' matplotlib plots as inline SVG; long tables (answers, pairs, rejects) travel as JSON and
are paged in the browser, so the file opens offline, with no server and no request.
"""

from rubric.html_report._build import Report, build_report, folder_kinds, render_html, report_html
from rubric.html_report._score import ScoreSummary, score_summary, spearman_matrix
from rubric.html_report._sections import HtmlSection
from rubric.html_report._charts import plot_linkage, plot_win_rates

from rubric.html_report._score import (
    read_jsonl, read_rejects,
)

__all__ = ["HtmlSection", "plot_linkage", "plot_win_rates", "Report", "build_report", "folder_kinds", "render_html",
           "report_html", "ScoreSummary", "score_summary", "spearman_matrix", "read_jsonl", "read_rejects"]
