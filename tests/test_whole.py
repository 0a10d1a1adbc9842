"""The whole-text fast path gives the engine's message, field for field.

``Request.parse(text)`` reads well-formed output in one pass (``runtime/whole.py``:
``WholeReader`` finds the engine's steps, ``MessageBuilder`` builds the message from them) and leaves
everything else to the engine's ``parse_whole``. For every fixture template and a
deterministic sample of the shared corpus, each scenario is parsed under several request
options, then cut at every position between two characters that are not both letters or
digits (an output that stopped early), and corrupted (a marker, a quote, a fence, a comma,
white space of several kinds... inserted at seeded positions). Wherever the fast path gives steps, the message
must equal the engine's exactly: content, reasoning, calls with ids and argument strings,
``invalid`` reasons, flags and warnings. Every whole scenario the engine reads without a
repair (not truncated, not malformed) must take the fast path.
"""

from __future__ import annotations

import functools
import gc
import json
import random
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate, Message, Request
from autoparser.runtime import whole
from autoparser.runtime.whole import whole_steps

FIXTURE_CASES = [c for p in turns.fixture_templates() for c in turns.build_cases(p)]
CORPUS_CASES = [c for p in turns.corpus_sample() for c in turns.build_cases(p, corpus=True)]
OPTIONS: list[dict[str, Any]] = [{}, {"tool_choice": "required"}, {"parallel_tool_calls": False},
                                 {"reasoning_format": "none"}]
INSERTS = ["\n", " ", "\xa0", "\u2028", "\x0b", "\x1c", "```", "<", ">", "[", "]", "{", "}", ",", '"', "\\",
           "\x01", "x", "NaN", "</think>", "<think>", "<tool_call>", "</tool_call>", "<|im_end|>", "[TOOL_CALLS]",
           "<|channel|>"]


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def request(case: turns.Case, **options: Any) -> Request | None:
    try:
        return template(case.path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None,
                                         **options)
    except ValueError:
        return None


def engine_parse(req: Request, text: str) -> Message:
    return req._engine().parse_whole(text)


def fast_parse(req: Request, text: str) -> Message | None:
    """``req.parse``'s well-formed route (None: off it), checked against the steps ``whole_steps`` lists
    and the engine's replay of them."""
    whole = req._whole
    msg = whole.parse(text, req.warnings) if whole is not None else None
    steps = whole_steps(req.plan, text)
    assert (msg is None) == (steps is None)
    if steps is not None:
        assert req._engine().replay(text, steps) == msg
    return msg


def variants(text: str, seed: str) -> list[str]:
    """Cuts between characters that are not both word characters, and seeded insertions."""
    cuts = [text[:k] for k in range(len(text)) if not (text[k - 1:k].isalnum() and text[k].isalnum())]
    rng = random.Random(seed)
    inserted = []
    for snippet in INSERTS:
        for _ in range(2):
            i = rng.randrange(len(text) + 1)
            inserted.append(text[:i] + snippet + text[i:])
    return cuts + inserted


def check(req: Request, text: str) -> str:
    """"fast", "engine", or what differs."""
    fast = fast_parse(req, text)
    if fast is None:
        return "engine"
    engine = engine_parse(req, text)
    return "fast" if fast == engine else f"differs on {text!r}:\n fast   {fast}\n engine {engine}"


# clean outputs on a route the fast path leaves to the engine by design (runtime/whole.py's docstring)
ENGINE_ROUTE = {
    ("react_labels", "reasoning_tool"): "the call's label line ends the reasoning (a call opener inside reasoning)",
    ("reasoning_after_calls", "reasoning"): "the template writes its reasoning after the answer",
    **{("jsonrpc_batch", s): "JSON call objects with a constant member (\"jsonrpc\": \"2.0\") and the id first"
       for s in ("tool", "parallel", "reasoning_tool", "content_tool", "rich_args", "tricky_args", "escaped_args",
                 "empty_args")},
}


