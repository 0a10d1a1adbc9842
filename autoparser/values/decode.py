"""Whole-value decoding shared by the streaming readers (``autoparser.runtime``) and the strict
parser (``autoparser.grammar.peg``): what a reader makes of an argument text once it has all of it.

* :func:`args_text`: arguments given as a JSON string or as Python literals, as a JSON object text;
* :func:`typed_value`: a tagged value typed by the argument's schema;
* :func:`item_value`: one item value of a layout (:class:`~.spelling.Values`), read as
  ``runtime.items.ItemsReader`` reads it: a quoted string through its codec, a nested JSON or
  Python literal, or raw text (a string the schema declares streams as text, anything else is
  :func:`~.spelling.decode_value` typed by the schema).
"""

from __future__ import annotations

import json
from typing import Any, Literal

from .codecs import Codec
from .jsonscan import closed_json
from .nested import parse_own
from .pyliteral import python_to_json
from .spelling import Values, decode_value, schema_types

ItemHow = Literal["quoted", "nested", "raw", "null", "object", "array"]


def args_text(raw: str, python: bool) -> str:
    """Arguments given as a JSON string, or as Python literals, turned into a JSON object text."""
    text = python_to_json(raw) if python else raw
    try:
        value = json.loads(text, strict=False)   # strict=False: raw newlines in strings are read
    except ValueError:
        return json.dumps({"_raw": raw}, ensure_ascii=False)
    if isinstance(value, str):
        if not value.strip():
            return "{}"     # an empty string, or a string that broke off before its first character
        try:
            inner = json.loads(value, strict=False)
            return json.dumps(inner, ensure_ascii=False) if isinstance(inner, (dict, list)) else value
        except ValueError:
            # JSON that broke off inside its string (a truncated output): closed after its last value;
            # a string holding no JSON is kept raw, as arguments that do not parse are
            if value.lstrip()[:1] in ("{", "["):
                return closed_json(value)
            return json.dumps({"_raw": value}, ensure_ascii=False)
    return json.dumps(value, ensure_ascii=False)


def typed_value(raw: str, schema: dict[str, Any], quoted: bool = False) -> str:
    """A tagged value as JSON, typed by the argument's schema when there is one; ``quoted``: the
    format writes its strings JSON-quoted (``<param name="k">"v"</param>``), so a string literal is
    the string it spells."""
    text = raw
    types = schema.get("type")
    wanted = [types] if isinstance(types, str) else list(types or [])
    if wanted == ["string"]:
        spelled = _json_string(text.strip()) if quoted else None
        if spelled is not None:
            return json.dumps(spelled, ensure_ascii=False)
        return json.dumps(text, ensure_ascii=False)
    stripped = text.strip()
    candidates = [stripped]
    converted = python_to_json(stripped)
    if converted != stripped:
        candidates.append(converted)
    for cand in candidates:
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        if isinstance(value, str) and cand is not stripped and \
                not (len(stripped) >= 2 and stripped[0] == stripped[-1] and stripped[0] in "'\""):
            continue   # a lone or unbalanced quote is text, not a Python string literal
        if wanted and "string" in wanted and isinstance(value, (dict, list)) and "object" not in wanted \
                and "array" not in wanted:
            break
        if isinstance(value, str) and not wanted:
            return json.dumps(value, ensure_ascii=False)
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(text, ensure_ascii=False)


def _json_string(text: str) -> str | None:
    """The string a JSON string literal spells, or None when ``text`` is not one; a literal cut short
    (``"Paris, \\"F``: the output stopped inside it) spells what it holds so far (:func:`closed_json`)."""
    if not text.startswith('"'):
        return None
    for cand in (text, closed_json(text)):
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        return value if isinstance(value, str) else None
    return None


def streams(values: Values, prop: Any) -> bool:
    """Whether a raw item value streams as text: the schema declares a string and the string codec
    does not delimit itself."""
    return schema_types(prop) == {"string"} and not Codec.from_spec(values.string.codec).self_delimiting


def item_value(text: str, how: ItemHow, values: Values, prop: Any) -> Any:
    """An item value's whole text (without the item's closing text) as a value: ``quoted``, a string
    the codec delimits (its slot's text around it); ``nested``, a JSON or Python literal (the
    nested slot's text around it); ``null``, an item written in a null value's own shape; ``object`` /
    ``array``, a container in the encoding's own syntax written in a frame of its own
    (:class:`~.written.Frame`); ``raw``, anything else."""
    if how == "null":
        return None    # (an item written in a null value's own shape: ``<KEY/>``)
    if how in ("object", "array"):
        got = parse_own(text.strip(), values, prop, schema_types, how)
        return got if got is not None else decode_value(text, values, prop)
    s = values.string
    codec = Codec.from_spec(s.codec)
    if how == "quoted":
        body = text[len(s.pre):] if s.pre and text.startswith(s.pre) else text
        if s.post and body.endswith(s.post):
            body = body[:len(body) - len(s.post)]
        out, end = codec.decoder().feed(body, final=True)
        q = codec.quote
        nested_rest = values.nested_post[len(q):] if q and values.nested_pre == s.pre + q and \
            values.nested_post.startswith(q) else ""
        if end is None or not nested_rest or body[end:].strip() != nested_rest.strip():
            out = codec.decode(body)   # (unless what follows is the nested values' closing text: ``'...'::jsonb``)
        types = schema_types(prop)
        if types and "string" not in types:
            try:
                return json.loads(out)
            except ValueError:
                return out
        return out
    if how == "nested":
        body = text[len(values.nested_pre):] if values.nested_pre and text.startswith(values.nested_pre) else text
        if values.nested_post and body.endswith(values.nested_post):
            body = body[:len(body) - len(values.nested_post)]
        for cand in (body, python_to_json(body)):
            try:
                return json.loads(cand, strict=False)
            except ValueError:
                continue
        return body
    if streams(values, prop):
        body = text[len(s.pre):] if s.pre and text.startswith(s.pre) else text
        return codec.decode(body)
    return decode_value(text, values, prop)


__all__ = ["ItemHow", "args_text", "item_value", "streams", "typed_value"]
