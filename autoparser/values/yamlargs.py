"""Arguments written as ``key: value`` lines, a YAML block mapping, read one value at a time.

A template that writes its arguments as ::

    city: Paris, France
    days: 3
    filters:
      lang: en
    code: |
      def f(x):
          return x

puts each key at the start of a line, at one indentation, and its value after ``:``. A
value runs to the next key line at that indentation (or the call's end): on the key's line,
on more-indented lines below it, or both. Values are typed by the tool's JSON schema:

* a string the template writes raw (the schema says only ``string``) is the value's text as
  written, continuation lines included: ``3`` stays ``"3"``, ``yes`` stays ``"yes"`` and
  ``a # b`` keeps its ``# b``; except a YAML block scalar (``|``, ``>-`` ... on the key's line,
  the text on the lines below), which is read as YAML;
* anything else is read with PyYAML's safe loader (``yaml.compose`` with ``SafeLoader``:
  plain data only, never an object a document asks for) and typed by the schema: a scalar whose
  schema wants a string keeps its text, other scalars take YAML's type, then
  :func:`~.coerce.coerce` (``"3"`` for an integer is 3). JSON is YAML's flow style, so JSON
  objects, arrays, numbers, ``true`` and ``null`` read as JSON. Text that is no YAML is read
  as JSON or Python literals, else kept as a string.

Aliases are expanded within a budget (a value may not grow beyond a few times its text), so
a "billion laughs" document reads as its raw text instead of exhausting memory.
"""

from __future__ import annotations

import datetime
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import regex
import yaml
from yaml.constructor import SafeConstructor
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .coerce import coerce, raw_string
from .pyliteral import python_to_json

__all__ = ["BLOCK_SCALAR", "KEY", "is_raw", "key_line_source", "keys_source", "next_key_source",
           "value_json", "yaml_value"]

#: a key written bare: a word, dots and dashes inside (``top_k``, ``user.name``, ``max-len``)
KEY = r"[^\W\d][\w.\-]*"
#: a YAML block scalar's header alone on the key's line (``|``, ``>-``, ``|2+``, a comment after it)
BLOCK_SCALAR = regex.compile(r"[|>](?:[1-9]?[-+]?|[-+][1-9]?)[ \t]*(?:#[^\n]*)?\r?\n")
_BUDGET = 8        # a value may hold this many nodes per character of its text (aliases expand)


def keys_source(keys: Sequence[str]) -> str:
    """Regex source for the keys a key line may hold: the schema's own names (longest first), or
    any bare key when the schema names none."""
    names = sorted({k for k in keys if k and "\n" not in k}, key=len, reverse=True)
    return "(?:" + "|".join(regex.escape(k) for k in names) + ")" if names else KEY


def _kv(kv: str) -> str:
    """Regex source for the separator after a key: ``:`` and the space or line break after it (or
    the end of the text), or ``=``."""
    return r"[ \t]*:(?:[ \t\r\n]|\Z)" if kv == ":" else r"[ \t]*" + regex.escape(kv)


def _pair_sep(sep: str) -> str:
    """Regex source for the separator of pairs on one line (``;``, ``,``, spaces)."""
    return r"[ \t]*" + regex.escape(sep.strip()) + r"\s*" if sep.strip() else r"[ \t]+"


def key_line_source(keys: str, kv: str = ":", sep: str | None = None) -> str:
    """Regex source for a key and its separator where an argument begins: line breaks (or none),
    the indentation (group ``ind``), the key (group ``key``) and ``kv``; for pairs on one line
    (``sep`` not None), the pair separator (or none) instead of the line breaks."""
    lead = r"(?P<lead>(?:[ \t]*\r?\n)*)" if sep is None else r"(?P<lead>(?:" + _pair_sep(sep) + r")?)"
    return lead + r"(?P<ind>[ \t]*)(?P<key>" + keys + r")" + _kv(kv)


def next_key_source(indent: str, keys: str, kv: str = ":", sep: str | None = None) -> str:
    """Regex source for what comes before the next argument's key: the line break (and blank lines)
    before a key line at ``indent``, or the pair separator, and the key itself, which the key
    reader matches again."""
    if sep is not None:
        return _pair_sep(sep) + r"(?:" + keys + r")" + _kv(kv)
    return r"[ \t]*(?:\r?\n[ \t]*)*\r?\n" + regex.escape(indent) + r"(?:" + keys + r")" + _kv(kv)


def is_raw(head: str, schema: Any, quoted_strings: bool, kv: str = ":") -> bool:
    """A value whose text is its string: the schema wants only a string, the template writes
    strings unquoted, and (YAML, ``kv`` ``:``) the value's first line (``head``, after the ``:``
    and its spaces) is neither empty (a nested block below), nor a block scalar header, nor quoted."""
    if not raw_string(schema, quoted_strings):
        return False
    # (YAML: a value that opens with a quote is a quoted scalar, never plain text: templates that
    # write strings plain quote those that need it, ``"a: b"``)
    return kv != ":" or not (head[:1] in ("\n", "\r", '"', "'") or BLOCK_SCALAR.match(head) is not None)


