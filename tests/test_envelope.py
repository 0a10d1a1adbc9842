"""Turn envelopes: the whole assistant turn is one JSON object (issue 13, point 4).

``templates/json_turn.jinja`` writes ``{"thought": R, "response": C, "tool_calls": [...]}``. The
keys are found by diffing paired renderings: the same template with every key renamed is read
with the new names. The reply and reasoning are JSON-unescaped as they stream (an escape cut by
a chunk boundary is held back), a stream gives the parsed message under every chunking, and
output off the format keeps its text (content, partial calls) with a flag.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate, Message, ParseError
from autoparser.runtime.envelope import decode_string_part
from autoparser.runtime.message import merge_deltas

SOURCE = (turns.FIXTURES / "json_turn.jinja").read_text(encoding="utf-8")
RENAMED = {'"thought"': '"musing"', '"response"': '"said"', '"tool_calls"': '"todo"', '"name"': '"fn"',
           '"arguments"': '"with"'}
TOOLS = turns.TOOLS
USER = turns.HISTORIES[1]


def renamed_source() -> str:
    out = SOURCE
    for old, new in RENAMED.items():
        out = out.replace(f"'{old}", f"'{new}").replace(f"', {old}", f"', {new}").replace(f"{{{old}", f"{{{new}")
    return out


def request(source: str = SOURCE, **kw: Any) -> Any:
    return ChatTemplate.from_string(source, name="json_turn").apply(USER, tools=TOOLS, **kw)


def rendered_turn(source: str, msg: dict[str, Any]) -> str:
    t = ChatTemplate.from_string(source, name="json_turn")
    prompt = t.render(USER, tools=TOOLS, add_generation_prompt=True)
    full = t.render([*USER, msg], tools=TOOLS)
    assert full.startswith(prompt)
    return full[len(prompt):]


def streamed(req: Any, text: str, size: int) -> tuple[dict[str, Any], Message]:
    s = req.stream()
    deltas: list[dict[str, Any]] = []
    for i in range(0, len(text), size):
        deltas += s.feed(text[i:i + size])
    deltas += s.finish()
    return merge_deltas(deltas), s.message


def test_keys_found_by_diffing() -> None:
    a = ChatTemplate.from_string(SOURCE, name="json_turn").analysis
    assert a.envelope is not None
    assert (a.envelope.reasoning_key, a.envelope.content_key, a.envelope.calls_key) == \
        ("thought", "response", "tool_calls")
    assert a.envelope.call is not None and a.envelope.call.name_path == ("name",)
    assert a.tools.section_start == '"tool_calls": [' and a.tools.section_end == "]"


def test_renamed_keys_are_read_with_their_new_names() -> None:
    source = renamed_source()
    assert '"musing"' in source and '"todo"' in source and '"fn"' in source
    a = ChatTemplate.from_string(source, name="renamed").analysis
    assert a.envelope is not None
    assert (a.envelope.reasoning_key, a.envelope.content_key, a.envelope.calls_key) == ("musing", "said", "todo")
    assert a.envelope.call is not None
    assert (a.envelope.call.name_path, a.envelope.call.args_path) == (("fn",), ("with",))
    msg = {"role": "assistant", "reasoning_content": "Hm \"x\"", "content": "Ok.",
           "tool_calls": [turns.call(1, "get_weather", {"location": "Paris"})]}
    text = rendered_turn(source, msg).removesuffix("<|im_end|>\n")
    got = request(source).parse(text)
    assert (got.reasoning_content, got.content) == ('Hm "x"', "Ok.")
    assert [(c.name, json.loads(c.arguments)) for c in got.tool_calls] == [("get_weather", {"location": "Paris"})]


ESCAPED = '{"thought": "a \\"b\\"\\n\\u00e9 \\ud83d\\ude00 \\\\ end", "response": "tab\\there \\/ \\u4e1c", ' \
          '"tool_calls": [{"name": "get_weather", "arguments": {"location": "Paris, France"}}, ' \
          '{"name": "search_docs", "arguments": "{\\"query\\": \\"q\\"}"}]}<|im_end|>'


@pytest.mark.parametrize("size", [1, 2, 3, 5, 7, 1000])
def test_stream_equals_parse_and_decodes_escapes_across_chunks(size: int) -> None:
    req = request()
    whole = req.parse(ESCAPED)
    assert whole.reasoning_content == 'a "b"\né 😀 \\ end'
    assert whole.content == "tab\there / 东"
    assert [(c.name, json.loads(c.arguments)) for c in whole.tool_calls] == \
        [("get_weather", {"location": "Paris, France"}), ("search_docs", {"query": "q"})]
    assert not whole.malformed and not whole.truncated
    got, msg = streamed(req, ESCAPED, size)
    assert (got["content"], got["reasoning_content"]) == (whole.content, whole.reasoning_content)
    assert [c["function"] for c in got["tool_calls"]] == [c.to_dict()["function"] for c in whole.tool_calls]
    assert msg.to_dict()["tool_calls"] == [c.to_dict() for c in whole.tool_calls]


def test_reply_streams_as_the_string_grows() -> None:
    s = request().stream()
    assert s.feed('{"response": "Hello') == [{"content": "Hello"}]
    assert s.feed(" wor\\") == [{"content": " wor"}]          # the backslash waits for its escape
    assert s.feed('u00e9ld\\ud83d') == [{"content": "éld"}]    # a high surrogate waits for its pair
    assert s.feed('\\ude00!"}') == [{"content": "😀!"}]


@pytest.mark.parametrize("size", [1, 4])
def test_decoder_holds_back_a_cut_escape(size: int) -> None:
    body = 'x\\"\\\\\\u00e9\\ud83d\\ude00\\q"'
    whole = decode_string_part(body, 0, final=False)
    assert whole == ('x"\\é😀\\q', len(body), True)
    out, pos, buf = [], 0, ""
    for i in range(0, len(body), size):
        buf += body[i:i + size]
        text, pos, closed = decode_string_part(buf, pos, final=False)
        out.append(text)
    assert "".join(out) == whole[0] and closed


@pytest.mark.parametrize("text, content, calls, flag", [
    ("plain words, no object", "plain words, no object", [], "malformed"),
    ('{"response": "cut here', "cut here", [], "truncated"),
    ('{"response": "ok", "tool_calls": [{"name": "get_weather", "arguments": {"location": "Par',
     "ok", [("get_weather", {"location": "Par"})], "truncated"),
    ('{"response": "ok", "tool_calls": [{"nam', 'ok{"nam', [], "truncated"),
    ('{"response": "ok", "tool_calls": [oops]}', "okoops]}", [], "malformed"),
    ('{"response": "ok"} and more', "ok and more", [], "malformed"),
])
def test_off_format_keeps_text_with_a_flag(text: str, content: str, calls: list[Any], flag: str) -> None:
    req = request()
    msg = req.parse(text)
    assert " ".join((msg.content or "").split()) == " ".join(content.split())
    assert [(c.name, json.loads(c.arguments)) for c in msg.tool_calls] == calls
    assert getattr(msg, flag)
    for size in (1, 3):
        got, _ = streamed(req, text, size)
        assert got["content"] == msg.content
        assert [c["function"] for c in got.get("tool_calls") or []] == [c.to_dict()["function"] for c in msg.tool_calls]


def test_a_call_cut_off_is_marked_truncated() -> None:
    msg = request().parse('{"response": "", "tool_calls": [{"name": "search_docs", "arguments": {"query": "a", "to')
    assert msg.truncated and msg.finish_reason == "truncated"
    assert [c.truncated for c in msg.tool_calls] == [True]
    assert json.loads(msg.tool_calls[0].arguments) == {"query": "a"}


def test_strict_parser_reads_the_envelope_and_refuses_the_rest() -> None:
    req = request()
    assert req.parse_strict(ESCAPED).to_dict() == req.parse(ESCAPED).to_dict()
    assert "calls_member" in req.peg.text and "call_name" in req.peg.text
    for bad in ('{"response": "x", "extra": 1}', '{"response": "x"', "text",
                '{"tool_calls": [{"name": "get_time", "arguments": {}}]}'):
        with pytest.raises(ParseError):
            req.parse_strict(bad)
        assert isinstance(req.parse(bad), Message)


def test_required_tool_grammar_accepts_the_rendered_turn() -> None:
    from gbnf_check import accepts

    req = request(tool_choice="required")
    msg = {"role": "assistant", "content": "", "reasoning_content": "Think.",
           "tool_calls": [turns.call(1, "get_weather", {"location": "Paris"})]}
    text = rendered_turn(SOURCE, msg).removesuffix("<|im_end|>\n")
    assert req.gbnf and accepts(req.gbnf, text)


def test_the_fixture_is_in_the_repo() -> None:
    assert Path(turns.FIXTURES / "json_turn.expected.json").is_file()


def test_the_envelope_is_part_of_the_plans_output_key() -> None:
    """Plans share their IR by output key: the same analysis without its envelope (same markers,
    same call section) must get its own IR, and its engine reads markers, not the object."""
    import dataclasses

    from autoparser import ir
    from autoparser.plan import make_plan

    req = request()
    bare = dataclasses.replace(req.analysis, envelope=None)
    plan = make_plan(bare, req.plan.options, prompt=req.prompt)
    again = make_plan(req.analysis, req.plan.options, prompt=req.prompt)
    assert plan.output_key != req.plan.output_key and again.output_key == req.plan.output_key
    assert ir.message_grammar(again).envelope is not None
    assert ir.message_grammar(plan).envelope is None


def test_wire_shaped_calls_inside_the_envelope() -> None:
    """Calls as the OpenAI wire writes them (an id, ``"function": {"name", "arguments"}`` with the
    arguments as a JSON string): the layout is read off the rendering, ids kept."""
    old = ("{{- '{\"name\": ' ~ (fn.name | tojson) ~ ', \"arguments\": ' ~ (fn.arguments | tojson if "
           "fn.arguments is mapping else fn.arguments) ~ '}' -}}")
    new = ("{{- '{\"id\": ' ~ (call.id | tojson) ~ ', \"type\": \"function\", \"function\": {\"name\": ' ~ "
           "(fn.name | tojson) ~ ', \"arguments\": ' ~ ((fn.arguments | tojson if fn.arguments is mapping else "
           "fn.arguments) | tojson) ~ '}}' -}}")
    assert old in SOURCE
    source = SOURCE.replace(old, new)
    a = ChatTemplate.from_string(source, name="wire").analysis
    assert a.envelope is not None and a.envelope.call is not None
    layout = a.envelope.call
    assert (layout.name_path, layout.args_path, layout.id_path, layout.args_as_string) == \
        (("function", "name"), ("function", "arguments"), ("id",), True)
    msg = {"role": "assistant", "content": "", "tool_calls": [turns.call(7, "search_docs", {"query": "a \"q\""})]}
    text = rendered_turn(source, msg).removesuffix("<|im_end|>\n")
    got = request(source).parse(text)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in got.tool_calls] == \
        [("call00007", "search_docs", {"query": 'a "q"'})]
