"""Codecs that escape with a backslash: JSON strings, Python reprs, quoted strings with backslash
escapes, double-quoted shell words and backslash-escaped bare text.

All of them are read by one decoder, :class:`BackslashDecoder`: plain runs between escapes are
copied with one regex match each, an escape is decoded by the codec's escape function, and the
value ends at its closing quote (a quoted codec), before an unescaped stop character (a ``bare``
codec: the quotes belong to the layout, or an ``escaped`` one) or at the end of the text.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from functools import lru_cache

from .base import Impl, IncrementalDecoder, Step
from .lang import ANY, HEX, Alt, Cat, Form, Lit, Node, chars, hex_exactly, plus

__all__ = ["BackslashDecoder", "Escaped", "Json", "Python", "Quoted", "ShellDouble"]

# an escape function: (text, index of the backslash, final) -> (decoded, next index, well formed),
# or None when the text ends inside the escape and more may come
Escape = Callable[[str, int, bool], "tuple[str, int, bool] | None"]

_C0 = "".join(map(chr, range(0x20)))
_SIMPLE = {"n": "\n", "t": "\t", "r": "\r"}
_JSON_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_PY_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
               "t": "\t", "v": "\v", "\n": ""}
_HEXDIGITS = frozenset("0123456789abcdefABCDEF")
_OCTAL = frozenset("01234567")
_U4 = Alt((hex_exactly(0, 0xD7FF, 4), hex_exactly(0xE000, 0xFFFF, 4)))
_U4_PAIR = Cat((hex_exactly(0xD800, 0xDBFF, 4), Lit("\\u"), hex_exactly(0xDC00, 0xDFFF, 4)))


@lru_cache(maxsize=64)
def _plain_run(stops: str) -> re.Pattern[str]:
    """A run of characters that are neither a backslash nor one of `stops`."""
    return re.compile("[^" + re.escape("\\" + stops) + "]+")


def _hex_at(buf: str, i: int, width: int, final: bool) -> int | None:
    """The number spelt by `width` hex digits at `i`; None when the text ends first (and more
    may come); -1 when they are not hex digits."""
    digits = buf[i:i + width]
    if len(digits) < width and not final:
        return None
    if len(digits) < width or not _HEXDIGITS.issuperset(digits):
        return -1
    return int(digits, 16)


def table_escape(table: dict[str, str], unknown: str) -> Escape:
    """Escapes ``\\c`` for the characters of `table`; any other ``\\c`` is kept as the two characters
    (`unknown` "literal"), as the two characters and flagged ("malformed"), or as a lone backslash
    followed by ``c`` read afresh ("backslash": backslashes are not escaped themselves)."""
    def escape(buf: str, i: int, final: bool) -> tuple[str, int, bool] | None:
        if i + 1 >= len(buf):
            return None if not final else ("\\", i + 1, unknown == "backslash")
        c = buf[i + 1]
        if c in table:
            return table[c], i + 2, True
        if unknown == "backslash":
            return "\\", i + 1, True
        return "\\" + c, i + 2, unknown == "literal"
    return escape


def _json_escape(buf: str, i: int, final: bool) -> tuple[str, int, bool] | None:
    """JSON's escapes, ``\\uXXXX`` with surrogate pairs; a lone surrogate stays literal (malformed)."""
    if i + 1 >= len(buf):
        return None if not final else ("\\", i + 1, False)
    c = buf[i + 1]
    if c != "u":
        return (_JSON_ESCAPES[c], i + 2, True) if c in _JSON_ESCAPES else ("\\" + c, i + 2, False)
    code = _hex_at(buf, i + 2, 4, final)
    if code is None:
        return None
    if code < 0:
        return "\\u", i + 2, False
    if 0xD800 <= code <= 0xDBFF:
        nxt = buf[i + 6:i + 8]
        if len(nxt) < 2 and not final and "\\u".startswith(nxt):
            return None
        if nxt == "\\u":
            low = _hex_at(buf, i + 8, 4, final)
            if low is None:
                return None
            if 0xDC00 <= low <= 0xDFFF:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), i + 12, True
        return buf[i:i + 6], i + 6, False
    if 0xDC00 <= code <= 0xDFFF:
        return buf[i:i + 6], i + 6, False
    return chr(code), i + 6, True


