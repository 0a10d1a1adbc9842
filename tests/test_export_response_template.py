"""The transformers ``response_template`` export agrees with ``Request.parse``.

For every template that exports (our fixtures, and the 70 key templates of
``../shared`` when present), each self-test scenario (content, reasoning, one call,
two calls, content before a call, reasoning before a call) is rendered by the
template, and transformers' own ``parse_response(text, template, prefix=prompt,
tools=tools)`` must give the message ``req.parse(text)`` gives: the same reasoning
(``thinking``), content, tool names and arguments (ids are not exported). The text
is also tried with a trailing newline and with the end-of-turn marker a server may
leave in, and fed in chunks through transformers' streaming ``ResponseParser``.
Templates that cannot be exported raise ``ExportError`` with a documented reason.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
from pathlib import Path
from typing import Any

import pytest
import turns

from autoparser import AutoparserError, ChatTemplate, ExportError
from autoparser.analysis.layout.encode import encode_call
from autoparser.analysis.layout.model import ArgsLayout, CallLayout, Piece
from autoparser.analysis.model import (
    Analysis,
    Capabilities,
    EnvelopeFormat,
    JsonLayout,
    LiteralArgs,
    ReasoningFormat,
    TaggedArgs,
    ToolFormat,
)
from autoparser.errors import AnalysisError
from autoparser.export import REASONS, response_template
from autoparser.selftest import HISTORIES, PROBE_TOOLS, ScenarioResult, self_test
from autoparser.values.spelling import KEY_AGAIN, Items, Slot, Values

chat_parsing = pytest.importorskip(
    "transformers.utils.chat_parsing",
    reason="transformers >= 5.24 (pip install 'autoparser[hf]') is needed to check exported response templates")

SHARED = turns.shared_dir()
KEY_FILE = SHARED / "conformance" / "key-templates.txt" if SHARED else None
KEY: list[str] = [line.strip() for line in KEY_FILE.read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.startswith("#")] if KEY_FILE and KEY_FILE.is_file() else []

# fixture -> the reason its export is refused
REFUSED_FIXTURES = {
    "delimiter_reasoning.jinja": "reasoning-without-opener",
    "name_as_key.jinja": "name-as-key",
    "python_dict_args.jinja": "python-args",
    "pythonic_bare.jinja": "no-call-opener",      # the call starts with the tool's name
    "yaml_args.jinja": "yaml-args",
    "kwargs_pairs.jinja": "python-values",        # a layout: arrays and objects with True/None inside
    "attr_json.jinja": "html-escaped",
    "label_blank_line.jinja": "blank-line-closer",
    "json_turn.jinja": "json-envelope",
    "synth_fence_invoke_string.jinja": "string-args",   # JSON arguments inside a JSON string
    "synth_fullwidth_string.jinja": "string-args",
    # issue 21's encodings: nested arrays and objects in the format's own syntax, values escaped as
    # XML entities, calls that start with the tool's name
    "edn_vector.jinja": "own-nested",
    "hcl_blocks.jinja": "own-nested",
    "lua_call_sugar.jinja": "own-nested",
    "nix_attrs.jinja": "own-nested",
    "xml_attr_args.jinja": "value-codec",
    "xmlrpc_calls.jinja": "value-codec",
    "ini_sections.jinja": "no-call-opener",
}
# key template -> the reason its export is refused
REFUSED_KEY = {
    "Apertus-8B-Instruct.jinja": "name-as-key",
    "MiniMax-M3.jinja": "nested-tagged",
    "meetkai-functionary-medium-v3.2.jinja": "no-call-opener",
    "ByteDance-Seed-OSS.jinja": "python-values",
    "google-gemma-4-31B-it.jinja": "python-values",
    "google-gemma-4-31B-it-interleaved.jinja": "python-values",
    "LFM2.5-8B-A1B.jinja": "unescaped-strings",
    "openbmb-MiniCPM5-1B.jinja": "cdata-values",
}
MIN_KEY_EXPORTED = 60
# key templates whose exported response_template reads some turns differently from req.parse (strict:
# the test fails when they agree again, so the entry is removed)
KNOWN_DISAGREE: dict[str, str] = {}


def _tools_parser(text: str, template: dict[str, Any], prompt: str, chunk: int = 0) -> dict[str, Any]:
    if not chunk:
        return dict(chat_parsing.parse_response(text, template, prefix=prompt, tools=PROBE_TOOLS))
    parser = chat_parsing.ResponseParser(template, prompt, tools=PROBE_TOOLS)
    for i in range(0, len(text), chunk):
        parser.feed(text[i:i + chunk])
    message, _ = parser.finalize()
    return dict(message)


def normalize(msg: dict[str, Any]) -> dict[str, Any]:
    """Reasoning, content (stripped) and calls (name, parsed arguments); ids dropped."""
    calls = []
    for c in msg.get("tool_calls") or []:
        fn = c.get("function", c)
        args = fn.get("arguments")
        if isinstance(args, str):
            with contextlib.suppress(ValueError):
                args = json.loads(args)
        calls.append((fn.get("name"), args))
    reasoning = msg.get("thinking") or msg.get("reasoning_content") or ""
    return {"reasoning": reasoning.strip(), "content": (msg.get("content") or "").strip(), "calls": calls}


@functools.cache
def _template(path: Path) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def _request(tmpl: ChatTemplate, sc: ScenarioResult) -> Any:
    """The request the self-test parsed ``sc`` with (same history, tools and kwargs)."""
    tools = PROBE_TOOLS if any(s.name == sc.name and s.tools for s in _scenarios()) else None
    for history in HISTORIES:
        try:
            req = tmpl.apply(history, tools=tools, chat_template_kwargs=sc.kwargs or None)
        except AutoparserError:   # the template refuses this history (no system role)
            continue
        if req.prompt == sc.prompt:
            return req
    raise AssertionError(f"{sc.name}: no history renders the self-test's prompt")


@functools.cache
def _scenarios() -> tuple[Any, ...]:
    from autoparser.selftest import SCENARIOS

    return SCENARIOS


def disagreements(path: Path) -> tuple[int, list[str]]:
    """(comparisons made, what disagreed) for one exportable template."""
    tmpl = _template(path)
    template = tmpl.response_template()
    checked, bad = 0, []
    for sc in self_test(tmpl, stream=False).scenarios:
        if sc.status == "n/a" or not sc.prompt:
            continue
        req = _request(tmpl, sc)
        # a server stops at the first end of turn: it is appended only when the text has none
        eot = [e for e in tmpl.analysis.end_of_turn[:1] if not sc.text.rstrip().endswith(e.strip())]
        variants = [sc.text, sc.text + "\n", *(sc.text + e for e in eot)]
        for text in dict.fromkeys(variants):
            want = normalize(req.parse(text).to_dict())
            for chunk in (0, 3):
                checked += 1
                try:
                    got = normalize(_tools_parser(text, template, sc.prompt, chunk))
                except ValueError as e:
                    bad.append(f"{sc.name} {text!r} (chunk {chunk}): transformers raised {e}")
                    continue
                if got != want:
                    bad.append(f"{sc.name} {text!r} (chunk {chunk}): transformers {got} != autoparser {want}")
    return checked, bad


def serving_problems(template: dict[str, Any]) -> list[str]:
    """vLLM's and SGLang's checks on a response template served with the ``hf`` parsers."""
    problems = []
    fields = template["fields"]
    if set(fields) - {"thinking", "content", "tool_calls"}:
        problems.append(f"fields {sorted(fields)}")
    if set(template.get("defaults", {})) - {"role"}:
        problems.append("defaults other than role")
    for name in ("thinking", "content"):
        f = fields.get(name)
        if f is not None and (f.get("content", "text") != "text" or "transform" in f or "join" in f):
            problems.append(f"{name} is not plain text")
    calls = fields.get("tool_calls")
    if calls is not None and not ("open" in calls or "open_pattern" in calls):
        problems.append("tool_calls has no opener")
    if "start_anchor" not in template and "start_anchor_pattern" not in template:
        problems.append("no start anchor")
    return problems


# ------------------------------------------------------------------ fixtures
FIXTURES = turns.fixture_templates()


@pytest.mark.parametrize("path", [p for p in FIXTURES if p.name not in REFUSED_FIXTURES], ids=lambda p: p.name)
def test_fixture_export_agrees(path: Path) -> None:
    template = _template(path).response_template()
    assert not serving_problems(template)
    chat_parsing.response_templates.load_response_template(template)
    checked, bad = disagreements(path)
    assert checked and not bad, "\n".join(bad)


@pytest.mark.parametrize("name", sorted(REFUSED_FIXTURES))
def test_fixture_export_refused(name: str) -> None:
    with pytest.raises(ExportError) as info:
        _template(turns.FIXTURES / name).response_template()
    assert info.value.reason == REFUSED_FIXTURES[name]
    assert name in str(info.value) and REASONS[info.value.reason] in str(info.value)


def test_export_is_json_and_names_thinking() -> None:
    template = _template(turns.FIXTURES / "qwen3_think_json.jinja").response_template()
    assert json.loads(json.dumps(template)) == template
    assert template["version"] == 1 and template["defaults"] == {"role": "assistant"}
    assert set(template["fields"]) == {"thinking", "tool_calls", "content"}
    assert template["fields"]["thinking"]["close"] == "</think>"   # a literal: vLLM tokenizes it
    assert "open" not in template["fields"]["content"]             # the implicit field


# ------------------------------------------------------------------ ExportError reasons (unit)
def _analysis(**tools: Any) -> Analysis:
    reasoning = tools.pop("reasoning", ReasoningFormat())
    return Analysis(template="unit.jinja", generation_prompt="<|im_start|>assistant\n",
                    assistant_header="<|im_start|>assistant", end_of_turn=("<|im_end|>",),
                    reasoning=reasoning, tools=ToolFormat(**tools) if tools else ToolFormat())


REFUSALS = {
    "reasoning-without-opener": _analysis(reasoning=ReasoningFormat(mode="delimiter", end="[END]")),
    "blank-line-closer": _analysis(reasoning=ReasoningFormat(mode="tagged", start="Thought: ", end="\n\n")),
    "name-as-key": _analysis(style="json", json=JsonLayout(name_is_key=True), call_start="<tool_call>"),
    "markerless-parallel": Analysis(
        template="unit.jinja", assistant_header="<|im_start|>assistant",
        capabilities=Capabilities(tool_calls=True, parallel_tool_calls=True),
        tools=ToolFormat(style="json", json=JsonLayout(), name_prefix='{"name": ')),
    "no-call-opener": _analysis(style="tagged", separator=">>>", name_suffix="\n"),
    "html-escaped": _analysis(style="json", json=JsonLayout(), section_start="[TOOL_CALLS][", section_end="]",
                              name_prefix='{&#34;name&#34;: '),
    "name-in-id": _analysis(style="tagged", call_start="<|call|>", name_prefix="functions.",
                            name_in_id=r"functions\.(?P<name>\w+):\d+"),
    "id-after-args": _analysis(style="tagged", call_start="[CALL]", id_position="after_args", id_prefix="[ID]"),
    "python-args": _analysis(style="json", json=JsonLayout(), call_start="<tool_call>", python_literals=True),
    "bare-strings": _analysis(style="tagged", call_start="<|tool_call>", name_prefix="call:", args="literal",
                              literal=LiteralArgs(bare_strings=True)),
    "literal-style": _analysis(style="tagged", call_start="<call>", args="literal",
                               literal=LiteralArgs(open="(", close=")", kv_sep="=")),
    "nested-tagged": _analysis(style="tagged", call_start="<invoke>", args="tagged",
                               tagged=TaggedArgs(prefix="<", key_suffix=">", value_end="</\x04>")),
    "tagged-separator": _analysis(style="tagged", call_start="<call>", args="tagged",
                                  tagged=TaggedArgs(prefix="<arg ", key_suffix=">", value_end="</arg>",
                                                    separator=";")),
    "no-anchor": Analysis(template="unit.jinja",
                          reasoning=ReasoningFormat(mode="tagged", start="<think>", end="</think>", prefilled=True)),
    "python-values": _analysis(style="tagged", call_start="<call>", name_prefix="<function=", name_suffix=">",
                               args="tagged", tagged=TaggedArgs(prefix="<parameter=", key_suffix=">",
                                                                value_end="</parameter>")),
    "cdata-values": _analysis(style="tagged", call_start="<call>", name_prefix="<function=", name_suffix=">",
                              args="tagged", tagged=TaggedArgs(prefix="<parameter=", key_suffix=">",
                                                               value_end="</parameter>")),
    "unescaped-strings": _analysis(style="tagged", section_start="<|tool_call_start|>[",
                                   section_end="]<|tool_call_end|>", args="literal",
                                   literal=LiteralArgs(open="(", close=")", kv_sep="=", quotes=("'", '"'))),
}
REFUSALS["json-envelope"] = dataclasses.replace(
    _analysis(), envelope=EnvelopeFormat(reasoning_key="thought", content_key="response", calls_key="tool_calls"))
REFUSALS["yaml-args"] = _analysis(style="tagged", call_start="<call>", name_suffix="\n", args="yaml",
                                  tagged=TaggedArgs(prefix="\n", key_suffix=": "))


# ------------------------------------------------------------------ layouts (style "layout")
def lit(text: str) -> Piece:
    return Piece("lit", text)


NAME, ARGS = Piece("name"), Piece("args")
FUNCTION = (lit("<function="), NAME, lit(">\n"), ARGS, lit("\n</function>"))   # a frame around the arguments


def items(values: Values | None = None, **kw: Any) -> ArgsLayout:
    fields = {"item_pre": "<parameter=", "kv": ">", "item_post": "</parameter>", **kw}
    return ArgsLayout(kind="items", items=Items(values=values or Values(), **fields))


def _layout(args: ArgsLayout | None = None, pieces: tuple[Piece, ...] = FUNCTION, **tools: Any) -> Analysis:
    lay = CallLayout(pieces=pieces, args=args or ArgsLayout())
    return _analysis(style="layout", call_start=tools.pop("call_start", "<call>"), layout=lay, **tools)


REFUSALS.update({
    "layout-shape": _layout(pieces=(lit("<function="), NAME, lit(">"))),
    "name-codec": _layout(pieces=(lit("<function "), Piece("name", codec="json"), lit(">"), ARGS, lit("</function>"))),
    "string-args": _layout(ArgsLayout(kind="json", codec="json")),
    "positional-args": _layout(items(keyed=False)),
    "key-codec": _layout(items(key=Slot(codec="json"))),
    "value-codec": _layout(items(Values(string=Slot(codec="percent(%20)")))),
    "value-spelling": _layout(items(Values(true="yes", false="no"))),
    "own-nested": _layout(items(Values(nested="own"))),
    "items-misread": _layout(items(item_pre="", kv="=", item_post="", sep="; ")),   # raw "a; b=c" reads as two
})
# the template's rendering of a call with every argument type, for the value reasons
SAMPLES = {
    "python-values": "<call><function=lookup><parameter=filters>{'lang': 'en'}</parameter></call>",
    "cdata-values": "<call><function=lookup><parameter=code><![CDATA[x]]></parameter></call>",
    "unescaped-strings": "<|tool_call_start|>[lookup(code='it's fine')]<|tool_call_end|>",
}


def test_every_reason_has_a_unit_case() -> None:
    assert set(REFUSALS) == set(REASONS)


@pytest.mark.parametrize("reason", sorted(REFUSALS))
def test_export_error_reason(reason: str) -> None:
    with pytest.raises(ExportError) as info:
        response_template(REFUSALS[reason], argument_sample=SAMPLES.get(reason, ""))
    assert info.value.reason == reason
    assert str(info.value).startswith("unit.jinja (export): " + REASONS[reason])


def test_export_error_is_an_autoparser_error() -> None:
    assert issubclass(ExportError, AutoparserError)


# layouts the exporter expresses: each call written by the layout (``encode_call``) is read back by
# transformers as the arguments it was written from (typed by the probe tool's schema)
WRAPPED = Values(string=Slot(pre='true">'), number=Slot(pre='false">'), integer=Slot(pre='false">'),
                 true='false">true', false='false">false', null='false">null', nested_pre='false">')
EXPRESSED = {
    "json": _layout(),
    "json_tag_is_name": dataclasses.replace(
        _layout(pieces=(lit("<"), NAME, lit(">"), ARGS, lit("</"), Piece("name_again"), lit(">")),
                call_start="", section_start="<calls>", section_end="</calls>"),
        capabilities=Capabilities(tool_calls=True, parallel_tool_calls=True)),
    "json_id_after_args": _layout(pieces=(NAME, lit("[ARGS]"), ARGS, lit("[ID]"), Piece("id"), lit("[/CALL]")),
                                  call_start="[CALL]"),
    "params": _layout(items(item_pre="<parameter=", kv=">\n", item_post="\n</parameter>\n")),
    "key_again": _layout(items(item_pre="<", kv=">", item_post="</" + KEY_AGAIN + ">")),
    "arg_key": _layout(items(item_pre="<arg_key>", kv="</arg_key><arg_value>", item_post="</arg_value>", sep="\n")),
    "wrapped": _layout(items(WRAPPED, item_pre='<param name="', kv='" string="', item_post="</param>")),
    "delimited_strings": _layout(items(Values(string=Slot(pre='<|"|>', post='<|"|>')), item_pre="", kv=":",
                                       item_post="", sep=",", open="{", close="}")),
    "pairs_json_strings": _layout(items(Values(string=Slot(codec="json")), item_pre="", kv="=", item_post="",
                                        sep=", ")),
    "quoted_keys": _layout(items(Values(string=Slot(codec="json(ascii)")), item_pre='"', kv='": ', item_post="",
                                 sep=", ", open="{", close="}")),
}


@pytest.mark.parametrize("name", sorted(EXPRESSED))
def test_layout_exports_and_reads_back(name: str) -> None:
    from autoparser.selftest import _ALL_ARGUMENTS

    a = EXPRESSED[name]
    template = response_template(a)
    chat_parsing.response_templates.load_response_template(template)
    assert a.tools.layout is not None
    args = {k: v for k, v in _ALL_ARGUMENTS.items() if not isinstance(v, dict)}   # nested: see "filters" below
    args["filters"] = {"lang": "en", "depth": 2}
    if a.tools.layout.args.kind == "json":     # a JSON string holding the call's closing text does not close it
        args["code"] += "\n</function></lookup>[/CALL]"
    calls = [encode_call(a.tools.layout, "lookup", "call00001", args),
             encode_call(a.tools.layout, "get_weather", "call00002", {"city": "Paris, France", "unit": "celsius"})]
    sep = "" if a.tools.call_start else "\n"
    text = a.tools.section_start + sep.join(a.tools.call_start + c for c in calls) + a.tools.section_end
    for chunk in (0, 3):
        got = normalize(_tools_parser("Sure." + text + "<|im_end|>", template, a.generation_prompt, chunk))
        assert got["calls"] == [("lookup", args), ("get_weather", {"city": "Paris, France", "unit": "celsius"})], text
        assert got["content"] == "Sure."


# ------------------------------------------------------------------ the key templates of ../shared
corpus = pytest.mark.skipif(not KEY, reason="shared template corpus not found (set AUTOPARSER_SHARED)")


@functools.cache
def key_results() -> dict[str, tuple[str, int, list[str]]]:
    """key template -> (refusal reason or "", comparisons, disagreements)."""
    assert SHARED is not None
    out: dict[str, tuple[str, int, list[str]]] = {}
    logging.disable(logging.WARNING)
    try:
        for name in KEY:
            path = SHARED / "templates" / name
            try:
                template = _template(path).response_template()
            except ExportError as e:
                out[name] = (e.reason, 0, [])
                continue
            except AnalysisError:
                out[name] = ("unreadable", 0, [])
                continue
            checked, bad = disagreements(path)
            out[name] = ("", checked, bad + serving_problems(template))
    finally:
        logging.disable(logging.NOTSET)
    return out


@corpus
@pytest.mark.corpus
def test_key_templates_export_and_agree() -> None:
    results = key_results()
    exported = [n for n, (reason, _, _) in results.items() if not reason]
    refused = {n: reason for n, (reason, _, _) in results.items() if reason}
    checked = sum(c for _, c, _ in results.values())
    bad = [f"{n}: {b}" for n, (_, _, problems) in results.items() for b in problems]
    print(f"\nresponse_template: {len(exported)}/{len(results)} key templates export; "
          f"{checked - len(bad)}/{checked} comparisons agree")
    known = {n for n, (_, _, problems) in results.items() if problems and n in KNOWN_DISAGREE}
    assert known == set(KNOWN_DISAGREE), "a known disagreement no longer shows: remove it from KNOWN_DISAGREE"
    bad = [b for b in bad if b.split(":", 1)[0] not in KNOWN_DISAGREE]
    assert not bad, "\n".join(bad[:20])
    assert refused == REFUSED_KEY
    assert len(exported) >= MIN_KEY_EXPORTED
