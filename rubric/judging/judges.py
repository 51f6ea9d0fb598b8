"""Pairwise LLM judges (paper section 5) as versioned templates, and how their verdicts are read.

Pure: no torch or vLLM here. ``models.judging.judges.JudgeScorer`` runs these specs on an engine.

Judges
    ``judge.plain.v1``, ``judge.cot.v1`` and ``judge.rubrics.v1`` are the LFQA-HP-1M reference
    code's three pairwise prompts (plain, chain-of-thought, the nine-rubric variant that is
    Table 4's "GPT-4o(R)"), verbatim in ``rubric/prompts/judge.<name>.v1.j2`` with the source
    named in each header. ``judge.<name>_tie.v1`` adds a tie option: that is a template change,
    so it is a distinct version. The tie is spelled ``answer_tie`` (not a bare ``tie``) so that
    all three verdicts continue the same pre-fill (below).

Pre-fill (logprob mode)
    The assistant turn is pre-filled with ``"answer_"`` so that the very next token is the
    verdict: SmolLM2's tokenizer splits ``answer_1`` into ``answer``, ``_``, ``1``, and ``1``,
    ``2`` and ``tie`` are single tokens. Measured with the transformers engine (full softmax,
    fp32) on real pairs of ``rubric/data/sample_pairs.jsonl`` (the first 8 non-empty pairs, both
    orders: 16 prompts; the tie rows on the first 4: 8 prompts), probability mass of the first
    token on the verdict tokens, median (min):

    - ``""`` (the chat template's generation prompt only): 0.051 (0.027) on '1'/'2'; the top
      tokens are 'The', 'You', '-', '###'.
    - ``"### Output: answer_"``: 0.949 (0.921) on '1'/'2'.
    - ``"answer_"``: 0.970 (0.954) on '1'/'2'. Chosen.
    - tie templates, ``"### Output:"`` or ``"Verdict:"`` (so that 'answer' or 'tie' could come
      next): under 0.04 on either word; newline and end-of-turn take most of the mass.
    - tie templates spelling the tie ``answer_tie``, ``"answer_"``: 0.96 (0.94) on
      '1'/'2'/'tie', of which P(tie) 0.04-0.08. Chosen for the ``_tie`` versions.

    Through vLLM (top-20) on the first 4 sample pairs, both orders, the mass after ``"answer_"``
    was 0.95-0.98 (plain), 0.90-0.96 (nine-rubric and CoT after 96 tokens of reasoning) and
    0.79-0.96 (CoT with a tie). SmolLM2 is a weak judge: it preferred answer_1 in
    16 of 16 prompts above, i.e. it is dominated by position bias, which is what the order
    debiasing below is for.

Chain of thought
    ``judge.cot.*`` in logprob mode first generates bounded reasoning greedily, then reads the
    verdict distribution after ``reasoning + "\\n\\n### Output: answer_"`` (:func:`cot_verdict_prefill`).
    In vote mode it generates freely and :func:`parse_verdict` reads the text after the last
    ``Output:`` tag.

Reading a verdict
    *logprob*: :func:`verdict_probs` folds the spellings of ``1``/``2``/``tie`` in the first-token
    distribution, renormalises over them and reports the covered mass; under ``min_mass`` the
    order is an error. *vote*: :func:`parse_verdict` reads each generated text, :func:`vote_probs`
    takes the vote shares and a strict majority (more than half of all votes cast).

Order debiasing
    Every pair is judged as (a, b) ("ab": answer_1 = a) and as (b, a) ("ba"). In each order
    ``p_a`` is P(a better | not a tie) = P(a) / (P(a) + P(b)); :func:`pair_outcome` averages the two
    (``p_a_debiased``) and decides: ``tie`` when a tie is offered and its order-averaged
    probability beats both answers', else ``a``/``b`` by ``p_a_debiased`` against 0.5; exactly 0.5
    is ``tie`` when offered, else no decision with a reason (a judge that always says answer_1
    lands here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from rubric.errors import ConfigError, UnknownNameError
from rubric.scoring import ChatPrompt, PromptTemplate, declare_prompt
from rubric.registry import Registry

__all__ = [
    "JudgeSpec",
    "JUDGES",
    "JUDGE_NAMES",
    "PAIRWISE_SCORER",
    "VERDICT_PREFILL",
    "OUTPUT_TAG",
    "ORDERS",
    "Order",
    "Verdict",
    "get_judge",
    "resolve_judges",
]

Order = Literal["ab", "ba"]
ORDERS: tuple[str, ...] = ("ab", "ba")
#: A verdict as the judge gives it: the first answer shown, the second, or a tie.
Verdict = Literal["1", "2", "tie"]

#: The assistant pre-fill after which the next token is the verdict (module docstring).
VERDICT_PREFILL = "answer_"
#: The tag after which the CoT prompt asks for the verdict.
OUTPUT_TAG = "### Output:"

_REFERENCE = "LFQA-HP-1M reference code, prompt/"
#: The judge scorer of the paper's judges (``JudgeSpec.scorer``).
PAIRWISE_SCORER = "pairwise"


@dataclass(frozen=True)
class JudgeSpec:
    """One pairwise judge: its prompt (a :class:`rubric.scoring.PromptTemplate`) and how it is run.

    The prompt is the judge's identity (its version, template hash, verdict tokens and what they
    mean); this only adds what the judge scorer does around it.

    Attributes:
        name: the judge's short name (``plain``, ``cot``, ``rubrics``; ``arena.pairwise`` for a protocol's).
        template: the judge's prompt: pairwise, with ``verdicts`` for its score tokens.
        cot: the judge reasons before its verdict (chain of thought, read after :data:`OUTPUT_TAG`).
        close_reasoning: for a judge that writes its own reasoning inside the pre-fill before its verdict
            is read: its reasoning -> the pre-fill the verdict is read after (RAG-QA Arena's
            ``<thinking>``: ``rubric.protocols.arena_verdict_prefill``); None: no reasoning of its own.
        scorer: the judge scorer that runs it, by name: ``models.backends.JUDGE_SCORERS`` builds it
            (``pairwise``, the paper's judges: ``models.judging.judges.JudgeScorer``; ``protocol``, a protocol's own
            verdict tokens: ``models.judging.ProtocolJudgeScorer``; another package registers its own).
    """

    name: str
    template: PromptTemplate = field(repr=False)
    cot: bool = False
    close_reasoning: Callable[[str], str] | None = field(default=None, repr=False, compare=False)
    scorer: str = PAIRWISE_SCORER

    def __post_init__(self) -> None:
        if not self.template.verdicts:
            raise ConfigError(f"{self.template.version}: a judge's prompt needs verdicts for its score tokens")

    @property
    def version(self) -> str:
        return self.template.version

    @property
    def reasons(self) -> bool:
        """The judge writes its own reasoning in the pre-fill first (``close_reasoning`` closes it)."""
        return self.close_reasoning is not None

    @property
    def source(self) -> str:
        return self.template.source

    @property
    def tie(self) -> bool:
        """The prompt offers a tie (``answer_tie``; ``[[C]]``, RAG-QA Arena's "not sure")."""
        return "tie" in self.template.verdicts

    @property
    def verdict_tokens(self) -> tuple[str, ...]:
        """The tokens read after the pre-fill: ``("1", "2")``, plus ``"tie"`` when a tie is offered (a
        protocol's own: ``A``/``B``/``C``, ``1``/``2``/``0``)."""
        return self.template.score_tokens

    @property
    def prefill(self) -> str:
        return self.template.prefill

    @property
    def template_hash(self) -> str:
        return self.template.template_hash

    @property
    def needs_reference(self) -> bool:
        """The prompt shows the pair's reference answer: a pair without one cannot be judged (a row error,
        never an empty reference)."""
        return "reference" in self.template.fields

    def render(self, question: str, answer_1: str, answer_2: str, *, prefill: bool = True,
               reference: str | None = None) -> ChatPrompt:
        """The prompt with ``answer_1`` shown first; ``prefill=False`` leaves the assistant turn empty.

        Args:
            reference: the pair's reference answer (used by a prompt that shows one).

        Raises:
            ConfigError: the prompt needs a reference and none is given, or it failed to render.
        """
        values: dict[str, object] = {"question": question, "answer_1": answer_1, "answer_2": answer_2}
        if self.needs_reference:
            if not isinstance(reference, str) or not reference.strip():
                raise ConfigError(f"{self.version} shows the question's reference answer and this pair has none "
                                  "(graded WebGLM lists give their best groundK; lfqa_eval/table inputs a "
                                  "'reference' field)")
            values["reference"] = reference
        return self.template.render(prefill=prefill, **values)


#: Every judge, under its version: the paper's (here) and the neighbouring protocols' pairwise judges
#: (registered by ``rubric.protocols`` when it is imported).
JUDGES: Registry[JudgeSpec] = Registry("judge")

_BASE: dict[str, tuple[str, bool]] = {
    "plain": ("LLMPairwiseJudgement.txt", False),
    "cot": ("LLMPairwiseJudgementCoT.txt", True),
    "rubrics": ("LLMPairwiseJudgement_rubrics.txt", False),
}
#: The judges' short names, in the paper's order.
JUDGE_NAMES: tuple[str, ...] = tuple(_BASE)


def _version(name: str, tie: bool) -> str:
    return f"judge.{name}{'_tie' if tie else ''}.v1"


for _n, (_file, _cot) in _BASE.items():
    for _tie in (False, True):
        _tokens = ("1", "2", "tie") if _tie else ("1", "2")
        # score_values: the verdict's value as P(first answer shown is better), a tie counting half.
        # hash_extra: the CoT flag and the output tag are part of what the model sees.
        _prompt = declare_prompt(_version(_n, _tie), layout="pairwise", name=f"judge.{_n}", prefill=VERDICT_PREFILL,
                                 score_tokens=_tokens, score_values=(1.0, 0.0, 0.5)[:len(_tokens)],
                                 fields=("question", "answer_1", "answer_2"), verdicts=_tokens,
                                 verdict_format="answer_{}", hash_extra=(f"cot={_cot}", OUTPUT_TAG),
                                 source=_REFERENCE + _file + (" (tie option added by lfqa-rubric)" if _tie else ""))
        JUDGES.register(_prompt.version, JudgeSpec(name=_n, template=_prompt, cot=_cot))


@cache
def get_judge(version: str) -> JudgeSpec:
    """The judge registered as ``version``.

    Raises:
        UnknownNameError: no such judge (lists what exists).
    """
    return JUDGES.get(version)


def resolve_judges(names: str | Sequence[str], tie: bool = False) -> list[JudgeSpec]:
    """Turn ``"plain,cot,rubrics"`` into judge specs, in the order given.

    A short name takes the version with or without a tie option as ``tie`` says; a versioned name
    (``judge.cot_tie.v1``, or a neighbouring protocol's pairwise judge such as ``arena.pairwise.v1``,
    registered when ``rubric.protocols`` is imported, or another package's, which a miss loads:
    ``JUDGES.on_miss``) is taken as it is.

    Args:
        names: short names or versions, as a list or one comma-separated string.
        tie: short names resolve to their tie versions.

    Returns:
        The specs, in the order given.

    Raises:
        UnknownNameError: a name is neither a judge nor a version (lists what exists).
        ConfigError: the list is empty or names one version twice.
    """
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",") if n.strip()]
    if not names:
        raise ConfigError("no judges given; known: " + ", ".join(JUDGE_NAMES))
    specs: list[JudgeSpec] = []
    for n in names:
        if n in _BASE:
            spec = JUDGES.get(_version(n, tie))
        else:
            try:  # a miss loads the plugins first (JUDGES.on_miss: workers.protocols)
                spec = JUDGES.get(n)
            except UnknownNameError:
                raise UnknownNameError(f"unknown judge {n!r}; known: {', '.join(JUDGE_NAMES)}; "
                                       f"versions: {', '.join(JUDGES.names())}") from None
        if any(s.version == spec.version for s in specs):
            raise ConfigError(f"judge {spec.version!r} is named twice")
        specs.append(spec)
    return specs
