"""The drawn formats are whole, decodable templates (tests/synth_axes.py, tests/synth_novel.py).

Every drawn template renders with the reference Jinja environment (the conformance harness's
settings) for every scenario, and the hand-written decoders (tests/synth_read.py,
tests/synth_novel_read.py) read each rendered turn back to exactly its reasoning, content, names,
ids and arguments: the harness's scenarios (when ../shared is present), autoparser's self-test
argument scenarios, and values that need escaping in some codec (quotes, backslashes, ``& = ; | [ ]
{ } < >``, ``${``, ``]]>``, newlines, tabs, spaces at the ends, unicode, strings spelled like
numbers, booleans or null). Every fourth axes format by default, all with AUTOPARSER_SYNTH_ALL=1
(about a minute). This proves the formats can be read; autoparser's reading of them is
tests/test_synth.py's business. Nothing here needs autoparser's analysis.

Known limits of the codecs (not checked): a string written unquoted (percent-encoding, XML entities,
raw text, minimal CSV quoting, BBCode/INI/markdown line escapes, ...) that equals the format's null
spelling, in a parameter that may be null, reads as null; raw text cannot hold the delimiter that
ends it (``</`` in raw XML, a call's closer in unquoted CSV).
"""

from __future__ import annotations

import json
import os
import sys
from datetime import datetime
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import jinja2
import pytest
import synth_axes as sa
import synth_novel as sn
import synth_novel_read as snr
import synth_read as sr
from jinja2.ext import loopcontrols
from jinja2.sandbox import SandboxedEnvironment

from autoparser.selftest import ARGUMENT_SCENARIOS, PROBE_TOOLS, TURN_SCENARIOS

HARNESS = Path(__file__).resolve().parent.parent.parent / "shared" / "conformance"


def _env() -> jinja2.Environment:
    """The harness's reference environment (transformers' settings)."""
    env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = lambda x, ensure_ascii=False, indent=None, separators=None, sort_keys=False: json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def raise_exception(msg: str) -> None:
        raise jinja2.exceptions.TemplateError(msg)

    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime(2026, 1, 15).strftime(fmt)
    return env


ENV = _env()
PROBE = {"type": "function", "function": {"name": "probe", "description": "Every awkward value.", "parameters": {
    "type": "object", "properties": {
        "s": {"type": "string"}, "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
        "z": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "o": {"type": "object", "properties": {"k": {"type": "string"}, "l": {"type": "array", "items": {"type": "integer"}}}},
        "a": {"type": "array", "items": {"type": "string"}}}, "required": ["s"]}}}
TOOLS = [*PROBE_TOOLS, PROBE]
AWKWARD = ["back\\slash", "a&b=c;d", "<tag> & </x>", "it's", 'say "hi"', "${x} %{y}", "]]>", "tab\there\r\nline",
           "", "true", "7", "null", "None", "nil", " padded ", "ünï 😀 東京", "{", "[a] (b)", "50% + 1/2", "a,b|c",
           "--flag", "#hash [x] (id: y)", "\n", "x\\ny"]


def _call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"call{i:05d}", "type": "function", "function": {"name": name, "arguments": args}}


def _messages() -> list[tuple[dict[str, Any], bool]]:
    """(assistant message, thinking) of autoparser's self-test turns and argument scenarios."""
    out = [(sc.message, sc.thinking) for sc in TURN_SCENARIOS]
    out += [({"role": "assistant", "content": "", "tool_calls": [_call(3, "lookup", args)]}, False)
            for _, _, args in ARGUMENT_SCENARIOS]
    return out


