"""Call formats written the way no fixture writes them (issue 21's hidden sets): each is read
whole, streamed as parsed, by the general mechanism that reads its family.

* the name after the arguments (``<call><arguments>A</arguments><name>N</name></call>``): the call
  is announced once its name is read, the arguments read before it held back;
* a call opener that shares its first character with the turn's end (``\\toolcall{`` and
  ``\\endturn``): the call turn's own text starts at the marker, not after the shared ``\\``;
* a fence's closing line that is also the start of the calls' fences (``~~~thinking`` …
  ``~~~`` for the reasoning, ``~~~NAME`` for a call): ``~~~get_weather`` opens a call, it does not
  end a reasoning block;
* a reasoning opener of several lines, each a marker or a line the template writes
  (``[thinking]⏎____⏎``): the opener is all of them, not its last line;
* a reasoning opener of plain words ended by a line break (``(thinking) R⏎A``);
* tagged values JSON-quoted (``<param name="k">"v"</param>``, ``tojson(indent=2)``): a string
  argument is the string the literal spells, not the literal.
"""

from __future__ import annotations

import json
from typing import Any

from autoparser import ChatTemplate

TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city"]}}}]


def _template(open_: str, close: str, turn: str) -> str:
    """A template with turns ``open_ ROLE`` … ``close`` whose assistant turn is the Jinja ``turn``."""
    return (
        "{%- if tools -%}{{- '" + open_ + "tools\\n' ~ (tools | tojson) ~ '" + close + "' -}}{%- endif -%}"
        "{%- for m in messages -%}"
        "{%- if m.role == 'assistant' -%}{{- '" + open_ + "assistant\\n' -}}"
        "{%- set content = m.content or '' -%}" + turn + "{{- '" + close + "' -}}"
        "{%- else -%}{{- '" + open_ + "' ~ m.role ~ '\\n' ~ (m.content or '') ~ '" + close + "' -}}{%- endif -%}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- '" + open_ + "assistant\\n' -}}{%- endif -%}")


CALLS = ("{%- for tc in m.tool_calls or [] -%}{%- set fn = tc.function -%}"
         "{%- if content or not loop.first -%}{{- '\\n' -}}{%- endif -%}")

ARGS_THEN_NAME = _template("[", "[/]\n", "{%- if m.reasoning_content -%}{{- '<think>' ~ m.reasoning_content ~ '</think>' -}}"
                           "{%- endif -%}{{- content -}}" + CALLS +
                           "{{- '<call><arguments>' ~ (fn.arguments | tojson) ~ '</arguments><name>' ~ fn.name"
                           " ~ '</name></call>' -}}{%- endfor -%}")
BACKSLASH_CALL = _template("\\\\", "\\\\endturn\n", "{{- content -}}" + CALLS +
                           "{{- '\\\\call{' ~ fn.name ~ '} ' ~ (fn.arguments | tojson) -}}{%- endfor -%}")
TILDE_FENCES = _template("<|", "<|end|>\n", "{%- if m.reasoning_content -%}{{- '~~~thinking\\n' ~ m.reasoning_content"
                         " ~ '\\n~~~\\n' -}}{%- endif -%}{{- content -}}" + CALLS +
                         "{{- '~~~' ~ fn.name ~ '\\n' ~ (fn.arguments | tojson) ~ '\\n~~~' -}}{%- endfor -%}")

TWO_LINE_OPENER = _template("== ", "\\n\\n", "{%- if m.reasoning_content -%}{{- '[thinking]\\n____\\n' ~ m.reasoning_content"
                            " ~ '\\n____\\n' -}}{%- endif -%}{{- content -}}" + CALLS +
                            "{{- '[tool,' ~ fn.name ~ ']\\n----\\n' ~ (fn.arguments | tojson) ~ '\\n----' -}}{%- endfor -%}")

PAREN_LINE = ("{%- for m in messages -%}{{- (m.role | capitalize) ~ ': ' -}}"
              "{%- if m.reasoning_content -%}{{- '(thinking) ' ~ m.reasoning_content ~ '\\n' -}}{%- endif -%}"
              "{{- m.content or '' -}}{%- for tc in m.tool_calls or [] -%}"
              "{{- '\\nTool call: ' ~ tc.function.name ~ ' ' ~ (tc.function.arguments | tojson) -}}{%- endfor -%}"
              "{{- '\\n\\n' -}}{%- endfor -%}{%- if add_generation_prompt -%}{{- 'Assistant: ' -}}{%- endif -%}")
