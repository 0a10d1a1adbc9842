"""Self-test: render known assistant turns through a template and parse them back.

For each scenario (content; reasoning + content; one call; two calls; content + call;
reasoning + call; and one call per argument type: strings with quotes, unicode and
newlines, numbers, booleans, null, nested objects, arrays) the template renders a
history with the generation prompt, then the same history plus the assistant message. The text after the generation prompt
is what a model would have written; with the end-of-turn text cut off (a server stops
there) it goes through ``Request.parse`` and, in small chunks, through the stream
parser, and both must give back the message that was rendered.

A scenario is ``n/a`` when the template itself cannot express it: it raises, leaves
a part out (no tool support, reasoning dropped from history), or re-renders the
history so that the generation prompt is not where the turn starts, or renders an
argument exactly as it renders a string its schema also allows (``None`` as ``"None"``).

:func:`verification` folds a result into the analysis' record (``analysis.verification``,
one :class:`Capability` per scenario); ``ChatTemplate.analysis`` gives the analysis this
self-test on the template itself.

>>> from autoparser import ChatTemplate
>>> from autoparser.selftest import self_test
>>> result = self_test(ChatTemplate.from_file("templates/hermes_json.jinja"))
>>> result.ok, result.counts()
(True, {'pass': 10, 'fail': 0, 'n/a': 2})
"""

from __future__ import annotations

import copy
import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .analysis.verification import (
    ARGUMENT_CAPABILITIES,
    Capability,
    CapabilityStatus,
    Verification,
    verifying,
)
from .decisions.row import TemplateLike
from .diff.split import fix_prefix_end
from .errors import AutoparserError
from .markers import definition as dm
from .runtime.message import Message, merge_deltas

if TYPE_CHECKING:
    from .analysis.model import ReasoningFormat

__all__ = ["ALL_ARGUMENTS", "ARGUMENT_SCENARIOS", "PROBE_TOOLS", "SCENARIOS", "TURN_SCENARIOS", "Capability", "Scenario", "ScenarioResult",
           "SelfTestResult", "Verification", "self_test", "verification"]


class _Parser(Protocol):
    prompt: str

    def parse(self, text: str, partial: bool = False) -> Message: ...
    def stream(self) -> Any: ...


class ChatTemplate(TemplateLike, Protocol):
    """What the self-test needs of a ``ChatTemplate`` (it sits below the API and imports none of it):
    what the decisions read, and ``apply``."""

    def apply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
              chat_template_kwargs: dict[str, Any] | None = None) -> _Parser: ...

Status = Literal["pass", "fail", "n/a"]


# ------------------------------------------------------------------ probe data
def _tool(name: str, description: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description, "parameters": {
        "type": "object", "properties": props, "required": required}}}


