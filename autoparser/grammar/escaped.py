"""GBNF for text written inside a string codec: rules copied with every terminal as the codec writes it.

A layout may write a value's text through a string codec (JSON arguments inside a JSON string,
items inside an attribute value, a nested array percent-encoded). The inner rules are built as
usual on a builder of their own, then :func:`codec_copy` copies them into the request's builder
with each literal written as the codec writes its text and each character class split into the
characters the codec writes as they are and the escapes of the others. The language is the inner
language, encoded, for a codec that writes each character on its own (JSON, quoted, doubled,
percent, entities, backslash escapes, tables); for a codec that chooses its quoting by the whole
value (``python``'s repr, ``shell``) there is no such copy and the caller falls back to any
encoded string.

Non-ASCII characters: a codec that writes them raw keeps them raw; one that escapes every
non-ASCII character (``json(ascii)``, percent-encoding) takes, where the inner class allows any
other character, any of its escapes (this accepts escapes of characters the class leaves out:
a superset, never a rejected encoding).
"""

from __future__ import annotations

import re
from functools import lru_cache

import regex

from autoparser.values.codecs import Codec
from autoparser.values.codecs.lang import Chars, _node_regex

from .gbnf import GbnfBuilder, _class_items, _complement, literal

__all__ = ["codec_copy", "copyable", "frame", "inner_text"]

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|\{[^}]*\}|[A-Za-z0-9_-]+|\s+|.', re.S)
_ESCAPE = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t", "[": "[", "]": "]", "-": "-", "^": "^"}
_HEX = {"x": 2, "u": 4, "U": 8}
_PROBES = ("a", "Z", "0", " ", '"', "'", "\\", "\n", "\t", "<", ">", "&", "%", "+", "=", ",", ";", "/", "é",
           "東", "😀", "\x01", "\x7f")
_SCAN = 0xA0          # characters below this are checked one by one for an escape


def frame(codec: Codec) -> tuple[str, str]:
    """(opener, closer) the codec writes around every value ("", "" for a bare codec)."""
    empty = codec.encode("")
    opener = codec.opener if empty.startswith(codec.opener) else ""
    return opener, empty[len(opener):]


def inner_text(codec: Codec, text: str) -> str:
    """`text` as the codec writes it, without the opener and closer."""
    opener, closer = frame(codec)
    out = codec.encode(text)
    return out[len(opener): len(out) - len(closer)]


@lru_cache(maxsize=128)
def copyable(spec: str) -> bool:
    """Whether the codec writes each character on its own: encoding a text is framing the
    concatenation of its characters' encodings (checked on probe pairs)."""
    codec = Codec.from_spec(spec)
    opener, closer = frame(codec)
    for a in _PROBES:
        for b in _PROBES:
            whole = codec.encode(a + b)
            if whole != opener + inner_text(codec, a) + inner_text(codec, b) + closer:
                return False
    return True


@lru_cache(maxsize=128)
def _special(spec: str) -> dict[str, str]:
    """Characters below U+00A0 the codec does not write as they are, and how it writes them."""
    codec = Codec.from_spec(spec)
    out = {}
    for code in range(_SCAN):
        c = chr(code)
        if 0xD800 <= code <= 0xDFFF:
            continue
        enc = inner_text(codec, c)
        if enc != c:
            out[c] = enc
    return out


