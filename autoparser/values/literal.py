"""Argument literals that are not JSON, described as data and converted to JSON.

One tolerant reader covers the object-like argument syntaxes templates write:
``{location:<|"|>Paris<|"|>,top_k:7}`` (bare keys, a custom string
quote), ``<escape>`` quotes, and Python calls
``get_weather(location='Paris', top_k=7)`` (``=`` between key and value). The
syntax comes from the analysis (``LiteralArgs``); nothing here names a model.
"""

from __future__ import annotations

import json
import re
from typing import Any

from .pyliteral import string_to_json

_WORDS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_PAIRS = {"{": "}", "[": "]", "(": ")"}
_CLOSERS = frozenset(_PAIRS.values())
_FOLLOWERS = frozenset(",:=})]")      # what may follow a closing quote
_VALUE_STARTS = frozenset(",:=([{")   # what a quote that opens a string follows
_UNESCAPED = {q: re.compile(r"\\.|" + q, re.DOTALL) for q in "'\""}


def _quoted(body: str, q: str) -> str:
    """The value of a quoted string's body; quotes the template left unescaped are text."""
    body = _UNESCAPED[q].sub(lambda m: m.group() if len(m.group()) == 2 else "\\" + q, body)
    text, _ = string_to_json(q + body + q, 0, q)
    return str(json.loads(text, strict=False))


def _before(text: str, i: int) -> str:
    """The last character before ``i`` that is not a blank ("" at the start)."""
    j = i - 1
    while j >= 0 and text[j] in " \t\r\n":
        j -= 1
    return text[j] if j >= 0 else ""


class LiteralEnd:
    """Incrementally finds where a literal that starts with an opener closes (quote-aware).

    Brackets are matched by kind: a closer that matches an opener further out also
    closes the stray openers inside it (``f(u[nit='c')`` ends at its ``)``), and a
    closer that matches none is text.

    ``followers`` (strings written unquoted, so a value may hold a closer: ``text=:)0``): what
    may follow the literal (the call separator, the section or call end, the turn end). A
    closer that would close the literal closes it when the end of the text or one
    of them follow (after blanks); else it is a candidate and the scan goes on: a later closer that is
    followed so wins (and the reading counts as unbalanced), else the first candidate does. A
    quote there opens a string only where a value starts (after ``=``, ``:``, ``,`` or a bracket).
    """

    def __init__(self, quotes: tuple[str, ...], followers: tuple[str, ...] | None = None) -> None:
        self.followers = tuple(f for f in followers or () if f)
        self.bare = followers is not None
        self.candidate: int | None = None  # the first closer that could have closed the literal
        self.quotes = tuple(sorted(quotes, key=len, reverse=True))
        self.open: list[str] = []          # the closer each open bracket waits for
        self.quote: str | None = None
        self.pos = 0
        self.escape = False
        self.unbalanced = False            # a closer closed stray openers, or matched none

    @property
    def depth(self) -> int:
        return len(self.open)

    def feed(self, text: str, base: int = 0, final: bool = True) -> int | None:
        """Scan ``text[base:]`` (the literal so far); return its end, relative to ``base``, once closed.
        ``final``: no more text comes (a closer at the very end closes)."""
        if not self.pos:
            self.pos = base
        end = self._scan(text, final)
        if end is None and final and self.candidate is not None:
            end = self.candidate
        return None if end is None else end - base

    def _closes_here(self, text: str, j: int, final: bool) -> bool | None:
        """Whether a closer whose text ends at ``j`` closes the literal; None: what follows is to come."""
        rest = text[j:].lstrip(" \t\r\n")
        if not rest:
            return True if final else None
        if any(rest.startswith(f) for f in self.followers):
            return True
        if not final and any(f.startswith(rest) for f in self.followers):
            return None
        return False

    def _scan(self, text: str, final: bool) -> int | None:
        i, n = self.pos, len(text)
        while i < n:
            if self.quote is not None:
                if self.escape:
                    self.escape = False
                    i += 1
                    continue
                if self.quote in ("'", '"') and text[i] == "\\":
                    self.escape = True
                    i += 1
                    continue
                if text.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                if n - i < len(self.quote) and self.quote.startswith(text[i:]):
                    break   # a quote marker split across chunks
                i += 1
                continue
            q = next((q for q in self.quotes if text.startswith(q, i)), None)
            if q is not None and self.bare and len(q) == 1 and _before(text, i) not in _VALUE_STARTS:
                q = None     # unquoted text: a quote inside a word ("it's") is an apostrophe, not a string
            if q is not None:
                self.quote = q
                i += len(q)
                continue
            if any(len(q) > 1 and q.startswith(text[i:]) for q in self.quotes) and n - i < max(map(len, self.quotes)):
                break
            ch = text[i]
            if ch in _PAIRS:
                self.open.append(_PAIRS[ch])
            elif ch in _CLOSERS:
                if ch not in self.open:
                    self.unbalanced = True
                    i += 1
                    continue
                if self.bare and ch == self.open[0] and ch not in self.open[1:]:   # it would close the literal
                    closes = self._closes_here(text, i + 1, final)
                    if closes is None:
                        break              # what follows decides
                    if not closes:
                        if self.candidate is None:
                            self.candidate = i + 1
                        i += 1
                        continue
                    if self.candidate is not None:
                        self.unbalanced = True   # an earlier closer could have ended it: say so
                while self.open.pop() != ch:
                    self.unbalanced = True   # stray openers inside: closed with it
                if not self.open:
                    self.pos = i + 1
                    return i + 1
            i += 1
        self.pos = i
        return None


