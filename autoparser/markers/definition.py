"""What a marker is: text the template itself writes around the data it renders.

Markers come from two places:

* shapes nearly every template uses (:data:`SHAPES`): ``<...>``, ``[UPPER_CASE]``, ``<|...|>``;
* the template's own text, whatever its characters (a :class:`Vocabulary`): the lines of its
  string literals and output text (``Action:``, ``✦CALL✦``, ``⟪think⟫``, ``@@call``,
  ``### Tool:``, a fence opener with an info string), and the lines of renderings that hold no
  data, such as the generation prompt (``[|assistant|]``) and the end of a turn (``«end»``).

A line of template text is a marker when it is short and either holds a character that is
neither a word character nor value or prose punctuation (``|``, ``#``, ``@``, a backtick,
``✦``, ``«``...), or is a label (``Action Input:``); JSON and Python value text (quotes,
braces) never is, nor half of an angle or bracket marker that the data completes
(``<function=`` before a name). A long line of prose contributes its marker-like words only.
Digit runs match any digits: tokens that differ only in an index are the same marker.

The analysis of one template puts its vocabulary in force with :func:`using`; the finders
(:func:`finditer`, :func:`search`, :func:`match`, :func:`first`, :func:`last`) read the
vocabulary in force and fall back to the shapes alone. Shapes win over vocabulary entries
that start at the same place, so text read as a shape before reads the same now.

Two narrower kinds of marker, both defined here and nowhere else:

* a **token-shaped** marker piece (:func:`token_shaped`) is written with the characters special
  tokens are written with (``<``, ``>``, ``[``, ``]``, ``|``, ``｜``). Only these are listed as the
  parser's markers (``Analysis.markers``) and so kept in decoded text: a template literal marker
  of other characters (``Action:``, ``✦CALL✦``, a fence, ``#0``) is a marker to the analysis and
  the parser, but ordinary text to a tokenizer;
* a **special-token look** (:data:`TOKEN_LOOK`, :data:`CONTROL_LOOK`, :data:`BARRED_TOKEN`) is how a
  single tokenizer token looks when no tokenizer is at hand: ``<|im_end|>``, ``<｜tool▁sep｜>``,
  ``[TOOL_CALLS]``, and (for :data:`TOKEN_LOOK`) word tags such as ``<think>``.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator

import regex

SHAPES_SOURCE = r"<[^<>\n]{1,120}>|\[[A-Z_/]{2,40}\]|<\|[^|\n]{1,60}\|>"
SHAPES = regex.compile(SHAPES_SOURCE)
_TRAILING_SHAPE = regex.compile(f"(?:{SHAPES_SOURCE})\\Z")

# ---- the look of one tokenizer token (no tokenizer needed); alternatives tried left to right
_PIPE_TOKEN = r"<\|[^|<>\n]+?\|>"                  # <|im_end|>, <|start_header_id|>, <|tool calls|>
_FULLWIDTH_TOKEN = r"<｜[^｜<>\n]+?｜>"             # fullwidth bars: <｜tool▁calls▁begin｜>
_FULLWIDTH_TAG = r"<[^<>\n]*｜[^<>\n]*>"           # any tag holding a fullwidth bar: <｜DSML｜invoke name="x">
_HALF_PIPE = r"<\|[^\s<>|]+>|<[^\s<>|/]+\|>"       # one bar only: <|tool_call>, <channel|>
_BRACKET_WORD = r"\[/?[A-Z][A-Z0-9_]+\]"           # bracketed control words: [TOOL_CALLS], [THINK], [/INST]
_WORD_TAG = r"</?[^\s<>/]*[^\W\d_][^\s<>]*>"      # tags without spaces holding a letter: <think>, </tool_call>

BARRED_TOKEN_SOURCE = f"{_PIPE_TOKEN}|{_FULLWIDTH_TOKEN}"
BARRED_TOKEN = regex.compile(BARRED_TOKEN_SOURCE)
"""A token between bars: ``<|x|>`` or ``<｜x｜>`` (a special token inside a longer marker piece)."""
CONTROL_LOOK = regex.compile("|".join((_PIPE_TOKEN, _FULLWIDTH_TAG, _HALF_PIPE, _BRACKET_WORD)))
"""A control token: bars or bracketed upper-case words, never a plain word tag."""
TOKEN_LOOK = regex.compile("|".join((BARRED_TOKEN_SOURCE, _BRACKET_WORD, _WORD_TAG)))
"""A token a tokenizer may hold as one special token: a token between bars, a bracketed control word,
or a tag without spaces that holds a letter (``<think>``, ``<|tool_call>``)."""
TOKEN_CHARS = frozenset("<>[]|｜")
TOKEN_OPENINGS = ("<|", "<｜", "[")   # how a marker that is likely one special token starts
_WORD_OPENER = regex.compile(r"\s*(?:\[([A-Za-z_]{2,30})\]|<([A-Za-z_]{2,30})>)")


def token_shaped(piece: str) -> bool:
    """A marker piece written with the characters of special tokens (``<|im_end|>``, ``</think>``,
    ``[TOOL_CALLS]``, ``<function=``): the pieces listed as the parser's markers."""
    return len(piece) > 1 and any(ch in TOKEN_CHARS for ch in piece)


