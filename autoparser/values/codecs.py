"""Value codecs (temporary stub: raw, JSON and Python strings; the full library replaces it)."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from .pyliteral import python_string_value


class IncrementalDecoder:
    """Decodes the continuation of one encoded value as it arrives."""

    def __init__(self, codec: Codec) -> None:
        self.codec = codec
        self.malformed = False
        self._held = ""
        self._opened = not codec.self_delimiting
        self._done = False

    def feed(self, text: str, final: bool = False) -> tuple[str, int | None]:
        if self._done:
            return "", 0
        c = self.codec
        if not c.self_delimiting:
            return text, None
        skip = 0
        if not self._opened:
            if not text:
                return "", None
            self._opened = True
            if text[0] == c.quote:
                skip = 1
            else:
                self.malformed = True
        offset = len(self._held) - skip
        s = self._held + text[skip:]
        i = 0
        cut = len(s)
        while i < len(s):
            ch = s[i]
            if ch == "\\":
                if i + 1 >= len(s) or (s[i + 1] == "u" and i + 6 > len(s)):
                    cut = i   # hold an escape the text ends inside
                    break
                i += 2
                continue
            if ch == c.quote:
                self._held = ""
                self._done = True
                return self._decode_body(s[:i]), i + 1 - offset
            i += 1
        if final:
            cut = len(s)
            self.malformed = True
        self._held = s[cut:]
        return self._decode_body(s[:cut]), None

    def _decode_body(self, body: str) -> str:
        if self.codec.name == "json":
            try:
                value = json.loads('"' + body + '"', strict=False)
                return value if isinstance(value, str) else body
            except ValueError:
                self.malformed = True
                return body
        return python_string_value(body, self.codec.quote)


@dataclass(frozen=True)
class Codec:
    """How a template writes a string."""

    name: str
    quote: str = ""

    @property
    def spec(self) -> str:
        return self.name if not self.quote or self.name in ("json",) else f"{self.name}({self.quote})"

    @property
    def self_delimiting(self) -> bool:
        return bool(self.quote)

    @classmethod
    def from_spec(cls, spec: str) -> Codec:
        if spec == "json":
            return cls("json", '"')
        if spec.startswith("python(") and spec.endswith(")"):
            return cls("python", spec[7:-1])
        return cls("raw")

    def encode(self, s: str) -> str:
        if self.name == "json":
            return json.dumps(s, ensure_ascii=False)
        if self.name == "python":
            r = repr(s)
            return r if r.startswith(self.quote) else self.quote + r[1:-1] + self.quote
        return s

    def decode(self, text: str) -> str:
        dec = self.decoder()
        out, _ = dec.feed(text, final=True)
        return out

    def decoder(self) -> IncrementalDecoder:
        return IncrementalDecoder(self)


def candidates() -> Iterator[Codec]:
    yield Codec("raw")
    yield Codec("json", '"')
    yield Codec("python", "'")
    yield Codec("python", '"')


PROBE_STRINGS: tuple[str, ...] = ('say "hi"', "it's", "back\\slash", "a, b & c = d; e", "line1\nline2",
                                  "<b>&amp;</b>", "naïve 東京 😀", "{[(x)]}", "7")


def learn_codec(samples: Sequence[tuple[str, str]]) -> Codec | None:
    for c in candidates():
        if all(c.encode(v) == t for v, t in samples) and all(c.decode(t) == v for v, t in samples):
            return c
    return None


__all__ = ["PROBE_STRINGS", "Codec", "IncrementalDecoder", "candidates", "learn_codec"]
