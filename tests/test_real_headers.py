"""Rules 3 and 8: call headers with fields in another order or with optional parts (gpt-oss / Harmony).

The template renders one spelling (`` to=functions.NAME<|channel|>commentary json<|message|>``);
models also write the recipient after the channel, ``<|constrain|>json`` or not, the analysis
channel in a call header, one ``<|start|>assistant`` message per call, a commentary preamble
and a message stopped at ``<|end|>``. The template cannot show this, so the facts are one data
entry in ``analysis/special.py`` ("harmony": tool/reasoning fields and recognised markers);
the name suffix uses ``markers.HEADER``, a bounded wildcard for header fields in any order.

Cases: llama.cpp ``test-chat.cpp`` gpt-oss vectors; SGLang ``test_gpt_oss_detector.py``;
Dynamo ``tests/parity/toolcalling/fixtures/harmony``. A message to a built-in recipient
(``to=python``, ``to=container.exec``) is set aside: ``test_real_families.py``.
"""

from __future__ import annotations

import pytest
from real_cases import Case, check, ids

T = "openai-gpt-oss-120b.jinja"
ARGS = '{"location": "NYC"}'
CALL = [("get_weather", {"location": "NYC"})]

CASES = [
    # llama.cpp gpt-oss vectors
    Case("llamacpp-gpt-oss#02", T, "<|channel|>commentary<|message|>Hello, world!\nWhat's up?",
         content="Hello, world!\nWhat's up?", calls=[], tools=None),
    Case("llamacpp-gpt-oss#06", T, f" to=functions.get_weather<|channel|>analysis<|message|>{ARGS}",
         reasoning="", content="", calls=CALL),
    Case("llamacpp-gpt-oss#07", T, f"<|channel|>analysis to=functions.get_weather<|message|>{ARGS}",
         reasoning="", content="", calls=CALL),
    Case("llamacpp-gpt-oss#08", T, f" to=functions.get_weather<|channel|>analysis <|constrain|>json<|message|>{ARGS}",
         reasoning="", content="", calls=CALL),
    Case("llamacpp-gpt-oss#10", T, "<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant "
         f"to=functions.get_weather<|channel|>analysis<|message|>{ARGS}",
         reasoning="I'm\nthinking", content="", calls=CALL),
    Case("llamacpp-gpt-oss#11", T, "<|channel|>analysis<|message|>Thinking...<|end|><|start|>assistant"
         f"<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{ARGS}",
         reasoning="Thinking...", content="", calls=CALL),
    Case("llamacpp-gpt-oss#15", T, "<|channel|>commentary to=assistant<|channel|>analysis<|message|>I'm\nthinking"
         "<|end|><|start|>assistant<|channel|>final<|message|>Hello", reasoning="I'm\nthinking", content="Hello",
         tools=None),
    # SGLang test_gpt_oss_detector
    Case("sglang-gpt-oss#05", T, 'Let me check.<|start|>assistant<|channel|>commentary to=functions.get_weather'
         '<|constrain|>json<|message|>{"location":"Beijing"}<|call|>', content="Let me check.",
         calls=[("get_weather", {"location": "Beijing"})]),
    Case("sglang-gpt-oss#02", T, "<|start|><|channel|>analysis<|message|>thinking hard<|end|>"
         "<|channel|>final<|message|>the answer<|end|>", reasoning="thinking hard", content="the answer", tools=None),
    # Dynamo harmony fixtures: one message per call
    Case("dynamo-harmony#01", T, '<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json'
         '<|message|>{"location":"NYC"}<|call|><|start|>assistant<|channel|>commentary to=functions.get_time '
         '<|constrain|>json<|message|>{"timezone":"EST"}<|call|>', content="",
         calls=[("get_weather", {"location": "NYC"}), ("get_time", {"timezone": "EST"})]),
    Case("dynamo-harmony#13", T, "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{ }<|call|>",
         content="", calls=[("get_time", {})]),
    Case("dynamo-reasoning_gpt_oss#10", T, "<|channel|>analysis<|message|>partial reasoning<|end|>",
         reasoning="partial reasoning", content="", tools=None),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_harmony_headers(case: Case) -> None:
    check(case)

