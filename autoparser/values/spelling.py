"""How a template spells argument values: per JSON type, text around the value and a codec.

:class:`Values` is learned from renders of probe values (``analysis.layout``); :class:`Items`
is a sequence of key/value pairs or positional values (a call's arguments, or an array or
object written in the encoding's own syntax: ``{k = "v"}``, ``(:k "v")``, ``<k>v</k>``). Here
are both directions: :func:`encode_value` writes a value as the template would, and
:func:`decode_value` reads a value's whole text back (:mod:`.nested` reads own-syntax arrays
and objects), typed by the argument's JSON schema when the spelling alone cannot tell (a
template that writes strings raw writes ``7`` for the string "7" and for the number 7).
Strings stream through the codec's incremental decoder instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..markers import NAME_WILDCARD
from .argfit import string_container
from .codecs import Codec
from .keypaths import flatten
from .nested import empty_is_nothing, parse_own
from .pyliteral import python_to_json
from .schematypes import JSON_TYPES, schema_types
from .written import ID_AGAIN, KEY_AGAIN, MAX_DEPTH, NAME_AGAIN, NUMBER, Items, Slot, Values
from .yamlblock import encode_block, is_block, parse_block


def nested_text(value: Any, serializer: str, wrap: str = "", values: Values | None = None) -> str:
    """An array or object as the serializer writes it, escaped with the string codec ``wrap``:
    ``json`` / ``json(compact)`` (JSON's separators), ``python`` (``str()`` of the value),
    ``spelled`` (JSON's brackets and separators with each leaf spelled as ``values`` say:
    ``{"a": True, "b": None}``), ``own`` (``values``' containers) or ``yaml`` (a YAML block on the
    lines below, leaves spelled as ``values`` say: :mod:`.yamlblock`)."""
    if serializer == "json(compact)":
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    elif serializer == "json(ascii)":
        text = json.dumps(value)   # Python's json.dumps as is: non-ASCII as \u escapes
    elif serializer == "python":
        text = str(value)
    elif serializer == "spelled" and values is not None:
        text = _spelled(value, values)
    elif serializer == "own" and values is not None:
        text = _own(value, values, 0)
    elif is_block(serializer) and values is not None:
        text = encode_block(value, serializer, lambda x: encode_value(values, x))
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


def _own(value: Any, values: Values, depth: int) -> str:
    items = values.object if isinstance(value, dict) else values.array
    if items is None or depth > MAX_DEPTH:
        return json.dumps(value, ensure_ascii=False)
    pairs = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    return encode_items(items, pairs, values, depth + 1)


def encode_items(items: Items, pairs: Any, values: Values | None = None, depth: int = 0) -> str:
    """Items for ``pairs`` ((key, value), keys ignored when positional); "" when there is none."""
    spell = items.values or values or Values()
    parts = []
    if items.columns:
        pairs = list(pairs)
        header = items.key_sep.join(items.key.pre + str(k) + items.key.post for k, _ in pairs)
        body = encode_items(replace(items, open="", close="", keyed=False, columns=False), pairs, values, depth)
        return items.open + header + items.kv + body + items.close if pairs else ""
    if spell.path is not None and items.keyed and not depth:
        pairs = [kv for key, value in pairs for kv in flatten(str(key), value, spell.path)]
    for key, value in pairs:
        if value is None and items.null_item and items.keyed:
            parts.append(items.item_pre + str(key) + items.null_item)
            continue
        fr = items.frame_of(value) if items.keyed else items.frame("")
        head = fr.item_pre + (str(key) + fr.kv if items.keyed else "")
        body = _own(value, spell, depth) if spell.nested == "own" and isinstance(value, (dict, list)) \
            else encode_value(spell, value)
        if items.trim_empty and not body:
            head = head.rstrip()
        elif is_block(spell.nested) and body[:1] in ("\n", "\r"):
            head = head.rstrip(" \t")   # (a block on the lines below: ``filters:``)
        parts.append(head + body + fr.item_post.replace(KEY_AGAIN, str(key)))
    return items.open + items.sep.join(parts) + items.close if parts else "" if depth else items.empty


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
        slot = values.integer if isinstance(value, int) and values.integer is not None else values.number
        return slot.pre + json.dumps(value) + slot.post
    return values.nested_pre + nested_text(value, values.nested, values.nested_codec, values) + values.nested_post


_JSON_TYPES = JSON_TYPES



def allowed(value: Any, types: frozenset[str]) -> bool:
    """``value`` is of one of ``types`` (any, when empty)."""
    if not types:
        return True
    if value is None:
        return "null" in types
    kind = _JSON_TYPES.get(type(value), "")
    return kind in types or (kind == "integer" and "number" in types)


def string_only(prop: Any) -> bool:
    """The argument can only be a string."""
    return schema_types(prop) == frozenset(("string",))


# ---------------------------------------------------------------- decoding a whole value
def strip_slot(text: str, pre: str, post: str) -> str | None:
    if text.startswith(pre) and text.endswith(post) and len(text) >= len(pre) + len(post):
        return text[len(pre): len(text) - len(post)]
    return None


class _No:
    pass


NO: Any = _No()


def _nested(text: str, values: Values, prop: Any = None) -> Any:
    body = strip_slot(text, values.nested_pre, values.nested_post)
    if body is None:
        return NO
    if values.nested == "own":
        kinds = schema_types(prop) & {"object", "array"}
        if not body.strip() and kinds and "string" not in schema_types(prop) and empty_is_nothing(values):
            return [] if kinds == {"array"} else {}   # (containers that write nothing around no item: ``<tags></tags>``)
        got = parse_own(body, values, prop, schema_types)
        return NO if got is None else _typed_empties(got, prop, values)
    if is_block(values.nested) and not values.nested_codec:
        got = parse_block(body, lambda t, p: decode_value(t, values, p), prop)
        return NO if got is None else got
    if values.nested_codec:
        body = Codec.from_spec(values.nested_codec).decode(body)
    for cand in (body, python_to_json(body)):
        try:
            value = json.loads(cand, strict=False)
        except ValueError:
            continue
        if isinstance(value, (dict, list)):
            return value
    return NO


def _typed_empties(value: Any, prop: Any, values: Values) -> Any:
    """``value`` with each empty object the schema ``prop`` types as an array (and not as an object)
    made an empty array, where the encoding writes both alike (a Lua table: ``{}``); bounded depth."""
    a, o = values.array, values.object
    if a is None or o is None or (a.open + a.close).strip() != (o.open + o.close).strip():
        return value

    def fix(v: Any, p: Any, depth: int) -> Any:
        if depth > 32 or not isinstance(p, Mapping):
            return v
        if v == {} and isinstance(v, dict):
            types = schema_types(p)
            return [] if "array" in types and "object" not in types else v
        if isinstance(v, dict):
            props = p.get("properties")
            props = props if isinstance(props, Mapping) else {}
            return {k: fix(x, props.get(k), depth + 1) for k, x in v.items()}
        if isinstance(v, list):
            return [fix(x, p.get("items"), depth + 1) for x in v]
        return v

    return fix(value, prop, 0)


def decode_value(text: str, values: Values, prop: Any = None) -> Any:
    """A value's whole text back as a Python value, typed by the argument's schema ``prop``:
    the spelling the text fits, the schema's types first. Text that fits no spelling is a string."""
    types = schema_types(prop)
    stripped = text.strip()
    string = decode_string(text, values)
    if not stripped and values.null == "" and allowed(None, types) and _empty_is_null(values):
        return None
    if types == {"string"} and string is not NO:
        return string
    if types & {"boolean", "null"} or not types:
        for spelled, value in ((values.true, True), (values.false, False), (values.null, None)):
            if spelled.strip() and stripped == spelled.strip() and allowed(value, types):
                return value
    if types & {"integer", "number"} or not types:
        for slot in (values.integer, values.number):
            if slot is None:
                continue
            body = strip_slot(stripped, slot.pre.strip(), slot.post.strip())
            if body is None and slot.post.strip():   # (a number whose closing text the output never wrote
                body = strip_slot(stripped, slot.pre.strip(), "")   # whole: ``<int>3</i``)
                post = slot.post.strip()
                if body is not None:
                    body = next((body[:-k] for k in range(len(post), 0, -1) if body.endswith(post[:k])), body)
            if body is not None and NUMBER.fullmatch(body.strip()):
                return json.loads(body)
    if types & {"object", "array"} or not types:
        value = _nested(text.rstrip() if is_block(values.nested) else stripped, values, prop)
        if value is not NO:
            return value
    if types != {"string"}:
        # a JSON or Python literal in another spelling (``true`` where the template writes ``True``)
        for cand in dict.fromkeys((stripped, python_to_json(stripped))):
            try:
                value = json.loads(cand)
            except ValueError:
                continue
            if not isinstance(value, str) and allowed(value, types):
                return value
        # a container written as a JSON string, maybe escaped once more: read as the JSON readers do
        # (after the nested values' own slot text where the template writes one: ``false">"{...}"``)
        wanted = tuple(c for t, c in (("object", dict), ("array", list)) if t in types)
        if wanted and "string" not in types:
            body = strip_slot(stripped, values.nested_pre, values.nested_post)
            for cand in dict.fromkeys(c.strip() for c in (stripped, body) if c is not None):
                value = string_container(cand, wanted) if cand.startswith('"') else None
                if value is not None:
                    return value
    return string if string is not NO else text


def _empty_is_null(values: Values) -> bool:
    """No text at all is null where the template writes null so and the empty string otherwise
    (``,,`` beside ``,"",`` in CSV)."""
    s = values.string
    return bool(s.pre or s.post or Codec.from_spec(s.codec).encode(""))


def decode_string(text: str, values: Values) -> Any:
    """The string a text spells (its slot and codec), or :data:`NO`."""
    s = values.string
    body = strip_slot(text, s.pre, s.post)
    if body is None:
        return NO
    return Codec.from_spec(s.codec).decode(body)


def with_name(items: Items, name: str, call_id: str | None = NAME_WILDCARD) -> Items:
    """`items` with the call's name written where the literals hold :data:`NAME_AGAIN`, and its id where
    they hold :data:`ID_AGAIN` (``call_id`` None: left for the reader, which matches the id exactly;
    by default any name-like word, as the grammars write it)."""
    texts = (items.open, items.close, items.sep, items.item_pre, items.kv, items.item_post)
    if not any(NAME_AGAIN in t or ID_AGAIN in t for t in texts):
        return items
    o, c, s, pre, kv, post = (t.replace(NAME_AGAIN, name) if call_id is None else
                              t.replace(NAME_AGAIN, name).replace(ID_AGAIN, call_id) for t in texts)
    return replace(items, open=o, close=c, sep=s, item_pre=pre, kv=kv, item_post=post)


__all__ = ["ID_AGAIN", "KEY_AGAIN", "NAME_AGAIN", "NO", "NUMBER", "Items", "Slot", "Values", "allowed", "decode_string", "decode_value",
           "encode_items", "encode_value", "nested_text", "schema_types", "string_only", "strip_slot", "with_name"]
