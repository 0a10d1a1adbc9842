"""How a template spells argument values: per JSON type, text around the value and a codec.

:class:`Values` is learned from renders of probe values (``analysis.layout``); here are its
two directions: :func:`encode_value` writes a value as the template would, and
:func:`decode_value` reads a value's whole text back, typed by the argument's JSON schema when
the spelling alone cannot tell (a template that writes strings raw writes ``7`` for the string
"7" and for the number 7). Strings stream through the codec's incremental decoder instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import regex

from .codecs import Codec
from .pyliteral import python_to_json


@dataclass(frozen=True)
class Slot:
    """How a string or a number is written: ``pre`` + codec(value) + ``post``."""

    pre: str = ""
    post: str = ""
    codec: str = "raw"


@dataclass(frozen=True)
class Values:
    """How argument values of each JSON type are written, after the key/value separator.

    ``string`` and ``number`` are slots; ``true``, ``false`` and ``null`` the whole texts the
    template writes for them; ``nested`` how arrays and objects are written: a serializer
    (``"json"``, ``"json(compact)"``, ``"python"``) with ``nested_pre``/``nested_post`` around
    it, escaped with the string codec ``nested_codec`` when the template writes it as a string.
    """

    string: Slot = field(default_factory=Slot)
    number: Slot = field(default_factory=Slot)
    true: str = "true"
    false: str = "false"
    null: str = "null"
    nested: str = "json"
    nested_pre: str = ""
    nested_post: str = ""
    nested_codec: str = ""


NUMBER = regex.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")


def nested_text(value: Any, serializer: str, wrap: str = "", values: Values | None = None) -> str:
    """An array or object as the serializer writes it, escaped with the string codec ``wrap``:
    ``json`` / ``json(compact)`` (JSON's separators), ``python`` (``str()`` of the value), or
    ``spelled``: JSON's brackets and separators with each leaf spelled as ``values`` say
    (``{"a": True, "b": None}``)."""
    if serializer == "json(compact)":
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    elif serializer == "python":
        text = str(value)
    elif serializer == "spelled" and values is not None:
        text = _spelled(value, values)
    else:
        text = json.dumps(value, ensure_ascii=False)
    return Codec.from_spec(wrap).encode(text) if wrap else text


def _spelled(value: Any, values: Values) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(json.dumps(str(k), ensure_ascii=False) + ": " + _spelled(v, values)
                               for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_spelled(v, values) for v in value) + "]"
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return encode_value(values, value)


def encode_value(values: Values, value: Any) -> str:
    """One value as the template writes it."""
    if value is True:
        return values.true
    if value is False:
        return values.false
    if value is None:
        return values.null
    if isinstance(value, str):
        s = values.string
        return s.pre + Codec.from_spec(s.codec).encode(value) + s.post
    if isinstance(value, (int, float)):
        return values.number.pre + json.dumps(value) + values.number.post
    return values.nested_pre + nested_text(value, values.nested, values.nested_codec, values) + values.nested_post


def schema_types(prop: Any) -> frozenset[str]:
    """The JSON types an argument's schema allows (empty: any)."""
    return _types(prop, 0)


_JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


# type names schemas in the wild use for the JSON types
_ALIASES = {"float": "number", "double": "number", "decimal": "number", "int": "integer", "bool": "boolean",
            "str": "string", "text": "string", "dict": "object", "list": "array", "none": "null"}
_KNOWN = frozenset(("string", "number", "integer", "boolean", "object", "array", "null"))


def _names(names: Any) -> frozenset[str]:
    """Type names as JSON types; empty (any type) when one is unknown."""
    listed = [names] if isinstance(names, str) else [n for n in names if isinstance(n, str)]
    out = frozenset(_ALIASES.get(n.lower(), n.lower()) for n in listed)
    return out if out <= _KNOWN else frozenset()


def _types(prop: Any, depth: int) -> frozenset[str]:
    if not isinstance(prop, Mapping) or depth > 8:
        return frozenset()
    t = prop.get("type")
    if isinstance(t, (str, list)):
        return _names(t)
    for key in ("anyOf", "oneOf"):
        alts = prop.get(key)
        if isinstance(alts, list) and alts:
            parts = [_types(a, depth + 1) for a in alts]
            return frozenset().union(*parts) if all(parts) else frozenset()
    for key in ("enum", "const"):
        vals = prop.get(key) if key == "enum" else [prop.get(key)] if key in prop else None
        if isinstance(vals, list) and vals:
            return frozenset("null" if v is None else _JSON_TYPES.get(type(v), "string") for v in vals)
    return frozenset()


def _allowed(value: Any, types: frozenset[str]) -> bool:
    if not types:
        return True
    if value is None:
        return "null" in types
    kind = _JSON_TYPES.get(type(value), "")
    return kind in types or (kind == "integer" and "number" in types)


def string_only(prop: Any) -> bool:
    """The argument can only be a string."""
    return schema_types(prop) == frozenset(("string",))


def _strip_slot(text: str, pre: str, post: str) -> str | None:
    if text.startswith(pre) and text.endswith(post) and len(text) >= len(pre) + len(post):
        return text[len(pre): len(text) - len(post)]
    return None


def _nested(text: str, values: Values) -> Any:
    body = _strip_slot(text, values.nested_pre, values.nested_post)
    if body is None:
        return _NO
    if values.nested_codec:
        body = Codec.from_spec(values.nested_codec).decode(body)
    for cand in (body, python_to_json(body)):
        try:
            value = json.loads(cand, strict=False)
        except ValueError:
            continue
        if isinstance(value, (dict, list)):
            return value
    return _NO


class _No:
    pass


_NO: Any = _No()


def decode_value(text: str, values: Values, prop: Any = None) -> Any:
    """A value's whole text back as a Python value, typed by the argument's schema ``prop``:
    the spelling the text fits, the schema's types first. Text that fits no spelling is a string."""
    types = schema_types(prop)
    stripped = text.strip()
    string = _decode_string(text, values)
    if types == {"string"} and string is not _NO:
        return string
    if types & {"boolean", "null"} or not types:
        for spelled, value in ((values.true, True), (values.false, False), (values.null, None)):
            if spelled.strip() and stripped == spelled.strip() and _allowed(value, types):
                return value
    if types & {"integer", "number"} or not types:
        body = _strip_slot(stripped, values.number.pre.strip(), values.number.post.strip())
        if body is not None and NUMBER.fullmatch(body):
            return json.loads(body)
    if types & {"object", "array"} or not types:
        value = _nested(stripped, values)
        if value is not _NO:
            return value
    if types != {"string"}:
        # a JSON or Python literal in another spelling (``true`` where the template writes ``True``)
        for cand in dict.fromkeys((stripped, python_to_json(stripped))):
            try:
                value = json.loads(cand)
            except ValueError:
                continue
            if not isinstance(value, str) and _allowed(value, types):
                return value
    return string if string is not _NO else text


def _decode_string(text: str, values: Values) -> Any:
    s = values.string
    body = _strip_slot(text, s.pre, s.post)
    if body is None:
        return _NO
    return Codec.from_spec(s.codec).decode(body)


__all__ = ["NUMBER", "Slot", "Values", "decode_value", "encode_value", "nested_text", "schema_types", "string_only"]