def run(case: turns.Case) -> dict[str, int]:
    """Every option, the whole text and its variants; raises on a difference."""
    tally = {"whole fast": 0, "whole engine": 0, "variant fast": 0, "variant engine": 0}
    for options in OPTIONS:
        req = request(case, **options)
        if req is None:
            continue
        result = check(req, case.text)
        assert result in ("fast", "engine"), result
        tally[f"whole {result}"] += 1
        if result == "engine":
            msg = engine_parse(req, case.text)
            # a turn envelope (one JSON object) is always read by its own reader (runtime/envelope.py);
            # a turn the engine reads only as a named deviation (a warning) is off the well-formed route
            assert msg.truncated or msg.malformed or msg.warnings or (case.path.stem, case.scenario) in ENGINE_ROUTE \
                or req.analysis.envelope is not None, \
                f"{case.id} {options}: a clean output left to the engine"
        for text in variants(case.text, case.id + repr(options)):
            result = check(req, text)
            assert result in ("fast", "engine"), result
            tally[f"variant {result}"] += 1
    return tally


def _params(cases: list[turns.Case]) -> list[Any]:
    return [pytest.param(c, id=c.id) for c in cases]


@pytest.mark.parametrize("case", _params(FIXTURE_CASES))
def test_fixture_scenarios_fast_path_equals_engine(case: turns.Case) -> None:
    run(case)


@pytest.mark.corpus
def test_corpus_sample_fast_path_equals_engine(capsys: pytest.CaptureFixture[str]) -> None:
    if not CORPUS_CASES:
        pytest.skip("../shared/templates is not there")
    total: dict[str, int] = {}
    for case in CORPUS_CASES:
        for key, n in run(case).items():
            total[key] = total.get(key, 0) + n
    with capsys.disabled():
        print(f"\nwhole-text fast path, corpus sample: {len(CORPUS_CASES)} scenarios, {total}")
    assert total["whole fast"] > total["whole engine"]


# ---------------------------------------------------------------- the route, case by case
HERMES = turns.FIXTURES / "hermes_json.jinja"
QWEN3 = turns.FIXTURES / "qwen3_think_json.jinja"
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = turns.TOOLS[:1]


def _req(path: Any, **kwargs: Any) -> Request:
    return template(path).apply(USER, tools=TOOLS, **kwargs)


def _call(args: str, name: str = "get_weather") -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n</tool_call>'


@pytest.mark.parametrize("text", [
    _call('{"location": "Paris"}'),
    "Let me look.\n" + _call('{"location": "Paris"}') + "\n" + _call('{"location": "Lyon", "unit": "celsius"}'),
    _call('"{\\"location\\": \\"Paris\\"}"'),                   # arguments as a JSON string
    _call('{"location": "Paris", "unit": "kelvin"}'),           # does not fit the schema: marked by the guard
    _call('{"location": "Paris"}', name="get_time"),            # not one of the tools: the engine reads it
    "```\n" + _call('{"location": "Paris"}') + "\n```",         # quoted in a code fence: content
    "It is sunny.<|im_end|>",
])
def test_well_formed_outputs_take_the_fast_path_and_match(text: str) -> None:
    req = _req(HERMES)
    fast = fast_parse(req, text)
    if "get_time" in text:
        assert fast is None
        return
    assert fast is not None
    assert fast == engine_parse(req, text) == req.parse(text)


def test_guard_reasons_and_warnings_come_out_the_same() -> None:
    req = _req(HERMES)
    text = _call('{"location": "Paris", "unit": "kelvin"}')
    fast = fast_parse(req, text)
    assert fast is not None and fast.tool_calls[0].invalid and fast.warnings
    assert fast == engine_parse(req, text)


