"""A tool call's layout: literal pieces and holes, and how the values in the holes are written.

A call is a sequence of :class:`Piece` s (:class:`CallLayout`): literal text the template writes
and holes the data fills (the function's name, the call's id, its arguments). The arguments are
an :class:`ArgsLayout`: a JSON (or Python-literal) object, possibly written inside a string
codec (a JSON string holding JSON, an attribute value with character references), or a sequence
of :class:`Items` (key/value pairs or positional values) whose values are written as
:class:`Values` says: per JSON type, constant text around the value and a codec for its body
(:mod:`autoparser.values.codecs` names codecs by a spec string such as ``"json"`` or ``"raw"``).

Everything here is plain frozen data learned from renderings (:mod:`.learn`); nothing names a
model. The reader (:mod:`autoparser.runtime.layout`), the strict PEG and the GBNF
(:mod:`autoparser.grammar`) are three interpreters of the same description.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ...values.spelling import KEY_AGAIN, Items, Slot, Values

PieceKind = Literal["lit", "name", "id", "args", "name_again"]
ArgsKind = Literal["json", "python", "items"]


@dataclass(frozen=True)
class Piece:
    """One part of a call: a literal (``text``) or a hole (``name``, ``id``, ``args``).

    ``name_again`` is the name written a second time (a closing tag ``</NAME>``): any name is
    read there. ``codec`` is how a name or id is written (``"raw"``: as it is).
    """

    kind: PieceKind
    text: str = ""
    codec: str = "raw"


@dataclass(frozen=True)
class ArgsLayout:
    """How the arguments hole is written: a JSON / Python-literal object (``kind`` "json" /
    "python", written by ``serializer``, inside the string codec ``codec`` when the template
    escapes it: ``"json"`` for a JSON string holding the JSON), or :class:`Items`."""

    kind: ArgsKind = "json"
    codec: str = ""
    serializer: str = "json"         # kind "json": "json" or "json(compact)" as the template writes it
    items: Items | None = None
    inner_open: str = ""             # items inside a codec: text always written before them inside it ("{")
    inner_close: str = ""            # ... and after them


@dataclass(frozen=True)
class CallLayout:
    """One call, after the call's start marker: its pieces in order, and how its arguments are written."""

    pieces: tuple[Piece, ...] = ()
    args: ArgsLayout = field(default_factory=ArgsLayout)

    def holes(self) -> tuple[str, ...]:
        return tuple(p.kind for p in self.pieces if p.kind != "lit")

    def texts(self) -> tuple[str, ...]:
        """The literal texts of the call's structure: its pieces and its items' texts (the markers a
        decoder must keep are among them)."""
        out = [p.text for p in self.pieces if p.kind == "lit"]
        if self.args.items is not None:
            out += _item_texts(self.args.items, 0)
        return tuple(t for t in dict.fromkeys(out) if t)

    def spellings(self) -> tuple[str, ...]:
        """The texts values are written with (around strings and numbers, booleans and null:
        ``<|"|>`` ... ``<|"|>``, ``True``)."""
        v = self.args.items.values if self.args.items is not None else None
        if v is None:
            return ()
        out = [v.string.pre, v.string.post, v.number.pre, v.number.post, v.true, v.false, v.null,
               v.nested_pre, v.nested_post]
        out += [v.integer.pre, v.integer.post] if v.integer is not None else []
        return tuple(t for t in dict.fromkeys(out) if t)

    def describe(self) -> str:
        """The layout in one line: literals quoted, holes named (``"<f=" NAME ">" ARGS "</f>"``)."""
        out = []
        for p in self.pieces:
            if p.kind == "lit":
                out.append(_quote(p.text))
            elif p.kind == "args":
                out.append("ARGS")
            else:
                out.append(p.kind.upper() + ("" if p.codec == "raw" else f"[{p.codec}]"))
        return " ".join(out)


def _item_texts(items: Items, depth: int) -> list[str]:
    out = [items.open, items.close, items.sep, items.item_pre, items.kv, items.item_post, items.key.pre, items.key.post]
    out += [t for f in items.frames for t in (f.item_pre, f.kv, f.item_post)]
    v = items.values
    if v is not None and depth < 4:
        for nested in (v.array, v.object):     # own-syntax containers (their values are these)
            if nested is not None:
                out += _item_texts(nested, depth + 1)
    return out


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"').replace(KEY_AGAIN, "KEY") + '"'


__all__ = ["KEY_AGAIN", "ArgsKind", "ArgsLayout", "CallLayout", "Items", "Piece", "PieceKind", "Slot", "Values"]
