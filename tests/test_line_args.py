"""Arguments written as ``key: value`` lines / YAML (issue 13 point 3), on the yaml_args fixture.

The analysis finds the encoding from the renders with one and two arguments; values are typed
by the tool's schema (a string stays a string whatever YAML makes of it), read whole or
streamed a character at a time to the same message, cut short into a truncated call that
keeps every character, and read by PyYAML's safe composer only (a tag asking for a Python
object is text, an alias bomb is text).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import synth
from gbnf_check import accepts

from autoparser import ChatTemplate
from autoparser.selftest import self_test
from autoparser.values.yamlargs import yaml_value

FIXTURE = Path(__file__).resolve().parents[1] / "templates" / "yaml_args.jinja"
TOOLS = [{"type": "function", "function": {"name": "book", "parameters": {"type": "object", "properties": {
    "code": {"type": "string"}, "flag": {"type": "string"}, "count": {"type": "integer"},
    "ratio": {"type": "number"}, "exact": {"type": "boolean"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
    "where": {"type": "object", "properties": {"zip": {"type": "string"}, "floor": {"type": "integer"}}},
    "tags": {"type": "array", "items": {"type": "string"}}}, "required": ["code"]}}}]
HISTORY = [{"role": "user", "content": "Book it."}]


@pytest.fixture(scope="module")
def tmpl() -> ChatTemplate:
    return ChatTemplate.from_file(FIXTURE)


def _both(tmpl: ChatTemplate, text: str) -> dict[str, Any]:
    """The message parsed whole, checked equal to the one streamed a character at a time."""
    req = tmpl.apply(HISTORY, tools=TOOLS)
    whole = req.parse(text).to_dict()
    stream = req.stream()
    for ch in text:
        stream.feed(ch)
    stream.finish()
    assert stream.message.to_dict() == whole
    return whole


def _args(msg: dict[str, Any]) -> list[Any]:
    return [json.loads(c["function"]["arguments"]) for c in msg.get("tool_calls") or []]


def _key_value_items(t: ChatTemplate) -> bool:
    """The arguments are read as key/value items: a call layout's items (issue 21), or the key-line
    reader that keeps what layouts do not describe (YAML blocks)."""
    f = t.analysis.tools
    if f.style == "layout":
        return f.layout is not None and f.layout.args.kind == "items" and f.layout.args.items is not None
    return f.args in ("yaml", "kwargs")


def test_the_analysis_reads_key_value_lines(tmpl: ChatTemplate) -> None:
    t = tmpl.analysis.tools
    assert t.args == "yaml" and t.tagged is not None
    assert (t.tagged.prefix, t.tagged.key_suffix, t.tagged.strings_json) == ("\n", ": ", False)
    assert (t.name_prefix, t.name_suffix, t.call_close) == ('<tool_use name="', '">', "\n</tool_use>")
    result = self_test(tmpl)
    assert result.ok and len(result.passed) == 12


def test_values_are_typed_by_the_schema(tmpl: ChatTemplate) -> None:
    text = ('<tool_use name="book">\ncode: 007\nflag: yes\ncount: "12"\nratio: 1e3\nexact: on\nnote: 2024-01-01\n'
            'where:\n  zip: 01234\n  floor: 3\ntags:\n  - 10\n  - "x: y"\n</tool_use>')
    assert _args(_both(tmpl, text)) == [{"code": "007", "flag": "yes", "count": 12, "ratio": 1000.0, "exact": True,
                                        "note": "2024-01-01", "where": {"zip": "01234", "floor": 3},
                                        "tags": ["10", "x: y"]}]


def test_raw_strings_literal_blocks_and_continuation_lines(tmpl: ChatTemplate) -> None:
    text = ('Sure.\n<tool_use name="book">\ncode: |\n  def f(x):\n\n      return x  # done\nflag: a: b # not a comment\n'
            '  and more\n</tool_use>')
    msg = _both(tmpl, text)
    assert msg["content"] == "Sure."
    assert _args(msg) == [{"code": "def f(x):\n\n    return x  # done\n", "flag": "a: b # not a comment\n  and more"}]


def test_a_value_cut_short_is_a_truncated_call_that_keeps_its_text(tmpl: ChatTemplate) -> None:
    cases = {
        '<tool_use name="book">\ncode: abc\nflag: half a val': {"code": "abc", "flag": "half a val"},
        '<tool_use name="book">\ncode: |\n  line one\n  line t': {"code": "line one\nline t\n"},
        '<tool_use name="book">\ncode: x\nwhere: {"zip": "1", "floor": 2, "fl': {"code": "x", "where": {"zip": "1", "floor": 2}},
        '<tool_use name="book">\ncode: x\ncou': {"code": "x"},
        '<tool_use name="book">\ncode: done\n</tool_u': {"code": "done"},
    }
    for text, args in cases.items():
        req = tmpl.apply(HISTORY, tools=TOOLS)
        msg = req.parse(text)
        assert _args(_both(tmpl, text)) == [args], text
        cut = not text.endswith("</tool_u")
        assert msg.truncated == cut and [c.truncated for c in msg.tool_calls] == [cut], text


def test_yaml_is_read_safely() -> None:
    assert yaml_value(" !!python/object/apply:os.system ['echo hi']", {"type": "string"}) \
        == "!!python/object/apply:os.system ['echo hi']"
    assert yaml_value(" !!python/object/apply:os.system ['echo hi']", {}) == ["echo hi"]
    bomb = "\n  a: &a [x, x, x, x, x, x, x, x, x]\n  b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n" \
           "  c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]\n  d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]\n" \
           "  e: [*d, *d, *d, *d, *d, *d, *d, *d, *d]"
    assert isinstance(yaml_value(bomb, {"type": "object"}), str)


def test_strict_parser_and_grammar_agree_with_the_engine(tmpl: ChatTemplate) -> None:
    text = ('<tool_use name="book">\ncode: |-\n  a  b\n    c\nflag: plain  text\nwhere:\n  zip: "75001"\n'
            'tags:\n  - "t"\n</tool_use>')
    req = tmpl.apply(HISTORY, tools=TOOLS, tool_choice="required")
    assert req.parse_strict(text).to_dict() == req.parse(text).to_dict()
    assert req.gbnf is not None and accepts(req.gbnf, text)


@pytest.mark.parametrize("combo", ["chatml-xml-tag-yaml-each-none", "gemma-symbols-label-yaml-comma-think",
                                   "llama3-fence-attribute-yaml-section-prompt_think"])
def test_synthesized_key_value_lines(combo: str) -> None:
    """Indented lines, raw multi-line strings and JSON values as the synthesizer writes them."""
    c = synth.Combo(*combo.split("-"))
    t = ChatTemplate.from_string(synth.render(c))
    assert _key_value_items(t)
    result = self_test(t)
    assert result.ok and len(result.passed) >= 10


# ---------------------------------------------------------------- key=value pairs (Python keyword arguments)
KWARGS = Path(__file__).resolve().parents[1] / "templates" / "kwargs_pairs.jinja"


def _variant(combo: str, line: str) -> str:
    """A synthesized template whose arguments are written by ``line`` (a Jinja expression of k, v, loop)."""
    source = synth.render(synth.Combo(*combo.split("-")))
    written = "'\\n  ' ~ k ~ ': ' ~ (v if v is string else v | tojson)"
    assert written in source
    return source.replace(written, line)


def test_kwargs_pairs_fixture_and_quoted_separators() -> None:
    t = ChatTemplate.from_file(KWARGS)
    fmt = t.analysis.tools
    assert fmt.style == "layout" and fmt.layout is not None and fmt.layout.args.items is not None
    assert (fmt.layout.args.items.kv, fmt.layout.args.items.sep.strip()) == ("=", ";")
    assert self_test(t).ok
    req = t.apply(HISTORY, tools=TOOLS, tool_choice="required")
    text = '<|invoke|>book code="a; flag=b"; flag="it\'s"; exact=True; note=None; count=3; where={"zip": "75001"}<|/invoke|>'
    assert _args(req.parse(text).to_dict()) == [{"code": "a; flag=b", "flag": "it's", "exact": True, "note": None,
                                                 "count": 3, "where": {"zip": "75001"}}]
    assert req.parse_strict(text).to_dict() == req.parse(text).to_dict()
    stream = req.stream()
    for ch in text:
        stream.feed(ch)
    stream.finish()
    assert stream.message.to_dict() == req.parse(text).to_dict()
    cut = req.parse('<|invoke|>book code="a; fla')
    assert cut.truncated and _args(cut.to_dict()) == [{"code": "a; fla"}]


@pytest.mark.parametrize(("combo", "line"), [
    ("chatml-xml-tag-yaml-each-none", "'\\n' ~ k ~ '=' ~ (v if v is string else v | tojson)"),
    ("gemma-fence-label-yaml-section-think", "'\\n    ' ~ k ~ '=' ~ (v | tojson)"),
    ("llama3-symbols-attribute-yaml-comma-none", "('' if loop.first else ', ') ~ k ~ '=' ~ (v | tojson)"),
    ("chatml-brackets-tag-yaml-each-prompt_think", "('' if loop.first else '; ') ~ k ~ ' = ' ~ (v if v is string else v | tojson)"),
])
def test_key_value_pairs_one_per_line_or_separated(combo: str, line: str) -> None:
    t = ChatTemplate.from_string(_variant(combo, line))
    assert _key_value_items(t)
    result = self_test(t)
    assert result.ok and len(result.passed) >= 10


@pytest.mark.parametrize("key", ["parameters", "args", "input", "params"])
def test_json_arguments_under_any_key(key: str) -> None:
    source = synth.render(synth.Combo("chatml", "xml", "json_name", "object", "each", "none"))
    assert '"arguments"' in source
    t = ChatTemplate.from_string(source.replace('"arguments"', f'"{key}"'))
    assert t.analysis.tools.json is not None and t.analysis.tools.json.args_path == (key,)
    result = self_test(t)
    assert result.ok and len(result.passed) >= 10


# ---------------------------------------------------------------- JSON in an attribute, with character references
ATTR = Path(__file__).resolve().parents[1] / "templates" / "attr_json.jinja"


def test_json_arguments_in_an_attribute_with_character_references() -> None:
    t = ChatTemplate.from_file(ATTR)
    f = t.analysis.tools
    assert f.layout is not None and (f.layout.args.kind, f.layout.args.codec) == ("json", "entities(html)")
    assert self_test(t).ok
    req = t.apply(HISTORY, tools=TOOLS, tool_choice="required")
    args = {"code": 'say "hi" & <bye>', "count": 2, "where": {"zip": "75001"}}
    for quote in ("&#34;", "&quot;"):
        escaped = json.dumps(args).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', quote)
        text = f'Sure.\n<invoke tool="book" arguments="{escaped}"/>'
        msg = _both(t, text)
        assert msg["content"] == "Sure." and _args(msg) == [args]
        assert req.parse_strict(text).to_dict() == req.parse(text).to_dict()
        call = text.removeprefix("Sure.\n")      # tool_choice required: the call comes first
        # the grammar writes the template's own character references (&#34;); the reader takes any
        assert req.gbnf is not None and accepts(req.gbnf, call) == (quote == "&#34;") and not accepts(req.gbnf, text)
    cut = req.parse('<invoke tool="book" arguments="{&#34;code&#34;: &#34;a &amp; b&#34;, &#3')
    assert cut.truncated and _args(cut.to_dict()) == [{"code": "a & b"}]


@pytest.mark.parametrize("cut", ["\n-", "\n- n", "\n- name", "\n- name:"])
def test_a_cut_inside_the_next_calls_head_ends_the_value_before_it(cut: str) -> None:
    """Calls no marker closes (a YAML list, each call opening ``\\n- name: ``): output cut inside the
    next call's head leaves the last value whole; the head's text stays in the message."""
    import turns

    path = FIXTURE.parent / "incoming" / "yaml_call_list.jinja"
    case = next(c for c in turns.build_cases(path) if c.scenario == "parallel")
    req = ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS).apply(case.history, tools=case.tools)
    head = case.text.index("\n- name: search_docs")
    msg = req.parse(case.text[:head] + cut).to_dict()
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"location": "Paris, France", "unit": "celsius"}
    assert cut.strip() in (msg["content"] or "")
