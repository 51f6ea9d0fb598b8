"""The neighbouring protocols' scorers on a fake engine whose token distributions the test controls:
LINKAGE listwise / pointwise / pairwise, and the pairwise protocol judges (RAG-QA Arena, LFQA-E) through
JudgeScorer's machinery."""

from __future__ import annotations

import json

import pytest

from models.judging import ProtocolJudgeScorer
from models.linkage import LinkageScorer
from rubric.errors import ConfigError, EngineError
from rubric.judging.judges import resolve_judges
from rubric.protocols.linkage_data import LinkageCandidate, LinkageQuestion
from rubric.protocols.judges import protocol_judge
from rubric.io.records import PairRecord

# quality of an answer, by the marker word in it
QUALITY = {"BEST": 3, "GOOD": 2, "POOR": 1}


def _quality(text: str) -> int:
    return next((v for k, v in QUALITY.items() if k in text), 0)


def _after(user: str, tag: str) -> str:
    return user.split(tag, 1)[1] if tag in user else ""


def _shown(segment: str) -> tuple[int, int]:
    """Qualities of the two answers in the order they are shown (answers are "answer MARKER ...")."""
    import re

    found = re.findall(r"answer (BEST|GOOD|POOR)", segment)
    return QUALITY[found[0]], QUALITY[found[1]]


class FakeEngine:
    """Whitespace tokens; distributions chosen from the markers in the prompt (module constants)."""

    backend = "fake"
    model_id = "fake/protocols"
    revision = "r1"
    top_k = 20

    def __init__(self, max_context: int = 100_000, fail: bool = False, texts: dict[str, str] | None = None) -> None:
        self.max_context = max_context
        self.fail = fail
        self.texts = texts or {}
        self.calls: list[tuple[str, int]] = []

    def encode(self, text):
        return text.split()

    def decode(self, ids):
        return " ".join(ids)

    def count_tokens(self, prompts):
        return [len(p.user.split()) + len(p.prefill.split()) + len((p.system or "").split()) for p in prompts]

    def score_token_probs(self, prompts, candidates):
        if self.fail:
            raise RuntimeError("worker died")
        self.calls.append(("score", len(prompts)))
        return [self._dist(p) for p in prompts]

    def _dist(self, p):
        u = p.user
        if "Assistant A's Answer" in u:  # LINKAGE pairwise: A = first shown
            qa = _quality(_after(u, "Assistant A's Answer").split("Assistant B's Answer")[0])
            qb = _quality(_after(u, "Assistant B's Answer"))
            return {"A": 0.6, "B": 0.3, "C": 0.1} if qa > qb else {"A": 0.35, "B": 0.55, "C": 0.1}
        if "<rating>" in p.prefill:  # RAG-QA Arena: 1 / 2 / 0
            if "MUTE" in u:
                return {"Ġthe": 0.9}
            q1, q2 = _shown(_after(u, "Now compare:"))
            if q1 == q2:
                return {"1": 0.3, "2": 0.2, "0": 0.5}
            return {"1": 0.7, "2": 0.2, "0": 0.1} if q1 > q2 else {"1": 0.4, "2": 0.5, "0": 0.1}
        if p.prefill == "answer_":  # LFQA-E
            assert "REFTEXT" in u, "the reference must be in the prompt"
            q1, q2 = _shown(_after(u, "Reference answer:"))
            return {"1": 0.6, "2": 0.3, "tie": 0.1} if q1 > q2 else {"1": 0.3, "2": 0.6, "tie": 0.1}
        cand = _after(u, "Candidate answer:")
        q = _quality(cand)
        if "reference answer list, which are ranked" in u and "rank the given" in u:  # listwise
            if q == 0:
                return {"3": 0.001, "Ġthe": 0.9}
            return {"1": {3: 0.8, 2: 0.1, 1: 0.05}[q], "2": 0.1, "3": {1: 0.8, 2: 0.1, 3: 0.05}[q],
                    "2 ": 0.0} | ({"2": 0.7} if q == 2 else {})
        if p.prefill.endswith("[[1"):  # after "[[1": is it 10?
            return {"0": 0.5 if q == 3 else 0.0, "]]": 0.5 if q == 3 else 0.9}
        if "LOWMASS" in cand:
            return {"5": 0.001, "Ġthe": 0.9}
        return {str(2 * q + 2): 0.9, "1": 0.1}  # POOR 4, GOOD 6, BEST 8 (+ a bit of "1")

    def generate(self, prompts, max_tokens, *, temperature=0.0, n=1, seed=None):
        self.calls.append(("generate", len(prompts)))
        out = []
        for p in prompts:
            text = next((t for k, t in self.texts.items() if k in p.user), "no verdict here")
            out.append(text if n == 1 else [text] * n)
        return out


