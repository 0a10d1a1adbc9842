"""Rule 1: reasoning as models write it, not only as the template renders it.

* The model re-emits the opener the prompt already wrote (``<think>`` after a prompt ending in
  ``<think>\\n``), or writes it twice: the repeated opener at the start of the block is a
  recognised marker, dropped (vLLM, SGLang and Dynamo all drop it; llama.cpp keeps it as
  reasoning text, see README "Accepted deviations").
* Reasoning never closed before a tool call ends at the call.

Cases: vLLM ``tests/reasoning/test_step3p5_reasoning_parser.py``, ``test_nemotron_v3...``;
SGLang ``test_reasoning_parser.py`` (``<think><think>``); Dynamo ``tests/parity/reasoning``
(deepseek_r1, step3, nemotron_v3, deepseek_v4 fixtures).
"""

from __future__ import annotations

import pytest
from real_cases import Case, check, ids

REOPENED = [
    Case("fixture-reopened", "forced_open_think", "<think>I should check.</think>The answer.",
         reasoning="I should check.", content="The answer.", calls=[]),
    Case("fixture-reopened-newline", "forced_open_think", "\n<think>\nI should check.\n</think>\n\nThe answer.",
         reasoning="I should check.", content="The answer.", calls=[]),
    Case("fixture-reopened-truncated", "forced_open_think", "<think>partial",
         reasoning="partial", content="", calls=[]),
    Case("fixture-reopened-empty", "forced_open_think", "<think></think>answer",
         reasoning="", content="answer", calls=[]),
    Case("fixture-reopened-call", "forced_open_think",
         '<think>choose tool</think>\n<tool_call>\n{"name": "get_weather", "arguments": {"location": "NYC"}}\n'
         '</tool_call>', reasoning="choose tool", content="", calls=[("get_weather", {"location": "NYC"})]),
    Case("fixture-twice", "qwen3_think_json", "<think><think>Let me think</think>The answer is 42.",
         reasoning="Let me think", content="The answer is 42.", calls=[]),
    # vLLM test_step3p5_reasoning_parser (StepFun 3.5, prompt ends in "<think>\n")
    Case("vllm-step3p5#21", "StepFun3.5-Flash.jinja", "<think>This is a reasoning section</think>This is the rest",
         reasoning="This is a reasoning section", content="This is the rest"),
    Case("vllm-step3p5#26", "StepFun3.5-Flash.jinja", "\n<think>This is a reasoning section</think>\nThis is the rest",
         reasoning="This is a reasoning section", content="This is the rest"),
    Case("vllm-step3p5#24", "StepFun3.5-Flash.jinja", "<think>This is a reasoning section",
         reasoning="This is a reasoning section", content=""),
    # Dynamo tests/parity/reasoning deepseek_r1 / nemotron_v3 / deepseek_v4
    Case("dynamo-deepseek_r1#08", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja",
         '<think>Line 1\nUnicode: café\nJSON-ish: {"x": [1, true]}</think>Done.',
         reasoning='Line 1\nUnicode: café\nJSON-ish: {"x": [1, true]}', content="Done.", thinking=True),
    Case("dynamo-nemotron_v3#07", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16.jinja", "<think></think>answer",
         reasoning="", content="answer", thinking=True),
    Case("dynamo-deepseek_v4#03", "deepseek-ai-DeepSeek-V4.jinja",
         '<think>choose tool</think><｜DSML｜tool_calls>\n<｜DSML｜invoke name="get_weather">\n'
         '<｜DSML｜parameter name="location" string="true">NYC</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
         '</｜DSML｜tool_calls>', reasoning="choose tool", content="", calls=[("get_weather", {"location": "NYC"})],
         thinking=True),
    # SGLang test_reasoning_parser: Qwen3 with the opener written twice
    Case("sglang-qwen3#08", "Qwen-Qwen3-0.6B.jinja", "<think><think>Let me think</think>The answer is 42.",
         reasoning="Let me think", content="The answer is 42.", tools=None),
]


@pytest.mark.parametrize("case", REOPENED, ids=ids(REOPENED))
def test_reemitted_opener_is_dropped(case: Case) -> None:
    check(case)


_KIMI_CALL = ('<|open|>tools<|sep|><|open|>call tool="get_weather" index="1"<|sep|><|open|>argument key="location" '
              'type="string"<|sep|>Paris<|close|>argument<|sep|><|close|>call<|sep|><|close|>tools')


@pytest.mark.parametrize("text", [
    "R.<|close|>think<|sep|>" + _KIMI_CALL + "<|close|>think<|sep|>Hello",      # a second closer after the calls
    "R.\n" + _KIMI_CALL + "\n<|close|>think<|sep|>Hello"])                     # the calls inside the block
def test_a_closer_that_ends_with_the_opener_reopens_nothing(text: str) -> None:
    """Kimi-K3 closes reasoning with ``<|close|>think<|sep|>``, which ends with its opener ``think<|sep|>``
    and begins with a turn marker (``<|close|>``): a closer with no open block is dropped whole, the
    longer marker first, and what follows is the answer, not a reopened block."""
    check(Case("fixture-kimi-k3-closer", "Kimi-K3.jinja", text, reasoning="R.", content="Hello",
               calls=[("get_weather", {"location": "Paris"})], thinking=True))


def test_opener_later_in_the_block_is_text() -> None:
    """Only an opener at the very start of the block is the re-emitted marker; quoted later, it is text."""
    check(Case("fixture-quoted", "forced_open_think", "I could write <think> here.</think>Answer",
               reasoning="I could write <think> here.", content="Answer", calls=[]))


