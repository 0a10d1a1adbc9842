"""GBNF builder, delimiter automata, JSON Schema rules and grammar blocks.

Every grammar is loaded by llguidance; texts are checked both with llguidance and with an
exact context-free matcher (gbnf_check.cfg_accepts, llama.cpp's semantics), except where
llguidance's greedy lexer is known to differ (lexer_conflict).
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
from gbnf_check import accepts, cfg_accepts, grammar_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser.grammar.gbnf import GbnfBuilder, char_class, literal, rule_refs, sanitize_name
from autoparser.grammar.schema import BLOCKS, grammar_block, json_rule, schema_rule, schema_value_rule

ROOT = Path(__file__).resolve().parent.parent
HYP = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
CLOSE = "\n</parameter>\n"

# --- helpers ----------------------------------------------------------------------


def check_portable(gbnf: str) -> str:
    """Assert llama.cpp's naming rules and our subset, and that llguidance loads the grammar."""
    rules = [line for line in gbnf.split("\n") if line and not line.startswith("#")]
    assert rules[0].startswith("root ::= ")
    for line in rules:
        name, body = line.split(" ::= ", 1)
        assert re.fullmatch(r"[a-z][a-z0-9-]*", name), name
        assert "_" not in name and all("_" not in ref for ref in rule_refs(body)), line
        bare = re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', "", body)
        assert not set(bare) & set("*+."), f"unbounded or '.' operator in: {line}"
    assert grammar_error(gbnf) == ""
    return gbnf


def check(gbnf: str, text: str, ok: bool, lexer_conflict: bool = False) -> None:
    """Exact CFG semantics must give `ok`; llguidance too, unless its greedy lexer is known to differ."""
    assert cfg_accepts(gbnf, text) is ok, f"cfg: {text!r}"
    if not lexer_conflict:
        assert accepts(gbnf, text) is ok, f"llguidance: {text!r}"


def schema_grammar(schema: Any, **kwargs: Any) -> str:
    b = GbnfBuilder()
    schema_rule(b, schema, "root", **kwargs)
    return check_portable(b.render())


def single_rule_grammar(make: Any) -> str:
    """Grammar whose root is the rule returned by make(builder)."""
    b = GbnfBuilder()
    b.define(b.reserve("root"), make(b))
    return check_portable(b.render())


def dumps_variants(value: Any) -> list[str]:
    return [
        json.dumps(value),
        json.dumps(value, indent=2),
        json.dumps(value, ensure_ascii=False),
        json.dumps(value, separators=(",", ":")),
    ]


# --- schemas ------------------------------------------------------------------------

