"""Text diffing that respects marker boundaries.

Common prefixes and suffixes are cut back so that a marker such as
``<tool_call>``, ``[TOOL_CALLS]`` or ``✦CALL✦`` is never split between the shared part and
the differing part (llama.cpp's "tag boundary fixing"). What a marker is:
:mod:`autoparser.markers.definition`.
"""

from __future__ import annotations

import regex

from ..markers import definition as mk

MARKER = mk.SHAPES   # the shapes alone; the finders below also know the template's own markers


def common_prefix_len(a: str, b: str, digits_alike: bool = False) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and (a[i] == b[i] or (digits_alike and a[i].isdigit() and b[i].isdigit())):
        i += 1
    return i


def common_suffix_len(a: str, b: str, digits_alike: bool = False) -> int:
    """Length of the common suffix; with ``digits_alike`` any digit matches any digit (an index that
    differs between two calls: ``<|call:1|>`` and ``<|call:2|>`` are one marker)."""
    n = min(len(a), len(b))
    i = 0
    while i < n and (a[-1 - i] == b[-1 - i] or (digits_alike and a[-1 - i].isdigit() and b[-1 - i].isdigit())):
        i += 1
    return i


def fix_prefix_end(text: str, n: int) -> int:
    """Move ``n`` back so that ``text[:n]`` does not end inside a marker."""
    last_open = mk.unclosed(text[:n])
    if last_open >= 0:
        return last_open
    inside = mk.spanning(text, n) if mk.current().pieces else None
    return inside.start() if inside is not None else n


def fix_suffix_start(text: str, start: int) -> int:
    """Move ``start`` forward so that ``text[start:]`` does not begin inside a marker."""
    first_close = mk.unopened_close(text[start:])
    if first_close >= 0 and mk.unclosed(text[:start]) >= 0:
        return start + first_close + 1
    inside = mk.spanning(text, start) if mk.current().pieces else None
    return inside.end() if inside is not None else start


def shared_prefix(a: str, b: str, digits_alike: bool = False) -> int:
    """Length of the marker-safe common prefix."""
    return fix_prefix_end(a, common_prefix_len(a, b, digits_alike))


def shared_suffix(a: str, b: str, digits_alike: bool = False) -> int:
    """Length of the marker-safe common suffix (counted from the end of ``a``)."""
    n = common_suffix_len(a, b, digits_alike)
    start = fix_suffix_start(a, len(a) - n)
    return len(a) - start


def markers_in(text: str) -> list[str]:
    return mk.markers_in(text)


def last_marker(text: str) -> regex.Match[str] | None:
    return mk.last(text)


def first_marker(text: str) -> regex.Match[str] | None:
    return mk.first(text)
