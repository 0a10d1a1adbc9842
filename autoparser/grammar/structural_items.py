"""Structural-tag content for the arguments of a learned call layout (``ToolFormat.style == "layout"``).

A JSON object (``ArgsLayout.kind == "json"``, no codec) is the tool's JSON schema, as for JSON
calls. Key/value items (``<parameter=K>V</parameter>``, ``<arg_key>K</arg_key><arg_value>V</arg_value>``,
``k="v", n=1``) are a ``tags_with_separator`` of one tag per declared property: its ``begin`` is the
item's text up to the value with the key written in, its ``end`` the text after the value (the key
written again where the layout says so), separated by the items' separator and wrapped in their
opening and closing text. A value is spelled as :class:`~autoparser.values.spelling.Values` says,
per type the schema allows: strings JSON-quoted (the property's schema) or raw (any text up to
what follows; an ``enum`` as its written constants), numbers as JSON numbers, booleans and null as
the template's own words, arrays and objects as JSON, each with the text the template writes around
it. Like xgrammar's JSON-schema XML styles, items may come in any order (``tags_with_separator``).

:func:`layout_refusal` says why a layout's arguments cannot be written so ("" when they can).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..analysis.layout.model import ArgsLayout
from ..values.codecs import Codec
from ..values.spelling import KEY_AGAIN, Items, Values, schema_types
from ..values.yamlblock import is_block

__all__ = ["JSON_STRINGS", "items_content", "layout_refusal"]

JSON_STRINGS = ("json", "json(ascii)", "json(ascii,html)")
_ORDER = ("string", "integer", "number", "boolean", "null", "object", "array")
_JSON_WORDS = ("true", "false", "null")


def layout_refusal(args: ArgsLayout) -> str:
    """Why the arguments of a layout cannot be a structural tag's content ("" when they can)."""
    if args.kind == "python":
        return "arguments are written as Python literals, not as a JSON object"
    if args.codec:
        return f"arguments are written inside a string (the {args.codec} codec), not as a JSON object"
    if args.kind == "json" or args.items is None:
        return ""
    items = args.items
    v = items.values or Values()
    if not items.keyed:
        return "arguments are positional values in the schema's order, not named items"
    if items.columns:
        return "arguments are written as columns (a header row of names, then a row of values), not named items"
    if items.key.codec != "raw":
        return f"argument names are written with the {items.key.codec} codec"
    codec = Codec.from_spec(v.string.codec)
    if codec.spec not in JSON_STRINGS and codec.spec != "raw":
        return f"string values are written with the {codec.kind} codec ({codec.spec})"
    if codec.spec == "raw" and not (v.string.post + items.item_post).strip():
        return "raw string values end where the next argument starts (no text closes them)"
    if v.nested == "own" or is_block(v.nested) or v.path is not None:
        return "arrays and objects are written in the format's own syntax (own-syntax nested objects or items " \
            "with path keys), not as JSON"
    if v.nested_codec:
        return f"arrays and objects are written inside a string (the {v.nested_codec} codec)"
    if v.nested == "python" or (v.nested == "spelled" and ((v.true, v.false, v.null) != _JSON_WORDS
                                                         or codec.spec not in JSON_STRINGS)):
        return "arrays and objects hold values that are not JSON (Python literals)"
    return ""


def _const(text: str) -> dict[str, Any]:
    return {"type": "const_string", "value": text}


def _seq(*parts: dict[str, Any]) -> dict[str, Any]:
    kept = [p for p in parts if not (p.get("type") == "const_string" and not p.get("value"))]
    if len(kept) == 1:
        return kept[0]
    return {"type": "sequence", "elements": kept or [_const("")]}


def _json(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": dict(schema)}


def _one_type(prop: Mapping[str, Any], ty: str, only: bool) -> Mapping[str, Any]:
    """The property's schema when it allows only ``ty`` (constraints kept), else the bare type."""
    return prop if only else {"type": ty}


def value_format(v: Values, prop: Any) -> dict[str, Any]:
    """The format of one value of a property (every JSON type when the schema does not say)."""
    prop = prop if isinstance(prop, Mapping) else {}
    types = [t for t in _ORDER if t in (schema_types(prop) or _ORDER)]
    only = len(types) == 1 or (set(types) == {"integer", "number"})
    alts: list[dict[str, Any]] = []
    for ty in types:
        if ty == "string":
            s, codec = v.string, Codec.from_spec(v.string.codec)
            enum = prop.get("enum") if only else None
            if isinstance(enum, list) and enum and all(isinstance(e, str) for e in enum):
                alts += [_const(s.pre + codec.encode(e) + s.post) for e in enum]
                continue
            if codec.spec in JSON_STRINGS:
                alts.append(_seq(_const(s.pre), _json(_one_type(prop, ty, only)), _const(s.post)))
            elif s.post:   # raw text up to the text after it
                alts.append({"type": "tag", "begin": s.pre, "content": {"type": "any_text"}, "end": s.post})
            else:          # raw text up to the item's end (the tag around the value)
                alts.append(_seq(_const(s.pre), {"type": "any_text"}))
        elif ty in ("integer", "number"):
            same = v.integer is None or v.integer == v.number
            if ty == "number" and "integer" in types and same:
                continue   # the integer alternative reads both
            slot = v.integer if ty == "integer" and v.integer is not None else v.number
            sub = _one_type(prop, ty, only) if not (ty == "integer" and "number" in types and same) \
                else (prop if only else {"type": "number"})
            alts.append(_seq(_const(slot.pre), _json(sub), _const(slot.post)))
        elif ty == "boolean":
            alts += [_const(v.true), _const(v.false)]
        elif ty == "null":
            alts.append(_const(v.null))
        else:
            alts.append(_seq(_const(v.nested_pre), _json(_one_type(prop, ty, only)), _const(v.nested_post)))
    unique = list({repr(a): a for a in alts}.values())
    return unique[0] if len(unique) == 1 else {"type": "or", "elements": unique}


def items_content(items: Items, schema: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of one tool written as ``items`` (checked by :func:`layout_refusal` first)."""
    v = items.values or Values()
    props = schema.get("properties")
    props = props if isinstance(props, Mapping) else {}
    required = schema.get("required")
    needed = isinstance(required, list) and any(r in props for r in required)
    if not props:
        return _const("")
    tags = []
    for key, prop in props.items():
        begin = items.item_pre + items.key.pre + str(key) + items.key.post + items.kv
        tags.append({"type": "tag", "begin": begin, "content": value_format(v, prop),
                     "end": items.item_post.replace(KEY_AGAIN, str(key))})
        if items.null_item.strip() and (not schema_types(prop) or "null" in schema_types(prop)):
            # a null value written as an item of its own shape (``<KEY/>``)
            tags.append({"type": "tag", "begin": items.item_pre + items.key.pre + str(key) + items.key.post +
                         items.null_item, "content": _const(""), "end": ""})
    framed = bool(items.open or items.close)
    inner = {"type": "tags_with_separator", "tags": tags, "separator": items.sep,
             "at_least_one": needed or framed, "stop_after_first": False}
    if not framed:
        return inner
    body = _seq(_const(items.open), inner, _const(items.close))
    return body if needed else {"type": "or", "elements": [_const(""), body]}
