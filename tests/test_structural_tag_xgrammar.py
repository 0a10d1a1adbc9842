"""Structural tags compiled by xgrammar (opt-in: xgrammar comes with the vLLM virtualenv that
``.ci/vllm.sh`` builds; a plain ``pytest`` without it skips this module).

For every fixture and corpus-sample template whose tool calls export, the tag for
``tool_choice="required"`` compiles, accepts the template's own rendering of one and two calls
(reasoning block included when the prompt allows one), and rejects an answer with no call and a
call whose argument has the wrong type.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate
from autoparser.errors import ExportError
from autoparser.grammar.structural_items import items_content
from autoparser.values.spelling import KEY_AGAIN, Items, Slot, Values, encode_items

xgr = pytest.importorskip("xgrammar", reason="xgrammar is not installed (.ci/vllm.sh runs this in its venv)")
accepts = pytest.importorskip("xgrammar.testing")._is_grammar_accept_string

CASES = [c for p in turns.fixture_templates() for c in turns.build_cases(p, only=["tool", "parallel"])] + \
    [c for p in turns.corpus_sample() for c in turns.build_cases(p, corpus=True, only=["tool", "parallel"])]


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def test_structural_tags_compile_accept_renderings_and_reject_corruptions(capsys: pytest.CaptureFixture[str]) -> None:
    exported = accepted = rejected = 0
    problems: list[str] = []
    for case in CASES:
        req = template(case.path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None,
                                        tool_choice="required")
        try:
            tag = req.structural_tag()
        except ExportError:
            continue
        exported += 1
        grammar = xgr.Grammar.from_structural_tag(json.dumps(tag))
        if accepts(grammar, case.text):
            accepted += 1
        else:
            problems.append(f"{case.id}: rendering rejected {case.text[:120]!r}")
        wrong = case.text.replace('"Paris, France"', "12345", 1)
        if wrong != case.text and not accepts(grammar, wrong) and not accepts(grammar, "No call needed."):
            rejected += 1
    with capsys.disabled():
        print(f"\n[structural tag] {exported} tool scenarios export; {accepted} renderings accepted; "
              f"{rejected} corruptions rejected")
    assert exported > 10 and not problems, problems[:10]
    assert rejected > 0


# layout items: one tag per argument, each value spelled as the layout's Values say
ITEM_LAYOUTS = {
    "params": Items(item_pre="<parameter=", kv=">\n", item_post="\n</parameter>\n", values=Values()),
    "key_again": Items(item_pre="<", kv=">", item_post="</" + KEY_AGAIN + ">", values=Values()),
    "wrapped": Items(item_pre='<param name="', kv='" string="', item_post="</param>", sep="\n",
                     values=Values(string=Slot(pre='true">'), number=Slot(pre='false">'), true='false">true',
                                   false='false">false', null='false">null', nested_pre='false">')),
    "pairs": Items(kv="=", sep=", ", open="(", close=")",
                   values=Values(string=Slot(codec="json"), true="True", false="False", null="None")),
}


def test_layout_items_accept_their_writing_and_reject_wrong_types() -> None:
    from autoparser.selftest import _ALL_ARGUMENTS, PROBE_TOOLS

    schema = next(t["function"]["parameters"] for t in PROBE_TOOLS if t["function"]["name"] == "lookup")
    for name, items in ITEM_LAYOUTS.items():
        content = items_content(items, schema)
        tag = {"type": "structural_tag", "format": {"type": "tag", "begin": "<call>", "content": content,
                                                     "end": "</call>"}}
        grammar = xgr.Grammar.from_structural_tag(json.dumps(tag))
        text = "<call>" + encode_items(items, _ALL_ARGUMENTS.items()) + "</call>"
        assert accepts(grammar, text), (name, text)
        assert not accepts(grammar, "<call></call>"), name      # query is required
        wrong = "<call>" + encode_items(items, {**_ALL_ARGUMENTS, "top_k": "seven"}.items()) + "</call>"
        assert not accepts(grammar, wrong), (name, wrong)
