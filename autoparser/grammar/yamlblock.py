"""GBNF for arrays and objects written as YAML blocks (nested ``"yaml"``, :mod:`autoparser.values.yamlblock`).

A block is its items on the lines below the key, each a line break, the level's indentation,
then ``KEY:`` (an object's declared properties in order, optional ones possibly left out; any
keys when it declares none) or ``-`` (an array's items), then the item's value: a leaf after one
space, spelled as the layout's values say (a string in its slot and codec, a number, the
boolean and null texts, null written as nothing right after the ``:``), an empty container in
flow style (`` []``, `` {}``), or a non-empty container as a block one level deeper. Deeper than
:data:`MAX_LEVEL` a container is JSON after the space (the reader reads a flow value there too).
"""

from __future__ import annotations

from typing import Any

from ..values.spelling import Values
from ..values.yamlblock import DEFAULT, block_spec
from .gbnf import GbnfBuilder, char_class, literal, sanitize_name
from .lines import ordered
from .schema import _group, _unique, json_rule
from .spelled_base import Follow, SpelledConverter, ValueSpeller

__all__ = ["block_rule"]

MAX_LEVEL = 4
_ANY_KEY = "[A-Za-z_] [A-Za-z0-9_.$@-]{0,63}"


def block_rule(speller: ValueSpeller, b: GbnfBuilder, schema: dict[str, Any], kind: str, name: str) -> str:
    """An array or object (`kind`) of `schema` written as a block after its key's ``:`` (at the
    top level, the white space after ``:`` is the key/value separator's), or its empty flow form."""
    first, step = block_spec(speller.values.nested) or DEFAULT
    conv = _BlockConverter(b, speller, " " * first, " " * step, 0)
    block = conv.object_block(schema, name) if kind == "object" else conv.array_block(schema, name)
    return _group(_unique([block, literal("{}" if kind == "object" else "[]")]))


class _BlockConverter(SpelledConverter):
    """Values after a block item's ``KEY:`` or ``-`` at indentation `ind`: each alternative holds
    its own leading text (a space before a leaf, a line break before a deeper block)."""

    def __init__(self, b: GbnfBuilder, speller: ValueSpeller, ind: str, step: str, level: int) -> None:
        super().__init__(b, speller.root, speller.values)
        self.speller = speller
        self.ind = ind
        self.step = step
        self.level = level
        self._deeper: _BlockConverter | None = None

    @property
    def deeper(self) -> _BlockConverter:
        if self._deeper is None:
            self._deeper = _BlockConverter(self.b, self.speller, self.ind + self.step, self.step, self.level + 1)
        return self._deeper

    def _name(self, name: str) -> str:
        return sanitize_name(f"{name}-y{self.level}")

    # ---------------------------------------------------------------- leaves (after one space)
    def typed(self, kind: Any, schema: dict[str, Any], name: str) -> list[str]:
        if kind in ("object", "array"):
            if self.level >= MAX_LEVEL:
                return [_space(json_rule(self.b, kind))]
            empty = literal(" {}" if kind == "object" else " []")
            block = self.deeper.object_block(schema, name) if kind == "object" else \
                self.deeper.array_block(schema, name)
            return [block, empty]
        if kind == "string":
            return [_space(self.string())]
        if kind == "null":
            return [self.null()]
        return [_space(x) for x in super().typed(kind, schema, name)]

    def string(self) -> str:
        sp = self.speller
        if sp.string.self_delimiting:
            return sp.string_then((Follow(),))
        s: Values = self.values
        line = self.b.rule("yaml-line-text", char_class("\r\n", negate=True) + "+")
        return " ".join(x for x in (literal(s.string.pre) if s.string.pre else "", line,
                                    literal(s.string.post) if s.string.post else "") if x)

    def null(self) -> str:
        null = self.values.null
        return literal(" " + null) if null else '""'

    def const(self, value: Any) -> str:
        if value is None:
            return self.null()
        return _space(super().const(value))

    def any_value(self) -> str:
        v = self.values

        def body(r: str) -> str:
            del r
            leaves = [_space(self.string()), *self.typed("number", {}, "n"),
                      _space(_group(_unique([literal(v.true), literal(v.false)]))), self.null()]
            return " | ".join(_unique([*leaves, *self.typed("object", {}, "any"), *self.typed("array", {}, "any")]))
        return self.b.recursive_rule(f"yaml-any-y{self.level}", body, key=("yaml-any", self.level, v))

    # ---------------------------------------------------------------- blocks (a line break first)
    def object_block(self, schema: dict[str, Any], name: str) -> str:
        schema = self.deref(schema)
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict) or not props:
            key = self.b.rule("yaml-key", _ANY_KEY)
            line = f"{literal(chr(10) + self.ind)} {key} \":\""
            item = f"{line} {self.any_value()}"
            return self.b.recursive_rule(self._name(f"{name}-anymap"), lambda r: f"{item} {r}?")
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        slots = []
        for key, prop in props.items():
            value = self.b.rule(self._name(f"{name}-{key}"), " | ".join(self.alts(prop, self._name(f"{name}-{key}"))))
            slots.append((f"{literal(chr(10) + self.ind + str(key) + ':')} {value}", key in required))
        return ordered(slots, "", True)

    def array_block(self, schema: dict[str, Any], name: str) -> str:
        schema = self.deref(schema)
        items = schema.get("items") if isinstance(schema, dict) else None
        value = self.b.rule(self._name(f"{name}-item"), " | ".join(self.alts(items if isinstance(items, dict) else {},
                                                                              self._name(f"{name}-item"))))
        line = literal("\n" + self.ind + "-")
        return self.b.recursive_rule(self._name(f"{name}-seq"), lambda r: f"{line} {value} {r}?")


def _space(expr: str) -> str:
    return f'" " {expr}'