UNCLOSED = [
    Case("fixture-call-ends-reasoning", "forced_open_think",
         'I will check.\n<tool_call>\n{"name": "get_weather", "arguments": {"location": "NYC"}}\n</tool_call>',
         reasoning="I will check.", content="", calls=[("get_weather", {"location": "NYC"})]),
    Case("fixture-quoted-call-stays-reasoning", "forced_open_think",
         'I could write <tool_call>\n{"name": "get_weather", "arguments": {"location": "NYC"}}\n</tool_call> '
         'but no.</think>Fine.',
         reasoning='I could write <tool_call>\n{"name": "get_weather", "arguments": {"location": "NYC"}}\n'
                   '</tool_call> but no.', content="Fine.", calls=[]),
    # SGLang test_kimik2_detector: test_e2e_multiple_tool_calls_without_think_close
    Case("sglang-kimi_k2#23", "Kimi-K2-Thinking.jinja",
         '<think>Let me check both files.<|tool_calls_section_begin|><|tool_call_begin|>functions.ReadFile:0'
         '<|tool_call_argument_begin|>{"path": "/a.py"}<|tool_call_end|><|tool_call_begin|>functions.ReadFile:1'
         '<|tool_call_argument_begin|>{"path": "/b.py"}<|tool_call_end|><|tool_calls_section_end|>',
         reasoning="Let me check both files.", content="",
         calls=[("ReadFile", {"path": "/a.py"}), ("ReadFile", {"path": "/b.py"})]),
    # vLLM test_qwen3_reasoning_parser: tool_call_no_think_end / tool_call_with_think_no_end (no tools declared:
    # the call text is content)
    Case("vllm-qwen3#09", "Qwen3.5-4B.jinja",
         "I need to read the file.\n\n<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n"
         "</parameter>\n</function>\n</tool_call>", reasoning="I need to read the file.",
         content="<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n"
                 "</tool_call>", tools=None, thinking=True),
    Case("vllm-qwen3#10", "Qwen-Qwen3-0.6B.jinja",
         "<think>I need to read the file.\n\n<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n"
         "</parameter>\n</function>\n</tool_call>", reasoning="I need to read the file.",
         content="<tool_call>\n<function=bash>\n<parameter=command>\ncat /etc/hosts\n</parameter>\n</function>\n"
                 "</tool_call>", tools=None, thinking=True),
]


@pytest.mark.parametrize("case", UNCLOSED, ids=ids(UNCLOSED))
def test_a_call_ends_reasoning_never_closed(case: Case) -> None:
    check(case)


NO_OPENER = [
    # vLLM test_seedoss_reasoning_parser: the prompt does not open <seed:think>, the model skips it
    Case("vllm-seed_oss#06", "ByteDance-Seed-OSS.jinja", "This is a reasoning section</seed:think>This is the rest",
         reasoning="This is a reasoning section", content="This is the rest", tools=None, thinking=True),
    Case("vllm-seed_oss#09", "ByteDance-Seed-OSS.jinja", "This\nThat</seed:think>This is the rest\nThat",
         reasoning="This\nThat", content="This is the rest\nThat", tools=None, thinking=True),
    # ... and an answer with no reasoning at all stays the answer (vLLM reports it as reasoning: policy)
    Case("vllm-seed_oss#08", "ByteDance-Seed-OSS.jinja", "This is content", reasoning="", content="This is content",
         tools=None, thinking=True),
    # vLLM test_gemma4_reasoning_parser: no <|channel> opener, or no "thought" label after it
    Case("vllm-gemma4#24", "google-gemma-4-31B-it.jinja", "This is a reasoning section<channel|>This is the rest",
         reasoning="This is a reasoning section", content="This is the rest", tools=None, thinking=True),
    Case("vllm-gemma4#28", "google-gemma-4-31B-it.jinja", "<|channel>This is a reasoning section<channel|>This is the rest",
         reasoning="This is a reasoning section", content="This is the rest", tools=None, thinking=True),
    Case("vllm-gemma4#31", "google-gemma-4-31B-it.jinja", "<|channel>This is a reasoning section",
         reasoning="This is a reasoning section", content="", tools=None, thinking=True),
    Case("vllm-gemma4#27", "google-gemma-4-31B-it.jinja", "This is content", reasoning="", content="This is content",
         tools=None, thinking=True),
    Case("fixture-answer-then-block", "qwen3_think_json", "Hello <think>hm</think> there",
         reasoning="hm", content="Hello  there", calls=[]),   # both sides kept
    Case("fixture-no-opener", "qwen3_think_json", "Let me see.</think>The answer.",
         reasoning="Let me see.", content="The answer.", calls=[]),
    Case("fixture-no-opener-call", "qwen3_think_json",
         'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>',
         reasoning="", content="Sure.", calls=[("get_weather", {"location": "Paris"})]),
]


@pytest.mark.parametrize("case", NO_OPENER, ids=ids(NO_OPENER))
def test_reasoning_without_its_opener(case: Case) -> None:
    """Thinking on and the block not opened by the prompt: text before a close with no open is reasoning
    (held until the close, a call, an answer wrapper or the end, when it is the answer)."""
    check(case)


def test_label_is_optional_but_not_guessed() -> None:
    """``<|channel>`` without its ``thought`` label opens the block; a word that only starts like the
    label (``thousand``) is reasoning text (vLLM test_gemma4_reasoning_parser)."""
    check(Case("vllm-gemma4#37", "google-gemma-4-31B-it.jinja", "<|channel>thousand reasons<channel|>Done",
               reasoning="thousand reasons", content="Done", tools=None, thinking=True))
