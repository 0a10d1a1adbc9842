"""Rule 4: marker tokens the template declares but history never renders.

* A reasoning closer the template cuts out of assistant history (``content.split('</think>')``)
  names the reasoning block the model writes (``analysis/reasoning.py`` ``stripped_closer``):
  Nemotron Super v1.5 renders no ``<think>`` at all, yet the model writes ``<think>…</think>``.
* A thinking-off generation prompt that holds an empty block with a label glued to its opener
  (Gemma 4's ``<|channel>thought\\n<channel|>``) gives the reasoning markers.

* Tokens a tokenizer declares and the model writes, which no template renders, are facts in
  ``analysis/special.py`` (data keyed by a source fingerprint): Llama 3.x's ``<|python_tag|>``
  before a JSON call, Llama 4's ``<|python_start|>…<|python_end|>`` around a pythonic list, and
  the other families' wrappers xLAM writes around its bare call list (``[TOOL_CALLS]``,
  ``<tool_call>…</tool_call>``). Every entry that applies adds its facts (xLAM's Llama template
  also has ``<|python_tag|>``).
* Separators between calls the template never shows (``;``, ``,``) are skipped when another
  call follows them (``runtime/engine.py`` ``_LOOSE_SEPARATORS``); otherwise they stay text.

Cases: Dynamo ``tests/parity/reasoning/fixtures/nemotron_deci``; SGLang
``test_reasoning_parser.py`` (Gemma 4 ``<|channel>thought``), ``test_llama32_detector.py``;
vLLM ``test_llama3_json_tool_parser.py``, ``test_llama4_pythonic_tool_parser.py``,
``test_xlam_tool_parser.py``.
"""

from __future__ import annotations

import pytest
from real_cases import Case, check, ids

