"""Rule 5: calls where real models put them.

* Content before and after calls, and between several call sections in one turn, is kept
  (Dynamo drops text after the last call; we keep it: no text is lost, README policy table).
* A call section not closed before the end of the text: an end marker cut short by the end of
  the output (``]`` of ``]</TOOLCALL>``) is the marker, not content (``runtime/engine.py``
  ``_cut_at_end``).
* A closer the template never renders, mirroring the opener (Mistral's ``[/TOOL_CALLS]``,
  ``</tool_call>`` after Granite's unclosed ``<tool_call>``), is a recognised marker
  (``plan.stray_closers``).
* A per-call special token with no section opener before it implies the section (Kimi's
  ``<|tool_call_begin|>`` alone; ``engine._implied_section``), and ends reasoning never closed.
* A tag-like name prefix written without its call start (``<function=NAME>`` with no
  ``<tool_call>``) opens a call when it names a declared tool (``engine._implied_call_start``);
  such a call may also end without its end marker.
* Calls inside an unclosed reasoning block: see ``test_real_reasoning_opener.py``.

Cases: Dynamo ``tests/parity/toolcalling/fixtures`` (mistral, jamba, nemotron_deci, kimi_k2,
deepseek_v3_1: batches 5, 6, 8); SGLang ``test_kimik2_detector.py``.
"""

from __future__ import annotations

import pytest
from real_cases import Case, check, ids

NYC = [("get_weather", {"location": "NYC"})]
W = '{"name": "get_weather", "arguments": {"location": "NYC"}}'

CASES = [
    Case("fixture-text-after-section", "kimi_sections",
         'I will check. <|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
         '{"location": "NYC"}<|tool_call_end|><|tool_calls_section_end|> Let me know if you need more.',
         content="I will check.  Let me know if you need more.", calls=NYC),
    Case("fixture-two-sections", "mistral_array",
         f'First. [TOOL_CALLS][{W}] Then. [TOOL_CALLS][{W}]', content="First.  Then.", calls=NYC * 2),
    # Dynamo mistral fixtures: a [/TOOL_CALLS] the template never renders
    Case("dynamo-mistral#13", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
         '[TOOL_CALLS][{"name": "get_time", "arguments": { }}][/TOOL_CALLS]', content="", calls=[("get_time", {})]),
    Case("dynamo-mistral#23", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
         f'I will check the weather. [TOOL_CALLS][{W}][/TOOL_CALLS] Let me know if you need more.',
         content="I will check the weather.  Let me know if you need more.", calls=NYC),
    # Dynamo jamba / nemotron_deci: the section's end cut short by the end of the output
    Case("dynamo-jamba#10", "hfjs-ai21labs-AI21-Jamba-Large-1.6.jinja",
         f"I'll fetch both!<tool_calls>[{W}, {W}]", content="I'll fetch both!", calls=NYC * 2),
    Case("dynamo-nemotron_deci#09", "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5.jinja",
         f"<TOOLCALL>[{W}]", content="", calls=NYC),
    Case("dynamo-deepseek_v3_1#26", "deepseek-ai-DeepSeek-V3.1.jinja",
         'I will check the weather. <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"location":"NYC"}'
         '<｜tool▁call▁end｜><｜tool▁calls▁end｜> Then check LA weather. <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>'
         'get_weather<｜tool▁sep｜>{"location":"LA"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
         content="I will check the weather.  Then check LA weather.",
         calls=[("get_weather", {"location": "NYC"}), ("get_weather", {"location": "LA"})]),
    # vLLM test_qwen3coder_tool_parser: <function=...> without its <tool_call> (with or without the close)
    Case("vllm-qwen3_xml#09", "Qwen3-Coder.jinja",
         "<function=get_weather>\n<parameter=location>\nDallas\n</parameter>\n<parameter=timezone>\nTX\n"
         "</parameter>\n</function>", content="", calls=[("get_weather", {"location": "Dallas", "timezone": "TX"})]),
    Case("vllm-qwen3_xml#12", "Qwen3-Coder.jinja",
         "I'll check the weather for you.\n\n<function=get_weather>\n<parameter=location>\nDallas\n</parameter>\n"
         "</function>\n</tool_call>", content="I'll check the weather for you.",
         calls=[("get_weather", {"location": "Dallas"})]),
    Case("fixture-function-prose", "xml_params", "Use <function=unknown> tags.", content="Use <function=unknown> tags.",
         calls=[]),
    # llama.cpp Kimi-K2-Thinking vectors, Dynamo kimi_k2 batch: calls with no section opener
    Case("llamacpp-Kimi-K2-Thinking#12", "Kimi-K2-Thinking.jinja",
         '<think>I need to call two functions<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
         '{"location": "NYC"}<|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{"timezone": "EST"}',
         reasoning="I need to call two functions", content="",
         calls=[("get_weather", {"location": "NYC"}), ("get_time", {"timezone": "EST"})], thinking=True),
    Case("dynamo-kimi_k2#14", "Kimi-K2-Instruct.jinja",
         '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"location":"NYC"}<|tool_call_end|>'
         '<|tool_calls_section_end|><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:1'
         '<|tool_call_argument_begin|>{"location":"Boston"}<|tool_call_end|><|tool_calls_section_end|>',
         content="", calls=[("get_weather", {"location": "NYC"}), ("get_weather", {"location": "Boston"})]),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_sections(case: Case) -> None:
    check(case)