def _python_escape(buf: str, i: int, final: bool) -> tuple[str, int, bool] | None:
    """Python string escapes (as ``repr`` and the tokenizer read them), octal included."""
    if i + 1 >= len(buf):
        return None if not final else ("\\", i + 1, False)
    c = buf[i + 1]
    if c in _PY_ESCAPES:
        return _PY_ESCAPES[c], i + 2, True
    if c in _OCTAL:
        j = i + 1
        while j < len(buf) and j < i + 4 and buf[j] in _OCTAL:
            j += 1
        if j == len(buf) and j < i + 4 and not final:
            return None
        return chr(int(buf[i + 1:j], 8)), j, True
    width = {"x": 2, "u": 4, "U": 8}.get(c, 0)
    if not width:
        return "\\" + c, i + 2, False
    code = _hex_at(buf, i + 2, width, final)
    if code is None:
        return None
    if code < 0 or code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
        return "\\" + c, i + 2, False
    return chr(code), i + 2 + width, True


class BackslashDecoder(IncrementalDecoder):
    """Reads a backslash-escaped value: ``openers`` (opener -> closer) for a quoted value, else the
    body alone, which ends before the first unescaped character of ``stops`` (or at the end)."""

    __slots__ = ("_escape", "_inside", "_openers", "_plain", "_stops")

    def __init__(self, escape: Escape, openers: dict[str, str] | None = None, stops: str = "") -> None:
        super().__init__()
        self._escape = escape
        self._openers = openers
        self._stops = stops
        self._plain = _plain_run(stops)
        self._inside = not openers

    def _step(self, buf: str, final: bool) -> Step:
        i = 0
        if not self._inside:
            if not buf:
                self.malformed |= final
                return "", (0 if final else None), 0
            assert self._openers is not None
            closer = self._openers.get(buf[0])
            if closer is None:
                self.malformed = True
                closer = next(iter(self._openers.values()))
            else:
                i = 1
            self._stops, self._inside, self._plain = closer, True, _plain_run(closer)
        out: list[str] = []
        n = len(buf)
        plain = self._plain
        escape = self._escape
        while i < n:
            m = plain.match(buf, i)
            if m is not None:
                out.append(m.group())
                i = m.end()
                if i >= n:
                    break
            if buf[i] != "\\":           # a stop: the closing quote, or what follows a bare value
                return "".join(out), (i + 1 if self._openers else i), n
            r = escape(buf, i, final)
            if r is None:
                return "".join(out), None, i
            text, i, ok = r
            out.append(text)
            self.malformed |= not ok
        if final:
            self.malformed |= bool(self._openers)   # a quoted value ended unclosed
            return "".join(out), n, n
        return "".join(out), None, n


def _args(spec_args: str) -> list[str]:
    return [a for a in spec_args.split(",") if a] if spec_args else []


class Json(Impl):
    """A JSON string as ``json.dumps`` writes it (``{{ v | tojson }}``): ``ascii`` escapes non-ASCII as
    ``\\uXXXX`` (``ensure_ascii``, Jinja's own ``tojson``), ``html`` also writes ``< > & '`` as
    ``\\u003c``... (Jinja's ``htmlsafe_json_dumps``), ``bare`` leaves the quotes to the layout
    (``"{{ (v | tojson)[1:-1] }}"``, or a JSON body cut out of a larger JSON text)."""

    def __init__(self, ascii: bool = False, html: bool = False, bare: bool = False) -> None:
        self.ascii, self.html, self.bare = ascii, html, bare
        flags = [f for f, on in (("ascii", ascii), ("html", html), ("bare", bare)) if on]
        self.spec = "json" + (f"({','.join(flags)})" if flags else "")
        self.self_delimiting = True
        self.openers = ("",) if bare else ('"',)
        escaped = '"\\' + ("<>&'" if html else "")          # written as escapes, never raw
        if ascii:
            plain = chars(c for c in map(chr, range(0x20, 0x80)) if c not in escaped)
        else:
            plain = chars(escaped + _C0, negate=True)
        items: tuple[Node, ...] = (plain, Cat((Lit("\\"), chars('"\\/bfnrt'))),
                                   Cat((Lit("\\u"), Alt((_U4, _U4_PAIR)))))
        self.forms = (Form("", items),) if bare else (Form('"', items, '"'),)

    def encode(self, s: str) -> str:
        text = json.dumps(s, ensure_ascii=self.ascii)
        if self.html:
            text = text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").replace("'", "\\u0027")
        return text[1:-1] if self.bare else text

    def decoder(self) -> IncrementalDecoder:
        if self.bare:
            return BackslashDecoder(_json_escape, stops='"')
        return BackslashDecoder(_json_escape, {'"': '"'})

    @classmethod
    def parse(cls, args: str) -> Json:
        flags = set(_args(args))
        if not flags <= {"ascii", "html", "bare"}:
            raise ValueError(f"json flags: {sorted(flags)}")
        return cls("ascii" in flags, "html" in flags, "bare" in flags)


