"""Writing a call as its layout says: the inverse of the reader, used to check a learned layout
against the renders it was learned from (and by tests to write model output)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...values.codecs import Codec
from ...values.spelling import encode_items as _encode_items
from ...values.spelling import nested_text, with_name
from .model import CallLayout, Items


def encode_items(items: Items, args: Mapping[str, Any]) -> str:
    """The arguments hole for ``args`` (positional items: the values in the given order)."""
    return _encode_items(items, args.items())


def encode_args(layout: CallLayout, args: Mapping[str, Any], name: str | None = None,
                call_id: str | None = None) -> str:
    """The arguments hole as the layout writes it (the call's `name` and `call_id` where its items
    write them again)."""
    a = layout.args
    if a.kind == "items" and a.items is not None:
        items = a.items if name is None else with_name(a.items, name, call_id)
        text = a.inner_open + encode_items(items, args) + a.inner_close
        return Codec.from_spec(a.codec).encode(text) if a.codec else text
    return nested_text(dict(args), "python" if a.kind == "python" else a.serializer, a.codec)


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
        else:
            out.append(encode_args(layout, args, name, call_id))
    return "".join(out)


__all__ = ["encode_args", "encode_call", "encode_items"]
