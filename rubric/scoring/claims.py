"""Factuality, VeriScore-style: claim-extraction prompts, claim parsing, verdicts and the scores.

Pure: no torch, vLLM, spaCy or network here (``models.rubric_backends.factuality`` drives the models,
``models.rubric_backends.evidence`` retrieves evidence).

1. *Extraction.* Each sentence of an answer gets a prompt with the question, up to three previous
   sentences, the sentence marked ``<SOS> ... <EOS>`` and one following sentence
   (``factuality.extract.v1``). The model writes one claim per line, or the sentinel
   ``No verifiable claim.``; ``parse_claims`` reads that, and ``dedupe_claims`` merges claims
   repeated across the sentences of one answer.
2. *Verification.* Each claim with its top evidence passages gets a prompt answered by a single
   token (``factuality.verify.v1``): ``yes`` (supported) or ``no`` (not supported). The engine's
   ``score_token_probs`` reads the answer without generating text. ``yes``/``no`` rather than
   ``supported``/``unsupported`` because a candidate must be a single token to be scored, and
   ``unsupported`` and ``contradicted`` are not (SmolLM2 spells them ``un|supported`` and
   ``Ġcontradict|ed``), while ``yes``, ``no`` and ``unknown`` are single tokens, with and without
   a leading space, in every vocabulary we use. The ternary variant
   (``factuality.verify_ternary.v1``) adds ``unknown`` and reads ``no`` as *contradicted*.
3. *Scores.* precision = supported / claims; F1@K as in VeriScore (recall = min(supported / K, 1),
   F1 = 2PR / (P + R), 0 when nothing is supported). An answer without a verifiable claim gets an
   explicit reason instead of a score.

``factuality.veriscore.v3`` (``factuality_recipe``) changes how the same steps run: extraction
(``factuality.extract.v2``: v1's prompt) stops a completion where it starts looping and reads the
claims before that (``rubric.scoring.claim_stop``); a sentence's claims share one evidence list
(``sentence_evidence``); and the verification prompt (``factuality.verify.v2``) puts what they
share first (instructions, then the evidence) and the claim last, so a prefix cache serves most of it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Literal

from rubric.config import DEFAULT_MAX_CLAIM_TOKENS, check_range
from rubric.errors import ConfigError
from rubric.scoring.geval import parse_score
from rubric.scoring.prompts import DEFAULT_MIN_MASS, PROMPTS, ChatPrompt, PromptTemplate, declare_prompt
from rubric.scoring.scorer import Score

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "FACTUALITY_VERSION",
    "FACTUALITY_V2",
    "FACTUALITY_V3",
    "FACTUALITY_VERSIONS",
    "EXTRACT_V2",
    "VERIFY_V2",
    "VERIFY_TERNARY_V2",
    "LOOP_RULE",
    "FactualityRecipe",
    "factuality_recipe",
    "sentence_evidence",
    "EXTRACT_VERSION",
    "VERIFY_VERSION",
    "VERIFY_TERNARY_VERSION",
    "NO_CLAIM_SENTINEL",
    "NO_CLAIMS_REASON",
    "Verdict",
    "extraction_template",
    "verification_template",
    "factuality_template_hash",
    "sentence_context",
    "extraction_prompts",
    "parse_claims",
    "clean_claim_line",
    "EXTRACTION_STOP",
    "claim_key",
    "dedupe_claims",
    "format_evidence",
    "verification_prompt",
    "VerdictReading",
    "read_verdict",
    "parse_verdict_text",
    "ClaimScores",
    "factuality_scores",
    "CheckedClaim",
    "claims_to_json",
    "claims_from_json",
    "claims_table",
    "count_no_claims",
]

FACTUALITY_VERSION = "factuality.veriscore.v1"
#: v2 differs from v1 in one rule: an answer with no verifiable claim scores 0.0 (the LFQA-HP-1M
#: reference replication prompt: "If C(r) = 0, return 0.0"), with ``n_claims = 0`` as an extra,
#: where v1 gives a row error. Real failures (no evidence, no verdict) stay errors in both.
FACTUALITY_V2 = "factuality.veriscore.v2"
#: v3 scores like v2 and changes how claims are extracted and verified (``factuality_recipe``).
FACTUALITY_V3 = "factuality.veriscore.v3"
FACTUALITY_VERSIONS: tuple[str, ...] = (FACTUALITY_VERSION, FACTUALITY_V2, FACTUALITY_V3)
EXTRACT_VERSION = "factuality.extract.v1"
#: v1's prompt, with the loop stop (``rubric.scoring.claim_stop.LOOP_RULE``) and ``claims_until_loop``.
EXTRACT_V2 = "factuality.extract.v2"
VERIFY_VERSION = "factuality.verify.v1"
VERIFY_TERNARY_VERSION = "factuality.verify_ternary.v1"
#: v1's questions with the evidence before the claim (shared text first, for the prefix cache).
VERIFY_V2 = "factuality.verify.v2"
VERIFY_TERNARY_V2 = "factuality.verify_ternary.v2"
#: The stop rule of ``factuality.extract.v2`` (``rubric.scoring.claim_stop``), by the name engines know it by.
LOOP_RULE = "factuality.loop_stop.v2"

NO_CLAIM_SENTINEL = "No verifiable claim."
NO_CLAIMS_REASON = "no verifiable claims in the answer"

Verdict = Literal["supported", "unsupported", "contradicted", "unverified"]

_EXTRACT_FIELDS = ("question", "previous", "sentence", "following")
# v2 reuses v1's wording; the version is in the template hash, so v2's stop rule and reading give a new hash
for _v in (EXTRACT_VERSION, EXTRACT_V2):
    declare_prompt(_v, file=EXTRACT_VERSION, name=_v.rsplit(".", 1)[0], fields=_EXTRACT_FIELDS,
                   keep_trailing_newline=True)
# The pre-fill ends at the colon so the next token is " yes"/" no" (one BPE token), as for
# use_of_examples.yesno.v1. The value of each score token is its support (yes = 1, otherwise 0), so
# parse_score's expected value is P(supported) among the candidates.
_TERNARIES = {VERIFY_VERSION: VERIFY_TERNARY_VERSION, VERIFY_V2: VERIFY_TERNARY_V2}
for _v, _t in _TERNARIES.items():
    for _version, _tokens, _values in ((_v, ("yes", "no"), (1.0, 0.0)), (_t, ("yes", "no", "unknown"), (1.0, 0.0, 0.0))):
        declare_prompt(_version, layout="plain", name="factuality", prefill="Answer:", score_tokens=_tokens,
                       score_values=_values, fields=("claim", "evidence"))


def extraction_template(version: str = EXTRACT_VERSION) -> PromptTemplate:
    """``factuality.extract.v1`` or ``.v2`` (the same prompt text): fields question, previous, sentence, following.

    Raises:
        ConfigError: an unknown version.
    """
    if version not in (EXTRACT_VERSION, EXTRACT_V2):
        raise ConfigError(f"unknown extraction template {version!r}; known: {[EXTRACT_VERSION, EXTRACT_V2]}")
    return PROMPTS.get(version)


def verification_template(ternary: bool = False, version: str = VERIFY_VERSION) -> PromptTemplate:
    """``factuality.verify.v1``/``.v2`` (yes/no) or ``factuality.verify_ternary.v1``/``.v2`` (yes/no/unknown).

    ``version`` names the binary template's version; ``ternary`` picks its ternary sibling. v2
    asks the same question with the evidence before the claim.

    Raises:
        ConfigError: an unknown version.
    """
    if version not in _TERNARIES:
        raise ConfigError(f"unknown verification template {version!r}; known: {list(_TERNARIES)}")
    return PROMPTS.get(_TERNARIES[version] if ternary else version)


@dataclass(frozen=True)
class FactualityRecipe:
    """How a factuality version extracts and verifies (the scores' formula is the same in all).

    Attributes:
        version: the rubric version.
        extract_version: the extraction template's version.
        stop_rule: the stop rule extraction runs in the engine (``rubric.scoring.STOP_RULES``), and
            reads claims with (``claims_until_loop``); None: ``parse_claims`` on the whole completion.
        verify_version: the (binary) verification template's version.
        sentence_evidence: a sentence's claims share one evidence list (``sentence_evidence``).
        no_claims_zero: an answer with no verifiable claim scores 0.0 (else a row error).
    """

    version: str
    extract_version: str
    stop_rule: str | None
    verify_version: str
    sentence_evidence: bool
    no_claims_zero: bool


def factuality_recipe(version: str) -> FactualityRecipe:
    """The recipe of ``factuality.veriscore.v1``, ``.v2`` or ``.v3``.

    Raises:
        ConfigError: an unknown version.
    """
    if version == FACTUALITY_V3:
        return FactualityRecipe(version, EXTRACT_V2, LOOP_RULE, VERIFY_V2, True, True)
    if version in (FACTUALITY_VERSION, FACTUALITY_V2):
        return FactualityRecipe(version, EXTRACT_VERSION, None, VERIFY_VERSION, False, version == FACTUALITY_V2)
    raise ConfigError(f"unknown factuality version {version!r}; known: {list(FACTUALITY_VERSIONS)}")


def factuality_template_hash(ternary: bool = False, max_claim_tokens: int = DEFAULT_MAX_CLAIM_TOKENS,
                             version: str = FACTUALITY_V2) -> str:
    """One hash over both prompts and the extraction budget, for the rubric's provenance column.

    The budget is in it because it decides where a claim list is cut: answers scored with
    different budgets have different provenance and are never merged as one rubric. v1 and v2
    share their prompts (and so this hash; the rubric version tells them apart); v3 adds its stop
    rule and its evidence grouping.
    """
    r = factuality_recipe(version)
    text = (f"{extraction_template(r.extract_version).template_hash}\x00"
            f"{verification_template(ternary, r.verify_version).template_hash}\x00max_claim_tokens={int(max_claim_tokens)}")
    if r.version == FACTUALITY_V3:
        text += f"\x00stop_rule={r.stop_rule}\x00evidence=sentence"
    return hashlib.sha256(text.encode()).hexdigest()[:12]


# --- extraction ----------------------------------------------------------------------------------

def sentence_context(sentences: Sequence[str], i: int, *, n_before: int = 3, n_after: int = 1) -> dict[str, str]:
    """The template fields for sentence ``i``: up to ``n_before`` previous and ``n_after`` following sentences.

    Raises:
        ConfigError: ``i`` is out of range or a window size is negative.
    """
    if not 0 <= i < len(sentences):
        raise ConfigError(f"sentence index {i} is out of range for {len(sentences)} sentences")
    check_range("n_before", n_before, low=0), check_range("n_after", n_after, low=0)
    return {
        "previous": " ".join(s.strip() for s in sentences[max(0, i - n_before):i]),
        "sentence": sentences[i].strip(),
        "following": " ".join(s.strip() for s in sentences[i + 1:i + 1 + n_after]),
    }


def extraction_prompts(question: str, sentences: Sequence[str], *, version: str = EXTRACT_VERSION) -> list[ChatPrompt]:
    """One extraction prompt per sentence, in order (template ``version``)."""
    tmpl = extraction_template(version)
    return [tmpl.render(question=question.strip(), **sentence_context(sentences, i)) for i in range(len(sentences))]


_BULLET = re.compile(r"^(?:[-*+•·‣◦▪–—>]+\s*|\(?\d{1,3}[.):]\s+|\[\d{1,3}\]\s*|#+\s+)")
_LABEL = re.compile(r"^(?:verifiable\s+)?(?:claim|fact|statement)s?\s*(?:\d{1,3}\s*[:.)-]|[:)])\s*", re.I)
_QUOTES = {'"': '"', "'": "'", "“": "”", "‘": "’", "«": "»", "`": "`"}
# A line that starts a new prompt section: the model went on writing a new example. Stop there.
_ECHO_WORDS = ("question", "excerpt", "context", "sentence", "answer", "evidence")
_ECHO = re.compile(rf"^(?:{'|'.join(_ECHO_WORDS)})\s*:", re.I)
#: Stop strings for claim extraction: a new line that starts a prompt section ("Question:"...),
#: where ``parse_claims`` stops reading. Generation may stop there without changing the claims:
#: the text before a stop string is what greedy decoding produced anyway, and ``parse_claims``
#: never reads past such a line. Only exact spellings (lower, Title, UPPER case, no space before
#: the colon) are listed; a variant that is missing only costs tokens, never claims.
EXTRACTION_STOP: tuple[str, ...] = tuple(f"\n{form}:" for w in _ECHO_WORDS for form in (w, w.title(), w.upper()))
_META = re.compile(r"^(?:note|explanation|reasoning)\s*:|^(?:sure|certainly|okay|ok)\b[\s,.!]"
                   r"|^here\s+(?:is|are)\s+(?:the\s+|some\s+|all\s+|my\s+)?(?:verifiable\s+)?(?:claims?|facts?)\b", re.I)
_SENTINEL = re.compile(r"\bno\s+(?:verifiable|checkable|factual)\s+(?:claims?|facts?|statements?)\b"
                       r"|^(?:none|n/?a|nothing|no claims?)$", re.I)
_WORD = re.compile(r"[^\W_]+")


def _strip_wrappers(line: str) -> str:
    prev = None
    while line != prev:
        prev = line
        line = line.strip()
        line = _BULLET.sub("", line)
        line = line.strip("*_ \t")  # markdown bold/italics around the whole line
        if len(line) >= 2 and _QUOTES.get(line[0]) == line[-1]:
            line = line[1:-1]
    return line


def clean_claim_line(line: str) -> str:
    """One line of an extraction output without its wrappers, as ``parse_claims`` reads it: bullets and
    list numbers, a ``Claim 1:`` label, markdown emphasis and surrounding quotes removed."""
    return _strip_wrappers(_LABEL.sub("", _strip_wrappers(line)))


def parse_claims(text: str) -> list[str]:
    """Claims from one extraction output: one per line, cleaned; [] for the sentinel or junk.

    Bullets (``-``, ``*``, ``•``, ``1.``, ``(2)``, ``[3]``), ``Claim 1:`` labels, markdown emphasis
    and surrounding quotes are removed; ``<SOS>``/``<EOS>`` markers are dropped; blank lines,
    headers (a line ending with ``:``), chatter ("Sure, here are...", "Note: ...") and lines with
    fewer than two words are skipped. A line saying there is no verifiable claim ("No verifiable
    claim.", "There are no verifiable claims in this sentence", "None") is skipped, other lines
    are kept. Parsing stops at a line that starts a new prompt section ("Question:"), which is the
    model writing a new example rather than answering.
    """
    if not isinstance(text, str):
        return []
    out: list[str] = []
    for raw in text.replace("\r", "\n").split("\n"):
        line = raw.replace("<SOS>", "").replace("<EOS>", "").strip()
        if not line:
            continue
        if _ECHO.match(line):
            break
        line = clean_claim_line(line)
        if not line or line.endswith(":") or _META.match(line):
            continue
        if _SENTINEL.search(line.rstrip(".!")):
            continue
        if len(_WORD.findall(line)) < 2:
            continue
        out.append(line)
    return out


def claim_key(claim: str) -> str:
    """The dedupe key: case-folded, punctuation as spaces, whitespace collapsed."""
    return " ".join(_WORD.findall(claim.casefold()))


def dedupe_claims(claims: Sequence[str]) -> list[int]:
    """Indices of the first occurrence of each distinct claim (by ``claim_key``), in order."""
    seen: set[str] = set()
    keep: list[int] = []
    for i, c in enumerate(claims):
        k = claim_key(c)
        if k and k not in seen:
            seen.add(k)
            keep.append(i)
    return keep


# --- verification --------------------------------------------------------------------------------

def _clip(text: str, max_chars: int) -> str:
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    cut = text[:max_chars].rsplit(" ", 1)[0] or text[:max_chars]
    return cut + " ..."


def format_evidence(passages: Sequence[str], max_chars: int = 1200) -> str:
    """Passages numbered ``[1] ...``, each clipped at a word boundary to ``max_chars`` characters.

    Raises:
        ConfigError: ``max_chars`` < 1.
    """
    check_range("max_chars", max_chars, low=1)
    return "\n\n".join(f"[{i}] {_clip(p, max_chars)}" for i, p in enumerate(passages, 1))


def verification_prompt(claim: str, passages: Sequence[str], *, ternary: bool = False,
                        max_chars: int = 1200, version: str = VERIFY_VERSION) -> ChatPrompt:
    """The verification prompt (template ``version``, or its ternary sibling) for one claim and its evidence."""
    return verification_template(ternary, version).render(claim=claim.strip(),
                                                          evidence=format_evidence(passages, max_chars))


def sentence_evidence(evidence: Sequence[Sequence[str]], sentence_of: Sequence[int], k: int) -> list[list[str]]:
    """One evidence list per sentence, shared by its claims: their passages merged by rank, at most ``k``.

    Every claim's best passage comes first (in claim order), then every claim's second, and so on;
    a passage already taken is not taken again. A sentence with no more claims than ``k`` so holds
    each claim's best passage.

    Args:
        evidence: per claim, its passages, best first.
        sentence_of: per claim, the index of its sentence.
        k: most passages per sentence.

    Returns:
        Per claim, its sentence's list (the same list for every claim of one sentence).

    Raises:
        ConfigError: ``k`` < 1, or the two sequences differ in length.
    """
    check_range("k", k, low=1)
    if len(evidence) != len(sentence_of):
        raise ConfigError(f"{len(evidence)} evidence lists for {len(sentence_of)} claims")
    members: dict[int, list[int]] = {}
    for j, s in enumerate(sentence_of):
        members.setdefault(s, []).append(j)
    merged: dict[int, list[str]] = {}
    for s, claims in members.items():
        out: list[str] = []
        depth = max(len(evidence[j]) for j in claims)
        for rank in range(depth):
            for j in claims:
                if rank < len(evidence[j]) and evidence[j][rank] not in out and len(out) < k:
                    out.append(evidence[j][rank])
        merged[s] = out
    return [merged[s] for s in sentence_of]


@dataclass(frozen=True)
class VerdictReading:
    """One claim's verdict from the verifier.

    Attributes:
        verdict: supported, unsupported, contradicted (ternary only), or unverified (no reading).
        p_supported: P(yes) among the candidate tokens; None when unverified.
        mass: probability mass on the candidate tokens (confidence).
        error: why the claim is unverified.
    """

    verdict: Verdict
    p_supported: float | None
    mass: float
    error: str | None = None


def read_verdict(token_probs: Mapping[str, float], *, ternary: bool = False, min_mass: float = DEFAULT_MIN_MASS,
                 top_k: int | None = None) -> VerdictReading:
    """Read a verification prompt's answer from the engine's candidate-token probabilities.

    The verdict is the most probable candidate (a tie is not support); ``no`` means unsupported,
    or contradicted in the ternary prompt, where ``unknown`` means unsupported.
    """
    tmpl = verification_template(ternary)
    parsed = parse_score(token_probs, tmpl, min_mass=min_mass, top_k=top_k)
    if parsed.error is not None or parsed.value is None:
        return VerdictReading("unverified", None, parsed.mass, parsed.error or "no verdict")
    p = parsed.probs
    best = max(tmpl.score_tokens, key=lambda t: (p[t], t != "yes"))  # ties go against "yes"
    verdict: Verdict = "supported" if best == "yes" else ("contradicted" if ternary and best == "no" else "unsupported")
    return VerdictReading(verdict, parsed.value, parsed.mass)


_TEXT_VERDICTS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bnot\s+(?:be\s+)?supported\b|\bunsupported\b|\bdoes\s+not\s+support\b"), "unsupported"),
    (re.compile(r"\bno\b|\bfalse\b"), "no"),
    (re.compile(r"\bcontradict\w*|\brefut\w*"), "contradicted"),
    (re.compile(r"\bunknown\b|\bunclear\b|\bnot\s+enough\b|\binsufficient\b|\bcannot\s+be\s+(?:determined|verified)\b"
                r"|\bneither\b"), "unsupported"),
    (re.compile(r"\bsupported\b|\bsupports\b|\byes\b|\btrue\b"), "supported"),
)


def parse_verdict_text(text: str, *, ternary: bool = False) -> VerdictReading:
    """A verdict from generated text ("Yes.", "**Unsupported**", "The claim is not supported"), for
    engines that generate rather than score tokens.

    The earliest verdict word wins; at one position the longer phrase wins ("not supported" over
    "not"). A bare "no"/"false" means unsupported, or contradicted with ``ternary`` (as the ternary
    prompt defines it); "contradicted" is unsupported unless ``ternary``.
    """
    if not isinstance(text, str):
        return VerdictReading("unverified", None, 0.0, f"verdict is {type(text).__name__}, not str")
    low = text.casefold()
    hits: list[tuple[int, int, str]] = []
    for pat, kind in _TEXT_VERDICTS:
        m = pat.search(low)
        if m:
            hits.append((m.start(), -(m.end() - m.start()), kind))
    if not hits:
        return VerdictReading("unverified", None, 0.0, f"no verdict in {text[:60]!r}")
    kind = min(hits)[2]
    if kind == "supported":
        return VerdictReading("supported", 1.0, 1.0)
    if ternary and kind in ("no", "contradicted"):
        return VerdictReading("contradicted", 0.0, 1.0)
    return VerdictReading("unsupported", 0.0, 1.0)


# --- scores --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ClaimScores:
    """An answer's factuality scores, or why there are none.

    Attributes:
        precision: supported / claims (the rubric's raw value).
        recall_at_k: min(supported / K, 1).
        f1_at_k: 2PR / (P + R); 0 when nothing is supported.
        error: the reason there is no score (no verifiable claims).
    """

    precision: float | None
    recall_at_k: float | None
    f1_at_k: float | None
    error: str | None = None


def factuality_scores(n_supported: int, n_claims: int, k: int = 10) -> ClaimScores:
    """Precision and VeriScore's F1@K; zero claims give an explicit reason, never a division by zero.

    Raises:
        ConfigError: negative counts, more supported than claims, or ``k`` < 1.
    """
    check_range("k", k, low=1)
    if n_claims < 0 or n_supported < 0 or n_supported > n_claims:
        raise ConfigError(f"need 0 <= n_supported <= n_claims, got {n_supported} / {n_claims}")
    if n_claims == 0:
        return ClaimScores(None, None, None, NO_CLAIMS_REASON)
    precision = n_supported / n_claims
    recall = min(n_supported / k, 1.0)
    f1 = 0.0 if n_supported == 0 else 2 * precision * recall / (precision + recall)
    return ClaimScores(precision, recall, f1)


# --- the claims side table -----------------------------------------------------------------------

@dataclass(frozen=True)
class CheckedClaim:
    """One claim of one answer with its evidence and verdict (a row of the claims side table)."""

    claim: str
    sentence_index: int
    evidence: str
    verdict: Verdict
    p_supported: float | None
    error: str | None = None


def claims_to_json(claims: Sequence[CheckedClaim]) -> str:
    """Compact JSON of an answer's checked claims (kept in the Score's ``claims`` extra)."""
    return json.dumps([asdict(c) for c in claims], ensure_ascii=False, separators=(",", ":"))


def claims_from_json(text: str | None) -> list[CheckedClaim]:
    if not text:
        return []
    return [CheckedClaim(**d) for d in json.loads(text)]


def claims_table(answer_ids: Sequence[str], scores: Sequence[Score]) -> "pa.Table":
    """The claims side table (one row per claim) from factuality ``Score``s, for ``claims.parquet``.

    Args:
        answer_ids: the answers' ids, aligned with ``scores``.
        scores: the factuality scorer's ``Score`` objects (their ``claims`` extra).

    Returns:
        A ``pyarrow.Table`` with columns answer_id, claim_index, sentence_index, claim, evidence,
        verdict, p_supported, error (typed even when empty).
    """
    import pyarrow as pa

    if len(answer_ids) != len(scores):
        raise ConfigError(f"{len(answer_ids)} answer ids for {len(scores)} scores")
    schema = pa.schema([("answer_id", pa.string()), ("claim_index", pa.int32()), ("sentence_index", pa.int32()),
                        ("claim", pa.string()), ("evidence", pa.string()), ("verdict", pa.string()),
                        ("p_supported", pa.float64()), ("error", pa.string())])
    rows = []
    for aid, s in zip(answer_ids, scores):
        claims = s.extras.get("claims")
        for j, c in enumerate(claims_from_json(claims if isinstance(claims, str) else None)):
            rows.append({"answer_id": aid, "claim_index": j, "sentence_index": c.sentence_index, "claim": c.claim,
                         "evidence": c.evidence, "verdict": c.verdict, "p_supported": c.p_supported,
                         "error": c.error})
    return pa.Table.from_pylist(rows, schema=schema)


def count_no_claims(scores: Sequence[Score]) -> int:
    """How many factuality scores are the 0.0 of an answer with no verifiable claim (v2's rule)."""
    return sum(1 for sc in scores if sc.raw is not None and sc.extras.get("n_claims") == 0)
