"""Learning arrays and objects written as items whose keys are paths (a step of :mod:`.learn`):
``pv57_obj[ko]=v+w&pv57_obj[kn]=1&pv56_arr[0]=x+y``, ``NAME.pv57_obj.ko=v w``, ``pv57_obj%ko='v w'``.

In the probe values' arguments, the object probe's key followed by more text than the key/value
separator, then its first member's key, shows the path spelling: the text between the parent key
and the child key opens a segment, the text between the child key and the separator closes it.
The array probe's key is then followed by a segment holding its first index (``0`` or ``1``) or
nothing (``tags[]``), or directly by the separator (arrays written whole). The candidate
(:class:`~autoparser.values.written.KeyPath`) is kept only when it writes both probes' items
exactly as the template did.
"""

from __future__ import annotations

from dataclasses import replace

from ...values.spelling import Items, Values, encode_items
from ...values.written import KeyPath
from .spellings import value_probes

_OBJ, _ARR = "pv57_obj", "pv56_arr"
_MAX_MARK = 4      # the texts around a segment are short (``[``, ``]``, ``.``, ``%``, ``/``)


def learn_paths(region: str, items: Items, values: Values) -> Values | None:
    """``values`` with the path spelling the probe values' arguments ``region`` show, or None."""
    if not items.keyed or items.columns or not items.kv:
        return None
    probes = dict(value_probes())
    obj, first = probes.get(_OBJ), None
    if isinstance(obj, dict) and obj:
        first = next(iter(obj))
    k = region.find(items.item_pre + _OBJ)
    if first is None or k < 0:
        return None
    after = region[k + len(items.item_pre) + len(_OBJ):]
    if after.startswith(items.kv):
        return None   # the object is written whole
    j = after.find(first)
    e = after.find(items.kv, j + len(first)) if j >= 0 else -1
    if j <= 0 or e < 0:
        return None
    opener, closer = after[:j], after[j + len(first):e]
    if len(opener) > _MAX_MARK or len(closer) > _MAX_MARK or any(
            t in opener + closer for t in (items.kv.strip(), items.sep.strip()) if t):
        return None
    a = region.find(items.item_pre + _ARR)
    if a < 0:
        return None
    arr = region[a + len(items.item_pre) + len(_ARR):]
    if arr.startswith(items.kv):
        arrays = "whole"
    else:
        if not arr.startswith(opener):
            return None
        end = arr.find(closer + items.kv, len(opener)) if closer else arr.find(items.kv, len(opener))
        index = arr[len(opener):end] if end >= 0 else None
        if index not in ("0", "1", ""):
            return None
        arrays = index or "empty"
    cand = replace(values, path=KeyPath(opener, closer, arrays))
    bare = replace(items, open="", close="", values=cand)
    for key in (_ARR, _OBJ):
        run = encode_items(bare, [(key, probes[key])])
        at = region.find(items.item_pre + key)
        if region[at:at + len(run)] != run:
            return None
    return cand


__all__ = ["learn_paths"]
