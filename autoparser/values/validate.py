"""JSON values checked against a JSON schema, by closures compiled once per schema.

No code is generated or evaluated, nothing is retrieved: a ``$ref`` is a local JSON pointer
resolved against the schema's root (lazily, once per reference, so recursive schemas work), and
:func:`autoparser.values.schemas.check_schema` has refused every other reference, cycles that never
descend into the value, wrong keyword types, oversized patterns and schemas before a schema gets
here. ``pattern`` and ``patternProperties`` run under a :class:`~.patterns.Deadline`: a search that
cannot finish in it makes the value "not checkable in time", never a hang.

Keywords: ``type`` (and ``nullable``), ``enum``, ``const``, number bounds (draft 4's boolean
``exclusiveMaximum`` too), ``multipleOf``, string and array and object sizes, ``pattern``,
``properties``, ``patternProperties``, ``additionalProperties``, ``required``, ``propertyNames``,
``dependentRequired``, ``dependentSchemas``, ``dependencies``, ``items`` (a schema or draft 7's list),
``prefixItems``, ``additionalItems``, ``contains`` (with ``minContains``/``maxContains``),
``uniqueItems``, ``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``$ref``, and
``unevaluatedProperties``/``unevaluatedItems`` read statically (the properties and items the schema
and its ``allOf``/``anyOf``/``oneOf``/``$ref`` parts declare). Other keywords are annotations.

One policy is the project's, not JSON Schema's: an object schema that declares ``properties`` takes
no other keys unless ``additionalProperties`` (or ``patternProperties``) allows them, as the GBNF;
the parts of an ``allOf`` count together.
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from .patterns import Deadline, compile_pattern, pattern_problem, search
from .refs import resolve_pointer
from .schemas import json_type

# value, deadline -> why it does not fit, told from where the value sits (".key: ...", "[2]: ...",
# ": ..."), or None; the caller puts its own location in front, only on failure
Check = Callable[[Any, Deadline], "str | None"]

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
_NUMBER_BOUNDS: tuple[tuple[str, str, Callable[[float, float], bool]], ...] = (
    ("minimum", "less than", lambda v, b: v < b), ("maximum", "more than", lambda v, b: v > b),
    ("exclusiveMinimum", "at most", lambda v, b: v <= b), ("exclusiveMaximum", "at least", lambda v, b: v >= b))
_SIZES: tuple[tuple[str, type, Callable[[int, int], bool], str], ...] = (
    ("minLength", str, lambda n, b: n < b, "shorter than"), ("maxLength", str, lambda n, b: n > b, "longer than"),
    ("minItems", list, lambda n, b: n < b, "fewer items than"), ("maxItems", list, lambda n, b: n > b,
                                                                  "more items than"),
    ("minProperties", dict, lambda n, b: n < b, "fewer properties than"),
    ("maxProperties", dict, lambda n, b: n > b, "more properties than"))
_OBJECT_KEYS = ("properties", "patternProperties", "additionalProperties", "required", "propertyNames",
                "dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties")
_ARRAY_KEYS = ("items", "prefixItems", "additionalItems", "contains", "uniqueItems", "unevaluatedItems")
_OK: Check = lambda v, d: None        # noqa: E731


def short(value: Any) -> str:
    """A value as JSON, cut to 40 characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(type(value).__name__)
    return text if len(text) <= 40 else text[:37] + "..."