def _question(*markers, refs=("ref one", "ref two")) -> LinkageQuestion:
    cands = tuple(LinkageCandidate(answer_id=f"a{i}", text=f"answer {m} text", label=QUALITY.get(m, 0), key=str(i))
                  for i, m in enumerate(markers))
    return LinkageQuestion(question_id="q1", question="why?", references=refs, candidates=cands)


def test_linkage_listwise_expected_rank_and_pointwise_ten():
    eng = FakeEngine()
    s = LinkageScorer(eng, ("listwise", "point_no_ref", "point_with_ref"))
    [rows] = s.score_questions([_question("BEST", "GOOD", "POOR")])
    assert eng.calls == [("score", 3 * (1 + 2 + 2))]  # one engine call: listwise + 2 x (point, after '[[1')
    ranks = [r["listwise"].extras["rank"] for r in rows]
    # BEST: P(1)=.8, P(2)=.1, P(3)=.05 -> (0.8 + 0.2 + 0.15) / 0.95
    assert ranks[0] == pytest.approx((0.8 * 1 + 0.1 * 2 + 0.05 * 3) / 0.95)
    assert ranks[0] < ranks[1] < ranks[2]
    assert [r["listwise"].raw for r in rows] == pytest.approx([-x for x in ranks])
    # BEST: '8' 0.9 and '1' 0.1, half of whose mass is really '10' -> (8*.9 + 1*.05 + 10*.05) / 1
    assert rows[0]["point_no_ref"].raw == pytest.approx(8 * 0.9 + 0.05 + 0.5)
    assert rows[2]["point_with_ref"].raw == pytest.approx((4 * 0.9 + 1 * 0.1) / 1.0)
    assert rows[0]["point_no_ref"].extras["mass"] == pytest.approx(1.0)


def test_linkage_pairwise_candidates_mean_win_share():
    [rows] = LinkageScorer(FakeEngine(), ("pairwise_candidates",)).score_questions([_question("BEST", "GOOD", "POOR")])
    wins = [r["pairwise_candidates"].raw for r in rows]
    assert wins[0] > wins[1] > wins[2]
    assert all(r["pairwise_candidates"].extras["n_opponents"] == 2 for r in rows)
    # every pair's win shares sum to 1: the mean over 3 candidates of 2 opponents each is 1/2
    assert sum(wins) / 3 == pytest.approx(0.5)


