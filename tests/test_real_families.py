"""Rule 8: the families whose format the template alone shows only in part.

Each is read by a general rule of the analysis or the request plan; the one fact no rendering
shows (gpt-oss's built-in recipients) is data in ``analysis/special.py``.

* **Functionary v3.2**: every part of a turn starts ``>>>RECIPIENT\\n`` and the generation
  prompt ends with ``>>>``. A separator between two calls that the generation prompt ends
  with is the call start (``analysis/tools.py`` ``call_start_in_prompt``), the answer's start
  is that marker plus its recipient line (``>>>all\\n``, ``analysis/content.py``
  ``recipient_start``), and the plan says the prompt opened the first part
  (``RequestPlan.prompt_opened``): the output may begin with a declared tool's name or the
  rest of the answer start.
* **firefunction-v2** reads the undefined ``functions`` and ``datetime``: rendered with them as
  llama.cpp passes them (``render/compat.py``). llama.cpp's DeepSeek-R1 template prints
  ``tools | map(...) | tojson``, which minja prints as a list. A turn with no call that still
  writes an empty call section (``<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>``) shows that the
  marker both turns share opens the section (``analysis/tools.py`` ``_empty_section``).
* **gpt-oss**: a message to a built-in tool (``to=python``, ``to=container.exec``) is neither
  content nor a call of the request: set aside in ``Message.asides`` (llama.cpp drops it);
  with reasoning_format "none" the analysis channel stays in the content with its markers.
* **Nemotron-Nano-v2**, **Cohere2MoE**: with reasoning_format "none" the block the prompt opened
  is put back in the content before the model's first text, not before a call that leaves it
  empty; continuing an answer the template prints inside its open block goes on with the
  answer. The role header in front of a prompt-opened block is not part of its opener.

Cases: llama.cpp ``tests/test-chat.cpp`` vectors (``../shared/conformance/llamacpp-vectors.json``),
the output of functionary-small-v3.2 in llama.cpp's ``examples/function-calling/README.md``,
Dynamo ``tests/parity/reasoning/fixtures`` (gpt_oss, minimax_append_think).
"""

from __future__ import annotations

import pytest
from real_cases import Case, check, ids, request, template

FUNCTIONARY = "meetkai-functionary-medium-v3.2.jinja"
FIREFUNCTION = "fireworks-ai-llama-3-firefunction-v2.jinja"
GPT_OSS = "openai-gpt-oss-120b.jinja"
NONE = {"reasoning_format": "none"}


CONTINUE = {"continue_final_message": True, "add_generation_prompt": False}