def trailing_shape(text: str) -> regex.Match[str] | None:
    """The marker shape that ends ``text`` (``assistant: <think>`` gives ``<think>``), or None."""
    return _TRAILING_SHAPE.search(text)


def word_closer(opener: str) -> str | None:
    """The closer that mirrors a marker starting with a word tag (``[TOOL_CALLS]``→``[/TOOL_CALLS]``,
    ``<tools>``→``</tools>``), or None for any other opener."""
    m = _WORD_OPENER.match(opener)
    if m is None:
        return None
    return f"[/{m.group(1)}]" if m.group(1) else f"</{m.group(2)}>"


# ---- spellings: the same token written with other decorations (a bracket-decorated word:
# ``<|tool_call|>``, ``<｜tool▁sep｜>``, ``[TOOL_CALLS]``, ``</tool_call>``)
DECORATED = regex.compile(r"(?:<[|｜]?|\[)(/?[A-Za-z][\w▁:.\-]{1,40}?/?)(?:[|｜]?>|\])")
_NAMESPACE = regex.compile(r"(?<![\w.])([A-Za-z_][\w\-]{0,30})\.\Z")
SPELLING_OPEN = r"(?:<[|｜]?|\[)"       # how models open the same token: <|, <｜, <, [
SPELLING_CLOSE = r"(?:[|｜]?>|\])"      # ... and close it


# DECORATED finds them: its group 1 is the word, which models also write with other decorations
# (``<tool_call>`` for ``<|tool_call|>``, ``<|/tool_call|>``, ``[tool_call]``) and ``▁`` as ``_``


def namespace_of(piece: str) -> str | None:
    """The namespace a piece ends with right before a name (``functions.`` of ``to=functions.``), or
    None: models also write the name without it (``to=get_weather``) or in another one."""
    m = _NAMESPACE.search(piece)
    return m.group(1) if m is not None else None


# value and prose punctuation: never makes text a marker on its own (JSON, Python, sentences)
_VALUE = frozenset("{}()\"',:;.=-!?")
_QUOTES_AND_BRACES = frozenset("{}\"'")
_LABEL = regex.compile(r"[A-Za-z][A-Za-z ]{0,30}:")      # "Action:", "Action Input:"
MAX_WORDS = 3          # a template line of more words is prose: only its marker-like words count
MAX_LEN = 60


def marker_char(ch: str) -> bool:
    """A character that makes text a marker: not a word character, space, or value/prose punctuation."""
    if ch.isalnum() or ch == "_" or ch.isspace() or ch in _VALUE:
        return False
    return unicodedata.category(ch)[0] in "PS"


# ---- boundaries: an angle or bracket marker is never cut between its opening and its closing bracket
OPEN_BRACKETS, CLOSE_BRACKETS = "<[", ">]"


def unclosed(text: str) -> int:
    """Where a bracket that ``text`` leaves open starts (``...<tool_ca`` ends inside a marker), or -1;
    a run of the same opening bracket opens one marker (``[[tool_ca``)."""
    last_open = max(text.rfind(c) for c in OPEN_BRACKETS)
    if last_open <= max(text.rfind(c) for c in CLOSE_BRACKETS):
        return -1
    while last_open > 0 and text[last_open - 1] == text[last_open]:   # a doubled opener: ``[[tool_calls]]``
        last_open -= 1
    return last_open


def unopened_close(text: str) -> int:
    """Where the first bracket of ``text`` that closes one opened before it is (``ol_call>...``), or -1."""
    close = min((i for i in (text.find(c) for c in CLOSE_BRACKETS) if i >= 0), default=-1)
    opened = min((i for i in (text.find(c) for c in OPEN_BRACKETS) if i >= 0), default=-1)
    return close if close >= 0 and (opened < 0 or close < opened) else -1


def next_open(text: str, start: int = 0) -> int:
    """Where the next angle or bracket marker of ``text`` may start, from ``start`` on; ``len(text)``
    when none does (a header's id ends there: ``call_1<|message|>``)."""
    return min((i for i in (text.find(c, start) for c in OPEN_BRACKETS) if i >= 0), default=len(text))


def _balanced(text: str) -> bool:
    return all(text.count(o) == text.count(c) for o, c in zip(OPEN_BRACKETS, CLOSE_BRACKETS, strict=True))


