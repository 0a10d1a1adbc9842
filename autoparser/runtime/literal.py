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


class LiteralEnd:
    """Incrementally finds where a literal that starts with an opener closes (quote-aware)."""

    def __init__(self, quotes: tuple[str, ...]) -> None:
        self.quotes = tuple(sorted(quotes, key=len, reverse=True))
        self.depth = 0
        self.quote: str | None = None
        self.pos = 0
        self.escape = False

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
            if ch in "{[(":
                self.depth += 1
            elif ch in "}])":
                self.depth -= 1
                if self.depth == 0:
                    self.pos = i + 1
                    return i + 1
            i += 1
        self.pos = i
        return None


class _Reader:
    def __init__(self, text: str, quotes: tuple[str, ...], kv_sep: str) -> None:
        self.t = text
        self.i = 0
        self.quotes = tuple(sorted(quotes, key=len, reverse=True))
        self.kv = kv_sep

    def ws(self) -> None:
        while self.i < len(self.t) and self.t[self.i] in " \t\r\n":
            self.i += 1

    def value(self) -> Any:
        self.ws()
        t, i = self.t, self.i
        if i >= len(t):
            raise ValueError("end of input")
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
            raw = self.t[self.i:j + 1]
            self.i = j + 1
            return json.loads(python_to_json(raw)) if q == "'" else json.loads(raw)
        j = self.t.index(q, start)
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
            self.ws()
            if self.t.startswith(closer, self.i):
                self.i += 1
                return out
            k = self.key()
            self.ws()
            for sep in (self.kv, ":", "="):
                if self.t.startswith(sep, self.i):
                    self.i += len(sep)
                    break
            else:
                raise ValueError(f"expected {self.kv!r} after key {k!r}")
            before = self.i
            out[k] = self.value()
            self.ws()
            if self.t.startswith(",", self.i):
                self.i += 1
            elif self.i == before or self.i >= len(self.t):
                raise ValueError(f"malformed object at {self.i}")   # no progress: never loop forever

    def array(self) -> list[Any]:
        self.i += 1
        out: list[Any] = []
        while True:
            self.ws()
            if self.t.startswith("]", self.i):
                self.i += 1
                return out
            before = self.i
            out.append(self.value())
            self.ws()
            if self.t.startswith(",", self.i):
                self.i += 1
            elif self.i == before or self.i >= len(self.t):
                raise ValueError(f"malformed array at {self.i}")   # no progress: never loop forever


def literal_to_json(text: str, quotes: tuple[str, ...], kv_sep: str) -> str:
    """Convert one literal (``{...}`` or ``(...)``) to a JSON object text; raises ValueError."""
    reader = _Reader(text, quotes, kv_sep)
    reader.ws()
    value = reader.value()
    return json.dumps(value, ensure_ascii=False)


def literal_value(text: str, quotes: tuple[str, ...], kv_sep: str) -> Any:
    return json.loads(literal_to_json(text, quotes, kv_sep))