def test_linkage_pairwise_references_is_eq_3():
    """Each candidate against each reference, both orders, no cap on the candidates (eq. 3)."""
    eng = FakeEngine()
    refs = ("reference answer GOOD here", "reference answer POOR here")
    q = _question(*(["BEST", "GOOD", "POOR"] * 5), refs=refs)  # 15 candidates: over eq. 2's cap of 12
    s = LinkageScorer(eng, ("pairwise_candidates", "pairwise_references"))
    [rows] = s.score_questions([q])
    assert eng.calls == [("score", 15 * 2 * 2)]  # eq. 2 is capped (no prompts); eq. 3: 2 refs x 2 orders each
    assert all("max_pairwise_candidates=12" in r["pairwise_candidates"].error for r in rows)
    # the fake judge: the better answer gets A 0.6 / B 0.3 / C 0.1 when first, B 0.55 / A 0.35 when second
    better_first = (0.6, 0.1)   # P(first better | not tie) = 0.6 / 0.9, P(tie) = 0.1
    worse_first = (0.35, 0.1)   # the worse shown first: P(first better | not tie) = 0.35 / 0.9
    p_win = (better_first[0] / 0.9 + (1 - worse_first[0] / 0.9)) / 2  # debiased P(candidate better), when it is
    win = 0.9 * (2 * p_win - 1)
    best, good, poor = rows[0]["pairwise_references"], rows[1]["pairwise_references"], rows[2]["pairwise_references"]
    # BEST beats both references; against an equal answer the fake favours the second shown in both orders, so
    # the debiased outcome is 0; GOOD beats POOR; POOR loses to GOOD
    assert best.raw == pytest.approx(win) and (best.extras["n_won"], best.extras["n_lost"]) == (2, 0)
    assert good.raw == pytest.approx(win / 2) and (good.extras["n_won"], good.extras["n_lost"]) == (1, 0)
    assert poor.raw == pytest.approx(-win / 2) and (poor.extras["n_won"], poor.extras["n_lost"]) == (0, 1)
    assert best.extras["n_references"] == 2
    weighted = LinkageScorer(FakeEngine(), ("pairwise_references",), reference_weights=(3.0, 1.0))
    [w_rows] = weighted.score_questions([_question("GOOD", refs=refs)])
    assert w_rows[0]["pairwise_references"].raw == pytest.approx((3 * 0.0 + 1 * win) / 4)
    assert weighted.provenance("pairwise_references").rubric_version == "linkage.pairwise_reference.v1"
    assert weighted.provenance("pairwise_references").template_hash != s.provenance("pairwise_references").template_hash
    [none] = LinkageScorer(FakeEngine(), ("pairwise_references",)).score_questions([_question("GOOD", refs=())])
    assert "no reference answer" in none[0]["pairwise_references"].error


def test_linkage_row_errors_never_guess():
    eng = FakeEngine(max_context=140)  # the listwise prompts fit (~120 tokens), the pointwise ones (~150) not
    s = LinkageScorer(eng, ("listwise", "point_no_ref", "pairwise_candidates"), max_pairwise_candidates=2)
    [rows] = s.score_questions([_question("BEST", "GOOD", "LOWMASS")])
    assert all("over the 139 the context leaves" in r["point_no_ref"].error for r in rows)
    assert rows[0]["listwise"].raw is not None
    assert rows[2]["listwise"].raw is None and "mass" in rows[2]["listwise"].error
    assert all("max_pairwise_candidates=2" in r["pairwise_candidates"].error for r in rows)
    nine = _question("BEST", refs=tuple(f"r{i}" for i in range(9)))
    [[row]] = LinkageScorer(FakeEngine(), ("listwise",)).score_questions([nine])
    assert "one digit" in row["listwise"].error


def test_linkage_parse_mode_and_engine_failure():
    eng = FakeEngine(texts={"answer BEST": "I think [[1]] and [[2]].", "answer POOR": "nothing"})
    s = LinkageScorer(eng, ("listwise",), mode="parse")
    [rows] = s.score_questions([_question("BEST", "POOR")])
    assert rows[0]["listwise"].raw == -1.0 and rows[0]["listwise"].extras["rank"] == 1.0
    assert "no [[k]] rank" in rows[1]["listwise"].error
    with pytest.raises(EngineError, match="worker died"):
        LinkageScorer(FakeEngine(fail=True)).score_questions([_question("BEST", "POOR")])
    with pytest.raises(ConfigError, match="systems"):
        LinkageScorer(FakeEngine(), ("listwise", "nope"))
    prov = LinkageScorer(FakeEngine()).provenance("listwise")
    assert prov.rubric_version == "linkage.listwise_n.v1" and prov.model_id == "fake/protocols"


