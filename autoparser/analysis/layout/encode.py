"""Writing a call as its layout says: the inverse of the reader, used to check a learned layout
against the renders it was learned from (and by tests to write model output)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...values.spelling import encode_value, nested_text
from .model import KEY_AGAIN, CallLayout, Items


def encode_items(items: Items, args: Mapping[str, Any]) -> str:
    """The arguments hole for ``args`` (positional items: the values in the given order)."""
    if not args:
        return ""
    parts = []
    for key, value in args.items():
        head = items.item_pre + (key + items.kv if items.keyed else "")
        parts.append(head + encode_value(items.values, value) + items.item_post.replace(KEY_AGAIN, key))
    return items.open + items.sep.join(parts) + items.close


def encode_call(layout: CallLayout, name: str, call_id: str, args: Mapping[str, Any]) -> str:
    """One call after its start marker."""
    out = []
    for p in layout.pieces:
        if p.kind == "lit":
            out.append(p.text)
        elif p.kind in ("name", "name_again"):
            out.append(name)
        elif p.kind == "id":
            out.append(call_id)
        elif layout.args.kind == "items" and layout.args.items is not None:
            out.append(encode_items(layout.args.items, args))
        else:
            kind = "python" if layout.args.kind == "python" else layout.args.serializer
            out.append(nested_text(dict(args), kind, layout.args.codec))
    return "".join(out)


__all__ = ["encode_call", "encode_items"]
