"""The strict PEG parser (``Request.parse_strict``) gives the engine's message on valid output.

For every fixture template and a deterministic sample of the shared corpus, each scenario in
``turns.SCENARIOS`` the template can express (content; reasoning + content; one call; two
calls; content + call; rich, tricky and escaped arguments) is rendered and the model's text is
cut out as the conformance checker does. Where the engine parses it to the known message,
``req.parse_strict(text)`` must give the same message (text compared stripped, arguments as
parsed JSON, ids exactly). Where the engine does not give the known message, the strict parser
only has to return a message or raise ``ParseError``; ``test_agreement_counts`` tallies how
those cases went (same as the engine, right where the engine is wrong, or rejected).

The rest checks what the brief asks of the grammar: corrupted output raises ``ParseError``
with a position while ``req.parse`` still returns a message; ``tool_choice``,
``parallel_tool_calls``, the reasoning prefill, ``continue_final_message``,
``reasoning_format="none"`` and ``response_format`` shape the grammar; tagged values are typed
by the tool's schema; the grammar is printable, parses back, and is built only on demand.
"""

from __future__ import annotations

import collections
import functools
import json
from typing import Any

import pytest
import turns
from parsimonious.grammar import Grammar

from autoparser import ChatTemplate, Message, ParseError, Request

FIXTURE_CASES = [c for p in turns.fixture_templates() for c in turns.build_cases(p)]
CORPUS_CASES = [c for p in turns.corpus_sample() for c in turns.build_cases(p, corpus=True)]
ALL_CASES = FIXTURE_CASES + CORPUS_CASES


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def fixture(name: str) -> ChatTemplate:
    return template(turns.FIXTURES / f"{name}.jinja")


def request(case: turns.Case) -> Request:
    return template(case.path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)


def normal(msg: dict[str, Any]) -> dict[str, Any]:
    """A message dict with stripped text and decoded arguments."""
    return {"content": turns.norm(msg["content"]), "reasoning": turns.norm(msg["reasoning_content"]),
            "calls": [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
                      for c in msg.get("tool_calls") or []]}


@functools.cache
def outcome(case_id: str) -> tuple[str, str]:
    """(kind, detail); kind is ``agree`` / ``tolerated`` / ``strict-right`` / ``strict-error`` / ``disagree``,
    prefixed ``engine-wrong:`` when the engine does not give the known message."""
    case = next(c for c in ALL_CASES if c.id == case_id)
    req = request(case)
    msg = req.parse(case.text)
    engine = msg.to_dict()
    engine_ok = turns.compare(case.expected, engine, case.text) is None
    prefix = "" if engine_ok else "engine-wrong:"
    try:
        strict = req.parse_strict(case.text).to_dict()
    except ParseError as e:
        if set(msg.warnings) - set(req.warnings):
            return prefix + "tolerated", str(e)   # the engine read a deviation it names; the strict parser refuses it
        return prefix + "strict-error", str(e)
    if normal(strict) == normal(engine):
        return prefix + "agree", ""
    if turns.compare(case.expected, strict, case.text) is None:
        return prefix + "strict-right", ""
    return prefix + "disagree", f"strict {strict}\nengine {engine}"


def _params(cases: list[turns.Case]) -> list[Any]:
    """Cases the engine is known to miss (``turns.KNOWN_PARSE``) are strict xfails: they fail on
    the engine's message (an AssertionError; anything else the strict parser raises is an error)."""
    out = []
    for c in cases:
        marks: list[Any] = [pytest.mark.corpus] if c.corpus else []
        why = turns.KNOWN_PARSE.get((c.path.stem, c.scenario))
        if why:
            marks.append(pytest.mark.xfail(strict=True, raises=AssertionError,
                                           reason=f"the engine misses this turn: {why}"))
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


