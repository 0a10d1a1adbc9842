"""Spellings of booleans and null, and numerals: the typed values a template writes bare.

A template writes ``true`` as whatever its expression gives (``true``, ``True``, ``on``, ``yes``,
``1``, ``#t``...), so the spelling is simply the rendered text of the probe value:
:func:`learn_spelling` records it and :func:`decode_scalar` reads it back, then numerals (JSON's,
which Python's ``repr`` of an int or finite float also is).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

__all__ = ["NOT_SCALAR", "NotScalar", "Spellings", "decode_number", "decode_scalar", "learn_spelling"]


class NotScalar:
    """The type of :data:`NOT_SCALAR`: the text is not a boolean, null or number."""

    _instance: NotScalar | None = None

    def __new__(cls) -> NotScalar:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_SCALAR"

    def __bool__(self) -> bool:
        return False


NOT_SCALAR: Final = NotScalar()
Scalar = bool | None | int | float

_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?")


@dataclass(frozen=True)
class Spellings:
    """How the template writes ``true``, ``false`` and null (None: unknown, or not told apart from
    another value); JSON's by default."""

    true: str | None = "true"
    false: str | None = "false"
    null: str | None = "null"


def learn_spelling(samples: Iterable[tuple[bool | None, str]]) -> Spellings:
    """Spellings from (value, rendered text) samples: ``[(True, "on"), (False, "off"), (None, "~")]``.
    A value rendered two ways, or two values rendered alike, is left unknown (None)."""
    seen: dict[bool | None, set[str]] = {True: set(), False: set(), None: set()}
    for value, text in samples:
        if value in seen:
            seen[value].add(text)
    one = {v: next(iter(t)) if len(t) == 1 else None for v, t in seen.items()}
    texts = [t for t in one.values() if t is not None]
    ok = {v: t if t is not None and texts.count(t) == 1 else None for v, t in one.items()}
    return Spellings(ok[True], ok[False], ok[None])


def decode_number(text: str) -> int | float | NotScalar:
    """A JSON numeral (``7``, ``-7.5``, ``1e+30``) as an int or a finite float, else NOT_SCALAR."""
    m = _NUMBER.fullmatch(text)
    if m is None:
        return NOT_SCALAR
    try:
        if m.group(1) is None and m.group(2) is None:
            return int(text)
        value = float(text)
    except ValueError:            # more digits than int() converts
        return NOT_SCALAR
    return value if math.isfinite(value) else NOT_SCALAR


def decode_scalar(text: str, spellings: Spellings = Spellings(), numbers: bool = True) -> Scalar | NotScalar:
    """``True`` / ``False`` / ``None`` for their spellings (checked first: a ``1`` spelling ``true``
    is True), then a number (with `numbers`), else NOT_SCALAR."""
    if text == spellings.true:
        return True
    if text == spellings.false:
        return False
    if text == spellings.null:
        return None
    return decode_number(text) if numbers else NOT_SCALAR