def marker_like(piece: str, labels: bool = True, whole: bool = False) -> bool:
    """True when ``piece`` (template text, stripped) can stand as a marker by itself. An unbalanced
    ``<`` or ``[`` makes a literal half of a marker the data completes, unless the text is ``whole``
    (a rendering with no data in it: a turn end such as ``[e~[``)."""
    piece = piece.strip()
    if SHAPES.fullmatch(piece):
        return True
    if not 2 <= len(piece) <= MAX_LEN or any(c in _QUOTES_AND_BRACES for c in piece):
        return False
    if not whole and not _balanced(piece):
        return False
    if labels and _LABEL.fullmatch(piece):
        return True
    return any(marker_char(c) for c in piece)


# a character that may make text a marker: a label's colon, or any character that is neither a word
# character (str.isalnum or "_"), whitespace (str.isspace) nor other value punctuation; text without
# one holds no marker piece (most template literals: "role", "content", "\n\n")
_MAY_MARK = re.compile(r"[^\w\s{}()\"',;.=!?\-]|:")


def pieces_of(text: str, complete: bool = False) -> list[str]:
    """The marker-like pieces of a stretch of template text, line by line; the shapes in a line
    are markers of their own (``\n```<｜tool▁call▁end｜>`` gives the fence alone).

    A label (``Action:``) counts only when whitespace follows it: text glued to the end of a
    literal (``'call:' ~ name``) is half of what the data completes, unless ``complete`` (a
    rendering, where nothing follows)."""
    out: list[str] = []
    if _MAY_MARK.search(text) is None:
        return out
    lines = text.split("\n")
    for i, segment in enumerate(lines):
        parts = SHAPES.split(segment)
        for j, part in enumerate(parts):
            glued = not part[-1:].isspace() and (j < len(parts) - 1 or (i == len(lines) - 1 and not complete))
            _line_pieces(part, out, labels=not glued, whole=complete)
    return out


def _line_pieces(line: str, out: list[str], labels: bool, whole: bool) -> None:
    line = " ".join(line.split())
    if not line:
        return
    if len(line.split()) <= MAX_WORDS and marker_like(line, labels, whole):
        out.append(line)
        return
    for word in line.split():
        word = word.rstrip(".,;!?)")
        if marker_like(word, labels=False):
            out.append(word)


def _piece_pattern(piece: str) -> str:
    parts = []
    for chunk in regex.split(r"(\d+|\s+)", piece):
        if not chunk:
            continue
        if chunk.isdigit():
            parts.append(r"\d+")
        elif chunk.isspace():
            parts.append(r"[ \t]+")
        else:
            parts.append(regex.escape(chunk))
    # not inside a marker shape the data completes ("<" + "｜DSML｜" + "invoke name=...")
    return r"(?<![<\[])" + word_start(piece) + "".join(parts) + word_end(piece)


