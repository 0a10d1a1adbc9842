"""One row of the per-request decision table (PRE.1–PRE.6), derived from the template.

:func:`decide` reads the analysis, renders a few probe prompts and, when the
template came with a tokenizer (``ChatTemplate.from_pretrained`` /
``from_gguf``), its special tokens. Nothing here names a model family.

* **PRE.1** ``skip_special_tokens``: False when a marker the parser needs is, or
  contains, a special token of the tokenizer (:mod:`.tokens`); tokens added with
  ``special: false`` survive decoding and leave it True. Without a
  tokenizer the row says ``None`` (unknown) and ``skip_special_tokens_applied``
  holds the heuristic: *control-looking* tokens (``<|x|>``, ``<｜x｜>``, Gemma 4's
  ``<|x>``/``<x|>``, Mistral's ``[X]``) are special tokens by convention and would
  be stripped, so False; plain XML-like tags (``<think>``, ``<tool_call>``) are
  plain text or added with ``special=False`` in the tokenizers that use them
  (Qwen3, Hermes, MiniMax, GLM) and survive decoding, so they alone give True.
  End-of-turn markers do not count: the parser does not need them.
* **PRE.2** the ``chat_template_kwargs`` that switch reasoning off (:mod:`.kwargs`);
  when off there is no reasoning extraction.
* **PRE.3** whether the prompt leaves a reasoning block open (the parser starts in
  reasoning), and whether the template opens it again after a tool result.
* **PRE.4** under ``tool_choice`` required/named: the text a forced call starts
  with, and whether reasoning comes (``required``: the prompt opened it) or may
  come (``allowed``) before the call.
* **PRE.5** stop strings: end-of-turn markers found by rendering (plain turns,
  tool-call turns, with ``*_tools`` variables such as Llama 3.1's
  ``builtin_tools`` that switch ``<|eot_id|>`` to ``<|eom_id|>``) plus EOS;
  markers that are also part of the reasoning/content/tool syntax are left out.
* **PRE.6** when reasoning is off (and no call is forced), strip a stray leading
  reasoning start marker from the output.
"""

from __future__ import annotations

import functools
import json
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..analysis.model import Analysis, ContentFormat, ReasoningFormat, ToolFormat
from ..analysis.reasoning import marker_run_before
from ..markers.definition import CONTROL_LOOK, closing_candidates
from ..markers.definition import SHAPES as MARKER
from .kwargs import (
    STANDARD_VARIABLES,
    PromptState,
    ReasoningKwargs,
    ReasoningMarkers,
    core_start,
    discover_reasoning_kwargs,
    generation_part,
    prompt_state,
    template_variables,
)
from .tokens import special_token_status

if TYPE_CHECKING:
    from ..plan import RequestPlan
    from ..render import Renderer


