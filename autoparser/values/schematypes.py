"""The JSON types a tool schema allows for an argument (:func:`schema_types`): read by the value
readers and writers alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .schemas import TYPE_ALIASES

__all__ = ["JSON_TYPES", "schema_types"]

# ---------------------------------------------------------------- types from the schema
# type names schemas in the wild use for the JSON types
_ALIASES = TYPE_ALIASES
_KNOWN = frozenset(("string", "number", "integer", "boolean", "object", "array", "null"))
JSON_TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def _names(names: Any) -> frozenset[str]:
    """Type names as JSON types; empty (any type) when one is unknown."""
    listed = [names] if isinstance(names, str) else [n for n in names if isinstance(n, str)]
    out = frozenset(_ALIASES.get(n.lower(), n.lower()) for n in listed)
    return out if out <= _KNOWN else frozenset()


def schema_types(prop: Any) -> frozenset[str]:
    """The JSON types an argument's schema allows (empty: any)."""
    return _types(prop, 0)


def _types(prop: Any, depth: int) -> frozenset[str]:
    if not isinstance(prop, Mapping) or depth > 8:
        return frozenset()
    t = prop.get("type")
    if isinstance(t, (str, list)):
        return _names(t)
    for key in ("anyOf", "oneOf"):
        alts = prop.get(key)
        if isinstance(alts, list) and alts:
            parts = [_types(a, depth + 1) for a in alts]
            return frozenset().union(*parts) if all(parts) else frozenset()
    for key in ("enum", "const"):
        vals = prop.get(key) if key == "enum" else [prop.get(key)] if key in prop else None
        if isinstance(vals, list) and vals:
            return frozenset("null" if v is None else JSON_TYPES.get(type(v), "string") for v in vals)
    return frozenset()