PROBE_TOOLS: list[dict[str, Any]] = [
    _tool("get_weather", "Get the current weather for a city.", {
        "city": {"type": "string", "description": "City and country"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["city"]),
    _tool("search_docs", "Search the documentation.", {
        "query": {"type": "string"}, "limit": {"type": "integer"}}, ["query"]),
    # a tool whose schema declares every argument type (the argument scenarios call it)
    _tool("lookup", "Look things up.", {
        "query": {"type": "string"}, "code": {"type": "string"}, "top_k": {"type": "integer"},
        "ratio": {"type": "number"}, "exact": {"type": "boolean"}, "since": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "filters": {"type": "object", "properties": {
            "lang": {"type": "string"}, "depth": {"type": "integer"},
            "scope": {"type": "object", "properties": {"site": {"type": "string"}}}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ids": {"type": "array", "items": {"type": "integer"}}}, ["query"]),
]
WEATHER = {"city": "Paris, France", "unit": "celsius"}
SEARCH = {"query": "tool parsing", "limit": 3}
REASONING = "The user asks about the weather in Paris. I should check it."
ANSWER = "The capital of France is Paris."
PREAMBLE = "Let me check that for you."
HISTORIES: tuple[list[dict[str, Any]], ...] = (
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "What is the weather in Paris?"}],
    [{"role": "user", "content": "What is the weather in Paris?"}],
)
_EOT_PROBE = "ZQXPROBEZQX"
STREAM_CHUNK = 5


def _call(i: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    # nine alphanumerics: the id shape Mistral's templates insist on
    return {"id": f"call{i:05d}", "type": "function", "function": {"name": name, "arguments": args}}


@dataclass(frozen=True)
class Scenario:
    name: str
    message: dict[str, Any]
    tools: bool = False        # render with the probe tools
    thinking: bool = False     # render with thinking switched on

    @property
    def tool_list(self) -> list[dict[str, Any]] | None:
        return PROBE_TOOLS if self.tools else None


#: the turns: content, reasoning, calls and text around them
TURN_SCENARIOS: tuple[Scenario, ...] = (
    Scenario("content", {"role": "assistant", "content": ANSWER}),
    Scenario("reasoning", {"role": "assistant", "reasoning_content": REASONING, "content": ANSWER}, thinking=True),
    Scenario("tool", {"role": "assistant", "content": "", "tool_calls": [_call(1, "get_weather", WEATHER)]},
             tools=True),
    Scenario("parallel", {"role": "assistant", "content": "", "tool_calls": [
        _call(1, "get_weather", WEATHER), _call(2, "search_docs", SEARCH)]}, tools=True),
    Scenario("content_tool", {"role": "assistant", "content": PREAMBLE,
                              "tool_calls": [_call(1, "get_weather", WEATHER)]}, tools=True),
    Scenario("reasoning_tool", {"role": "assistant", "reasoning_content": REASONING, "content": "",
                                "tool_calls": [_call(1, "get_weather", WEATHER)]}, tools=True, thinking=True),
)
# one call per argument type: (capability, scenario, arguments of ``lookup``)
ARGUMENT_SCENARIOS: tuple[tuple[str, str, dict[str, Any]], ...] = tuple(zip(ARGUMENT_CAPABILITIES, (
    "args_strings", "args_numbers", "args_booleans", "args_null", "args_objects", "args_arrays"), (
    {"query": 'naïve café "quoted" 東京 😀', "code": "def f(x):\n    return {x: [1, 2]}  # it's fine"},
    {"query": "tool parsing", "top_k": 7, "ratio": -0.25},
    {"query": "tool parsing", "exact": True},
    {"query": "tool parsing", "since": None},
    {"query": "tool parsing", "filters": {"lang": "en", "depth": 2, "scope": {"site": "docs"}}},
    {"query": "tool parsing", "tags": ["alpha", "beta"], "ids": [1, 2]},
), strict=True))
SCENARIOS: tuple[Scenario, ...] = TURN_SCENARIOS + tuple(
    Scenario(name, {"role": "assistant", "content": "", "tool_calls": [_call(3, "lookup", args)]}, tools=True)
    for _, name, args in ARGUMENT_SCENARIOS)
_ALL_ARGUMENTS: dict[str, Any] = {}
for _, _, _args_of_one in ARGUMENT_SCENARIOS:
    _ALL_ARGUMENTS.update({k: v for k, v in _args_of_one.items() if k not in _ALL_ARGUMENTS})
#: one call with every argument type: when it reads back, each argument scenario passes with it
#: (one rendering and parse instead of six); else each runs alone, to say which type fails
ALL_ARGUMENTS = Scenario("args_all", {"role": "assistant", "content": "",
                                      "tool_calls": [_call(3, "lookup", _ALL_ARGUMENTS)]}, tools=True)


# ------------------------------------------------------------------ results
@dataclass(frozen=True)
class ScenarioResult:
    name: str
    status: Status
    why: str = ""                                   # reason for "fail" and "n/a"
    text: str = ""                                  # the generated part that was parsed
    expected: dict[str, Any] | None = None          # the message that was rendered
    got: dict[str, Any] | None = None               # what the parser gave back
    kwargs: dict[str, Any] = field(default_factory=dict)   # chat_template_kwargs used
    prompt: str = ""                                # the prompt the text was generated after
    flagged: bool = False                           # the parse said it may be wrong (a warning, malformed,
    #                                                 a call marked invalid or truncated)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "why": self.why, "text": self.text,
                "expected": self.expected, "got": self.got, "kwargs": dict(self.kwargs), "flagged": self.flagged}


@dataclass(frozen=True)
class SelfTestResult:
    template: str
    scenarios: tuple[ScenarioResult, ...] = ()

    @property
    def ok(self) -> bool:
        """No scenario failed (n/a scenarios do not count against the template)."""
        return not self.failures

    @property
    def failures(self) -> tuple[ScenarioResult, ...]:
        return tuple(s for s in self.scenarios if s.status == "fail")

    @property
    def passed(self) -> tuple[ScenarioResult, ...]:
        return tuple(s for s in self.scenarios if s.status == "pass")

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "n/a": 0}
        for s in self.scenarios:
            out[s.status] += 1
        return out

    def get(self, name: str) -> ScenarioResult | None:
        return next((s for s in self.scenarios if s.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        return {"template": self.template, "ok": self.ok, "counts": self.counts(),
                "scenarios": [s.to_dict() for s in self.scenarios]}


# ------------------------------------------------------------------ cutting out the generated part
def _common_prefix(a: str, b: str) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def _after_prefill(prompt: str, full: str, msg: dict[str, Any], reasoning: ReasoningFormat) -> str | None:
    """Model output for a prompt that ends inside (or right after) a reasoning block the turn leaves out.

    The text the prompt adds that the rendered turn does not repeat must be (the end of)
    the analysed opening marker, the model then writes its reasoning (or nothing), the
    closing marker and the turn; or an opened and closed empty block (thinking off), and
    the turn follows directly. None when the prompt ends with no such block.
    """
    opening, closing = reasoning.start.strip(), reasoning.end.strip()
    if reasoning.mode != "tagged" or not opening or not closing:
        return None
    cut = fix_prefix_end(prompt, _common_prefix(prompt, full))
    added = prompt[cut:].strip()
    closed = False
    if added.endswith(closing) and added != closing:
        head = added[: -len(closing)].strip()
        closed = bool(head) and opening.endswith(head)
        if not closed:
            return None
    elif not (added and opening.endswith(added)):
        return None
    turn = full[cut:].lstrip()
    # the template may itself render part of the block at the turn's start
    marker = added if not closed else added[: -len(closing)].strip()
    if turn.startswith(marker) and closing in turn:
        head, _, tail = turn.partition(closing)
        if head[len(marker):].strip():
            return None  # the turn renders real reasoning: not a prefill case
        turn = tail
    elif turn.startswith(closing):
        turn = turn[len(closing):]
    turn = turn.lstrip()
    text = msg.get("reasoning_content") or ""
    if closed:
        return None if text else turn
    if text and text in turn:
        return turn  # the template writes the reasoning and its close itself
    return text + reasoning.end + turn


def generated_part(prompt: str, full: str, msg: dict[str, Any], reasoning: ReasoningFormat) -> str | None:
    """The text the model generated after ``prompt``, given the rendered conversation ``full``."""
    if full.startswith(prompt):
        return full[len(prompt):]
    cut = _common_prefix(prompt, full)
    if not prompt[cut:].strip():
        # the prompt only adds whitespace the turn itself does not repeat
        return full[cut:].lstrip()
    return _after_prefill(prompt, full, msg, reasoning)


def _shared_ending(a: str, b: str) -> str:
    """The end both strings share, from the first marker (``<``, ``[``) in it; "" if none."""
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    if n == len(a):
        return a
    shared = a[len(a) - n:]
    ending = shared[dm.next_open(shared):]
    return ending if ending.strip() else ""


def _strip_end_of_turn(out: str, eot: str, eos: str) -> str:
    """Cut the end-of-turn text: a server stops at that token and never shows it."""
    for cut in (eot, eos):
        if cut and out.endswith(cut):
            return out[: -len(cut)]
    shared = _shared_ending(eot, out) if eot else ""
    return out[: len(out) - len(shared)] if shared else out


# ------------------------------------------------------------------ comparing
def _norm(s: Any) -> str:
    return (s or "").strip() if isinstance(s, str) or s is None else str(s)


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def compare(expected: dict[str, Any], got: dict[str, Any], text: str) -> str | None:
    """None when ``got`` carries the same reasoning, content and calls as ``expected``, else why not."""
    for key, label in (("reasoning_content", "reasoning"), ("content", "content")):
        if _norm(got.get(key)) != _norm(expected.get(key)):
            return f"{label} {_norm(got.get(key))[:60]!r} != {_norm(expected.get(key))[:60]!r}"
    want, have = expected.get("tool_calls") or [], got.get("tool_calls") or []
    if len(want) != len(have):
        return f"{len(have)} tool calls != {len(want)}"
    for w, h in zip(want, have, strict=True):
        hf = h.get("function", h)
        if hf.get("name") != w["function"]["name"]:
            return f"tool name {hf.get('name')!r} != {w['function']['name']!r}"
        raw = hf.get("arguments")
        args = _args(raw)
        if isinstance(raw, str) and args is raw:
            return f"arguments not JSON: {raw[:60]!r}"
        wargs = _args(w["function"]["arguments"])
        if args != wargs:
            return (f"arguments {json.dumps(args, ensure_ascii=False)[:80]} != "
                    f"{json.dumps(wargs, ensure_ascii=False)[:80]}")
        if w.get("id") and w["id"] in text and h.get("id") != w["id"]:
            return f"id {h.get('id')!r} != {w['id']!r}"
    return None


def _needles(msg: dict[str, Any]) -> list[str]:
    found = [msg[k] for k in ("content", "reasoning_content") if msg.get(k)]
    found += [c["function"]["name"] for c in msg.get("tool_calls", [])]
    return found


def _stringify_args(msg: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(msg)
    for c in out.get("tool_calls", []):
        c["function"]["arguments"] = json.dumps(c["function"]["arguments"], ensure_ascii=False)
    return out


def _printed(value: Any) -> list[str]:
    """The strings a template may print for a value that is not one (None as "None", True as "true")."""
    if value is None:
        return ["None", "null", ""]
    if isinstance(value, bool):
        return [str(value), json.dumps(value)]
    if isinstance(value, (int, float)):
        return [str(value)]
    return []


def _types(schema: dict[str, Any]) -> list[str]:
    """The JSON types a schema allows (``type``, or its ``anyOf``/``oneOf`` branches')."""
    kind = schema.get("type")
    if kind is not None:
        return [kind] if isinstance(kind, str) else list(kind)
    return [t for key in ("anyOf", "oneOf") for branch in schema.get(key) or [] for t in _types(branch)]


def _tool_names(tools: list[dict[str, Any]] | None) -> list[str] | None:
    return None if tools is None else [t["function"]["name"] for t in tools]


def _chunks(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i:i + size]


# ------------------------------------------------------------------ the runner
class _Runner:
    def __init__(self, tmpl: ChatTemplate, stream: bool) -> None:
        self.tmpl = tmpl
        self.analysis = tmpl.analysis
        self.stream = stream
        self._eot: dict[str, str] = {}
        self._renders: dict[str, str | AutoparserError] = {}
        self._requests: dict[str, _Parser] = {}

    def _render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, agp: bool, kwargs: dict[str, Any]) -> str:
        """Render (cached: every scenario shares the prompts); a refusal is re-raised from the cache."""
        key = json.dumps([messages, _tool_names(tools), agp, kwargs], sort_keys=True)
        hit = self._renders.get(key)
        if hit is None:
            try:
                hit = self.tmpl.renderer.render(messages, tools=tools, add_generation_prompt=agp, **kwargs)
            except AutoparserError as e:
                hit = e
            self._renders[key] = hit
        if isinstance(hit, AutoparserError):
            raise hit
        return hit

    def request(self, history: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                kwargs: dict[str, Any]) -> _Parser:
        """The request for a prompt (cached: scenarios with the same history, tools and kwargs share one)."""
        key = json.dumps([history, _tool_names(tools), kwargs], sort_keys=True)
        req = self._requests.get(key)
        if req is None:
            req = self._requests[key] = self.tmpl.apply(history, tools=tools, chat_template_kwargs=kwargs or None)
        return req

    def kwarg_options(self, sc: Scenario) -> list[dict[str, Any]]:
        r = self.analysis.reasoning
        if sc.thinking:
            return [dict(r.on_kwargs) or {"enable_thinking": True}]
        # a turn without reasoning is also tried with thinking switched off, for templates
        # whose prompt opens a reasoning block
        return [{}, dict(r.off_kwargs)] if r.off_kwargs else [{}]

    def cannot_render(self, sc: Scenario) -> str:
        """Why the analysis' capability probes say the template cannot express ``sc`` ("" if it can)."""
        caps = self.analysis.capabilities
        calls = sc.message.get("tool_calls") or []
        if calls and not caps.tool_calls:
            return "template does not render tool calls"
        if len(calls) > 1 and not caps.parallel_tool_calls:
            return "template does not render two tool calls in one turn"
        if sc.message.get("reasoning_content") and not caps.reasoning:
            return "template does not render reasoning"
        return ""

    def end_of_turn(self, history: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        """What the template writes after an assistant turn; only the part a tool-call turn shares
        counts, so that a content wrapper's closer stays in the model's text."""
        key = json.dumps([history, kwargs], sort_keys=True)
        if key not in self._eot:
            self._eot[key] = self._end_of_turn(history, kwargs)
        return self._eot[key]

    def _end_of_turn(self, history: list[dict[str, Any]], kwargs: dict[str, Any]) -> str:
        probe = {"role": "assistant", "content": _EOT_PROBE}
        prompt = full = ""
        for tools in (None, PROBE_TOOLS):   # some tool-use templates only render with tools
            try:
                prompt = self._render(history, tools, True, kwargs)
                full = self._render([*history, probe], tools, False, kwargs)
                break
            except AutoparserError:
                continue
        else:
            return ""
        if _EOT_PROBE not in full or generated_part(prompt, full, probe, self.analysis.reasoning) is None:
            return ""
        eot = full[full.index(_EOT_PROBE) + len(_EOT_PROBE):]
        turn = {"role": "assistant", "content": "", "tool_calls": [_call(1, "get_weather", WEATHER)]}
        try:
            with_call = self._render([*history, turn], PROBE_TOOLS, False, kwargs)
        except AutoparserError:
            return eot
        if "get_weather" not in with_call[max(0, len(prompt) - 40):]:
            return eot
        return _shared_ending(eot, with_call) or eot

    def expected_text(self, sc: Scenario, history: list[dict[str, Any]], kwargs: dict[str, Any]
                      ) -> tuple[str | None, str, dict[str, Any] | None]:
        """(generated text, why not applicable, the message variant that rendered)."""
        tools = sc.tool_list
        why = "template raised"
        variants = [sc.message, _stringify_args(sc.message)] if sc.tools else [sc.message]
        for variant in variants:
            try:
                prompt = self._render(history, tools, True, kwargs)
                full = self._render([*history, variant], tools, False, kwargs)
            except AutoparserError as e:
                why = f"template raised: {getattr(e, 'message', e)}"
                continue
            out = generated_part(prompt, full, sc.message, self.analysis.reasoning)
            if out is None:
                return None, "history re-rendered differently", None
            missing = [n for n in _needles(sc.message) if n not in out]
            if missing:
                why = f"template does not render {missing[0][:30]!r}"
                continue
            keys = [k for c in sc.message.get("tool_calls", []) for k in c["function"]["arguments"]]
            if any(k not in out for k in keys):
                why = "template does not render the arguments"
                continue
            return out, "", variant
        return None, why, None

    def indistinct(self, sc: Scenario, variant: dict[str, Any], history: list[dict[str, Any]],
                   kwargs: dict[str, Any]) -> str:
        """Why no parser can read an argument back ("" if one can): the template renders a value
        exactly as it renders a string its schema also allows (``since=None`` as ``"None"``)."""
        tools, stringified = sc.tool_list, variant is not sc.message
        full = self._render([*history, variant], tools, False, kwargs)
        schemas = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools or []}
        for i, call in enumerate(sc.message.get("tool_calls") or []):
            props = (schemas.get(call["function"]["name"]) or {}).get("properties") or {}
            for key, value in call["function"]["arguments"].items():
                if isinstance(value, str) or "string" not in _types(props.get(key) or {}):
                    continue
                for alt in _printed(value):
                    msg = copy.deepcopy(sc.message)
                    msg["tool_calls"][i]["function"]["arguments"][key] = alt
                    try:
                        same = self._render([*history, _stringify_args(msg) if stringified else msg], tools,
                                            False, kwargs) == full
                    except AutoparserError:
                        continue
                    if same:
                        return f"template renders {key}={json.dumps(value)} as the string {alt!r}"
        return ""

    def run(self, sc: Scenario) -> ScenarioResult:
        skip = self.cannot_render(sc)
        if skip:
            return ScenarioResult(sc.name, "n/a", skip)
        out: str | None = None
        why, variant, history, kwargs = "no history renders", None, HISTORIES[0], {}
        for kwargs in self.kwarg_options(sc):
            for history in HISTORIES:
                out, why, variant = self.expected_text(sc, history, kwargs)
                if out is not None:
                    break
            if out is not None:
                break
        if out is None or variant is None:
            return ScenarioResult(sc.name, "n/a", why)
        text = _strip_end_of_turn(out, self.end_of_turn(history, kwargs), self.tmpl.renderer.eos_token)
        expected = copy.deepcopy(sc.message)
        req = None
        try:
            req = self.request(history, sc.tool_list, kwargs)
            msg = req.parse(text)
            got = msg.to_dict()
            flagged = bool(msg.warnings or msg.malformed or msg.truncated
                           or any(c.invalid or c.truncated for c in msg.tool_calls))
            why_fail = compare(expected, got, text)
            if why_fail is None and self.stream:
                parser = req.stream()
                deltas: list[dict[str, Any]] = []
                for chunk in _chunks(text, STREAM_CHUNK):
                    deltas.extend(parser.feed(chunk))
                deltas.extend(parser.finish())
                why_stream = compare(expected, merge_deltas(deltas), text)
                if why_stream is not None:
                    why_fail = f"stream: {why_stream}"
        except Exception as e:  # a crash in the parser is a failure of this scenario, not of the run
            return ScenarioResult(sc.name, "fail", f"{type(e).__name__}: {e}".splitlines()[0][:200], text,
                                  expected, None, kwargs, req.prompt if req is not None else "")
        if why_fail is not None and sc.tools:
            lost = self.indistinct(sc, variant, history, kwargs)
            if lost:   # misread, but the text itself cannot tell: the template cannot express this value
                return ScenarioResult(sc.name, "n/a", lost, text, expected, got, kwargs, req.prompt, flagged)
        return ScenarioResult(sc.name, "pass" if why_fail is None else "fail", why_fail or "", text, expected,
                              got, kwargs, req.prompt, flagged)


def self_test(tmpl: ChatTemplate, *, scenarios: tuple[Scenario, ...] = SCENARIOS,
              stream: bool = True) -> SelfTestResult:
    """Render each scenario through ``tmpl``, parse the generated part back and compare.

    ``stream`` also feeds the text to the stream parser in small chunks and compares the
    merged deltas. The argument scenarios run as one call first (:data:`ALL_ARGUMENTS`); only
    when it does not read back do they run one by one. Never raises for a template that loads; a template that cannot render
    a scenario reports it as ``n/a``.
    """
    with verifying():   # its own requests: no verification warning, and no verification started
        runner = _Runner(tmpl, stream)
        arguments = {name for _, name, _ in ARGUMENT_SCENARIOS}
        screened = runner.run(ALL_ARGUMENTS) if any(sc.name in arguments for sc in scenarios) else None
        return SelfTestResult(tmpl.name, tuple(
            dataclasses.replace(screened, name=sc.name) if screened is not None and screened.status == "pass"
            and sc.name in arguments else runner.run(sc) for sc in scenarios))


# ------------------------------------------------------------------ the verified analysis
# scenario -> the capability it shows
CAPABILITIES: dict[str, str] = {
    "content": "content", "reasoning": "reasoning", "tool": "one call", "parallel": "parallel calls",
    "content_tool": "content before a call", "reasoning_tool": "reasoning before a call",
    **{name: cap for cap, name, _ in ARGUMENT_SCENARIOS}}
_STATUS: dict[Status, CapabilityStatus] = {"pass": "verified", "fail": "failed", "n/a": "n/a"}


def _calls_misread(r: ScenarioResult) -> bool:
    """A failed scenario with calls whose calls themselves were read wrong (not only its text)."""
    want = (r.expected or {}).get("tool_calls")
    if r.status != "fail" or not want:
        return False
    if r.got is None or not r.why.removeprefix("stream: ").startswith(("reasoning ", "content ")):
        return True
    return compare({"tool_calls": want}, {"tool_calls": r.got.get("tool_calls")}, r.text) is not None


def verification(result: SelfTestResult) -> Verification:
    """The capabilities a self-test result shows (one per scenario)."""
    return Verification(tuple(
        Capability(CAPABILITIES.get(sc.name, sc.name), _STATUS[sc.status], sc.name, sc.why,
                   calls=bool((sc.expected or {}).get("tool_calls")) or sc.name in _CALL_SCENARIOS,
                   calls_misread=_calls_misread(sc))
        for sc in result.scenarios))


_CALL_SCENARIOS = frozenset(sc.name for sc in SCENARIOS if sc.tools)