WEATHER = {"type": "object", "properties": {"location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, "required": ["location"]}
SEARCH = {"type": "object", "properties": {"query": {"type": "string"}, "top_k": {"type": "integer"}, "filters": {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}, "exact": {"type": "boolean"}, "since": {"type": ["string", "null"]}}}, "code": {"type": "string"}}, "required": ["query"]}
STRICT = {**WEATHER, "additionalProperties": False}
SEARCH_STRICT = {**SEARCH, "additionalProperties": False}
TREE = {
    "$defs": {"node": {"type": "object", "additionalProperties": False, "required": ["name"], "properties": {
        "name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
    "$ref": "#/$defs/node",
}
COLOR = {"definitions": {"color": {"enum": ["red", "green", 3, None]}}, "type": "object",
         "properties": {"c": {"$ref": "#/definitions/color"}}, "required": ["c"], "additionalProperties": False}
ANY_OF = {"anyOf": [{"type": "integer"}, {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"], "additionalProperties": False}]}
ONE_OF = {"oneOf": [{"type": "string", "maxLength": 3}, {"type": "boolean"}]}
ALL_OF = {"allOf": [{"properties": {"a": {"type": "integer"}}, "required": ["a"]},
                    {"properties": {"b": {"type": "string"}}, "required": ["b"]}], "additionalProperties": False}
ORDER = {"properties": {"a": {"type": "integer"}, "b": {"type": "integer"}, "c": {"type": "integer"}}, "required": ["b"], "additionalProperties": False}
BOUNDED = {"type": "array", "items": {"type": "integer"}, "minItems": 1, "maxItems": 3}
AT_LEAST_2 = {"type": "array", "items": {"type": "boolean"}, "minItems": 2}
TUPLE = {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}
SHORT = {"type": "string", "minLength": 2, "maxLength": 4}
LONG = {"type": "string", "minLength": 2}
PATTERN = {"type": "string", "pattern": "^[a-z]+$", "format": "email"}
CONST = {"const": {"a": [1, "é"], "b": None}}
NULLABLE = {"type": "integer", "nullable": True}
EXTRA_INT = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"], "additionalProperties": {"type": "integer"}}
NUMBER = {"type": "number"}
INTEGER = {"type": "integer"}
ANYTHING: dict[str, Any] = {}
UNICODE_KEYS = {"type": "object", "properties": {"città": {"type": "string"}, 'q"uote': {"type": "integer"}}, "additionalProperties": False}

CASES: list[tuple[str, Any, Any, bool]] = [
    ("weather-min", WEATHER, {"location": "Paris"}, True),
    ("weather-full", WEATHER, {"location": "Paris", "unit": "celsius"}, True),
    ("weather-extra", WEATHER, {"location": "Paris", "note": [1, {"x": None}]}, True),
    ("weather-escaped", WEATHER, {"location": 'Q "x" \\ \n \u00e9 \U0001f600'}, True),
    ("weather-wrong-type", WEATHER, {"location": 5}, False),
    ("weather-missing", WEATHER, {"unit": "celsius"}, False),
    ("weather-empty", WEATHER, {}, False),
    ("weather-bad-enum", WEATHER, {"location": "Paris", "unit": "kelvin"}, False),
    ("weather-not-object", WEATHER, ["Paris"], False),
    ("strict-ok", STRICT, {"location": "Paris", "unit": "fahrenheit"}, True),
    ("strict-extra", STRICT, {"location": "Paris", "note": "x"}, False),
    ("search-min", SEARCH, {"query": "q"}, True),
    ("search-full", SEARCH, {"query": "q", "top_k": 3, "filters": {"tags": ["a", "b"], "exact": True, "since": None}, "code": "x = 1"}, True),
    ("search-since-str", SEARCH, {"query": "q", "filters": {"since": "2024-01-01"}}, True),
    ("search-empty-filters", SEARCH, {"query": "q", "top_k": -1, "filters": {}}, True),
    ("search-out-of-order", SEARCH, {"query": "q", "filters": {}, "top_k": -1}, False),
    ("search-float-top-k", SEARCH, {"query": "q", "top_k": 1.5}, False),
    ("search-tags-not-list", SEARCH, {"query": "q", "filters": {"tags": "a"}}, False),
    ("search-tags-int-item", SEARCH, {"query": "q", "filters": {"tags": ["a", 1]}}, False),
    ("search-exact-str", SEARCH, {"query": "q", "filters": {"exact": "yes"}}, False),
    ("search-since-int", SEARCH, {"query": "q", "filters": {"since": 5}}, False),
    ("search-query-null", SEARCH, {"query": None}, False),
    ("search-strict-extra", SEARCH_STRICT, {"query": "q", "limit": 1}, False),
    ("tree", TREE, {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}, {"name": "d", "children": []}]}, True),
    ("tree-bad-child", TREE, {"name": "a", "children": [{"children": []}]}, False),
    ("tree-extra", TREE, {"name": "a", "size": 1}, False),
    ("definitions", COLOR, {"c": "green"}, True),
    ("definitions-int", COLOR, {"c": 3}, True),
    ("definitions-null", COLOR, {"c": None}, True),
    ("definitions-bad", COLOR, {"c": "blue"}, False),
    ("any-of-int", ANY_OF, 7, True),
    ("any-of-object", ANY_OF, {"x": 1.25}, True),
    ("any-of-bad", ANY_OF, {"x": "1"}, False),
    ("one-of-str", ONE_OF, "abc", True),
    ("one-of-long", ONE_OF, "abcd", False),
    ("one-of-bool", ONE_OF, False, True),
    ("all-of", ALL_OF, {"a": 1, "b": "x"}, True),
    ("all-of-missing", ALL_OF, {"a": 1}, False),
    ("order-b", ORDER, {"b": 1}, True),
    ("order-ab", ORDER, {"a": 1, "b": 2}, True),
    ("order-bc", ORDER, {"b": 1, "c": 2}, True),
    ("order-abc", ORDER, {"a": 1, "b": 2, "c": 3}, True),
    ("order-a", ORDER, {"a": 1}, False),
    ("order-ac", ORDER, {"a": 1, "c": 2}, False),
    ("bounded-1", BOUNDED, [1], True),
    ("bounded-3", BOUNDED, [1, 2, 3], True),
    ("bounded-0", BOUNDED, [], False),
    ("bounded-4", BOUNDED, [1, 2, 3, 4], False),
    ("at-least-2", AT_LEAST_2, [True, False, True, True, False], True),
    ("at-least-2-short", AT_LEAST_2, [True], False),
    ("tuple", TUPLE, ["a", 1], True),
    ("tuple-swapped", TUPLE, [1, "a"], False),
    ("short-2", SHORT, "ab", True),
    ("short-4-escaped", SHORT, 'a"\n\u00e9', True),
    ("short-1", SHORT, "a", False),
    ("short-5", SHORT, "abcde", False),
    ("long", LONG, "x" * 50, True),
    ("long-short", LONG, "x", False),
    ("pattern-ignored", PATTERN, "Not An Email!", True),
    ("const", CONST, {"a": [1, "é"], "b": None}, True),
    ("const-other", CONST, {"a": [1, "e"], "b": None}, False),
    ("nullable-int", NULLABLE, 4, True),
    ("nullable-null", NULLABLE, None, True),
    ("nullable-str", NULLABLE, "4", False),
    ("extra-int", EXTRA_INT, {"id": 1, "n": 2, "m": -3}, True),
    ("extra-int-bad", EXTRA_INT, {"id": 1, "n": "2"}, False),
    ("number-float", NUMBER, 1.5e-7, True),
    ("number-int", NUMBER, -12, True),
    ("number-str", NUMBER, "1", False),
    ("integer-float", INTEGER, 2.0, False),
    ("anything", ANYTHING, {"a": [1, 2.5, None, True, "s", {}]}, True),
    ("unicode-keys", UNICODE_KEYS, {"città": "Roma", 'q"uote': 1}, True),
    ("unicode-keys-wrong", UNICODE_KEYS, {"città": 1}, False),
]


@pytest.mark.parametrize(("schema", "value", "ok"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_schema_instances(schema: Any, value: Any, ok: bool) -> None:
    gbnf = schema_grammar(schema)
    for text in dumps_variants(value):
        check(gbnf, text, ok)


# (id, schema, text, ok, llguidance's greedy lexer differs from llama.cpp)
RAW_CASES: list[tuple[str, Any, str, bool, bool]] = [
    ("duplicate-required-key", WEATHER, '{"location": "a", "location": "b"}', False, False),
    ("duplicate-optional-key", WEATHER, '{"location": "a", "unit": "celsius", "unit": "celsius"}', False, False),
    ("extra-then-known", WEATHER, '{"location": "a", "x": 1, "unit": "celsius"}', False, False),
    ("extra-prefix-of-known", WEATHER, '{"location": "a", "uni": 1, "units": 2, "": 3}', True, True),
    ("known-key-out-of-order", ORDER, '{"c": 1, "b": 2}', False, False),
    ("trailing-comma", WEATHER, '{"location": "a",}', False, False),
    ("leading-zero", INTEGER, "012", False, False),
    ("exponent-leading-zero", NUMBER, "1e-05", True, False),
    ("upper-exponent", NUMBER, "-0.5E+10", True, False),
    ("bare-fraction", NUMBER, ".5", False, False),
    ("nan", NUMBER, "NaN", False, False),
    ("python-true", {"type": "boolean"}, "True", False, False),
    ("bad-escape", {"type": "string"}, '"\\q"', False, False),
    ("raw-control", {"type": "string"}, '"a\tb"', False, False),
    ("unicode-escape-key", UNICODE_KEYS, '{"citt\\u00e0": "Roma"}', True, False),
    ("trailing-space", WEATHER, '{"location": "a"}\n  ', True, False),
    ("deep-indent", {"type": "array", "items": {}}, "[\n" + " " * 21 + "1]", False, False),
    ("const-or-string", {"anyOf": [{"const": "abc"}, {"type": "string"}]}, '"abd"', True, True),
]


@pytest.mark.parametrize(("schema", "text", "ok", "conflict"), [c[1:] for c in RAW_CASES], ids=[c[0] for c in RAW_CASES])
def test_schema_raw_texts(schema: Any, text: str, ok: bool, conflict: bool) -> None:
    check(schema_grammar(schema), text, ok, lexer_conflict=conflict)


def test_additional_default_false_matches_llamacpp() -> None:
    gbnf = schema_grammar(WEATHER, additional_default=False)
    check(gbnf, '{"location": "a"}', True)
    check(gbnf, '{"location": "a", "x": 1}', False)


def test_unresolved_ref_raises() -> None:
    with pytest.raises(ValueError, match="unresolved"):
        schema_grammar({"$ref": "#/$defs/missing"})


def test_rule_names_never_use_underscores() -> None:
    schema = {"type": "object", "properties": {"get_current_weather": {"$ref": "#/$defs/My_Def"}, "__x__": {"type": "integer"}},
              "$defs": {"My_Def": {"type": "object", "properties": {"snake_case_key": {"type": "string"}}}}}
    gbnf = schema_grammar(schema)
    assert "get-current-weather" in gbnf and "my-def" in gbnf
    assert not any("_" in line.split(" ::= ")[0] for line in gbnf.splitlines())
    check(gbnf, '{"get_current_weather": {"snake_case_key": "x"}, "__x__": 1}', True)


# --- hypothesis: random instances are accepted --------------------------------------

JSON_SCALARS = st.none() | st.booleans() | st.integers(-(10**18), 10**18) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)


def json_values(depth: int = 3) -> st.SearchStrategy[Any]:
    if depth == 0:
        return JSON_SCALARS
    inner = json_values(depth - 1)
    return JSON_SCALARS | st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)


def instances(schema: Any, root: Any = None, depth: int = 3) -> st.SearchStrategy[Any]:
    """Valid instances of the (small) schemas used in the property tests."""
    root = root if root is not None else schema
    if "$ref" in schema:
        target = root
        for part in schema["$ref"][2:].split("/"):
            target = target[part]
        return instances(target, root, depth - 1)
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return st.one_of([instances({**schema, "type": t}, root, depth) for t in kind])
    simple = {"string": st.text(max_size=20), "integer": st.integers(-(10**18), 10**18), "boolean": st.booleans(),
              "null": st.none(), "number": st.floats(allow_nan=False, allow_infinity=False) | st.integers(-(10**9), 10**9)}
    if kind in simple:
        return simple[kind]
    if kind == "array":
        return st.lists(instances(schema.get("items", {}), root, depth), max_size=4) if depth > 0 else st.just([])
    if kind == "object":
        return _object_instances(schema, root, depth)
    return json_values(depth)


def _object_instances(schema: dict[str, Any], root: Any, depth: int) -> st.SearchStrategy[Any]:
    props = schema.get("properties", {})
    required = schema.get("required", [])
    subs = {k: instances(v, root, depth) for k, v in props.items()}
    strategy = st.fixed_dictionaries({k: subs[k] for k in required}, optional={k: s for k, s in subs.items() if k not in required})
    return strategy.map(lambda d: {k: d[k] for k in props if k in d})


PROPERTY_SCHEMAS = {"weather": WEATHER, "search": SEARCH, "tree": TREE, "anything": ANYTHING, "search-strict": SEARCH_STRICT}


@pytest.mark.parametrize("name", list(PROPERTY_SCHEMAS))
@HYP
@given(data=st.data())
def test_random_instances_accepted(name: str, data: st.DataObject) -> None:
    schema = PROPERTY_SCHEMAS[name]
    value = data.draw(instances(schema))
    gbnf = schema_grammar(schema)
    for text in dumps_variants(value):
        check(gbnf, text, True)


@HYP
@given(unit=st.text(max_size=12).filter(lambda u: u not in ("celsius", "fahrenheit")))
def test_random_enum_misses_rejected(unit: str) -> None:
    check(schema_grammar(WEATHER), json.dumps({"location": "x", "unit": unit}), False)


@HYP
@given(key=st.text(max_size=10).filter(lambda k: k not in ("location", "unit")), value=json_values(1))
def test_unknown_keys_follow_additional_properties(key: str, value: Any) -> None:
    text = json.dumps({"location": "x", key: value})
    check(schema_grammar(STRICT), text, False)
    # llguidance's greedy lexer may take a key like "uni" for the literal "unit" (see gbnf_check)
    check(schema_grammar(WEATHER), text, True, lexer_conflict=True)


# --- builder basics ---------------------------------------------------------------


@pytest.mark.parametrize(("raw", "clean"), [
    ("get_weather", "get-weather"), ("Foo Bar!!", "foo-bar"), ("3d", "r-3d"), ("", "rule"), ("--a__b--", "a-b"), ("città", "citt"),
])
def test_sanitize_name(raw: str, clean: str) -> None:
    assert sanitize_name(raw) == clean


def test_rule_dedup_and_unique_names() -> None:
    b = GbnfBuilder()
    assert b.rule("a_rule", '"x"') == "a-rule"
    assert b.rule("other", '"x"') == "a-rule"
    assert b.rule("a-rule", '"y"') == "a-rule-1"
    assert b.rule("start", '"z"') == "start-1"  # llguidance renames root to start


def test_render_root_first_and_reachable_only() -> None:
    b = GbnfBuilder()
    b.rule("unused", '"u"')
    leaf = b.rule("leaf", '"l"')
    b.rule("root", f'"r" {leaf}')
    assert b.render() == 'root ::= "r" leaf\nleaf ::= "l"\n'


def test_render_root_alias() -> None:
    b = GbnfBuilder()
    assert b.rule("x", '"q"') == "x"
    assert b.rule("root", '"q"') == "x"
    assert b.render() == 'root ::= x\nx ::= "q"\n'
    check(b.render(), "q", True)


def test_render_rejects_undefined_rules() -> None:
    b = GbnfBuilder()
    b.rule("root", "missing")
    with pytest.raises(ValueError, match="missing"):
        b.render()
    with pytest.raises(ValueError):
        GbnfBuilder().render()
    with pytest.raises(ValueError):
        b.rule("bad", '"a"\n| "b"')


def test_recursive_rule_is_right_recursive() -> None:
    gbnf = single_rule_grammar(lambda b: b.recursive_rule("as", lambda n: f'| "a" {n}', key="as"))
    check(gbnf, "", True)
    check(gbnf, "aaaa", True)
    check(gbnf, "ab", False)


TRICKY_STRINGS = ['say "hi"', "back\\slash \\n", "new\nline\ttab\rcr", "\x01\x1f\x7f", "é中😀", "[]^-&&~~", "#not a comment", "a ::= b | c", ""]


@pytest.mark.parametrize("s", TRICKY_STRINGS)
def test_literal_escaping(s: str) -> None:
    gbnf = single_rule_grammar(lambda b: literal(s))
    check(gbnf, s, True)
    check(gbnf, s + "x", False)
    if s:
        check(gbnf, s[:-1], False)


@HYP
@given(s=st.text(max_size=20))
def test_literal_any_text(s: str) -> None:
    check(single_rule_grammar(lambda b: literal(s)), s, True)


@pytest.mark.parametrize("chars", ["\\]^-[", "abcdefk", "\n\t\r", "&~&~", "é😀", '"', "-", "^", "\x00\x7f"])
def test_char_class_escaping(chars: str) -> None:
    positive = single_rule_grammar(lambda b: char_class(chars))
    negative = single_rule_grammar(lambda b: char_class(chars, negate=True))
    for c in set(chars):
        check(positive, c, True)
        check(negative, c, False)
    for c in set("xZ9 \\]é😂") - set(chars):
        check(positive, c, False)
        check(negative, c, True)


def test_char_class_ranges_and_empty() -> None:
    assert char_class("abcdefk") == "[a-fk]"
    assert char_class("+-") == "[+-]"
    assert char_class("<>", negate=True) == "[^<>]"
    # non-ASCII exclusions become positive ranges (llama.cpp misjudges split UTF-8 against [^é])
    assert char_class("é", negate=True) == "[\\x00-èê-\ud7ff\ue000-\U0010ffff]"
    with pytest.raises(ValueError):
        char_class("")
    anything = single_rule_grammar(lambda b: char_class("", negate=True))
    check(anything, "\n", True)
    check(anything, "é", True)
    check(anything, "ab", False)


# --- until / string_until ---------------------------------------------------------

DELIMITERS = ["</think>", "\n</parameter>", "\n</parameter>\n", "aa", "aab", "abab", "ababc", "]]>",
              "<｜tool▁call▁end｜>", '"', "\\", "-^]", "\n\n", "<tool_call>"]


def until_grammar(delimiter: str, through: bool) -> str:
    return single_rule_grammar(lambda b: b.string_until(delimiter) if through else b.until(delimiter))


def fragments(delimiter: str) -> st.SearchStrategy[str]:
    """Text made of pieces of the delimiter (prefixes, suffixes, its characters) and noise."""
    pieces = sorted({delimiter[:i] for i in range(1, len(delimiter) + 1)} | {delimiter[i:] for i in range(len(delimiter))}
                    | set(delimiter) | {"x", "é", "\n", " "})
    return st.lists(st.sampled_from(pieces), max_size=8).map("".join)


@pytest.mark.parametrize("delimiter", DELIMITERS)
@HYP
@given(data=st.data())
def test_until_excludes_delimiter(delimiter: str, data: st.DataObject) -> None:
    text = data.draw(fragments(delimiter))
    check(until_grammar(delimiter, through=False), text, delimiter not in text)


@pytest.mark.parametrize("delimiter", DELIMITERS)
@HYP
@given(data=st.data())
def test_string_until_ends_at_first_delimiter(delimiter: str, data: st.DataObject) -> None:
    text = data.draw(fragments(delimiter))
    expected = text.endswith(delimiter) and text.find(delimiter) == len(text) - len(delimiter)
    check(until_grammar(delimiter, through=True), text, expected)


def test_string_until_overlapping_delimiter() -> None:
    d = "\n</parameter>\n"
    gbnf = until_grammar(d, through=True)
    check(gbnf, "code\n</parameter>\n", True)
    check(gbnf, "a\n\n</parameter\n</parameter>\n", True)
    check(gbnf, "a\n</parameter>\n</parameter>\n", False)  # the first occurrence is earlier
    check(gbnf, "a\n</parameter>", False)
    naive = single_rule_grammar(lambda b: f"{b.until(d)} {literal(d)}")
    check(naive, "a\n</parameter>\n</parameter>\n", True, lexer_conflict=True)  # why string_until exists


def test_until_then_delimiter_and_reuse() -> None:
    b = GbnfBuilder()
    first = b.until("</think>")
    assert b.until("</think>") == first and b.string_until("</think>") != first
    b.rule("root", f'"<think>" {first} "</think>" "answer"')
    gbnf = check_portable(b.render())
    check(gbnf, "<think>a < b </thi </think>answer", True, lexer_conflict=True)
    check(gbnf, "<think>a < b </think>answer", True)
    check(gbnf, "<think>a</think>b</think>answer", False)
    with pytest.raises(ValueError):
        b.until("")


# --- tagged values ----------------------------------------------------------------


def tagged_grammar(schema: Any, raw_strings: bool = True, closing: str = CLOSE) -> str:
    b = GbnfBuilder()
    value = schema_value_rule(b, schema, "arg", raw_strings, closing=closing)
    b.rule("root", f'"<parameter=x>\\n" {value}')
    return check_portable(b.render())


# (schema, value, ok[, llguidance's greedy lexer differs])
TAGGED_CASES: list[tuple[Any, ...]] = [
    ({"type": "string"}, "hello world", True),
    ({"type": "string"}, "multi\nline <b>\n</param", True),
    ({"type": "string"}, "", True),
    ({"type": "string"}, "a" + CLOSE + "b", False),
    ({"type": "integer"}, "42", True),
    ({"type": "integer"}, "4.2", False),
    ({"type": "integer"}, '"42"', False),
    ({"type": "integer"}, "42 ", False),
    ({"type": "number"}, "1e-05", True),
    ({"type": "boolean"}, "true", True),
    ({"type": "boolean"}, "False", True),
    ({"type": "boolean"}, "yes", False),
    ({"type": "null"}, "None", True),
    ({"type": "integer", "nullable": True}, "None", True),
    ({"type": "integer", "nullable": True}, "null", True),
    ({"type": ["integer", "boolean"]}, "True", True),
    ({"type": ["integer", "boolean"]}, "x", False),
    ({"type": ["string", "null"]}, "anything", True),
    ({"type": "string", "enum": ["celsius", "fahrenheit"]}, "celsius", True),
    ({"type": "string", "enum": ["celsius", "fahrenheit"]}, '"celsius"', False),
    ({"type": "string", "enum": ["celsius", "fahrenheit"]}, "kelvin", False),
    ({"enum": [1, True, None]}, "True", True),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, '{"a": 1}', True),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, json.dumps({"a": 1}, indent=2), True),
    ({"type": "object", "properties": {"a": {"type": "integer"}}}, "{'a': 1}", False),
    ({"type": "array", "items": {"type": "string"}}, '["a", "b"]', True),
    ({"$ref": "#/$defs/n", "$defs": {"n": {"type": "integer"}}}, "7", True),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "7 apples", True),
    ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "77 apples", True, True),
    ({}, "anything {at} all", True),
]


