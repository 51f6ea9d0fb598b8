"""The SubjECTive-QA scorer on a tiny BERT classifier built here (the real weights are Hub-only)."""

import math
import random

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from models.rubric_backends.specificity import SubjectiveQAScorer  # noqa: E402
from rubric.errors import BackendUnavailableError, ConfigError  # noqa: E402
from rubric.io.records import AnswerItem  # noqa: E402
from rubric.scoring.scorer import check_batch  # noqa: E402
from rubric.scoring.specs import RubricSpec  # noqa: E402

SPEC = RubricSpec("specificity", "specificity.subjectiveqa.v1", "subjectiveqa", 0.0, 1.0, kind="ordinal")
WORDS = ["question", "answer", ":", "?", ".", "the", "sky", "is", "blue", "red", "because", "light", "scatters",
         "at", "sunset", "wavelength", "450", "nm", "short", "air", "molecules", "why", "it", "a", "thing"]
# Labels deliberately out of the canonical order, in mixed case: the scorer must read id2label.
ID2LABEL = {0: "high", 1: "LOW", 2: "Neutral"}


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder = tmp_path_factory.mktemp("tiny-subjectiveqa")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    tok = BertTokenizer(vocab={w: i for i, w in enumerate(vocab)})
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=37, max_position_embeddings=512, num_labels=3,
                     id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()})
    model = BertForSequenceClassification(cfg)
    # A random classifier head is near-uniform; scale it so the windows disagree visibly.
    with torch.no_grad():
        model.classifier.weight.mul_(20.0)
    tok.save_pretrained(folder)
    model.save_pretrained(folder)
    return folder


def _text(n_words: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(WORDS[5:]) for _ in range(n_words))


