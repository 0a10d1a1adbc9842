"""Rule 4: marker tokens the template declares but history never renders.

* A reasoning closer the template cuts out of assistant history (``content.split('</think>')``)
  names the reasoning block the model writes (``analysis/reasoning.py`` ``stripped_closer``):
  Nemotron Super v1.5 renders no ``<think>`` at all, yet the model writes ``<think>…</think>``.
* A thinking-off generation prompt that holds an empty block with a label glued to its opener
  (Gemma 4's ``<|channel>thought\\n<channel|>``) gives the reasoning markers.

Cases: Dynamo ``tests/parity/reasoning/fixtures/nemotron_deci``; SGLang
``test_reasoning_parser.py`` (Gemma 4 ``<|channel>thought``).
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
