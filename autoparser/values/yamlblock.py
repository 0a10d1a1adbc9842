"""Arrays and objects written as YAML blocks on the lines below their key (nested ``"yaml"``).

A template that writes its arguments as ``key: value`` lines may write an array or an object as
a YAML block: its items on the lines that follow the key, indented deeper, each leaf spelled as
the other values are (:class:`~.written.Values`: a JSON string, ``on``, ``~``)::

    filters:
      lang: "en"
      scope:
        site: "docs"
    tags:
      - "alpha"
      - "beta"

The serializer is ``yaml(FIRST,STEP)`` (plain ``yaml``: ``yaml(2,2)``): the first level of a block
is indented FIRST spaces, each deeper level STEP more. A block's text begins with its first line
break: the white space the key/value separator ends with is not written before it (``filters:``).
An item of an array that is itself a non-empty array or object opens a block of its own on the
next lines (``-`` then the block); the reader also takes YAML's compact form (``- lang: "en"``).
Empty containers are written in flow style (``[]``, ``{}``), as YAML does.

:func:`encode_block` writes a value; :func:`parse_block` reads one back (leaves through
``leaf(text, schema)``, typed by the schema). Reading is linear in the text, bounded in depth,
and never raises: text that is no block reads as None.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import regex

from .written import MAX_DEPTH

__all__ = ["DEFAULT", "block_spec", "encode_block", "is_block", "parse_block"]

DEFAULT = (2, 2)
_SPEC = regex.compile(r"yaml(?:\((\d{1,2}),(\d{1,2})\))?")
_KEY = regex.compile(r"(?P<key>[^\W\d][\w.\-$@]{0,127}|\"(?:[^\"\\\n]|\\.){0,256}\")[ \t]*:(?=[ \t]|$)")
_MAX_LINES = 20_000

Leaf = Callable[[str, Any], Any]


def block_spec(serializer: str) -> tuple[int, int] | None:
    """(first, step) indentation of serializer ``yaml`` / ``yaml(F,S)``; None for another serializer."""
    m = _SPEC.fullmatch(serializer)
    if m is None:
        return None
    if m.group(1) is None:
        return DEFAULT
    first, step = int(m.group(1)), int(m.group(2))
    return (first, step) if first > 0 and step > 0 else None


def spec_name(first: int, step: int) -> str:
    """The serializer's name for these indentations."""
    return "yaml" if (first, step) == DEFAULT else f"yaml({first},{step})"


def is_block(serializer: str) -> bool:
    return block_spec(serializer) is not None


def encode_block(value: Any, serializer: str, leaf: Callable[[Any], str]) -> str:
    """``value`` (an array or object) as a block: a line break, then its items' lines."""
    first, step = block_spec(serializer) or DEFAULT
    return _encode(value, " " * first, " " * step, leaf, 0)


def _encode(value: Any, ind: str, step: str, leaf: Callable[[Any], str], depth: int) -> str:
    pairs = value.items() if isinstance(value, dict) else ((None, v) for v in value)
    out = []
    for key, item in pairs:
        head = "\n" + ind + ("-" if key is None else str(key) + ":")
        if isinstance(item, (dict, list)) and item and depth < MAX_DEPTH:
            out.append(head + _encode(item, ind + step, step, leaf, depth + 1))
        elif isinstance(item, (dict, list)):
            out.append(head + " " + (json.dumps(item, ensure_ascii=False) if item else "{}" if isinstance(item, dict)
                                     else "[]"))
        else:
            text = leaf(item)
            out.append(head + (" " + text if text else ""))   # (null written as nothing: ``key:``)
    return "".join(out)


# ---------------------------------------------------------------- reading
class _Fail(Exception):
    pass


def parse_block(text: str, leaf: Leaf, prop: Any = None) -> Any:
    """The array or object a block ``text`` writes (its first line break first; indentation as
    written, any width), leaves read by ``leaf(text, schema)``; a flow ``[]`` / ``{}`` or other JSON
    container; None when the text is neither."""
    if not text.strip():
        return None
    if text.lstrip(" \t")[:1] not in ("\n", "\r"):
        return _flow(text.strip())
    lines = [(len(s) - len(s.lstrip(" ")), s.strip()) for s in text.split("\n")[1:] if s.strip()]
    if not lines or len(lines) > _MAX_LINES or any("\t" in s[:len(s) - len(s.lstrip(" \t"))]
                                                   for s in text.split("\n")[1:] if s.strip()):
        return None
    try:
        value, end = _block(lines, 0, lines[0][0], leaf, prop if isinstance(prop, Mapping) else {}, 0)
    except _Fail:
        return None
    return value if end == len(lines) else None


def _flow(text: str) -> Any:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, (dict, list)) else None


def _sub(prop: Mapping[str, Any], kind: str, key: str | None) -> Any:
    if kind == "array":
        items = prop.get("items")
        return items if isinstance(items, Mapping) else {}
    props = prop.get("properties")
    sub = props.get(key) if isinstance(props, Mapping) and key is not None else None
    return sub if isinstance(sub, Mapping) else {}


def _block(lines: list[tuple[int, str]], i: int, ind: int, leaf: Leaf, prop: Mapping[str, Any],
           depth: int) -> tuple[Any, int]:
    """The block whose lines start at ``i``, indented ``ind``: (value, index after it)."""
    if depth > MAX_DEPTH:
        raise _Fail
    seq = lines[i][1] == "-" or lines[i][1].startswith("- ")
    out_obj: dict[str, Any] = {}
    out_arr: list[Any] = []
    while i < len(lines) and lines[i][0] >= ind:
        at, text = lines[i]
        if at != ind:
            raise _Fail
        j = i + 1
        while j < len(lines) and lines[j][0] > ind:
            j += 1
        if seq:
            if not (text == "-" or text.startswith("- ")):
                raise _Fail
            rest = text[1:].lstrip(" ")
            sub = _sub(prop, "array", None)
            if not rest:
                out_arr.append(_child(lines, i, j, leaf, sub, depth) if j > i + 1 else leaf("", sub))
            elif _KEY.match(rest):
                # compact form: ``- key: value`` opens a mapping at the key's column
                inner = [(ind + len(text) - len(rest), rest), *lines[i + 1:j]]
                value, end = _block(inner, 0, inner[0][0], leaf, sub, depth + 1)
                if end != len(inner):
                    raise _Fail
                out_arr.append(value)
            else:
                if j > i + 1:
                    raise _Fail
                out_arr.append(leaf(rest, sub))
        else:
            m = _KEY.match(text)
            if m is None:
                raise _Fail
            key = m.group("key")
            if key.startswith('"'):
                try:
                    key = json.loads(key)
                except ValueError as e:
                    raise _Fail from e
            rest = text[m.end():].strip(" ")
            sub = _sub(prop, "object", key)
            if j > i + 1:
                if rest:
                    raise _Fail
                out_obj[key] = _child(lines, i, j, leaf, sub, depth)
            else:
                out_obj[key] = leaf(rest, sub)
        i = j
    return (out_arr if seq else out_obj), i


def _child(lines: list[tuple[int, str]], i: int, j: int, leaf: Leaf, prop: Mapping[str, Any], depth: int) -> Any:
    """The block on lines ``i+1`` to ``j`` (all of them), below the item on line ``i``."""
    value, end = _block(lines, i + 1, lines[i + 1][0], leaf, prop, depth + 1)
    if end != j:
        raise _Fail
    return value
