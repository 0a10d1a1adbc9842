"""Rule 6: call-looking text that is not a call stays text.

* Markup quoted inside a reasoning block that closes later stays reasoning
  (``runtime/engine.py`` ``_call_in_reasoning``).
* Call markup inside a ``` code fence in the answer stays content (``Engine._free_text``
  tracks the fence, also across chunks). vLLM's xLAM parser reads a call list inside a
  ```json fence as calls; we keep quoted text as text (README policy table).
* With no marker to open a call (a bare JSON object), only a declared tool's name makes the
  object a call (``plan.openers.json_trigger``, and the JSON call reader for a stream that started one
  on a cut-off name).

Cases: SGLang ``test_function_call_parser.py`` (JSON in prose), vLLM ``test_llama3_json...``,
``test_hermes_tool_parser.py`` (markup in reasoning).
"""

from __future__ import annotations

import pytest
from real_cases import Case, check, ids

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'

CASES = [
    Case("fixture-fenced-markup", "hermes_json", f"Write it like this:\n```\n{CALL}\n```\nThat is all.",
         content=f"Write it like this:\n```\n{CALL}\n```\nThat is all.", calls=[]),
    Case("fixture-after-fence-closes", "hermes_json", f"Example:\n```python\nx = 1\n```\n{CALL}",
         content="Example:\n```python\nx = 1\n```", calls=[("get_weather", {"location": "Paris"})]),
    Case("fixture-quoted-in-reasoning", "qwen3_think_json", f"<think>The format is {CALL} fine.</think>OK",
         reasoning=f"The format is {CALL} fine.", content="OK", calls=[]),
    Case("fixture-json-in-prose", "llama3_json",
         'Here is JSON: {"name": "unknown_tool", "parameters": {"a": 1}} ok',
         content='Here is JSON: {"name": "unknown_tool", "parameters": {"a": 1}} ok', calls=[]),
    Case("fixture-declared-bare-json", "llama3_json", '{"name": "get_weather", "parameters": {"location": "Paris"}}',
         content="", calls=[("get_weather", {"location": "Paris"})]),
    Case("fixture-pythonic-prose", "pythonic_bare", "I would call print(x) here.",
         content="I would call print(x) here.", calls=[]),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_not_calls(case: Case) -> None:
    check(case)
