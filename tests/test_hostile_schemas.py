"""Hostile tool schemas: tools come from the client, so a schema is data, never a fetch or a hang.

Every schema below tries to reach the network or a file through ``$ref``, to loop through a
reference, to exhaust the regex engine (``pattern``, ``patternProperties``), to nest past Python's
recursion limit, to break a consumer with a keyword of the wrong type, or to be too large. For each:

* nothing is fetched (sockets and ``urlopen`` are replaced by functions that record and refuse);
* ``apply()`` either refuses it with a :class:`~autoparser.errors.SchemaError` that names the tool,
  the keyword and where it sits, or accepts it;
* an accepted schema never makes ``parse``, ``stream``, the grammars or the structural tag raise
  anything but the project's own errors, and a value its patterns cannot check in time marks
  the call (``ToolCall.invalid``) instead of holding the parse.

No test times anything (``benchmarks/hostile_schemas.py`` prints how long each kind takes); a parse
that would run for ever is stopped by ``HANG_LIMIT`` and fails.
"""

from __future__ import annotations

import contextlib
import json
import signal
import socket
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from autoparser import AutoparserError, ChatTemplate, SchemaError
from autoparser.values.patterns import MAX_LITERAL_RUN
from autoparser.values.schemas import MAX_SCHEMA_DEPTH, MAX_SCHEMA_NODES

FIXTURES = Path(__file__).resolve().parents[1] / "templates"
USER = [{"role": "user", "content": "Weather?"}]
HANG_LIMIT = 20     # seconds; every case here takes well under one
# a JSON-argument format, a per-key tagged one, a Python-literal one: schemas type their values differently
TEMPLATES = ("hermes_json", "xml_params", "pythonic_bare")


def _deep(n: int) -> dict[str, Any]:
    s: dict[str, Any] = {"type": "string"}
    for _ in range(n):
        s = {"type": "object", "properties": {"x": s}}
    return s


def _lists(n: int) -> list[Any]:
    out: list[Any] = []
    for _ in range(n):
        out = [out]
    return out


