"""Request options are client data (issue 23.2): unknown ones are refused at ``apply()`` with a
``ValueError`` that says what is allowed, and the output's breaches of ``tool_choice`` and
``parallel_tool_calls`` are flagged on the message (``ToolCall.invalid``, ``warnings``), whole and
in the stream's final state."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate, Message

FIXTURES = Path(__file__).resolve().parents[1] / "templates"
USER = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": name, "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}} for name in ("get_weather", "get_time")]


def _tmpl() -> ChatTemplate:
    return ChatTemplate.from_file(FIXTURES / "hermes_json.jinja")


def _calls(*names: str) -> str:
    return "".join(f'<tool_call>\n{{"name": "{n}", "arguments": {{"city": "Paris"}}}}\n</tool_call>\n'
                   for n in names)


def _both(req: Any, text: str) -> Message:
    whole = req.parse(text)
    stream = req.stream()
    for i in range(0, len(text), 3):
        stream.feed(text[i:i + 3])
    stream.finish()
    final = stream.message
    assert final.to_dict() == whole.to_dict()
    assert final.warnings == whole.warnings
    assert [c.invalid for c in final.tool_calls] == [c.invalid for c in whole.tool_calls]
    return whole


@pytest.mark.parametrize("option, value, allowed", [
    ("tool_choice", "bogus", "'auto', 'none', 'required'"),
    ("tool_choice", 3, "'auto', 'none', 'required'"),
    ("tool_choice", {"type": "allowed_tools", "tools": []}, "'function'"),
    ("reasoning_format", "bogus", "'auto', 'none', 'deepseek', 'deepseek-legacy'"),
    ("response_format", {"type": "xml"}, "'text', 'json_object', 'json_schema'"),
    ("response_format", "json", "'text', 'json_object', 'json_schema'"),
    ("parallel_tool_calls", "no", "true or false"),
])
def test_unknown_options_are_refused(option: str, value: Any, allowed: str) -> None:
    with pytest.raises(ValueError) as refused:
        _tmpl().apply(USER, tools=TOOLS, **{option: value})
    assert option in str(refused.value) and allowed in str(refused.value)
    with pytest.raises(ValueError):     # a prompt rendered elsewhere: the same checks
        _tmpl().parser_for("<|im_start|>assistant\n", tools=TOOLS, **{option: value})


@pytest.mark.parametrize("choice", ["auto", "none", "required", None,
                                    {"type": "function", "function": {"name": "get_time"}}])
def test_known_options_are_accepted(choice: Any) -> None:
    req = _tmpl().apply(USER, tools=TOOLS, tool_choice=choice, response_format={"type": "json_object"})
    assert req.prompt


def test_a_named_tool_choice_answered_with_another_tool() -> None:
    req = _tmpl().apply(USER, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_time"}})
    msg = _both(req, _calls("get_weather"))
    assert msg.tool_calls[0].invalid == "tool_choice asks for function 'get_time', not 'get_weather'"
    assert any("tool_choice asks for function 'get_time'" in w for w in msg.warnings)
    assert json.loads(msg.tool_calls[0].arguments) == {"city": "Paris"}      # kept as written
    assert _both(req, _calls("get_time")).tool_calls[0].invalid is None


def test_more_calls_than_parallel_tool_calls_allows() -> None:
    req = _tmpl().apply(USER, tools=TOOLS, parallel_tool_calls=False)
    msg = _both(req, _calls("get_weather", "get_time"))
    assert [c.invalid for c in msg.tool_calls] == [None, "parallel_tool_calls is false: call 1 follows the first"]
    assert any("parallel_tool_calls is false" in w for w in msg.warnings)
    assert _both(_tmpl().apply(USER, tools=TOOLS), _calls("get_weather", "get_time")).warnings == []


@pytest.mark.parametrize("choice, asked", [
    ("required", "a call (tool_choice 'required')"),
    ({"type": "function", "function": {"name": "get_time"}}, "function 'get_time'"),
])
def test_no_call_where_one_is_required(choice: Any, asked: str) -> None:
    req = _tmpl().apply(USER, tools=TOOLS, tool_choice=choice)
    msg = _both(req, "It is sunny in Paris.")
    assert msg.warnings == [f"the output holds no tool call, but the request asks for {asked}"]
    assert not msg.malformed and msg.finish_reason == "stop"
    assert _both(req, _calls("get_time")).warnings == []
    assert _both(_tmpl().apply(USER, tools=TOOLS), "It is sunny in Paris.").warnings == []