@pytest.mark.parametrize("case", TAGGED_CASES, ids=[f"{i}-{c[1][:12]!r}" for i, c in enumerate(TAGGED_CASES)])
def test_tagged_values(case: tuple[Any, ...]) -> None:
    schema, value, ok, *conflict = case
    check(tagged_grammar(schema), "<parameter=x>\n" + value + CLOSE, ok, lexer_conflict=bool(conflict))


def test_tagged_json_strings() -> None:
    gbnf = tagged_grammar({"type": "string"}, raw_strings=False)
    check(gbnf, '<parameter=x>\n"hi \\"there\\""' + CLOSE, True)
    check(gbnf, "<parameter=x>\nhi" + CLOSE, False)


def test_tagged_raw_string_needs_closing() -> None:
    with pytest.raises(ValueError, match="closing"):
        schema_value_rule(GbnfBuilder(), {"type": "string"}, "arg")
    gbnf = tagged_grammar({"type": "integer"}, closing="")
    check(gbnf, "<parameter=x>\n12", True)
    check(gbnf, "<parameter=x>\n12\n", False)


# --- grammar blocks -----------------------------------------------------------------

BLOCK_SAMPLES = {
    "json": [(' {"a": [1, -2.5e+3, "\\u00e9", null]}\n', True), ("[]", True), ("[1,]", False), ("{'a': 1}", False)],
    "string": [('"a \\"b\\" \\n"', True), ('""', True), ("a", False), ('"a', False)],
    "number": [("-1.5e+10", True), ("0", True), ("01", False), ("1.", False)],
    "space": [("", True), (" ", True), ("\n\n\t  ", True), ("x", False), ("\n\n\n", False)],
}


