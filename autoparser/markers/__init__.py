"""Markers as whitespace-tolerant patterns with partial matching at the end of input.

A marker as the template renders it (``"\\n</parameter>\\n"``) becomes a regex
whose whitespace is optional (``</parameter>``), so output that drops or adds a
newline around a marker still parses. The third-party ``regex`` module's
``partial=True`` says when the end of the text could still become a match;
that is the only text a stream parser holds back.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable

import regex

from .definition import (
    BARRED_TOKEN_SOURCE,
    DECORATED,
    SPELLING_CLOSE,
    SPELLING_OPEN,
    namespace_of,
    token_shaped,
)

PARTIAL_OK = True


def tokens(marker: str) -> list[str]:
    """The whitespace-separated pieces of a marker."""
    return marker.split()


WILDCARD = "\x03"   # in an analysed marker: text that varies between renders (attributes, indices)
NAME_WILDCARD = "\x04"   # in an analysed marker: a tool's name written there too (`` to=NAME<|message|>``)
HEADER = "\x05"   # header fields in any order, each optional: words and special tokens (``<|constrain|>json``)
HEADER_MAX = 80


def _token_pattern(token: str) -> str:
    parts = []
    for piece in regex.split(r"(\d+|\x03|\x04|\x05)", token):
        if not piece:
            continue
        if piece == WILDCARD:
            parts.append(r"[^<>\n]*?")
        elif piece == HEADER:
            parts.append(r"(?:[^<>\n{]|<\|\w{1,20}\|>){0," + str(HEADER_MAX) + "}?")
        elif piece == NAME_WILDCARD:
            parts.append(r"[\w.\-]+")
        elif piece.isdigit():
            parts.append(r"\d+")    # call indices differ per call ("functions.NAME:0")
        else:
            parts.append(regex.escape(piece))
    return "".join(parts)


# a special token inside a piece (``:0<|tool_call_argument_begin|>``): models put whitespace around it too
_SPECIAL = regex.compile(f"({BARRED_TOKEN_SOURCE})")
# a code fence glued after other text (``]```): markdown starts a fence on a line of its own
_FENCE = regex.compile(r"(?<=[^`])(?=```)")


@functools.lru_cache(maxsize=4096)
def pattern(marker: str) -> str:
    """Regex source for a marker: its pieces with optional whitespace between them and around the
    special tokens inside them."""
    pieces = [q for t in tokens(marker) for p in _SPECIAL.split(t) for q in _FENCE.split(p) if q]
    return r"\s*".join(_token_pattern(p) for p in pieces)


@functools.lru_cache(maxsize=4096)
def loose(marker: str, names: tuple[str, ...] = ()) -> str:
    """The engine's tolerant pattern for a call marker (never the grammars'): each bracket-decorated
    token in any of the spellings models write (:data:`~.definition.DECORATED`: ``<tool_call>`` for
    ``<|tool_call|>``, ``[TOOL_CALLS] [`` for ``[TOOL_CALLS][``), and a namespace right before a name
    (:func:`~.definition.namespace_of`) left out, only when one of ``names`` follows
    (``to=get_weather`` for ``to=functions.get_weather``). Another namespace is not taken for it:
    templates give built-in tools their own (``to=browser.search`` is no call of a declared ``search``)."""
    pieces = [q for t in tokens(marker) for p in _SPECIAL.split(t) for q in _FENCE.split(p) if q]
    out = []
    for i, piece in enumerate(pieces):
        space = namespace_of(piece) if i == len(pieces) - 1 and names else None
        head = piece[:-len(space) - 1] if space is not None else piece
        src = _respelled(head)
        if space is not None:
            src += "(?:" + regex.escape(space) + r"\.|(?=" + tool_name(names)[len(r"(?<!\w)"):] + r"(?![\w\-]|\.\w)))"
        out.append(src)
    return r"\s*".join(out)



_loose = loose   # (lit_source's parameter of the same name hides it)

def _respelled(piece: str) -> str:
    """A marker piece's pattern, each bracket-decorated token in it in any of its spellings."""
    out, at = [], 0
    for m in DECORATED.finditer(piece):
        out.append(_token_pattern(piece[at:m.start()]))
        word = "".join(r"[▁_]" if part == "▁" else _token_pattern(part) for part in regex.split("(▁)", m.group(1)))
        out.append(SPELLING_OPEN + word + SPELLING_CLOSE)
        at = m.end()
        if at < len(piece):
            out.append(r"\s*")     # "[TOOL_CALLS] [": models space what the template glues
    out.append(_token_pattern(piece[at:]))
    return "".join(out)


_LABELLED = regex.compile(r"(?s)(.*[>\]|｜▷])(\w{1,20})")


def pattern_label_optional(marker: str) -> str:
    """Like :func:`pattern`, but a word glued after the marker's last special token is optional
    (``<|channel>thought``: models also write ``<|channel>`` alone)."""
    m = _LABELLED.fullmatch(marker.strip())
    if m is None:
        return pattern(marker)
    label = m.group(2)
    # without the label, only where the label cannot be coming (a stream holds "<|channel>th" back)
    prefixes = "|".join(regex.escape(label[:i]) for i in range(len(label), -1, -1))
    return pattern(m.group(1)) + r"(?:\s*" + regex.escape(label) + r"|(?!\s*(?:" + prefixes + r")\Z))"


# where a line begins or a marker ends: the start of the output, a line break or a marker's closing bracket
# (``[/THINK]```json``), then at most a little indentation
LINE_START = r"(?<=(?:\A|\n|[>\]|｜])[ \t]{0,8})"


def line_anchor(marker: str, opener: bool) -> str:
    """The anchor a marker of plain text takes around reasoning and the answer: a label (``Thought:``,
    ``Reasoning:``, ``Answer:``, ``:::thinking``, a fence; not token-shaped) is a marker only where a line
    begins or another marker ends (:data:`LINE_START`), so that prose with ``Thought:`` mid-sentence stays
    prose. An opener is written there; a closer only when the template renders it after a line break
    (``⏎Answer:``). "" for a token-shaped marker (``<think>``), which is a marker wherever it is."""
    body = marker.strip()
    if not body or token_shaped(body):
        return ""
    return LINE_START if opener or marker.lstrip(" \t").startswith("\n") else ""


def block_pattern(marker: str, opener: bool) -> str:
    """Regex source for a reasoning block's opener or closer: :func:`pattern` with its :func:`line_anchor`;
    a closer of whitespace alone ends the block at its line breaks (``⏎⏎``: the first blank line,
    whatever spaces it holds). "" for a marker of no text."""
    if not marker.strip():
        breaks = marker.count("\n")
        return "\n" + r"[ \t]*\n" * (breaks - 1) if breaks and not opener else ""
    core = marker.strip()
    if not opener and marker.endswith("\n") and len(core) >= 3 and len(set(core)) == 1 and not core[0].isalnum():
        # a fence's closing line (``~~~``, ``:::``) ends its line: ``~~~get_weather`` opens another fence
        return line_anchor(marker, opener) + pattern(marker) + r"(?=[ \t]*(?:\n|\Z))"
    return line_anchor(marker, opener) + pattern(marker)


_ADJACENT_TAGS = regex.compile(r"(?<=>)(?=<)")


def lit_source(text: str, lead_optional: bool = False, separates: bool = False, lead_required: bool = False,
               loose: tuple[str, ...] | None = None) -> str:
    """Regex source for a literal piece of a layout: its white space is tolerated as a marker's is,
    and the white space it begins or ends with is taken when present (so that a value before or
    after it does not keep it; ``lead_required``: the white space it begins with must be there).
    A literal of white space only is any white space; ``separates``: some (it ends a text that
    runs to it). The readers and the strict parser share it; ``loose`` (the request's tool names, the
    engine only): its tokens in the other spellings models write and a namespace before a name
    optional (:func:`loose`)."""
    core = text.strip()
    if not core:
        return (r"\s+" if separates else r"\s*") if text else ""
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()):]
    # two tags side by side (``</arg_key><arg_value>``) take white space between them, as a marker's
    # pieces do: models write a line break there that the template does not
    src = r"\s*".join((pattern(part) if loose is None else _loose(part, loose))
                       for part in _ADJACENT_TAGS.split(core) if part)
    if lead:
        src = (r"[ \t]*" + regex.escape(lead) if lead_required else
               "(?:" + regex.escape(lead) + ")?" if lead_optional else r"\s*") + src
    if trail:
        src += "(?:" + regex.escape(trail) + ")?"
    return src