def _wordy(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def word_start(marker: str) -> str:
    """A marker that starts with a word (``Action:``) starts there: ``MyAction:`` is not it."""
    return r"(?<!\w)" if _wordy(marker.strip()[:1]) else ""


def word_end(marker: str) -> str:
    """A marker that ends in a word (``>>>all``, ``@@call``) ends there: ``>>>allow`` is not it."""
    return r"(?!\w)" if _wordy(marker.strip()[-1:]) else ""


@functools.lru_cache(maxsize=256)
def _compile(pieces: tuple[str, ...]) -> regex.Pattern[str]:
    extra = [_piece_pattern(p) for p in sorted(pieces, key=len, reverse=True) if not SHAPES.fullmatch(p)]
    return regex.compile("|".join([SHAPES_SOURCE, *extra]), cache_pattern=False) if extra else SHAPES


class Vocabulary:
    """The markers of one template: the shapes and the pieces of its own text."""

    __slots__ = ("pattern", "pieces")

    def __init__(self, pieces: Iterable[str] = ()) -> None:
        self.pieces: tuple[str, ...] = tuple(sorted(set(pieces)))
        self.pattern: regex.Pattern[str] = _compile(self.pieces)

    @classmethod
    def of_template(cls, literals: Iterable[str]) -> Vocabulary:
        """From the template's string literals and output text (``Renderer.literals``)."""
        return cls(p for text in literals for p in pieces_of(text))

    def with_text(self, *texts: str) -> Vocabulary:
        """Also the pieces of renderings that hold no data (a generation prompt, a turn's end)."""
        more = [p for t in texts for p in pieces_of(t, complete=True)]
        return self if set(more) <= set(self.pieces) else Vocabulary((*self.pieces, *more))


SHAPES_ONLY = Vocabulary()
_current: contextvars.ContextVar[Vocabulary] = contextvars.ContextVar("autoparser_markers", default=SHAPES_ONLY)


def current() -> Vocabulary:
    return _current.get()


@contextlib.contextmanager
def using(vocabulary: Vocabulary) -> Iterator[Vocabulary]:
    """Put ``vocabulary`` in force for the finders while the block runs."""
    token = _current.set(vocabulary)
    try:
        yield vocabulary
    finally:
        _current.reset(token)


def finditer(text: str, pos: int = 0, endpos: int | None = None) -> Iterator[regex.Match[str]]:
    return current().pattern.finditer(text, pos, len(text) if endpos is None else endpos)


def search(text: str, pos: int = 0) -> regex.Match[str] | None:
    return current().pattern.search(text, pos)


def match(text: str, pos: int = 0) -> regex.Match[str] | None:
    return current().pattern.match(text, pos)


def fullmatch(text: str) -> regex.Match[str] | None:
    return current().pattern.fullmatch(text)


def first(text: str) -> regex.Match[str] | None:
    return search(text)


def last(text: str, start: int = 0, end: int | None = None) -> regex.Match[str] | None:
    found = None
    for found in finditer(text, start, end):  # noqa: B007
        pass
    return found


def markers_in(text: str) -> list[str]:
    return [m.group() for m in finditer(text)]


def spanning(text: str, cut: int) -> regex.Match[str] | None:
    """A marker of ``text`` that ``cut`` falls strictly inside, or None."""
    lo = max(0, cut - 2 * MAX_LEN - 64)
    for m in finditer(text, lo, min(len(text), cut + 2 * MAX_LEN + 64)):
        if m.start() < cut < m.end():
            return m
        if m.start() >= cut:
            break
    return None


def same(a: str, b: str) -> bool:
    """The same marker: equal once digit runs are ignored (``<|call:1|>`` and ``<|call:2|>``)."""
    return a == b or regex.sub(r"\d+", "0", a) == regex.sub(r"\d+", "0", b)


_CLOSING = ("</", "[/", "<|/", "END", "_end", "end|", "close", "Close", "◁/")


def is_closing(marker: str) -> bool:
    """True when the marker, or any marker in a run, closes something: ``</x>``, ``[/X]``, ``END``,
    or any marker whose opening symbols are followed by a slash (``⟪/think⟫``, ``[[/]]``)."""
    parts = [m.group() for m in finditer(marker)] or [marker.strip()]
    for p in parts:
        if any(p.startswith(c) if c[0] in "<[◁" else c in p for c in _CLOSING):
            return True
        lead = regex.match(r"[^\w\s/]{1,4}/", p)
        if lead is not None and p in current().pieces:
            return True
    return False


def closing_candidates(start: str) -> list[str]:
    """Conventional closers for an opening marker: <x>→</x>, [X]→[/X], START→END, begin→end, and a
    slash after the opening symbols of any marker (``⟪think⟫``→``⟪/think⟫``, ``[[x]]``→``[[/x]]``)."""
    s = start.strip()
    out = []
    if s.startswith("<") and not s.startswith("</"):
        out.append("</" + s[1:])
        if s.startswith("<|"):
            out.append("<|/" + s[2:])
    if s.startswith("[") and not s.startswith("[/"):
        out.append("[/" + s[1:])
    for a, b in (("START", "END"), ("start", "end"), ("begin", "end"), ("BEGIN", "END"), ("open", "close")):
        if a in s:
            out.append(s.replace(a, b))
    # a half-barred opener closes with the bar on the other side: <|channel>thought ... <channel|>
    m = regex.match(r"<\|(\w+)>", s)
    if m:
        out.append(f"<{m.group(1)}|>")
    m = regex.match(r"◁(\w+)▷", s)
    if m:
        out.append(f"◁/{m.group(1)}▷")
    lead = regex.match(r"[^\w\s/]{1,4}(?=\w)", s)
    if lead is not None:
        for k in range(1, lead.end() + 1):
            candidate = s[:k] + "/" + s[k:]
            if candidate not in out:
                out.append(candidate)
    return out


_CLOSE_WORDS = (("END", "START"), ("end", "start"), ("end", "begin"), ("END", "BEGIN"), ("close", "open"))


def opener_of(closer: str) -> str | None:
    """The opener a closer pairs with (the inverse of :func:`closing_candidates`): ``</think>``→``<think>``,
    ``[/THINK]``→``[THINK]``, ``⟪/think⟫``→``⟪think⟫``, ``<channel|>``→``<|channel>``, ``END``→``START``;
    None when ``closer`` closes nothing by those rules."""
    c = closer.strip()
    options = [c[:i] + c[i + 1:] for i in range(1, min(len(c), 5)) if c[i] == "/"]
    m = regex.fullmatch(r"<(\w+)\|>", c)
    if m:
        options.append(f"<|{m.group(1)}>")
    options += [c.replace(b, a) for b, a in _CLOSE_WORDS if b in c]
    return next((o for o in options if o != c and c in closing_candidates(o)), None)
