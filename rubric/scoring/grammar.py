"""Grammar: an error count turned into a 1-5 score, and which checker findings count as errors.

Pure: no checker is imported here. ``models.rubric_backends.grammar`` runs Harper or LanguageTool and calls
these functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rubric.config import check_range

__all__ = [
    "grammar_score",
    "LANGUAGETOOL_COUNTED_ISSUE_TYPES",
    "languagetool_issue_type",
    "count_languagetool_matches",
    "HARPER_KIND_TO_LT_ISSUE_TYPE",
    "HARPER_COUNTED_KINDS",
    "count_harper_lints",
]


def grammar_score(n_errors: int, text: str) -> float:
    """The paper's grammar score: ``5 - 4 * min(cap, n) / cap``, clipped to [1, 5].

    ``cap = 5 * max(1, words / 100)`` with ``words = max(1, len(text.split()))``: up to 100
    words, 5 errors already give the floor of 1; longer answers get a proportionally larger
    allowance (10 errors for 200 words), so the score is an error *rate* with a floor.

    Args:
        n_errors: grammar errors found in ``text``.
        text: the answer (only its whitespace-split word count is used).

    Returns:
        A score in [1, 5]; 5 means no errors.

    Raises:
        ConfigError: ``n_errors`` is negative.
    """
    check_range("n_errors", n_errors, low=0)
    words = max(1, len(text.split()))
    cap = 5.0 * max(1.0, words / 100.0)
    score = 5.0 - 4.0 * min(cap, float(n_errors)) / cap
    # min(cap, n)/cap is already in [0, 1]; the clip is the reference's, kept as a guard.
    return min(5.0, max(1.0, score))


# --- LanguageTool ---------------------------------------------------------------------------

#: LanguageTool ``rule.issueType`` values that count as grammar errors. Spelling
#: ("misspelling"), "typographical", "style", "whitespace", "duplication", ... do not.
LANGUAGETOOL_COUNTED_ISSUE_TYPES: frozenset[str] = frozenset({"grammar"})


def languagetool_issue_type(match: Mapping[str, Any] | object) -> str:
    """The issue type of one LanguageTool match, from either shape it comes in.

    Args:
        match: a match dict as the HTTP API returns it (``match["rule"]["issueType"]``), or a
            ``language_tool_python.Match`` (``rule_issue_type`` since 3.0, ``ruleIssueType``
            before; the paper's reference code used the old name).

    Returns:
        The issue type string, e.g. ``"grammar"`` or ``"misspelling"``.

    Raises:
        TypeError: ``match`` is neither shape.
    """
    if isinstance(match, Mapping):
        return str(match["rule"]["issueType"])
    attrs = getattr(match, "__dict__", {})
    # language_tool_python stores match fields as plain instance attributes; these are its two
    # spellings across major versions, nothing else is guessed.
    for name in ("rule_issue_type", "ruleIssueType"):
        if name in attrs:
            return str(attrs[name])
    raise TypeError(f"not a LanguageTool match (dict with rule.issueType or language_tool_python.Match): "
                    f"{type(match).__name__}")


def count_languagetool_matches(matches: Iterable[Mapping[str, Any] | object]) -> int:
    """Number of matches whose issue type is ``"grammar"``.

    The count is by issue type only. The paper's reference code also tested each match's
    category, but that test never fired (it never changed which matches were counted), so
    filtering on the issue type alone reproduces what the reference actually computed, and
    says so explicitly instead of through a dead branch.

    Args:
        matches: LanguageTool matches, as dicts or ``language_tool_python.Match`` objects.

    Returns:
        The number of grammar-type matches.
    """
    return sum(1 for m in matches if languagetool_issue_type(m) in LANGUAGETOOL_COUNTED_ISSUE_TYPES)


# --- Harper ---------------------------------------------------------------------------------

#: Every ``Lint.lint_kind`` Harper 2.13 (harper-py 0.2.0) can emit, mapped to the LanguageTool
#: issue type that the same finding would carry. Harper is our offline stand-in for the
#: paper's LanguageTool, whose count is limited to issue type "grammar"; this table is how we
#: choose the Harper kinds that mimic that filter. Observed on 600 TREC-DL passages plus
#: hand-made error sentences:
#:   Agreement    "They was", "She don't", "A ruling" (mass noun), its/it's    -> grammar
#:   Grammar      "has went", "their" for "they're", "countrys"              -> grammar
#:   Usage        "one of the ... + singular", "discuss about"               -> grammar
#:   WordOrder    misordered words                                           -> grammar
#:   Spelling, Typo, BoundaryError ("alot"), Eggcorn, Malapropism             -> misspelling
#:   Capitalization, Punctuation ("However" + missing comma)                  -> typographical
#:   Formatting (double spaces, dashes)                                       -> whitespace
#:   Repetition ("the the")                                                   -> duplication
#:   Style (Oxford comma), Readability (long sentences), Redundancy ("and also"),
#:   Enhancement, WordChoice (mostly closed compounds: "cell phone"), Nonstandard -> style
#:   Regionalism ("mobile phone" in en-US)                                    -> locale-violation
#:   Miscellaneous (a catch-all: articles, month capitals, compounds)         -> uncategorized
#: Borderline calls, knowingly made: WordChoice occasionally holds a grammar slip ("could of")
#: and Punctuation an its/it's confusion, but most of their findings are style or
#: typography, and counting them would swamp the score on clean web text (Formatting,
#: Capitalization and Spelling together are over 80% of Harper's findings on TREC passages).
HARPER_KIND_TO_LT_ISSUE_TYPE: Mapping[str, str] = {
    "Agreement": "grammar",
    "Grammar": "grammar",
    "Usage": "grammar",
    "WordOrder": "grammar",
    "Spelling": "misspelling",
    "Typo": "misspelling",
    "BoundaryError": "misspelling",
    "Eggcorn": "misspelling",
    "Malapropism": "misspelling",
    "Capitalization": "typographical",
    "Punctuation": "typographical",
    "Formatting": "whitespace",
    "Repetition": "duplication",
    "Style": "style",
    "Readability": "style",
    "Redundancy": "style",
    "Enhancement": "style",
    "WordChoice": "style",
    "Nonstandard": "style",
    "Regionalism": "locale-violation",
    "Miscellaneous": "uncategorized",
}

#: Harper lint kinds counted as grammar errors: those whose LanguageTool equivalent is
#: ``"grammar"``. A kind missing from the table above (a newer Harper) is not counted.
HARPER_COUNTED_KINDS: frozenset[str] = frozenset(
    k for k, t in HARPER_KIND_TO_LT_ISSUE_TYPE.items() if t in LANGUAGETOOL_COUNTED_ISSUE_TYPES)


def count_harper_lints(kinds: Iterable[str]) -> int:
    """Number of Harper lints whose ``lint_kind`` is in ``HARPER_COUNTED_KINDS``.

    Args:
        kinds: the ``lint_kind`` of each lint of one text.

    Returns:
        The grammar error count.
    """
    return sum(1 for k in kinds if k in HARPER_COUNTED_KINDS)
