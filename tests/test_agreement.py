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
import re
from pathlib import Path
from typing import Any

import pytest
import turns
from gbnf_check import accepts, cfg_accepts, grammar_error

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
                      for c in msg.get("tool_calls") or []]}


#: the GBNF rejects a text the template wrote with unescaped quotes inside argument strings: a template bug
#: (the grammar asks for well-formed strings; README "limits")
UNESCAPED_QUOTES = "gbnf rejects: the template prints an argument string with unescaped quotes"
#: llguidance rejects a text the GBNF matches as a context-free grammar (llama.cpp's semantics): its lexer
#: is greedy and backs off one byte at most (tests/gbnf_check.py)
LEXER_ONLY = "gbnf rejects: llguidance's lexer only (the text matches the grammar as a CFG)"


#: the engine reads the text with a repair it reports (a deviation from the format: tolerance lives in the
#: engine, issue 22) and the strict parser refuses it, as it should
TOLERATED = "tolerated"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def unescaped_quotes(case: turns.Case) -> bool:
    """An argument string holding a double quote appears verbatim, quote unescaped, in the rendered text."""
    args = [c["function"]["arguments"] for c in case.expected.get("tool_calls") or []]
    values = [json.loads(a) if isinstance(a, str) else a for a in args]
    return any('"' in s and s in case.text for s in _strings(values))


def three_way(case: turns.Case) -> str:
    """"agree", "engine-wrong" (nothing to agree on), or what disagrees."""
    tmpl = template(case.path)
    req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
    msg = req.parse(case.text)
    engine = msg.to_dict()
    if turns.compare(case.expected, engine, case.text) is not None:
        return "engine-wrong"
    try:
        strict = req.parse_strict(case.text).to_dict()
    except ParseError as e:
        if set(msg.warnings) - set(req.warnings):
            return TOLERATED      # the engine read a deviation it says it repaired; the strict parser refuses it
        return f"peg rejects: {e}"
    if _normal(strict) != _normal(engine):
        return f"peg differs: {strict} != {engine}"
    if case.expected.get("tool_calls"):
        # the calls come first under tool_choice "required" (after the reasoning); text before them is
        # checked with the "auto" grammar from where it triggers
        choice = "auto" if (case.expected.get("content") or "").strip() else "required"
        forced = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None,
                            tool_choice=choice)
        if forced.gbnf is None or grammar_error(forced.gbnf):
            return "gbnf missing or invalid"
        text = from_trigger(forced.grammar_triggers, case.text)
        if text is None:
            return "gbnf trigger not found"
        if choice == "required":
            text = through_first_stop(text, forced.stop)
        if not accepts(forced.gbnf, text):
            if unescaped_quotes(case):
                return UNESCAPED_QUOTES
            return LEXER_ONLY if cfg_accepts(forced.gbnf, text) else "gbnf rejects"
    return "agree"


def through_first_stop(text: str, stops: tuple[str, ...]) -> str:
    """The text a server generates: it stops at the first stop string (an answer the template renders
    after the calls' end of turn, ``<｜end▁of▁sentence｜><｜Assistant｜>...``, is never sampled)."""
    ends = [i + len(s) for s in stops if s.strip() and (i := text.find(s)) >= 0]
    return text[:min(ends)] if ends else text


def from_trigger(triggers: list[dict[str, str]], text: str) -> str | None:
    """The text a lazy grammar constrains: from the first trigger on (all of it when not lazy)."""
    if not triggers:
        return text
    starts = []
    for t in triggers:
        if t["type"] == "word":
            at = text.find(t["value"])
        else:
            m = re.search(t["value"], text)
            at = m.start() if m else -1
        if at >= 0:
            starts.append(at)
    return text[min(starts):] if starts else None


def _params(cases: list[turns.Case]) -> list[Any]:
    return [pytest.param(c, id=c.id, marks=[pytest.mark.corpus] if c.corpus else []) for c in cases]


@pytest.mark.parametrize("case", _params(FIXTURE_CASES))
def test_fixture_scenarios_agree(case: turns.Case) -> None:
    # (tolerated: the template writes something it does not write for a call object, read as a deviation)
    assert three_way(case) in ("agree", TOLERATED)


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
    disagree = {k: v for k, v in results.items() if v not in ("agree", "engine-wrong", TOLERATED)}
    # the known gaps, by kind; their counts may only go down
    known = FULL_CORPUS_KNOWN if len(CORPUS_PATHS) > 40 else SAMPLE_KNOWN
    found = {kind: [k for k, v in disagree.items() if v == kind] for kind in known}
    unknown = {k: v for k, v in disagree.items() if v not in known}
    assert not unknown, "\n".join(f"{k}: {v[:160]}" for k, v in unknown.items())
    assert all(len(found[kind]) <= n for kind, n in known.items()), found


#: Known disagreements over every corpus template (2026-11-28: 1709 scenarios, 1645 agree, 60 engine-wrong,
#: 4 disagree): rich arguments of templates that print quotes unescaped in strings (LFM2.5, LFM2.5-VL,
#: Llama 4 pythonic, OLMo 3). Any other kind fails, named (``LEXER_ONLY``: llguidance alone rejects).
FULL_CORPUS_KNOWN = {UNESCAPED_QUOTES: 4}
#: ... and in the default sample of 40 templates
SAMPLE_KNOWN = {UNESCAPED_QUOTES: 1}


#: corpus formats the strict parser once read otherwise than the engine: a call start the prompt wrote
#: (Functionary v3.2 ``>>>``), a call end that is an end of turn (Inkling), an argument prefix that begins
#: the call's close (MiniMax-M3 ``<`` and ``</invoke>``), an answer after the calls' end of turn
#: (DeepSeek-R1-Distill); and one whose calls llguidance once rejected in the GBNF: 20 spaces before them,
#: lexed as the whitespace before an optional ``<think>`` (vLLM's DeepSeek-R1 template)
FORMERLY_MISREAD = ("meetkai-functionary-medium-v3.2", "Inkling", "MiniMax-M3", "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B",
                    "vllm-tool_chat_template_deepseekr1.rev-02658c2d")


def _formerly_misread() -> list[turns.Case]:
    shared = turns.shared_dir()
    if shared is None:
        return []
    paths = [shared / "templates" / f"{name}.jinja" for name in FORMERLY_MISREAD]
    return [c for p in paths if p.exists() for c in turns.build_cases(p, corpus=True)]


@pytest.mark.parametrize("case", _params(_formerly_misread()))
def test_formats_the_strict_parser_once_misread(case: turns.Case) -> None:
    assert three_way(case) in ("agree", "engine-wrong")


def test_ir_marks_what_only_the_parser_reads() -> None:
    """Reasoning switched off: the parser tolerates a stray block, the sampler never writes one."""
    req = template(turns.FIXTURES / "qwen3_think_json.jinja").apply(
        [{"role": "user", "content": "hi"}], chat_template_kwargs={"enable_thinking": False})
    g = ir.message_grammar(req.plan)
    message = g["message"]
    assert isinstance(message, ir.Seq)
    assert any(isinstance(p, ir.Tolerated) and "reasoning" in repr(p) for p in message.items)
    assert " reasoning" in req.peg.text.splitlines()[0]
