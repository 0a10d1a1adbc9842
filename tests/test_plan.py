"""The request plan: one value that engine, PEG and GBNF read (issue 12)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from autoparser import ChatTemplate
from autoparser.errors import ParseError

FIXTURES = Path(__file__).resolve().parent.parent / "templates"
USER = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}},
    {"type": "function", "function": {"name": "search_docs", "parameters": {
        "type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}}},
]


def fixture(name: str) -> ChatTemplate:
    return ChatTemplate.from_file(FIXTURES / f"{name}.jinja")


def _streamed(req, text: str) -> dict:
    s = req.stream()
    for ch in text:
        s.feed(ch)
    s.finish()
    return s.message.to_dict()


def test_named_tool_choice_not_in_tools_raises_with_its_name() -> None:
    with pytest.raises(ValueError, match="'book_flight'"):
        fixture("hermes_json").apply(USER, tools=TOOLS,
                                     tool_choice={"type": "function", "function": {"name": "book_flight"}})


def test_named_tool_choice_narrows_the_grammars_not_the_tolerant_engine() -> None:
    req = fixture("hermes_json").apply(USER, tools=TOOLS,
                                       tool_choice={"type": "function", "function": {"name": "search_docs"}})
    tp = req.plan.tools
    assert tp is not None
    assert (tp.names, tp.allowed, tp.forced) == (("get_weather", "search_docs"), ("search_docs",), True)
    other = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
    assert req.parse(other).tool_calls[0].name == "get_weather"     # the engine keeps what was written
    with pytest.raises(ParseError):
        req.parse_strict(other)                                     # the strict grammar does not
    assert req.gbnf is not None and '"\\"get_weather\\""' not in req.gbnf and "search_docs" in req.gbnf


def test_plan_is_frozen_and_request_reads_it() -> None:
    req = fixture("hermes_json").apply(USER, tools=TOOLS, parallel_tool_calls=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.plan.prompt = "x"  # type: ignore[misc]
    assert req.plan.prompt == req.prompt
    assert req.plan.tools is not None and req.plan.tools.parallel is False
    assert req.tools_active and req.parallel_tool_calls is False


def test_tool_choice_none_plans_no_calls() -> None:
    req = fixture("hermes_json").apply(USER, tools=TOOLS, tool_choice="none")
    assert req.plan.tools is None and req.gbnf is None
    text = '<tool_call>\n{"name": "get_weather", "arguments": {}}\n</tool_call>'
    assert req.parse(text).tool_calls == []


@pytest.mark.parametrize("text, content", [
    ("<think>\nhm\n</think>\nHello", "hm\n\nHello"),       # was "hmHello": the dropped close glued the text
    ("<think>\n\n</think>\n\nParis.", "Paris."),
])
def test_stray_block_with_thinking_off_keeps_its_text_apart(text: str, content: str) -> None:
    req = fixture("qwen3_think_json").apply(USER, chat_template_kwargs={"enable_thinking": False})
    assert req.plan.reasoning.off and not req.plan.reasoning.extract
    whole = req.parse(text).to_dict()
    assert (whole["content"], whole["reasoning_content"]) == (content, None)
    assert _streamed(req, text) == whole
    assert req.parse_strict(text).to_dict() == whole
