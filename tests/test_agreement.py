"""One description, three readers: the engine, the strict PEG and the GBNF agree (issue 12).

All three come from the request plan; the PEG and the GBNF are printed from one grammar IR
(``autoparser.ir``). For every fixture template and a deterministic sample of the
shared corpus, each scenario the template can express is rendered and cut out as the
conformance checker does. Where the engine reads it right, the strict parser gives the same
message, and a tool-call turn is accepted by the request's GBNF under ``tool_choice``
"required" (llguidance over bytes). A figure line per set is printed.

The corpus set is a sample of 40 tool-calling templates by default; ``AUTOPARSER_AGREEMENT_CORPUS=all``
runs every corpus template (under a minute on two cores), ``=N`` a sample of N.
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path
from typing import Any

import pytest
import turns
from gbnf_check import accepts, grammar_error

from autoparser import ChatTemplate, ParseError, ir

FIXTURE_CASES = [c for p in turns.fixture_templates() for c in turns.build_cases(p)]


def corpus_paths() -> list[Path]:
    """The corpus templates to run: ``$AUTOPARSER_AGREEMENT_CORPUS`` "all" (every one) or a sample size."""
    wanted = os.environ.get("AUTOPARSER_AGREEMENT_CORPUS", "40")
    shared = turns.shared_dir()
    if shared is None:
        return []
    if wanted == "all":
        return sorted((shared / "templates").glob("*.jinja"))
    return turns.corpus_sample(int(wanted))


CORPUS_PATHS = corpus_paths()
CORPUS_CASES = [c for p in CORPUS_PATHS for c in turns.build_cases(p, corpus=True)]


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def _normal(msg: dict[str, Any]) -> dict[str, Any]:
    return {"content": turns.norm(msg["content"]), "reasoning": turns.norm(msg["reasoning_content"]),
            "calls": [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in msg["tool_calls"]]}


def three_way(case: turns.Case) -> str:
    """"agree", "engine-wrong" (nothing to agree on), or what disagrees."""
    tmpl = template(case.path)
    req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
    engine = req.parse(case.text).to_dict()
    if turns.compare(case.expected, engine, case.text) is not None:
        return "engine-wrong"
    try:
        strict = req.parse_strict(case.text).to_dict()
    except ParseError as e:
        return f"peg rejects: {e}"
    if _normal(strict) != _normal(engine):
        return f"peg differs: {strict} != {engine}"
    if case.expected.get("tool_calls"):
        forced = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None,
                            tool_choice="required")
        if forced.gbnf is None or grammar_error(forced.gbnf):
            return "gbnf missing or invalid"
        if not accepts(forced.gbnf, case.text):
            return "gbnf rejects"
    return "agree"


def _params(cases: list[turns.Case]) -> list[Any]:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.corpus] if c.corpus else []) for c in cases]


@pytest.mark.parametrize("case", _params(FIXTURE_CASES))
def test_fixture_scenarios_agree(case: turns.Case) -> None:
    assert three_way(case) == "agree"


@pytest.mark.corpus
def test_corpus_agrees_where_the_engine_is_right(capsys: pytest.CaptureFixture[str]) -> None:
    if not CORPUS_CASES:
        pytest.skip("../shared/templates is not there")
    results = {c.id: three_way(c) for c in CORPUS_CASES}
    kinds: dict[str, int] = {}
    for r in results.values():
        kinds[r.split(":")[0]] = kinds.get(r.split(":")[0], 0) + 1
    templates = len({c.path for c in CORPUS_CASES})
    with capsys.disabled():
        print(f"\nengine / PEG / GBNF, corpus ({len(CORPUS_PATHS)} templates, {templates} with scenarios): "
              f"{len(results)} scenarios, {kinds}")
    disagree = {k: v for k, v in results.items() if v not in ("agree", "engine-wrong")}
    if len(CORPUS_PATHS) > 40:
        # every corpus template (2026-11-28: 1709 scenarios, 1624 agree, 60 engine-wrong, 25 disagree):
        # the gaps below are known; the count may only go down
        assert len(disagree) <= FULL_CORPUS_DISAGREEMENTS, "\n".join(f"{k}: {v[:160]}" for k, v in disagree.items())
        return
    # the one known gap: rich arguments of templates that leave quotes unescaped in strings
    # (the grammar asks for well-formed strings; README "limits")
    assert all(v == "gbnf rejects" for v in disagree.values()), disagree
    assert len(disagree) <= 2, disagree


#: Known disagreements over the whole corpus (2026-11-28): the strict parser does not know a call start
#: the prompt wrote (Functionary v3.2, 7 "peg differs"), rejects Inkling's calls (6, "expected call_end")
#: and an assistant header inside the answer (DeepSeek-R1-Distill, 2), reads MiniMax-M3's parallel calls
#: differently (1); the GBNF rejects arguments that templates print with unescaped quotes (9).
FULL_CORPUS_DISAGREEMENTS = 25


def test_ir_marks_what_only_the_parser_reads() -> None:
    """Reasoning switched off: the parser tolerates a stray block, the sampler never writes one."""
    req = template(turns.FIXTURES / "qwen3_think_json.jinja").apply(
        [{"role": "user", "content": "hi"}], chat_template_kwargs={"enable_thinking": False})
    g = ir.message_grammar(req.plan)
    message = g["message"]
    assert isinstance(message, ir.Seq)
    assert any(isinstance(p, ir.Tolerated) and "reasoning" in repr(p) for p in message.items)
    assert " reasoning" in req.peg.text.splitlines()[0]