def row_break_source(text: str) -> str:
    """Regex source for what ends a row (the header line of items written as columns): a line
    break written as white space alone is one line break, spaces around it tolerated; anything else
    as :func:`lit_source` reads it."""
    if text.strip(" \t") == "\n":
        return r"[ \t]*\r?\n[ \t]*"
    return lit_source(text, separates=True)


def post_source(text: str, never: frozenset[str], may: Callable[[str], bool],
                loose: tuple[str, ...] | None = None) -> str:
    """Regex source for the text that closes a value (an item's closing literal): the white space
    it begins with may be left out, unless a value never holds that white space (``never``: the
    characters the value's codec never writes) while it may hold the rest of the text (``may``):
    ``\n:`` after a value whose line breaks are escaped is not a bare ``:``. ``loose``: as
    :func:`lit_source`'s."""
    lead, core = text[:len(text) - len(text.lstrip())], text.strip()
    required = bool(lead) and all(c in never for c in lead) and all(may(c) for c in core)
    return lit_source(text, lead_optional=not required, lead_required=required, loose=loose)


def tool_name(names: Iterable[str]) -> str:
    """Regex source for one of the tool names as a whole word (longest first)."""
    return r"(?<!\w)(?:" + "|".join(regex.escape(n) for n in sorted(names, key=len, reverse=True)) + ")"


def compile_any(named: Iterable[tuple[str, str]]) -> regex.Pattern[str] | None:
    """One alternation over ``(group_name, regex_source)`` pairs; None when all are empty."""
    parts = [f"(?P<{name}>{src})" for name, src in named if src]
    return compile_source("|".join(parts)) if parts else None


def compile_marker(marker: str) -> regex.Pattern[str] | None:
    src = pattern(marker)
    return compile_source(src) if src else None


@functools.lru_cache(maxsize=4096)
def compile_source(src: str) -> regex.Pattern[str]:
    """Compiled once per process: requests for the same template reuse their patterns. Kept out of
    the ``regex`` module's own cache, which evicts at random (``random.sample`` on the global
    generator: a library must not move its caller's random state)."""
    return regex.compile(src, cache_pattern=False)


def match_here(pat: regex.Pattern[str] | None, text: str, pos: int, final: bool) -> tuple[str, int]:
    """Match ``pat`` at ``pos`` after optional whitespace.

    Returns ("match", end), ("more", pos) when the text ends inside a possible
    match (only when not final), or ("no", pos).
    """
    if pat is None:
        return "match", pos
    i = pos
    n = len(text)
    while i < n and text[i] in " \t\r\n":
        i += 1
    if i == n:
        return ("no", pos) if final else ("more", pos)
    m = pat.match(text, i, partial=not final)
    if m is None:
        return "no", pos
    if m.partial or (not final and m.end() == n):
        return "more", pos
    return "match", m.end()
