"""Rule 7: arguments as real models write them.

* Trailing commas (``{"a": 1,}``, ``[1, 2,]``) are dropped, so arguments stay valid JSON
  (``values/jsonfix.py`` ``StringMender``; flagged in ``msg.warnings``).
* Arguments written as a JSON-encoded string (``"arguments": "{\\"a\\": 1}"``) are decoded.
* A missing final brace at the end of the text: the call is kept, closed into valid JSON, and
  marked truncated.
* Numbers and booleans in tagged formats are typed by the tool's schema.
* Indented JSON: see ``test_real_whitespace.py``.
* A call object written as a Python literal in a JSON format (``{'name': 'f', 'arguments':
  {'x': True}}``, the first key single-quoted) is read as one and its arguments turned into JSON
  (``runtime/jsoncall.py`` ``JsonCallReader``; the engine's opener also takes single quotes,
  ``plan.Opener.loose``; a warning says so). Prose holding such a literal naming no tool stays text.
* A template that writes string values as they are between quote characters (``city='Paris'``):
  a value the model quotes with the other quote character (``city="Paris"``) is a string literal
  in those quotes, a backslash escaping its quote, ending at its own closing quote
  (``runtime/items.py``).

Cases: vLLM ``test_granite4_tool_parser.py`` (JSON-encoded string arguments),
``test_qwen3coder_tool_parser.py`` (typed parameters); Dynamo parity fixtures (TOOLCALLING
batch 5: truncation); SGLang ``test_function_call_parser.py`` (trailing commas); Python-literal
objects: the Hermes / Mistral / Llama 3.2 outputs of the peers' tests written with Python quotes;
ollama ``model/parsers/olmo3_test.go`` (double-quoted strings).
"""

from __future__ import annotations

import json

import pytest
from real_cases import Case, check, ids, request

TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {
    "type": "object", "properties": {"location": {"type": "string"}, "days": {"type": "integer"},
                                     "metric": {"type": "boolean"}, "tags": {"type": "array"}}}}}]

OLMO3 = "vllm-tool_chat_template_olmo3.jinja"
OLMO3_TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {
    "type": "object", "properties": {"location": {"type": "string"}, "days": {"type": "integer"},
                                     "metric": {"type": "boolean"}}}}}]

CASES = [
    Case("fixture-trailing-comma", "hermes_json",
         '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris", "days": 3,},}\n</tool_call>',
         content="", calls=[("get_weather", {"location": "Paris", "days": 3})], tools=TOOLS),
    Case("fixture-trailing-comma-array", "kimi_sections",
         '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
         '{"tags": ["a", "b",], "location": "a,}",}<|tool_call_end|><|tool_calls_section_end|>',
         content="", calls=[("get_weather", {"tags": ["a", "b"], "location": "a,}"})], tools=TOOLS),
    Case("fixture-string-arguments", "hermes_json",
         '<tool_call>\n{"name": "get_weather", "arguments": "{\\"location\\": \\"Paris\\"}"}\n</tool_call>',
         content="", calls=[("get_weather", {"location": "Paris"})], tools=TOOLS),
    Case("fixture-missing-final-brace", "hermes_json",
         '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}',
         content="", calls=[("get_weather", {"location": "Paris"})], tools=TOOLS),
    Case("fixture-typed-tagged", "xml_params",
         "<tool_call>\n<function=get_weather>\n<parameter=days>\n3\n</parameter>\n<parameter=metric>\ntrue\n"
         "</parameter>\n<parameter=location>\n42\n</parameter>\n</function>\n</tool_call>",
         content="", calls=[("get_weather", {"days": 3, "metric": True, "location": "42"})], tools=TOOLS),
    # vLLM test_granite4_tool_parser: arguments given as a JSON-encoded string
    Case("vllm-granite4#06", "ibm-granite-granite-4.0.jinja",
         '<tool_call> {"name": "get_weather", "arguments": "{\\"location\\": \\"NYC\\", \\"days\\": 2}"} </tool_call>',
         content="", calls=[("get_weather", {"location": "NYC", "days": 2})], tools=TOOLS),
    # Python-literal call objects in JSON formats
    Case("python-literal-hermes", "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja",
         "<tool_call>\n{'name': 'get_weather', 'arguments': {'location': 'Paris', 'metric': True, 'days': None}}\n"
         "</tool_call>", content="", calls=[("get_weather", {"location": "Paris", "metric": True, "days": None})],
         tools=TOOLS),
    Case("python-literal-mistral-list", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
         "[TOOL_CALLS][{'name': 'get_weather', 'arguments': {'location': 'Paris'}}, "
         '{"name": "get_time", "arguments": {"timezone": "EST"}}]',
         content="", calls=[("get_weather", {"location": "Paris"}), ("get_time", {"timezone": "EST"})]),
    Case("python-literal-llama-bare", "meta-llama-Llama-3.2-3B-Instruct.jinja",
         "{'name': 'get_weather', 'parameters': {'location': \"Paris'\"}}",
         content="", calls=[("get_weather", {"location": "Paris'"})]),
    Case("python-literal-in-prose", "meta-llama-Llama-3.2-3B-Instruct.jinja",
         "I think {'name': 'nothing'} is fine.", content="I think {'name': 'nothing'} is fine.", calls=[]),
    # ollama model/parsers/olmo3_test.go: the template writes strings between single quotes as they are
    # (``city='Paris'``), the model quotes them with double quotes, escaping its quote with a backslash
    Case("ollama-olmo3#double-quotes", OLMO3,
         'Let me check.<function_calls>get_weather(location="NYC")</function_calls>',
         content="Let me check.", calls=[("get_weather", {"location": "NYC"})], tools=OLMO3_TOOLS),
    Case("ollama-olmo3#double-quotes-typed", OLMO3,
         '<function_calls>get_weather(location="San Francisco", days=3, metric=true)\n'
         'get_weather(location="say \\"hi\\", it\'s me")</function_calls>',
         content="", calls=[("get_weather", {"location": "San Francisco", "days": 3, "metric": True}),
                            ("get_weather", {"location": 'say "hi", it\'s me'})], tools=OLMO3_TOOLS),
    Case("ollama-olmo3#own-quotes", OLMO3, "<function_calls>get_weather(location='Paris, \"FR\"')</function_calls>",
         content="", calls=[("get_weather", {"location": 'Paris, "FR"'})], tools=OLMO3_TOOLS),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_arguments(case: Case) -> None:
    check(case)


def test_trailing_comma_is_flagged_and_json() -> None:
    req = request(CASES[0])
    msg = req.parse(CASES[0].text)
    assert msg.malformed and msg.warnings
    json.loads(msg.tool_calls[0].arguments)


def test_missing_brace_is_truncated() -> None:
    msg = request(CASES[3]).parse(CASES[3].text)
    assert msg.truncated and msg.tool_calls[0].truncated
