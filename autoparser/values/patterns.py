"""Regular expressions from tool schemas (``pattern``, ``patternProperties``): untrusted, so bounded.

A schema's pattern is a client's regex run on a model's output. Three costs are bounded:

* **compiling**: the ``regex`` module expands counted repetitions, so ``(a{1000}){1000}`` takes
  seconds to compile; a pattern may be at most :data:`MAX_PATTERN_CHARS` long and expand to at
  most :data:`MAX_PATTERN_SIZE` steps (:func:`pattern_size`: counted repetitions multiply what
  they repeat, alternatives add up), and a request's patterns together at most
  :data:`MAX_TOTAL_PATTERN_SIZE`;
* **the first search**: a literal run in a pattern gets a search table whose construction grows
  with the cube of its length and is not covered by the search's timeout (3,000 characters:
  16 s); a literal run may be at most :data:`MAX_LITERAL_RUN` characters;
* **matching**: backtracking is exponential in the worst case (``^(a+)+$``); every search runs
  under the ``regex`` module's ``timeout``, out of a :class:`Deadline` shared by one message's
  checks, and a search that cannot finish in it is reported as not checkable (``None``), never
  waited for.

:func:`pattern_problem` says why a pattern is refused (checked at ``apply()``, where the request
is refused with a ``SchemaError``); :func:`compile_pattern` compiles one (cached);
:func:`search` runs one under a deadline.
"""

from __future__ import annotations

import functools
import time

import regex

MAX_PATTERN_CHARS = 1000
MAX_PATTERN_SIZE = 10_000
MAX_TOTAL_PATTERN_SIZE = 100_000
MAX_LITERAL_RUN = 256
SEARCH_TIMEOUT = 0.05        # seconds, at most, for one search (the regex module overshoots it up to 4x)
MESSAGE_BUDGET = 0.25        # seconds for all the pattern searches of one message's calls

_NOT_LITERAL_ESCAPES = frozenset("dDwWsSbBAZzGhHvVXRKpPNmM")


class Deadline:
    """A time budget shared by several searches (one message's calls)."""

    __slots__ = ("end",)

    def __init__(self, seconds: float = MESSAGE_BUDGET) -> None:
        self.end = time.monotonic() + seconds

    def remaining(self) -> float:
        return self.end - time.monotonic()


def _class_end(p: str, i: int) -> int:
    """The index after the character class that starts at ``p[i] == '['``."""
    n = len(p)
    j = i + 1
    if j < n and p[j] == "^":
        j += 1
    if j < n and p[j] == "]":
        j += 1
    depth = 1
    while j < n:
        ch = p[j]
        if ch == "\\":
            j += 2
            continue
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return n


def _escape_end(p: str, i: int) -> int:
    """The index after the escape that starts at ``p[i] == '\\\\'`` (``\\p{L}``, ``\\x41``, ``\\n``)."""
    j = i + 2
    if j - 1 < len(p) and p[j - 1] in "pPN" and j < len(p) and p[j] == "{":
        k = p.find("}", j)
        return len(p) if k < 0 else k + 1
    return j


def _quantifier(p: str, i: int) -> tuple[int, int] | None:
    """``(how many times at most, the index after)`` for a quantifier at ``i``, or None."""
    ch = p[i]
    if ch in "*+?":
        end = i + 1
        mult = 1
    elif ch == "{":
        m = regex.match(r"\{(\d*)(?:,(\d*))?\}", p[i:i + 40])
        if m is None or not (m.group(1) or m.group(2)):
            return None
        low = int(m.group(1) or 0)
        high = int(m.group(2)) if m.group(2) else low
        mult = max(low, high, 1)
        end = i + m.end()
    else:
        return None
    if end < len(p) and p[end] in "?+":     # lazy or possessive
        end += 1
    return mult, end


