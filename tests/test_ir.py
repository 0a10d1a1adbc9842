"""The grammar IR is the one description the engine, the PEG and the GBNF read (issue 12).

The engine's patterns are compiled from the request's IR (``runtime.engine.compile_tables``):
its content search has one named group per IR content stop, in the IR's order, and the strict
parser's free content ends at exactly the IR's strict stops. The lazy GBNF's trigger is the
IR's. Cached IRs and tables do not keep their plans alive.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import gc
import weakref
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate, Request, TemplateError, ir
from autoparser import plan as plan_module
from autoparser.runtime import engine

USER = [{"role": "user", "content": "What is the weather in Paris?"}]
OPTIONS: list[dict[str, Any]] = [{}, {"tool_choice": "required"}, {"reasoning_format": "none"},
                                 {"chat_template_kwargs": {"enable_thinking": False}},
                                 {"response_format": {"type": "json_object"}}]


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def requests() -> list[Any]:
    return [pytest.param(p, o, id=f"{p.stem}-{i}") for p in turns.fixture_templates() for i, o in enumerate(OPTIONS)]


def _apply(path: Any, options: dict[str, Any]) -> Request:
    return template(path).apply(USER, tools=turns.TOOLS, **options)


@pytest.mark.parametrize(("path", "options"), requests())
def test_engine_and_peg_read_the_same_content_stops(path: Any, options: dict[str, Any]) -> None:
    req = _apply(path, options)
    g = ir.message_grammar(req.plan)
    tables = engine.tables(req.plan)
    kinds = [s.kind for s in g.content_stops]
    assert len(set(kinds)) == len(kinds)
    groups = list(tables.content.groupindex) if tables.content is not None else []
    assert groups == kinds
    assert [p.pattern for p in tables.content_alts] == [s.source for s in g.content_stops]
    text = g.get("content_text")
    if isinstance(text, ir.Text):
        assert set(text.ends) == {s.node.pattern for s in g.content_stops if s.strict}
    assert engine.start_state(req.plan) == g.begins
    calls = g.tool_calls
    if calls is not None and g.calls == "optional" and g.get("answer") is None:
        assert req.grammar_triggers == [{"type": calls.trigger.type, "value": calls.trigger.value}]


def test_engine_follows_an_edited_ir() -> None:
    """The engine's content search is the IR's stops: drop the call opener from them and the engine
    reads a call as text."""
    req = _apply(turns.FIXTURES / "hermes_json.jinja", {})
    g = ir.message_grammar(req.plan)
    edited = dataclasses.replace(g, content_stops=tuple(s for s in g.content_stops if not s.kind.startswith("t")))
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
    plain, full = engine.compile_tables(edited), engine.compile_tables(g)
    assert plain.content is not None and plain.content.search(text) is None
    m = full.content.search(text) if full.content is not None else None
    assert m is not None and m.lastgroup == "tcall" and m.group() == "<tool_call>"


def test_cached_grammars_and_tables_do_not_keep_plans_alive() -> None:
    req = _apply(turns.FIXTURES / "qwen3_think_json.jinja", {})
    assert ir.message_grammar(req.plan) is ir.message_grammar(req.plan)
    engine.tables(req.plan)
    grammars, tables = len(ir.message_grammar._values), len(engine._tables._values)
    del req
    gc.collect()
    assert len(ir.message_grammar._values) < grammars
    assert len(engine._tables._values) < tables


def test_cached_values_hold_no_plan() -> None:
    """Values shared by output key (IR, tables, whole-text reader, call guard) do not keep their plan alive."""
    req = _apply(turns.FIXTURES / "qwen3_think_json.jinja", {})
    req.parse('<think>\nhm\n</think>\n\n<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n'
              '</tool_call>')
    ref = weakref.ref(req.plan)
    del req
    gc.collect()
    assert ref() is None


def test_requests_with_the_same_output_share_the_ir_and_tables() -> None:
    """A new request whose output may be what an earlier one's was reuses its IR and engine tables,
    however its messages differ; a change to a tool's schema (even its keys' order) does not."""
    path = turns.FIXTURES / "qwen3_think_json.jinja"
    first = template(path).apply(USER, tools=turns.TOOLS)
    again = template(path).apply([*USER, {"role": "assistant", "content": "Sunny."},
                                  {"role": "user", "content": "And in Rome?"}], tools=copy.deepcopy(turns.TOOLS))
    assert first.plan is not again.plan and first.plan.output_key == again.plan.output_key
    assert ir.message_grammar(first.plan) is ir.message_grammar(again.plan)
    assert engine.tables(first.plan) is engine.tables(again.plan)
    assert again.gbnf == first.gbnf and again.peg.text == first.peg.text

    tools = copy.deepcopy(turns.TOOLS)
    props = tools[0]["function"]["parameters"]["properties"]
    tools[0]["function"]["parameters"]["properties"] = dict(reversed(props.items()))
    reordered = template(path).apply(USER, tools=tools)
    assert reordered.plan.output_key != first.plan.output_key
    assert ir.message_grammar(reordered.plan) is not ir.message_grammar(first.plan)
    assert reordered.gbnf != first.gbnf     # the GBNF writes tagged and JSON arguments in declared order

    forced = template(path).apply(USER, tools=turns.TOOLS, tool_choice="required")
    assert ir.message_grammar(forced.plan) is not ir.message_grammar(first.plan)


def test_a_schema_that_is_not_json_is_not_shared() -> None:
    tools = copy.deepcopy(turns.TOOLS)
    tools[0]["function"]["parameters"]["properties"]["location"]["default"] = object()
    req = template(turns.FIXTURES / "qwen3_think_json.jinja").apply(USER, tools=tools)
    assert req.plan.output_key is None
    assert ir.message_grammar(req.plan) is ir.message_grammar(req.plan)


def test_the_shared_values_are_bounded() -> None:
    path = turns.FIXTURES / "hermes_json.jinja"
    keys = []
    for i in range(plan_module.SHARED_SIZE + 5):
        tools = copy.deepcopy(turns.TOOLS)
        tools[0]["function"]["parameters"]["properties"]["location"]["description"] = f"city {i}"
        req = template(path).apply(USER, tools=tools)
        engine.tables(req.plan)
        keys.append(req.plan.output_key)
    assert len(set(keys)) == len(keys)
    for cache in (ir.message_grammar._shared, engine._tables._shared):
        assert cache is not None and len(cache) == plan_module.SHARED_SIZE
        assert keys[0] not in cache and keys[-1] in cache


def test_plans_with_the_same_output_key_build_the_same_ir() -> None:
    """The output key holds all the IR reads: any two plans with equal keys (other messages, other
    templates of the fixtures and a corpus sample) build equal IRs when built apart."""
    by_key: dict[Any, list[Request]] = {}
    histories = [USER, [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi."}, *USER]]
    paths = [*turns.fixture_templates(), *turns.corpus_sample(20)]
    for path in paths:
        for options in OPTIONS:
            for history in histories:
                for tools in (turns.TOOLS, None):
                    try:
                        req = template(path).apply(history, tools=tools, **options)
                    except TemplateError:    # a template that refuses the history
                        continue
                    by_key.setdefault(req.plan.output_key, []).append(req)
    assert any(len(reqs) > 1 for reqs in by_key.values())
    if len(paths) > len(turns.fixture_templates()):
        assert any(len({r.plan.template for r in reqs}) > 1 for reqs in by_key.values())
    for reqs in by_key.values():
        first = ir.build._message_grammar(reqs[0].plan)
        assert all(ir.build._message_grammar(r.plan) == first for r in reqs[1:])