def _manual(folder, question: str, answer: str, max_length=512, stride=128):
    """Window by window, unpadded, straight from the logits."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSequenceClassification.from_pretrained(folder).eval()
    # Windows written out here, not read from transformers' overflow (5.17 drops the tail there):
    # content windows of max_length - 2 ([CLS], [SEP]) starting every (max_length - 2 - stride) tokens.
    content = tok(f"Question: {question} Answer: {answer}", add_special_tokens=False)["input_ids"]
    size = max_length - 2
    starts = range(0, max(len(content) - stride, 1), size - stride)
    windows = [[tok.cls_token_id, *content[a:a + size], tok.sep_token_id] for a in starts]
    assert sum(len(w) - 2 for w in windows) - stride * (len(windows) - 1) == len(content)  # each token once
    num = [0.0, 0.0, 0.0]
    total = 0
    for ids in windows:
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0]
        p = torch.softmax(logits, -1).tolist()
        low, neu, high = p[1], p[2], p[0]  # ID2LABEL: 0=high, 1=LOW, 2=Neutral
        for j, v in enumerate((low, neu, high)):
            num[j] += v * len(ids)
        total += len(ids)
    low, neu, high = (x / total for x in num)
    return len(windows), 1 + 4 * (0.5 * neu + high)


def test_windows_and_scores_match_manual(tiny_model):
    scorer = SubjectiveQAScorer((SPEC,), model=str(tiny_model), device="cpu", batch_size=2)
    items = [
        AnswerItem("long", "why is the sky blue ?", _text(900, 1)),    # > 512 tokens: several windows
        AnswerItem("short", "why is the sky red ?", "because light scatters ."),
        AnswerItem("mid", "why ?", _text(700, 2)),
    ]
    results = scorer.score_batch(items)
    check_batch(scorer, items, results)
    for it, res in zip(items, results):
        s = res["specificity"]
        assert s.error is None
        n_windows, want = _manual(tiny_model, it.question, it.answer)
        assert s.extras["n_windows"] == n_windows
        got = SPEC.rescale(s.raw)
        assert 1.0 <= got <= 5.0
        assert got == pytest.approx(want, abs=1e-5)
        assert s.extras["p_low"] + s.extras["p_neutral"] + s.extras["p_high"] == pytest.approx(1.0, abs=1e-5)
    # 900 answer words + 6 question tokens + "Question :" "Answer :" = 910 content tokens; 510 per window, 128 shared:
    n = 910
    assert results[0]["specificity"].extras["n_windows"] == 1 + math.ceil((n - 510) / (510 - 128)) == 3
    assert results[1]["specificity"].extras["n_windows"] == 1
    # the windows really disagree, so the weighting is exercised
    assert len({round(r["specificity"].raw, 6) for r in results}) == 3


def test_batch_size_does_not_change_scores(tiny_model):
    items = [AnswerItem(str(i), "why ?", _text(50 + 300 * i, i)) for i in range(3)]
    a = SubjectiveQAScorer((SPEC,), model=str(tiny_model), device="cpu", batch_size=1).score_batch(items)
    b = SubjectiveQAScorer((SPEC,), model=str(tiny_model), device="cpu", batch_size=16).score_batch(items)
    assert [r["specificity"].raw for r in a] == pytest.approx([r["specificity"].raw for r in b], abs=1e-5)


def test_provenance_and_bad_rows(tiny_model):
    scorer = SubjectiveQAScorer((SPEC,), model=str(tiny_model), device="cpu")
    p = scorer.provenance("specificity")
    assert (p.rubric_version, p.backend, p.model_id) == ("specificity.subjectiveqa.v1", "subjectiveqa", str(tiny_model))
    res = scorer.score_batch([AnswerItem("x", "why ?", None), AnswerItem("y", "why ?", "blue .")])  # type: ignore[arg-type]
    assert "must be str" in res[0]["specificity"].error
    assert res[1]["specificity"].raw is not None


def test_config_errors(tiny_model):
    with pytest.raises(ConfigError, match="serves exactly"):
        SubjectiveQAScorer((RubricSpec("specificity", "specificity.geval.v1", "llm", 1, 5),), model=str(tiny_model))
    with pytest.raises(ConfigError, match="'stride' must be <"):
        SubjectiveQAScorer((SPEC,), model=str(tiny_model), max_length=64, stride=62)
    with pytest.raises(ConfigError, match="max_position_embeddings"):
        SubjectiveQAScorer((SPEC,), model=str(tiny_model), max_length=1024)


def test_missing_model_is_actionable(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackendUnavailableError, match="specificity.geval.v1") as e:
        SubjectiveQAScorer((SPEC,), model=str(tmp_path / "no-such-model"))
    assert "Hub" in str(e.value)


@pytest.mark.parametrize("n_words", [0, 3, 500, 508, 509, 700, 891, 892, 1500])
def test_windows_cover_every_token_once_past_the_overlap(tiny_model, n_words):
    """Each content token is in a window; windows overlap by exactly ``stride``; where transformers'
    own overflow windows cover the text too (5.19 here; 5.17 dropped the tail), they are the same."""
    from transformers import AutoTokenizer

    scorer = SubjectiveQAScorer((SPEC,), model=str(tiny_model), device="cpu")
    text = "why ? " + _text(n_words, 7)
    ids, owner = scorer.windows([text])
    assert owner == [0] * len(ids) and all(len(w) <= 512 for w in ids)
    tok = scorer.tokenizer
    content = tok(text, add_special_tokens=False)["input_ids"]
    body = [w[1:-1] for w in ids]  # strip [CLS] ... [SEP]
    assert all(w[0] == tok.cls_token_id and w[-1] == tok.sep_token_id for w in ids)
    rebuilt = body[0] + [t for w in body[1:] for t in w[128:]]
    assert rebuilt == content
    assert all(len(w) == 510 for w in body[:-1])
    theirs = AutoTokenizer.from_pretrained(tiny_model)(text, truncation=True, max_length=512, stride=128,
                                                       return_overflowing_tokens=True)["input_ids"]
    if sum(len(w) - 2 for w in theirs) - 128 * (len(theirs) - 1) == len(content):
        assert [list(w) for w in theirs] == ids


def test_special_frame_is_read_off_the_tokenizer():
    from models.rubric_backends.specificity import _special_frame

    class Tok:  # RoBERTa-like: <s> text </s>, ids 0 and 2
        def __init__(self, frame):
            self.frame = frame

        def __call__(self, text, add_special_tokens=True):
            ids = [10 + len(w) for w in text.split()]
            return {"input_ids": self.frame(ids) if add_special_tokens else ids}

    assert _special_frame(Tok(lambda ids: [0, *ids, 2]), 2, "m") == ([0], [2])
    assert _special_frame(Tok(lambda ids: [*ids, 2]), 1, "m") == ([], [2])
    with pytest.raises(BackendUnavailableError, match="special tokens"):
        _special_frame(Tok(lambda ids: [0, *ids[::-1], 2]), 2, "m")  # content not found whole
    with pytest.raises(BackendUnavailableError, match="special tokens"):
        _special_frame(Tok(lambda ids: [0, *ids, 2]), 3, "m")  # disagrees with num_special_tokens_to_add
