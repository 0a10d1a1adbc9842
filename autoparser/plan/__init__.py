"""The request plan: one frozen value that says what the model may write for one request.

``make_plan(analysis, options, prompt=..., eos_token=...)`` is called once per request
(``ChatTemplate.apply``); the streaming engine, the strict PEG parser and the GBNF grammar
all read the plan and derive nothing from the request on their own, so they cannot disagree
on the request's facts: whether reasoning is open, off or extracted; which tools a call may
name; whether a call is forced; whether the answer is JSON; where the calls open.

The plan sits between the analysis (what the template writes) and the consumers
(``runtime``, ``grammar``, ``decisions``, the API): it imports only the analysis model and
:mod:`autoparser.markers`. Where the calls open (:class:`Opener`) is :mod:`.openers`.
"""

from __future__ import annotations

import functools
import json
import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Generic, Literal, TypeVar

from .. import markers as mk
from ..analysis.model import Analysis, ToolFormat
from ..errors import SchemaError
from ..markers.definition import word_closer
from ..values.refs import inline_refs
from ..values.schemas import check_schema
from .openers import Opener, name_prefix_pattern, opener, opener_inputs

ReasoningFormatOption = Literal["auto", "none", "deepseek", "deepseek-legacy"]
REASONING_FORMATS = ("auto", "none", "deepseek", "deepseek-legacy")
TOOL_CHOICES = ("auto", "none", "required")
RESPONSE_FORMAT_TYPES = ("text", "json_object", "json_schema")
StartOption = Literal["auto", "reasoning", "content"]   # where output whose prompt was rendered elsewhere begins
_REASONING_KEYS = ("reasoning_content", "thinking", "reasoning")
_EMPTY: Mapping[str, Any] = MappingProxyType({})


T = TypeVar("T")


SHARED_SIZE = 128   # values each PerPlan shares between plans by output key (least recently used first out)


class PerPlan(Generic[T]):
    """A value built once per plan: what the engine compiles from a plan, the call guard's validators.

    Kept per plan (plans hash by identity) as long as the plan lives and, with ``shared``, also
    in a bounded LRU by the plan's :attr:`~RequestPlan.output_key`: a new request whose output may
    be what an earlier one's was (same format state and tools) gets the earlier value. A shared
    value must hold nothing that refers to the plan it was built from.
    """

    def __init__(self, build: Callable[[RequestPlan], T], shared: bool = False) -> None:
        self._build = build
        self._values: weakref.WeakKeyDictionary[RequestPlan, T] = weakref.WeakKeyDictionary()
        self._shared: OrderedDict[Hashable, T] | None = OrderedDict() if shared else None
        self._lock = threading.Lock()

    def __call__(self, plan: RequestPlan) -> T:
        value = self._values.get(plan)
        if value is None:
            value = self._values[plan] = self._lookup(plan)
        return value

    def _lookup(self, plan: RequestPlan) -> T:
        shared = self._shared
        key = plan.output_key if shared is not None else None
        if shared is None or key is None:
            return self._build(plan)
        with self._lock:
            value = shared.get(key)
            if value is not None:
                shared.move_to_end(key)
                return value
        value = self._build(plan)
        with self._lock:
            value = shared.setdefault(key, value)
            shared.move_to_end(key)
            while len(shared) > SHARED_SIZE:
                shared.popitem(last=False)
        return value


@dataclass(frozen=True)
class RequestOptions:
    """What the caller asked for (the arguments of ``ChatTemplate.apply``), as given."""

    messages: tuple[dict[str, Any], ...] = ()
    tools: tuple[dict[str, Any], ...] | None = None
    add_generation_prompt: bool = True
    continue_final_message: bool = False
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    tool_choice: Any = "auto"
    parallel_tool_calls: bool = True
    reasoning_format: str = "auto"
    response_format: Mapping[str, Any] | None = None

    @property
    def final_assistant(self) -> dict[str, Any] | None:
        """The final assistant message that ``continue_final_message`` goes on with, if any."""
        if self.continue_final_message and self.messages and self.messages[-1].get("role") == "assistant":
            return self.messages[-1]
        return None


