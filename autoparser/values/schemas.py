"""Tool schemas are client data: checked once, at ``apply()``, before anything reads them.

:func:`check_schema` walks a schema without recursion (a schema 5,000 levels deep is refused, not a
``RecursionError``) and raises :class:`~autoparser.errors.SchemaError`, naming the tool, where in the
schema and the keyword, for:

* a ``$ref`` that is not a local JSON pointer (``#/...``: a URL, a file, a relative reference, an
  anchor), that does not resolve, that points at something that is not a schema, or that goes round
  a cycle without descending into the value (``{"$ref": "#"}``): nothing is ever retrieved;
  ``$dynamicRef`` and ``$recursiveRef`` are refused;
* a keyword whose value has the wrong type (``"type": 5``, ``"required": "x"``, ``"properties": []``,
  ``"minLength": "3"``);
* a ``pattern`` or ``patternProperties`` key that is no regular expression or is too large to run
  safely (:mod:`.patterns`);
* a schema nested deeper than :data:`MAX_SCHEMA_DEPTH`, holding more than :data:`MAX_SCHEMA_NODES`
  JSON values (a 100,000-value ``enum``) or more than :data:`MAX_SCHEMA_CHARS` characters.

Keywords it does not know are annotations (JSON Schema's rule) and are only counted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from ..errors import SchemaError
from .patterns import MAX_TOTAL_PATTERN_SIZE, pattern_problem, pattern_size
from .refs import resolve_pointer

MAX_SCHEMA_DEPTH = 64          # JSON nesting levels (a property's schema is two levels down)
MAX_SCHEMA_NODES = 20_000      # JSON values in one schema (every key's value, every list item)
MAX_SCHEMA_CHARS = 2_000_000   # characters of its strings and keys together

TYPES = frozenset({"object", "array", "string", "number", "integer", "boolean", "null"})
#: type names schemas in the wild use for the JSON types (``"float"``, vLLM's and SGLang's tests send
#: them): accepted, and read as the JSON type they name
TYPE_ALIASES = {"float": "number", "double": "number", "decimal": "number", "int": "integer", "bool": "boolean",
                "str": "string", "text": "string", "dict": "object", "list": "array", "none": "null"}


def json_type(name: str) -> str:
    """The JSON type a schema's type name means (an alias mapped, case ignored); other names as given."""
    return TYPE_ALIASES.get(name.lower(), name.lower()) if name.lower() not in TYPES else name.lower()
# keywords whose value is a schema, a list of schemas, or an object of schemas
SCHEMA_ONE = frozenset({"additionalProperties", "additionalItems", "not", "if", "then", "else", "contains",
                        "propertyNames", "unevaluatedProperties", "unevaluatedItems", "contentSchema"})
SCHEMA_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
SCHEMA_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})
_NUMBERS = frozenset({"minimum", "maximum", "multipleOf"})
_COUNTS = frozenset({"minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
                     "minContains", "maxContains"})
_STRINGS = frozenset({"$id", "$anchor", "$schema", "$comment", "title", "description", "format"})
# subschemas applied to the same value as their parent (a cycle through these alone never ends)
_IN_PLACE_ONE = ("not", "if", "then", "else")
_IN_PLACE_LIST = ("allOf", "anyOf", "oneOf")


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _path(parts: tuple[str | int, ...]) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


