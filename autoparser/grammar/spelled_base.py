"""The pieces the value printers share (:mod:`.spelled`, :mod:`.yamlblock`): what follows a value
(:class:`Follow`), JSON's brackets with leaves spelled as a layout's values say
(:class:`SpelledConverter`), numbers in their slots, and small joining helpers."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol

from autoparser.values.codecs import Codec
from autoparser.values.spelling import Slot, Values

from .gbnf import GbnfBuilder, literal
from .pieces import VARYING
from .schema import _Converter, _group, _unique, const_expr, json_rule, space_rule

__all__ = ["Follow", "Next", "SpelledConverter", "ValueSpeller", "cut", "number_expr"]


@dataclass(frozen=True)
class Follow:
    """What may come after a value: ``stop``, the exact text a value that does not delimit itself
    runs through (white space tolerated after a value that does), then the GBNF expression
    ``rest``. ``first``: the value ends at the first ``stop`` (the next item's key); otherwise it may
    hold ``stop`` (the end of the arguments: the reader looks past it at what follows the call)."""

    stop: str = ""
    rest: str = ""
    first: bool = True


Next = tuple[Follow, ...]      # what may come after a value: any of these


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _choice(alts: list[str]) -> str:
    """One expression for alternatives, an empty one making the group optional."""
    kept = _unique([a for a in alts if a])
    if not kept:
        return ""
    if len(kept) < len(alts) and "" in alts:
        return f"( {' | '.join(kept)} )?"
    return _group(kept)


def cut(stop: str) -> tuple[str, str]:
    """(the exact head of `stop` a value can run through, the rest of `stop`): a digit run or
    wildcard ends the head (the rest spells them flexibly)."""
    text = stop
    m = VARYING.search(text)
    if m is None:
        return text, ""
    return text[:m.start()], text[m.start():]


class SpelledConverter(_Converter):
    """JSON brackets and separators, leaves spelled as `values` say (nested ``"spelled"``):
    ``{"a": True, "n": None}``; strings are JSON strings."""

    def __init__(self, b: GbnfBuilder, root: Any, values: Values) -> None:
        super().__init__(b, root, additional_default=True)
        self.values = values

    def typed(self, kind: Any, schema: dict[str, Any], name: str) -> list[str]:
        if kind in ("number", "integer"):
            return [number_expr(self.b, self.values, kind)]
        if kind == "boolean":
            return [_group(_unique([literal(self.values.true), literal(self.values.false)]))]
        if kind == "null":
            return [self.null()]
        if kind in ("object", "array", "string"):
            return super().typed(kind, schema, name)
        return [self.any_value()]

    def null(self) -> str:
        return literal(self.values.null)

    def const(self, value: Any) -> str:
        if value is None or isinstance(value, bool):
            return literal(self.values.null if value is None else self.values.true if value else self.values.false)
        if isinstance(value, (int, float)):
            slot = self.values.integer if isinstance(value, int) and self.values.integer else self.values.number
            return literal(slot.pre + json.dumps(value) + slot.post)
        return const_expr(self.b, value)

    def any_value(self) -> str:
        v = self.values
        key = ("spelled-value", v.true, v.false, v.null, v.number, v.integer)

        def body(value: str) -> str:
            space = space_rule(self.b)
            member = self.b.rule("spelled-member", f'{json_rule(self.b, "string")} {space} ":" {space} {value} {space}')
            mrest = self.b.recursive_rule("spelled-members", lambda r: f'| "," {space} {member} {r}')
            obj = self.b.rule("spelled-object", f'"{{" {space} ( {member} {mrest} )? "}}"')
            arest = self.b.recursive_rule("spelled-items", lambda r: f'| "," {space} {value} {space} {r}')
            arr = self.b.rule("spelled-array", f'"[" {space} ( {value} {space} {arest} )? "]"')
            leaves = [json_rule(self.b, "string"), number_expr(self.b, v, "number"), literal(v.true), literal(v.false),
                      literal(v.null)]
            return " | ".join(_unique([obj, arr, *leaves]))
        return self.b.recursive_rule("spelled-value", body, key=key)


def number_expr(b: GbnfBuilder, values: Values, kind: str) -> str:
    """A number as the slots write it (an integer: its slot; a number: either)."""
    def slotted(slot: Slot, rule: str) -> str:
        return _join(literal(slot.pre) if slot.pre else "", json_rule(b, rule), literal(slot.post) if slot.post else "")
    integer = slotted(values.integer or values.number, "integer")
    if kind == "integer":
        return integer
    number = slotted(values.number, "number")
    return number if values.integer is None or values.integer == values.number else f"( {number} | {integer} )"


class ValueSpeller(Protocol):
    """What a nested printer needs of the :class:`~.spelled.Speller` that calls it."""

    root: Any
    values: Values
    string: Codec

    def string_then(self, nexts: Next) -> str:
        """A string value, then one of `nexts`."""
