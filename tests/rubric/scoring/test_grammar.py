from types import SimpleNamespace

import pytest

from rubric.errors import ConfigError
from rubric.scoring.grammar import (
    HARPER_COUNTED_KINDS,
    HARPER_KIND_TO_LT_ISSUE_TYPE,
    LANGUAGETOOL_COUNTED_ISSUE_TYPES,
    count_harper_lints,
    count_languagetool_matches,
    grammar_score,
    languagetool_issue_type,
)


def words(n: int) -> str:
    return " ".join(["word"] * n)


@pytest.mark.parametrize("n_errors, text, want", [
    (0, "A short clean answer.", 5.0),
    (0, "", 5.0),                      # no words: treated as one word, no errors
    (1, "", 4.2),
    (1, words(10), 4.2),               # cap 5 up to 100 words: each error costs 0.8
    (2, words(100), 3.4),
    (4, words(50), 1.8),
    (5, words(10), 1.0),               # at the cap: the floor
    (7, words(10), 1.0),               # over the cap: still the floor, never below 1
    (1000, words(10), 1.0),
    (5, words(200), 3.0),              # 200 words: cap 10
    (10, words(200), 1.0),
    (20, words(200), 1.0),
    (3, words(150), 5.0 - 4.0 * 3 / 7.5),
    (1, words(1000), 5.0 - 4.0 / 50),  # long answers: the cap grows with length
    (0, "  spaced\n\tout  text ", 5.0),
])
def test_grammar_score_table(n_errors, text, want):
    assert grammar_score(n_errors, text) == pytest.approx(want)


def test_grammar_score_range_and_monotone():
    text = words(120)
    scores = [grammar_score(n, text) for n in range(20)]
    assert all(1.0 <= s <= 5.0 for s in scores)
    assert scores == sorted(scores, reverse=True)


def test_grammar_score_rejects_negative_count():
    with pytest.raises(ConfigError, match="'n_errors' must be >= 0, got -1"):
        grammar_score(-1, "text")


# --- LanguageTool matches ---------------------------------------------------------------------

def lt_dict(issue_type: str, category: str = "GRAMMAR") -> dict:
    """A match as the LanguageTool HTTP API returns it."""
    return {
        "message": "m", "shortMessage": "", "replacements": [{"value": "x"}], "offset": 0, "length": 1,
        "context": {"text": "x", "offset": 0, "length": 1}, "sentence": "x", "type": {"typeName": "Other"},
        "rule": {"id": "R", "description": "d", "issueType": issue_type, "category": {"id": category, "name": "c"}},
    }


def test_languagetool_counted_issue_types_snapshot():
    assert LANGUAGETOOL_COUNTED_ISSUE_TYPES == {"grammar"}


@pytest.mark.parametrize("issue_types, want", [
    ([], 0),
    (["grammar"], 1),
    (["misspelling", "typographical", "style", "whitespace", "duplication", "uncategorized"], 0),
    (["grammar", "misspelling", "grammar", "style"], 2),
    (["Grammar"], 0),  # LanguageTool's issue types are lower-case; nothing is case-folded
])
def test_count_languagetool_match_dicts(issue_types, want):
    assert count_languagetool_matches([lt_dict(t) for t in issue_types]) == want


def test_category_does_not_matter():
    # Only the issue type decides: a grammar-type rule filed under another category counts.
    assert count_languagetool_matches([lt_dict("grammar", "CONFUSED_WORDS"), lt_dict("misspelling", "GRAMMAR")]) == 1


def test_count_language_tool_python_match_objects():
    ltp = pytest.importorskip("language_tool_python")
    matches = [ltp.Match(lt_dict(t), "x") for t in ("grammar", "misspelling", "grammar")]
    assert [languagetool_issue_type(m) for m in matches] == ["grammar", "misspelling", "grammar"]
    assert count_languagetool_matches(matches) == 2


def test_count_old_style_match_objects():
    # language_tool_python < 3 named the field ruleIssueType (what the paper's code read).
    old = [SimpleNamespace(ruleIssueType="grammar"), SimpleNamespace(ruleIssueType="typographical")]
    assert count_languagetool_matches(old) == 1


def test_not_a_match_raises():
    with pytest.raises(TypeError, match="not a LanguageTool match"):
        count_languagetool_matches([SimpleNamespace(issue="grammar")])
    with pytest.raises(TypeError):
        count_languagetool_matches(["grammar"])


# --- Harper kinds -------------------------------------------------------------------------------

def test_harper_counted_kinds_snapshot():
    # Changing this changes every grammar.harper.v1 score: bump the rubric version if you do.
    assert HARPER_COUNTED_KINDS == {"Agreement", "Grammar", "Usage", "WordOrder"}


def test_harper_kind_table_maps_to_languagetool_issue_types():
    lt_types = {"grammar", "misspelling", "typographical", "whitespace", "duplication", "style",
                "locale-violation", "uncategorized"}
    assert set(HARPER_KIND_TO_LT_ISSUE_TYPE.values()) <= lt_types
    assert {"Spelling", "Typo", "Capitalization", "Formatting", "Style", "Readability", "Repetition"}.isdisjoint(
        HARPER_COUNTED_KINDS)


@pytest.mark.parametrize("kinds, want", [
    ([], 0),
    (["Agreement", "Grammar", "Usage", "WordOrder"], 4),
    (["Spelling", "Formatting", "Capitalization", "Readability", "Style", "Typo"], 0),
    (["Agreement", "Spelling", "Agreement"], 2),
    (["SomeFutureKind"], 0),
])
def test_count_harper_lints(kinds, want):
    assert count_harper_lints(kinds) == want