CASES = [
    # Dynamo nemotron_deci REASONING.batch
    Case("dynamo-nemotron_deci#02", "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja", "<think>thinking</think>answer",
         reasoning="thinking", content="answer", calls=[], thinking=True),
    Case("dynamo-nemotron_deci#03", "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja",
         '<think>choose tool</think><TOOLCALL>[{"name": "get_weather", "arguments": {"location": "NYC"}}]</TOOLCALL>',
         reasoning="choose tool", content="", calls=[("get_weather", {"location": "NYC"})], thinking=True),
    Case("dynamo-nemotron_deci#07", "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja", "<think>partial",
         reasoning="partial", content="", thinking=True),
    Case("dynamo-nemotron_deci#08", "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja", "<think></think>answer",
         reasoning="", content="answer", thinking=True),
    # SGLang gemma4 reasoning tests
    Case("sglang-gemma4#13", "gemma4.jinja", "<|channel>thought\nLet me think about this<channel|>The answer is 42.",
         reasoning="Let me think about this", content="The answer is 42.", tools=None, thinking=True),
    Case("sglang-gemma4#14", "gemma4.jinja", "<|channel>thought\nStill thinking...",
         reasoning="Still thinking...", content="", tools=None, thinking=True),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_unrendered_reasoning_markers(case: Case) -> None:
    check(case)


def test_stripped_closer_is_read_from_source() -> None:
    from autoparser.analysis.reasoning import stripped_closer
    assert stripped_closer("{% set c = message.content.split('</think>')[-1] %}") == ("<think>", "</think>")
    assert stripped_closer('{{ x.split("</answer>") }}') is None


XLAM = "vllm-tool_chat_template_xlam_llama.jinja"
XLAM_TOOLS = [{"type": "function", "function": {"name": "get_current_weather", "description": "d", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}, "state": {"type": "string"}}}}}]
SEARCH = ('{"name": "search", "parameters": {"query": "restaurants"}}')
WEATHER = ('{"name": "get_weather", "parameters": {"location": "Beijing"}}')
CALLS = [
    Case("fixture-python-tag", "llama3_json", f"Let me check. <|python_tag|>{WEATHER}",
         content="Let me check.", calls=[("get_weather", {"location": "Beijing"})]),
    Case("fixture-semicolons", "llama3_json", f"{WEATHER}; {SEARCH} ; {WEATHER}",
         content="", calls=[("get_weather", {"location": "Beijing"}), ("search", {"query": "restaurants"}),
                            ("get_weather", {"location": "Beijing"})]),
    Case("fixture-comma-then-prose", "llama3_json", f"{WEATHER}, then I will answer.",
         content=", then I will answer.", calls=[("get_weather", {"location": "Beijing"})]),
    # SGLang test_llama32_detector
    Case("sglang-llama3#08", "meta-llama-Llama-3.2-3B-Instruct.jinja",
         '<|python_tag|>{"name": "get_weather", "arguments": {"location": "Beijing"}};'
         '{"name": "search", "arguments": {"query": "restaurants"}}',
         content="", calls=[("get_weather", {"location": "Beijing"}), ("search", {"query": "restaurants"})]),
    # vLLM test_llama3_json_tool_parser
    Case("vllm-llama3_json#07", "meta-llama-Llama-3.2-3B-Instruct.jinja",
         '{"name": "search", "parameters": {"query": "test1"}} ; {"name": "get_time", "parameters": {}} ; '
         '{"name": "search", "parameters": {"query": "test2"}}', content="",
         calls=[("search", {"query": "test1"}), ("get_time", {}), ("search", {"query": "test2"})]),
    # vLLM test_xlam_tool_parser: other families' wrappers around xLAM's bare list
    Case("vllm-xlam#05", XLAM, "I'll check the weather for you.[TOOL_CALLS]"
         '[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX"}}]',
         content="I'll check the weather for you.", calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})],
         tools=XLAM_TOOLS),
    Case("vllm-xlam#06", XLAM, "I'll help you check the weather.<tool_call>"
         '[{"name": "get_current_weather", "arguments": {"city": "Dallas", "state": "TX"}}]</tool_call>',
         content="I'll help you check the weather.", calls=[("get_current_weather", {"city": "Dallas", "state": "TX"})],
         tools=XLAM_TOOLS),
    # vLLM test_llama4_pythonic_tool_parser
    Case("vllm-llama4_pythonic#12", "vllm-tool_chat_template_llama4_pythonic.jinja",
         "<|python_start|>[get_weather(location='LA'), get_time(timezone='PST')]<|python_end|>",
         content="", calls=[("get_weather", {"location": "LA"}), ("get_time", {"timezone": "PST"})]),
]


@pytest.mark.parametrize("case", CALLS, ids=ids(CALLS))
def test_declared_call_markers_and_separators(case: Case) -> None:
    check(case)


HUNYUAN = "vllm-tool_chat_template_hunyuan_a13b.jinja"
FACTS = [
    # vLLM test_hunyuan_a13b_reasoning_parser / tool parser; SGLang hunyuan detector
    Case("vllm-hunyuan#08", HUNYUAN, "<think>\nThis is a reasoning section\n</think>\n<answer>\nThis is the rest\n</answer>",
         reasoning="This is a reasoning section", content="This is the rest", tools=None),
    Case("vllm-hunyuan#12", HUNYUAN, "<think>\n\n</think>\n<answer>\nThis is the rest\n</answer>",
         reasoning="", content="This is the rest", tools=None),
    Case("vllm-hunyuan#07", HUNYUAN,
         '<tool_calls>[{"name": "get_weather", "arguments": {"location": "Boston"}}]</tool_calls>\n</answer>',
         content="", calls=[("get_weather", {"location": "Boston"})]),
    Case("sglang-hunyuan#01", HUNYUAN, "<think>Let me think about this</think>The answer is 42.",
         reasoning="Let me think about this", content="The answer is 42.", tools=None),
]


@pytest.mark.parametrize("case", FACTS, ids=ids(FACTS))
def test_facts_for_unrendered_reasoning_and_answer(case: Case) -> None:
    """Hunyuan-A13B: its vLLM template renders neither <think> nor <answer>; the facts entry supplies them."""
    check(case)
