"""Tool schemas with ``$ref``/``$defs``: local references resolve (GBNF, PEG, argument typing);
anything else raises ``SchemaError``, an ``AutoparserError``, never a bare ``ValueError``."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from gbnf_check import accepts, grammar_error

from autoparser import AutoparserError, ChatTemplate, SchemaError
from autoparser.values.refs import MAX_INLINED_REFS, inline_refs

FIXTURES = Path(__file__).resolve().parents[1] / "templates"
PARAMS = {
    "type": "object",
    "$defs": {
        "Loc": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "Days": {"$ref": "#/definitions/Count"},   # a reference to a reference
    },
    "definitions": {
        "Count": {"type": "integer"},
        "Tree": {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/definitions/Tree"}}}},
    },
    "properties": {"loc": {"$ref": "#/$defs/Loc", "description": "where"}, "days": {"$ref": "#/$defs/Days"},
                   "tree": {"$ref": "#/definitions/Tree"}},
    "required": ["loc", "days"],
}
TOOLS = [{"type": "function", "function": {"name": "forecast", "parameters": PARAMS}}]
USER = [{"role": "user", "content": "Weather?"}]
ARGS = {"loc": {"city": "Paris"}, "days": 3, "tree": {"kids": [{"kids": []}]}}
# every fixture whose arguments are written per key (where a $ref property used to break the grammar)
TAGGED = ("arg_key_value", "call_id_tagged", "minimax_invoke", "xml_params")


def test_inline_refs_resolves_local_references() -> None:
    out = inline_refs(PARAMS)
    props = out["properties"]
    assert props["loc"] == {**PARAMS["$defs"]["Loc"], "description": "where"}
    assert props["days"] == {"type": "integer"}
    tree = props["tree"]   # recursion: expanded once, then a $ref the grammar resolves against the root
    assert tree["properties"]["kids"]["items"] == {"$ref": "#/definitions/Tree"}
    assert out["$defs"] == PARAMS["$defs"] and "$ref" in json.dumps(PARAMS)   # input untouched
    assert inline_refs({"const": {"$ref": "#/nowhere"}}) == {"const": {"$ref": "#/nowhere"}}


def test_inline_refs_is_bounded() -> None:
    # each level refers twice to the next: the full expansion would have 2**40 leaves
    defs = {f"L{i}": {"type": "array", "prefixItems": [{"$ref": f"#/$defs/L{i + 1}"}] * 2} for i in range(40)}
    defs["L40"] = {"type": "integer"}
    out = json.dumps(inline_refs({"$defs": defs, "$ref": "#/$defs/L0"}))
    assert out.count('"$ref"') <= 2 * MAX_INLINED_REFS + 2 and len(out) < 1_000_000


@pytest.mark.parametrize("ref", ["https://example.com/schema.json", "#/$defs/Missing", "#/definitions/Count/9"])
def test_unresolvable_ref_raises_schema_error(ref: str) -> None:
    with pytest.raises(SchemaError) as info:
        inline_refs({"type": "object", "properties": {"x": {"$ref": ref}}})
    assert isinstance(info.value, AutoparserError) and ref in str(info.value)
    bad = [{"type": "function", "function": {"name": "f", "parameters": {
        "type": "object", "properties": {"x": {"$ref": ref}}}}}]
    with pytest.raises(SchemaError) as refused:   # refused at apply(), naming the tool and the keyword
        ChatTemplate.from_file(FIXTURES / "xml_params.jinja").apply(USER, tools=bad, tool_choice="required")
    err = refused.value
    assert (err.tool, err.keyword, err.path) == ("f", "$ref", "properties.x.$ref")
    assert "tool 'f'" in str(err) and "$ref" in str(err)


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.jinja")))
def test_ref_schema_grammar_and_parse(name: str) -> None:
    tmpl = ChatTemplate.from_file(FIXTURES / f"{name}.jinja")
    if not tmpl.analysis.capabilities.tool_calls:
        pytest.skip("the template renders no tool calls")
    req = tmpl.apply(USER, tools=TOOLS, tool_choice="required")
    gbnf = req.gbnf
    assert gbnf and grammar_error(gbnf) == ""
    assert req.peg is not None
    if name not in TAGGED:
        return   # JSON-argument formats: the text below is specific to per-key formats
    turn = tmpl.render([*USER, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "forecast", "arguments": ARGS}}]}], tools=TOOLS)
    prompt = req.prompt
    assert turn.startswith(prompt)
    text = turn[len(prompt):]
    msg = req.parse(text)
    assert [json.loads(c.arguments) for c in msg.tool_calls] == [ARGS], text
    eot = next((m for m in tmpl.analysis.end_of_turn if m and m in text), None)
    assert accepts(gbnf, text[: text.index(eot)] if eot else text), text
