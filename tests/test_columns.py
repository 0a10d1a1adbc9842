"""Arguments written as columns: a header row of names, then a row of values (CSV with a header line).

The fixture ``templates/csv_rows.jinja`` writes each call's arguments so; nothing names the format:
the layout learner finds the header row in the two-argument render (keys first, then values), the
value codec (RFC 4180 quoting) and the spellings (null as nothing at all) from probe renders. The
reader, the strict PEG and the GBNF read the same description.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate, ExportError

ROOT = Path(__file__).resolve().parent.parent
TOOLS = [
    {"type": "function", "function": {"name": "search_docs", "description": "Search.", "parameters": {
        "type": "object", "properties": {
            "query": {"type": "string"}, "top_k": {"type": "integer"}, "exact": {"type": "boolean"},
            "since": {"type": ["string", "null"]}, "tags": {"type": "array", "items": {"type": "string"}}},
        "required": ["query"]}}},
    {"type": "function", "function": {"name": "ping", "description": "No arguments.",
                                      "parameters": {"type": "object", "properties": {}}}},
]
HISTORY = [{"role": "user", "content": "Find it."}]


@pytest.fixture(scope="module")
def tmpl() -> ChatTemplate:
    return ChatTemplate.from_file(ROOT / "templates" / "csv_rows.jinja", bos_token="<s>", eos_token="</s>")


def _calls(msg: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg.to_dict().get("tool_calls") or []]


def _streamed(req: Any, text: str) -> list[tuple[str, dict[str, Any]]]:
    s = req.stream()
    for ch in text:
        s.feed(ch)
    s.finish()
    return _calls(s.message)


def test_the_layout_is_columns(tmpl: ChatTemplate) -> None:
    items = tmpl.analysis.tools.layout.args.items
    assert items is not None and items.columns
    assert (items.key_sep, items.kv, items.sep) == (",", "\n", ",")
    assert items.values is not None and (items.values.true, items.values.false, items.values.null) == ("TRUE", "FALSE", "")
    described = tmpl.analysis.to_dict()["tools"]["layout"]["args"]["items"]
    assert described["columns"] is True


@pytest.mark.parametrize(("text", "want"), [
    # quoted values holding the separator and doubled quotes; typed by the schema
    ('@call search_docs #c1\nquery,top_k,exact\n"a, ""b""",3,TRUE',
     {"query": 'a, "b"', "top_k": 3, "exact": True}),
    # the header's order, not the schema's; a value left empty is null, "" is the empty string
    ('@call search_docs #c1\nsince,query\n,""', {"since": None, "query": ""}),
    # an array as quoted JSON; a line break inside a quoted value
    ('@call search_docs #c1\nquery,tags\n"two\nlines","[""x"", ""y""]"', {"query": "two\nlines", "tags": ["x", "y"]}),
])
def test_parse_stream_and_peg_agree(tmpl: ChatTemplate, text: str, want: dict[str, Any]) -> None:
    req = tmpl.apply(HISTORY, tools=TOOLS)
    assert _calls(req.parse(text)) == [("search_docs", want)]
    assert _streamed(req, text) == [("search_docs", want)]
    assert _calls(req.parse_strict(text)) == [("search_docs", want)]


def test_two_calls_and_a_call_without_arguments(tmpl: ChatTemplate) -> None:
    req = tmpl.apply(HISTORY, tools=TOOLS)
    text = "@call ping #c1\n\n@call search_docs #c2\nquery\nweather"
    want = [("ping", {}), ("search_docs", {"query": "weather"})]
    assert _calls(req.parse(text)) == want
    assert _streamed(req, text) == want


def test_rendered_turns_read_back(tmpl: ChatTemplate) -> None:
    """What the template writes for a turn is read back as that turn."""
    args = {"query": 'say "hi", then go', "top_k": 2, "since": None, "exact": False}
    turn = {"role": "assistant", "content": "", "tool_calls": [
        {"id": "c9", "type": "function", "function": {"name": "search_docs", "arguments": args}}]}
    prompt = tmpl.render(HISTORY, tools=TOOLS, add_generation_prompt=True)
    full = tmpl.render([*HISTORY, turn], tools=TOOLS)
    text = full[len(prompt):].removesuffix("\n### end\n")
    req = tmpl.apply(HISTORY, tools=TOOLS)
    assert _calls(req.parse(text)) == [("search_docs", args)]
    assert _streamed(req, text) == [("search_docs", args)]


def test_the_gbnf_accepts_the_rows(tmpl: ChatTemplate) -> None:
    gbnf_check = pytest.importorskip("gbnf_check", reason="llguidance is not installed")
    req = tmpl.apply(HISTORY, tools=TOOLS, tool_choice="required")
    assert req.gbnf is not None
    assert gbnf_check.accepts(req.gbnf, '@call search_docs #c1\nquery,top_k\n"a, b",3')
    assert gbnf_check.accepts(req.gbnf, "@call search_docs #c1\nquery\nplain")
    assert not gbnf_check.accepts(req.gbnf, "@call search_docs #c1\ntop_k\n3")   # query is required


def test_exports_refuse_columns(tmpl: ChatTemplate) -> None:
    with pytest.raises(ExportError) as e:
        tmpl.response_template()
    assert "columns" in str(e.value)
