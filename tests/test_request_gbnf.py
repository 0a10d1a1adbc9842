"""``req.gbnf`` checked by a real grammar engine (llguidance, byte tokenizer).

For every tool scenario the parser reads (tests/turns.py cuts the generated text out of a
reference rendering), over the fixtures and a sample of ``../shared/templates``:

* tool_choice auto: the text from the first trigger on is accepted by the lazy grammar;
* tool_choice required: the whole generated text is accepted, unless text comes before the
  call (the calls come first then: refused);
* corruptions are rejected: an unknown function name, a missing required argument, a
  wrongly typed argument, an unclosed call, two calls under ``parallel_tool_calls=False``,
  a call to another function under a named ``tool_choice``.

Counts are printed as the tests run (``-s`` not needed). The corpus sample size
is ``AUTOPARSER_GBNF_SAMPLE`` (default 40; ``all`` for every template);
``python tests/test_request_gbnf.py [--all] [-v]`` prints the failures.
"""

from __future__ import annotations

import copy
import json
import os
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import turns
from gbnf_check import accepts, cfg_accepts, grammar_error

import autoparser
from autoparser import markers as mk
from autoparser.grammar.gbnf import GbnfBuilder, rule_refs
from autoparser.grammar.pyvalue import literal_args_rule, python_value_rule
from autoparser.grammar.regex_gbnf import _regex_gbnf
from autoparser.grammar.request import strict_objects
from autoparser.grammar.schema import schema_rule, schema_value_rule

TOOL_SCENARIOS = ("tool", "parallel", "reasoning_tool", "content_tool", "rich_args", "tricky_args", "escaped_args")
MIN_ACCEPTED = 0.99


# ---------------------------------------------------------------- helpers
def portable_errors(gbnf: str) -> list[str]:
    """What llama.cpp's parser (or our subset) would refuse: names with '_', unbounded or '.' operators."""
    errors = []
    lines = [line for line in gbnf.split("\n") if line and not line.startswith("#")]
    if not lines or not lines[0].startswith("root ::= "):
        errors.append("the first rule is not root")
    for line in lines:
        name, _, body = line.partition(" ::= ")
        if not re.fullmatch(r"[a-z][a-z0-9-]*", name) or any("_" in ref for ref in rule_refs(body)):
            errors.append(f"bad rule name in: {line[:80]}")
        bare = re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]', "", body)
        if set(bare) & set("*+."):
            errors.append(f"unbounded or '.' operator in: {line[:80]}")
    return errors


def trigger_start(text: str, triggers: list[dict[str, str]]) -> int | None:
    """Index of the earliest trigger in `text` (0 when the grammar is not lazy), as roundtrip.py."""
    if not triggers:
        return 0
    found = []
    for t in triggers:
        if "pattern" in t["type"]:
            m = re.search(t["value"], text)
            if m:
                found.append(m.start())
        elif t["value"] in text:
            found.append(text.index(t["value"]))
    return min(found) if found else None


@cache
def template(path: Path) -> autoparser.ChatTemplate:
    return autoparser.ChatTemplate.from_file(str(path), bos_token=turns.BOS, eos_token=turns.EOS)


@cache
def reference(path: Path) -> turns.Reference:
    return turns.Reference(path.read_text(encoding="utf-8"))


def request(case: turns.Case, **kw: Any) -> autoparser.Request:
    return template(case.path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None, **kw)


def check_grammar(gbnf: str | None) -> str | None:
    """None when the grammar exists, is portable and loads in llguidance; else why not."""
    if not gbnf:
        return "no grammar"
    errors = portable_errors(gbnf)
    if errors:
        return errors[0]
    error = grammar_error(gbnf)
    return f"llguidance: {error[:200]}" if error else None


def lazy_accepts(req: autoparser.Request, text: str) -> tuple[bool, str]:
    """(accepted from the first trigger on, why not)."""
    why = check_grammar(req.gbnf)
    if why:
        return False, why
    start = trigger_start(text, req.grammar_triggers)
    if start is None:
        return False, "no trigger in the text"
    return (True, "") if accepts(req.gbnf, text[start:]) else (False, "rejected from the trigger on")