@dataclass(frozen=True)
class ReasoningPlan:
    """The reasoning block of this request's answer."""

    start: str = ""                  # opening marker as rendered ("<think>\n")
    end: str = ""                    # closing marker
    extract: bool = False            # reasoning goes to ``reasoning_content``
    open_at_start: bool = False      # the prompt left the block open: output starts inside it
    inline_prefix: str = ""          # reasoning_format "none": the prompt's open block, put back in content
    off: bool = False                # the request switched reasoning off
    strip_stray: bool = False        # off: drop the markers of a block the model opens anyway (PRE.6)
    tentative: bool = False          # no start marker: text is reasoning only if the end marker comes
    unopened: bool = False           # thinking on, block not opened by the prompt: the model may skip the
                                     # opener, so text before a close with no open is reasoning


@dataclass(frozen=True)
class ContentPlan:
    """Markers that wrap the visible answer, dropped from the content."""

    start: str = ""
    end: str = ""
    markers: tuple[str, ...] = ()    # further wrappers around an answer that precedes calls (a channel header)
    aside_start: str = ""            # a message to another recipient (a built-in tool): set aside, not content
    aside_end: str = ""


@dataclass(frozen=True)
class ToolPlan:
    """The calls this request may contain."""

    format: ToolFormat
    names: tuple[str, ...] = ()      # every declared tool (the tolerant engine accepts any of them)
    allowed: tuple[str, ...] = ()    # the ones ``tool_choice`` allows (the grammars accept only these)
    schemas: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: _EMPTY)   # name -> parameters ({} if none)
    forced: bool = False             # tool_choice "required" or a named function: at least one call
    parallel: bool = True            # more than one call allowed
    opener: Opener = field(default_factory=Opener)
    stray_closers: tuple[str, ...] = ()   # the opener's mirror closer the template never renders ([/TOOL_CALLS])

    def schema(self, name: str) -> Mapping[str, Any]:
        return self.schemas.get(name) or _EMPTY


@dataclass(frozen=True)
class AnswerPlan:
    """``response_format``: the answer is JSON (following ``schema`` when one is given)."""

    json: bool = False
    schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Prefill:
    """``continue_final_message``: what the prompt already holds of the answer."""

    reasoning: str = ""
    reasoning_open: bool = False
    content: str = ""


@dataclass(frozen=True, eq=False)
class RequestPlan:
    """Everything a parser or grammar needs to know about one request's output.

    Compared and hashed by identity: consumers cache what they compile from a plan on it.
    """

    template: str = "<template>"
    analysis: Analysis = field(default_factory=Analysis, repr=False)   # the template's formats
    prompt: str = ""
    options: RequestOptions = field(default_factory=RequestOptions)
    reasoning: ReasoningPlan = field(default_factory=ReasoningPlan)
    content: ContentPlan = field(default_factory=ContentPlan)
    stops: tuple[str, ...] = ()      # end-of-turn markers and EOS
    assistant_header: str = ""       # recognised and dropped if the model echoes it
    tools: ToolPlan | None = None    # None: no calls can occur in this request
    answer: AnswerPlan = field(default_factory=AnswerPlan)
    prefill: Prefill = field(default_factory=Prefill)
    id_prefix: str = "call_"         # ids of calls the model writes without one
    prompt_opened: str = ""          # a call start the prompt ends with (``>>>``): the output
                                     # begins after it, with a call's name or the rest of the answer's start

    @property
    def recognised(self) -> tuple[str, ...]:
        """Markers dropped wherever they appear in free text: the stops and the assistant header."""
        return self.stops + ((self.assistant_header,) if self.assistant_header else ())

    @functools.cached_property
    def output_key(self) -> Hashable | None:
        """What this plan says the output may be, as a hashable value: the plan without the request's
        prompt, messages, template name and call-id prefix, with the tools' and the answer's schemas
        serialised as JSON (in their order: the grammars follow it), what :func:`opener` reads
        of the analysis and the turn's envelope. None when a schema is not plain JSON data.

        Equal keys, equal grammar IR, engine tables and readers (:class:`PerPlan` shares them).
        """
        tp, answer = self.tools, self.answer
        try:
            tools = None if tp is None else (
                tp.format, tp.names, tp.allowed, _json_key(list(tp.schemas.items())), tp.forced, tp.parallel,
                tp.opener, tp.stray_closers)
            schema = _json_key(answer.schema) if answer.schema is not None else None
        except (TypeError, ValueError):
            return None
        return _Key((self.reasoning, self.content, self.stops, self.assistant_header, tools, answer.json, schema,
                     self.prefill, self.prompt_opened, opener_inputs(self.analysis), self.analysis.envelope))


class _Key:
    """A hashable value whose hash is computed once (a plan's output key is looked up by several caches)."""

    __slots__ = ("_hash", "value")

    def __init__(self, value: Hashable) -> None:
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Key) and self._hash == other._hash and self.value == other.value