@pytest.mark.parametrize("text", [
    _call('{"location": "Par\nis"}'),                  # a raw newline in a string: the engine escapes it
    _call('{"location": "Paris",}'),                   # a trailing comma: the engine drops it
    _call('{"location": NaN}'),                        # not JSON
    _call('{"location": "Paris"}')[:-3],               # the call's end marker cut off
    '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}, "id": 3}\n</tool_call>',
])
def test_outputs_the_engine_repairs_are_left_to_it(text: str) -> None:
    req = _req(HERMES)
    assert fast_parse(req, text) is None
    assert req.parse(text) == engine_parse(req, text)


@pytest.mark.parametrize("text", [
    "<think>\nhm\n</think>\n\nIt is sunny.",
    "hm</think>It is sunny.",                          # the opener left out: still reasoning
    "<think>\nhm\n</think>\n\n" + _call('{"location": "Paris"}'),
])
def test_reasoning_routes_match(text: str) -> None:
    req = _req(QWEN3, chat_template_kwargs={"enable_thinking": True})
    fast = fast_parse(req, text)
    assert fast is not None and fast.reasoning_content == "hm"
    assert fast == engine_parse(req, text)


@pytest.mark.parametrize("text", [
    "<think>\n<think>\nhm\n</think>\n\nIt is sunny.",   # the opener written twice: the engine drops one
    "<think>\nhm <tool_call>\n</think>\n\nIt is sunny.",  # a call marker inside the block
    "<think>\nhm, still thinking",                     # never closed: truncated
])
def test_reasoning_repairs_are_left_to_the_engine(text: str) -> None:
    req = _req(QWEN3, chat_template_kwargs={"enable_thinking": True})
    assert fast_parse(req, text) is None
    assert req.parse(text) == engine_parse(req, text)


def test_streaming_and_partial_parses_still_use_the_engine() -> None:
    req = _req(HERMES)
    text = _call('{"location": "Paris"}')
    s = req.stream()
    deltas = s.feed(text) + s.finish()
    assert deltas and req.parse(text).tool_calls[0].arguments == '{"location": "Paris"}'
    assert req.parse(text[:40], partial=True).truncated


def test_the_per_plan_reader_does_not_keep_the_plan_alive() -> None:
    req = _req(HERMES)
    assert whole_steps(req.plan, _call('{"location": "Paris"}')) is not None
    before = len(whole._readers._values)
    del req
    gc.collect()
    assert len(whole._readers._values) < before


def test_json_arguments_keep_the_model_spelling() -> None:
    req = _req(HERMES)
    args = '{ "location" :"Paris",\n  "unit":"celsius" }'
    msg = req.parse(_call(args))
    assert msg.tool_calls[0].arguments == args and json.loads(args)["unit"] == "celsius"


@pytest.mark.parametrize("final", [
    {"role": "assistant", "content": "The weather in"},
    {"role": "assistant", "reasoning_content": "The user wants", "content": ""},
])
@pytest.mark.parametrize("text", [" Paris is sunny.", " the weather.\n</think>\n\nSunny.",
                                  "\n" + _call('{"location": "Paris"}')])
def test_continued_messages_match(final: dict[str, Any], text: str) -> None:
    req = template(QWEN3).apply([*USER, final], tools=TOOLS, continue_final_message=True,
                                chat_template_kwargs={"enable_thinking": True})
    fast = fast_parse(req, text)
    assert fast is None or fast == engine_parse(req, text)
    assert req.parse(text) == engine_parse(req, text)


def test_arguments_nested_deeper_than_the_decoder_goes_do_not_raise() -> None:
    req = _req(HERMES)
    deep = "[" * 100_000 + "]" * 100_000
    text = _call('{"location": ' + deep + "}")
    assert fast_parse(req, text) is None              # left to the engine, which scans it
    msg = req.parse(text)
    assert msg.tool_calls[0].arguments == '{"location": ' + deep + "}"
    assert msg.tool_calls[0].invalid == "arguments are nested too deeply to check"
    s = req.stream()
    s.feed(text)
    s.finish()
    assert s.message == msg