def full_accepts(req: autoparser.Request, text: str) -> tuple[bool, str]:
    why = check_grammar(req.gbnf)
    if why:
        return False, why
    return (True, "") if accepts(req.gbnf, text) else (False, "rejected")


# ---------------------------------------------------------------- corruptions
def rendered(case: turns.Case, msg: dict[str, Any]) -> str | None:
    """The generated text for `msg` in the case's conversation, or None when the template refuses it."""
    ref = reference(case.path)
    try:
        out, _why, _variant = turns.expected_text(ref, case.history, msg, case.tools, case.kwargs)
        if out is None:
            return None
        return turns.strip_end_of_turn(out, turns.end_of_turn(ref, case.history, case.kwargs))
    except Exception:
        return None


def with_call(case: turns.Case, name: str, args: dict[str, Any]) -> dict[str, Any]:
    msg = copy.deepcopy(case.expected)
    call = msg["tool_calls"][0]
    call["function"]["name"] = name
    call["function"]["arguments"] = args if not isinstance(call["function"]["arguments"], str) \
        else json.dumps(args, ensure_ascii=False)
    return msg


def unclosed(req: autoparser.Request, text: str) -> str | None:
    """`text` cut before the last closing marker piece of its calls (or its last bracket)."""
    t = req.analysis.tools
    eot = [s.strip() for s in (*req.analysis.end_of_turn, turns.EOS) if s.strip()]
    closers = []
    for m in (t.call_end, t.call_close, t.section_end if t.section_start.strip() else ""):
        cuts = [i for i in (m.find(s) for s in eot) if i >= 0]
        m = m[:min(cuts)] if cuts else m
        pieces = mk.tokens(m)
        if pieces:
            closers.append(pieces[-1])
    if not closers:
        closers = ["}", ")"]
    where = max(text.rfind(c) for c in closers)
    return text[:where] if where > 0 else None


def corruptions(case: turns.Case) -> list[tuple[str, str, dict[str, Any]]]:
    """(kind, text, apply() keywords) for texts any grammar for this request must reject."""
    out: list[tuple[str, str, dict[str, Any]]] = []
    t = template(case.path).analysis.tools
    # arguments written inside a JSON string: the grammar takes any string there (README "Limits")
    in_string = t.args_as_string or (t.json is not None and t.json.args_as_string)
    if case.scenario == "tool":
        for kind, name, args in (
            ("unknown-function", "delete_files", {"location": "Paris, France", "unit": "celsius"}),
            ("missing-required", "get_weather", {"unit": "celsius"}),
            ("wrong-type", "search_docs", {"query": "tool parsing", "top_k": "three"}),
            ("wrong-enum", "get_weather", {"location": "Paris, France", "unit": "kelvin"}),
        ):
            if in_string and kind != "unknown-function":
                continue
            text = rendered(case, with_call(case, name, args))
            if text is not None and text != case.text:
                out.append((kind, text, {}))
        cut = unclosed(request(case), case.text)
        if cut is not None:
            out.append(("unclosed", cut, {}))
        out.append(("named-other", case.text, {"tool_choice": {"type": "function", "function": {"name": "search_docs"}}}))
    if case.scenario == "parallel":
        out.append(("not-parallel", case.text, {"parallel_tool_calls": False}))
    return out


def rejects(case: turns.Case, text: str, kw: dict[str, Any]) -> tuple[bool, str]:
    """Rejected by the request's grammar: lazily from the trigger on (when one fires) and as a whole
    under tool_choice required (or the named function)."""
    lazy = request(case, **kw)
    forced = request(case, **{"tool_choice": "required", **kw})
    for req in (lazy, forced):
        why = check_grammar(req.gbnf)
        if why:
            return False, why
    start = trigger_start(text, lazy.grammar_triggers)
    if start is not None and accepts(lazy.gbnf, text[start:]):
        return False, "accepted from the trigger on"
    if accepts(forced.gbnf, text):
        return False, "accepted as a whole under tool_choice required"
    return True, ""