# ---------------------------------------------------------------- agreement with the engine
@pytest.mark.parametrize("case", _params(ALL_CASES))
def test_strict_parse_matches_engine(case: turns.Case) -> None:
    kind, detail = outcome(case.id)   # the strict parser answered with a message or a ParseError
    assert not kind.startswith("engine-wrong:"), (
        f"the engine does not give the known message ({kind}); list it in turns.KNOWN_PARSE\n"
        f"text: {case.text!r}")
    assert kind in ("agree", "tolerated"), f"{kind}: {detail}\ntext: {case.text!r}"


def test_agreement_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """The tally the brief asks for (printed with ``-s``); every engine-correct case agrees."""
    for label, cases in (("fixtures", FIXTURE_CASES), ("corpus sample", CORPUS_CASES)):
        counts = collections.Counter(outcome(c.id)[0] for c in cases)
        with capsys.disabled():
            print(f"\npeg vs engine, {label}: {len(cases)} scenarios, " +
                  ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        assert counts["agree"] + counts["tolerated"] == sum(v for k, v in counts.items()
                                                            if not k.startswith("engine-wrong:"))
    assert FIXTURE_CASES


# ---------------------------------------------------------------- corrupted output
TOOL_FIXTURES = [p.stem for p in turns.fixture_templates()
                 if any(c.scenario == "tool" for c in FIXTURE_CASES if c.path == p)]


def _tool_case(stem: str) -> turns.Case:
    return next(c for c in FIXTURE_CASES if c.path.stem == stem and c.scenario == "tool")


def _unclosed(req: Request, text: str) -> str | None:
    """The call text without its last closing marker (or without the arguments' last brace); None
    when nothing closes a call (``csv_rows``: a call ends with its row of values)."""
    t = req.analysis.tools
    last_piece = t.layout.pieces[-1] if t.layout is not None else None
    layout_end = last_piece.text if last_piece is not None and last_piece.kind == "lit" else ""
    for marker in (t.section_end, t.call_end, t.call_close, layout_end):
        last = marker.split()[-1] if marker.split() else ""
        if last and last in text:
            i = text.rindex(last)
            return text[:i] + text[i + len(last):]
    close = t.literal.close if t.literal is not None else "}"
    return text[:text.rindex(close)] if close in text else None


@pytest.mark.parametrize("stem", TOOL_FIXTURES)
def test_unclosed_call_raises_with_position(stem: str) -> None:
    case = _tool_case(stem)
    req = request(case)
    if outcome(case.id)[0] != "agree":
        pytest.skip("the valid text does not parse strictly either")
    bad = _unclosed(req, case.text)
    if bad is None:
        pytest.skip("nothing closes a call in this format")
    with pytest.raises(ParseError) as info:
        req.parse_strict(bad)
    assert 0 <= info.value.pos <= len(bad)
    assert info.value.line >= 1 and info.value.column >= 1
    assert isinstance(req.parse(bad), Message)


@pytest.mark.parametrize("stem", TOOL_FIXTURES)
def test_unknown_tool_name_raises_at_the_name(stem: str) -> None:
    case = _tool_case(stem)
    req = request(case)
    if outcome(case.id)[0] != "agree":
        pytest.skip("the valid text does not parse strictly either")
    bad = case.text.replace("get_weather", "get_time")
    t = req.analysis.tools
    if not (t.section_start + t.call_start).strip() and not req.plan.tools.opener.role:
        # calls with no marker are found by their names (a bare JSON object by its "name"): an
        # unknown name is text
        assert req.parse_strict(bad).tool_calls == [] and "get_time" in (req.parse(bad).content or "")
        return
    with pytest.raises(ParseError) as info:
        req.parse_strict(bad)
    at = bad.index("get_time")
    assert at - 1 <= info.value.pos <= at, (info.value.pos, at, bad)   # at the name or its quote
    assert isinstance(req.parse(bad), Message)


def test_unfinished_second_call_raises() -> None:
    req = fixture("hermes_json").apply(turns.HISTORIES[1], tools=turns.TOOLS)
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>\n' \
           '<tool_call>\n{"name": "search_docs", "arguments": {"query": '
    with pytest.raises(ParseError) as info:
        req.parse_strict(text)
    assert info.value.pos >= text.rindex("<tool_call>")
    assert len(req.parse(text).tool_calls) == 2     # the engine closes what it was given


# ---------------------------------------------------------------- request options
def _call(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


def _same(req: Request, text: str) -> Message:
    strict = req.parse_strict(text)
    assert normal(strict.to_dict()) == normal(req.parse(text).to_dict())
    return strict


def test_tool_choice_required_needs_a_call() -> None:
    req = fixture("hermes_json").apply(turns.HISTORIES[1], tools=turns.TOOLS, tool_choice="required")
    with pytest.raises(ParseError):
        req.parse_strict("The weather is fine.")
    assert _same(req, _call("get_weather", {"location": "Paris"})).tool_calls[0].name == "get_weather"


def test_named_tool_choice_allows_only_that_tool() -> None:
    choice = {"type": "function", "function": {"name": "search_docs"}}
    req = fixture("xml_params").apply(turns.HISTORIES[1], tools=turns.TOOLS, tool_choice=choice)
    assert '"search_docs"' in req.peg.text and '"get_weather"' not in req.peg.text
    ok = "<tool_call>\n<function=search_docs>\n<parameter=query>\nx\n</parameter>\n</function>\n</tool_call>"
    assert _same(req, ok).tool_calls[0].name == "search_docs"
    with pytest.raises(ParseError):
        req.parse_strict(ok.replace("search_docs", "get_weather"))
    with pytest.raises(ParseError):
        req.parse_strict("No call.")


def test_tool_choice_none_has_no_call_rules() -> None:
    req = fixture("hermes_json").apply(turns.HISTORIES[1], tools=turns.TOOLS, tool_choice="none")
    assert "tool_calls" not in req.peg.text
    text = _call("get_weather", {})
    assert _same(req, text).tool_calls == []


def test_parallel_tool_calls_false_allows_one_call() -> None:
    req = fixture("hermes_json").apply(turns.HISTORIES[1], tools=turns.TOOLS, parallel_tool_calls=False)
    one = _call("get_weather", {"location": "Paris"})
    assert len(_same(req, one).tool_calls) == 1
    with pytest.raises(ParseError):
        req.parse_strict(one + "\n" + _call("search_docs", {"query": "x"}))
    both = fixture("hermes_json").apply(turns.HISTORIES[1], tools=turns.TOOLS)
    assert len(_same(both, one + "\n" + _call("search_docs", {"query": "x"})).tool_calls) == 2


def test_reasoning_prefill_starts_inside_the_block() -> None:
    req = fixture("forced_open_think").apply(turns.HISTORIES[1], tools=turns.TOOLS)
    assert req.plan.reasoning.open_at_start
    assert req.peg.text.startswith("message") and " reasoning " in req.peg.text.splitlines()[0] + " "
    msg = _same(req, "Thinking.\n</think>\n\nParis.")
    assert (msg.reasoning_content, msg.content) == ("Thinking.", "Paris.")
    with pytest.raises(ParseError):
        req.parse_strict("Paris, with the block never closed.")


def test_reasoning_format_none_keeps_reasoning_in_content() -> None:
    req = fixture("qwen3_think_json").apply(turns.HISTORIES[1], reasoning_format="none")
    assert "reasoning" not in req.peg.text
    msg = _same(req, "<think>\nWhy.\n</think>\n\nBecause.")
    assert msg.reasoning_content is None and msg.content == "<think>\nWhy.\n</think>\n\nBecause."
    prefilled = fixture("forced_open_think").apply(turns.HISTORIES[1], reasoning_format="none")
    msg = _same(prefilled, "Why.\n</think>\n\nBecause.")
    assert msg.content is not None and msg.content.startswith("<think>")


def test_continue_final_message() -> None:
    t = fixture("qwen3_think_json")
    req = t.apply([*turns.HISTORIES[1], {"role": "assistant", "content": "The weather"}],
                  continue_final_message=True)
    assert _same(req, " in Paris is mild.").content == "The weather in Paris is mild."
    req = t.apply([*turns.HISTORIES[1], {"role": "assistant", "reasoning_content": "Paris is"}],
                  continue_final_message=True, chat_template_kwargs={"enable_thinking": True})
    msg = _same(req, " in France.\n</think>\n\nMild.")
    assert (msg.reasoning_content, msg.content) == ("Paris is in France.", "Mild.")


def test_response_format_json_schema() -> None:
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
              "required": ["city"], "additionalProperties": False}
    rf = {"type": "json_schema", "json_schema": {"name": "forecast", "schema": schema}}
    req = fixture("hermes_json").apply(turns.HISTORIES[1], response_format=rf)
    assert json.loads(_same(req, '{"city": "Paris", "days": 3}').content or "") == {"city": "Paris", "days": 3}
    assert json.loads(_same(req, '```json\n{"city": "Paris"}\n```').content or "") == {"city": "Paris"}
    for bad in ('{"town": "Paris"}', '{"city": "Paris", "days": "3"}', "Paris", '{"city": "Paris"'):
        with pytest.raises(ParseError):
            req.parse_strict(bad)
    with_tools = fixture("hermes_json").apply(turns.HISTORIES[1], tools=turns.TOOLS, response_format=rf)
    assert _same(with_tools, _call("get_weather", {"location": "Paris"})).tool_calls


# ---------------------------------------------------------------- argument values
def test_tagged_values_are_typed_by_schema() -> None:
    req = fixture("xml_params").apply(turns.HISTORIES[1], tools=turns.TOOLS)
    text = ("<tool_call>\n<function=search_docs>\n<parameter=query>\n007\n</parameter>\n"
            "<parameter=top_k>\n7\n</parameter>\n<parameter=filters>\n{\"exact\": true}\n</parameter>\n"
            "<parameter=code>\nline one\n  \"two\" ü\n</parameter>\n</function>\n</tool_call>")
    msg = _same(req, text)
    args = json.loads(msg.tool_calls[0].arguments)
    assert args == {"query": "007", "top_k": 7, "filters": {"exact": True}, "code": "line one\n  \"two\" ü"}
    assert msg.tool_calls[0].arguments == req.parse(text).tool_calls[0].arguments


def test_json_arguments_pass_through_verbatim() -> None:
    req = fixture("hermes_json").apply(turns.HISTORIES[1], tools=turns.TOOLS)
    raw = '{"query": "caf\\u00e9 \\"q\\"", "top_k": 2.50e1}'
    text = '<tool_call>\n{"name": "search_docs", "arguments": ' + raw + "}\n</tool_call>"
    assert req.parse_strict(text).tool_calls[0].arguments == raw == req.parse(text).tool_calls[0].arguments


def test_python_literal_arguments() -> None:
    req = fixture("python_dict_args").apply(turns.HISTORIES[1], tools=turns.TOOLS)
    text = "<seed:tool_call>{'name': 'search_docs', 'arguments': {'query': 'it\\'s', 'exact': True, " \
           "'since': None}}</seed:tool_call>"
    msg = _same(req, text)
    assert json.loads(msg.tool_calls[0].arguments) == {"query": "it's", "exact": True, "since": None}


# ---------------------------------------------------------------- the grammar itself
def test_grammar_text_is_printable_and_parses_back() -> None:
    for path in turns.fixture_templates():
        req = template(path).apply(turns.HISTORIES[1], tools=turns.TOOLS)
        peg = req.peg
        assert peg.text.startswith("message ") and str(peg) == peg.text
        assert str(Grammar(peg.text)) == str(peg.grammar)
        names = {line.split("=")[0].strip() for line in peg.text.splitlines()}
        assert {"message", "end"} <= names
        if req.tools_active:
            assert {"tool_calls", "call", "call_name"} <= names


def test_grammar_is_built_lazily() -> None:
    req = fixture("xml_params").apply(turns.HISTORIES[1], tools=turns.TOOLS)
    req.parse("Hello")
    assert "peg" not in req.__dict__
    assert req.peg is req.peg