def pattern_size(p: str) -> tuple[int, int]:
    """(the steps ``p`` expands to, its longest literal run), both estimated from above: a
    counted repetition multiplies what it repeats, a group's alternatives add up, and a
    character class counts as a literal character."""
    frames: list[list[int]] = [[0, 0]]     # per group: [alternatives so far, this alternative]
    last = 0                               # size of the last atom (what a quantifier repeats)
    run = longest = 0
    i, n = 0, len(p)
    while i < n:
        q = _quantifier(p, i)
        if q is not None:
            mult, i = q
            frames[-1][1] += last * (mult - 1)
            last *= mult
            if run:
                run -= 1               # the repeated atom is no fixed literal
            longest = max(longest, run)
            run = 0
            continue
        ch = p[i]
        literal = False
        if ch == "\\":
            end = _escape_end(p, i)
            literal = i + 1 < n and p[i + 1] not in _NOT_LITERAL_ESCAPES
            size = 1
        elif ch == "[":
            end, literal, size = _class_end(p, i), True, 1
        elif ch == "(":
            end = i + 1
            if p.startswith("(?#", i):
                k = p.find(")", i)
                i = n if k < 0 else k + 1
                continue
            m = regex.match(r"\(\?[a-zA-Z\-^]*\)", p[i:i + 20])
            if m is not None:              # inline flags
                i += m.end()
                continue
            frames.append([0, 0])
            longest, run = max(longest, run), 0
            i = end
            continue
        elif ch == ")" and len(frames) > 1:
            alts, cur = frames.pop()
            last = alts + cur
            frames[-1][1] += last
            longest, run = max(longest, run), 0
            i += 1
            continue
        elif ch == "|":
            frames[-1][0] += frames[-1][1]
            frames[-1][1] = 0
            longest, run, last = max(longest, run), 0, 0
            i += 1
            continue
        else:
            end = i + 1
            literal = ch not in ".^$"
            size = 0 if ch in "^$" else 1
        last = size
        frames[-1][1] += size
        if literal:
            run += 1
        else:
            longest, run = max(longest, run), 0
        i = end
    while len(frames) > 1:
        alts, cur = frames.pop()
        frames[-1][1] += alts + cur
    return frames[0][0] + frames[0][1], max(longest, run)


def pattern_problem(p: str) -> str | None:
    """Why the pattern ``p`` is refused (too long, too large once expanded, a literal run too long
    to search, not a regular expression), or None."""
    if len(p) > MAX_PATTERN_CHARS:
        return f"the pattern is {len(p)} characters long, more than the limit of {MAX_PATTERN_CHARS}"
    size, run = pattern_size(p)
    if size > MAX_PATTERN_SIZE:
        return f"the pattern expands to about {size} steps, more than the limit of {MAX_PATTERN_SIZE}"
    if run > MAX_LITERAL_RUN:
        return f"the pattern holds a literal run of {run} characters, more than the limit of {MAX_LITERAL_RUN}"
    try:
        compile_pattern(p)
    except (regex.error, ValueError, OverflowError, RecursionError) as e:
        return f"the pattern is not a regular expression ({e})"
    return None


@functools.lru_cache(maxsize=1024)
def compile_pattern(p: str) -> regex.Pattern[str]:
    """``p`` compiled (cached); raises ``regex.error`` for what is no regular expression. Call it
    only on patterns :func:`pattern_problem` accepts."""
    return regex.compile(p, cache_pattern=False)


def search(pattern: regex.Pattern[str], text: str, deadline: Deadline) -> bool | None:
    """Whether ``pattern`` matches somewhere in ``text`` (JSON Schema's ``pattern``), or None when
    that cannot be told within the deadline."""
    left = min(deadline.remaining(), SEARCH_TIMEOUT)
    if left <= 0:
        return None
    try:
        return pattern.search(text, timeout=left) is not None
    except TimeoutError:
        return None


__all__ = ["MAX_LITERAL_RUN", "MAX_PATTERN_CHARS", "MAX_PATTERN_SIZE", "MAX_TOTAL_PATTERN_SIZE", "Deadline",
           "compile_pattern", "pattern_problem", "pattern_size", "search"]
