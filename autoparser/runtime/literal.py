"""Argument literals that are not JSON, described as data and converted to JSON.

One tolerant reader covers the object-like argument syntaxes templates write:
Gemma 4's ``{location:<|"|>Paris<|"|>,top_k:7}`` (bare keys, a custom string
quote), FunctionGemma's ``<escape>`` quotes, and Python calls
``get_weather(location='Paris', top_k=7)`` (``=`` between key and value). The
syntax comes from the analysis (``LiteralArgs``); nothing here names a model.
"""

from __future__ import annotations

import json
from typing import Any

from .pyliteral import python_to_json

_WORDS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_PAIRS = {"{": "}", "[": "]", "(": ")"}
_CLOSERS = frozenset(_PAIRS.values())


class LiteralEnd:
    """Incrementally finds where a literal that starts with an opener closes (quote-aware).

    Brackets are matched by kind: a closer that matches an opener further out also
    closes the stray openers inside it (``f(u[nit='c')`` ends at its ``)``), and a
    closer that matches none is text.
    """

    def __init__(self, quotes: tuple[str, ...]) -> None:
        self.quotes = tuple(sorted(quotes, key=len, reverse=True))
        self.open: list[str] = []          # the closer each open bracket waits for
        self.quote: str | None = None
        self.pos = 0
        self.escape = False
        self.unbalanced = False            # a closer closed stray openers, or matched none

    @property
    def depth(self) -> int:
        return len(self.open)

    def feed(self, text: str, base: int = 0) -> int | None:
        """Scan ``text[base:]`` (the literal so far); return its end, relative to ``base``, once closed."""
        if not self.pos:
            self.pos = base
        end = self._scan(text)
        return None if end is None else end - base

    def _scan(self, text: str) -> int | None:
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

    def __init__(self, text: str, quotes: tuple[str, ...], kv_sep: str, partial: bool = False) -> None:
        self.t = text
        self.i = 0
        self.quotes = tuple(sorted(quotes, key=len, reverse=True))
        self.kv = kv_sep
        self.partial = partial

    def at_end(self) -> bool:
        self.ws()
        return self.i >= len(self.t)

    def ws(self) -> None:
        while self.i < len(self.t) and self.t[self.i] in " \t\r\n":
            self.i += 1

    def value(self) -> Any:
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
        j = i
        while j < len(t) and t[j] not in ",}])" and t[j] not in " \t\r\n" and not t.startswith(self.kv, j):
            j += 1
        word = t[i:j]
        self.i = j
        if word in _WORDS:
            return _WORDS[word]
        try:
            return json.loads(word)
        except ValueError:
            return word

    def string(self, q: str) -> str:
        start = self.i + len(q)
        if q in ("'", '"'):
            j = start
            while j < len(self.t) and self.t[j] != q:
                j += 2 if self.t[j] == "\\" else 1
            if j >= len(self.t) and self.partial:   # cut inside the string: keep what is there
                self.i = len(self.t)
                body = self.t[start:].removesuffix("\\")
                return str(json.loads(python_to_json(q + body + q) if q == "'" else q + body + q, strict=False))
            raw = self.t[self.i:j + 1]
            self.i = j + 1
            return str(json.loads(python_to_json(raw) if q == "'" else raw, strict=False))
        j = self.t.find(q, start)
        if j < 0:
            if not self.partial:
                raise _End(f"unclosed {q}")
            self.i = len(self.t)
            return self.t[start:]
        self.i = j + len(q)
        return self.t[start:j]

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
        closer = _PAIRS[opener]
        self.i += 1
        out: dict[str, Any] = {}
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
                    raise ValueError(f"expected {self.kv!r} after key {k!r}")
                out[k] = self.value()
            except ValueError:
                if not self.partial:
                    raise
                self.i = member      # the member did not read (cut short, or broken): it stops here
                return out
            self.ws()
            if self.t.startswith(",", self.i):
                self.i += 1
            elif self.i == member:
                raise ValueError(f"malformed object at {self.i}")   # no progress: never loop forever

    def array(self) -> list[Any]:
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


def literal_to_json(text: str, quotes: tuple[str, ...], kv_sep: str) -> str:
    """Convert one complete literal (``{...}`` or ``(...)``) to a JSON object text; raises ValueError."""
    reader = _Reader(text, quotes, kv_sep)
    value = reader.value()
    if not reader.at_end():
        raise ValueError(f"text after the literal at {reader.i}")
    return json.dumps(value, ensure_ascii=False)


def read_partial_literal(text: str, quotes: tuple[str, ...], kv_sep: str) -> tuple[str, int]:
    """A literal cut short or broken: the JSON of what reads, and how much of ``text`` that is.

    Open strings and brackets are closed; a member that does not read ends the reading
    (the caller keeps the rest of the text as content).
    """
    reader = _Reader(text, quotes, kv_sep, partial=True)
    try:
        value = reader.value()
    except ValueError:
        return "{}", 0
    if not isinstance(value, dict):
        return "{}", 0
    return json.dumps(value, ensure_ascii=False), reader.i


def literal_value(text: str, quotes: tuple[str, ...], kv_sep: str) -> Any:
    return json.loads(literal_to_json(text, quotes, kv_sep))