def _awkward(strings: str, null: str, unquoted: bool, cannot_hold: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Calls of ``probe`` with each awkward string (those holding a delimiter of raw text left out)."""
    msgs = []
    for s in AWKWARD:
        if any(t in s for t in cannot_hold) or (strings == "raw" and "<" in s):
            continue
        z = None if unquoted and s == null else s   # an unquoted string spelled as null reads as null
        args = {"s": s, "n": -3, "x": 2.5, "b": False, "z": z, "o": {"k": s, "l": [1, 2]}, "a": [s, "b"]}
        msgs.append({"role": "assistant", "content": "", "tool_calls": [_call(7, "probe", args)]})
    msgs.append({"role": "assistant", "content": "", "tool_calls": [_call(8, "probe", {"s": "x", "z": None, "b": True})]})
    return msgs


def _generated(tmpl: jinja2.Template, msg: dict[str, Any], thinking: bool, opener: str, omitted: bool) -> str:
    """The text after the generation prompt; a prompt that opened a reasoning block the turn does not
    repeat is taken as closed by the model right away."""
    history = [{"role": "user", "content": "What is the weather in Paris?"}]
    ctx = {"tools": TOOLS, "bos_token": "<s>", "eos_token": "</s>", "enable_thinking": thinking}
    prompt = tmpl.render(messages=history, add_generation_prompt=True, **ctx)
    full = tmpl.render(messages=[*history, msg], add_generation_prompt=False, **ctx)
    if full.startswith(prompt):
        return full[len(prompt):]
    assert omitted and prompt.endswith(opener), "the generation prompt is not a prefix of the turn"
    base = prompt[: -len(opener)]
    assert full.startswith(base)
    return sa.REASONING["think_prompt"][1].rstrip("\n") + "\n\n" + full[len(base):]


def _want(msg: dict[str, Any], text: str, reasoning: bool = True) -> dict[str, Any]:
    return {"reasoning_content": (msg.get("reasoning_content") or "").strip() if reasoning else "",
            "content": msg.get("content") or "",
            "tool_calls": [{"id": c["id"] if c["id"] in text else None, "name": c["function"]["name"],
                            "arguments": c["function"]["arguments"]} for c in msg.get("tool_calls", [])]}


def _check(decode: Any, source: str, close: str, opener: str, omitted: bool, reasoning: bool,
           awkward: list[dict[str, Any]]) -> None:
    """Every message renders, ends with the turn's close, and decodes to itself."""
    tmpl = ENV.from_string(source)
    for msg, thinking in [*_messages(), *((m, False) for m in awkward)]:
        text = _generated(tmpl, msg, thinking, opener, omitted)
        assert text.endswith(close), text[-40:]
        text = text[: -len(close)]
        assert decode(text) == _want(msg, text, reasoning), text


#: every fourth axes format by default (about 10 s); AUTOPARSER_SYNTH_ALL=1 checks all 520
STRIDE = 1 if os.environ.get("AUTOPARSER_SYNTH_ALL") == "1" else 4
AXES_CASES = [pytest.param(f, id=f"{i:03d}-{f.encoding}-{f.placement}") for i, f in enumerate(sa.DRAWN)][::STRIDE]
NOVEL_CASES = [pytest.param(n, id=f"{i:02d}-{n.form}") for i, n in enumerate(sn.DRAWN)]


@pytest.mark.parametrize("fmt", AXES_CASES)
def test_axes_format_decodes(fmt: sa.Format) -> None:
    r_open, _, how = sa.REASONING[fmt.reasoning]
    csv = fmt.strings.startswith("csv")
    unquoted = sr.quote_char(fmt.strings) is None or csv
    awkward = _awkward(fmt.strings, sa.NULLS[fmt.null], unquoted, tuple(sr.terminators(fmt)) if csv else ())
    _check(lambda text: sr.decode(fmt, text, TOOLS), sa.render(fmt), sa.ROLES[fmt.roles][1], r_open, how == "omit",
           fmt.reasoning != "none", awkward)


@pytest.mark.parametrize("fmt", NOVEL_CASES)
def test_novel_format_decodes(fmt: sn.Novel) -> None:
    st = fmt.spec.style
    unquoted = snr.nquote(st.strings) is None or st.strings in ("logfmt", "csv_min")
    close = sn.ROLES[fmt.roles][1].replace("{role}", "assistant")
    _check(lambda text: snr.decode(fmt, text, TOOLS), sn.render(fmt), close, "", False, fmt.reasoning != "none",
           _awkward(st.strings, st.null, unquoted))


def test_the_draws_are_fixed_coherent_and_cover_every_axis_value() -> None:
    assert len(sa.DRAWN) >= 500 and len({f.key for f in sa.DRAWN}) == len(sa.DRAWN)
    assert sa.draw(30, 7) == sa.draw(30, 7) != sa.draw(30, 8) and sa.draw(len(sa.DRAWN)) == sa.DRAWN
    assert all(sa.coherent(f) is None for f in sa.DRAWN)
    for axis, values in sa.AXES.items():
        seen = {getattr(f, axis) for f in sa.DRAWN}
        grouped = {v.split(".")[0] for v in seen}
        assert all(v in seen or v.split(".")[0] in grouped for v in values), axis
    assert len(sn.DRAWN) >= 40 and {n.form for n in sn.DRAWN} == set(sn.FORMS)
    assert all(sn.coherent(n) is None for n in sn.DRAWN) and sn.draw(20, 3) == sn.draw(20, 3)
    assert sa.format_of(sa.render(sa.DRAWN[0])) == sa.DRAWN[0] and sn.novel_of(sn.render(sn.DRAWN[0])) == sn.DRAWN[0]


# ---------------------------------------------------------------- the conformance harness's own scenarios
def _harness() -> Any:
    if not (HARNESS / "roundtrip.py").is_file():
        pytest.skip("../shared/conformance/roundtrip.py is absent")
    sys.path.insert(0, str(HARNESS))
    import roundtrip

    return roundtrip


def _harness_cases(rt: Any, source: str) -> list[tuple[str, str | None, str | None, dict[str, Any]]]:
    """(scenario, generated text or None, why n/a, message) as the harness cuts them."""
    ref = rt.Reference(source)
    out = []
    for name, needs_tools, thinking, msg in rt.scenarios():
        tools = rt.TOOLS if needs_tools else None
        text, why, kwargs, history = None, "", {}, rt.HISTORIES[0]
        for kwargs in ([{"enable_thinking": True}] if thinking else [{}, {"enable_thinking": False}]):
            for history in rt.HISTORIES:
                text, why, _ = rt.expected_text(ref, history, msg, tools, kwargs)
                if text is not None:
                    break
            if text is not None:
                break
        if text is not None:
            text = rt.strip_end_of_turn(text, rt.end_of_turn(ref, history, kwargs))
        out.append((name, text, why, msg))
    return out


@pytest.mark.parametrize("fmt", AXES_CASES[1::2])
def test_axes_format_renders_every_harness_scenario(fmt: sa.Format) -> None:
    rt = _harness()
    positional = fmt.encoding in ("positional", "positional_sexp", "csv_pos")
    for name, text, why, msg in _harness_cases(rt, sa.render(fmt)):
        if text is None:   # only reasoning a format does not write, and calls without their argument names
            assert (name.startswith("reasoning") and fmt.reasoning == "none") or (positional and msg.get("tool_calls")), \
                (name, why)
            continue
        assert sr.decode(fmt, text, rt.TOOLS) == _want(msg, text), (name, text)


@pytest.mark.parametrize("fmt", NOVEL_CASES)
def test_novel_format_renders_every_harness_scenario(fmt: sn.Novel) -> None:
    rt = _harness()
    for name, text, why, msg in _harness_cases(rt, sn.render(fmt)):
        if text is None:
            assert name.startswith("reasoning") and fmt.reasoning == "none", (name, why)
            continue
        assert snr.decode(fmt, text, rt.TOOLS) == _want(msg, text), (name, text)


# ---------------------------------------------------------------- templates/incoming
TEMPLATES = Path(__file__).resolve().parent.parent / "templates"
# issue 21's hand-written encodings: the three still in templates/incoming and the fourteen read whole
HANDWRITTEN = ("csv_rows", "edn_vector", "hcl_blocks", "ini_sections", "jsonrpc_batch", "lua_call_sugar", "nix_attrs",
               "query_string_calls", "xml_attr_args", "xml_child_args", "xmlrpc_calls",
               "name_after_args", "quoted_params", "asciidoc_blocks")
INCOMING = sorted([*(TEMPLATES / "incoming").glob("*.jinja"), *(TEMPLATES / f"{s}.jinja" for s in HANDWRITTEN)])
NO_REASONING = ("nix_attrs", "yaml_call_list", "name_after_args")


@pytest.mark.parametrize("path", INCOMING, ids=lambda p: p.stem)
def test_incoming_fixture_renders_every_harness_scenario(path: Path) -> None:
    """Each hand-written fixture renders every harness scenario (reasoning only where it has some),
    with every argument value, and refuses unknown roles."""
    rt = _harness()
    source = path.read_text(encoding="utf-8")
    for name, text, why, msg in _harness_cases(rt, source):
        if text is None:
            assert name.startswith("reasoning") and path.stem in NO_REASONING, (name, why)
            continue
        for c in msg.get("tool_calls", []):
            assert c["function"]["name"] in text
    with pytest.raises(jinja2.exceptions.TemplateError):
        ENV.from_string(source).render(messages=[{"role": "narrator", "content": "x"}])


def _incoming_call(stem: str, args: dict[str, Any]) -> str:
    tmpl = ENV.from_string(next(p for p in INCOMING if p.stem == stem)
                           .read_text(encoding="utf-8"))
    history = [{"role": "user", "content": "Look it up."}]
    msg = {"role": "assistant", "content": "", "tool_calls": [_call(1, "probe", args)]}
    prompt = tmpl.render(messages=history, tools=TOOLS, add_generation_prompt=True)
    return tmpl.render(messages=[*history, msg], tools=TOOLS)[len(prompt):]


@pytest.mark.parametrize("s", [*AWKWARD, "- x", "a: b", "a #b", "x:", "1e3", "Yes", "~", "@x", "0x1F", ".5", "1_000"])
def test_incoming_fixtures_read_back_with_standard_parsers(s: str) -> None:
    """Where a standard parser exists (YAML, POSIX shell, XML-RPC, JSON), it reads the fixture's calls
    back to the arguments (XML parsers turn a carriage return into a line break)."""
    import shlex
    import xmlrpc.client

    import yaml

    args = {"s": s, "n": 7, "x": 2.5, "b": True, "z": None, "o": {"k": s, "l": [1, 2]}, "a": [s, "b"]}
    out = _incoming_call("yaml_call_list", args).split("<|/turn|>")[0]
    assert yaml.safe_load(out)["tool_calls"][0] == {"name": "probe", "id": "call00001", "arguments": args}
    out = _incoming_call("shell_flags", args).split("```sh\n")[1].split("\n```")[0]
    words = shlex.split(out)
    assert words[:2] == ["CALL_ID=call00001", "probe"]
    assert words[2:] == ["--s", s, "--n", "7", "--x", "2.5", "--b", "--z", "null", "--o", json.dumps(args["o"], ensure_ascii=False),
                         "--a", json.dumps(args["a"], ensure_ascii=False)]
    params, method = xmlrpc.client.loads(_incoming_call("xmlrpc_calls", args).split("[[/assistant]]")[0])
    assert method == "probe" and params[0] == json.loads(json.dumps(args).replace("\\r\\n", "\\n"))
    batch = json.loads(_incoming_call("jsonrpc_batch", args).split("<|rpc|>")[1].split("<end_of_turn>")[0])
    assert batch == [{"jsonrpc": "2.0", "id": "call00001", "method": "probe", "params": args}]
    invoke = ElementTree.fromstring(_incoming_call("xml_child_args", args).split("[/assistant]")[0])
    assert invoke.get("tool") == "probe"
    assert {el.tag: _xml_value(el, args[el.tag]) for el in invoke} == json.loads(json.dumps(args).replace("\\r\\n", "\\n"))


def _xml_value(el: Any, like: Any) -> Any:
    """An XML child element as the value it writes (typed like `like`: its children an object, ``item``
    children an array, no content null)."""
    if isinstance(like, dict):
        return {c.tag: _xml_value(c, like[c.tag]) for c in el}
    if isinstance(like, list):
        return [_xml_value(c, x) for c, x in zip(el, like, strict=True)]
    if like is None:
        assert el.text is None and not len(el)
        return None
    text = el.text or ""
    return text if isinstance(like, str) else json.loads(text)
