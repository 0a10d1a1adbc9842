"""The grammar IR is the one description the engine, the PEG and the GBNF read (issue 12).

The engine's patterns are compiled from the request's IR (``runtime.engine.compile_tables``):
its content search has one named group per IR content stop, in the IR's order, and the strict
parser's free content ends at exactly the IR's strict stops. The lazy GBNF's trigger is the
IR's. Cached IRs and tables do not keep their plans alive.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate, Request, ir
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
