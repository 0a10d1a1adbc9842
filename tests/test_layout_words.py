"""A call layout in plain words (``analyze``/``debug``) and the markers a layout gives the parser
and the decisions (``Analysis.markers()``, preserved tokens)."""

from __future__ import annotations

import turns

from autoparser import ChatTemplate
from autoparser import markers as mk
from autoparser.analysis.layout.model import ArgsLayout, CallLayout, Piece
from autoparser.analysis.layout.words import codec_words, layout_rows, quoted, values_rows
from autoparser.analysis.model import Analysis, ToolFormat
from autoparser.decisions.row import decide
from autoparser.values.spelling import KEY_AGAIN, Items, Slot, Values

WRAPPED = Values(string=Slot(pre='true">'), number=Slot(pre='false">'), true='false">true', false='false">false',
                 null='false">null', nested_pre='false">')
ITEMS = Items(item_pre="<", kv=">", item_post="</" + KEY_AGAIN + ">", sep="\n",
              values=Values(string=Slot(pre='<|"|>', post='<|"|>'), true="True", nested="own",
                            object=Items(open="{", close="}", sep=", ", kv=": ")))
LAYOUT = CallLayout(pieces=(Piece("lit", "<|invoke|>"), Piece("name"), Piece("lit", mk.HEADER + "<|message|>"),
                            Piece("args"), Piece("lit", "</"), Piece("name_again"), Piece("lit", ">")),
                    args=ArgsLayout(kind="items", items=ITEMS))


def test_literals_are_quoted_and_sentinels_named() -> None:
    assert quoted("\n</parameter>") == '"\\n</parameter>"'
    assert quoted("</" + KEY_AGAIN + ">", item=True) == '"</" KEY ">"'
    assert quoted(" to=" + mk.NAME_WILDCARD) == '" to=" NAME'
    assert quoted(mk.HEADER + "<|message|>") == 'HEADER "<|message|>"'
    assert quoted("") == '""'


def test_codecs_in_words() -> None:
    assert codec_words("raw") == "as they are"
    assert codec_words("json") == "JSON-quoted"
    assert codec_words("percent(%20)") == "percent-encoded (percent(%20))"


def test_layout_rows_say_the_call_items_and_values() -> None:
    rows = dict(layout_rows(LAYOUT))
    assert rows["call"] == '"<|invoke|>" NAME HEADER "<|message|>" ARGS "</" NAME_AGAIN ">"'
    assert rows["arguments"] == 'items: each "<" KEY ">" VALUE "</" KEY ">", separated by "\\n"'
    assert rows["strings"] == '"<|\\"|>" raw text "<|\\"|>"'
    assert rows["booleans"] == '"True" / "false"'
    assert rows["arrays, objects"] == ("in the format's own syntax; object: each KEY \": \" VALUE, "
                                       'separated by ", ", inside "{" ... "}"')
    assert dict(layout_rows(CallLayout(pieces=(Piece("name"), Piece("args")), args=ArgsLayout(codec="json")))) == {
        "call": "NAME ARGS", "arguments": "a JSON object, written inside a string JSON-quoted"}


def test_wrapped_values_in_words() -> None:
    rows = dict(values_rows(WRAPPED))
    assert rows["strings"] == '"true\\">" raw text'
    assert rows["numbers"] == '"false\\">" a JSON number'
    assert rows["null"] == '"false\\">null"'


def test_markers_of_a_layout() -> None:
    a = Analysis(tools=ToolFormat(style="layout", call_start="<|call|>", layout=LAYOUT))
    markers = a.markers()
    assert markers[:2] == ("<|call|>", "<|invoke|>")
    assert '<|"|>' in markers and "<|message|>" in markers        # a value's spelling, a literal piece
    assert not any(m in markers for m in ("</", "<", ">", "True"))   # no letter, or no special-token look
    assert not any(ch in m for m in markers for ch in (KEY_AGAIN, mk.HEADER))


def test_a_layout_fixture_keeps_its_item_markers() -> None:
    tmpl = ChatTemplate.from_file(turns.FIXTURES / "synth_label_params.jinja", bos_token=turns.BOS,
                                  eos_token=turns.EOS)
    assert tmpl.analysis.tools.style == "layout"
    assert {"<parameter=", "</parameter>", "</tool_call>"} <= set(tmpl.analysis.markers())
    assert {"</parameter>", "</tool_call>"} <= set(decide(tmpl).preserved_tokens)
