"""Rule 9: malformed output; and the property test over rendered outputs with real deviations.

* A valid call after a broken one is still a call: inside a section, the broken call's rest is
  content up to the next call start or the section's end (``Engine._step_resync``); in a JSON
  array the next call starts at a separator followed by a call object (``, {"name":``), whether
  the broken object was announced or not; a tagged value whose end marker is missing ends where
  the next argument begins.
* A marker cut off by the end of the output (a call's close ``\n```<｜tool▁call▁end｜>`` stopped
  after the fence, a header stopped before ``<|message|>``) is that marker, not content.
* The broken text stays content; nothing raises; ``stream`` equals ``parse``.

The hypothesis test (derandomized, bounded) takes the rendered one- and two-call turns of every
fixture in ``templates/`` and a sample of the corpus, applies the deviations real models make
(an opener re-emitted after a prompt that opened the block, whitespace around the call markers,
the final closer left out, text after the calls) and checks that the calls are still recovered
and that streaming in random chunks gives exactly the parsed message.

Cases: vLLM ``test_qwen3coder_tool_parser.py`` (missing ``</parameter>``); SGLang
``test_kimik2_detector.py`` (a malformed call before a valid one); Dynamo parity fixtures
(``jamba``/``mistral`` "mixed known and unknown calls", with the first call broken;
``deepseek_v3`` batch 9 and ``harmony`` batch 14: output cut inside a marker).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import turns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from real_cases import Case, check, check_stream, ids, stream

from autoparser import ChatTemplate

CASES = [
    Case("fixture-broken-then-valid", "kimi_sections",
         '<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>'
         '{"location": <|tool_call_end|><|tool_call_begin|>functions.get_weather:1<|tool_call_argument_begin|>'
         '{"location": "NYC"}<|tool_call_end|><|tool_calls_section_end|> after',
         content='"location": <|tool_call_end|> after',
         calls=[("get_weather", {}), ("get_weather", {"location": "NYC"})]),
    Case("fixture-bad-object-then-valid", "hermes_json",
         '<tool_call>\nnot json at all\n</tool_call>\n<tool_call>\n'
         '{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>',
         content="<tool_call>\nnot json at all\n</tool_call>", calls=[("get_weather", {"location": "Paris"})]),
    Case("fixture-missing-value-end", "xml_params",
         "<tool_call>\n<function=get_weather>\n<parameter=location>\nDallas\n<parameter=unit>\nTX\n</parameter>\n"
         "</function>\n</tool_call>", content="", calls=[("get_weather", {"location": "Dallas", "unit": "TX"})]),
    # Dynamo jamba / mistral / nemotron_deci "mixed calls", the first call broken
    Case("dynamo-jamba#35-broken-first", "hfjs-ai21labs-AI21-Jamba-Large-1.6.jinja",
         '<tool_calls>[{"name": "get_weather", "arguments": {"location": }}, {"name": "get_time", "arguments": '
         '{"timezone": "EST"}}]</tool_calls> done', content='"location": }} done',
         calls=[("get_weather", {}), ("get_time", {"timezone": "EST"})]),
    Case("dynamo-jamba#35-junk-after-args", "hfjs-ai21labs-AI21-Jamba-Large-1.6.jinja",
         '<tool_calls>[{"name": "get_weather", "arguments": {"location": "x"} oops}, {"name": "get_time", '
         '"arguments": {"timezone": "EST"}}]</tool_calls>', content="oops}",
         calls=[("get_weather", {"location": "x"}), ("get_time", {"timezone": "EST"})]),
    Case("dynamo-mistral#35-broken-first", "mistralai-Mistral-Nemo-Instruct-2407.jinja",
         '[TOOL_CALLS][{"name": "get_weather", "arguments": {"location": }}, {"name": "get_time", "arguments": '
         '{"timezone": "EST"}}]', content='{"name": "get_weather", "arguments": {"location": }}',
         calls=[("get_time", {"timezone": "EST"})]),
    # output cut inside a marker
    Case("dynamo-deepseek_v3#09", "vllm-tool_chat_template_deepseekv3.jinja",
         '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{"location": "NYC"}\n```',
         content="", calls=[("get_weather", {"location": "NYC"})]),
    Case("dynamo-harmony#14", "openai-gpt-oss-120b.jinja",
         "<|channel|>commentary to=functions.get_time <|constrain|>json", content="", calls=[("get_time", {})]),
    # vLLM test_qwen3coder_tool_parser: missing </parameter> after the first parameter
    Case("vllm-qwen3_xml#10", "Qwen3-Coder.jinja",
         "Let me check the weather for you:\n<tool_call>\n<function=get_weather>\n<parameter=location>\nDallas\n"
         "<parameter=timezone>\nTX\n</parameter>\n</function>\n</tool_call>",
         content="Let me check the weather for you:", calls=[("get_weather", {"location": "Dallas", "timezone": "TX"})]),
]


@pytest.mark.parametrize("case", CASES, ids=ids(CASES))
def test_malformed(case: Case) -> None:
    check(case)


# ---------------------------------------------------------------- property test over rendered outputs
def _subjects() -> list[tuple[Any, turns.Case]]:
    out = []
    paths = turns.fixture_templates() + turns.corpus_sample(n=12, seed=14)
    for path in paths:
        try:
            tmpl = ChatTemplate.from_file(str(path), bos_token=turns.BOS, eos_token=turns.EOS)
        except Exception:
            continue
        for case in turns.build_cases(path, corpus=path.parent != turns.FIXTURES, only=["tool", "parallel"]):
            try:
                req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
            except Exception:
                continue
            if turns.compare(case.expected, req.parse(case.text).to_dict(), case.text) is None:
                out.append((req, case))
    return out


SUBJECTS = _subjects()
DEVIATIONS = ("reopen", "space", "no_closer", "trailing_text")


def _calls(msg: dict[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for c in msg.get("tool_calls") or []:
        args = c["function"]["arguments"]
        out.append((c["function"]["name"], json.loads(args or "{}") if isinstance(args, str) else args))
    return out


def deviate(req: Any, text: str, kind: str, k: int) -> str:
    plan = req.plan
    t = plan.tools.format if plan.tools is not None else None
    if kind == "reopen" and plan.reasoning.open_at_start and plan.reasoning.start.strip():
        return plan.reasoning.start.strip() + "\n" + plan.reasoning.end.strip() + "\n" + text.lstrip()
    if kind == "space":
        exact = plan.tools.opener.exact if plan.tools is not None else ""
        if exact.strip() and exact in text:
            return text.replace(exact, (" \n", "\n\n", " ")[k % 3] + exact, 1)
        return " \n" + text
    if kind == "no_closer" and t is not None:
        body = text.rstrip()
        for closer in (t.section_end, t.call_end):
            c = closer.strip()
            if c and body.endswith(c) and len(c) >= 3:
                return body[: -len(c)]
        return body
    if kind == "trailing_text":
        return text.rstrip() + "\n\nDone, thanks."
    return text


@pytest.mark.skipif(not SUBJECTS, reason="no subjects")
@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_deviations_keep_the_calls(data: st.DataObject) -> None:
    req, case = data.draw(st.sampled_from(SUBJECTS), label="subject")
    kind = data.draw(st.sampled_from(DEVIATIONS), label="deviation")
    k = data.draw(st.integers(0, 5), label="variant")
    text = deviate(req, case.text, kind, k)
    msg = req.parse(text).to_dict()
    want = _calls({"tool_calls": case.expected.get("tool_calls") or []})
    assert _calls(msg) == want, (case.path.stem, case.scenario, kind, text, msg)
    if kind == "trailing_text":
        assert "Done, thanks." in (msg.get("content") or ""), msg
    sizes = data.draw(st.lists(st.integers(1, 9), min_size=1, max_size=40), label="chunks")
    parts, i = [], 0
    for n in sizes * (len(text) // max(sum(sizes), 1) + 1):
        if i >= len(text):
            break
        parts.append(text[i:i + n])
        i += n
    got = stream(req, parts)
    assert {k2: got.get(k2) for k2 in ("content", "reasoning_content")} == \
        {k2: msg.get(k2) for k2 in ("content", "reasoning_content")}
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in got.get("tool_calls") or []] == \
        [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]
    check_stream(req, text, msg)
