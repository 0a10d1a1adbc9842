"""The JSON call object in a probe render: the JSON (or Python-literal) value at a point, the
object holding one call's name grown outward, and the layout read off it (where the name, the
arguments and the id sit, the members written in every call, an arguments string holding JSON).
"""

from __future__ import annotations

import json
from typing import Any

from ..probes import needles as N
from ..values.jsonscan import JsonScanner
from ..values.pyliteral import python_to_json
from .model import JsonLayout

NM, IM = N.NAME_MARK, N.ID_MARK


def scan_json(text: str, start: int) -> tuple[int, Any, bool] | None:
    """Decode the JSON (or Python-literal) value at ``start``: (end, value, python)."""
    for python in (False, True):
        sc = JsonScanner(python=python, track_depth=0)
        end = sc.feed(text[start:])
        if end is None:
            end = sc.finish()
        if end is None or sc.failed:
            continue
        raw = text[start:start + end]
        try:
            value = json.loads(python_to_json(raw) if python else raw, strict=False)
        except ValueError:
            continue
        return start + end, value, python
    return None


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    out = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _count_names(value: Any) -> int:
    n = 0
    for path, v in _paths(value):
        if v == NM or (path and path[-1] == NM):
            n += 1
    return n


def find_call_object(text: str, name_at: int) -> tuple[int, int, Any, bool] | None:
    """The JSON object holding the name at ``name_at``, grown outward while it holds one call."""
    best = None
    i = name_at
    while True:
        i = text.rfind("{", 0, i)
        if i < 0:
            break
        got = scan_json(text, i)
        if got is not None and got[0] > name_at and isinstance(got[1], dict):
            if _count_names(got[1]) != 1:
                break
            if any(v == NM for _, v in _paths(got[1])) or any(p and p[-1] == NM for p, _ in _paths(got[1])):
                best = (i, got[0], got[1], got[2])
    return best


def json_layout(obj: dict[str, Any], args_string: bool) -> JsonLayout | None:
    name_path = args_path = id_path = None
    name_is_key = False
    for path, v in _paths(obj):
        if v == NM and name_path is None:
            name_path = path
        if path and path[-1] == NM:
            name_is_key, name_path, args_path = True, path, path
        if v == IM and id_path is None:
            id_path = path
        if isinstance(v, dict) and N.ARG1 in v and args_path is None:
            args_path = path
        if isinstance(v, str) and N.ARG1 in v and v != NM and args_path is None and _json_object_with(v, N.ARG1):
            args_path, args_string = path, True   # a JSON string holding the JSON arguments
    if name_path is None or args_path is None or (args_path == () and not name_is_key):
        return None   # no arguments member (arguments flattened beside the name: a layout reads them)
    if id_path is None and not name_is_key:
        # an id the template writes itself ("tool_call_id": "0"): any other key naming an id
        for k in obj:
            if isinstance(k, str) and "id" in k.lower() and (k,) not in (name_path, args_path):
                id_path = (k,)
                break
    keys = list(obj.keys())
    id_after = id_path is not None and bool(id_path) and not name_is_key and id_path[0] in keys \
        and args_path is not None and args_path[0] in keys and keys.index(id_path[0]) > keys.index(args_path[0])
    read = {p[0] for p in (name_path, args_path, id_path) if p}
    constants = tuple(k for k in keys if isinstance(k, str) and k not in read and not name_is_key)
    return JsonLayout(name_path=tuple(name_path), args_path=tuple(args_path), id_path=tuple(id_path or ()),
                      name_is_key=name_is_key, args_as_string=args_string, id_after_args=id_after,
                      constants=constants, constant_values=tuple(_constant_text(obj[k]) for k in constants))


def _constant_text(value: Any) -> str:
    """A constant member's value as JSON text, or "" when a probe needle is in it (it varies)."""
    text = json.dumps(value, ensure_ascii=False)
    return "" if any(n in text for n in (NM, IM, N.ARG1)) else text


def _json_object_with(text: str, key: str) -> bool:
    """``text`` is a JSON object with member ``key``."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and key in value


def _json_open(core: str, layout: JsonLayout) -> str:
    """The object text before the name value (``{"name": "``), used to spot marker-less calls."""
    if layout.name_is_key:
        return core[: core.find(NM)]
    sc = JsonScanner(track_depth=1)
    sc.feed(core)
    first = min((span[0] for path, span in sc.spans.items() if len(path) == 1), default=0)
    return core[:first]