def _pair(a: str, b: str, ref: str | None = "REFTEXT here", pid: str = "p") -> PairRecord:
    return PairRecord(pair_id=pid, question="why?", answer_a=a, answer_b=b, label="a", reference=ref)


def test_arena_judge_reads_1_2_0_and_debiases():
    spec = protocol_judge("arena.pairwise.v1")
    assert resolve_judges("arena.pairwise.v1")[0] == spec
    eng = FakeEngine()
    s = ProtocolJudgeScorer(eng, [spec])
    got = s.judge_pairs([_pair("answer BEST", "answer POOR", pid="win"), _pair("answer GOOD", "answer GOOD x",
                                                                               pid="tie"),
                         _pair("answer POOR", "answer BEST", pid="lose"), _pair("MUTE", "answer GOOD", pid="mute")])
    assert eng.calls == [("score", 8)]  # both orders of all pairs in one call
    win, tie, lose, mute = (g["arena.pairwise.v1"] for g in got)
    assert win.extras["decision"] == "a" and lose.extras["decision"] == "b"
    assert tie.extras["decision"] == "tie"  # '0' (not sure) beats both answers in both orders
    assert win.extras["p_tie_ab"] == pytest.approx(0.1)
    assert mute.raw is None and "no verdict token" in mute.error
    assert "protocol" in s.method("arena.pairwise.v1")


def test_lfqa_e_judge_needs_the_reference():
    spec = protocol_judge("lfqa_e.reference_tie.v1")
    s = ProtocolJudgeScorer(FakeEngine(), [spec])
    ok, none = s.judge_pairs([_pair("answer BEST", "answer POOR"), _pair("answer BEST", "answer POOR", ref=None)])
    assert ok[spec.version].extras["decision"] == "a"
    assert none[spec.version].raw is None and "reference answer" in none[spec.version].error


def test_protocol_vote_mode_parses_protocol_text():
    spec = protocol_judge("arena.pairwise.v1")
    eng = FakeEngine(texts={"answer BEST": "<thinking>x</thinking>\n<rating>1</rating>"})
    s = ProtocolJudgeScorer(eng, [spec], mode="vote", n_votes=1)
    [got] = s.judge_pairs([_pair("answer BEST", "answer BEST too")])
    assert got[spec.version].extras["votes_ab"] == "1" and got[spec.version].extras["votes_ba"] == "1"
    assert got[spec.version].extras["decision"] == "tie"  # answer_1 in both orders: position only


def test_paper_judges_still_read_as_before():
    # a plain judge through ProtocolJudgeScorer is JudgeScorer's reading (no protocol branch)
    spec = resolve_judges("plain")[0]
    s = ProtocolJudgeScorer(FakeEngine(), [spec])
    assert "protocol" not in s.method(spec.version)


# --- LINKAGE reference lists generated from one golden answer ------------------------------------

GEN_OK = "Answer1: a slightly worse answer\nAnswer2: a much worse answer\nAnswer3: unrelated text"


def _requests():
    from models.linkage.references import ReferenceRequest

    return [ReferenceRequest("q1", "why is the sky blue?", "GOLD one"),
            ReferenceRequest("q2", "how do magnets work?", "GOLD two")]