def _same(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, containers compare member by member."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and bool(a == b)


def _canon(x: Any) -> Any:
    """A hashable form of a JSON value under :func:`_same`'s equality."""
    if isinstance(x, bool):
        return ("b", x)
    if isinstance(x, float) and x.is_integer():
        return ("n", int(x))
    if isinstance(x, (int, float)):
        return ("n", x)
    if isinstance(x, list):
        return ("l", tuple(_canon(v) for v in x))
    if isinstance(x, dict):
        return ("d", frozenset((k, _canon(v)) for k, v in x.items()))
    return (type(x).__name__, x)


def _first(checks: list[Check]) -> Check:
    if not checks:
        return _OK
    if len(checks) == 1:
        return checks[0]

    def check(v: Any, d: Deadline) -> str | None:
        for c in checks:
            reason = c(v, d)
            if reason:
                return reason
        return None
    return check


class Compiler:
    """Compiles the subschemas of one root schema; ``$ref`` targets are compiled once each."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, schema: Any, open_object: bool = False) -> Check:
        """The check of ``schema``; ``open_object``: its ``properties`` do not close the object (an
        ``allOf`` part, whose parent checks the keys of all parts together)."""
        if schema is True or schema == {}:
            return _OK
        if schema is False:
            return lambda v, d: ": no value is allowed here"
        if not isinstance(schema, Mapping):
            return _OK
        checks: list[Check] = []
        if isinstance(schema.get("$ref"), str):
            checks.append(self.ref(schema["$ref"]))
        kind = schema.get("type")
        if isinstance(kind, (str, list)):
            kinds = [json_type(k) if isinstance(k, str) else k for k in ([kind] if isinstance(kind, str) else kind)]
            if schema.get("nullable") is True:
                kinds.append("null")
            if all(isinstance(k, str) and k in _TYPES for k in kinds):
                checks.append(_type_check(kinds))
            else:
                checks.append(lambda v, d: f": the schema's type {short(kind)} is not a JSON type")
        if isinstance(schema.get("enum"), list):
            checks.append(_enum_check(schema["enum"]))
        if "const" in schema:
            const = schema["const"]
            checks.append(lambda v, d: None if _same(v, const) else f": {short(v)} is not {short(const)}")
        checks += _number_checks(schema)
        checks += [_size_check(b, label, cls, test) for key, cls, test, label in _SIZES
                   if isinstance(b := schema.get(key), int) and not isinstance(b, bool)]
        if isinstance(schema.get("pattern"), str):
            checks.append(_pattern_check(schema["pattern"]))
        props = schema.get("properties")
        if any(k in schema for k in _OBJECT_KEYS):
            checks.append(self.object_check(schema, open_object))
        # the branches of an object that declares properties take its properties too (as the GBNF)
        open_branches = open_object or (isinstance(props, Mapping) and bool(props))
        if any(k in schema for k in _ARRAY_KEYS):
            checks.append(self.array_check(schema))
        if isinstance(schema.get("allOf"), list):
            parts = [self.compile(s, open_object=True) for s in schema["allOf"]]
            checks.append(lambda v, d: next((r for p in parts if (r := p(v, d))), None))
        if isinstance(schema.get("anyOf"), list):
            checks.append(_any_of([self.compile(s, open_branches) for s in schema["anyOf"]]))
        if isinstance(schema.get("oneOf"), list):
            checks.append(_one_of([self.compile(s, open_branches) for s in schema["oneOf"]]))
        if "not" in schema:
            inner = self.compile(schema["not"])
            checks.append(lambda v, d: f": {short(v)} fits a schema it must not fit" if inner(v, d) is None
                          else None)
        if "if" in schema:
            checks.append(self.if_check(schema))
        return _first(checks)

    def ref(self, ref: str) -> Check:
        """The check of a ``$ref``'s target, compiled on first use (a recursive schema refers to itself)."""
        found = self.refs.get(ref)
        if found is not None:
            return found
        cell: list[Check] = []

        def check(v: Any, d: Deadline) -> str | None:
            return cell[0](v, d)
        self.refs[ref] = check
        try:
            target = resolve_pointer(self.root, ref)
        except ValueError:
            cell.append(lambda v, d: f": the schema's reference {ref!r} does not resolve")
        else:
            cell.append(self.compile(target))
        return check

    def declared(self, schema: Mapping[str, Any]) -> tuple[set[str], list[str], bool]:
        """(property names, property patterns, open) that ``schema`` and its ``allOf``/``anyOf``/
        ``oneOf``/``$ref`` parts declare for one object; open: some part allows any other key."""
        names: set[str] = set()
        patterns: list[str] = []
        opened = False
        parts: list[Any] = [schema]
        for _ in range(256):        # bounded: a ``$ref`` cycle is no reason to walk for ever
            if not parts:
                break
            node = parts.pop()
            if not isinstance(node, Mapping):
                continue
            props = node.get("properties")
            if isinstance(props, Mapping):
                names.update(props)
            pats = node.get("patternProperties")
            if isinstance(pats, Mapping):
                patterns += [p for p in pats if isinstance(p, str)]
            if node is not schema and node.get("additionalProperties", False) is not False:
                opened = True
            for key in ("allOf", "anyOf", "oneOf"):
                if isinstance(node.get(key), list):
                    parts += node[key]
            if isinstance(node.get("$ref"), str):
                with contextlib.suppress(ValueError):
                    parts.append(resolve_pointer(self.root, node["$ref"]))
        return names, patterns, opened

    def object_check(self, schema: Mapping[str, Any], open_object: bool) -> Check:
        found = schema.get("properties")
        props: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        fields = {k: self.compile(s) for k, s in props.items()}
        found = schema.get("patternProperties")
        pats: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
        pattern_fields = [(_pattern(p), p, self.compile(s)) for p, s in pats.items()]
        required = [k for k in schema.get("required") or () if isinstance(k, str)]
        names: frozenset[str] = frozenset(fields)
        extra_patterns: list[Any] = []
        extra: Any = True
        if "additionalProperties" in schema:
            extra = schema["additionalProperties"]
        elif "unevaluatedProperties" in schema or (props and not open_object):
            # declared properties: no others (as the GBNF), counting what the schema's parts declare
            declared, more, opened = self.declared(schema)
            names = frozenset(declared)
            extra_patterns = [_pattern(p) for p in more]
            extra = True if opened else schema.get("unevaluatedProperties", False)
        extra_check = None if extra in (True, False) else self.compile(extra)
        names_check = self.compile(schema["propertyNames"]) if "propertyNames" in schema else None
        dependent = _dependents(schema)
        dependent_schemas = {k: self.compile(s) for k, s in _dependent_schemas(schema).items()}
        if not (pattern_fields or extra_patterns or dependent or dependent_schemas) and names_check is None:
            return _plain_object(required, fields, names, extra, extra_check)

        def check(value: Any, d: Deadline) -> str | None:
            if not isinstance(value, dict):
                return None
            for key in required:
                if key not in value:
                    return f": required property {key!r} is missing"
            for key, item in value.items():
                if names_check is not None and (why := names_check(key, d)):
                    return f": the property name {key!r} does not fit{why}"
                matched = False
                sub = fields.get(key)
                reason = sub(item, d) if sub is not None else None
                for compiled, source, pcheck in pattern_fields:
                    if isinstance(compiled, str):
                        return f": the schema's pattern {source!r} cannot be used ({compiled})"
                    found = search(compiled, key, d)
                    if found is None:
                        return f": the property name {key!r} could not be checked against {source!r} in time"
                    if found:
                        matched = True
                        reason = reason or pcheck(item, d)
                if sub is None and not matched and key not in names and not _any_search(extra_patterns, key, d):
                    if extra is False:
                        return f": property {key!r} is not in the tool's schema"
                    if extra_check is not None:
                        reason = extra_check(item, d)
                if reason:
                    return f".{key}{reason}"
                for other in dependent.get(key, ()):
                    if other not in value:
                        return f": property {other!r} is required with {key!r}"
                dep = dependent_schemas.get(key)
                if dep is not None and (why := dep(value, d)):
                    return why
            return None
        return check

    def array_check(self, schema: Mapping[str, Any]) -> Check:
        items = schema.get("items")
        prefix = schema.get("prefixItems") if isinstance(schema.get("prefixItems"), list) else None
        if isinstance(items, list):           # draft 7: a list of schemas, then additionalItems
            prefix, rest = items, schema.get("additionalItems", True)
        else:
            rest = items if "items" in schema else schema.get("unevaluatedItems", True)
        heads = [self.compile(s) for s in prefix or ()]
        tail = self.compile(rest)
        contains = self.compile(schema["contains"]) if "contains" in schema else None
        low = schema.get("minContains", 1) if isinstance(schema.get("minContains", 1), int) else 1
        high = schema.get("maxContains")
        unique = schema.get("uniqueItems") is True

        def check(value: Any, d: Deadline) -> str | None:
            if not isinstance(value, list):
                return None
            for i, x in enumerate(value):
                reason = (heads[i] if i < len(heads) else tail)(x, d)
                if reason:
                    return f"[{i}]{reason}"
            if contains is not None:
                n = sum(1 for x in value if contains(x, d) is None)
                if n < low or (isinstance(high, int) and n > high):
                    return f": holds {n} items that fit 'contains'"
            if unique:
                seen: set[Any] = set()
                for x in value:
                    key = _canon(x)
                    if key in seen:
                        return f": {short(x)} is there twice (uniqueItems)"
                    seen.add(key)
            return None
        return check

    def if_check(self, schema: Mapping[str, Any]) -> Check:
        cond = self.compile(schema["if"])
        then = self.compile(schema.get("then", True))
        other = self.compile(schema.get("else", True))
        return lambda v, d: then(v, d) if cond(v, d) is None else other(v, d)


def _plain_object(required: list[str], fields: dict[str, Check], names: frozenset[str], extra: Any,
                  extra_check: Check | None) -> Check:
    """:meth:`Compiler.object_check` of an object with no pattern, no ``propertyNames`` and no
    dependency (most tools' parameters): the same verdicts in fewer steps per member."""
    def check(value: Any, d: Deadline) -> str | None:
        if not isinstance(value, dict):
            return None
        for key in required:
            if key not in value:
                return f": required property {key!r} is missing"
        for key, item in value.items():
            sub = fields.get(key)
            if sub is not None:
                reason = sub(item, d)
            elif key in names:
                continue
            elif extra is False:
                return f": property {key!r} is not in the tool's schema"
            elif extra_check is not None:
                reason = extra_check(item, d)
            else:
                continue
            if reason:
                return f".{key}{reason}"
        return None
    return check


def _any_search(patterns: list[Any], key: str, d: Deadline) -> bool:
    return any(not isinstance(p, str) and search(p, key, d) for p in patterns)


def _pattern(source: str) -> Any:
    """``source`` compiled, or why it cannot be used (a string): a schema given here without
    :func:`~autoparser.values.schemas.check_schema` may hold anything."""
    problem = pattern_problem(source) if isinstance(source, str) else "the pattern is not a string"
    return problem if problem is not None else compile_pattern(source)


def _dependents(schema: Mapping[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key in ("dependentRequired", "dependencies"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            out.update({k: [x for x in v if isinstance(x, str)] for k, v in found.items() if isinstance(v, list)})
    return out


def _dependent_schemas(schema: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("dependentSchemas", "dependencies"):
        found = schema.get(key)
        if isinstance(found, Mapping):
            out.update({k: v for k, v in found.items() if isinstance(v, (Mapping, bool))})
    return out


def _type_check(kinds: list[str]) -> Check:
    # the exact class of the value settles most values at once (``type(True)`` is ``bool``, not ``int``)
    tests = [_TYPES[k] for k in kinds]
    exact = frozenset(c for k in kinds for c in _CLASSES[k])
    label = "/".join(kinds)

    def check(v: Any, d: Deadline) -> str | None:
        if type(v) in exact or any(t(v) for t in tests):
            return None
        return f": {short(v)} is not of type {label}"
    return check


def _enum_check(allowed: list[Any]) -> Check:
    strings = frozenset(a for a in allowed if isinstance(a, str))   # a string equals only a string
    others = [a for a in allowed if not isinstance(a, str)]

    def check(v: Any, d: Deadline) -> str | None:
        if type(v) is str:
            if v in strings:
                return None
        elif any(_same(v, a) for a in others):
            return None
        return f": {short(v)} is not one of {short(allowed)}"
    return check


def _number_checks(schema: Mapping[str, Any]) -> list[Check]:
    out = []
    for key, label, test in _NUMBER_BOUNDS:
        bound = schema.get(key)
        if key in ("minimum", "maximum") and schema.get("exclusive" + key.title()) is True:
            # draft 4: a boolean exclusiveMinimum/exclusiveMaximum makes minimum/maximum exclusive
            key, label, test = next(b for b in _NUMBER_BOUNDS if b[0] == "exclusive" + key.title())
        if isinstance(bound, (int, float)) and not isinstance(bound, bool):
            out.append(_number_bound(bound, label, test))
    step = schema.get("multipleOf")
    if isinstance(step, (int, float)) and not isinstance(step, bool) and step > 0:
        out.append(_multiple_check(step))
    return out


def _number_bound(bound: float, label: str, test: Callable[[float, float], bool]) -> Check:
    def check(v: Any, d: Deadline) -> str | None:
        return f": {short(v)} is {label} {bound}" if _TYPES["number"](v) and test(v, bound) else None
    return check


def _multiple_check(step: float) -> Check:
    def check(v: Any, d: Deadline) -> str | None:
        if not _TYPES["number"](v):
            return None
        if isinstance(v, int) and isinstance(step, int):
            fits = v % step == 0
        else:
            try:
                q = v / step
                fits = math.isfinite(q) and math.isclose(q, round(q), rel_tol=1e-9, abs_tol=1e-9)
            except (OverflowError, ZeroDivisionError):
                fits = False
        return None if fits else f": {short(v)} is not a multiple of {step}"
    return check


def _size_check(size: int, label: str, cls: type, test: Callable[[int, int], bool]) -> Check:
    def check(v: Any, d: Deadline) -> str | None:
        return f": {label} {size}" if isinstance(v, cls) and test(len(v), size) else None   # type: ignore[arg-type]
    return check


def _pattern_check(source: str) -> Check:
    compiled = _pattern(source)
    if isinstance(compiled, str):
        return lambda v, d: f": the schema's pattern {source!r} cannot be used ({compiled})"

    def check(v: Any, d: Deadline) -> str | None:
        if not isinstance(v, str):
            return None
        found = search(compiled, v, d)
        if found is None:
            return f": {short(v)} could not be checked against the pattern {source!r} in time"
        return None if found else f": {short(v)} does not match {source!r}"
    return check


def _any_of(options: list[Check]) -> Check:
    def check(v: Any, d: Deadline) -> str | None:
        if any(o(v, d) is None for o in options):
            return None
        return f": {short(v)} fits none of the allowed schemas"
    return check


def _one_of(options: list[Check]) -> Check:
    def check(v: Any, d: Deadline) -> str | None:
        n = sum(1 for o in options if o(v, d) is None)
        if n == 1:
            return None
        return f": {short(v)} fits none of the allowed schemas" if n == 0 else \
            f": {short(v)} fits {n} of the schemas where exactly one must fit (oneOf)"
    return check


# the schemas :func:`_quick_accept` reads: scalar members with a type and an enum of strings, in an
# object that names its members; words that only annotate are allowed beside them
_NOTES = frozenset({"title", "description", "default", "examples", "$comment", "$schema", "$id", "format",
                    "deprecated", "readOnly", "writeOnly", "$defs", "definitions"})
_QUICK_OBJECT = _NOTES | {"type", "properties", "required", "additionalProperties"}
_QUICK_MEMBER = _NOTES | {"type", "enum"}
_QUICK_CLASSES: dict[str, tuple[type, ...]] = {"string": (str,), "boolean": (bool,), "integer": (int,),
                                               "number": (int, float), "null": (type(None),)}
_ANY: frozenset[type] = frozenset({dict, list, str, int, float, bool, type(None)})   # the classes of decoded JSON values


def _quick_member(schema: Any) -> tuple[frozenset[type], frozenset[str] | None] | None:
    """What a member's schema asks of its value, when it asks no more than exact classes and an enum
    ((the classes, the enum's strings or None), else None)."""
    if schema is True:
        return _ANY, None
    if not isinstance(schema, Mapping) or not schema.keys() <= _QUICK_MEMBER:
        return None
    classes = _ANY
    kind = schema.get("type")
    if kind is not None:
        kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
        if not kinds or not all(isinstance(k, str) and k in _QUICK_CLASSES for k in kinds):
            return None
        classes = frozenset(c for k in kinds for c in _QUICK_CLASSES[k])
    strings = None
    if "enum" in schema:
        if not isinstance(schema["enum"], list):
            return None
        strings = frozenset(e for e in schema["enum"] if isinstance(e, str) and str in classes)
    return classes, strings


def _quick_accept(schema: Any) -> Callable[[Any], bool] | None:
    """A quick test of the common tool schema (an object of scalar members typed and maybe
    enumerated): True only for values the compiled check accepts (an object with the required
    members, each declared, of an exact class its type names, and a string of its enum if it has
    one); False says nothing (the compiled check gives the verdict). None when the schema asks more."""
    if not isinstance(schema, Mapping) or not schema.keys() <= _QUICK_OBJECT or schema.get("type", "object") != "object":
        return None
    props = schema.get("properties", {})
    typed: dict[str, frozenset[type]] = {}      # member -> its classes (no enum)
    enums: dict[str, frozenset[str]] = {}       # member -> the strings of its enum
    for key, sub in (props.items() if isinstance(props, Mapping) else ()):
        member = _quick_member(sub)
        if member is None:
            return None
        if member[1] is None:
            typed[key] = member[0]
        else:
            enums[key] = member[1]
    required = frozenset(k for k in schema.get("required") or () if isinstance(k, str))
    no_strings: frozenset[str] = frozenset()

    def accept(value: Any) -> bool:
        if type(value) is not dict or not required <= value.keys():
            return False
        for key, item in value.items():
            classes = typed.get(key)
            if classes is not None:
                if type(item) not in classes:
                    return False
            elif type(item) is not str or item not in enums.get(key, no_strings):
                return False
        return True
    return accept


def schema_check(schema: Any) -> Check:
    """The check of a tool's ``parameters`` schema: :meth:`Compiler.compile`, behind a quick test that
    accepts the common valid arguments of a common schema at once (:func:`_quick_accept`)."""
    full = Compiler(schema).compile(schema)
    accept = _quick_accept(schema)
    if accept is None:
        return full

    def check(value: Any, d: Deadline) -> str | None:
        return None if accept(value) else full(value, d)
    return check


def compile_schema(schema: Any) -> Callable[..., str | None]:
    """The check of ``schema`` as ``check(value, where, deadline=None) -> why it does not fit`` (with
    ``where`` in front), or None; ``deadline`` bounds its pattern searches (default: a fresh
    :class:`Deadline`)."""
    check = Compiler(schema).compile(schema)

    def located(value: Any, where: str, deadline: Deadline | None = None) -> str | None:
        reason = check(value, deadline or Deadline())
        return where + reason if reason else None
    return located


__all__ = ["Check", "Compiler", "compile_schema", "schema_check", "short"]
