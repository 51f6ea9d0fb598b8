"""Where a claim-extraction completion starts looping, and the claims it wrote before that.

A small model asked for the claims of one sentence lists a few, then repeats one ("1. X 2. X 3.
X ..."), counts ("2. 3. 4. ...") or stutters ("1.1.1.1...") until the token budget; the repeats
cost most of the generated tokens and are thrown away afterwards (docs/factuality.md). The stop
rule here (``LOOP_RULE``) lets the engine stop such a completion while it is generated, and
``claims_until_loop`` reads the same claims from whatever text the engine returned: the claims
depend only on the text up to the point where the rule fires, so stopping there, one token
later, or never gives the same claims.

A completion is read as *units*: its lines, and inside a line the items of an inline numbered
list ("... spices. 3. Season ..."). A unit is known to be complete once the separator after it has
been written. The completion loops at the first of:

- a complete unit that repeats an earlier unit (``unit_key``: case, punctuation, list markers and
  ``<SOS>``/``<EOS>`` ignored);
- the second of two consecutive complete units that have text but no word (a bare count "2.");
- a block of at most ``PERIODIC_MAX`` characters written again and again, at least three times in a
  row and over at least ``PERIODIC_RUN`` characters ("1.1.1.1...", "*X* *X* *X*": a unit that
  never ends).

Pure: no model here; ``rubric.scoring.claims`` has the prompts and the line parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache

from rubric.scoring.claims import LOOP_RULE, claim_key, parse_claims

__all__ = ["LOOP_RULE", "PERIODIC_RUN", "PERIODIC_MAX", "STOP_RULES", "LoopWatch", "claim_units", "unit_key",
           "loop_position", "loops", "claims_until_loop"]

PERIODIC_RUN = 48
PERIODIC_MAX = 80

# An inline list item: whitespace after sentence punctuation (or markdown emphasis, or a <SOS>/<EOS>
# marker), then "3." / "3)" / "(3)" and a space. The whitespace run is the separator; the unit before
# it is complete once the marker's space is written.
_INLINE_ITEM = re.compile(r"(?<=[.!?:;)\]\"'”’>*])[ \t]+(?=\(?\d{1,3}[.)][ \t])")
# List markers, bullets and the prompt's sentence markers at the start of a unit, nested ("1. 2.", "1.1.1").
_LEAD = re.compile(r"^(?:\s*(?:[-*+•·‣◦▪–—>#]+|\(?\d{1,3}(?:\.\d{1,3})*[.):]|\[\d{1,3}\]))+(?=\s|$)\s*")
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
    """What two units must share to be the same claim: ``claim_key`` without list markers and ``<SOS>``/``<EOS>``."""
    text = _MARKERS.sub(" ", unit)
    prev = None
    while text != prev:
        prev = text
        text = _LEAD.sub("", text.strip())
    return claim_key(text)


@cache
def _periodic_patterns() -> tuple[tuple[re.Pattern[str], int], ...]:
    # period p: a block of p characters and enough copies after it to make 3, and PERIODIC_RUN characters
    out = []
    for p in range(1, PERIODIC_MAX + 1):
        copies = max(3, -(-PERIODIC_RUN // p))
        out.append((re.compile(rf"(.{{{p}}})\1{{{copies - 1}}}", re.S), copies * p))
    return tuple(out)


def _periodic_end(text: str) -> int | None:
    """Offset at which ``text`` first ends in a block of <= ``PERIODIC_MAX`` characters written at least
    three times in a row over at least ``PERIODIC_RUN`` characters (the first such prefix's length)."""
    ends = [m.start() + span for pat, span in _periodic_patterns() if (m := pat.search(text))]
    return min(ends, default=None)


def _units_loop(units: list[tuple[str, int | None]], before: int | None = None) -> tuple[int | None, int]:
    """(offset at which a complete unit shows the loop or None, how many units come before it).

    Only units known complete at or before ``before`` (all complete ones when None) are judged.
    """
    seen: set[str] = set()
    empty_run = 0
    for i, (unit, done_at) in enumerate(units):
        if done_at is None or (before is not None and done_at > before):
            return None, i
        key = unit_key(unit)
        if not key:
            empty_run = empty_run + 1 if unit.strip() else 0
            if empty_run >= 2:
                return done_at, i
            continue
        empty_run = 0
        if key in seen:
            return done_at, i
        seen.add(key)
    return None, len(units)


def _first_loop(text: str) -> tuple[int | None, int]:
    """(offset at which the rule fires or None, how many units come before the loop)."""
    units = claim_units(text)
    periodic = _periodic_end(text)
    fired, n_before = _units_loop(units, periodic)
    if fired is not None:
        return fired, n_before
    if periodic is not None:
        # units complete before the run fired are kept; the one the run is in is not
        return periodic, n_before
    return None, len(units)


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
                           # from a few characters back: decoding may rewrite the last one (a split UTF-8 byte)
                           for e in range(max(1, since - 3), len(text) + 1) for p, span in self._SPAN.items())
        self.fired = periodic or _units_loop(claim_units(text))[0] is not None
        return self.fired


def claims_until_loop(text: str, *, cut: bool) -> list[str]:
    """The claims of a completion under the stop rule, read with ``parse_claims`` one unit at a time.

    Units before the loop are read; the unit the loop is in, and everything after, is not. Without a
    loop every unit is read, except the last when ``cut`` (generation stopped at the token budget, so
    the last unit is a fragment). A unit that starts a new prompt section ("Question: ...") ends the
    reading, as in ``parse_claims``.

    Args:
        text: the completion as the engine returned it (stopped by the rule or not).
        cut: the engine stopped it at the token budget.
    """
    fired, n_units = _first_loop(text)
    units = claim_units(text)
    if fired is None and cut:
        n_units -= 1
    out: list[str] = []
    for unit, _ in units[:n_units]:
        if re.match(r"^\s*(?:question|excerpt|context|sentence|answer|evidence)\s*:", unit, re.I):
            break
        # parse_claims cleans one line: bullets, labels, quotes, chatter, the sentinel, one-word lines
        out.extend(parse_claims(_MARKERS.sub("", unit)))
    return out


#: Stop rules engines run while generating, by name: a factory of one sequence's check, which is
#: called with the sequence's text after each new token (the text only grows) and says "stop now".
STOP_RULES: dict[str, Callable[[], Callable[[str], bool]]] = {LOOP_RULE: LoopWatch}
