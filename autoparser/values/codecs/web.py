"""Codecs of the web: percent-encoding (URLs, query strings) and XML / HTML character references."""

from __future__ import annotations

import html.entities
import re

from .base import Impl, IncrementalDecoder, Step
from .lang import Cat, Chars, Form, Lit, Node, chars, hex_exactly

__all__ = ["Entities", "Percent"]

_UNRESERVED = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-~"
_ESCAPES = re.compile("(?:%[0-9A-Fa-f]{2})+")
_ASCII_ESCAPES = {f"%{b:02{x}}": chr(b) for b in range(0x80) for x in "xX"}
_RUN = re.compile("[^%]+")
_PLUS_RUN = re.compile("[^%+]+")
_OPEN_ESCAPE = re.compile("%[0-9A-Fa-f]?\\Z")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]+")
# the well-formed UTF-8 sequences (Unicode table 3-7), as byte ranges
_UTF8 = (((0x00, 0x7F),), ((0xC2, 0xDF), (0x80, 0xBF)), ((0xE0, 0xE0), (0xA0, 0xBF), (0x80, 0xBF)),
         ((0xE1, 0xEC), (0x80, 0xBF), (0x80, 0xBF)), ((0xED, 0xED), (0x80, 0x9F), (0x80, 0xBF)),
         ((0xEE, 0xEF), (0x80, 0xBF), (0x80, 0xBF)), ((0xF0, 0xF0), (0x90, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
         ((0xF1, 0xF3), (0x80, 0xBF), (0x80, 0xBF), (0x80, 0xBF)),
         ((0xF4, 0xF4), (0x80, 0x8F), (0x80, 0xBF), (0x80, 0xBF)))
_UTF8_ITEMS: tuple[Node, ...] = tuple(Cat(tuple(Cat((Lit("%"), hex_exactly(lo, hi, 2))) for lo, hi in seq))
                                      for seq in _UTF8)


def _incomplete_tail(data: bytes | bytearray) -> int:
    """How many bytes at the end of `data` start a UTF-8 sequence that is not complete yet."""
    for k in range(1, min(3, len(data)) + 1):
        b = data[-k]
        if b & 0xC0 == 0x80:
            continue
        need = 2 if b < 0xE0 else 3 if b < 0xF0 else 4
        return k if b >= 0xC0 and k < need else 0
    return 0


def _utf8(data: bytes | bytearray, src: str, start: int) -> tuple[str, bool]:
    """Decode percent-escaped bytes (``src[start:]`` spells them, three characters a byte); bytes
    that are not UTF-8 stay as their ``%XX`` text (not well formed)."""
    text = bytes(data).decode("utf-8", "surrogateescape")
    out: list[str] = []
    pos = last = 0            # pos: bytes read so far
    for m in _ESCAPED_BYTE.finditer(text):
        good = text[last:m.start()]
        out.append(good)
        pos += len(good.encode())
        n = m.end() - m.start()
        out.append(src[start + 3 * pos:start + 3 * (pos + n)])
        pos += n
        last = m.end()
    if not out:
        return text, True
    out.append(text[last:])
    return "".join(out), False


class _PercentDecoder(IncrementalDecoder):
    __slots__ = ("_plus", "_run")

    def __init__(self, plus: bool) -> None:
        super().__init__()
        self._plus = plus
        self._run = _PLUS_RUN if plus else _RUN

    def _step(self, buf: str, final: bool) -> Step:
        out: list[str] = []
        i, n = 0, len(buf)
        while i < n:
            m = self._run.match(buf, i)
            if m is not None:
                out.append(m.group())
                i = m.end()
                if i >= n:
                    break
            if buf[i] == "+":
                out.append(" ")
                i += 1
                continue
            esc = _ESCAPES.match(buf, i)
            j = esc.end() if esc is not None else i
            # the text may end inside the escapes: at their end, or in a cut "%" / "%4" after them
            hold = not final and j > n - 3 and (j == n or _OPEN_ESCAPE.match(buf, j) is not None)
            if j == i + 3 and not hold and buf[i:j] in _ASCII_ESCAPES:
                out.append(_ASCII_ESCAPES[buf[i:j]])
                i = j
                continue
            if esc is None:
                if hold:
                    return "".join(out), None, i
                out.append("%")           # a percent sign not followed by two hex digits
                self.malformed = True
                i += 1
                continue
            data = bytes.fromhex(esc.group().replace("%", ""))
            tail = _incomplete_tail(data) if hold else 0
            text, ok = _utf8(data[:len(data) - tail], buf, i)
            out.append(text)
            self.malformed |= not ok
            if hold:
                return "".join(out), None, j - 3 * tail
            i = j
        return "".join(out), None, n


class Percent(Impl):
    """Percent-encoding of the UTF-8 bytes, as ``urllib.parse.quote`` writes it: Jinja's
    ``{{ v | urlencode }}`` on a string is ``percent(%20)`` (``/`` left alone); its query-string
    form (``urlencode`` on a dict, ``quote_plus``) is ``percent(plus)``: a space is ``+`` and
    ``/`` is escaped. ``safe=`` lists the characters left raw besides the unreserved ``A-Z a-z 0-9
    _ . - ~`` when they differ from those defaults. Not self-delimiting; it never writes a raw
    space, ``&``, ``=``, ``;``, ``<``... (``never_contains``), which is where a value ends."""

    def __init__(self, plus: bool = False, safe: str | None = None) -> None:
        self.plus = plus
        self.safe = ("" if plus else "/") if safe is None else "".join(sorted(set(safe)))
        if not self.safe.isascii() or "%" in self.safe or (plus and "+" in self.safe):
            raise ValueError(f"percent: safe {self.safe!r}")
        space = "plus" if plus else "%20"
        default = "" if plus else "/"
        self.spec = f"percent({space})" if self.safe == default else f"percent({space},safe={self.safe})"
        self._safe_bytes = (_UNRESERVED + self.safe).encode()
        self._quoted = [chr(b) if b in self._safe_bytes else f"%{b:02X}" for b in range(256)]
        if plus:
            self._quoted[ord(" ")] = "+"
        items: tuple[Node, ...] = (chars(_UNRESERVED + self.safe), *((Lit("+"),) if plus else ()), *_UTF8_ITEMS)
        self.forms = (Form("", items),)

    def encode(self, s: str) -> str:
        """``urllib.parse.quote(s, safe)``, or ``quote_plus``: UTF-8 bytes, each unsafe one as ``%XX``."""
        data = s.encode("utf-8", "surrogatepass")
        if not data.rstrip(self._safe_bytes):
            return s
        return "".join(map(self._quoted.__getitem__, data))

    def decoder(self) -> IncrementalDecoder:
        return _PercentDecoder(self.plus)

    @classmethod
    def parse(cls, args: str) -> Percent:
        space, _, safe = args.partition(",")
        if space not in ("%20", "plus") or (safe and not safe.startswith("safe=")):
            raise ValueError(f"percent: {args!r}")
        return cls(space == "plus", safe[5:] if safe else None)


_DQ = {"-": "", "quot": "&quot;", "#34": "&#34;", "#x22": "&#x22;"}
_SQ = {"-": "", "apos": "&apos;", "#39": "&#39;", "#x27": "&#x27;"}
_ALIASES = {"xml": ("-", "-"), "html": ("#34", "#39")}
_REF = re.compile(r"&(?:#[0-9]{1,7};|#[xX][0-9a-fA-F]{1,6};|[A-Za-z][A-Za-z0-9]{1,31};)")
_OPEN_REF = re.compile(r"&(?:#[0-9]{0,7}|#[xX][0-9a-fA-F]{0,6}|[A-Za-z][A-Za-z0-9]{0,31})?\Z")


def _reference(ref: str) -> str | None:
    """The character a complete reference (``&amp;``, ``&#34;``, ``&#x27;``) stands for."""
    if ref[1] != "#":
        return html.entities.html5.get(ref[1:])
    code = int(ref[3:-1], 16) if ref[2] in "xX" else int(ref[2:-1])
    return chr(code) if 0 < code <= 0x10FFFF and not 0xD800 <= code <= 0xDFFF else None


class _EntityDecoder(IncrementalDecoder):
    __slots__ = ()

    def _step(self, buf: str, final: bool) -> Step:
        out: list[str] = []
        i, n = 0, len(buf)
        while i < n:
            j = buf.find("&", i)
            if j < 0:
                out.append(buf[i:])
                break
            out.append(buf[i:j])
            m = _REF.match(buf, j)
            c = _reference(m.group()) if m is not None else None
            if m is not None and c is not None:
                out.append(c)
                i = m.end()
                continue
            if m is None and not final and _OPEN_REF.match(buf, j) is not None:
                return "".join(out), None, j
            out.append("&")
            self.malformed = True
            i = j + 1
        return "".join(out), None, n


class Entities(Impl):
    """XML / HTML character references: ``&amp; &lt; &gt;`` always, and the quotes as the variant
    writes them. ``entities(html)`` is ``markupsafe.escape``, i.e. Jinja's ``{{ v | e }}`` and
    autoescape (``&#34; &#39;``); ``entities(xml)`` is ``xml.sax.saxutils.escape`` (quotes raw);
    ``entities(quot,#x27)`` is ``html.escape``; ``entities(quot,apos)`` the five XML entities; a
    ``-`` leaves that quote raw. Any reference decodes (named ones by HTML5's table). Not
    self-delimiting; it never writes a raw ``<`` or ``>``."""

    def __init__(self, dq: str = "-", sq: str = "-") -> None:
        if dq not in _DQ or sq not in _SQ:
            raise ValueError(f"entities: {dq!r}, {sq!r}")
        alias = next((a for a, pair in _ALIASES.items() if pair == (dq, sq)), None)
        self.spec = f"entities({alias})" if alias else f"entities({dq},{sq})"
        table = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': _DQ[dq], "'": _SQ[sq]}
        table = {c: w for c, w in table.items() if w}
        self._map = str.maketrans(table)
        items: tuple[Node, ...] = (Chars(frozenset(table), negate=True), *(Lit(w) for w in table.values()))
        self.forms = (Form("", items),)

    def encode(self, s: str) -> str:
        return s.translate(self._map)

    def decoder(self) -> IncrementalDecoder:
        return _EntityDecoder()

    @classmethod
    def parse(cls, args: str) -> Entities:
        if args in _ALIASES:
            return cls(*_ALIASES[args])
        dq, _, sq = args.partition(",")
        return cls(dq, sq)
