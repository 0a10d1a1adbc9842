"""Arrays and objects written as YAML blocks below their key (nested ``"yaml"``), and shell words
whose quotes hold a call marker (issue 21: drawn formats ``yaml-json-*-native``, ``shell-shell``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.analysis.layout.spellings import block_after
from autoparser.runtime.items import ItemsReader
from autoparser.values.codecs import Codec
from autoparser.values.spelling import Items, Slot, Values, decode_value, encode_items, nested_text
from autoparser.values.yamlblock import block_spec, parse_block

sys.path.insert(0, str(Path(__file__).parent))

YAML = Values(string=Slot("", "", "json"), true="on", false="off", null="~", nested="yaml")
ITEMS = Items(sep="\n", kv=": ", values=YAML)


@pytest.mark.parametrize("value", [
    {"lang": "en", "depth": 2, "scope": {"site": "docs", "tags": ["a b", 3, True, None]}},
    ["alpha", "beta"],
    [[1, 2], [False], {"k": "v"}],
    {"empty": {}, "none": [], "quote": 'say "hi": now'},
])
def test_block_round_trip(value: Any) -> None:
    text = nested_text(value, "yaml", "", YAML)
    assert text.startswith("\n  ")
    assert decode_value(text, YAML, None) == value


def test_items_drop_the_separators_space_before_a_block() -> None:
    text = encode_items(ITEMS, [("query", "x"), ("filters", {"lang": "en"}), ("on", True)])
    assert text == 'query: "x"\nfilters:\n  lang: "en"\non: on'
    assert block_after(text, text.index("filters") + len("filters"), ": ")
    assert not block_after(text, text.index("query") + len("query"), ": ")


def test_compact_sequence_of_mappings_and_schema_types() -> None:
    text = '\n  - lang: "en"\n    depth: 2\n  - lang: "fr"'
    schema = {"type": "array", "items": {"type": "object", "properties": {"depth": {"type": "string"}}}}
    assert decode_value(text, YAML, schema) == [{"lang": "en", "depth": "2"}, {"lang": "fr"}]


@pytest.mark.parametrize("text", ["\n  a: 1\n b: 2", "\n  - 1\n  a: 2", "\n\ta: 1", "\n  a: 1\n      b: 2"])
def test_text_that_is_no_block_reads_as_none(text: str) -> None:
    assert parse_block(text, lambda t, p: t) is None


def test_deep_nesting_is_bounded() -> None:
    text = "".join("\n" + "  " * (i + 1) + f"k{i}:" for i in range(200)) + " 1"
    assert parse_block(text, lambda t, p: t) is None   # deeper than MAX_DEPTH: no block, no recursion error


def test_block_spec() -> None:
    assert block_spec("yaml") == (2, 2)
    assert block_spec("yaml(4,2)") == (4, 2)
    assert block_spec("json") is None
    assert nested_text({"a": {"b": 1}}, "yaml(4,4)", "", YAML) == "\n    a:\n        b: 1"


def _read(text: str, items: Items, schema: dict[str, Any], chunk: int) -> str:
    out: list[str] = []
    reader = ItemsReader(out.append, items, schema, (r"(?!)", r"\s*\Z"))
    buf = ""
    pos = 0
    for i in range(0, len(text), chunk):
        buf += text[i:i + chunk]
        pos = reader.step(buf, pos, False)[1]
    reader.step(buf, pos, True)
    return "".join(out)


@pytest.mark.parametrize("chunk", [1, 3, 1000])
def test_reader_reads_blocks_whole_and_streamed(chunk: int) -> None:
    schema = {"type": "object", "properties": {"query": {"type": "string"}, "filters": {"type": "object"},
                                               "tags": {"type": "array"}}}
    args = {"query": "q", "filters": {"lang": "en", "scope": {"site": "docs"}}, "tags": ["a", "b"]}
    text = encode_items(ITEMS, list(args.items()))
    assert json.loads(_read(text, ITEMS, schema, chunk)) == args


SHELL = Items(sep=" ", item_pre="--", kv=" ", values=Values(string=Slot("", "", "shell(sq,bs)")))


@pytest.mark.parametrize("chunk", [1, 2, 1000])
def test_shell_word_quotes_hold_what_follows_a_call(chunk: int) -> None:
    """The call's end (here ``#``) inside a quoted part of a shell word does not end the value."""
    schema = {"type": "object", "properties": {"code": {"type": "string"}, "n": {"type": "integer"}}}
    text = "--code 'def f():\n  return 1  # it'\\''s fine' --n 3"
    out: list[str] = []
    reader = ItemsReader(out.append, SHELL, schema, (r"\s*#", r"\s*#|\s*\Z"))
    buf, pos = "", 0
    for i in range(0, len(text), chunk):
        buf += text[i:i + chunk]
        pos = reader.step(buf, pos, False)[1]
    reader.step(buf, pos, True)
    assert json.loads("".join(out)) == {"code": "def f():\n  return 1  # it's fine", "n": 3}


def test_shell_decoder_says_when_inside_a_quote() -> None:
    dec = Codec.from_spec("shell(sq,bs)").decoder()
    seen = []
    for ch in "a'b c'd":
        dec.feed(ch)
        seen.append(dec.inside)
    assert seen == [False, True, True, True, True, False, False]


TEMPLATE = Path(__file__).parents[1] / "templates" / "yaml_block_args.jinja"


@pytest.mark.skipif(not TEMPLATE.is_file(), reason="fixture not present")
def test_fixture_reads_nested_blocks() -> None:
    from autoparser.selftest import self_test
    tmpl = ChatTemplate.from_file(TEMPLATE)
    assert tmpl.analysis.tools is not None and tmpl.analysis.tools.layout is not None
    items = tmpl.analysis.tools.layout.args.items
    assert items is not None and items.values is not None and items.values.nested == "yaml"
    result = self_test(tmpl)
    assert result.ok and not result.failures
