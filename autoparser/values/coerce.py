"""Coerce argument values to the types a tool's JSON schema declares.

Templates that quote every value (``<escape>3<escape>``) or
print Python reprs (``{'a': True}``) lose the type; the schema gives it back.
A value that does not convert is left as it is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .pyliteral import python_to_json


def _types(schema: dict[str, Any]) -> list[str]:
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    return []


def raw_string(prop: Any, strings_json: bool = False) -> bool:
    """A tagged value the template writes raw, as a string: the schema says only ``string`` (or
    a string enum), and the format does not quote its strings (``strings_json``)."""
    if strings_json or not isinstance(prop, dict):
        return False
    types = prop.get("type")
    if isinstance(types, str):
        return types == "string"
    if isinstance(types, list):
        return types == ["string"]
    return "enum" in prop and all(isinstance(v, str) for v in prop["enum"])


def coerce(value: Any, schema: Mapping[str, Any] | None) -> Any:
    if not isinstance(schema, dict):
        return value
    types = _types(schema)
    if isinstance(value, str) and types and "string" not in types:
        text = value.strip()
        for cand in (text, python_to_json(text)):
            try:
                parsed = json.loads(cand)
            except ValueError:
                continue
            if not isinstance(parsed, str):
                value = parsed
                break
    if isinstance(value, dict):
        found = schema.get("properties")
        props: dict[str, Any] = found if isinstance(found, dict) else {}
        return {k: coerce(v, props.get(k)) for k, v in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [coerce(v, schema["items"]) for v in value]
    return value
