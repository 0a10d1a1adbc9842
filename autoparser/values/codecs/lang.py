"""The language of a codec's encodings, as a tiny regular-expression tree, and its regex printer.

A codec describes the texts it writes as one or more :class:`Form` s: an opening literal, a
repetition of *items* (one decoded character's worth of text each: a plain character, an escape,
a percent-encoded UTF-8 sequence...) and a closing literal. The same description gives
``regex_source`` (here), the GBNF rule (``autoparser.grammar.codecs``) and the ASCII characters
an encoding never holds raw (:func:`never_contains`), so the three cannot disagree.

Items of one form are *deterministic*: which item starts at a position is decided by the text,
and the repetition takes as many as it can; the regex therefore uses possessive repetition and
runs in linear time.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

__all__ = [
    "ANY",
    "HEX",
    "Alt",
    "Cat",
    "Chars",
    "Form",
    "Lit",
    "Node",
    "Star",
    "ascii_only",
    "class_regex",
    "hex_exactly",
    "may_write",
    "never_contains",
    "plus",
    "regex_source",
]


@dataclass(frozen=True)
class Lit:
    """A literal text."""

    text: str


@dataclass(frozen=True)
class Chars:
    """One character of `chars` (or, negated, any character not in `chars`)."""

    chars: frozenset[str]
    negate: bool = False

    def matches(self, c: str) -> bool:
        return (c in self.chars) != self.negate


@dataclass(frozen=True)
class Cat:
    """A sequence."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Alt:
    """A choice; alternatives are told apart by the text (a prefix-free choice)."""

    items: tuple[Node, ...]


@dataclass(frozen=True)
class Star:
    """Zero or more repetitions, as many as the text holds (possessive)."""

    item: Node


Node = Lit | Chars | Cat | Alt | Star


@dataclass(frozen=True)
class Form:
    """One shape of an encoded value: ``opener`` (items)* ``closer``; at least one item with ``min1``."""

    opener: str
    items: tuple[Node, ...]
    closer: str = ""
    min1: bool = False


ANY = Chars(frozenset(), negate=True)
HEX = Chars(frozenset("0123456789abcdefABCDEF"))


def chars(text: Iterable[str], negate: bool = False) -> Chars:
    """Chars over the characters of `text`."""
    return Chars(frozenset(text), negate)


def plus(item: Node) -> Node:
    """One or more repetitions."""
    return Cat((item, Star(item)))


def _hex_digit(lo: int, hi: int) -> Chars:
    """Hex digits lo..hi (both cases)."""
    digits = "".join(f"{d:x}" for d in range(lo, hi + 1))
    return chars(digits + digits.upper())


def hex_exactly(lo: int, hi: int, width: int) -> Node:
    """`width` hex digits (either case) spelling a number in lo..hi."""
    if width == 0:
        return Cat(())
    unit = 16 ** (width - 1)
    alts: list[Node] = []
    first, last = lo // unit, hi // unit
    if first == last:
        return Cat((_hex_digit(first, first), hex_exactly(lo % unit, hi % unit, width - 1)))
    if lo % unit:
        alts.append(Cat((_hex_digit(first, first), hex_exactly(lo % unit, unit - 1, width - 1))))
        first += 1
    tail_full = hi % unit == unit - 1
    mid_last = last if tail_full else last - 1
    if mid_last >= first:
        alts.append(Cat((_hex_digit(first, mid_last), *[HEX] * (width - 1))))
    if not tail_full:
        alts.append(Cat((_hex_digit(last, last), hex_exactly(0, hi % unit, width - 1))))
    return alts[0] if len(alts) == 1 else Alt(tuple(alts))


# --- regex printer -----------------------------------------------------------------------


def _esc(code: int) -> str:
    c = chr(code)
    if c.isascii() and c.isalnum():
        return c
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def class_regex(ch: Chars) -> str:
    """Regex character class for `ch`."""
    if not ch.chars:
        return "[\\s\\S]" if ch.negate else "(?!)"
    points = sorted(ord(c) for c in ch.chars)
    runs: list[list[int]] = []
    for p in points:
        if runs and runs[-1][1] == p - 1:
            runs[-1][1] = p
        else:
            runs.append([p, p])
    body = "".join(_esc(lo) if lo == hi else f"{_esc(lo)}-{_esc(hi)}" for lo, hi in runs)
    return f"[{'^' if ch.negate else ''}{body}]"


def _lit_regex(text: str) -> str:
    return "".join(_esc(ord(c)) for c in text)


def _node_regex(node: Node, until: str = "") -> str:
    if isinstance(node, Lit):
        return _lit_regex(node.text)
    if isinstance(node, Chars):
        return class_regex(node)
    if isinstance(node, Cat):
        return "".join(_node_regex(n, until) for n in node.items)
    if isinstance(node, Alt):
        return "(?:" + "|".join(_node_regex(n, until) for n in node.items) + ")"
    return "(?:" + _node_regex(node.item, until) + ")*+"


def _items_regex(items: tuple[Node, ...], until: str) -> str:
    """One item, as a group; a plain-character item repeats possessively unless `until` guards each step."""
    alts = []
    for item in items:
        text = _node_regex(item)
        alts.append(text + "++" if isinstance(item, Chars) and not until else text)
    body = "(?:" + "|".join(alts) + ")"
    return f"(?:(?!{_lit_regex(until)}){body})" if until else body


def regex_source(forms: tuple[Form, ...], until: str = "") -> str:
    """Linear-time ``regex`` source matching one encoded value of `forms`; `until` (for a form with
    no closer) forbids an item to start where `until` starts."""
    out = []
    for form in forms:
        guard = until if not form.closer else ""
        items = _items_regex(form.items, guard)
        rep = f"{items}++" if form.min1 else f"{items}*+"
        out.append(_lit_regex(form.opener) + rep + _lit_regex(form.closer))
    return out[0] if len(out) == 1 else "(?:" + "|".join(out) + ")"


# --- characters ----------------------------------------------------------------------------


def may_write(node: Node | Form, c: str) -> bool:
    """Whether text matching `node` may hold the character `c`."""
    if isinstance(node, Form):
        return c in node.opener or c in node.closer or any(may_write(n, c) for n in node.items)
    if isinstance(node, Lit):
        return c in node.text
    if isinstance(node, Chars):
        return node.matches(c)
    if isinstance(node, Star):
        return may_write(node.item, c)
    return any(may_write(n, c) for n in node.items)


def never_contains(forms: tuple[Form, ...]) -> frozenset[str]:
    """The ASCII characters no encoding holds raw."""
    return frozenset(c for c in map(chr, range(128)) if not any(may_write(f, c) for f in forms))


def _ascii_node(node: Node) -> bool:
    if isinstance(node, Lit):
        return node.text.isascii()
    if isinstance(node, Chars):
        return not node.negate and all(c.isascii() for c in node.chars)
    if isinstance(node, Star):
        return _ascii_node(node.item)
    return all(_ascii_node(n) for n in node.items)


def ascii_only(forms: tuple[Form, ...]) -> bool:
    """Whether every encoding is ASCII."""
    return all(f.opener.isascii() and f.closer.isascii() and all(_ascii_node(n) for n in f.items) for f in forms)