# ---------------------------------------------------------------- reading GBNF tokens
def _literal_text(token: str) -> str:
    """The text a GBNF literal token matches."""
    out, i, body = [], 0, token[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _HEX:
                n = _HEX[nxt]
                out.append(chr(int(body[i + 2:i + 2 + n], 16)))
                i += 2 + n
                continue
            out.append(_ESCAPE.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _class_ranges(token: str) -> tuple[bool, list[tuple[int, int]]]:
    """(negated, code point ranges) of a GBNF character class token."""
    body = token[1:-1]
    negate = body.startswith("^")
    if negate:
        body = body[1:]
    chars: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt in _HEX:
                n = _HEX[nxt]
                chars.append(chr(int(body[i + 2:i + 2 + n], 16)))
                i += 2 + n
                continue
            chars.append(_ESCAPE.get(nxt, nxt))
            i += 2
            continue
        chars.append("\x00-range" if c == "-" and chars and i + 1 < len(body) else c)
        i += 1
    ranges: list[tuple[int, int]] = []
    j = 0
    while j < len(chars):
        if j + 2 < len(chars) and chars[j + 1] == "\x00-range":
            ranges.append((ord(chars[j]), ord(chars[j + 2])))
            j += 3
            continue
        c = chars[j] if chars[j] != "\x00-range" else "-"
        ranges.append((ord(c), ord(c)))
        j += 1
    return negate, ranges


def _in(ranges: list[tuple[int, int]], c: str) -> bool:
    code = ord(c)
    return any(lo <= code <= hi for lo, hi in ranges)


# ---------------------------------------------------------------- the copy
class _Copier:
    def __init__(self, dest: GbnfBuilder, codec: Codec, escapes: bool) -> None:
        self.dest = dest
        self.codec = codec
        self.special = _special(codec.spec)
        self.escapes = escapes       # the codec writes no non-ASCII character raw: its escapes are used
        self.items = [i for i in (codec.forms[0].items if codec.forms else ()) if not isinstance(i, Chars)]
        self.patterns = [regex.compile(_node_regex(i), cache_pattern=False) for i in self.items]

    def literal(self, token: str) -> str:
        text = _literal_text(token)
        enc = inner_text(self.codec, text)
        return token if enc == text else literal(enc) if enc else '""'

    def klass(self, token: str) -> str:
        negate, ranges = _class_ranges(token)
        if negate:
            ranges = _complement(sorted({c for lo, hi in ranges for c in range(lo, hi + 1)}))
        escaped = sorted(c for c in self.special if _in(ranges, c))
        plain = _subtract(ranges, {ord(c) for c in escaped})
        wide = bool(self.escapes) and any(hi >= _SCAN for _lo, hi in plain)
        if self.escapes:
            plain = _subtract([(lo, min(hi, _SCAN - 1)) for lo, hi in plain if lo < _SCAN], set())
        if not escaped and not wide and plain == ranges:
            return token
        alts = ["[" + _class_items(plain) + "]"] if plain else []
        alts += [literal(self.special[c]) for c in escaped]
        escapes = self.escape_rule(ranges) if wide else ""
        if escapes:
            alts.append(escapes)
        return alts[0] if len(alts) == 1 else "( " + " | ".join(alts) + " )"


    def escape_rule(self, ranges: list[tuple[int, int]]) -> str:
        """The codec's escapes, except those that also spell a character the class leaves out
        (percent-encoding's ``%22`` is both an escape and the quote a JSON string ends with); an
        escape that also spells a control character is kept (``\\u0001`` in ``json(ascii)``)."""
        left_out = [inner_text(self.codec, chr(c)) for c in range(0x20, 0x7F) if not _in(ranges, chr(c))]
        keep = tuple(k for k, pat in enumerate(self.patterns) if not any(pat.fullmatch(t) for t in left_out))
        from .codecs import _expr  # the codec language printer

        def make() -> str:
            return self.dest.rule(f"codec-{self.codec.kind}-escape", " | ".join(_expr(self.dest, self.items[k]) for k in keep))
        return self.dest.cached(("codec-escape", self.codec.spec, keep), make) if keep else ""


def _subtract(ranges: list[tuple[int, int]], points: set[int]) -> list[tuple[int, int]]:
    """`ranges` without the code points in `points`."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        start = lo
        for p in sorted(x for x in points if lo <= x <= hi):
            if p > start:
                out.append((start, p - 1))
            start = p + 1
        if start <= hi:
            out.append((start, hi))
    return out


def codec_copy(dest: GbnfBuilder, src: GbnfBuilder, root: str, codec: Codec, prefix: str,
               spaces: tuple[str, ...] = ("space", "ws")) -> str | None:
    """Copy the rules reachable from `root` in `src` into `dest` (names under `prefix`), every
    terminal as `codec` writes it (no opener or closer: see :func:`frame`); returns the copy of
    `root`, or None when the codec cannot be copied through (:func:`copyable`). The rules named
    in `spaces` (optional white space) become any escaped white space."""
    if not copyable(codec.spec):
        return None
    cp = _Copier(dest, codec, codec.ascii_only)
    order = src.reachable(root)
    bodies = src.rules
    names = {name: dest.reserve(f"{prefix}-{name}") for name in order}
    for name in order:
        if name in spaces:
            # white space written with escapes is multi-character: a terminal-only rule ending with it
            # would be one llguidance lexeme that outruns the escape of what follows (``%20`` and
            # ``%2C``); a recursive rule is not a lexeme
            chars = " | ".join(dict.fromkeys(literal(inner_text(codec, c)) for c in " \n\t\r"))
            dest.define(names[name], f"| ( {chars} ) {names[name]}")
            continue
        out = []
        for token in _TOKEN.findall(bodies[name]):
            if token.startswith('"'):
                out.append(cp.literal(token))
            elif token.startswith("["):
                out.append(cp.klass(token))
            elif token in names:
                out.append(names[token])
            else:
                out.append(token)
        dest.define(names[name], "".join(out))
    return names[src.resolve(root)]