class _End(ValueError):
    """The literal was cut short (only raised when reading a complete literal)."""


class _Reader:
    """A tolerant recursive reader of one literal; ``partial``: the text may stop anywhere."""

    def __init__(self, text: str, quotes: tuple[str, ...], kv_sep: str, partial: bool = False,
                 keys: tuple[str, ...] = ()) -> None:
        self.t = text
        self.keys = keys         # the argument names the schema knows (to read a cut bare value)
        self.i = 0
        self.quotes = tuple(sorted(quotes, key=len, reverse=True))
        self.kv = kv_sep
        self.partial = partial
        self.level = 0           # how deep in brackets the reader is (1: the literal's own)
        self.ambiguous = False   # an unquoted string value was empty or started with blanks: it may be misread
        self.empty = False       # a member had no value at all (``k=)``)
        self._next_key = re.compile(r"\s*[\"']?[A-Za-z_][\w.-]*[\"']?\s*(?:[:=]|" + re.escape(kv_sep) + ")")

    def at_end(self) -> bool:
        self.ws()
        return self.i >= len(self.t)

    def ws(self) -> None:
        while self.i < len(self.t) and self.t[self.i] in " \t\r\n":
            self.i += 1

    def value(self, member: bool = False) -> Any:
        """The value here; ``member``: an object member's, whose unquoted text runs to the next key."""
        before = self.i
        self.ws()
        t, i = self.t, self.i
        if i >= len(t):
            raise _End("end of input")
        for q in self.quotes:
            if t.startswith(q, i):
                return self.string(q)
        ch = t[i]
        if ch in "{(":
            return self.mapping(ch)
        if ch == "[":
            return self.array()
        if member:
            j = self._bare_end(i)
        else:
            j = i
            while j < len(t) and t[j] not in ",}])" and t[j] not in " \t\r\n" and not t.startswith(self.kv, j):
                j += 1
        word = t[i:j]
        self.i = j
        bare = word.strip()
        if bare in _WORDS:
            return _WORDS[bare]
        try:
            return json.loads(bare)
        except ValueError:
            if member and (not bare or i > before):
                self.ambiguous = True   # "k=\n)" or "k= x": the value's own blanks cannot be told from layout
            self.empty = self.empty or (member and not bare)
            return word      # text: kept as written (an unquoted value's own newlines included)

    def _bare_end(self, i: int) -> int:
        """Where an unquoted member value ends (``location=Paris, France, unit=c``): at a closer
        outside its own brackets, or at a comma followed by the next ``key=``."""
        t, n = self.t, len(self.t)
        depth = 0
        while i < n:
            ch = t[i]
            if ch in "'\"":   # a quoted piece inside the bare text (code): its brackets are text
                j = self._closing_quote(i + 1, ch, strict=True)
                i = j + 1 if j is not None else i + 1
                continue
            if ch in _PAIRS:
                depth += 1
            elif ch in _CLOSERS:
                if depth == 0:
                    if self.level == 1 and not self.partial and t[i + 1:].strip():
                        i += 1
                        continue     # not the literal's own closer (its extent is known): the value's
                    return i
                depth -= 1
            elif ch == "," and depth == 0 and (self._next_key.match(t, i + 1) or self._key_so_far(i + 1)):
                return i     # the next member (when cut short: the start of a known key)
            i += 1
        return n

    def string(self, q: str) -> str:
        start = self.i + len(q)
        if q in ("'", '"'):
            j = self._closing_quote(start, q)
            if j is None:
                if not self.partial:
                    raise _End(f"unclosed {q}")
                self.i = len(self.t)     # cut inside the string: keep what is there
                return _quoted(self.t[start:].removesuffix("\\"), q)
            self.i = j + 1
            return _quoted(self.t[start:j], q)
        j = self.t.find(q, start)
        if j < 0:
            if not self.partial:
                raise _End(f"unclosed {q}")
            self.i = len(self.t)
            return self.t[start:]
        self.i = j + len(q)
        return self.t[start:j]

    def _key_so_far(self, i: int) -> bool:
        """The text was cut short and what follows ``i`` is the start of an argument name."""
        if not self.partial:
            return False
        rest = self.t[i:].strip().strip("\"'")
        return not rest or any(k.startswith(rest) for k in self.keys)

    def _closing_quote(self, start: int, q: str, strict: bool = False) -> int | None:
        """The quote that closes a string opened before ``start``.

        Templates print strings without escaping them (``query="say "hi" now"``): a quote
        closes only when a separator, a closer, the next ``key=`` (a template that forgot
        the comma) or the end follows it; failing that, the first quote does (``strict``:
        always the first).
        """
        t, n = self.t, len(self.t)
        first = None
        j = start
        while j < n:
            ch = t[j]
            if ch == "\\":
                j += 2
                continue
            if ch == q:
                if strict:
                    return j
                if first is None:
                    first = j
                k = j + 1
                while k < n and t[k] in " \t\r\n":
                    k += 1
                if k >= n or t[k] in _FOLLOWERS or t.startswith(self.kv, k) or self._next_key.match(t, k):
                    return j
            j += 1
        return first

    def key(self) -> str:
        self.ws()
        for q in self.quotes:
            if self.t.startswith(q, self.i):
                return self.string(q)
        j = self.i
        while j < len(self.t) and not self.t.startswith(self.kv, j) and self.t[j] not in ":=,}) \t\r\n":
            j += 1
        k = self.t[self.i:j]
        self.i = j
        return k

    def mapping(self, opener: str) -> dict[str, Any]:
        self.level += 1
        try:
            return self._mapping(opener)
        finally:
            self.level -= 1

    def _mapping(self, opener: str) -> dict[str, Any]:
        closer = _PAIRS[opener]
        self.i += 1
        out: dict[str, Any] = {}
        if opener == "(" and (whole := self._one_object(closer)) is not None:
            return whole             # f({"k": "v"}): the arguments as one object
        while True:
            if self.at_end():
                if self.partial:
                    return out
                raise _End("unclosed object")
            if self.t.startswith(closer, self.i):
                self.i += 1
                return out
            if self.t[self.i] in _CLOSERS:   # a stray closer: text the brackets' scan passed over
                self.i += 1
                continue
            member = self.i
            try:
                k = self.key()
                self.ws()
                for sep in (self.kv, ":", "="):
                    if self.t.startswith(sep, self.i):
                        self.i += len(sep)
                        break
                else:
                    raise (_End if self.at_end() else ValueError)(f"expected {self.kv!r} after key {k!r}")
                out[k] = self.value(member=True)
            except _End:
                if not self.partial:
                    raise
                self.i = len(self.t)  # a member cut short by the end of the text is left out
                return out
            except ValueError:
                if not self.partial:
                    raise
                self.i = member      # a broken member: the reading stops there
                return out
            self.ws()
            if self.t.startswith(",", self.i):
                self.i += 1
            elif self.i == member:
                raise ValueError(f"malformed object at {self.i}")   # no progress: never loop forever

    def _one_object(self, closer: str) -> dict[str, Any] | None:
        """An object that is all a call's parentheses hold, or None (and nothing read)."""
        start = self.i
        self.ws()
        if not self.t.startswith("{", self.i):
            self.i = start
            return None
        try:
            value = self.mapping("{")
        except ValueError:
            value = None
        self.ws()
        if isinstance(value, dict) and self.t.startswith(closer, self.i):
            self.i += len(closer)
            return value
        self.i = start
        return None

    def array(self) -> list[Any]:
        self.level += 1
        try:
            return self._array()
        finally:
            self.level -= 1

    def _array(self) -> list[Any]:
        self.i += 1
        out: list[Any] = []
        while True:
            if self.at_end():
                if self.partial:
                    return out
                raise _End("unclosed array")
            if self.t.startswith("]", self.i):
                self.i += 1
                return out
            if self.t[self.i] in _CLOSERS:
                return out           # closed by an outer bracket ({k:[1, 2}): the array ends with it
            item = self.i
            try:
                out.append(self.value())
            except ValueError:
                if not self.partial:
                    raise
                self.i = item
                return out
            self.ws()
            if self.t.startswith(",", self.i):
                self.i += 1
            elif self.i == item:
                raise ValueError(f"malformed array at {self.i}")   # no progress: never loop forever


