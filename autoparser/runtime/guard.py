"""The call guard: every parsed call checked against the request's tools before a server runs it.

A call whose name is not one of the request's tools, or whose arguments are not a JSON object
that follows the tool's ``parameters`` schema, keeps its text but is marked:
``ToolCall.invalid`` holds the reason and the message gets a warning. Objects that declare
``properties`` take no other keys unless ``additionalProperties`` allows them (as the GBNF).

Schemas are compiled once per request plan (plans with the same tools share them, ``PerPlan``)
into small validation closures (no code is generated or evaluated) for the keywords tool schemas
use: ``type``, ``enum``, ``const``, ``properties``, ``required``, ``additionalProperties``,
``items``, ``anyOf``/``oneOf``/``allOf``, bounds on numbers, strings and arrays. A schema with any other keyword is validated by the
``jsonschema`` library instead, so nothing is waved through.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from ..plan import PerPlan, RequestPlan
from ..values.argfit import ArgsFit

Check = Callable[[Any, str], "str | None"]     # (value, where) -> why it does not fit, or None
# the compiled form: value -> why it does not fit, told from where the value sits (".key: ...",
# "[2]: ...", ": ..."), or None; the caller puts its own location in front, only on failure
_Check = Callable[[Any], "str | None"]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$schema", "$comment", "$id",
                          "deprecated", "readOnly", "writeOnly", "format", "$defs", "definitions", "nullable"})
_HANDLED = frozenset({"type", "enum", "const", "properties", "required", "additionalProperties", "items",
                      "anyOf", "oneOf", "allOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                      "minLength", "maxLength", "minItems", "maxItems"}) | _ANNOTATIONS
_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool))
    or (isinstance(v, float) and math.isfinite(v) and v.is_integer()),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}
# the exact classes a type takes at once (the rest goes through its test above)
_CLASSES: dict[str, tuple[type, ...]] = {"object": (dict,), "array": (list,), "string": (str,), "boolean": (bool,),
                                         "null": (type(None),), "integer": (int,), "number": (int, float)}


class Unsupported(Exception):
    """The schema uses a keyword the closures do not check."""


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def compile_schema(schema: Any) -> Check:
    """Closures checking ``schema``; raises :class:`Unsupported` for keywords they do not handle."""
    check = _compile(schema)

    def located(value: Any, where: str) -> str | None:
        reason = check(value)
        return where + reason if reason else None
    return located


def _compile(schema: Any) -> _Check:
    if schema is True or schema == {}:
        return lambda v: None
    if schema is False:
        return lambda v: ": no value is allowed here"
    if not isinstance(schema, Mapping):
        raise Unsupported("schema is not an object")
    unknown = set(schema) - _HANDLED
    if unknown:
        raise Unsupported(", ".join(sorted(unknown)))
    checks: list[_Check] = []
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else list(kind)
        if schema.get("nullable") is True:
            kinds.append("null")
        tests = [_TYPES[k] for k in kinds if k in _TYPES]
        if len(tests) != len(kinds):
            raise Unsupported(f"type {kind!r}")
        checks.append(_type_check(kinds, tests))
    if "enum" in schema:
        checks.append(_enum_check(list(schema["enum"])))
    if "const" in schema:
        const = schema["const"]
        checks.append(lambda v: None if v == const and isinstance(v, bool) == isinstance(const, bool) else
                      f": {_short(v)} is not {_short(const)}")
    for key, label, test in _NUMBER_BOUNDS:
        bound = schema.get(key)
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            checks.append(_number_bound(bound, label, test))
    for key, kind_test, size_test, label in _SIZE_BOUNDS:
        size = schema.get(key)
        if isinstance(size, int) and not isinstance(size, bool):
            checks.append(_size_bound(size, label, kind_test, size_test))
    props = schema.get("properties")
    if props is not None or "required" in schema or "additionalProperties" in schema:
        checks.append(_object_check(schema))
    if "items" in schema:
        if not isinstance(schema["items"], (Mapping, bool)):
            raise Unsupported("items as a list")
        checks.append(_items_check(_compile(schema["items"])))
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            checks.append(_any_of([_compile(s) for s in schema[key]]))
    if isinstance(schema.get("allOf"), list):
        parts = [_compile(s) for s in schema["allOf"]]
        checks.append(lambda v: next((r for p in parts if (r := p(v))), None))
    if len(checks) == 1:
        return checks[0]

    def check(value: Any) -> str | None:
        for c in checks:
            reason = c(value)
            if reason:
                return reason
        return None
    return check


def _type_check(kinds: list[str], tests: list[Callable[[Any], bool]]) -> _Check:
    # the exact class of the value settles most values at once (``type(True)`` is ``bool``, not ``int``)
    exact = frozenset(c for k in kinds for c in _CLASSES[k])
    label = "/".join(kinds)

    def check(v: Any) -> str | None:
        if type(v) in exact or any(t(v) for t in tests):
            return None
        return f": {_short(v)} is not of type {label}"
    return check


def _enum_check(allowed: list[Any]) -> _Check:
    strings = frozenset(a for a in allowed if isinstance(a, str))   # a string equals only a string

    def check(v: Any) -> str | None:
        if type(v) is str:
            if v in strings:
                return None
        elif any(v == a and isinstance(v, bool) == isinstance(a, bool) for a in allowed):
            return None
        return f": {_short(v)} is not one of {_short(allowed)}"
    return check


def _items_check(item: _Check) -> _Check:
    def check(v: Any) -> str | None:
        if not isinstance(v, list):
            return None
        for i, x in enumerate(v):
            reason = item(x)
            if reason:
                return f"[{i}]{reason}"
        return None
    return check


_NUMBER_BOUNDS: tuple[tuple[str, str, Callable[[float, float], bool]], ...] = (
    ("minimum", "less than", lambda v, b: v < b), ("maximum", "more than", lambda v, b: v > b),
    ("exclusiveMinimum", "at most", lambda v, b: v <= b), ("exclusiveMaximum", "at least", lambda v, b: v >= b))
_SIZE_BOUNDS: tuple[tuple[str, Callable[[Any], bool], Callable[[int, int], bool], str], ...] = (
    ("minLength", _TYPES["string"], lambda n, b: n < b, "shorter than"),
    ("maxLength", _TYPES["string"], lambda n, b: n > b, "longer than"),
    ("minItems", _TYPES["array"], lambda n, b: n < b, "fewer items than"),
    ("maxItems", _TYPES["array"], lambda n, b: n > b, "more items than"))


def _number_bound(bound: float, label: str, test: Callable[[float, float], bool]) -> _Check:
    def check(v: Any) -> str | None:
        return f": {_short(v)} is {label} {bound}" if _TYPES["number"](v) and test(v, bound) else None
    return check


def _size_bound(size: int, label: str, kind: Callable[[Any], bool], test: Callable[[int, int], bool]) -> _Check:
    def check(v: Any) -> str | None:
        return f": {label} {size}" if kind(v) and test(len(v), size) else None
    return check


def _any_of(options: list[_Check]) -> _Check:
    def check(v: Any) -> str | None:
        if any(o(v) is None for o in options):
            return None
        return f": {_short(v)} fits none of the allowed schemas"
    return check


def _object_check(schema: Mapping[str, Any]) -> _Check:
    props: Mapping[str, Any] = schema.get("properties") or {}
    fields = {k: _compile(s) for k, s in props.items()}
    required = [k for k in schema.get("required") or [] if isinstance(k, str)]
    extra = schema.get("additionalProperties", not props)   # declared properties: no others (as the GBNF)
    extra_check = None if extra in (True, False) else _compile(extra)

    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return None
        for key in required:
            if key not in value:
                return f": required property {key!r} is missing"
        for key, item in value.items():
            sub = fields.get(key)
            if sub is not None:
                reason = sub(item)
            elif extra is False:
                return f": property {key!r} is not in the tool's schema"
            elif extra_check is not None:
                reason = extra_check(item)
            else:
                reason = None
            if reason:
                return f".{key}{reason}"
        return None
    return check


def _library_check(schema: Mapping[str, Any]) -> _Check:
    """The ``jsonschema`` library for schemas beyond the closures (``pattern``, ``not``, ...)."""
    import jsonschema

    strict = _strict(schema)
    cls = jsonschema.validators.validator_for(strict)
    try:
        cls.check_schema(strict)
    except jsonschema.SchemaError as e:
        reason = f": the tool's schema is invalid ({e.message}), so its arguments cannot be checked"
        return lambda v: reason
    validator = cls(strict)

    def check(value: Any) -> str | None:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
        if error is None:
            return None
        path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
        return f"{path}: {error.message}"
    return check


def _strict(schema: Any) -> Any:
    """``schema`` with ``additionalProperties: false`` where ``properties`` are declared and it is not set."""
    if isinstance(schema, list):
        return [_strict(s) for s in schema]
    if not isinstance(schema, Mapping):
        return schema
    out = {k: (_strict(v) if k not in ("enum", "const", "default", "examples") else v) for k, v in schema.items()}
    if isinstance(schema.get("properties"), Mapping) and schema["properties"] and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    if isinstance(schema.get("properties"), Mapping):
        out["properties"] = {k: _strict(v) for k, v in schema["properties"].items()}
    return out


class CallGuard:
    """The checks of one request plan's tools (built once per plan, shared by its parses and by later
    plans with the same output key: it holds the tools' names and schemas, not the plan)."""

    def __init__(self, plan: RequestPlan) -> None:
        tp = plan.tools
        self.names = frozenset(tp.names) if tp is not None else frozenset()
        self._schemas = tp.schemas if tp is not None else {}
        self._checks: dict[str, _Check] = {}
        self._fits: dict[str, ArgsFit | None] = {}

    def _check_for(self, name: str) -> _Check:
        check = self._checks.get(name)
        if check is None:
            schema = self._schemas.get(name) or {}
            try:
                check = _compile(schema)
            except Unsupported:
                check = _library_check(schema)
            self._checks[name] = check
        return check

    def fit_for(self, name: str) -> ArgsFit | None:
        """What tool ``name``'s schema says about arguments written in another shape (None when the
        tool is not declared or its schema reshapes nothing)."""
        if name in self._fits:
            return self._fits[name]
        fit = None
        if name in self.names:
            check = self._check_for(name)
            fit = ArgsFit(self._schemas.get(name) or {}, lambda value: check(value) is None)
            fit = fit if fit.active else None
        self._fits[name] = fit
        return fit

    def reason(self, name: str, arguments: str, value: Any = None) -> str | None:
        """Why the call may not be run, or None when it fits the request's tools; ``value`` is
        ``arguments`` decoded already (None: decoded here)."""
        if self.names and name not in self.names:
            return f"function {name!r} is not one of the request's tools"
        if value is not None:
            args = value
        else:
            try:
                args = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                return "arguments are not valid JSON"
            except RecursionError:
                return "arguments are nested too deeply to check"
        if not isinstance(args, dict):
            return "arguments are not a JSON object"
        if not self.names:
            return None
        reason = self._check_for(name)(args)
        return "arguments" + reason if reason else None


#: The plan's guard, built on first use (shared by plans with the same output key).
guard_for: PerPlan[CallGuard] = PerPlan(CallGuard, shared=True)


__all__ = ["CallGuard", "compile_schema", "guard_for"]
