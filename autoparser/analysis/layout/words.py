"""A call layout in plain words, for people (``autoparser analyze`` and ``debug``): the call's
pieces, how its arguments are written and how each type of value is spelled, with literal text
quoted (white space visible) and the holes named in capitals (``NAME``, ``KEY``, ``VALUE``).

:func:`layout_rows` gives (label, text) rows; nothing here is read back by the parser.
"""

from __future__ import annotations

import json

from ... import markers as mk
from ...values.codecs import Codec
from ...values.spelling import KEY_AGAIN, Items, Slot, Values
from ...values.written import ID_AGAIN, NAME_AGAIN
from .model import ArgsLayout, CallLayout

__all__ = ["args_words", "codec_words", "layout_rows", "quoted", "values_rows"]

# sentinels a literal may hold, as the word shown in their place (in an item, KEY_AGAIN: the key again)
# (NAME_AGAIN, ID_AGAIN: the call's name or id written again in its items' literals)
_HOLES = {mk.WILDCARD: "ANY", mk.NAME_WILDCARD: "NAME", mk.HEADER: "HEADER", NAME_AGAIN: "NAME", ID_AGAIN: "ID"}
_FAMILIES = {
    "raw": "as they are", "json": "JSON-quoted", "python": "as Python reprs ('...')",
    "quoted": "quoted, with backslash escapes", "doubled": "quoted, a quote inside written twice",
    "shell": "shell-quoted", "percent": "percent-encoded", "entities": "with character references (&quot;)",
    "escaped": "bare, with a backslash before special characters", "table": "with learned substitutions",
    "ifneeded": "bare, quoted only when needed",
}
_NESTED = {"json": "as JSON", "json(compact)": "as compact JSON", "json(ascii)": "as JSON, non-ASCII escaped", "python": "as Python literals",
           "spelled": "as JSON with the values inside spelled as here",
           "own": "in the format's own syntax"}


def quoted(text: str, item: bool = False) -> str:
    """Literal text quoted (``"\\n</parameter>"``); a sentinel inside becomes its word (``"</" KEY ">"``
    in an ``item``, where it is the key written again; NAME and ID there: the call's, written again)."""
    holes = {**_HOLES, KEY_AGAIN: "KEY"} if item else _HOLES
    out: list[str] = []
    run = ""
    for ch in text:
        if ch in holes:
            if run:
                out.append(json.dumps(run, ensure_ascii=False))
            out.append(holes[ch])
            run = ""
        else:
            run += ch
    if run or not out:
        out.append(json.dumps(run, ensure_ascii=False))
    return " ".join(out)


def _around(pre: str, body: str, post: str) -> str:
    return " ".join(x for x in (quoted(pre) if pre else "", body, quoted(post) if post else "") if x)


def codec_words(spec: str) -> str:
    """How a codec writes a string, in words (``"percent-encoded (percent(%20))"``)."""
    codec = Codec.from_spec(spec)
    words = _FAMILIES.get(codec.kind, codec.kind)
    return words if codec.spec in (codec.kind, "raw") else f"{words} ({codec.spec})"


def _slot(slot: Slot, what: str) -> str:
    body = f"{what} {codec_words(slot.codec)}" if slot.codec != "raw" else ("raw text" if what == "text" else what)
    return _around(slot.pre, body, slot.post)


def items_words(items: Items) -> str:
    """One item, what is between two and what is around them all."""
    key = _around(items.key.pre, "KEY" if items.key.codec == "raw" else f"KEY {codec_words(items.key.codec)}",
                  items.key.post)
    parts = [x for x in (quoted(items.item_pre) if items.item_pre else "", key if items.keyed else "",
                         quoted(items.kv) if items.keyed and items.kv else "", "VALUE",
                         quoted(items.item_post, item=True) if items.item_post else "") if x]
    if items.columns:
        out = f"a header row of names (each {key}, separated by {quoted(items.key_sep)}), then {quoted(items.kv)}, " \
              "then the values in the header's order: each " + " ".join(p for p in parts if p not in (key, quoted(items.kv)))
    else:
        out = "each " + " ".join(parts)
    if not items.keyed:
        out += " (positional, in the schema's order)"
    if items.keyed and items.null_item:
        out += " (null: " + " ".join(x for x in (quoted(items.item_pre) if items.item_pre else "", key,
                                                 quoted(items.null_item)) if x) + ")"
    for f in items.frames if items.keyed else ():   # (values of a type written in a frame of their own)
        out += f" ({'an' if f.kind == 'object' else 'a'} {f.kind}: " + " ".join(
            x for x in (quoted(f.item_pre) if f.item_pre else "", key, quoted(f.kv) if f.kv else "", f.kind.upper(),
                        quoted(f.item_post, item=True) if f.item_post else "") if x) + ")"
    if items.sep:
        out += f", separated by {quoted(items.sep)}"
    if items.open or items.close:
        out += f", inside {quoted(items.open)} ... {quoted(items.close)}"
    return out


def values_rows(v: Values) -> list[tuple[str, str]]:
    """Per type of value, how it is written."""
    rows = [("strings", _slot(v.string, "text"))]
    if v.integer is not None and v.integer != v.number:
        rows += [("integers", _slot(v.integer, "a JSON number")), ("numbers", _slot(v.number, "a JSON number"))]
    else:
        rows.append(("numbers", _slot(v.number, "a JSON number")))
    rows.append(("booleans", f"{quoted(v.true)} / {quoted(v.false)}"))
    rows.append(("null", quoted(v.null)))
    nested = _NESTED.get(v.nested, "as YAML blocks on the lines below the key" if v.nested.startswith("yaml") else v.nested)
    if v.nested == "own":
        own = [f"{name} {items_words(items)}" for name, items in (("object:", v.object), ("array:", v.array))
               if items is not None]
        nested += ("; " + "; ".join(own)) if own else ""
    if v.nested_codec:
        nested += f", inside a string {codec_words(v.nested_codec)}"
    rows.append(("arrays, objects", _around(v.nested_pre, nested, v.nested_post)))
    return rows


def args_words(args: ArgsLayout) -> str:
    """The arguments hole in words."""
    if args.kind == "items" and args.items is not None:
        out = "items: " + items_words(args.items)
    elif args.kind == "python":
        out = "a Python dict literal"
    else:
        out = "a JSON object" + {"json(compact)": " (compact)", "json(ascii)": " (non-ASCII escaped)"}.get(args.serializer, "")
    if args.codec:
        out += f", written inside a string {codec_words(args.codec)}"
    return out


def layout_rows(layout: CallLayout) -> list[tuple[str, str]]:
    """(label, text) rows: the call, its arguments, and how values are written (items only)."""
    rows = [("call", " ".join(quoted(p.text) if p.kind == "lit" else
                              ("ARGS" if p.kind == "args" else p.kind.upper()
                               + ("" if p.codec == "raw" else f" {codec_words(p.codec)}"))
                              for p in layout.pieces)),
            ("arguments", args_words(layout.args))]
    if layout.args.kind == "items" and layout.args.items is not None:
        rows += values_rows(layout.args.items.values or Values())
    return rows
