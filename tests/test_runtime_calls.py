"""Call readers (``runtime/jsoncall.py``, ``runtime/tagged.py``) on formats the fixtures do not cover.

Regressions found while typing the runtime under ``mypy --strict``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from autoparser import merge_deltas
from autoparser.analysis.model import Analysis, LiteralArgs, ToolFormat
from autoparser.plan import RequestOptions, RequestPlan, make_plan
from autoparser.runtime.engine import Engine
from autoparser.values.decode import args_text, typed_value

# Python-call arguments, with the call id written after them (as mistral-common v7 writes it)
_LITERAL_ID_AFTER = ToolFormat(style="tagged", section_start="[TOOL_CALLS]", args="literal",
                               literal=LiteralArgs(open="(", close=")", kv_sep="="),
                               id_position="after_args", id_prefix="[ID]", id_suffix="[/ID]")


def _plan(tools: ToolFormat) -> RequestPlan:
    return make_plan(Analysis(tools=tools), RequestOptions(tools=({"type": "function", "function": {"name": "f"}},)),
                     prompt="")


def _run(spec: RequestPlan, chunks: list[str]) -> tuple[dict[str, Any], Engine]:
    engine = Engine(spec)
    deltas: list[dict[str, Any]] = []
    for chunk in chunks:
        deltas.extend(engine.feed(chunk))
    deltas.extend(engine.finish())
    return merge_deltas(deltas), engine


def test_literal_arguments_with_id_after_them() -> None:
    text = "[TOOL_CALLS]f(a=1)[ID]x1[/ID]"
    for chunks in ([text], list(text)):
        merged, engine = _run(_plan(_LITERAL_ID_AFTER), chunks)
        call = engine.msg.to_dict()["tool_calls"][0]
        assert call["id"] == "x1"
        assert json.loads(call["function"]["arguments"]) == {"a": 1}
        assert merged["tool_calls"][0]["id"] == "x1"


@pytest.mark.parametrize("text", ["[TOOL_CALLS]f(a=1", "[TOOL_CALLS]f(a=1, b="])
def test_regression_literal_arguments_cut_before_a_trailing_id(text: str) -> None:
    """Output ending inside literal arguments whose id comes after them raised TypeError
    (the call was marked truncated before it had been announced)."""
    for chunks in ([text], list(text)):
        merged, engine = _run(_plan(_LITERAL_ID_AFTER), chunks)
        assert engine.msg.truncated
        assert [c.truncated for c in engine.msg.tool_calls] == [True]
        call = engine.msg.to_dict()["tool_calls"][0]
        assert call["function"]["name"] == "f"
        assert json.loads(call["function"]["arguments"]) == {"a": 1}
        assert merged["tool_calls"][0]["function"]["arguments"] == call["function"]["arguments"]


def test_public_value_helpers() -> None:
    """``args_text`` and ``typed_value`` (shared by the engine and the PEG mapper)."""
    assert args_text("{'a': True}", True) == '{"a": true}'
    assert typed_value(" 3 ", {"type": "integer"}) == "3"
    assert typed_value("3", {"type": "string"}) == '"3"'


@pytest.mark.parametrize("text", ["<invoke>", "Sure. <invoke>", "<invoke> then text"])
def test_a_call_marker_in_another_spelling_that_opens_no_call_stays_text(text: str) -> None:
    """kwargs_pairs writes ``<|invoke|>``; ``<invoke>`` (its pipes dropped) followed by no call is the
    model's text, whole (no character lost), parsed and streamed alike."""
    from pathlib import Path

    import turns

    from autoparser import ChatTemplate

    path = Path(__file__).resolve().parents[1] / "templates" / "kwargs_pairs.jinja"
    case = next(c for c in turns.build_cases(path) if c.scenario == "tool")
    req = ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS).apply(case.history, tools=case.tools)
    msg = req.parse(text)
    assert "<invoke>" in (msg.content or "") or any(c.invalid for c in msg.tool_calls)
    if not msg.tool_calls:
        assert msg.content == text
