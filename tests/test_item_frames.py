"""Items whose object values are written in another frame than their other values (``Items.frames``).

Two drawn formats of ``tests/synth_novel.py`` write an object argument so: ``<KEY>`` ... ``</KEY>``
blocks beside ``KEY value`` lines, and ``KEY {`` ... ``}`` (no ``;`` after it) beside ``KEY value;``.
The frames are learned from the probe renders (no format is named in the code); here each template
renders calls whose objects nest (typed, untyped, among other arguments, first and last), and the
reader (whole and streamed), the strict PEG and the GBNF all read them back.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import synth_novel
from gbnf_check import accepts

from autoparser import ChatTemplate

KEYS = ("apache-angle_role-hr-html_comment-on", "nginx-sharp-lines-blockquote-off")

TOOL = {"type": "function", "function": {"name": "search", "parameters": {"type": "object", "properties": {
    "query": {"type": "string"},
    "filters": {"type": "object", "properties": {"lang": {"type": "string"}, "depth": {"type": "integer"},
                                                 "scope": {"type": "object"}}},
    "opts": {},
    "tags": {"type": "array", "items": {"type": "string"}},
    "limit": {"type": "integer"}}, "required": ["query"]}}}

CASES: list[dict[str, Any]] = [
    {"query": "a b", "filters": {"lang": "en", "depth": 2, "scope": {"site": "docs", "deep": {"n": 1}}}, "limit": 3},
    {"filters": {"lang": "fr"}, "query": "x"},
    {"query": "q", "opts": {"k": "v", "inner": {"flag": True}}},
    {"query": "q", "filters": {"scope": {"site": "s"}}, "tags": ["a", "b"]},
]


def _template(key: str) -> ChatTemplate:
    return ChatTemplate.from_string(synth_novel.render(synth_novel.Novel.parse(key)), name=key)


@pytest.mark.parametrize("key", KEYS)
def test_object_arguments_in_a_frame_of_their_own_are_learned(key: str) -> None:
    tmpl = _template(key)
    layout = tmpl.analysis.tools.layout
    assert layout is not None and layout.args.items is not None
    items = layout.args.items
    assert [f.kind for f in items.frames] == ["object"]
    assert items.values is not None and items.values.object is not None
    assert [f.kind for f in items.values.object.frames] == ["object"]   # (objects inside objects too)


@pytest.mark.parametrize("key", KEYS)
@pytest.mark.parametrize("n", range(len(CASES)))
def test_nested_objects_read_whole_streamed_strict_and_by_the_gbnf(key: str, n: int) -> None:
    tmpl = _template(key)
    args = CASES[n]
    msgs = [{"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "search", "arguments": args}}]}]
    base = [{"role": "user", "content": "go"}]
    head = tmpl.apply(base, tools=[TOOL], add_generation_prompt=True).prompt
    full = tmpl.apply(msgs, tools=[TOOL], add_generation_prompt=False).prompt
    assert full.startswith(head)
    req = tmpl.parser_for(head, tools=[TOOL])
    close = synth_novel.ROLES[synth_novel.Novel.parse(key).roles][1].replace("{role}", "assistant")
    assert full.endswith(close)
    text = full[len(head):len(full) - len(close)]   # (the generated part: up to the end of the turn)
    msg = req.parse(text)
    assert [json.loads(c.arguments) for c in msg.tool_calls] == [args], text
    s = req.stream()
    for i in range(0, len(text), 3):
        s.feed(text[i:i + 3])
    s.finish()
    assert s.message.to_dict() == msg.to_dict()
    assert req.parse_strict(text).to_dict() == msg.to_dict()
    forced = tmpl.parser_for(head, tools=[TOOL], tool_choice="required")
    assert forced.gbnf is not None and accepts(forced.gbnf, text), text
