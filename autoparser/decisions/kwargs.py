"""PRE.2: which ``chat_template_kwargs`` switch reasoning off (or on), found by rendering.

The variables a template reads come from its AST
(:func:`jinja2.meta.find_undeclared_variables`). The reasoning-related ones
(``enable_thinking``, ``thinking``, ``thinking_mode``, ``reasoning_effort``,
``force_nonempty_content``, ...) are tried one at a time with ``True``, ``False``
and every literal the template compares them with; each render's generation
prompt is classified:

* ``open``: the prompt ends inside a reasoning block (``...<think>\\n``): the
  model continues with reasoning;
* ``closed``: the prompt holds a closed reasoning block (``<think>\\n\\n</think>``,
  DeepSeek's bare ``</think>``, Gemma 4's ``<|channel>thought\\n<channel|>``) or
  has already opened the answer (Kimi K3's ``<|open|>response<|sep|>``):
  reasoning is off;
* ``plain``: neither; the model may or may not reason on its own (Qwen3's default).

A setting switches reasoning *off* when it gives ``closed``, or when it turns an
``open`` prompt into a ``plain`` one (the template stops forcing reasoning). It
switches reasoning *on* when it is another value of such a toggle (``open``
first: DeepSeek V4's ``thinking=true``; then ``plain``: Qwen3's
``enable_thinking=true``, Gemma 4's, whose default prompt is ``closed``).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from jinja2 import meta, nodes

from ..diff.split import common_prefix_len, fix_prefix_end
from ..markers.definition import SHAPES as MARKER
from ..markers.definition import closing_candidates, is_closing
from ..render import Renderer, make_environment

__all__ = [
    "STANDARD_VARIABLES",
    "KwargTrial",
    "PromptState",
    "ReasoningKwargs",
    "ReasoningMarkers",
    "candidate_values",
    "discover_reasoning_kwargs",
    "generation_part",
    "prompt_state",
    "reasoning_variables",
    "template_variables",
]

PromptState = Literal["open", "closed", "plain"]

# Variables every render receives (transformers' apply_chat_template context).
STANDARD_VARIABLES = frozenset({"messages", "tools", "add_generation_prompt", "bos_token", "eos_token",
                                "documents", "continue_final_message"})
_REASONING_NAME = re.compile(r"think|reason|effort|budget|nonempty|non_empty|deliberat", re.I)
_MESSAGE_FIELD = re.compile(r"(_content|_text)$")     # reasoning_content, thinking_text: per-message values
_EFFORT_LEVELS = ("none", "minimal", "low", "medium", "high")
_THINK_WORD = re.compile(r"think|reason|thought", re.I)
_MAX_VALUES = 10

PROBE_USER = "Reply to me, please."


@dataclass(frozen=True)
class ReasoningMarkers:
    """The markers prompt classification looks for (from the analysis; all may be empty)."""

    start: str = ""          # reasoning start as the model writes it ("<think>\n")
    end: str = ""            # reasoning end ("\n</think>\n\n")
    content_start: str = ""  # answer wrapper start, if any ("<|open|>response<|sep|>")

    @classmethod
    def from_analysis(cls, analysis: Any) -> ReasoningMarkers:
        r = analysis.reasoning
        return cls(start=r.start, end=r.end, content_start=analysis.content.start)


@dataclass(frozen=True)
class KwargTrial:
    """One ``chat_template_kwargs`` setting tried alone, and the state of its generation prompt."""

    name: str
    value: Any
    state: PromptState


@dataclass(frozen=True)
class ReasoningKwargs:
    """The reasoning switches of a template, found by rendering."""

    variables: tuple[str, ...]                 # reasoning-related variables the template reads
    default_state: PromptState                 # the generation prompt with no kwargs
    trials: tuple[KwargTrial, ...]             # every setting tried (renders that failed are left out)
    off: tuple[tuple[str, Any], ...]           # settings that switch reasoning off
    on: tuple[tuple[str, Any], ...]            # settings that switch it on (open first)

    @property
    def effective(self) -> tuple[str, ...]:
        """Variables with at least one setting that switches reasoning off or on."""
        return tuple(dict.fromkeys(n for n, _ in (*self.off, *self.on)))

    def off_kwargs(self) -> dict[str, Any]:
        """One setting per variable that switches reasoning off (first found)."""
        out: dict[str, Any] = {}
        for name, value in self.off:
            out.setdefault(name, value)
        return out

    def on_kwargs(self) -> dict[str, Any]:
        """The first setting that opens reasoning in the prompt (else the first that switches it on)."""
        opened = [(n, v) for n, v in self.on if self.state_of(n, v) == "open"]
        for name, value in opened or list(self.on):
            return {name: value}
        return {}

    def state_of(self, name: str, value: Any) -> PromptState | None:
        for t in self.trials:
            if t.name == name and _same(t.value, value):
                return t.state
        return None

    def is_off(self, kwargs: Mapping[str, Any]) -> bool:
        """Does any of ``kwargs`` match a setting that switches reasoning off?"""
        return any(name in kwargs and _same(kwargs[name], value) for name, value in self.off)


def _same(a: Any, b: Any) -> bool:
    """Equality that keeps ``True`` and ``1`` apart."""
    return type(a) is type(b) and a == b


# --------------------------------------------------------------------------- the AST


@functools.lru_cache(maxsize=256)
def _parse(source: str) -> nodes.Template:
    return make_environment().parse(source)


def template_variables(source: str) -> frozenset[str]:
    """Every variable the template reads from its context (jinja2.meta)."""
    return frozenset(meta.find_undeclared_variables(_parse(source)))


def is_reasoning_variable(name: str) -> bool:
    """A name that looks like a reasoning switch (not a per-message field)."""
    if name in STANDARD_VARIABLES or not _REASONING_NAME.search(name):
        return False
    return not _MESSAGE_FIELD.search(name) or "nonempty" in name or "non_empty" in name


def reasoning_variables(source: str) -> tuple[str, ...]:
    """The reasoning-related variables the template reads, sorted."""
    return tuple(sorted(n for n in template_variables(source) if is_reasoning_variable(n)))


def _names_in(node: nodes.Node, name: str) -> bool:
    return isinstance(node, nodes.Name) and node.name == name


def _consts(node: nodes.Node) -> list[Any]:
    if isinstance(node, nodes.Const):
        return [node.value]
    if isinstance(node, (nodes.List, nodes.Tuple)):
        return [i.value for i in node.items if isinstance(i, nodes.Const)]
    return []


def candidate_values(source: str, name: str) -> tuple[Any, ...]:
    """Values worth trying for ``name``: booleans, the literals the template compares it with
    (``thinking_mode == "chat"``, ``x in ["low", "high"]``, ``x | default("medium")``) and,
    for effort-like names, the usual effort levels."""
    ast = _parse(source)
    found: list[Any] = [True, False]
    for cmp in ast.find_all(nodes.Compare):
        operands = [cmp.expr, *(op.expr for op in cmp.ops)]
        if any(_names_in(o, name) for o in operands):
            for o in operands:
                found += _consts(o)
    for flt in ast.find_all(nodes.Filter):
        if flt.name == "default" and flt.node is not None and _names_in(flt.node, name):
            for arg in flt.args:
                found += _consts(arg)
    if "effort" in name.lower():
        found += list(_EFFORT_LEVELS)
    if "budget" in name.lower():
        found += [0]
    out: list[Any] = []
    for v in found:
        if isinstance(v, (str, int, float, bool)) and not any(_same(v, w) for w in out):
            out.append(v)
    return tuple(out[:_MAX_VALUES])


# --------------------------------------------------------------------------- classifying prompts


def generation_part(renderer: Renderer, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
                    kwargs: Mapping[str, Any], prompt: str | None = None) -> str | None:
    """What ``add_generation_prompt=True`` adds after the conversation (None if the render fails)."""
    with_gp = prompt if prompt is not None else renderer.try_render(
        messages, tools=tools, add_generation_prompt=True, **kwargs)
    if with_gp is None:
        return None
    without = renderer.try_render(messages, tools=tools, add_generation_prompt=False, **kwargs)
    if without is None:
        return with_gp[-200:]
    n = fix_prefix_end(with_gp, common_prefix_len(with_gp, without))
    return with_gp[n:]


def core_start(markers: ReasoningMarkers) -> str:
    """The reasoning opener without a role header glued before it (``<｜Assistant｜><think>`` → ``<think>``)."""
    start, end = markers.start.strip(), markers.end.strip()
    if not start:
        return ""
    pieces = list(MARKER.finditer(start))
    for m in pieces[1:]:
        tail = start[m.start():]
        if end and any(c in end for c in closing_candidates(tail)):
            return tail
    return start


def prompt_state(gp: str, markers: ReasoningMarkers, source: str = "") -> PromptState:
    """Classify a generation prompt (the part ``add_generation_prompt`` adds) as open, closed or plain."""
    tail = gp.rstrip()
    if not tail:
        return "plain"
    start, end = markers.start.strip(), markers.end.strip()
    starts = [s for s in dict.fromkeys((start, core_start(markers))) if s]
    if end and end in tail:
        last_end = tail.rfind(end)
        last_start = max((tail.rfind(s) for s in starts), default=-1)
        if last_start < last_end:
            return "closed"
    if markers.content_start.strip() and tail.endswith(markers.content_start.strip()):
        return "closed"
    if any(tail.endswith(s) for s in starts):
        return "open"
    return _fallback_state(tail, source)


def _fallback_state(tail: str, source: str) -> PromptState:
    """Without analysed markers: a trailing think-like marker opens or closes reasoning."""
    found = list(MARKER.finditer(tail))
    if not found or tail[found[-1].end():].strip():
        return "plain"
    last = found[-1].group()
    if not _THINK_WORD.search(last):
        return "plain"
    if is_closing(last):
        return "closed"
    if any(c in source for c in closing_candidates(last)):
        return "open"
    return "plain"


# --------------------------------------------------------------------------- discovery


def discover_reasoning_kwargs(renderer: Renderer, markers: ReasoningMarkers | None = None) -> ReasoningKwargs:
    """Try each reasoning variable's values and classify the generation prompt (cached per template)."""
    return _discover(renderer.digest, markers or ReasoningMarkers(), renderer)


