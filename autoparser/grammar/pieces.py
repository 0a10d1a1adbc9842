"""Marker pieces as GBNF: literal text with flexible digit runs and bounded wildcards.

A marker is matched as the parser matches it (``autoparser.markers``): its whitespace-split
pieces with bounded whitespace between them, a digit run any index (``functions.NAME:0`` of
the second call is ``:1``), ``\\x03`` a bounded wildcard, ``\\x04`` a name (a tool's, or an
argument key written again), ``\\x05`` header fields.
"""

from __future__ import annotations

import re

from .. import markers as mk
from .gbnf import literal

WS_MAX = 32            # whitespace between and before markers
DIGITS_MAX = 12        # a digit run in a marker ("functions.NAME:0")
WILDCARD_MAX = 64      # varying attribute text in a marker (\x03)

WILD = {mk.WILDCARD: f"[^<>\\n]{{0,{WILDCARD_MAX}}}", mk.NAME_WILDCARD: f"[A-Za-z0-9_.-]{{1,{WILDCARD_MAX}}}",
        mk.HEADER: "[^\\n{]{0," + str(mk.HEADER_MAX) + "}"}
VARYING = re.compile(r"\d|[\x03\x04\x05]")


def piece_expr(piece: str) -> str:
    """One whitespace-free marker piece: literal text, flexible digit runs, bounded wildcards."""
    parts = []
    for chunk in re.split(r"(\d+|\x03|\x04|\x05)", piece):
        if not chunk:
            continue
        if chunk in WILD:
            parts.append(WILD[chunk])
        elif chunk.isdigit():
            parts.append(f"[0-9]{{1,{DIGITS_MAX}}}")
        else:
            parts.append(literal(chunk))
    return " ".join(parts)


def pieces_expr(text: str, ws: str) -> str:
    """`text`'s pieces joined by the white space rule `ws` ("" when it is blank)."""
    return f" {ws} ".join(piece_expr(p) for p in mk.tokens(text))


__all__ = ["DIGITS_MAX", "VARYING", "WILD", "WILDCARD_MAX", "WS_MAX", "piece_expr", "pieces_expr"]
