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