def yaml_value(text: str, schema: Any, quoted_strings: bool = False, kv: str = ":") -> Any:
    """The value written as ``text`` (what follows the key's ``:``, its lines with their
    indentation, trailing whitespace removed), typed by its ``schema``. After ``=`` (``kv``) it is
    a Python keyword argument's value: a Python or JSON literal, else text."""
    head = text.lstrip(" \t")
    if is_raw(head, schema, quoted_strings, kv):
        return head.rstrip()
    if kv != ":":
        return _literal(head.strip(), schema)
    if not head.strip():
        return "" if raw_string(schema) else None
    # the value's last line ends with a line break (a literal block keeps it: ``|`` clips to one)
    node = _compose("_:" + (text if text[:1] in " \t\r\n" else " " + text) + "\n")
    if node is not None:
        try:
            return _typed(node, schema if isinstance(schema, Mapping) else {}, [_BUDGET * len(text) + 64])
        except _Unreadable:
            pass
    stripped = head.strip()
    for cand in (stripped, python_to_json(stripped)):
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        return coerce(value, schema if isinstance(schema, dict) else None)
    return stripped


def value_json(text: str, schema: Any, quoted_strings: bool = False, kv: str = ":") -> str:
    """:func:`yaml_value` as JSON text."""
    return json.dumps(yaml_value(text, schema, quoted_strings, kv), ensure_ascii=False)


def _literal(text: str, schema: Any) -> Any:
    """A Python keyword argument's value (``'it\\'s'``, ``True``, ``None``, ``[1, 2]``, JSON), typed
    by the schema; text that is no literal is a string (``city=Paris``)."""
    prop = schema if isinstance(schema, Mapping) else {}
    for cand in (text, python_to_json(text)):
        try:
            value = json.loads(cand)
        except ValueError:
            continue
        types = _types(prop)
        if not isinstance(value, str) and types and _json_type(value) not in types \
                and not (_json_type(value) == "integer" and "number" in types) and "string" in types \
                and not isinstance(value, (dict, list)):
            return text            # a string argument written bare (``zip=01234``): its text
        return _as_strings(coerce(value, prop if isinstance(prop, dict) else None), prop)
    return text


def _as_strings(value: Any, schema: Any) -> Any:
    """Numbers where the schema wants only a string, as their text (``{"zip": 75001}``), inside
    objects and arrays too."""
    if not isinstance(schema, Mapping):
        return value
    if isinstance(value, dict):
        props = _branch(schema, "object").get("properties")
        props = props if isinstance(props, Mapping) else {}
        return {k: _as_strings(v, props.get(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_strings(v, _branch(schema, "array").get("items")) for v in value]
    if _types(schema) == {"string"} and isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    return value


class _Unreadable(Exception):
    """The node is not plain data within the budget."""


def _compose(doc: str) -> Node | None:
    """The value node of the one-key document ``doc``, or None when it is no YAML mapping."""
    try:
        root = yaml.compose(doc, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    if not isinstance(root, MappingNode) or len(root.value) != 1:
        return None
    node: Node = root.value[0][1]
    return node


def _types(schema: Mapping[str, Any]) -> set[str]:
    """The JSON types a schema allows (its ``type``, and those of ``anyOf``/``oneOf`` branches)."""
    out: set[str] = set()
    kind = schema.get("type")
    if isinstance(kind, str):
        out.add(kind)
    elif isinstance(kind, list):
        out.update(k for k in kind if isinstance(k, str))
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, Mapping):
                out |= _types(branch)
    if not out and "enum" in schema and isinstance(schema["enum"], list) and schema["enum"] \
            and all(isinstance(v, str) for v in schema["enum"]):
        out.add("string")
    return out


def _branch(schema: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    """The part of ``schema`` that describes values of JSON type ``kind`` (an ``anyOf`` branch)."""
    if schema.get("type") == kind or "properties" in schema or "items" in schema:
        return schema
    for key in ("anyOf", "oneOf"):
        for branch in schema.get(key) or ():
            if isinstance(branch, Mapping) and kind in _types(branch):
                return branch
    return schema


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "string"


def _typed(node: Node, schema: Mapping[str, Any], budget: list[int]) -> Any:
    budget[0] -= 1
    if budget[0] < 0:
        raise _Unreadable
    if isinstance(node, MappingNode):
        props = _branch(schema, "object").get("properties")
        props = props if isinstance(props, Mapping) else {}
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise _Unreadable
            prop = props.get(key_node.value)
            out[key_node.value] = _typed(value_node, prop if isinstance(prop, Mapping) else {}, budget)
        return out
    if isinstance(node, SequenceNode):
        items = _branch(schema, "array").get("items")
        return [_typed(item, items if isinstance(items, Mapping) else {}, budget) for item in node.value]
    if not isinstance(node, ScalarNode):
        raise _Unreadable
    types = _types(schema)
    if types == {"string"} or (node.style and "string" in types):
        return node.value            # the text, as written (quoted or block: as YAML reads it)
    try:
        value = SafeConstructor().construct_object(node, deep=True)
    except yaml.YAMLError:
        return node.value
    if isinstance(value, (datetime.date, bytes)) or (isinstance(value, float) and not math.isfinite(value)):
        value = node.value           # a date, binary or .nan is text in JSON
    if types and _json_type(value) not in types and not (_json_type(value) == "integer" and "number" in types):
        if "string" in types:
            return node.value        # a string argument YAML reads as another type: its text
        return coerce(node.value if not isinstance(value, str) else value, schema)
    return value
