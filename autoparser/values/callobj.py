"""A tool call written as a JSON object in another layout than the template's, read by its members.

Models trained on one call layout write the same call in the others they have seen: the keys in
another order, extra members (``"type": "function"``, an id), ``parameters`` or ``input`` where
the template renders ``arguments``, the arguments as a JSON string, the OpenAI shape
``{"type": "function", "function": {"name": ..., "arguments": ...}}``, or the name as the key
(``{"get_weather": {...}}``). :func:`read_call_object` reads any of them from the decoded object,
guided by the request: a name counts only when it is one of the request's tools, so any other
object stays what it was (content). The keys below are the members of JSON call objects in
common use, not any model's format; the template's own keys come first.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

NAME_KEYS = ("name", "function", "tool_name", "tool")
ARGS_KEYS = ("arguments", "parameters", "input", "args", "params")
ID_KEYS = ("id", "call_id", "tool_call_id")
ENVELOPE_KEYS = ("type", "index", *ID_KEYS)
#: the first keys a call object may start with (what the engine looks for where a call may begin)
START_KEYS = tuple(dict.fromkeys(("name", "type", "function", *ARGS_KEYS, *ID_KEYS)))


def _args(value: Any) -> Any:
    """Arguments as written: an object, or a JSON string holding one."""
    if isinstance(value, str) and value.lstrip().startswith("{"):
        try:
            decoded = json.loads(value, strict=False)
        except (ValueError, RecursionError):
            return None
        return decoded if isinstance(decoded, dict) else None
    return value if isinstance(value, dict) else None


def read_call_object(value: Any, names: Collection[str], name_keys: Sequence[str] = (),
                     args_keys: Sequence[str] = (), id_keys: Sequence[str] = ()) -> tuple[str, dict[str, Any], str] | None:
    """``(name, arguments, id)`` of the call object ``value`` in any common layout, or None when it
    names none of ``names``. ``name_keys``, ``args_keys``, ``id_keys``: the template's own keys (tried
    first). An object holding no arguments member has no arguments (``{}``) only when every other
    member is part of the call's envelope."""
    if not isinstance(value, dict):
        return None
    inner = value.get("function")
    if isinstance(inner, dict) and set(value) <= {"function", *ENVELOPE_KEYS}:
        found = read_call_object(inner, names, name_keys, args_keys, id_keys)
        if found is not None and not found[2]:
            outer_id = next((v for k in (*id_keys, *ID_KEYS) if isinstance(v := value.get(k), str)), "")
            found = (found[0], found[1], outer_id)
        return found
    name = next((v for k in (*name_keys, *NAME_KEYS) if isinstance(v := value.get(k), str) and v in names), None)
    if name is None:
        # the name as the key: {"get_weather": {...}}
        keyed = [k for k in value if k in names]
        if len(keyed) != 1 or set(value) - {keyed[0], *ENVELOPE_KEYS}:
            return None
        args = _args(value[keyed[0]])
        return (keyed[0], args, "") if args is not None else None
    call_id = next((v for k in (*id_keys, *ID_KEYS) if isinstance(v := value.get(k), str)), "")
    for key in (*args_keys, *ARGS_KEYS):
        if key in value:
            args = _args(value[key])
            return (name, args, call_id) if args is not None else None
    rest = set(value) - {*name_keys, *NAME_KEYS, *ENVELOPE_KEYS, *id_keys}
    return (name, {}, call_id) if not rest else None


def call_shaped(value: Any) -> bool:
    """An object with a name and arguments in one of the common layouts, whatever it names."""
    if not isinstance(value, dict):
        return False
    inner = value.get("function")
    if isinstance(inner, dict):
        value = inner
    return any(isinstance(value.get(k), str) for k in NAME_KEYS) and any(k in value for k in ARGS_KEYS)


__all__ = ["ARGS_KEYS", "ENVELOPE_KEYS", "ID_KEYS", "NAME_KEYS", "START_KEYS", "call_shaped", "read_call_object"]
