import pytest

from rubric.errors import ConfigError
from rubric.scoring.rescale import minmax_1_5
from rubric.scoring.specificity import (combine_windows, format_input, label_order, latent_score, ordinal_score_1_5,
                                window_spans)


@pytest.mark.parametrize("p,want", [
    ((1.0, 0.0, 0.0), 1.0),     # all LOW
    ((0.0, 1.0, 0.0), 3.0),     # all NEUTRAL
    ((0.0, 0.0, 1.0), 5.0),     # all HIGH
    ((0.5, 0.0, 0.5), 3.0),     # split extremes read as the middle
    ((0.2, 0.3, 0.5), 1 + 4 * (0.15 + 0.5)),
    ((1 / 3, 1 / 3, 1 / 3), 3.0),
])
def test_ordinal_score(p, want):
    assert ordinal_score_1_5(*p) == pytest.approx(want)
    # the raw value on a 0-1 declared range rescales to exactly the same number
    assert minmax_1_5(latent_score(*p), 0.0, 1.0) == pytest.approx(want)


@pytest.mark.parametrize("p", [(0.5, 0.5, 0.5), (1.2, -0.2, 0.0), (float("nan"), 0.5, 0.5)])
def test_ordinal_score_rejects_non_distributions(p):
    with pytest.raises(ConfigError):
        ordinal_score_1_5(*p)


def test_combine_windows_weights_by_token_count():
    p = combine_windows([(1.0, 0.0, 0.0), (0.0, 0.0, 1.0)], [300, 100])
    assert p == pytest.approx((0.75, 0.0, 0.25))
    assert combine_windows([(0.2, 0.3, 0.5)], [7]) == pytest.approx((0.2, 0.3, 0.5))


@pytest.mark.parametrize("probs,counts,msg", [
    ([], [], "at least one window"),
    ([(1.0, 0.0, 0.0)], [1, 2], "1 windows but 2"),
    ([(1.0, 0.0, 0.0)], [0], "positive integers"),
    ([(1.0, 0.0)], [3], "3 probabilities"),
])
def test_combine_windows_errors(probs, counts, msg):
    with pytest.raises(ConfigError, match=msg):
        combine_windows(probs, counts)


@pytest.mark.parametrize("id2label,want", [
    ({0: "LOW", 1: "NEUTRAL", 2: "HIGH"}, (0, 1, 2)),
    ({0: "high", 1: "Low", 2: " neutral "}, (1, 2, 0)),
    ({"0": "NEUTRAL", "1": "HIGH", "2": "LOW"}, (2, 0, 1)),       # config.json keys are strings
    ({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, (0, 1, 2)),       # generic names: 0=LOW, 1=NEUTRAL, 2=HIGH
    ({"2": "label_2", "0": "label_0", "1": "label_1"}, (0, 1, 2)),
])
def test_label_order(id2label, want):
    assert label_order(id2label) == want


@pytest.mark.parametrize("id2label,msg", [
    ({0: "LOW", 1: "HIGH"}, "3 labels"),
    ({0: "LOW", 1: "MEDIUM", 2: "HIGH"}, "cannot read"),
    ({0: "LABEL_1", 1: "LABEL_0", 2: "LABEL_2"}, "cannot read"),   # generic names out of place: refuse to guess
    ({"a": "LOW", "b": "NEUTRAL", "c": "HIGH"}, "integers"),
])
def test_label_order_errors(id2label, msg):
    with pytest.raises(ConfigError, match=msg):
        label_order(id2label)


def test_format_input():
    assert format_input("Why?", "Because.") == "Question: Why? Answer: Because."


@pytest.mark.parametrize("layout", ["paper", "answer_first"])
def test_geval_template_renders(layout):
    from pathlib import Path

    from rubric.scoring import TEMPLATE_VERSIONS, PromptTemplate, get_template, parse_score

    if "specificity.geval.v1" in TEMPLATE_VERSIONS:  # once registered in rubric.scoring.geval
        tmpl = get_template("specificity.geval.v1", layout)
    else:
        text = (Path(__file__).resolve().parents[3] / "rubric" / "prompts" / f"specificity.geval.v1.{layout}.j2").read_text()
        tmpl = PromptTemplate(name="specificity", version="specificity.geval.v1", layout=layout, text=text,
                              prefill="- Specificity: ", score_tokens=("1", "2", "3", "4", "5"),
                              score_values=(1.0, 2.0, 3.0, 4.0, 5.0))
    p = tmpl.render(question="Why is the sky blue?", answer="Rayleigh scattering.")
    assert "Specificity (1-5)" in p.user and "Rayleigh scattering." in p.user
    assert p.user.rstrip().endswith("- Specificity:")
    assert p.prefill == "- Specificity: "
    assert parse_score({"4": 0.5, "5": 0.5}, tmpl).value == pytest.approx(4.5)
    with pytest.raises(ConfigError):
        tmpl.render(question="q")


@pytest.mark.parametrize("n,size,stride,want", [
    (0, 510, 128, [(0, 0)]),                       # an empty text is still one window
    (5, 510, 128, [(0, 5)]),
    (510, 510, 128, [(0, 510)]),
    (511, 510, 128, [(0, 510), (382, 511)]),
    (910, 510, 128, [(0, 510), (382, 892), (764, 910)]),
    (10, 4, 0, [(0, 4), (4, 8), (8, 10)]),
    (10, 4, 3, [(0, 4), (1, 5), (2, 6), (3, 7), (4, 8), (5, 9), (6, 10)]),
])
def test_window_spans(n, size, stride, want):
    assert window_spans(n, size, stride) == want


@pytest.mark.parametrize("n", range(0, 60))
def test_window_spans_cover_every_token(n):
    spans = window_spans(n, 7, 2)
    covered = {i for a, b in spans for i in range(a, b)}
    assert covered == set(range(n))
    assert spans[-1][1] == n and all(b - a == 7 for a, b in spans[:-1])
    assert all(b2 - a2 >= 0 and a2 - a1 == 5 for (a1, _), (a2, b2) in zip(spans, spans[1:]))


@pytest.mark.parametrize("size,stride", [(0, 0), (4, 4), (4, 5), (4, -1)])
def test_window_spans_errors(size, stride):
    with pytest.raises(ConfigError, match="stride"):
        window_spans(10, size, stride)