class _Walk:
    """One schema being checked (``where`` names it in errors: ``tool 'f' parameters``)."""

    def __init__(self, root: Any, where: str, tool: str | None) -> None:
        self.root = root
        self.where = where
        self.tool = tool
        self.pattern_size = 0

    def fail(self, parts: tuple[str | int, ...], keyword: str, message: str, ref: str | None = None) -> SchemaError:
        return SchemaError(f"{self.where}{_path(parts)}: {message}", ref=ref, tool=self.tool, keyword=keyword,
                           path=_path(parts).lstrip("."))

    # ------------------------------------------------------------ size and depth
    def measure(self) -> None:
        nodes = chars = 0
        stack: list[tuple[Any, int]] = [(self.root, 0)]
        while stack:
            node, depth = stack.pop()
            nodes += 1
            if nodes > MAX_SCHEMA_NODES:
                raise SchemaError(f"{self.where}: the schema holds more than {MAX_SCHEMA_NODES} values",
                                  tool=self.tool, keyword="size")
            if isinstance(node, str):
                chars += len(node)
            elif isinstance(node, dict):
                chars += sum(len(k) if isinstance(k, str) else 1 for k in node)
            if chars > MAX_SCHEMA_CHARS:
                raise SchemaError(f"{self.where}: the schema's text is longer than {MAX_SCHEMA_CHARS} characters",
                                  tool=self.tool, keyword="size")
            if depth > MAX_SCHEMA_DEPTH:
                raise SchemaError(f"{self.where}: the schema is nested more than {MAX_SCHEMA_DEPTH} levels deep",
                                  tool=self.tool, keyword="depth")
            if isinstance(node, dict):
                stack.extend((v, depth + 1) for v in node.values())
            elif isinstance(node, list):
                stack.extend((v, depth + 1) for v in node)

    # ------------------------------------------------------------ keywords
    def schemas(self) -> Iterator[tuple[Any, tuple[str | int, ...]]]:
        """Every subschema with its path (the root first), keywords checked on the way."""
        top = "parameters" if self.tool else "schema"
        stack: list[tuple[Any, tuple[str | int, ...], str]] = [(self.root, (), top)]
        while stack:
            node, parts, holder = stack.pop()      # holder: the keyword whose value holds the node
            if isinstance(node, bool):
                continue
            if not isinstance(node, Mapping):
                raise self.fail(parts, holder, f"a schema must be an object or a boolean, not {type(node).__name__}")
            yield node, parts
            for key, value in node.items():
                at = (*parts, key)
                if key in SCHEMA_ONE or (key == "items" and not isinstance(value, list)):
                    stack.append((value, at, key))
                elif key in SCHEMA_LIST or key == "items":
                    if not isinstance(value, list) or (key != "prefixItems" and key != "items" and not value):
                        raise self.fail(at, key, "must be a non-empty list of schemas")
                    stack.extend((v, (*at, i), key) for i, v in enumerate(value))
                elif key in SCHEMA_MAP:
                    if not isinstance(value, Mapping):
                        raise self.fail(at, key, "must be an object whose values are schemas")
                    stack.extend((v, (*at, k), key) for k, v in value.items())
                elif key == "dependencies":
                    if not isinstance(value, Mapping):
                        raise self.fail(at, key, "must be an object")
                    for k, v in value.items():
                        if isinstance(v, list):
                            self.names((*at, k), key, v)
                        else:
                            stack.append((v, (*at, k), key))
                else:
                    self.keyword(at, key, value, node)

    def names(self, at: tuple[str | int, ...], key: str, value: Any) -> None:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.fail(at, key, "must be a list of property names")

    def keyword(self, at: tuple[str | int, ...], key: str, value: Any, node: Mapping[str, Any]) -> None:
        if key == "type":
            kinds = value if isinstance(value, list) else [value]
            if not kinds or not all(isinstance(k, str) and json_type(k) in TYPES for k in kinds):
                raise self.fail(at, key, f"must be one of {', '.join(sorted(TYPES))} (or an alias: "
                                         f"{', '.join(sorted(TYPE_ALIASES))}) or a list of them, "
                                         f"not {_short(value)}")
        elif key == "enum":
            if not isinstance(value, list):
                raise self.fail(at, key, "must be a list of values")
        elif key == "required":
            self.names(at, key, value)
        elif key == "dependentRequired":
            if not isinstance(value, Mapping):
                raise self.fail(at, key, "must be an object of lists of property names")
            for k, v in value.items():
                self.names((*at, k), key, v)
        elif key in _NUMBERS:
            if not _is_number(value) or (key == "multipleOf" and not value > 0):
                raise self.fail(at, key, "must be a number" + (" above 0" if key == "multipleOf" else ""))
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            if not (_is_number(value) or isinstance(value, bool)):
                raise self.fail(at, key, "must be a number")
        elif key in _COUNTS:
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise self.fail(at, key, "must be a non-negative integer")
        elif key in ("uniqueItems", "nullable", "deprecated", "readOnly", "writeOnly"):
            if not isinstance(value, bool):
                raise self.fail(at, key, "must be true or false")
        elif key == "pattern":
            if not isinstance(value, str):
                raise self.fail(at, key, "must be a string")
            self.pattern(at, key, value)
        elif key in ("$dynamicRef", "$recursiveRef"):
            raise self.fail(at, key, "is not supported: only local references ($ref: #/...) are resolved")
        elif key == "$ref":
            self.ref(at, value)
        elif key in _STRINGS and not isinstance(value, str):
            raise self.fail(at, key, "must be a string")

    def pattern(self, at: tuple[str | int, ...], key: str, p: str) -> None:
        problem = pattern_problem(p)
        if problem is not None:
            raise self.fail(at, key, f"{_short(p)}: {problem}")
        self.pattern_size += pattern_size(p)[0]
        if self.pattern_size > MAX_TOTAL_PATTERN_SIZE:
            raise self.fail(at, key, f"the schema's patterns together expand to more than {MAX_TOTAL_PATTERN_SIZE} "
                                     "steps")

    def ref(self, at: tuple[str | int, ...], ref: Any) -> None:
        if not isinstance(ref, str):
            raise self.fail(at, "$ref", "must be a string")
        if not ref.startswith("#") or (len(ref) > 1 and not ref.startswith("#/")):
            raise self.fail(at, "$ref", f"{_short(ref)} is not a local reference: only JSON pointers into the "
                                        "schema itself (#/$defs/...) are resolved, nothing is retrieved", ref=ref)
        try:
            target = resolve_pointer(self.root, ref)
        except SchemaError:
            raise self.fail(at, "$ref", f"{_short(ref)} does not resolve", ref=ref) from None
        if not isinstance(target, (Mapping, bool)):
            raise self.fail(at, "$ref", f"{_short(ref)} points at a {type(target).__name__}, not a schema", ref=ref)

    # ------------------------------------------------------------ reference cycles
    def cycles(self, refs: list[tuple[str, tuple[str | int, ...]]]) -> None:
        """Refuse a ``$ref`` that comes back to itself through subschemas applied to the same value
        (``allOf``, ``anyOf``, ``oneOf``, ``not``, ``if``/``then``/``else``, ``dependentSchemas``,
        ``$ref``): checking a value against it would never end. Recursion through ``properties`` or
        ``items`` is fine."""
        edges: dict[str, list[str]] = {}
        for ref, _at in refs:
            edges.setdefault(ref, self.in_place_refs(resolve_pointer(self.root, ref)))
        done: set[str] = set()
        for ref, at in refs:
            if ref in done:
                continue
            chain = [ref]                                  # the path of the depth-first walk
            todo = [iter(edges.get(ref, ()))]
            while todo:
                nxt = next(todo[-1], None)
                if nxt is None:
                    done.add(chain.pop())
                    todo.pop()
                    continue
                if nxt in chain:
                    loop = " -> ".join([*chain[chain.index(nxt):], nxt])
                    raise self.fail(at, "$ref", f"{_short(ref)} refers back to itself ({loop}) without "
                                                "descending into the value", ref=ref)
                if nxt not in done:
                    if nxt not in edges:
                        edges[nxt] = self.in_place_refs(resolve_pointer(self.root, nxt))
                    chain.append(nxt)
                    todo.append(iter(edges[nxt]))

    def in_place_refs(self, schema: Any) -> list[str]:
        """The ``$ref``s applied to the same value as ``schema`` (itself and its in-place subschemas)."""
        out: list[str] = []
        stack = [schema]
        while stack:
            node = stack.pop()
            if not isinstance(node, Mapping):
                continue
            if isinstance(node.get("$ref"), str):
                out.append(node["$ref"])
            stack.extend(node[k] for k in _IN_PLACE_ONE if k in node)
            for key in _IN_PLACE_LIST:
                if isinstance(node.get(key), list):
                    stack.extend(node[key])
            if isinstance(node.get("dependentSchemas"), Mapping):
                stack.extend(node["dependentSchemas"].values())
        return out

    def run(self) -> None:
        self.measure()
        refs = []
        for node, parts in self.schemas():
            ref = node.get("$ref")
            if isinstance(ref, str):
                refs.append((ref, (*parts, "$ref")))
            for p in node.get("patternProperties") or {}:
                self.pattern((*parts, "patternProperties"), "patternProperties", p)
        self.cycles(refs)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_schema(schema: Any, *, where: str = "schema", tool: str | None = None) -> None:
    """Raise :class:`SchemaError` when ``schema`` cannot be used safely (see the module's docstring);
    ``where`` starts the error message (``tool 'get_weather' parameters``)."""
    _Walk(schema, where, tool).run()


__all__ = ["MAX_SCHEMA_CHARS", "MAX_SCHEMA_DEPTH", "MAX_SCHEMA_NODES", "SCHEMA_LIST", "SCHEMA_MAP", "SCHEMA_ONE", "TYPES",
           "check_schema"]