class TemplateLike(Protocol):
    """What the decisions read of a ``ChatTemplate``."""

    @property
    def name(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def analysis(self) -> Analysis: ...
    @property
    def renderer(self) -> Renderer: ...
    @property
    def special_tokens(self) -> frozenset[str] | None: ...
    def __hash__(self) -> int: ...   # decisions are cached per template

__all__ = ["DecisionRow", "ForcedReasoning", "control_looking_parts", "decide", "marker_groups"]

ForcedReasoning = Literal["required", "allowed", "none"]

_PROBE_FN = "probe_fn"
_PROBE_VALUE = "probe-value-7319"
_PROBE_TOOLS = [{"type": "function", "function": {
    "name": _PROBE_FN, "description": "A probe tool.",
    "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}}}]


@dataclass(frozen=True)
class DecisionRow:
    """The PRE.1–PRE.6 decisions for a template (and, optionally, one request)."""

    template: str
    # PRE.1 skip_special_tokens
    skip_special_tokens: bool | None            # None: no tokenizer known
    skip_special_tokens_applied: bool           # the tokenizer's answer, else the heuristic's
    special_tokens_source: Literal["tokenizer", "heuristic"]
    preserved_tokens: tuple[str, ...]           # (special-looking) tokens the parser needs kept
    special_tokens_reason: str
    special_by_part: tuple[tuple[str, bool], ...]   # ("reasoning", False), ("tools", False): applied value
    # PRE.2 reasoning gate
    reasoning_variables: tuple[str, ...]        # reasoning-related variables the template reads
    reasoning_off_kwargs: tuple[tuple[str, Any], ...]
    reasoning_on_kwargs: tuple[tuple[str, Any], ...]
    reasoning_off: bool                         # reasoning switched off (this request, or by default)
    extract_reasoning: bool                     # the parser extracts reasoning
    # PRE.3 prompt-opened reasoning and tool continuation
    prompt_state: PromptState                   # "open" / "closed" / "plain"
    prompt_opens_reasoning: bool                # the parser starts in reasoning
    reseeds_reasoning_after_tool: bool | None   # None: the prompt never opens reasoning
    # PRE.4 tool_choice required / named
    tool_choice_forced: bool
    forced_call_style: str                      # the tool-call style: "none", "json" or "tagged"
    forced_call_start: str                      # fixed text a forced call starts with ("" = bare JSON)
    reasoning_before_forced_call: ForcedReasoning
    # PRE.5 end of turn
    stop: tuple[str, ...]
    # PRE.6 stray reasoning start when reasoning is off (template row: the template can switch it off)
    strip_leading_reasoning_start: bool
    leading_reasoning_start: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (pairs become objects, tuples lists)."""
        d = asdict(self)
        for key in ("reasoning_off_kwargs", "reasoning_on_kwargs", "special_by_part"):
            d[key] = dict(getattr(self, key))
        out: dict[str, Any] = json.loads(json.dumps(d, default=str))
        return out


# --------------------------------------------------------------------------- markers


def marker_groups(a: Analysis) -> dict[str, tuple[str, ...]]:
    """The parser's markers by part (reasoning, content, tools).

    End-of-turn markers are left out (the parser does not need them), and so is a tool
    section end without a section start (Hermes' ``<|im_end|>`` after its calls): it ends
    the turn. A role header glued before the reasoning start (``<｜Assistant｜><think>``)
    is dropped: the prompt writes it, the model does not.
    """
    blank = replace(a, reasoning=ReasoningFormat(), content=ContentFormat(), tools=ToolFormat(), end_of_turn=())
    reasoning = replace(a.reasoning, start=core_start(ReasoningMarkers.from_analysis(a)))
    tools = a.tools if a.tools.section_start else replace(a.tools, section_end="")
    groups = {"reasoning": replace(blank, reasoning=reasoning).markers(),
              "content": replace(blank, content=a.content).markers(),
              "tools": replace(blank, tools=tools).markers()}
    return {k: v for k, v in groups.items() if v}


def control_looking_parts(marker: str) -> tuple[str, ...]:
    """The control-token-looking pieces of ``marker`` (the no-tokenizer heuristic for PRE.1)."""
    return tuple(dict.fromkeys(m.group(0) for m in CONTROL_LOOK.finditer(marker)))


def _applied(markers: tuple[str, ...], special: frozenset[str] | None) -> bool:
    report = special_token_status(markers, special)
    if report.skip_special_tokens is not None:
        return report.skip_special_tokens
    return not any(control_looking_parts(m) for m in markers)


# --------------------------------------------------------------------------- PRE.5


def _syntax_pieces(a: Analysis) -> set[str]:
    """Every marker piece used by reasoning, content or tool syntax."""
    out: set[str] = set()
    for group in marker_groups(a).values():
        for m in group:
            out.update(x.group() for x in MARKER.finditer(m))
            out.add(m)
    return out


def _tool_call_message(args: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_probe1", "type": "function", "function": {"name": _PROBE_FN, "arguments": args}}]}


@functools.lru_cache(maxsize=256)
def _turn_end_markers(digest: str, template: TemplateLike) -> tuple[str, ...]:
    """End-of-turn markers: the analysis's, plus those that close a tool-call turn."""
    a = template.analysis
    found = list(a.end_of_turn)
    if a.tools.style != "none":
        r = template.renderer
        variants: list[dict[str, Any]] = [{}]
        variants += [{v: [_PROBE_FN]} for v in sorted(template_variables(r.source))
                     if v.endswith("tools") and v not in STANDARD_VARIABLES]
        for kw in variants:
            for args in ({"q": _PROBE_VALUE}, json.dumps({"q": _PROBE_VALUE})):
                full = r.try_render([{"role": "user", "content": "Hi"}, _tool_call_message(args)],
                                    tools=_PROBE_TOOLS, add_generation_prompt=False, **kw)
                if full and _PROBE_VALUE in full:
                    run = marker_run_before(full, full.rindex(_PROBE_VALUE))
                    found += [m.group() for m in MARKER.finditer(run)]
                    break
    syntax = _syntax_pieces(a)
    return tuple(m for m in dict.fromkeys(found) if m not in syntax and _PROBE_FN not in m)


def stop_markers(template: TemplateLike) -> tuple[str, ...]:
    """PRE.5: end-of-turn markers plus the EOS token."""
    eos = template.renderer.eos_token
    return tuple(dict.fromkeys([*_turn_end_markers(template.renderer.digest, template), *([eos] if eos else [])]))


# --------------------------------------------------------------------------- PRE.3


def _after_tool_messages(args: Any) -> list[dict[str, Any]]:
    return [{"role": "user", "content": "Use the tool."}, _tool_call_message(args),
            {"role": "tool", "tool_call_id": "call_probe1", "name": _PROBE_FN, "content": "42"}]


def _after_tool_state(template: TemplateLike, markers: ReasoningMarkers, kwargs: dict[str, Any]) -> PromptState | None:
    """The prompt state when the last message is a tool result (None if the template refuses)."""
    try:
        key = json.dumps(kwargs, sort_keys=True)
    except (TypeError, ValueError):
        return _after_tool_state_uncached(template, markers, kwargs)
    return _after_tool_state_cached(template.renderer.digest, key, markers, template)


@functools.lru_cache(maxsize=1024)
def _after_tool_state_cached(digest: str, kwargs_json: str, markers: ReasoningMarkers,
                             template: TemplateLike) -> PromptState | None:
    return _after_tool_state_uncached(template, markers, json.loads(kwargs_json))


def _after_tool_state_uncached(template: TemplateLike, markers: ReasoningMarkers,
                               kwargs: dict[str, Any]) -> PromptState | None:
    for args in ({"q": _PROBE_VALUE}, json.dumps({"q": _PROBE_VALUE})):
        gp = generation_part(template.renderer, _after_tool_messages(args), _PROBE_TOOLS, kwargs)
        if gp is not None:
            return prompt_state(gp, markers, template.source)
    return None


def _opener_in(gp: str) -> str:
    """The last marker of a generation prompt that opens reasoning (fallback start marker)."""
    found = list(MARKER.finditer(gp.rstrip()))
    return found[-1].group() if found else ""


# --------------------------------------------------------------------------- decide


def _forced(tool_choice: Any) -> bool:
    return tool_choice == "required" or isinstance(tool_choice, dict)


def _forced_call_start(t: ToolFormat) -> str:
    if t.style == "none":
        return ""
    return t.section_start or t.call_start or (t.name_prefix if t.style in ("tagged", "layout") else "")


def decide(template: TemplateLike, request: RequestPlan | None = None) -> DecisionRow:
    """The PRE.1–PRE.6 row for ``template``, or for one ``request`` made from it."""
    if request is None:
        return _template_row(template)
    return _decide(template, request)


@functools.lru_cache(maxsize=256)
def _template_row(template: TemplateLike) -> DecisionRow:
    return _decide(template, None)


def _request_state(template: TemplateLike, request: RequestPlan | None, markers: ReasoningMarkers,
                   kw: ReasoningKwargs) -> PromptState:
    """The state of the request's generation prompt (the default prompt's without a request)."""
    if request is None:
        return kw.default_state
    o = request.options
    gp = generation_part(template.renderer, list(o.messages), list(o.tools) if o.tools else None,
                         dict(o.chat_template_kwargs), prompt=request.prompt)
    return prompt_state(gp or "", markers, template.source)


def _reseeds(template: TemplateLike, request: RequestPlan | None, markers: ReasoningMarkers, kw: ReasoningKwargs,
             state: PromptState) -> bool | None:
    """PRE.3: does the prompt open reasoning after a tool result? None when it never opens it."""
    user_state: PromptState | None
    if request is not None:
        if request.options.messages and request.options.messages[-1].get("role") == "tool":
            return state == "open"
        probe, user_state = dict(request.options.chat_template_kwargs), state
    elif kw.default_state == "open":
        probe, user_state = {}, "open"
    else:   # the setting that opens reasoning, if any (DeepSeek V4's thinking=true)
        probe = kw.on_kwargs()
        user_state = next((s for k, v in probe.items() if (s := kw.state_of(k, v)) is not None), kw.default_state)
    if user_state != "open":
        return None
    return _after_tool_state(template, markers, probe) == "open"


def _stray_start(template: TemplateLike, markers: ReasoningMarkers, kw: ReasoningKwargs) -> str:
    """PRE.6: the reasoning start marker the model could still write (from the analysis, else the prompt)."""
    start = core_start(markers)
    if start:
        return start
    on_gp = generation_part(template.renderer, [{"role": "user", "content": "Hi"}], None, kw.on_kwargs())
    if on_gp and prompt_state(on_gp, markers, template.source) == "open":
        return _opener_in(on_gp)
    return ""


def _needed_groups(template: TemplateLike, request: RequestPlan | None, start: str, reasoning_needed: bool
                   ) -> dict[str, tuple[str, ...]]:
    """PRE.1: the marker groups this parser needs (all of them for a template row)."""
    groups = marker_groups(template.analysis)
    if "reasoning" not in groups and start:   # the analysis missed a reasoning block the prompt opens
        closer = next((c for c in closing_candidates(start) if c in template.source), "")
        groups = {"reasoning": tuple(m for m in (start, closer) if m), **groups}
    if request is None:
        return groups
    needed = {"content"} | ({"reasoning"} if reasoning_needed else set()) | \
        ({"tools"} if request.tools is not None else set())
    return {k: v for k, v in groups.items() if k in needed}


def _decide(template: TemplateLike, request: RequestPlan | None) -> DecisionRow:
    a = template.analysis
    markers = ReasoningMarkers.from_analysis(a)
    kw = discover_reasoning_kwargs(template.renderer, markers)
    kwargs = dict(request.options.chat_template_kwargs) if request is not None else {}

    # PRE.2 / PRE.3: is reasoning off, or opened by the prompt?
    state = _request_state(template, request, markers, kw)
    has_reasoning = a.reasoning.mode != "none" or kw.default_state != "plain" or bool(kw.off or kw.on)
    off = has_reasoning and (state == "closed" or (state != "open" and kw.is_off(kwargs)))
    opens = has_reasoning and state == "open"
    wants = request is None or request.options.reasoning_format != "none"
    extract = a.reasoning.mode != "none" and not off and wants
    reseeds = _reseeds(template, request, markers, kw, state) if has_reasoning else None

    # PRE.4 / PRE.6
    forced = request is not None and _forced(request.options.tool_choice)
    before: ForcedReasoning = "none" if not has_reasoning or off else "required" if opens else "allowed"
    start = _stray_start(template, markers, kw) if has_reasoning else ""
    can_be_off = off if request is not None else off or bool(kw.off)
    strip = bool(start) and can_be_off and not forced

    # PRE.1
    groups = _needed_groups(template, request, start, extract or strip)
    needed = tuple(m for g in groups.values() for m in g)
    special = template.special_tokens
    report = special_token_status(needed, special)

    return DecisionRow(
        template=template.name,
        skip_special_tokens=report.skip_special_tokens,
        skip_special_tokens_applied=_applied(needed, special),
        special_tokens_source=report.source,
        preserved_tokens=report.preserved_tokens,
        special_tokens_reason=report.reason,
        special_by_part=tuple((k, _applied(v, special)) for k, v in groups.items()),
        reasoning_variables=kw.variables,
        reasoning_off_kwargs=kw.off,
        reasoning_on_kwargs=kw.on,
        reasoning_off=off,
        extract_reasoning=extract,
        prompt_state=state,
        prompt_opens_reasoning=opens,
        reseeds_reasoning_after_tool=reseeds,
        tool_choice_forced=forced,
        forced_call_style=a.tools.style,
        forced_call_start=_forced_call_start(a.tools),
        reasoning_before_forced_call=before,
        stop=stop_markers(template),
        strip_leading_reasoning_start=strip,
        leading_reasoning_start=start,
    )
