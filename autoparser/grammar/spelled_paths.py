"""GBNF for arguments whose arrays and objects may be written as items with path keys
(:class:`~autoparser.values.written.KeyPath`: ``filters[lang]=en&filters[depth]=2&tags[0]=a&tags[1]=b``),
for :class:`~.spelled.Speller`.

After such an argument's key comes either its whole value (the key/value separator, then the value
as ``nested`` writes it: empty arrays and objects, or a value the model writes whole) or the
path items: an object with declared properties as items of its own (each key ``parent`` +
``open`` + member + ``close``, typed by the member's schema, recursively), an array as elements
numbered from the path's base (any digits: the reader checks the order) or with empty indexes,
each a value of the items' schema written whole (arrays of objects in path form are read but not
generated). What follows is the same as after any item (:class:`~.spelled.Follow`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from autoparser.values.spelling import Items, schema_types

from .gbnf import literal
from .schema import _group, _unique
from .spelled_base import Follow

# the calling :class:`~autoparser.grammar.spelled.Speller`, typed loosely: importing it would make an
# import cycle (it calls this module)
Speller = Any

MAX_PATH_DEPTH = 4      # object levels printed as path items (deeper: the whole value only)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def pathed(sp: Speller, items: Items, prop: Any) -> bool:
    """Whether an argument of schema `prop` may be written as path items (an object with declared
    properties or an array, in a spelling with paths, items keyed and not closed by text of their own)."""
    path = sp.values.path
    if path is None or not items.keyed or items.columns or items.item_post.strip():
        return False
    if sp.path_kv is None:
        sp.path_kv = items.kv      # (the first items seen are the call's: their separator is the base one)
    schema = sp.conv.deref(prop)
    if not isinstance(schema, dict):
        return False
    types = schema_types(schema)
    props = schema.get("properties")
    obj = "object" in types and isinstance(props, dict) and bool(props) and sp.path_depth < MAX_PATH_DEPTH
    arr = "array" in types and path.arrays != "whole"
    return obj or arr


def path_item(sp: Speller, items: Items, key: str, prop: Any, name: str, follows: tuple[Follow, ...],
              forbid: tuple[str, ...]) -> str:
    """An argument's text after its key `key`: its whole value, or its path items; then one of `follows`."""
    path = sp.values.path
    assert path is not None and sp.path_kv is not None
    base = sp.path_kv
    closed = items.kv[:len(items.kv) - len(base)] if items.kv.endswith(base) else ""
    whole = _join(sp.exact_trail(items.kv, items.kv[:1].isspace()),
                  _group(_unique(sp.then(prop, f"{name}-whole", follows, 0, forbid))))
    alts = [whole]
    schema = sp.conv.deref(prop)
    schema = schema if isinstance(schema, dict) else {}
    types = schema_types(schema)
    opener = closed + path.open
    sub = replace(items, open="", close="", item_pre=items.item_pre + key + opener, kv=path.close + base)
    props = schema.get("properties")
    if "object" in types and isinstance(props, dict) and props and sp.path_depth < MAX_PATH_DEPTH:
        keys = [k for k in props if isinstance(k, str)]
        required = {k for k in schema.get("required") or [] if isinstance(k, str)}
        sp.path_depth += 1
        try:
            alts.append(sp.ordered(sub, keys, {k: props[k] for k in keys}, required, f"{name}-p", follows, 0,
                                   first_head=opener))
        finally:
            sp.path_depth -= 1
    if "array" in types and path.arrays != "whole":
        element = schema.get("items")
        alts.append(_array(sp, sub, element if isinstance(element, dict) else {}, f"{name}-a", follows, opener))
    return " | ".join(_unique(alts))


def _array(sp: Speller, sub: Items, element: Any, name: str, follows: tuple[Follow, ...], opener: str) -> str:
    """Elements as path items (``[0]=a&tags[1]=b``), each a value of `element` written whole."""
    path = sp.values.path
    assert path is not None
    index = "" if path.arrays == "empty" else sp.b.rule("path-index", "[0-9]{1,6}")
    kv = sp.exact_trail(sub.kv, sub.kv[:1].isspace())

    def body(r: str) -> str:
        more = Follow(sub.item_post + sub.sep + sub.item_pre, _join(index, kv, r))   # (as between items)
        return " | ".join(_unique(sp.then(element, name, (more, *follows), 0)))
    each = sp.b.recursive_rule(f"{name}-rep", body)
    return _join(literal(opener) if opener else "", index, kv, each)


__all__ = ["MAX_PATH_DEPTH", "path_item", "pathed"]
