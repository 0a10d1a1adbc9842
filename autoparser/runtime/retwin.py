"""The standard ``re`` twin of an engine pattern, for the whole-text reader (:mod:`.whole`).

The engine compiles its markers with the ``regex`` module (it needs partial matches on a
stream); on a whole text a complete match is all :mod:`.whole` asks for, and ``re`` finds it
2-3 times faster on these short patterns (a match in place, or a search for a literal start). :func:`twin` gives an ``re`` pattern only when the
source means the same to both modules, read conservatively: literals, escaped characters,
character classes, groups (non-capturing, named, lookarounds, atomic), alternation, the
quantifiers both spell alike; ``\\s`` spelled out as the ``regex`` module reads it (Unicode
White_Space: ``re``'s ``\\s`` also takes ``\\x1c``-``\\x1f``). Anything else (inline flags,
``\\w``, ``\\b``, ``\\d``, back references, ``regex``-only syntax, a pattern ``re`` warns about
or refuses) keeps the ``regex`` pattern.
"""

from __future__ import annotations

import re
import warnings

import regex

# regex's \s: Unicode White_Space
_SPACE = "\\t\\n\\x0b\\x0c\\r \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
_ESCAPES_KEPT = frozenset("ntrfvAZ")           # escapes both modules read alike (\x and \u below)
_GROUPS = ("(?:", "(?=", "(?!", "(?<=", "(?<!", "(?P<", "(?>")
_QUANTIFIER = re.compile(r"\{\d*(?:,\d*)?\}")
_DEFAULT_FLAGS = regex.compile("").flags


def _translate(src: str) -> str | None:
    """``src`` with ``\\s`` spelled out, or None when it holds anything not known to mean the same."""
    out: list[str] = []
    i, n, in_class = 0, len(src), False
    while i < n:
        c = src[i]
        if c == "\\":
            if i + 1 >= n:
                return None
            e = src[i + 1]
            if e == "s":
                out.append(_SPACE if in_class else "[" + _SPACE + "]")
                i += 2
                continue
            if e == "x" and re.fullmatch(r"[0-9a-fA-F]{2}", src[i + 2:i + 4]):
                out.append(src[i:i + 4])
                i += 4
                continue
            if e == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", src[i + 2:i + 6]):
                out.append(src[i:i + 6])
                i += 6
                continue
            if e.isalnum() and e not in _ESCAPES_KEPT:
                return None
            out.append(src[i:i + 2])
            i += 2
            continue
        if in_class:
            if c == "[":
                return None
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if src.startswith("[^]", i) or src.startswith("[]", i):
                return None
        elif c == "(" and src.startswith("(?", i):
            if not src.startswith(_GROUPS, i) or src.startswith("(?P<=", i):
                return None
        elif c == "{":
            q = _QUANTIFIER.match(src, i)
            if q is None or q.group() == "{}" or i == 0:
                return None
            out.append(q.group())
            i = q.end()
            continue
        out.append(c)
        i += 1
    return None if in_class else "".join(out)


_LITERAL_START = re.compile(r"(?:\(\?P<\w+>)?[^\\\[\](){}|?*+.^$]")


def twin(pat: regex.Pattern[str] | None, search: bool = False) -> re.Pattern[str] | regex.Pattern[str] | None:
    """An ``re`` pattern that matches what ``pat`` matches, where, with the same groups; ``pat``
    itself when no such twin is known. ``search``: the twin is to search, not to match in place:
    only a pattern that starts with a literal and has no alternative gets one (``re`` scans for
    such a prefix quickly, but tries an alternation at every position where ``regex`` skips
    ahead)."""
    if pat is None or pat.flags != _DEFAULT_FLAGS:
        return pat
    if search and ("|" in pat.pattern or not _LITERAL_START.match(pat.pattern)):
        return pat
    src = _translate(pat.pattern)
    if src is None:
        return pat
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            out = re.compile(src)
    except (re.error, Warning, RecursionError, OverflowError):
        return pat
    return out if out.groupindex == pat.groupindex and out.groups == pat.groups else pat


__all__ = ["twin"]
