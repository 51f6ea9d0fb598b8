"""Does a rubric measure what it is named for? A behavioural check after CheckList (Ribeiro et al. 2020) and
Sai et al. (2021)'s perturbation checklists for NLG metrics.

From the distinct answers of any input, each :data:`FAMILIES` member builds a minimal pair (an answer and a
copy that changes one quality: sentences shuffled, the question echoed, the example dropped, a supported
fact changed, ...) whose expected direction on named rubrics is known (``lower``, ``not_higher``, ``same``).
Both sides are scored with any rubric version (the job is ``workers.jobs.validate``, through the normal
runner and store), and :func:`summarise` counts per rubric version and family how often the copy moved the
expected way, with a CI from a bootstrap over questions. Perturbations are seeded and recorded; nothing is
fitted.

Beside the minimal pairs, people are the judge: ``_agreement`` measures each rubric version's agreement with
people's ratings of each aspect (Spearman and Kendall within sources, pooled, per system; pairwise aspect
judgements), beside length and the other rubrics (``validate --human``, ``workers.jobs.agreement``), and
``_agreement_report`` writes its tables and page.

``_text`` (sentences as slots, a question's main noun phrase, numbers and names; no parser),
``_families`` (the families), ``_paraphrase`` (the families that say it in other words, and the answer to another
question on the same topic), ``_pairs`` (minimal pairs), ``_stats`` (outcomes, the table) and
``_report`` (Markdown, Parquet, the HTML section's data).

This is the package's public face: other packages import from here, not from its modules.
"""

from rubric.validity._families import EXAMPLE_CUE, EXPECTATIONS, FAMILIES, TOOLS, Family, Row, family_names
from rubric.validity._paraphrase import paraphrase, topic_words
from rubric.validity._pairs import MinimalPair, minimal_pairs, pair_items, resolve_families, rows_of
from rubric.validity._report import (EXPECT_WORDS, OUTCOMES_FILE, REPORT_FILE, SUMMARY_FILE, UNINFORMATIVE,
                                     VALIDATE_KIND, outcomes_table, read_validity, summary_table, table_markdown,
                                     validity_page)
from rubric.validity._stats import (BASELINES, DEFAULT_TOLERANCE, N_EXAMPLES, Outcome, ValidityRow, ValidityTable,
                                    outcomes, summarise, summary_of)
from rubric.validity._text import Split, join, main_noun_phrase, split_sentences
from rubric.validity._agreement import (LENGTH_SCORER, LEVELS, STATISTICS, AgreementRow, AgreementTable, Rated,
                                        agreement_table)
from rubric.validity._agreement_report import (AGREEMENT_ANSWERS_FILE, AGREEMENT_FILE, HUMAN_KIND, OwnAspect,
                                               agreement_markdown, agreement_page, agreement_rows_table,
                                               own_aspect_rows, read_agreement, registry_rows)

__all__ = [
    "FAMILIES", "Family", "Row", "EXPECTATIONS", "TOOLS", "EXAMPLE_CUE", "family_names", "paraphrase", "topic_words",
    "MinimalPair", "minimal_pairs", "pair_items", "resolve_families", "rows_of",
    "BASELINES", "UNINFORMATIVE", "DEFAULT_TOLERANCE", "N_EXAMPLES", "Outcome", "ValidityRow", "ValidityTable",
    "outcomes", "summarise",
    "summary_of",
    "OUTCOMES_FILE", "SUMMARY_FILE", "REPORT_FILE", "VALIDATE_KIND", "EXPECT_WORDS", "table_markdown",
    "validity_page", "outcomes_table", "summary_table", "read_validity",
    "Split", "split_sentences", "join", "main_noun_phrase",
    "LENGTH_SCORER", "LEVELS", "STATISTICS", "AgreementRow", "AgreementTable", "Rated", "agreement_table",
    "AGREEMENT_ANSWERS_FILE", "AGREEMENT_FILE", "HUMAN_KIND", "OwnAspect", "agreement_markdown", "agreement_page",
    "agreement_rows_table", "own_aspect_rows", "read_agreement", "registry_rows",
]