# ---------------------------------------------------------------- the request's options, checked
def check_options(*, tools: Any, tool_choice: Any, parallel_tool_calls: Any, reasoning_format: Any,
                  response_format: Any) -> None:
    """Refuse options a parser cannot honour, before anything reads them (``apply()``, ``parser_for()``):
    ``ValueError`` naming what is allowed for an unknown ``tool_choice``, ``reasoning_format`` or
    ``response_format`` type; :class:`~autoparser.errors.SchemaError` naming the tool, the keyword and
    where it sits for a tool schema (or response format schema) that cannot be used safely
    (:mod:`autoparser.values.schemas`: remote or unresolvable ``$ref``, wrong keyword types, patterns
    too large to run, too deep, too large). Tools are client data: this never recurses on them."""
    if not (tool_choice in TOOL_CHOICES or tool_choice is None or named_tool(tool_choice) is not None):
        raise ValueError(f"tool_choice must be one of {', '.join(map(repr, TOOL_CHOICES))} or a named function "
                         f"{{'type': 'function', 'function': {{'name': ...}}}}, not {_short(tool_choice)}")
    if isinstance(tool_choice, dict) and tool_choice.get("type", "function") != "function":
        raise ValueError(f"tool_choice of type {_short(tool_choice.get('type'))} is not supported: "
                         "a named tool_choice is {'type': 'function', 'function': {'name': ...}}")
    if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
        raise ValueError(f"parallel_tool_calls must be true or false, not {_short(parallel_tool_calls)}")
    if reasoning_format not in REASONING_FORMATS:
        raise ValueError(f"reasoning_format must be one of {', '.join(map(repr, REASONING_FORMATS))}, "
                         f"not {_short(reasoning_format)}")
    if response_format is not None:
        kind = response_format.get("type") if isinstance(response_format, Mapping) else None
        if kind not in RESPONSE_FORMAT_TYPES:
            raise ValueError(f"response_format must be None or an object whose type is one of "
                             f"{', '.join(map(repr, RESPONSE_FORMAT_TYPES))}, not {_short(response_format)}")
        schema = _response_schema(response_format)
        if schema is not None:
            check_schema(schema, where="response_format schema")
    if tools is None:
        return
    if not isinstance(tools, (list, tuple)):
        raise ValueError(f"tools must be a list of tools, not {type(tools).__name__}")
    for t in tools:
        fn = t.get("function", t) if isinstance(t, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str) or not fn["name"]:
            continue    # not a function tool (a built-in one): not called through the template's format
        params = fn.get("parameters")
        if params is None:
            continue
        name = fn["name"]
        if not isinstance(params, Mapping):
            raise SchemaError(f"tool {name!r} parameters: must be a JSON schema object, not "
                              f"{type(params).__name__}", tool=name, keyword="parameters")
        check_schema(params, where=f"tool {name!r} parameters", tool=name)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _response_schema(rf: Mapping[str, Any]) -> Any:
    """The JSON schema a ``response_format`` gives (OpenAI's ``json_schema.schema``, or ``schema``), if any."""
    js = rf.get("json_schema")
    return js.get("schema", rf.get("schema")) if isinstance(js, Mapping) else rf.get("schema")


# ---------------------------------------------------------------- building a plan
def make_plan(analysis: Analysis, options: RequestOptions, *, prompt: str, eos_token: str = "",
              id_prefix: str = "call_", start: StartOption = "auto", turn_ends: tuple[str, ...] = ()) -> RequestPlan:
    """The plan for one request whose rendered prompt is ``prompt``.

    ``turn_ends``: end-of-turn markers besides the analysis's, such as those the template writes
    after tool calls only (``<|eom_id|>``, PRE.5's stop strings): they end the turn too.

    ``start`` overrides where the output begins when the prompt was rendered elsewhere and
    its end does not tell (``"reasoning"``: inside an open reasoning block).
    Raises ``ValueError`` when ``tool_choice`` names a function that is not in ``tools``.
    """
    a = analysis
    reasoning = _reasoning_plan(a, options, prompt, start)
    schemas = _schemas(options.tools)
    tools = _tool_plan(a, options, schemas)
    eos = (eos_token,) if eos_token else ()
    content_start, content_end = a.content.start, a.content.end
    answer = _answer_plan(options.response_format)
    if answer.json and not content_start:
        content_start, content_end = "```json", "```"   # a fenced JSON answer: the fence is a marker
    return RequestPlan(
        template=a.template, analysis=a, prompt=prompt, options=options, reasoning=reasoning,
        content=ContentPlan(content_start, content_end, _wrappers(a.content.in_tool_turns, reasoning),
                            a.content.aside_start, a.content.aside_end),
        stops=tuple(dict.fromkeys([*a.end_of_turn, *(m for m in turn_ends if m.strip()), *eos])),
        assistant_header=a.assistant_header,
        tools=tools, answer=answer, prefill=_prefill(options, reasoning), id_prefix=id_prefix,
        prompt_opened=_prompt_opened(a.tools, prompt))