CASES = [
    # Functionary v3.2: llama.cpp vectors and functionary-small-v3.2's own output
    Case("llamacpp-functionary-v3.2#01", FUNCTIONARY, "all\nHello, world!\nWhat's up?",
         content="Hello, world!\nWhat's up?", calls=[], tools=None),
    Case("llamacpp-functionary-v3.2#02", FUNCTIONARY, 'special_function\n{"arg1": 1}',
         content="", calls=[("special_function", {"arg1": 1})]),
    Case("llamacpp-example-functionary-small-v3.2", FUNCTIONARY,
         "Sure, I'll look that up for you.>>>get_weather\n{\"location\": \"Phoenix\"}",
         content="Sure, I'll look that up for you.", calls=[("get_weather", {"location": "Phoenix"})]),
    Case("functionary-two-calls", FUNCTIONARY, 'get_weather\n{"location": "Paris"}>>>get_time\n{"timezone": "CET"}',
         content="", calls=[("get_weather", {"location": "Paris"}), ("get_time", {"timezone": "CET"})]),
    Case("functionary-answer-then-call", FUNCTIONARY, 'all\nLet me check.>>>get_weather\n{"location": "Paris"}',
         content="Let me check.", calls=[("get_weather", {"location": "Paris"})]),
    Case("functionary-call-then-answer", FUNCTIONARY, 'get_weather\n{"location": "Paris"}>>>all\nChecking.',
         content="Checking.", calls=[("get_weather", {"location": "Paris"})]),
    Case("functionary-word-like-the-recipient", FUNCTIONARY, "allow me to check.",
         content="allow me to check.", calls=[]),
    # firefunction-v2: llama.cpp vectors
    Case("llamacpp-firefunction-v2#01", FIREFUNCTION, "Hello, world!\nWhat's up?",
         content="Hello, world!\nWhat's up?", calls=[], tools=None),
    Case("llamacpp-firefunction-v2#02", FIREFUNCTION,
         ' functools[{"name": "special_function", "arguments": {"arg1": 1}}]',
         content="", calls=[("special_function", {"arg1": 1})]),
    Case("firefunction-v2-two-calls", FIREFUNCTION, ' functools[{"name": "get_weather", "arguments": {"location": '
         '"Paris"}}, {"name": "get_time", "arguments": {"timezone": "CET"}}]',
         content="", calls=[("get_weather", {"location": "Paris"}), ("get_time", {"timezone": "CET"})]),
    # llama.cpp's DeepSeek-R1 template: the calls' section opener, rendered also for a turn with no call
    Case("llamacpp-deepseek-r1#03", "llama-cpp-deepseek-r1.jinja",
         "</think><｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>special_function\n```json\n"
         '{"arg1": 1}```<｜tool▁call▁end｜><｜tool▁calls▁end｜>',
         reasoning="", content="", calls=[("special_function", {"arg1": 1})]),
    # gpt-oss, reasoning_format "none": llama.cpp vector 04
    Case("llamacpp-gpt-oss#04", GPT_OSS, "<|channel|>analysis<|message|>I'm\nthinking<|end|><|start|>assistant"
         "<|channel|>final<|message|>Hello, world!\nWhat's up?", reasoning="",
         content="<|channel|>analysis<|message|>I'm\nthinking<|end|>Hello, world!\nWhat's up?", tools=None,
         options=NONE),
    # Nemotron-Nano-v2 and Cohere2MoE: the prompt's open block with reasoning_format "none"
    Case("llamacpp-nemotron-nano-v2#01", "NVIDIA-Nemotron-Nano-v2.jinja",
         '<TOOLCALL>[{"name": "special_function", "arguments": {"arg1": 1}}]</TOOLCALL>',
         reasoning="", content="", calls=[("special_function", {"arg1": 1})], options=NONE),
    Case("llamacpp-cohere2moe#02", "Cohere2MoE.jinja",
         "I'm\nthinking<|END_THINKING|><|START_TEXT|>Hello, world!\nWhat's up?<|END_TEXT|>", reasoning="",
         content="<|START_THINKING|>I'm\nthinking<|END_THINKING|>Hello, world!\nWhat's up?", tools=None,
         options=NONE),
    Case("dynamo-minimax_append_think#07", "MiniMax-M2.jinja", "", reasoning="", content="<think>", tools=None,
         options=NONE),
    # continuing an answer the template prints inside its open block
    Case("llamacpp-nemotron-nano-v2#02", "NVIDIA-Nemotron-Nano-v2.jinja", "world!\nWhat's up?",
         reasoning="I'm thinking", content="Hello, world!\nWhat's up?", tools=None, options=CONTINUE,
         messages=[{"role": "user", "content": "Hey there!"},
                   {"role": "assistant", "content": "Hello, ", "reasoning_content": "I'm thinking"}]),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_families(case: Case) -> None:
    check(case)


def test_functionary_recipients_are_read_from_thetemplate() -> None:
    a = template(FUNCTIONARY).analysis
    assert (a.tools.call_start, a.tools.separator, a.tools.name_suffix) == (">>>", "", "\n")
    assert a.content.start == ">>>all\n"
    req = request(Case("x", FUNCTIONARY, ""))
    assert req.prompt.endswith(">>>") and req.plan.prompt_opened == ">>>"


def test_firefunction_renders_functions_and_date() -> None:
    req = request(Case("x", FIREFUNCTION, ""))
    assert '"name": "get_weather"' in req.prompt and "Today is " in req.prompt
    assert template(FIREFUNCTION).analysis.tools.section_start == " functools["


def test_render_parity_kept_for_lazy_tojson() -> None:
    """transformers refuses ``tojson`` of a lazy sequence; only the llama.cpp fallback prints it."""
    from autoparser.errors import TemplateError
    from autoparser.render import Renderer
    from autoparser.render.compat import render_compat

    r = Renderer("{{ tools | map(attribute='function') | tojson }}")
    tools = [{"type": "function", "function": {"name": "f"}}]
    with pytest.raises(TemplateError):
        r.render([], tools=tools)
    assert render_compat(r, [], tools=tools) == '[{"name": "f"}]'


BUILTIN = [
    Case("llamacpp-gpt-oss#13", GPT_OSS, "<|channel|>analysis<|message|>I will execute python to say hello<|end|>"
         "<|start|>assistant to=container.exec<|channel|>commentary<|message|>python3 -c 'print(\"hello\")'",
         reasoning="I will execute python to say hello", content="", calls=[], tools=None),
    Case("llamacpp-gpt-oss#14", GPT_OSS, "<|channel|>analysis<|message|>I will execute python to say hello<|end|>"
         "<|start|>assistant<|channel|>commentary to=python <|constrain|>code<|message|>print(\"hello\")",
         reasoning="I will execute python to say hello", content="", calls=[], tools=None),
    Case("gpt-oss-builtin-then-function", GPT_OSS, "<|channel|>analysis<|message|>Search, then the weather.<|end|>"
         "<|start|>assistant to=browser.search<|channel|>commentary json<|message|>{\"query\": \"Paris\"}<|call|>"
         "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
         "{\"location\": \"Paris\"}<|call|>",
         reasoning="Search, then the weather.", content="", calls=[("get_weather", {"location": "Paris"})]),
]


@pytest.mark.parametrize("case", BUILTIN, ids=ids(BUILTIN))
def test_builtin_recipient_is_set_aside(case: Case) -> None:
    """Neither content nor a call: the message, as written, is in ``Message.asides`` (nothing lost)."""
    check(case)
    msg = request(case).parse(case.text)
    assert len(msg.asides) == 1 and "to=" in msg.asides[0] and msg.asides[0].strip() in case.text
    assert msg.warnings and not msg.malformed


def test_function_recipient_with_no_tools_stays_text() -> None:
    """A call to ``functions.NAME`` with no tools declared is no built-in: kept as content (policy, README)."""
    case = Case("dynamo-reasoning_gpt_oss#05", GPT_OSS, "<|channel|>commentary to=functions.get_weather "
                "<|constrain|>json<|message|>{\"location\":\"SF\"}<|call|>", tools=None)
    check(case)
    msg = request(case).parse(case.text)
    assert not msg.asides and "to=functions.get_weather" in (msg.content or "")