class Python(Impl):
    """A Python string literal as ``repr(str)`` writes it (a template printing a Python value, e.g.
    ``{{ v }}`` on a list of strings or ``{{ v.__repr__() }}``): single quotes unless the text holds
    a ``'`` and no ``"``; ``\\\\``, the quote, ``\\n \\r \\t``, ``\\xhh``/``\\uXXXX``/``\\UXXXXXXXX``
    for characters that are not printable. Any Python escape (octal too) decodes."""

    spec = "python"
    self_delimiting = True
    openers = ("'", '"')

    def __init__(self) -> None:
        escapes = (Cat((Lit("\\"), chars("\\'\"abfnrtv"))), Cat((Lit("\\x"), HEX, HEX)),
                   Cat((Lit("\\u"), _U4)),
                   Cat((Lit("\\U"), Alt((hex_exactly(0, 0xD7FF, 8), hex_exactly(0xE000, 0x10FFFF, 8))))))
        nonprint = _C0 + "".join(map(chr, range(0x7F, 0xA0)))
        self.forms = tuple(Form(q, (chars(q + "\\" + nonprint, negate=True), *escapes), q) for q in self.openers)

    def encode(self, s: str) -> str:
        return repr(s)

    def decoder(self) -> IncrementalDecoder:
        return BackslashDecoder(_python_escape, {"'": "'", '"': '"'})


