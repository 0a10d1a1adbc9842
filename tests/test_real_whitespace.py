"""Rule 2: whitespace the template does not render.

* Spaces and newlines between markers, around names, before argument separators and inside
  JSON are tolerated (markers are whitespace-tolerant patterns, ``autoparser/markers.py``, also
  around a special token inside a marker piece; a JSON name prefix tolerates indentation,
  ``plan.openers.name_prefix_pattern``).
* Whitespace *outside* the call markers belongs to the content around the calls: text before
  and after a call keeps its spaces and newlines (``"Intro.\\n<call>…</call>\\nOutro."`` gives
  ``"Intro.\\n\\nOutro."``), as vLLM and SGLang report it; the answer's own leading and trailing
  whitespace is trimmed (``runtime/engine.py`` ``_call_boundary``).
* A code fence inside a marker (Command R+'s ``]```\n`` after the action list) is a piece of
  its own: markdown puts a fence on a line of its own, so models write ``]\n```\n``.

Cases: vLLM ``test_granite4_tool_parser.py::test_tool_call_parser_complex``; SGLang
``test_kimik2_detector.py::test_e2e_normal_text_between_two_tool_calls``,
``test_minicpm5_detector.py::test_detect_and_parse_single_call_v3``; Dynamo parity fixtures
(``TOOLCALLING.batch.6``: whitespace inside ``{ }``); llama.cpp ``test-chat.cpp`` (Command R+ tool use).
"""

from __future__ import annotations

import pytest
from real_cases import Case, check, ids

BBOX = ('{"name": "get_weather", "arguments": {"location": "Paris"}}')

SPECIAL = [{"type": "function", "function": {"name": "special_function", "description": "a test tool", "parameters": {
    "type": "object", "properties": {"arg1": {"type": "string", "description": "an argument"}}, "required": ["arg1"]}}}]

CASES = [
    Case("fixture-around-calls", "hermes_json",
         f"Here goes the call: \n<tool_call> {BBOX} </tool_call> Now another: \n <tool_call> {BBOX} </tool_call> "
         "See?", content="Here goes the call: \n Now another: \n  See?",
         calls=[("get_weather", {"location": "Paris"})] * 2),
    Case("fixture-kimi-between-sections", "kimi_sections",
         'Prefix text:<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0'
         '<|tool_call_argument_begin|>{"location": "London"}<|tool_call_end|><|tool_calls_section_end|> Now next: '
         '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>'
         '{"location": "Delhi"}<|tool_call_end|><|tool_calls_section_end|>',
         content="Prefix text: Now next:", calls=[("get_weather", {"location": "London"}),
                                                  ("get_weather", {"location": "Delhi"})]),
    Case("fixture-spaces-between-markers", "kimi_sections",
         '<|tool_calls_section_begin|> \n<|tool_call_begin|> functions.get_weather:0 \n<|tool_call_argument_begin|>'
         '\n{ "location" :\n  "NYC" }\n<|tool_call_end|>\n<|tool_calls_section_end|>\n\n',
         content="", calls=[("get_weather", {"location": "NYC"})]),
    Case("fixture-xml-newlines", "xml_params",
         "Intro before.\n<tool_call>\n<function=get_weather>\n<parameter=location>\nParis\n</parameter>\n</function>\n"
         "</tool_call>\nOutro after.\n", content="Intro before.\n\nOutro after.",
         calls=[("get_weather", {"location": "Paris"})]),
    Case("fixture-empty-object-spaced", "hermes_json",
         '<tool_call>\n{"name": "get_time", "arguments": { }}\n</tool_call>\n\n\n',
         content="", calls=[("get_time", {})]),
    Case("fixture-indented-json", "hermes_json",
         '<tool_call>\n{\n  "name" : "get_weather",\n  "arguments": {\n    "location": "Paris"\n  }\n}\n</tool_call>',
         content="", calls=[("get_weather", {"location": "Paris"})]),
    # vLLM test_internlm2_tool_parser: indented JSON after <|action_start|><|plugin|>
    Case("vllm-internlm#06", "vllm-tool_chat_template_internlm2_tool.jinja",
         '<|action_start|><|plugin|>{\n  "name": "get_weather",\n  "parameters": {\n    "location": "C:\\\\Users"\n'
         '  }\n}<|action_end|>', content="", calls=[("get_weather", {"location": "C:\\Users"})]),
    # SGLang test_minicpm5_detector
    Case("sglang-minicpm5#01", "openbmb-MiniCPM5-1B.jinja",
         'Intro before.\n<function name="get_weather"><param name="location">上海</param></function>\nOutro after.\n',
         content="Intro before.\n\nOutro after.", calls=[("get_weather", {"location": "上海"})]),
    # SGLang test_kimik2_detector
    Case("sglang-kimi_k2#25", "Kimi-K2-Instruct.jinja",
         'Prefix text:<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0'
         '<|tool_call_argument_begin|>{"location": "London"}<|tool_call_end|><|tool_calls_section_end|> '
         'Now calling next: <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:1'
         '<|tool_call_argument_begin|>{"location": "Delhi"}<|tool_call_end|><|tool_calls_section_end|>',
         content="Prefix text: Now calling next:",
         calls=[("get_weather", {"location": "London"}), ("get_weather", {"location": "Delhi"})]),
    # llama.cpp vectors: the closing fence on a line of its own (the template prints each parameter's description)
    Case("llamacpp-command-r-plus#02", "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
         'Action:\n```json\n[{"tool_name": "special_function", "parameters": {"arg1": "1"}}]\n```',
         content="", calls=[("special_function", {"arg1": "1"})], tools=SPECIAL),
    Case("llamacpp-command-r-plus#02-answer-after", "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
         'Action:\n```json\n[{"tool_name": "special_function", "parameters": {"arg1": "1"}}]\n```\nDone.',
         content="Done.", calls=[("special_function", {"arg1": "1"})], tools=SPECIAL),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_whitespace(case: Case) -> None:
    check(case)
