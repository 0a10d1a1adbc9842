"""What the call readers tolerate in a call's markers: small pieces a reader of any call layout uses.

Models write a call's markers otherwise than the template renders them (issue 22); each helper here
is one general rule, read off the format, and only the tolerant engine uses them (the grammars
stay strict):

* :func:`loose_marker`: a marker in the spellings models also write (``<tool_call>`` for
  ``<|tool_call|>``), a namespace before a declared tool's name optional (:func:`markers.loose`);
* :func:`close_head` / :func:`close_tail`: a close of several pieces (``</function></tool_call>``)
  that stops after its first piece, and the rest that may still follow;
* :func:`self_closing`: a name tag written self-closing (``<invoke name="f"/>``), a call with no
  arguments;
* :func:`drifted_close_source`: an item's closing tag written with its name drifted or cut
  (``</parameter1>``, ``</parameter_x>``, ``</parameter`` for ``</parameter>``), read as that close
  only where the next item (or the end of the arguments) follows it at once.

A layout-level "optional literal" (a skeleton piece that may be left out, such as an id block
``[CALL_ID]ID`` before ``[ARGS]``) would generalise the last two: the reader tries the piece, and
when it is absent goes on with what follows it (``TaggedCallReader._id_block_left_out`` does this for
the id block today).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import regex

from .. import markers as mk
from ..markers import definition as dm
from ..markers.definition import token_shaped

if TYPE_CHECKING:
    from ..analysis.model import ToolFormat


def loose_marker(marker: str, names: tuple[str, ...] = ()) -> regex.Pattern[str] | None:
    """A marker of a call as the readers match it: in the spellings models also write, a namespace before
    one of ``names`` optional (:func:`autoparser.markers.loose`); None for an empty marker."""
    src = mk.loose(marker, names)
    return mk.compile_source(src) if src else None


def self_closing_source(fmt: ToolFormat) -> str:
    """A name suffix that closes the tag its name prefix opened (``<invoke name="`` + ``">``), written
    self-closing (``"/>``): the call has no arguments. "" when the format has no such tag."""
    suffix = fmt.name_suffix.strip()
    if not suffix.endswith(">") or suffix.endswith("/>") or "<" in suffix or dm.unclosed(fmt.name_prefix) < 0 \
            or not fmt.call_close.strip() or fmt.args == "literal":
        return ""
    return mk.pattern(suffix[:-1]) + r"\s*/>"


def self_closing(fmt: ToolFormat) -> regex.Pattern[str] | None:
    """:func:`self_closing_source` compiled (None when the format has none)."""
    src = self_closing_source(fmt)
    return mk.compile_source(src) if src else None


_DRIFT_MAX = 24   # characters a drifted closing tag may add to its name


def drifted_close_source(closer: str) -> str:
    """A regex source for ``closer``, a closing tag (``</parameter>``, after optional white space),
    written otherwise than it is: its name with up to a few more name characters, or cut before
    its ``>`` (never the closer itself). "" when ``closer`` is not a single closing tag. The caller
    adds what must follow it (the next item), so a value that ends in such text (``</parameters>``)
    and is then closed for real keeps it."""
    piece = closer.strip()
    if " " in piece or not (piece.startswith("</") and piece.endswith(">")) or len(piece) < 4:
        return ""
    stem = piece[:-1]
    if not token_shaped(stem) or any(ch in stem[2:] for ch in "<>/"):
        return ""
    return (r"\s*(?!" + regex.escape(piece) + ")" + regex.escape(stem)
            + r"[^\s<>/]{0," + str(_DRIFT_MAX) + r"}>?")


def close_tail(marker: str) -> regex.Pattern[str] | None:
    """The pieces of a call's close after its first (``</tool_call>`` of ``</function></tool_call>``), or None."""
    pieces = mk.tokens(marker)
    return loose_marker(" ".join(pieces[1:])) if len(pieces) > 1 else None


def close_head(marker: str) -> regex.Pattern[str] | None:
    """The first piece of a call's close of several pieces, when it is token-shaped (``</function>`` of
    ``</function></tool_call>``): models stop after it. None otherwise."""
    pieces = mk.tokens(marker)
    if len(pieces) < 2 or not token_shaped(pieces[0]):
        return None
    return loose_marker(pieces[0])


__all__ = ["close_head", "close_tail", "drifted_close_source", "loose_marker", "self_closing", "self_closing_source"]