class Quoted(Impl):
    """A string in quote `q` with backslash escapes, as a template writes it with a ``replace`` chain:
    ``'"' ~ v | replace('\\\\', '\\\\\\\\') | replace('"', '\\\\"') ~ '"'`` is ``quoted(",backslash)``.

    The quote is always escaped; ``backslash``: so is the backslash (without it a backslash stands
    for itself, and one before the quote cannot be told from an escape); ``nl`` / ``tab`` / ``cr``:
    newline, tab and carriage return are written ``\\n \\t \\r`` (else raw); ``bare``: the quotes
    belong to the layout, the value ends before the first unescaped quote. With ``backslash``,
    ``\\n \\t \\r`` and an escaped quote of any kind decode whatever the flags say."""

    def __init__(self, q: str, backslash: bool, nl: bool = False, tab: bool = False, cr: bool = False,
                 bare: bool = False) -> None:
        if q not in "\"'`" or len(q) != 1:
            raise ValueError(f"quoted: quote {q!r}")
        self.q, self.backslash, self.bare = q, backslash, bare
        flags = [f for f, on in (("backslash", backslash), ("nl", nl), ("tab", tab), ("cr", cr), ("bare", bare)) if on]
        self.spec = f"quoted({','.join([q, *flags])})"
        self.self_delimiting = True
        self.openers = ("",) if bare else (q,)
        raw_escaped = "".join(c for c, on in (("\n", nl), ("\t", tab), ("\r", cr)) if on)
        self._map = str.maketrans({"\\": "\\\\"} if backslash else {})
        self._map.update(str.maketrans({q: "\\" + q, **{c: "\\" + k for k, c in _SIMPLE.items() if c in raw_escaped}}))
        table = {q: q, **{k: c for k, c in _SIMPLE.items() if c in raw_escaped}}
        if backslash:
            table.update({"\\": "\\", "n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "`": "`"})
        self._escape = table_escape(table, "malformed" if backslash else "backslash")
        plain = chars(q + "\\" + raw_escaped, negate=True)
        if backslash:
            items: tuple[Node, ...] = (plain, Cat((Lit("\\"), chars(table))))
        else:
            items = (plain, Cat((plus(Lit("\\")), chars("\\" + raw_escaped, negate=True))))
        self.forms = (Form("", items),) if bare else (Form(q, items, q),)

    def encode(self, s: str) -> str:
        body = s.translate(self._map)
        return body if self.bare else self.q + body + self.q

    def decoder(self) -> IncrementalDecoder:
        if self.bare:
            return BackslashDecoder(self._escape, stops=self.q)
        return BackslashDecoder(self._escape, {self.q: self.q})

    @classmethod
    def parse(cls, args: str) -> Quoted:
        q, *flags = args.split(",") if args else [""]
        known = {"backslash", "nl", "tab", "cr", "bare"}
        if not set(flags) <= known or len(set(flags)) != len(flags):
            raise ValueError(f"quoted flags: {flags}")
        return cls(q, *(f in flags for f in ("backslash", "nl", "tab", "cr", "bare")))


_SHELL_ESCAPE = table_escape({"\\": "\\", '"': '"', "$": "$", "`": "`", "\n": ""}, "literal")


class ShellDouble(Impl):
    """A double-quoted shell word: ``"`` with ``\\\\ \\" \\$ \\``` escaped (a template building a
    command line with ``'"' ~ v | replace('\\\\', '\\\\\\\\') | replace('"', '\\\\"') | replace('$', '\\\\$')
    | replace('`', '\\\\`') ~ '"'``). Any other backslash stands for itself (POSIX); ``bare``:
    the quotes belong to the layout."""

    _MAP = str.maketrans({"\\": "\\\\", '"': '\\"', "$": "\\$", "`": "\\`"})

    def __init__(self, bare: bool = False) -> None:
        self.bare = bare
        self.spec = "shell(dq,bare)" if bare else "shell(dq)"
        self.self_delimiting = True
        self.openers = ("",) if bare else ('"',)
        items: tuple[Node, ...] = (chars('"\\$`', negate=True), Cat((Lit("\\"), ANY)))
        self.forms = (Form("", items),) if bare else (Form('"', items, '"'),)

    def encode(self, s: str) -> str:
        body = s.translate(self._MAP)
        return body if self.bare else f'"{body}"'

    def decoder(self) -> IncrementalDecoder:
        if self.bare:
            return BackslashDecoder(_SHELL_ESCAPE, stops='"')
        return BackslashDecoder(_SHELL_ESCAPE, {'"': '"'})


class Escaped(Impl):
    """Bare text with a backslash before each character of ``chars`` (``key=a\\ b\\,c``: a template
    escaping the separators of its layout with ``replace``). The value ends before the first
    unescaped character of ``chars``; without ``\\`` in ``chars`` a backslash stands for itself
    unless one of ``chars`` follows it."""

    def __init__(self, escaped: str) -> None:
        if not escaped:
            raise ValueError("escaped: no characters")
        self.chars = "".join(sorted(set(escaped)))
        self.spec = f"escaped({json.dumps(self.chars)[1:-1]})"
        self.self_delimiting = True
        self._map = str.maketrans({c: "\\" + c for c in self.chars})
        backslash = "\\" in self.chars
        # with the backslash escaped, any escaped character decodes to itself, unambiguously
        self._escape = _any_escape if backslash else table_escape({c: c for c in self.chars}, "backslash")
        self._stops = self.chars.replace("\\", "")
        plain = chars(self.chars + "\\", negate=True)
        if backslash:
            items: tuple[Node, ...] = (plain, Cat((Lit("\\"), chars(self.chars))))
        else:
            items = (plain, Cat((plus(Lit("\\")), chars("\\", negate=True))))
        self.forms = (Form("", items),)

    def encode(self, s: str) -> str:
        return s.translate(self._map)

    def decoder(self) -> IncrementalDecoder:
        return BackslashDecoder(self._escape, stops=self._stops)

    @classmethod
    def parse(cls, args: str) -> Escaped:
        try:
            text = json.loads('"' + args + '"')
        except ValueError:
            raise ValueError(f"escaped: {args!r}") from None
        return cls(text)


def _any_escape(buf: str, i: int, final: bool) -> tuple[str, int, bool] | None:
    """``\\c`` is ``c`` for any character; a trailing backslash stays (malformed)."""
    if i + 1 >= len(buf):
        return None if not final else ("\\", i + 1, False)
    return buf[i + 1], i + 2, True