def test_reference_generator_parses_caches_and_regenerates_on_key_change(tmp_path):
    from models.linkage.references import ReferenceCache, ReferenceGenerator

    eng = FakeEngine(texts={"sky blue": GEN_OK, "magnets": "Sure! Here are three answers."})
    gen = ReferenceGenerator(eng, max_tokens=64)
    cache = ReferenceCache(tmp_path / "gen.jsonl")
    got = gen.references(_requests(), cache)
    assert eng.calls == [("generate", 2)]
    assert got[0].references == ("GOLD one", "a slightly worse answer", "a much worse answer", "unrelated text")
    assert got[0].error is None and not got[0].cached
    assert got[1].references == () and "how do magnets work?" in got[1].error and "no 'Answer1:' label" in got[1].error
    rows = [json.loads(line) for line in (tmp_path / "gen.jsonl").read_text().splitlines()]
    assert [r["question_id"] for r in rows] == ["q1", "q2"]  # the failed text is cached too
    assert {r["model_id"] for r in rows} == {"fake/protocols"} and {r["max_tokens"] for r in rows} == {64}
    # resume: a fresh cache object on the same file, nothing generated
    again = gen.references(_requests(), ReferenceCache(tmp_path / "gen.jsonl"))
    assert eng.calls == [("generate", 2)] and all(r.cached for r in again)
    assert [r.references for r in again] == [r.references for r in got] and again[1].error == got[1].error
    # a changed golden answer, model revision or max_tokens is a new key: generated again
    from models.linkage.references import ReferenceRequest

    changed = [ReferenceRequest("q1", "why is the sky blue?", "GOLD one, edited"), _requests()[1]]
    gen.references(changed, ReferenceCache(tmp_path / "gen.jsonl"))
    assert eng.calls[-1] == ("generate", 1)
    eng.revision = "r2"
    gen.references(_requests(), ReferenceCache(tmp_path / "gen.jsonl"))
    assert eng.calls[-1] == ("generate", 2)
    ReferenceGenerator(eng, max_tokens=65).references(_requests(), ReferenceCache(tmp_path / "gen.jsonl"))
    assert eng.calls[-1] == ("generate", 2) and len(eng.calls) == 4


def test_reference_generator_v2_pre_fills_answer1_and_has_its_own_cache_key(tmp_path):
    from models.linkage.references import ReferenceCache, ReferenceGenerator

    class Prefilled(FakeEngine):  # continues after the pre-fill, as a model would
        def generate(self, prompts, max_tokens, *, temperature=0.0, n=1, seed=None):
            assert {p.prefill for p in prompts} == {"Answer1:"}
            return [" a fair reply\nAnswer2: a weak reply\nAnswer3: an unrelated reply" for _ in prompts]

    eng = Prefilled()
    cache = ReferenceCache(tmp_path / "gen.jsonl")
    v2 = ReferenceGenerator(eng, version="linkage.create_multi_step_answer.v2")
    got = v2.references(_requests(), cache)
    assert [r.references[1:] for r in got] == [("a fair reply", "a weak reply", "an unrelated reply")] * 2
    assert got[0].text.startswith(" a fair reply")  # the cache keeps the continuation only
    assert v2.settings()["template"] == "linkage.create_multi_step_answer.v2"
    assert all(r.cached for r in v2.references(_requests(), ReferenceCache(tmp_path / "gen.jsonl")))
    # v1 on the same cache file is another key: generated again (and, without the pre-fill, not parsed here)
    v1 = ReferenceGenerator(FakeEngine(), version="linkage.create_multi_step_answer.v1")
    assert not any(r.cached for r in v1.references(_requests(), ReferenceCache(tmp_path / "gen.jsonl")))
    with pytest.raises(ConfigError, match="unknown reference generation template"):
        ReferenceGenerator(eng, version="linkage.create_multi_step_answer.v3")


def test_reference_cache_skips_a_torn_line_and_rewrites(tmp_path):
    from models.linkage.references import ReferenceCache, ReferenceGenerator

    eng = FakeEngine(texts={"sky blue": GEN_OK, "magnets": GEN_OK})
    gen = ReferenceGenerator(eng)
    path = tmp_path / "gen.jsonl"
    gen.references(_requests()[:1], ReferenceCache(path))
    with path.open("a") as f:
        f.write('{"key": "abc", "te')  # a job killed mid-line
    cache = ReferenceCache(path)
    assert cache.torn == 1 and len(cache) == 1
    got = gen.references(_requests(), cache)
    assert eng.calls[-1] == ("generate", 1) and [r.cached for r in got] == [True, False]
    assert [json.loads(line)["question_id"] for line in path.read_text().splitlines()] == ["q1", "q2"]


