"""Arguments written as XML child elements, nested values as children again (issue 21).

``templates/xml_child_args.jinja`` writes ``<KEY>VALUE</KEY>``, an object as its members' elements,
an array as ``<item>`` elements and null as an empty element ``<KEY/>``. The layout learns all of it
from the template's own renderings (the own-syntax containers and ``Items.null_item``); the reader,
the strict PEG and the GBNF read it alike, whole or streamed.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from gbnf_check import accepts
from turns import FIXTURES

from autoparser import ChatTemplate
from autoparser.analysis.layout.encode import encode_call
from autoparser.values.nested import parse_own
from autoparser.values.spelling import Items, Values, decode_value, encode_items, schema_types

TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {
    "query": {"type": "string"},
    "since": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "filters": {"type": "object", "properties": {
        "lang": {"type": "string"}, "depth": {"type": "integer"}, "note": {"type": ["string", "null"]},
        "scope": {"type": "object", "properties": {"site": {"type": "string"}}},
        "item": {"type": "array", "items": {"type": "integer"}}}},
    "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["query"]}}}]
USER = [{"role": "user", "content": "Look it up."}]
ARGS: list[dict[str, Any]] = [
    {"query": "tool <parsing> & more", "since": None},
    {"query": "q", "filters": {"lang": "en", "depth": 2, "scope": {"site": "docs"}}},
    {"query": "q", "since": "2024", "filters": {"lang": "en", "note": None, "item": [1, 2]}, "tags": ["alpha"]},
    {"query": "q", "tags": ["alpha", "beta"]},
    {"query": "q", "filters": {"scope": {"site": "a</site>b"}}},
]

OBJECT = Items(item_pre="<", kv=">", item_post="</\x04>", null_item="/>")
ARRAY = Items(item_pre="<item>", item_post="</item>", keyed=False)
XML = Values(nested="own", array=ARRAY, object=OBJECT)


@pytest.fixture(scope="module")
def tmpl() -> ChatTemplate:
    return ChatTemplate.from_file(FIXTURES / "xml_child_args.jinja", bos_token="<s>", eos_token="</s>")


def _call_text(tmpl: ChatTemplate, args: dict[str, Any]) -> str:
    msg = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": args}}]}
    prompt = tmpl.render(USER, tools=TOOLS, add_generation_prompt=True)
    return tmpl.render([*USER, msg], tools=TOOLS)[len(prompt):].split("[/assistant]")[0]   # (the stop string)


def test_the_layout_is_learned_from_the_renderings(tmpl: ChatTemplate) -> None:
    layout = tmpl.analysis.tools.layout
    assert layout is not None and layout.args.items is not None
    items = layout.args.items
    values = items.values
    assert values is not None and values.nested == "own"
    assert (items.item_pre, items.kv, items.item_post, items.null_item) == ("<", ">", "</\x04>\n", "/>\n")
    assert values.object is not None and values.array is not None
    assert (values.object.item_pre, values.object.item_post, values.object.null_item) == ("<", "</\x04>", "/>")
    assert (values.array.item_pre, values.array.item_post, values.array.keyed) == ("<item>", "</item>", False)
    # the learned layout writes the calls exactly as the template does
    for args in ARGS[:4]:
        text = _call_text(tmpl, args)
        assert encode_call(layout, "lookup", "", args) in text


def test_own_containers_read_back() -> None:
    text = "<ko>v w</ko><kn>1</kn><kz/><ka><item>false</item></ka>"
    schema = {"type": "object", "properties": {"ka": {"type": "array"}}}
    assert parse_own(text, XML, schema, schema_types) == {"ko": "v w", "kn": 1, "kz": None, "ka": [False]}
    # no schema: one <item> element is an object's member; two are an array (a key written twice is no object)
    assert parse_own("<item>1</item>", XML) == {"item": 1}
    assert parse_own("<item>1</item>", XML, {"type": "array"}, schema_types) == [1]
    assert parse_own("<item>1</item><item>2</item>", XML) == [1, 2]
    # an empty array or object is written as nothing between its tags: typed by the schema
    assert parse_own("<tags></tags><f></f>", XML, {"type": "object", "properties": {
        "tags": {"type": "array"}, "f": {"type": "object"}}}, schema_types) == {"tags": [], "f": {}}
    # a container with no closing text of its own ends where no key follows (its parent's closing text)
    assert parse_own("<a><b>x</b></a><c/>", XML) == {"a": {"b": "x"}, "c": None}
    value = {"a": {"b": None, "c": [1, "x"]}, "d": None}
    assert encode_items(OBJECT, value.items(), XML) == "<a><b/><c><item>1</item><item>x</item></c></a><d/>"
    assert decode_value(encode_items(OBJECT, value.items(), XML), XML,
                        {"type": "object", "properties": {"a": {"type": "object"}}}) == value


@pytest.mark.parametrize("n", range(len(ARGS)))
def test_calls_read_whole_streamed_strict_and_by_the_gbnf(tmpl: ChatTemplate, n: int) -> None:
    args = ARGS[n]
    text = _call_text(tmpl, args)
    req = tmpl.apply(USER, tools=TOOLS)
    whole = req.parse(text)
    assert [json.loads(c.arguments) for c in whole.tool_calls] == [args]
    assert not (whole.content or "").strip()
    rng = random.Random(n)
    s = req.stream()
    parts = []
    i = 0
    while i < len(text):
        j = i + rng.randint(1, 4)
        parts += s.feed(text[i:j])
        i = j
    parts += s.finish()
    streamed = "".join(d["tool_calls"][0]["function"].get("arguments", "") for d in parts if d.get("tool_calls"))
    assert json.loads(streamed) == args
    strict = req.parse_strict(text)
    assert [json.loads(c.arguments) for c in strict.tool_calls] == [args]
    forced = tmpl.apply(USER, tools=TOOLS, tool_choice="required")
    assert forced.gbnf is not None and accepts(forced.gbnf, text)


def test_malformed_children_stay_text(tmpl: ChatTemplate) -> None:
    """An element left open keeps its text: nothing raises, nothing is lost."""
    req = tmpl.apply(USER, tools=TOOLS)
    text = '<invoke tool="lookup">\n<query>q</query>\n<filters><lang>en</lang><scope><site>docs'
    msg = req.parse(text)
    got = json.loads(msg.tool_calls[0].arguments)
    assert got["query"] == "q" and "docs" in json.dumps(got)