@functools.lru_cache(maxsize=256)
def _discover(digest: str, markers: ReasoningMarkers, renderer: Renderer) -> ReasoningKwargs:
    source = renderer.source
    msgs = [{"role": "user", "content": PROBE_USER}]

    def state(kwargs: Mapping[str, Any]) -> PromptState | None:
        gp = generation_part(renderer, msgs, None, kwargs)
        return None if gp is None else prompt_state(gp, markers, source)

    default = state({}) or "plain"
    variables = reasoning_variables(source)
    trials: list[KwargTrial] = []
    for name in variables:
        for value in candidate_values(source, name):
            s = state({name: value})
            if s is not None:
                trials.append(KwargTrial(name, value, s))
    return ReasoningKwargs(variables=variables, default_state=default, trials=tuple(trials),
                           off=_off(trials, default), on=_on(trials, default))


def _by_name(trials: Iterable[KwargTrial]) -> dict[str, list[KwargTrial]]:
    out: dict[str, list[KwargTrial]] = {}
    for t in trials:
        out.setdefault(t.name, []).append(t)
    return out


def _toggles(group: list[KwargTrial], default: PromptState) -> bool:
    return len({t.state for t in group} | {default}) > 1


def _off(trials: list[KwargTrial], default: PromptState) -> tuple[tuple[str, Any], ...]:
    out = []
    for group in _by_name(trials).values():
        if not _toggles(group, default):
            continue
        forces_open = any(t.state == "open" for t in group)
        for t in group:
            if t.state == "closed" or (t.state == "plain" and forces_open):
                out.append((t.name, t.value))
    return tuple(out)


def _on(trials: list[KwargTrial], default: PromptState) -> tuple[tuple[str, Any], ...]:
    """Settings of a toggling variable that do not switch reasoning off; those that open it first."""
    off = set(_off(trials, default))
    opened: list[tuple[str, Any]] = []
    rest: list[tuple[str, Any]] = []
    for group in _by_name(trials).values():
        if not _toggles(group, default):
            continue
        for t in group:
            if any(t.name == n and _same(t.value, v) for n, v in off):
                continue
            (opened if t.state == "open" else rest).append((t.name, t.value))
    return tuple(opened + rest)