def test_reference_generator_errors():
    from models.linkage.references import ReferenceGenerator

    eng = FakeEngine(max_context=300, texts={"sky blue": GEN_OK})
    gen = ReferenceGenerator(eng, max_tokens=100)  # the prompt (~220 words) does not fit the 300 - 100 left
    got = gen.references(_requests())
    assert eng.calls == []
    assert all("tokens, over the" in r.error and r.text == "" for r in got)
    with pytest.raises(EngineError, match="engine failed generating 2 reference lists"):
        ReferenceGenerator(_Dead()).references(_requests())
    with pytest.raises(ConfigError, match="max_tokens"):
        ReferenceGenerator(FakeEngine(), max_tokens=0)


class _Dead(FakeEngine):
    def generate(self, prompts, max_tokens, *, temperature=0.0, n=1, seed=None):
        raise RuntimeError("worker died")


class _Recording(FakeEngine):
    """The fake engine, keeping the prompts it scored."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.scored = []

    def score_token_probs(self, prompts, candidates):
        self.scored += list(prompts)
        return super().score_token_probs(prompts, candidates)


def test_arena_reasoning_judge_generates_then_reads_the_rating_after_its_reasoning():
    spec = resolve_judges("arena.pairwise_reasoning.v1")[0]
    assert spec.reasons and not protocol_judge("arena.pairwise.v1").reasons
    eng = _Recording(texts={"Now compare": "  Answer one is fuller.</thinking>\n<rating>2</rating> more"})
    s = ProtocolJudgeScorer(eng, [spec], max_reasoning_tokens=40)
    [win, lose] = s.judge_pairs([_pair("answer BEST", "answer POOR"), _pair("answer POOR", "answer BEST")])
    assert eng.calls == [("generate", 4), ("score", 4)]  # both orders of both pairs, one call each
    # the rating is read after the reasoning, cut at </thinking> (the rating it wrote is not used)
    assert {p.prefill for p in eng.scored} == {"<thinking>Answer one is fuller.</thinking>\n<rating>"}
    assert all(p.system for p in eng.scored)  # the system turn survives the new pre-fill
    got = win["arena.pairwise_reasoning.v1"]
    assert got.extras["decision"] == "a" and lose["arena.pairwise_reasoning.v1"].extras["decision"] == "b"
    assert got.extras["text_ab"].startswith("  Answer one is fuller.</thinking>")  # the reasoning is kept
    assert "max_reasoning_tokens=40" in s.method("arena.pairwise_reasoning.v1")
    assert "max_reasoning_tokens" not in ProtocolJudgeScorer(eng, [protocol_judge("arena.pairwise.v1")]).method(
        "arena.pairwise.v1")


def test_arena_reasoning_longer_than_the_context_allows_is_shortened_to_fit():
    spec = resolve_judges("arena.pairwise_reasoning.v1")[0]
    words = " ".join(f"w{i}" for i in range(60))
    prompt = spec.render("why?", "answer BEST", "answer POOR", prefill=True)
    # room for the prompt and a 20-token reasoning; the engine returns 60 words anyway
    eng = _Recording(max_context=FakeEngine().count_tokens([prompt])[0] + 30, texts={"Now compare": words})
    s = ProtocolJudgeScorer(eng, [spec], max_reasoning_tokens=20)
    [row] = s.judge_pairs([_pair("answer BEST", "answer POOR")])
    got = row["arena.pairwise_reasoning.v1"]
    assert got.extras["decision"] == "a" and got.extras["text_ab"] == words  # the row keeps all it generated
    kept = [p.prefill for p in eng.scored]
    assert all(k.startswith("<thinking>w0 w1 ") and "w59" not in k for k in kept)
    assert max(eng.count_tokens(eng.scored)) <= eng.max_context - 1
