"""Where a claim-extraction completion starts looping, and the claims it wrote before that.

A small model asked for the claims of one sentence lists a few, then repeats one ("1. X 2. X 3.
X ..."), counts ("2. 3. 4. ...") or stutters ("1.1.1.1...") until the token budget; the repeats
cost most of the generated tokens and are thrown away afterwards (docs/factuality.md). The stop
rule here (``LOOP_RULE``) lets the engine stop such a completion while it is generated, and
``claims_until_loop`` reads the same claims from whatever text the engine returned: the claims
depend only on the text up to the point where the rule fires, so stopping there, one token
later, or never gives the same claims. Engines run the rule through ``STOP_RULES`` (vLLM's logits
processor ``models.llm.vllm_stop``, transformers' stopping criterion in ``models.llm.hf_engine``),
whose check (``LoopWatch``) calls the same ``_scan`` as the reader: one rule, one place.

A completion is read as *units*: its lines, and inside a line the items of an inline numbered
list ("... spices. 3. Season ..."). A unit is known to be complete once the separator after it has
been written. Units are judged in order, complete ones only:

- A *blank* unit, with no letter or digit once ``<SOS>``/``<EOS>`` are taken out (an empty line,
  ``---``, ``...``, a line of dots, ``**``), is ignored: it is not read, not a repeat, and not the
  unit before the next one.
- A *bare count*, a list marker and nothing else ("2.", "3)", "4. <SOS>"), is not read either; the
  ``BARE_COUNTS``-th (third) in a row, blank units aside, is a loop ("2. 3. 4. ..." counting); fewer
  are a stutter ("1. 3.", then the claims) and ignored like blank units.
- Every other unit has a key (``unit_key``: case, punctuation, list markers, ``Claim 1:`` labels
  and ``<SOS>``/``<EOS>`` ignored). Its *previous unit* is the last such unit before it; a unit
  *repeats* when an earlier one has its key.
- The completion loops at the first unit that repeats its previous unit (the same claim twice in
  a row), or that is the *second repeat* of a claim: a unit
  ``parse_claims`` reads a claim from, repeating an earlier unit, when one such repeat came before
  it (the same claim seen a third time, or another earlier claim repeated after one repeat already).
- A repeat that is neither is *skipped*: it is not read (the claim is not kept twice) and the
  reading goes on. That is the first repeat of a claim further back ("A, B, A, C"), and any repeat
  further back of a unit that is no claim (a header such as "Claims in the excerpt:", chatter, the
  sentinel), which is not counted either: a model that writes a header before each
  claim repeats the header without looping.
- Inside a unit, a block of at most ``PERIODIC_MAX`` characters that holds a letter or digit,
  written again and again, at least three times in a row and over at least ``PERIODIC_RUN``
  characters ("1.1.1.1...", "*X* *X* *X*": a unit that never ends), is a loop where the run is
  complete; runs of punctuation and spaces alone (a claim followed by 50 dots) are not.

So on text that does not loop (no claim twice in a row, at most one repeat, every line one claim)
the claims are ``parse_claims``'s, line by line, without the repeat (``tests/rubric/scoring/test_claim_stop.py``
checks ``claims_until_loop == parse_claims`` on generated loop-free lists).

Pure: no model here; ``rubric.scoring.claims`` has the prompts and the line parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache

from rubric.scoring.claims import LOOP_RULE, claim_key, clean_claim_line, parse_claims

__all__ = ["LOOP_RULE", "PERIODIC_RUN", "PERIODIC_MAX", "BARE_COUNTS", "STOP_RULES", "LoopWatch", "claim_units", "unit_key",
           "loop_position", "loops", "claims_until_loop", "LOSS_REASONS", "claims_v3_loses"]

PERIODIC_RUN = 48
PERIODIC_MAX = 80
BARE_COUNTS = 3

# An inline list item: whitespace after sentence punctuation (or markdown emphasis, or a <SOS>/<EOS>
# marker), then "3." / "3)" / "(3)" and a space. The whitespace run is the separator; the unit before
# it is complete once the marker's space is written.
_INLINE_ITEM = re.compile(r"(?<=[.!?:;)\]\"'”’>*])[ \t]+(?=\(?\d{1,3}[.)][ \t])")
# One list marker or bullet at the start of a unit ("2.", "1.1.1.3:", "(4)", "[5]", "-"), followed by a space
# or the end; ``unit_key`` takes them off one at a time ("1. 2. X"). One at a time, because a repeated
# group of markers with optional spaces between them backtracks exponentially on "1.1.1.1...1x".
_LEAD = re.compile(r"^\s*(?:[-*+•·‣◦▪–—>#]+|\(?\d{1,3}(?:\.\d{1,3})*[.):]|\[\d{1,3}\])(?=\s|$)\s*")
_MARKERS = re.compile(r"<SOS>|<EOS>", re.I)


def claim_units(text: str) -> list[tuple[str, int | None]]:
    """The units of a completion, in order, each with the offset at which it is known complete.

    The offset is the length of the shortest prefix of ``text`` that shows the separator after the
    unit (its newline, or the space after the next inline item's marker); ``None`` for the last
    unit, which nothing follows yet.
    """
    units: list[tuple[str, int | None]] = []
    pos = 0
    lines = text.split("\n")
    for n, line in enumerate(lines):
        cur = 0
        for m in _INLINE_ITEM.finditer(line):
            # the lookahead's marker ends with one space or tab: the unit is complete once that is written
            marker = re.match(r"\(?\d{1,3}[.)][ \t]", line[m.end():])
            units.append((line[cur:m.start()], pos + m.end() + (marker.end() if marker else 0)))
            cur = m.end()
        last = n == len(lines) - 1
        units.append((line[cur:], None if last else pos + len(line) + 1))
        pos += len(line) + 1
    return units


def unit_key(unit: str) -> str:
    """What two units must share to be the same claim: ``claim_key`` without list markers, ``Claim 1:``
    labels and the other wrappers ``parse_claims`` takes off (``clean_claim_line``), and ``<SOS>``/``<EOS>``."""
    text = _MARKERS.sub(" ", unit)
    prev = None
    while text != prev:
        prev = text
        text = clean_claim_line(_LEAD.sub("", text.strip()))
    return claim_key(text)


_ALNUM = re.compile(r"[^\W_]")


def _blank(unit: str) -> bool:
    """A unit with no letter or digit (``---``, ``...``, an empty line): ignored by the rule and the reading."""
    return _ALNUM.search(_MARKERS.sub("", unit)) is None


@lru_cache(maxsize=4096)
def _is_claim(unit: str) -> bool:
    """``parse_claims`` reads a claim from the unit (not a header, chatter, the sentinel or a bare count)."""
    return bool(parse_claims(_MARKERS.sub("", unit)))


@cache
def _periodic_patterns() -> tuple[tuple[re.Pattern[str], int], ...]:
    # period p: a block of p characters holding a letter or digit, and enough copies after it to make 3,
    # and PERIODIC_RUN characters (a run of dots or dashes is punctuation, not a loop)
    out = []
    for p in range(1, PERIODIC_MAX + 1):
        copies = max(3, -(-PERIODIC_RUN // p))
        out.append((re.compile(rf"((?=.{{0,{p - 1}}}[^\W_]).{{{p}}})\1{{{copies - 1}}}", re.S), copies * p))
    return tuple(out)


def _periodic_end(text: str) -> int | None:
    """Offset at which ``text`` first ends in a block of <= ``PERIODIC_MAX`` characters with a letter or
    digit, written at least three times in a row over at least ``PERIODIC_RUN`` characters (the first
    such prefix's length)."""
    ends = [m.start() + span for pat, span in _periodic_patterns() if (m := pat.search(text))]
    return min(ends, default=None)


def _scan(units: list[tuple[str, int | None]], before: int | None = None,
          final: bool = False) -> tuple[int | None, list[int]]:
    """The unit rule: (offset at which a complete unit shows the loop or None, the units to read).

    Only units known complete at or before ``before`` (all complete ones when None) are judged;
    with ``final`` the last unit counts as complete (the text is finished: EOS or a stop string).
    The units to read are the judged units before the loop, less blank ones and skipped repeats.
    """
    seen: set[str] = set()
    prev: str | None = None
    repeats = counts = 0
    read: list[int] = []
    for i, (unit, done_at) in enumerate(units):
        if done_at is None and final and i == len(units) - 1:
            done_at = -1  # complete, but no offset shows it: nothing fires on an engine there
        if done_at is None or (before is not None and done_at > before):
            break
        if _blank(unit):
            continue
        key = unit_key(unit)
        if not key:  # a bare count: the third in a row is counting, fewer a stutter ("1. 3.")
            counts += 1
            if counts >= BARE_COUNTS:
                return (done_at if done_at >= 0 else None), read
            continue
        counts = 0
        if key in seen:
            claim = _is_claim(unit)
            if key == prev or (claim and repeats >= 1):
                return (done_at if done_at >= 0 else None), read
            repeats += claim  # a duplicate further back: skipped, not read twice
        else:
            seen.add(key)
            read.append(i)
        prev = key
    return None, read


def _first_loop(text: str, final: bool = False) -> tuple[int | None, list[tuple[str, int | None]], list[int]]:
    """(offset at which the rule fires or None, the units, the indices of the units to read)."""
    units = claim_units(text)
    periodic = _periodic_end(text)
    # the unit a periodic run is in is never complete, however the text ended
    fired, read = _scan(units, periodic, final and periodic is None)
    if fired is None and periodic is not None:
        # units complete before the run fired are read; the one the run is in is not
        fired = periodic
    return fired, units, read


def loop_position(text: str) -> int | None:
    """The length of the shortest prefix of ``text`` on which the completion is seen looping, or None."""
    return _first_loop(text)[0]


def loops(text: str) -> bool:
    """The stop rule: True once the completion generated so far loops (what engines call each step)."""
    return _first_loop(text)[0] is not None


class LoopWatch:
    """``loops`` for one growing completion, called after each new token: cheaper than ``loops`` on
    the whole text each time, with the same answers.

    A periodic run that fires on the new text must end in the new characters, so only those end
    points are tried (one slice comparison per period); units are judged again (they are few).
    """

    _SPAN = {p: max(3, -(-PERIODIC_RUN // p)) * p for p in range(1, PERIODIC_MAX + 1)}

    def __init__(self) -> None:
        self.seen = 0
        self.fired = False

    def __call__(self, text: str) -> bool:
        if self.fired:
            return True
        since, self.seen = self.seen, len(text)
        if len(text) - since > 64:  # a long jump (the first call, or several tokens at once)
            periodic = _periodic_end(text[max(0, since - 3 * PERIODIC_MAX):]) is not None
        else:
            periodic = any(e >= span and text[e - span:e - p] == text[e - span + p:e]
                           and _ALNUM.search(text, e - p, e) is not None
                           # from a few characters back: decoding may rewrite the last one (a split UTF-8 byte)
                           for e in range(max(1, since - 3), len(text) + 1) for p, span in self._SPAN.items())
        self.fired = periodic or _scan(claim_units(text))[0] is not None
        return self.fired


def claims_until_loop(text: str, *, cut: bool) -> list[str]:
    """The claims of a completion under the stop rule, read with ``parse_claims`` one unit at a time.

    Units before the loop are read, except blank units and skipped repeats; the unit the loop is in,
    and everything after, is not. Without a loop every unit is read, except the last when ``cut``
    (generation stopped at the token budget, so the last unit is a fragment). A unit that starts a
    new prompt section ("Question: ...") ends the reading, as in ``parse_claims``.

    Args:
        text: the completion as the engine returned it (stopped by the rule or not).
        cut: the engine stopped it at the token budget.
    """
    _, units, read = _first_loop(text, final=not cut)
    out: list[str] = []
    for i in read:
        unit = units[i][0]
        if re.match(r"^\s*(?:question|excerpt|context|sentence|answer|evidence)\s*:", unit, re.I):
            break
        # parse_claims cleans one line: bullets, labels, quotes, chatter, the sentinel, one-word lines
        out.extend(parse_claims(_MARKERS.sub("", unit)))
    return out


#: Why a claim v2 reads from a sentence's completion is not among v3's, in the order the reasons are
#: tried (``claims_v3_loses``).
LOSS_REASONS: dict[str, str] = {
    "split": "a numbered list written on one line: v2 read it as one claim, v3 reads its items",
    "cut": "the last line, cut by the token budget (v2 reads it, v3 does not)",
    "renumbered": "a claim v3 keeps, written again under another list number ('1.1.1.3: X' after '1.1.1.2: X')",
    "loop": "written after the completion started looping (v3 stopped there)",
    "text": "the engine wrote other text for the sentence (v3's completion is not a prefix of v2's)",
}


def claims_v3_loses(v2_text: str, v2_cut: bool, v3_text: str, v3_cut: bool) -> dict[str, list[str]]:
    """The claims v2 reads from its completion of one sentence that v3 does not read from its own, by reason.

    v2 reads ``parse_claims(v2_text)``; v3 ``claims_until_loop(v3_text, cut=v3_cut)``; a claim is
    the same claim in both when its ``claim_key`` is. v3's reading applied to v2's own text shows what
    the rule changes (``split``, ``cut``, ``renumbered``, ``loop``: ``LOSS_REASONS``); what is left is
    the engines' texts differing (``text``). Only ``loop`` and ``text`` can be real claims lost.

    Returns:
        reason -> the claims (v2's spelling, in v2's order, repeats once) lost for it; every reason present.
    """
    v3_claims = claims_until_loop(v3_text, cut=v3_cut)
    v3_keys = {claim_key(c) for c in v3_claims}
    v3_units = {unit_key(c) for c in v3_claims}
    units = claim_units(v2_text)
    every_unit = {claim_key(c) for u, _ in units for c in parse_claims(_MARKERS.sub("", u))}
    whole_units = {claim_key(c) for u, _ in (units[:-1] if v2_cut else units) for c in parse_claims(_MARKERS.sub("", u))}
    rule_on_v2 = {claim_key(c) for c in claims_until_loop(v2_text, cut=v2_cut)}
    out: dict[str, list[str]] = {r: [] for r in LOSS_REASONS}
    done: set[str] = set()
    for c in parse_claims(v2_text):
        k = claim_key(c)
        if k in v3_keys or k in done:
            continue
        done.add(k)
        reason = ("split" if k not in every_unit else "cut" if k not in whole_units
                  else "renumbered" if unit_key(c) in v3_units else "loop" if k not in rule_on_v2 else "text")
        out[reason].append(c)
    return out


#: Stop rules engines run while generating, by name: a factory of one sequence's check, which is
#: called with the sequence's text after each new token (the text only grows) and says "stop now".
STOP_RULES: dict[str, Callable[[], Callable[[str], bool]]] = {LOOP_RULE: LoopWatch}