def _prompt_opened(t: ToolFormat, prompt: str) -> str:
    """The call start the prompt ends with, if any (calls with a section have it opened by the section)."""
    start = t.call_start.strip()
    return start if t.style != "none" and start and not t.section_start.strip() and prompt.endswith(start) else ""


def _wrappers(markers: tuple[str, ...], reasoning: ReasoningPlan) -> tuple[str, ...]:
    """The answer's wrapper markers, without those that open or close reasoning when the reasoning is kept
    in the content (reasoning_format "none"): there its markers stay with it, as ``<think>`` does."""
    start, end = reasoning.start.strip(), reasoning.end.strip()
    if reasoning.extract or reasoning.off or not (start or end):
        return markers
    return tuple(m for m in markers if not ((start and start.startswith(m.strip()))
                                            or (end and m.strip().startswith(end))))


def _json_key(value: Any) -> str:
    """``value`` (JSON data, mappings of any kind) as JSON text, keys in their order; TypeError otherwise."""
    def plain(o: Any) -> Any:
        if isinstance(o, Mapping):
            return dict(o)
        raise TypeError(f"not JSON data: {type(o).__name__}")
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=plain, allow_nan=False)


def _schemas(tools: tuple[dict[str, Any], ...] | None) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for t in tools or ():
        fn = t.get("function", t) if isinstance(t, dict) else {}
        if isinstance(fn, dict) and isinstance(fn.get("name"), str) and fn["name"]:
            params = fn.get("parameters")
            # local $refs resolved, so that arguments are typed through them; others left for the grammar
            out[fn["name"]] = inline_refs(params, strict=False) if isinstance(params, dict) else {}
    return out


def named_tool(tool_choice: Any) -> str | None:
    """The function a ``tool_choice`` dict names (OpenAI ``{"type": "function", "function": {"name": ...}}``)."""
    if not isinstance(tool_choice, dict):
        return None
    fn = tool_choice.get("function") if isinstance(tool_choice.get("function"), dict) else tool_choice
    name = fn.get("name") if isinstance(fn, dict) else None
    return name if isinstance(name, str) and name else None


def _tool_plan(a: Analysis, options: RequestOptions, schemas: dict[str, Mapping[str, Any]]) -> ToolPlan | None:
    tc = options.tool_choice
    wanted = named_tool(tc)
    if wanted is not None and wanted not in schemas:
        declared = ", ".join(sorted(schemas)) or "none"
        raise ValueError(f"tool_choice names function {wanted!r}, which is not in tools (declared: {declared})")
    if not schemas or tc == "none" or a.tools.style == "none":
        return None
    names = tuple(schemas)
    allowed = (wanted,) if wanted is not None else names
    return ToolPlan(format=a.tools, names=names, allowed=allowed, schemas=MappingProxyType(schemas),
                    forced=tc == "required" or wanted is not None, parallel=bool(options.parallel_tool_calls),
                    opener=opener(a, names), stray_closers=stray_closers(a.tools))


def stray_closers(t: ToolFormat) -> tuple[str, ...]:
    """Closers models write after calls that the template never renders: the mirror of a
    ``[NAME]`` or ``<NAME>`` opener (``[/TOOL_CALLS]``), when the format has no such end."""
    out = []
    ends = t.section_end + t.call_end + t.call_close
    for marker in (t.section_start, t.call_start):
        closer = word_closer(marker)
        if closer is not None and closer not in ends:
            out.append(closer)
    return tuple(out)


def _answer_plan(rf: Mapping[str, Any] | None) -> AnswerPlan:
    if not isinstance(rf, Mapping) or rf.get("type") in (None, "text"):
        return AnswerPlan()
    schema = _response_schema(rf)
    return AnswerPlan(json=True, schema=schema if isinstance(schema, Mapping) else None)