QUOTED_PARAMS = _template("<|im_start|>", "<|im_end|>\\n", "{{- content -}}" + CALLS +
                          "{{- '<function name=\"' ~ fn.name ~ '\">' -}}{%- for k, v in fn.arguments.items() -%}"
                          "{{- '\\n<param name=\"' ~ k ~ '\">' ~ (v | tojson(indent=2)) ~ '</param>' -}}{%- endfor -%}"
                          "{{- '\\n</function>' -}}{%- endfor -%}")


def _read(source: str, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    req = ChatTemplate.from_string(source, name="novel").apply([{"role": "user", "content": "hi"}], tools=TOOLS)
    stream = req.stream()
    deltas = [d for ch in text for d in stream.feed(ch)] + stream.finish()
    assert stream.message.to_dict() == req.parse(text).to_dict()
    return req.parse(text).to_dict(), deltas


def _calls(msg: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg.get("tool_calls", [])]


def test_name_after_the_arguments_is_read_and_announced_first() -> None:
    text = ('<think>Two cities.</think>Checking.\n<call><arguments>{"city": "Paris", "days": 2}</arguments>'
            '<name>get_weather</name></call>\n<call><arguments>{"city": "Oslo"}</arguments>'
            '<name>get_weather</name></call>[/]\n')
    msg, deltas = _read(ARGS_THEN_NAME, text)
    assert msg["reasoning_content"] == "Two cities."
    assert msg["content"] == "Checking."
    assert _calls(msg) == [("get_weather", {"city": "Paris", "days": 2}), ("get_weather", {"city": "Oslo"})]
    # each call's first delta carries its name, before any of its arguments
    firsts = [d["tool_calls"][0] for d in deltas if "tool_calls" in d and "id" in d["tool_calls"][0]]
    assert [f["function"]["name"] for f in firsts] == ["get_weather", "get_weather"]
    assert all(f["function"]["arguments"] == "" for f in firsts)


def test_a_call_opener_sharing_its_first_character_with_the_turn_end() -> None:
    tools = ChatTemplate.from_string(BACKSLASH_CALL, name="novel").analysis.tools
    assert (tools.call_start + tools.name_prefix).startswith("\\call{")
    msg, _ = _read(BACKSLASH_CALL, 'Sure.\n\\call{get_weather} {"city": "Paris"}\\endturn\n')
    assert msg["content"] == "Sure."
    assert _calls(msg) == [("get_weather", {"city": "Paris"})]


def test_a_fence_closer_glued_to_a_word_opens_a_call() -> None:
    msg, _ = _read(TILDE_FENCES, '~~~get_weather\n{"city": "Paris"}\n~~~<|end|>\n')
    assert msg["content"] is None
    assert _calls(msg) == [("get_weather", {"city": "Paris"})]
    msg, _ = _read(TILDE_FENCES, '~~~thinking\nHmm.\n~~~\nIt rains.<|end|>\n')
    assert (msg["reasoning_content"], msg["content"]) == ("Hmm.", "It rains.")


def test_a_reasoning_opener_of_two_lines() -> None:
    reasoning = ChatTemplate.from_string(TWO_LINE_OPENER, name="novel").analysis.reasoning
    assert (reasoning.start, reasoning.end) == ("[thinking]\n____\n", "\n____\n")
    msg, _ = _read(TWO_LINE_OPENER, '[thinking]\n____\nRain?\n____\n[tool,get_weather]\n----\n{"city": "Oslo"}\n----\n\n')
    assert msg["reasoning_content"] == "Rain?"
    assert _calls(msg) == [("get_weather", {"city": "Oslo"})]


def test_a_reasoning_opener_of_words_ended_by_a_line_break() -> None:
    reasoning = ChatTemplate.from_string(PAREN_LINE, name="novel").analysis.reasoning
    assert (reasoning.start, reasoning.end) == ("(thinking) ", "\n")
    msg, _ = _read(PAREN_LINE, "(thinking) Paris, surely.\nParis.\n\n")
    assert (msg["reasoning_content"], msg["content"]) == ("Paris, surely.", "Paris.")


def test_json_quoted_tagged_strings_are_the_strings_they_spell() -> None:
    text = ('<function name="get_weather">\n<param name="city">"Paris, \\"FR\\""</param>\n'
            '<param name="days">3</param>\n</function><|im_end|>\n')
    msg, _ = _read(QUOTED_PARAMS, text)
    assert _calls(msg) == [("get_weather", {"city": 'Paris, "FR"', "days": 3})]
    req = ChatTemplate.from_string(QUOTED_PARAMS, name="novel").apply([{"role": "user", "content": "hi"}], tools=TOOLS)
    assert json.loads(req.parse_strict(text).tool_calls[0].arguments) == {"city": 'Paris, "FR"', "days": 3}
