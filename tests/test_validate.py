"""The call guard's validator (``autoparser.values.validate``) against the ``jsonschema`` library.

autoparser checks arguments with its own closures (no retrieval, patterns under a time budget),
so they are compared here with the reference implementation on generated values, for schemas that
use every keyword the closures read. Every object schema states ``additionalProperties``: where it
does not, autoparser closes an object that declares ``properties`` (its own policy, as the GBNF),
which JSON Schema does not.
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser.values.patterns import Deadline
from autoparser.values.validate import Compiler, compile_schema, schema_check

OPEN = {"additionalProperties": True}
SCHEMAS: dict[str, dict[str, Any]] = {
    "types": {"type": ["integer", "string", "null"]},
    "numbers": {"type": "number", "minimum": -3, "exclusiveMaximum": 10, "multipleOf": 0.5},
    "integers": {"type": "integer", "exclusiveMinimum": 0, "maximum": 100, "multipleOf": 3},
    "strings": {"type": "string", "minLength": 1, "maxLength": 4, "pattern": "^[a-c]+$"},
    "enum_const": {"anyOf": [{"enum": [1, "1", True, None, [1], {"a": 1}]}, {"const": 2.0}]},
    "object": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
               "required": ["a"], "additionalProperties": {"type": "boolean"}, "minProperties": 1,
               "maxProperties": 3},
    "pattern_properties": {"type": "object", "patternProperties": {"^x": {"type": "integer"}},
                           "additionalProperties": False, "propertyNames": {"maxLength": 3}},
    "dependencies": {"type": "object", "dependentRequired": {"a": ["b"]},
                     "dependentSchemas": {"c": {"required": ["d"]}}, **OPEN},
    "arrays": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}],
               "items": {"type": "boolean"}, "minItems": 1, "maxItems": 4},
    "contains_unique": {"type": "array", "contains": {"type": "integer"}, "minContains": 1, "maxContains": 2,
                        "uniqueItems": True},
    "combinators": {"oneOf": [{"type": "integer"}, {"type": "number", "minimum": 5}],
                    "not": {"const": 7}},
    "conditional": {"if": {"type": "integer"}, "then": {"minimum": 3}, "else": {"type": "string"}},
    "all_of": {"allOf": [{"type": "object", "properties": {"a": {"type": "integer"}}, **OPEN},
                         {"required": ["a"]}]},
    "recursive": {"$defs": {"n": {"type": "object", "properties": {"k": {"type": "array",
                                                                         "items": {"$ref": "#/$defs/n"}}},
                                  **OPEN}}, "$ref": "#/$defs/n"},
    "booleans": {"type": "object", "properties": {"yes": True, "no": False}, **OPEN},
}

LEAVES = st.one_of(st.none(), st.booleans(), st.integers(-20, 120), st.sampled_from([0.5, 2.0, 7.0, -3.0, 1e300]),
                   st.text("abcx", max_size=5))
VALUES = st.recursive(LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.sampled_from(["a", "b", "c", "d", "x1", "xyz1", "k", "yes", "no"]), inner, max_size=4)),
    max_leaves=12)


@functools.cache
def reference(name: str) -> Any:
    return jsonschema.Draft202012Validator(SCHEMAS[name])


@functools.cache
def ours(name: str) -> Any:
    return compile_schema(SCHEMAS[name])


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_same_verdict_as_jsonschema(name: str, value: Any) -> None:
    expected = reference(name).is_valid(value)
    got = ours(name)(value, "arguments")
    assert (got is None) == expected, (SCHEMAS[name], value, got)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_every_schema_accepts_and_refuses_something(name: str) -> None:
    """The generated values reach both verdicts (so the comparison above says something)."""
    check = compile_schema(SCHEMAS[name])
    samples = [None, True, 0, 3, 6, 7, 9, 1.5, "a", "abc", "x", [], [1], [1, "a", True], [1, 1], {},
               {"a": 1}, {"a": 1, "b": "x"}, {"a": "x"}, {"x1": 1}, {"xyz1": 1}, {"c": 1, "d": 2},
               {"k": [{"k": []}]}, {"k": [{"k": 1}]}, {"yes": 1}, {"no": 1}, {"a": 1, "c": 2}]
    verdicts = {check(v, "arguments") is None for v in samples}
    assert verdicts == {True, False}


# tool schemas of the shape schema_check's quick test reads, and some just outside it
QUICK_SCHEMAS: dict[str, Any] = {
    "typed": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string", "description": "b"},
                                               "c": {"type": ["number", "null"]}}, "required": ["a"]},
    "enums": {"type": "object", "properties": {"b": {"type": "string", "enum": ["x", "abc", 1]},
                                               "k": {"enum": ["a", None]}, "yes": True, "no": {}},
              "required": ["b"], "additionalProperties": False},
    "open": {"properties": {"a": {"type": "boolean"}}, "additionalProperties": {"type": "integer"}},
    "no_properties": {"type": "object"},
    "enum_not_string": {"type": "object", "properties": {"a": {"type": "integer", "enum": ["a", 3]}}},
    "required_string": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": "ab"},
    "outside": {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}},
    "nullable": {"type": "object", "nullable": True, "properties": {"a": {"type": "integer"}}},
}


@pytest.mark.parametrize("name", sorted(QUICK_SCHEMAS))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=VALUES)
def test_quick_test_keeps_the_verdict(name: str, value: Any) -> None:
    """``schema_check`` (a quick test in front of the compiled check) gives the compiled check's verdict."""
    schema = QUICK_SCHEMAS[name]
    assert schema_check(schema)(value, Deadline()) == Compiler(schema).compile(schema)(value, Deadline())


def test_quick_test_reads_common_tool_schemas() -> None:
    from autoparser.values.validate import _quick_accept
    assert _quick_accept(QUICK_SCHEMAS["typed"]) is not None and _quick_accept(QUICK_SCHEMAS["enums"]) is not None
    assert _quick_accept(QUICK_SCHEMAS["outside"]) is None and _quick_accept(QUICK_SCHEMAS["nullable"]) is None
    accept = _quick_accept(QUICK_SCHEMAS["enums"])
    assert accept is not None and accept({"b": "x", "k": "a"}) and not accept({"b": 1}) and not accept({"k": "a"})