def _obj(prop: dict[str, Any], **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": {"x": prop}, **more}


# kind -> (parameters, arguments of the call parsed against it, the keyword a refusal names or None)
HOSTILE: dict[str, tuple[Any, dict[str, Any], str | None]] = {
    "ref_http_metadata": (_obj({"$ref": "http://169.254.169.254/latest/meta-data/"}), {"x": "a"}, "$ref"),
    "ref_https": (_obj({"$ref": "https://example.com/schema.json#/$defs/a"}), {"x": "a"}, "$ref"),
    "ref_file": (_obj({"$ref": "file:///etc/passwd"}), {"x": "a"}, "$ref"),
    "ref_relative": (_obj({"$ref": "other.json#/$defs/a"}), {"x": "a"}, "$ref"),
    "ref_against_remote_id": ({"$id": "http://169.254.169.254/", **_obj({"$ref": "latest/meta-data"})},
                              {"x": "a"}, "$ref"),
    "ref_anchor": ({**_obj({"$ref": "#meta"}), "$defs": {"m": {"$anchor": "meta"}}}, {"x": "a"}, "$ref"),
    "dynamic_ref": (_obj({"$dynamicRef": "#meta"}), {"x": "a"}, "$dynamicRef"),
    "ref_recursive_self": ({**_obj({"$ref": "#/$defs/a"}), "$defs": {"a": {"$ref": "#/$defs/a"}}}, {"x": "a"},
                           "$ref"),
    "ref_root_self": ({"$ref": "#"}, {"x": "a"}, "$ref"),
    "ref_cycle_through_allof": ({**_obj({"$ref": "#/$defs/a"}), "$defs": {
        "a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}}},
        {"x": "a"}, "$ref"),
    "ref_missing": (_obj({"$ref": "#/$defs/nowhere"}), {"x": "a"}, "$ref"),
    "ref_to_a_value": ({**_obj({"$ref": "#/$defs/a/enum/0"}), "$defs": {"a": {"enum": ["v"]}}}, {"x": "a"}, "$ref"),
    "ref_not_a_string": (_obj({"$ref": 7}), {"x": "a"}, "$ref"),
    "pattern_catastrophic": (_obj({"type": "string", "pattern": "^(a+)+$"}), {"x": "a" * 41 + "!"}, None),
    "pattern_catastrophic_long": (_obj({"type": "string", "pattern": "(x+x+)+y"}), {"x": "x" * 5000}, None),
    "pattern_properties_catastrophic": ({"type": "object", "patternProperties": {"(x+x+)+y": {"type": "string"}}},
                                        {"x" * 3000: "a"}, None),
    "pattern_long_literal": (_obj({"type": "string", "pattern": "x" * (MAX_LITERAL_RUN + 1)}), {"x": "x" * 400},
                             "pattern"),
    "pattern_huge_repeat": (_obj({"type": "string", "pattern": "(a{1000}){1000}"}), {"x": "a"}, "pattern"),
    "pattern_too_long": (_obj({"type": "string", "pattern": "[ab]" * 2000}), {"x": "a"}, "pattern"),
    "pattern_invalid": (_obj({"type": "string", "pattern": "(unclosed"}), {"x": "a"}, "pattern"),
    "pattern_properties_invalid": ({"type": "object", "patternProperties": {"[z-a]": {}}}, {"x": "a"},
                                   "patternProperties"),
    "nested_400": (_deep(400), {"x": "a"}, "depth"),
    "nested_5000": (_deep(5000), {"x": "a"}, "depth"),
    "nested_lists_5000": (_obj({"enum": _lists(5000)}), {"x": "a"}, "depth"),
    "long_strings": (_obj({"type": "string", "enum": ["x" * 1_000_000] * 3}), {"x": "x"}, "size"),
    "enum_100k": (_obj({"type": "string", "enum": [f"v{i}" for i in range(100_000)]}), {"x": "v99999"}, "size"),
    "wrong_type_number": ({"type": 5}, {"x": "a"}, "type"),
    "wrong_type_name": (_obj({"type": "strin"}), {"x": "a"}, "type"),
    "wrong_properties_list": ({"type": "object", "properties": [1, 2]}, {"x": "a"}, "properties"),
    "wrong_required_string": ({"type": "object", "required": "x"}, {"x": "a"}, "required"),
    "wrong_min_length_string": (_obj({"type": "string", "minLength": "3"}), {"x": "a"}, "minLength"),
    "wrong_enum_string": (_obj({"enum": "abc"}), {"x": "a"}, "enum"),
    "wrong_items_number": (_obj({"type": "array", "items": 5}), {"x": ["a"]}, "items"),
    "wrong_anyof_empty": (_obj({"anyOf": []}), {"x": "a"}, "anyOf"),
    "wrong_subschema_string": (_obj("string"), {"x": "a"}, "properties"),
    "parameters_string": ("not a schema", {"x": "a"}, "parameters"),
    "parameters_list": ([{"type": "string"}], {"x": "a"}, "parameters"),
}
# accepted schemas that are odd but valid: they must work all the way through
ODD: dict[str, tuple[Any, dict[str, Any]]] = {
    "recursive_tree": ({"$defs": {"node": {"type": "object", "properties": {
        "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}}, **_obj({"$ref": "#/$defs/node"})},
        {"x": {"kids": [{"kids": [{"kids": []}]}]}}),
    "empty_enum": (_obj({"enum": []}), {"x": "a"}),
    "boolean_schemas": ({"type": "object", "properties": {"x": True, "y": False}}, {"x": "a"}),
    "odd_keys": ({"type": "object", "properties": {'q"uote': {"type": "string"}, "new\nline": {"type": "integer"},
                                                   "": {"type": "boolean"}, "ünï😀": {"type": "null"}}},
                 {'q"uote': "a", "new\nline": 1}),
    "huge_bounds": (_obj({"type": "string", "minLength": 10**9, "maxLength": 10**12}), {"x": "a"}),
    "huge_numbers": (_obj({"type": "number", "minimum": -1e308, "maximum": 1e308, "multipleOf": 1e-300}),
                     {"x": 3.5}),
    "type_list_with_null": (_obj({"type": ["string", "null"], "nullable": True}), {"x": None}),
    "enum_at_the_limit": (_obj({"enum": list(range(MAX_SCHEMA_NODES // 2))}), {"x": 7}),
    "nested_at_the_limit": (_deep(MAX_SCHEMA_DEPTH // 2 - 1), {"x": "a"}),
    "refs_fanning_out": ({"$defs": {f"L{i}": {"type": "array", "prefixItems": [{"$ref": f"#/$defs/L{i + 1}"}] * 2}
                                    for i in range(40)} | {"L40": {"type": "integer"}},
                          **_obj({"$ref": "#/$defs/L0"})}, {"x": [[1]]}),
    "unknown_keywords": (_obj({"type": "string", "x-vendor": {"$ref": "http://example.com"}, "format": "uri"}),
                         {"x": "a"}),
}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Every way out is replaced by one that records the attempt and refuses it."""
    attempts: list[Any] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args[:2])
        raise OSError("the tests refuse every connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)
    yield attempts
    assert attempts == [], f"a schema made autoparser reach out: {attempts}"


class Hang(BaseException):
    """Not an ``Exception``: autoparser's handlers must not catch it."""


@pytest.fixture(autouse=True)
def hang_limit() -> Iterator[None]:
    def stop(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {HANG_LIMIT} s")
    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(HANG_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _tools(params: Any) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": "probe", "parameters": params}}]


def _template(name: str) -> ChatTemplate:
    return ChatTemplate.from_file(FIXTURES / f"{name}.jinja")


def _call_text(tmpl: ChatTemplate, req: Any, args: dict[str, Any]) -> str:
    """The call as the template renders it, cut out of the turn (falls back to a Hermes call)."""
    turn = tmpl.render([*USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "probe", "arguments": args}}]}],
        tools=req.tools)
    return turn[len(req.prompt):] if turn.startswith(req.prompt) else \
        f'<tool_call>\n{{"name": "probe", "arguments": {json.dumps(args)}}}\n</tool_call>'


def _exercise(tmpl: ChatTemplate, req: Any, args: dict[str, Any]) -> Any:
    """Everything a server does with a request: parse, stream, grammars, structural tag."""
    try:
        text = _call_text(tmpl, req, args)
    except AutoparserError:
        text = f'<tool_call>\n{{"name": "probe", "arguments": {json.dumps(args)}}}\n</tool_call>'
    whole = req.parse(text)
    stream = req.stream()
    for i in range(0, len(text), 5):
        stream.feed(text[i:i + 5])
    stream.finish()
    assert stream.message.to_dict() == whole.to_dict()
    assert [c.invalid for c in stream.message.tool_calls] == [c.invalid for c in whole.tool_calls]
    req.parse(text[: len(text) // 2], partial=True)
    for build in (lambda: req.gbnf, lambda: req.peg, lambda: req.parse_strict(text), req.structural_tag):
        with contextlib.suppress(AutoparserError):
            build()
    return whole


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_schema_is_refused_or_harmless(name: str) -> None:
    params, args, keyword = HOSTILE[name]
    tmpl = _template("hermes_json")
    if keyword is not None:
        with pytest.raises(SchemaError) as refused:
            tmpl.apply(USER, tools=_tools(params))
        err = refused.value
        assert err.tool == "probe" and "tool 'probe' parameters" in str(err)
        assert err.keyword == keyword, (err.keyword, err.path, str(err))
        return
    req = tmpl.apply(USER, tools=_tools(params))
    msg = _exercise(tmpl, req, args)
    call = msg.tool_calls[0]
    assert json.loads(call.arguments) == args
    assert call.invalid is not None and ("in time" in call.invalid or "does not match" in call.invalid)
    assert any(call.invalid in w for w in msg.warnings)


@pytest.mark.parametrize("template", TEMPLATES)
@pytest.mark.parametrize("name", sorted(ODD))
def test_odd_but_valid_schema_works(name: str, template: str) -> None:
    params, args = ODD[name]
    tmpl = _template(template)
    for choice in ("auto", "required"):
        req = tmpl.apply(USER, tools=_tools(params), tool_choice=choice)
        msg = _exercise(tmpl, req, args)
        assert [c.name for c in msg.tool_calls] == ["probe"]


def test_response_format_schema_is_checked_too() -> None:
    tmpl = _template("hermes_json")
    rf = {"type": "json_schema", "json_schema": {"name": "a", "schema": _obj({"$ref": "file:///etc/passwd"})}}
    with pytest.raises(SchemaError) as refused:
        tmpl.apply(USER, response_format=rf)
    assert refused.value.tool is None and "response_format schema" in str(refused.value)


def test_a_recursive_schema_still_checks_values() -> None:
    params, _args = ODD["recursive_tree"]
    tmpl = _template("hermes_json")
    req = tmpl.apply(USER, tools=_tools(params))
    bad = {"x": {"kids": [{"kids": [{"kids": "no"}]}]}}
    msg = req.parse(f'<tool_call>\n{{"name": "probe", "arguments": {json.dumps(bad)}}}\n</tool_call>')
    assert msg.tool_calls[0].invalid == 'arguments.x.kids[0].kids[0].kids: "no" is not of type array'


def test_arguments_nested_deeper_than_python_recursion() -> None:
    params, _args = ODD["recursive_tree"]
    req = _template("hermes_json").apply(USER, tools=_tools(params))
    deep = '{"kids": [' * 400 + "]}" * 400
    msg = req.parse(f'<tool_call>\n{{"name": "probe", "arguments": {{"x": {deep}}}}}\n</tool_call>')
    assert msg.tool_calls and msg.tool_calls[0].invalid is not None


def test_many_calls_share_one_time_budget() -> None:
    """Forty calls whose pattern check would each run for ever: one budget for the message."""
    params, args, _ = HOSTILE["pattern_catastrophic_long"]
    req = _template("hermes_json").apply(USER, tools=_tools(params))
    call = f'<tool_call>\n{{"name": "probe", "arguments": {json.dumps(args)}}}\n</tool_call>\n'
    msg = req.parse(call * 40)
    assert len(msg.tool_calls) == 40 and all(c.invalid for c in msg.tool_calls)
