import pytest

from rubric.scoring.conciseness import CONTENT_POS, WORD_LIKE_POS, density_from_counts, lexical_density, lexical_density_counts

N, V, DET, P = ("NOUN", True), ("VERB", True), ("DET", True), ("PUNCT", False)


def test_tag_sets_snapshot():
    assert CONTENT_POS == {"NOUN", "VERB", "ADJ", "ADV", "PROPN", "NUM", "X"}
    assert WORD_LIKE_POS == {"X", "SYM", "NUM"}


@pytest.mark.parametrize("tokens, counts, density", [
    ([], (0, 0), 0.0),                                   # empty text: empty denominator -> 0.0
    ([P, P, ("SPACE", False)], (0, 0), 0.0),             # punctuation / whitespace only
    ([DET, N, V, ("ADP", True), DET, N, P], (3, 6), 0.5),  # "The cat sat on the mat."
    ([("NUM", False)], (1, 1), 1.0),                     # "42": NUM counts as a word though not alpha
    ([("SYM", False), N], (1, 2), 0.5),                  # "$" is a word but not content
    ([("X", False), DET], (1, 2), 0.5),                  # X is both content and word-like
    ([("PRON", True), ("AUX", True), ("PART", True)], (0, 3), 0.0),
    # "U.S. U.K. EU-27 go": non-alpha PROPNs count as content but not as words -> 4/2, clipped
    ([("PROPN", False), ("PROPN", False), ("NUM", False), ("NOUN", True)], (4, 2), 1.0),
    ([("PROPN", False)], (1, 0), 0.0),                   # content but no words: denominator rules
    ([("ADJ", True), ("ADV", True), ("PROPN", True), ("CCONJ", True)], (3, 4), 0.75),
])
def test_lexical_density_table(tokens, counts, density):
    assert lexical_density_counts(tokens) == counts
    assert lexical_density(tokens) == pytest.approx(density)


def test_accepts_a_generator():
    assert lexical_density(t for t in [N, DET]) == 0.5


@pytest.mark.parametrize("n_content, n_words, want", [(0, 0, 0.0), (5, 0, 0.0), (1, 3, 1 / 3), (3, 2, 1.0)])
def test_density_from_counts(n_content, n_words, want):
    assert density_from_counts(n_content, n_words) == pytest.approx(want)


def test_rubric_package_imports_without_spacy():
    import subprocess
    import sys

    code = "import sys, rubric.scoring.conciseness, rubric.scoring.grammar; assert 'spacy' not in sys.modules; " \
           "assert 'harper' not in sys.modules; assert 'language_tool_python' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)
