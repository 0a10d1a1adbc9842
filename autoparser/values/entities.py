"""Text written with XML / HTML character references (``&quot;``, ``&#34;``, ``&amp;``), read a piece
at a time: JSON arguments a template writes inside an attribute value
(``<call name="f" args="{&quot;city&quot;: &quot;Paris&quot;}"/>``).

Decoding is :func:`html.unescape`'s; a stream decodes up to the start of a reference that may
still be cut (:func:`decodable`), so the pieces decode to what the whole text decodes to, and
:func:`raw_length` maps a length of decoded text back to the raw text it came from.
"""

from __future__ import annotations

import html

import regex

__all__ = ["decodable", "raw_length", "unescape"]

unescape = html.unescape
# the references html.unescape replaces (its own pattern), and one the text may end inside
_REF = regex.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")
_OPEN = regex.compile(r"&(?:#[0-9]*|#[xX][0-9a-fA-F]*|[^\t\n\f <&#;]{0,32})\Z")


def decodable(text: str) -> int:
    """How much of ``text`` decodes as it will once more text follows: all of it, or up to a
    reference it may end inside (``&quo``, ``&#3``, ``&amp`` before its ``;``)."""
    m = _OPEN.search(text, max(0, len(text) - 64))
    return m.start() if m is not None else len(text)


def raw_length(raw: str, decoded: int) -> int:
    """The length of the start of ``raw`` that decodes to ``decoded`` characters."""
    i = n = 0
    while i < len(raw) and n < decoded:
        m = _REF.match(raw, i) if raw[i] == "&" else None
        step = m.end() - i if m is not None else 1
        n += len(unescape(raw[i:i + step]))
        i += step
    return i