# ---------------------------------------------------------------- the run
@dataclass
class Tally:
    scenarios: int = 0          # tool scenarios the parser reads
    unparsed: int = 0           # tool scenarios the parser does not read (not counted)
    tolerated: int = 0          # read only as a deviation, with a warning (the template wrote something
                                # it does not write for a call object: not the grammar's to generate)
    accepted: int = 0           # lazy grammar, from the trigger on
    required_accepted: int = 0  # tool_choice required, the whole text
    corruptions: int = 0
    rejected: int = 0
    failures: list[str] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)

    def line(self, label: str) -> str:
        pct = 100 * self.accepted / max(self.scenarios, 1)
        return (f"{label}: tool scenarios {self.scenarios} (+{self.unparsed} the parser does not read, "
                f"+{self.tolerated} read as deviations): "
                f"accepted {self.accepted} ({pct:.1f}%), required-mode accepted {self.required_accepted}; "
                f"corruptions {self.corruptions}: rejected {self.rejected} "
                f"({', '.join(f'{k} {v}' for k, v in sorted(self.kinds.items()))})")


def run(paths: list[Path], tally: Tally, corpus: bool = False) -> Tally:
    for path in paths:
        try:
            tmpl = template(path)
            if tmpl.analysis.tools.style == "none":
                continue
        except Exception:
            continue
        for case in turns.build_cases(path, corpus=corpus, only=list(TOOL_SCENARIOS)):
            label = f"{path.name}:{case.scenario}"
            try:
                req = request(case)
                msg = req.parse(case.text)
                if turns.compare(case.expected, msg.to_dict(), case.text) is not None:
                    tally.unparsed += 1
                    continue
                if msg.warnings:
                    tally.tolerated += 1
                    continue
                tally.scenarios += 1
                ok, why = lazy_accepts(req, case.text)
                tally.accepted += ok
                if not ok:
                    tally.failures.append(f"accept {label}: {why}")
                forced = request(case, tool_choice="required")
                ok, why = full_accepts(forced, case.text)
                if (case.expected.get("content") or "").strip() and forced.analysis.envelope is None:
                    # text before the call: a forced call comes first, so the required grammar refuses it
                    # (in a turn envelope the reply is a member of the object, before its calls)
                    ok, why = not ok, "text before the call accepted under tool_choice required"
                tally.required_accepted += ok
                if not ok:
                    tally.failures.append(f"required {label}: {why}")
                for kind, text, kw in corruptions(case):
                    tally.corruptions += 1
                    tally.kinds[kind] += 1
                    ok, why = rejects(case, text, kw)
                    tally.rejected += ok
                    if not ok:
                        tally.failures.append(f"corruption {kind} {label}: {why}: {text[:160]!r}")
            except Exception as e:  # a crash is a failure, not an error of the whole run
                tally.failures.append(f"crash {label}: {type(e).__name__}: {e}")
                tally.scenarios += 1
    return tally


def corpus_paths(sample: str | None = None) -> list[Path]:
    sample = sample or os.environ.get("AUTOPARSER_GBNF_SAMPLE", "40")
    shared = turns.shared_dir()
    if shared is None:
        return []
    if sample == "all":
        return sorted((shared / "templates").glob("*.jinja"))
    return turns.corpus_sample(int(sample))