# ---------------------------------------------------------------- reasoning state
def _reasoning_plan(a: Analysis, options: RequestOptions, prompt: str, start: StartOption) -> ReasoningPlan:
    r = a.reasoning
    if r.mode == "none":
        return ReasoningPlan()
    if start == "reasoning":        # the caller knows: output begins inside the reasoning block
        open_, off, prefix = True, False, r.start.strip()
    elif start == "content":        # ... or after it (its reasoning phase was handled elsewhere)
        open_, off, prefix = False, False, ""
    else:
        open_, off, prefix = prompt_reasoning_state(a, options, prompt)
    final = options.final_assistant
    if final is not None and not final.get("content") and any(final.get(k) for k in _REASONING_KEYS):
        open_, off = True, False   # the model goes on with the reasoning it started
    elif final is not None and _answer_text(final.get("content"), r.start):
        # the model goes on with the answer it started, which the template may print inside the block
        # it opens for every answer ("<think>\nHello, ")
        open_, prefix = False, ""
    extract = options.reasoning_format != "none" and not off
    return ReasoningPlan(start=r.start, end=r.end, extract=extract, open_at_start=open_, inline_prefix=prefix,
                         off=off, strip_stray=off and options.reasoning_format != "none",
                         tentative=r.mode == "delimiter" and not options.continue_final_message,
                         unopened=extract and not open_ and r.mode == "tagged" and bool(r.start.strip())
                         and bool(r.end.strip()) and not options.continue_final_message
                         and (r.scope == "always" or _switched_on(r.on_kwargs, options.chat_template_kwargs)))


def _answer_text(content: Any, start: str) -> bool:
    """Answer text that holds no reasoning opener of its own."""
    return isinstance(content, str) and bool(content.strip()) and not (start.strip() and start.strip() in content)


def _switched_on(on: Mapping[str, Any], kwargs: Mapping[str, Any]) -> bool:
    """The request switches thinking on explicitly (``enable_thinking=True``)."""
    return bool(on) and all(kwargs.get(k) == v for k, v in on.items())


def prompt_reasoning_state(a: Analysis, options: RequestOptions, prompt: str) -> tuple[bool, bool, str]:
    """(the prompt leaves reasoning open, reasoning is switched off, the open block's text)."""
    r = a.reasoning
    if r.mode == "none":
        return False, False, ""
    tail = prompt[-4000:]
    start, end = r.start.strip(), r.end.strip()
    header = a.assistant_header
    if end and header and "".join(tail.split()).endswith("".join((header + end).split())):
        return False, True, ""   # the assistant turn opens with a closed reasoning block: thinking is off
    if start:
        i = tail.rfind(start)
        gp = a.generation_prompt
        if i >= 0 and not r.prefilled and gp.strip() and tail.endswith(gp) and i >= len(tail) - len(gp):
            i = -1   # the opener's text is the generation prompt's own (``>`` ending ``<<assistant>>``)
        if i >= 0:
            after = tail[i + len(start):]
            if not end and r.end.strip(" \t"):
                # a closer of line breaks alone (a blank line): the empty block "Thought: \n\n" is closed
                rest = tail[i + len(r.start):] if tail.startswith(r.start, i) else after
                if re.search(mk.block_pattern(r.end, opener=False), rest):
                    return False, True, ""
            if not after.strip():
                return True, False, tail[i:]
            if end and after.strip() == end:
                return False, True, ""
            if end and end not in after and options.continue_final_message:
                return True, False, tail[i:]
        return False, False, ""
    # delimiter style: reasoning comes first unless an end marker already closed it
    if end and tail.rstrip().endswith(end):
        return False, True, ""
    kwargs = options.chat_template_kwargs
    off = bool(r.off_kwargs) and all(kwargs.get(k) == v for k, v in r.off_kwargs.items())
    return (not off), off, ""


def _prefill(options: RequestOptions, reasoning: ReasoningPlan) -> Prefill:
    final = options.final_assistant
    if final is None:
        return Prefill()
    text = next((final[k] for k in _REASONING_KEYS if isinstance(final.get(k), str) and final.get(k)), "")
    content = final.get("content")
    return Prefill(reasoning=text if reasoning.extract else "", reasoning_open=reasoning.open_at_start,
                   content=content if isinstance(content, str) else "")


__all__ = ["AnswerPlan", "ContentPlan", "Opener", "Prefill", "ReasoningPlan", "RequestOptions", "RequestPlan",
           "StartOption", "ToolPlan", "make_plan", "name_prefix_pattern", "named_tool", "opener"]
