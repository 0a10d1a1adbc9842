"""The call guard (issue 17): a parsed call that does not fit the request's tools is marked.

``ToolCall.invalid`` holds the reason and the message gets a warning; the call keeps its text.
Whole-text parse and stream agree.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.runtime.guard import compile_schema

FIXTURES = Path(__file__).resolve().parent.parent / "templates"
USER = [{"role": "user", "content": "Weather in Paris?"}]
WEATHER = {"type": "object", "properties": {
    "location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
    "days": {"type": "integer", "minimum": 1}, "detail": {"type": "object", "properties": {"hourly": {"type": "boolean"}}},
    "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["location"]}
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": WEATHER}}]


def _hermes(tools: list[dict[str, Any]] = TOOLS) -> Any:
    return ChatTemplate.from_file(FIXTURES / "hermes_json.jinja").apply(USER, tools=tools)


def _call(name: str, args: dict[str, Any] | str) -> str:
    body = args if isinstance(args, str) else json.dumps(args)
    return f'<tool_call>\n{{"name": "{name}", "arguments": {body}}}\n</tool_call>'


def _both(req: Any, text: str) -> Any:
    whole = req.parse(text)
    stream = req.stream()
    for ch in text:
        stream.feed(ch)
    stream.finish()
    assert [c.invalid for c in stream.message.tool_calls] == [c.invalid for c in whole.tool_calls]
    assert stream.message.warnings == whole.warnings
    return whole


@pytest.mark.parametrize("args, reason", [
    ({"location": "Paris"}, None),
    ({"location": "Paris", "unit": "celsius", "days": 3, "tags": ["a"], "detail": {"hourly": True}}, None),
    ({"unit": "celsius"}, "required property 'location' is missing"),
    ({"location": 7}, "arguments.location: 7 is not of type string"),
    ({"location": "Paris", "unit": "kelvin"}, 'arguments.unit: "kelvin" is not one of'),
    ({"location": "Paris", "days": 0}, "arguments.days: 0 is less than 1"),
    ({"location": "Paris", "days": 2.5}, "is not of type integer"),
    ({"location": "Paris", "days": True}, "is not of type integer"),
    ({"location": "Paris", "wind": 1}, "property 'wind' is not in the tool's schema"),
    ({"location": "Paris", "detail": {"hourly": "yes"}}, "arguments.detail.hourly"),
    ({"location": "Paris", "tags": ["a", 1]}, "arguments.tags[1]"),
])
def test_each_schema_rule(args: dict[str, Any], reason: str | None) -> None:
    msg = _both(_hermes(), _call("get_weather", args))
    call = msg.tool_calls[0]
    assert json.loads(call.arguments) == args            # the call keeps its text
    if reason is None:
        assert call.invalid is None and not msg.warnings
    else:
        assert call.invalid is not None and reason in call.invalid
        assert any(reason in w for w in msg.warnings)


def test_a_name_not_in_tools() -> None:
    msg = _both(_hermes(), _call("delete_files", {"path": "/"}))
    assert msg.tool_calls[0].name == "delete_files"
    assert msg.tool_calls[0].invalid == "function 'delete_files' is not one of the request's tools"


def test_arguments_that_are_not_an_object() -> None:
    msg = _both(_hermes(), _call("get_weather", "[1, 2]"))
    assert msg.tool_calls[0].invalid == "arguments are not a JSON object"


def test_valid_calls_keep_the_openai_shape() -> None:
    msg = _both(_hermes(), _call("get_weather", {"location": "Paris"}))
    assert set(msg.to_dict()["tool_calls"][0]) == {"id", "type", "function"}


def test_keywords_beyond_the_closures_go_to_jsonschema() -> None:
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"location": {"type": "string", "pattern": "^[A-Z]"}}}}}]
    req = _hermes(tools)
    assert _both(req, _call("get_weather", {"location": "Paris"})).tool_calls[0].invalid is None
    bad = _both(req, _call("get_weather", {"location": "paris"})).tool_calls[0].invalid
    assert bad is not None and "arguments.location" in bad and "does not match" in bad


def test_objects_without_properties_take_any_keys() -> None:
    check = compile_schema({"type": "object"})
    assert check({"anything": [1, {"x": None}]}, "arguments") is None
    assert compile_schema({"type": "object", "additionalProperties": {"type": "integer"}})({"a": "x"}, "a") \
        == 'a.a: "x" is not of type integer'