def _assert(tally: Tally, label: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Print the counts (also under -q), then require >= 99% accepted and every corruption rejected."""
    with capsys.disabled():
        print(f"\n[gbnf] {tally.line(label)}")
    details = "\n".join(tally.failures[:25])
    assert tally.scenarios > 0
    assert tally.accepted >= MIN_ACCEPTED * tally.scenarios, f"{tally.line(label)}\n{details}"
    assert tally.rejected == tally.corruptions, f"{tally.line(label)}\n{details}"


# ---------------------------------------------------------------- tests
def test_fixtures(capsys: pytest.CaptureFixture[str]) -> None:
    """Every fixture with tools: all scenarios accepted (both modes), all corruptions rejected."""
    tally = run(turns.fixture_templates(), Tally())
    _assert(tally, "fixtures", capsys)
    assert tally.accepted == tally.scenarios == tally.required_accepted, "\n".join(tally.failures)


@pytest.mark.corpus
def test_shared_corpus(capsys: pytest.CaptureFixture[str]) -> None:
    paths = corpus_paths()
    if not paths:
        pytest.skip("../shared/templates not found (set AUTOPARSER_SHARED)")
    tally = run(paths, Tally(), corpus=True)
    _assert(tally, f"../shared/templates ({len(paths)} templates)", capsys)
    assert tally.required_accepted >= MIN_ACCEPTED * tally.scenarios, "\n".join(tally.failures)


def test_no_tools_no_grammar() -> None:
    tmpl = template(turns.FIXTURES / "hermes_json.jinja")
    msgs = [{"role": "user", "content": "hi"}]
    assert tmpl.apply(msgs).gbnf is None
    assert tmpl.apply(msgs, tools=turns.TOOLS, tool_choice="none").gbnf is None
    assert tmpl.apply(msgs, tools=turns.TOOLS).grammar_triggers == [{"type": "word", "value": "<tool_call>"}]
    assert tmpl.apply(msgs, tools=turns.TOOLS, tool_choice="required").grammar_triggers == []


@pytest.mark.parametrize("fixture", ["hermes_json", "qwen3_think_json", "xml_params", "chatml_plain"])
def test_response_format(fixture: str) -> None:
    """A json_schema response_format constrains the answer (bare or fenced), with or without tools."""
    tmpl = template(turns.FIXTURES / f"{fixture}.jinja")
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
              "required": ["city"]}
    rf = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    msgs = [{"role": "user", "content": "hi"}]
    for tools in (None, turns.TOOLS):
        req = tmpl.apply(msgs, tools=tools, response_format=rf, chat_template_kwargs={"enable_thinking": False})
        assert check_grammar(req.gbnf) is None
        assert req.grammar_triggers == []
        for good in ('{"city": "Paris"}', '{"city": "Paris", "n": 2}\n', '```json\n{"city": "Paris"}\n```'):
            assert accepts(req.gbnf, good), (fixture, good)
        for bad in ('{"n": 2}', '{"city": 3}', "Paris", '{"city": "Paris", "x": 1}'):
            assert not accepts(req.gbnf, bad), (fixture, bad)
    req = tmpl.apply(msgs, response_format={"type": "json_object"}, chat_template_kwargs={"enable_thinking": False})
    assert accepts(req.gbnf, '{"anything": [1, 2]}') and not accepts(req.gbnf, "[1]")


def test_required_mode_shapes() -> None:
    """tool_choice required: reasoning before the call, no free text; a call is mandatory (issue 23.3)."""
    tmpl = template(turns.FIXTURES / "qwen3_think_json.jinja")
    msgs = [{"role": "user", "content": "hi"}]
    req = tmpl.apply(msgs, tools=turns.TOOLS, tool_choice="required", chat_template_kwargs={"enable_thinking": True})
    call = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
    assert accepts(req.gbnf, call)
    assert accepts(req.gbnf, "<think>\nhmm\n</think>\n\n" + call)
    assert not accepts(req.gbnf, "<think>\nhmm\n</think>\n\nSure.\n" + call)
    assert not accepts(req.gbnf, "<think>\nhmm\n</think>\n\nSure.")
    assert not accepts(req.gbnf, call.replace("Paris", "Paris\"}"))
    single = tmpl.apply(msgs, tools=turns.TOOLS, tool_choice="required", parallel_tool_calls=False)
    assert accepts(single.gbnf, call) and not accepts(single.gbnf, call + "\n" + call)


# ---------------------------------------------------------------- building blocks
def _grammar(make: Any) -> str:
    """A grammar whose root is the rule make(builder) returns, checked for portability."""
    b = GbnfBuilder()
    b.define(b.reserve("root"), make(b))
    gbnf = b.render()
    assert check_grammar(gbnf) is None, check_grammar(gbnf)
    return gbnf


def _both(gbnf: str, text: str) -> bool:
    """llguidance and the exact CFG matcher (llama.cpp's semantics) agree; their answer."""
    ok = accepts(gbnf, text)
    assert cfg_accepts(gbnf, text) is ok, text
    return ok


def test_optional_integer_members_llguidance() -> None:
    """schema.py members() keeps the rest of an object inline: as a terminal-only rule starting
    with "," llguidance lexed it as one regex and rejected {"a": 1, "b": 2, "c": 3}."""
    schema = {"type": "object", "properties": {k: {"type": "integer"} for k in "abc"}, "additionalProperties": False}
    gbnf = _grammar(lambda b: schema_rule(b, schema, "obj"))
    for text in ('{"a": 1, "b": 2, "c": 3}', '{"a": 1, "c": 3}', '{"b": 2}', "{}"):
        assert _both(gbnf, text), text
    assert not _both(gbnf, '{"c": 3, "a": 1}')


def test_tagged_value_pad() -> None:
    """schema_value_rule(pad=...) allows whitespace around non-raw values before a trimmed closing."""
    def make(b: GbnfBuilder) -> str:
        ws = b.rule("ws", "[ \\t\\n]{0,4}")
        return schema_value_rule(b, {"type": "integer"}, "v", closing="</parameter>", pad=ws)
    gbnf = _grammar(make)
    assert _both(gbnf, "\n3\n</parameter>") and _both(gbnf, "3</parameter>")
    assert not _both(gbnf, "\nthree\n</parameter>")


SEARCH = strict_objects(turns.TOOLS[1]["function"]["parameters"])


@pytest.mark.parametrize(("text", "ok"), [
    ("{'query': 'q', 'top_k': 7, 'filters': {'tags': ['a'], 'exact': True, 'since': None}}", True),
    ('{"query": "q", "filters": {"exact": false}}', True),           # JSON spellings too
    ("{'query': 'it\\'s\nraw', 'code': 'x'}", True),
    ("{'top_k': 7}", False),                                          # missing required
    ("{'query': 'q', 'top_k': 'seven'}", False),                      # wrong type
    ("{'query': 'q', 'extra': 1}", False),                            # strict object
])
def test_python_values(text: str, ok: bool) -> None:
    gbnf = _grammar(lambda b: python_value_rule(b, SEARCH, "args"))
    assert accepts(gbnf, text) is ok


@pytest.mark.parametrize(("text", "ok"), [
    ('{query:<|"|>q<|"|>,top_k:7}', True),
    ('{code:<|"|>x<|"|>,filters:{exact:true},query:<|"|>q<|"|>}', True),   # |dictsort order
    ('{query:<|"|>q<|"|>,top_k:<|"|>7<|"|>}', True),                       # quoted scalar
    ('{query:<|"|>q<|"|>top_k:7}', True),                                  # comma dropped (parser reads it)
    ('{top_k:7}', False),
    ('{query:<|"|>q<|"|>,top_k:<|"|>seven<|"|>}', False),
    ('{query:<|"|>q<|"|>', False),
])
def test_literal_args(text: str, ok: bool) -> None:
    gbnf = _grammar(lambda b: literal_args_rule(b, SEARCH, "args", open_="{", close="}", sep=":",
                                                quotes=('<|"|>', '"', "'")))
    assert accepts(gbnf, text) is ok


def test_name_in_id_regex() -> None:
    """A name_in_id regex becomes GBNF with its name group restricted to the tool."""
    expr = _regex_gbnf(r"(?:functions\.)?(?P<name>[^:\s]+)(?::\d+)?$", ("get_weather",))
    gbnf = _grammar(lambda b: expr)
    for text, ok in (("functions.get_weather:0", True), ("get_weather", True), ("functions.get_weather:12", True),
                     ("functions.search_docs:0", False), ("get_weather:", False)):
        assert _both(gbnf, text) is ok, text


def test_strict_objects() -> None:
    schema = {"type": "object", "properties": {"properties": {"type": "object", "properties": {"x": {}}},
                                                "free": {"type": "object"}},
              "$defs": {"d": {"properties": {"y": {}}}}, "anyOf": [{"properties": {"z": {}}}]}
    out = strict_objects(schema)
    assert out["additionalProperties"] is False
    assert out["properties"]["properties"]["additionalProperties"] is False
    assert "additionalProperties" not in out["properties"]["free"]
    assert out["$defs"]["d"]["additionalProperties"] is False and out["anyOf"][0]["additionalProperties"] is False
    assert set(out["properties"]) == {"properties", "free"} and "additionalProperties" not in schema


@pytest.mark.parametrize(("fixture", "kind", "value"), [
    ("xml_params", "word", "<tool_call>"),
    ("kimi_sections", "word", "<|tool_calls_section_begin|>"),
    ("mistral_array", "word", "[TOOL_CALLS]["),
    ("llama3_json", "pattern", None),            # marker-less JSON: the parser's own trigger
    ("channels", "pattern", None),               # <|channel|> alone also opens reasoning and content
])
def test_trigger_kinds(fixture: str, kind: str, value: str | None) -> None:
    req = template(turns.FIXTURES / f"{fixture}.jinja").apply([{"role": "user", "content": "hi"}], tools=turns.TOOLS)
    (trigger,) = req.grammar_triggers
    assert trigger["type"] == kind and (value is None or trigger["value"] == value)
    if kind == "pattern":
        re.compile(trigger["value"])


if __name__ == "__main__":
    everything = "--all" in sys.argv
    verbose = "-v" in sys.argv
    for label, paths in (("fixtures", turns.fixture_templates()),
                         ("corpus", corpus_paths("all" if everything else None))):
        tally = run(paths, Tally(), corpus=label == "corpus")
        print(tally.line(label))
        for f in tally.failures if verbose else tally.failures[:10]:
            print("   ", f)


def test_prompt_opened_call_is_constrained_from_the_start() -> None:
    """A prompt that ends with a call's start (Functionary v3.2's ``>>>``) leaves no trigger for the
    first call in the output: the grammar applies from the first byte (no triggers), and accepts
    both a call name right away and the ``all`` answer."""
    shared = turns.shared_dir()
    path = shared / "templates" / "meetkai-functionary-medium-v3.2.jinja" if shared else None
    if path is None or not path.is_file():
        pytest.skip("needs ../shared/templates/meetkai-functionary-medium-v3.2.jinja")
    tmpl = autoparser.ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)
    req = tmpl.apply([{"role": "user", "content": "Weather in Paris?"}], tools=turns.TOOLS)
    assert req.prompt.endswith(">>>") and req.gbnf is not None
    assert req.grammar_triggers == []
    assert accepts(req.gbnf, 'get_weather\n{"location": "Paris", "unit": "celsius"}')
    assert accepts(req.gbnf, "all\nThe capital of France is Paris.")
    assert not accepts(req.gbnf, 'no_such_tool\n{"location": "Paris"}')


def test_line_calls_apart_by_their_openers_line_break() -> None:
    """Calls written as ``key: value`` lines with no separator of their own (a YAML list, each call
    opening ``\\n- name: ``): the next call's line break is the one its first literal opens with,
    which the GBNF must write out (the marker alone is printed without its white space)."""
    path = Path(__file__).resolve().parent.parent / "templates" / "incoming" / "yaml_call_list.jinja"
    tmpl = autoparser.ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)
    case = next(c for c in turns.build_cases(path) if c.scenario == "parallel")
    req = tmpl.apply(case.history, tools=case.tools, tool_choice="required")
    assert req.gbnf is not None and "\n- name:" in case.text
    assert _both(req.gbnf, case.text)
    assert not _both(req.gbnf, case.text.replace("\n- name:", "- name:"))
