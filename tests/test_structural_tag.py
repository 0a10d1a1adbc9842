"""``Request.structural_tag()``: xgrammar structural tags spelled exactly as the template renders.

The envelopes are cut from the template's own renderings, so every rendered tool-call turn
of a template that exports must contain each call's ``begin`` and ``end`` verbatim.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate
from autoparser.analysis.layout.model import ArgsLayout
from autoparser.errors import ExportError
from autoparser.grammar.structural_items import items_content, layout_refusal
from autoparser.selftest import PROBE_TOOLS
from autoparser.values.spelling import Items, Slot, Values

TOOL_CASES = [c for p in turns.fixture_templates() for c in turns.build_cases(p) if c.expected.get("tool_calls")]
CORPUS_TOOL_CASES = [c for p in turns.corpus_sample() for c in turns.build_cases(p, corpus=True)
                     if c.expected.get("tool_calls")]


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def _tag(case: turns.Case, **kw: Any) -> dict[str, Any] | None:
    req = template(case.path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None, **kw)
    try:
        return req.structural_tag()
    except ExportError:
        return None


def _call_tags(fmt: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if fmt.get("type") == "tag" and isinstance(fmt.get("begin"), str):   # calls, and argument items inside them
        out.append(fmt)
    for key in ("format", "content", "elements", "tags"):
        value = fmt.get(key)
        for item in value if isinstance(value, list) else [value] if isinstance(value, dict) else []:
            out += _call_tags(item)
    return out


def test_hermes_tag_shape() -> None:
    case = next(c for c in TOOL_CASES if c.path.stem == "hermes_json" and c.scenario == "tool")
    tag = _tag(case)
    assert tag is not None and tag["type"] == "structural_tag"
    fmt = tag["format"]
    assert fmt["type"] == "triggered_tags" and fmt["triggers"] == ["<tool_call>"]
    assert fmt["at_least_one"] is False and fmt["stop_after_first"] is False
    begins = {t["begin"] for t in fmt["tags"]}
    assert '<tool_call>\n{"name": "get_weather", "arguments": ' in begins
    assert {t["end"] for t in fmt["tags"]} == {"}\n</tool_call>"}


def test_tool_choice_shapes_the_tag() -> None:
    case = next(c for c in TOOL_CASES if c.path.stem == "hermes_json" and c.scenario == "tool")
    named = _tag(case, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert named is not None
    space, calls = named["format"]["elements"]      # a required call: white space, then the call
    assert space == {"type": "regex", "pattern": r"[ \t\r\n]*"} and calls["at_least_one"] is True
    assert [t["begin"] for t in calls["tags"]] == ['<tool_call>\n{"name": "get_weather", "arguments": ']
    single = _tag(case, tool_choice="required", parallel_tool_calls=False)
    assert single is not None and single["format"]["elements"][-1]["stop_after_first"] is True
    req = template(case.path).apply(case.history, tools=case.tools, tool_choice="none")
    with pytest.raises(ExportError, match="no tool calls"):
        req.structural_tag()


def test_prompt_opened_reasoning_is_a_required_block() -> None:
    case = next(c for c in TOOL_CASES if c.path.stem == "forced_open_think")
    tag = _tag(case)
    assert tag is not None
    first = tag["format"]["elements"][0]
    assert first["type"] == "tag" and first["begin"] == "" and first["end"].strip() == "</think>"


def test_item_arguments_are_one_tag_per_item() -> None:
    """A call layout's items (``<parameter=K>⏎V⏎</parameter>``) export as one tag per argument."""
    case = next(c for c in TOOL_CASES if c.path.stem == "xml_params")
    req = template(case.path).apply(case.history, tools=case.tools)
    call = req.structural_tag()["format"]["tags"][0]
    assert call["begin"] == "<tool_call>\n<function=get_weather>\n"
    items = call["content"]["tags"]
    assert [(t["begin"], t["end"]) for t in items] == [("<parameter=location>\n", "\n</parameter>\n"),
                                                      ("<parameter=unit>\n", "\n</parameter>\n")]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.id) for c in TOOL_CASES]
                         + [pytest.param(c, id=c.id, marks=pytest.mark.corpus) for c in CORPUS_TOOL_CASES])
def test_envelopes_are_spelled_as_rendered(case: turns.Case) -> None:
    tag = _tag(case)
    if tag is None:
        pytest.skip("this format does not export")
    tags = {t["begin"]: t for t in _call_tags(tag["format"])}
    for call in case.expected["tool_calls"]:
        name = call["function"]["name"]
        found = [t for b, t in tags.items() if json.dumps(name) in b or name in b]
        assert found, (name, list(tags))
        assert found[0]["begin"] in case.text and found[0]["end"] in case.text, (found[0], case.text)


# ------------------------------------------------------------------ layouts (style "layout")
def spelled(values: Values | None = None, **kw: Any) -> Items:
    fields = {"item_pre": "<parameter=", "kv": ">", "item_post": "</parameter>", **kw}
    return Items(values=values or Values(), **fields)


def items(values: Values | None = None, **kw: Any) -> ArgsLayout:
    return ArgsLayout(kind="items", items=spelled(values, **kw))


REFUSED_LAYOUTS = [
    ("Python literals, not as a JSON object", ArgsLayout(kind="python")),
    ("arguments are written inside a string (the json codec)", ArgsLayout(kind="json", codec="json")),
    ("positional values", items(keyed=False)),
    ("names are written with the json codec", items(key=Slot(codec="json"))),
    ("written with the percent codec", items(Values(string=Slot(codec="percent(%20)")))),
    ("no text closes them", items(item_post="", sep=", ", kv="=")),
    ("own-syntax nested objects", items(Values(nested="own"))),
    ("arrays and objects are written inside a string", items(Values(nested_codec="json"))),
    ("not JSON (Python literals)", items(Values(nested="python"))),
]


@pytest.mark.parametrize(("why", "args"), REFUSED_LAYOUTS, ids=[w for w, _ in REFUSED_LAYOUTS])
def test_layout_arguments_refused_with_the_reason(why: str, args: ArgsLayout) -> None:
    assert why in layout_refusal(args)


def test_layout_json_and_items_arguments_are_expressed() -> None:
    assert layout_refusal(ArgsLayout()) == ""
    assert layout_refusal(items()) == ""
    assert layout_refusal(items(Values(string=Slot(codec="json")), item_post="", sep=", ", kv="=")) == ""


def test_items_content_is_one_tag_per_argument() -> None:
    schema = PROBE_TOOLS[0]["function"]["parameters"]        # get_weather: city (required), unit (an enum)
    content = items_content(spelled(Values(string=Slot(pre="<q>", post="</q>"), true="yes")), schema)
    assert content["type"] == "tags_with_separator" and content["at_least_one"] is True
    city, unit = content["tags"]
    assert (city["begin"], city["end"]) == ("<parameter=city>", "</parameter>")
    assert city["content"] == {"type": "tag", "begin": "<q>", "content": {"type": "any_text"}, "end": "</q>"}
    assert unit["content"] == {"type": "or", "elements": [{"type": "const_string", "value": "<q>celsius</q>"},
                                                          {"type": "const_string", "value": "<q>fahrenheit</q>"}]}
    framed = items_content(spelled(open="{", close="}"), {"properties": {"x": {"type": "boolean"}}})
    assert framed["type"] == "or" and framed["elements"][0] == {"type": "const_string", "value": ""}