@pytest.mark.parametrize("kind", BLOCKS)
def test_grammar_block_files(kind: str) -> None:
    text = (ROOT / "grammars" / f"{kind}.gbnf").read_text(encoding="utf-8")
    assert text == grammar_block(kind)
    check_portable(text)
    for sample, ok in BLOCK_SAMPLES[kind]:
        check(text, sample, ok)


def _load_tool() -> Any:
    spec = importlib.util.spec_from_file_location("gen_grammar_blocks", ROOT / "tools" / "gen_grammar_blocks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_check_reports_drift(tmp_path: Path) -> None:
    tool = _load_tool()
    assert tool.drift(ROOT / "grammars") == []
    assert tool.main(["--check", "--out", str(tmp_path)]) == 1
    assert tool.main(["--out", str(tmp_path)]) == 0
    assert tool.main(["--check", "--out", str(tmp_path)]) == 0
    (tmp_path / "space.gbnf").write_text("root ::= \" \"\n", encoding="utf-8")
    assert tool.main(["--check", "--out", str(tmp_path)]) == 1


def test_json_rule_kinds_share_rules() -> None:
    b = GbnfBuilder()
    assert json_rule(b, "object") == "json-object"
    assert json_rule(b, "value") == "json-value"
    assert json_rule(b, "array") == "json-array"
    assert not [name for name in b.rules if re.search(r"-\d+$", name)]  # nothing was built twice