AMBIGUOUS = "an unquoted argument value is empty or starts with blanks; it may be misread"


def literal_to_json(text: str, quotes: tuple[str, ...], kv_sep: str, notes: list[str] | None = None) -> str:
    """Convert one complete literal (``{...}`` or ``(...)``) to a JSON object text; raises ValueError.

    ``notes`` collects what may be misread (:data:`AMBIGUOUS`: an unquoted string whose blanks
    may be layout or value)."""
    reader = _Reader(text, quotes, kv_sep)
    value = reader.value()
    if not reader.at_end():
        raise ValueError(f"text after the literal at {reader.i}")
    if reader.ambiguous and notes is not None:
        notes.append(AMBIGUOUS)
    if reader.empty and notes is None:
        raise ValueError("a member with no value")   # (quoted strings: ``f(city=)`` spells no value at all)
    return json.dumps(value, ensure_ascii=False)


def read_partial_literal(text: str, quotes: tuple[str, ...], kv_sep: str,
                         keys: tuple[str, ...] = ()) -> tuple[str, int]:
    """A literal cut short or broken: the JSON of what reads, and how much of ``text`` that is.

    Open strings and brackets are closed; a member that does not read ends the reading
    (the caller keeps the rest of the text as content). ``keys``: the tool's argument names;
    an unquoted value cut at ``, un`` stops before it when ``un`` starts one of them.
    """
    reader = _Reader(text, quotes, kv_sep, partial=True, keys=keys)
    try:
        value = reader.value()
    except ValueError:
        return "{}", 0
    if not isinstance(value, dict):
        return "{}", 0
    return json.dumps(value, ensure_ascii=False), reader.i


def literal_value(text: str, quotes: tuple[str, ...], kv_sep: str) -> Any:
    return json.loads(literal_to_json(text, quotes, kv_sep))
