"""Differential analysis: from a template alone to an ``Analysis`` (cached per template digest)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import threading
from collections import OrderedDict

from .._version import __version__
from ..errors import AnalysisError, AutoparserError
from ..markers import definition as marker
from ..probes import needles as N
from ..probes.prober import Prober
from ..render import Renderer
from .capabilities import probe_capabilities
from .content import (
    CANNOT_READ,
    analyze_content,
    content_turn,
    json_turn_keys,
    recipient_start,
    tool_turn_wrappers,
)
from .envelope import analyze_envelope
from .model import Analysis, Capabilities, ContentFormat, ReasoningFormat, ToolFormat
from .reasoning import analyze_reasoning, declared_tags
from .special import apply_special
from .tools import analyze_tools, call_start_in_prompt

log = logging.getLogger("autoparser")

__all__ = ["Analysis", "Capabilities", "ContentFormat", "ReasoningFormat", "ToolFormat", "analyze"]


CACHE_SIZE = 64   # analyses kept (least recently used first out); one is a few kilobytes


class _AnalysisCache:
    """A bounded LRU map from a template digest to its analysis (thread-safe)."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, Analysis] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Analysis | None:
        with self._lock:
            found = self._data.get(key)
            if found is not None:
                self._data.move_to_end(key)
            return found

    def put(self, key: str, analysis: Analysis) -> None:
        with self._lock:
            self._data[key] = analysis
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()

    def __len__(self) -> int:
        return len(self._data)


_cache = _AnalysisCache(CACHE_SIZE)


def cache_key(renderer: Renderer) -> str:
    """sha256 of everything an analysis depends on: the source, bos and eos, the render limits
    (a tighter limit can make probes fail) and the package version (the rules themselves)."""
    limits = renderer.limits
    limits_data = dataclasses.asdict(limits) if dataclasses.is_dataclass(limits) else repr(limits)
    blob = json.dumps([renderer.source, renderer.bos_token, renderer.eos_token, limits_data, __version__],
                      sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()


def clear_cache() -> None:
    """Forget every cached analysis (benchmarks: the next analysis runs cold)."""
    _cache.clear()


def analyze(renderer: Renderer) -> Analysis:
    """Analyse a template, cached (LRU, :data:`CACHE_SIZE` entries) by :func:`cache_key`, so two
    templates with the same source, special tokens and limits share one analysis."""
    key = cache_key(renderer)
    analysis = _cache.get(key)
    if analysis is None:
        analysis = _analyze(renderer)
        _cache.put(key, analysis)
    if analysis.template != renderer.name:   # same template under another name: same analysis
        analysis = analysis.renamed(renderer.name)
    return analysis


def _header(gp: str, reasoning: ReasoningFormat) -> str:
    """The marker run that opens an assistant turn, without a prefilled reasoning opener."""
    from .reasoning import marker_run_before

    text = gp
    start = reasoning.start.strip()
    if start and reasoning.prefilled and text.rstrip().endswith(start):
        text = text.rstrip()[: -len(start)]
    return marker_run_before(text).strip()


def _inside_answer(tools: ToolFormat, content: ContentFormat) -> bool:
    start, end = tools.section_start.strip(), tools.section_end.strip()
    return bool(start) and start == content.start.strip() and end == content.end.strip()


def _analyze(renderer: Renderer) -> Analysis:
    """The analysis, or :class:`AnalysisError` when the template cannot be read: it renders no
    user message at all, or a probe rendering breaks a rule in a way no rule expected (a bug
    either way, reported with the template's name instead of a bare Python exception).
    :class:`TemplateError` (limits, sandbox) passes through as it is."""
    try:
        return _analyze_unchecked(renderer)
    except AutoparserError:
        raise
    except (RecursionError, MemoryError):
        raise
    except Exception as e:
        raise AnalysisError(f"unexpected {type(e).__name__}: {e}", template=renderer.name) from e


def _check_readable(pr: Prober, renderer: Renderer) -> None:
    """A template that shows the user's message in no basic rendering (plain or in parts, with or
    without a system message and tools, with or without the generation prompt) cannot be analysed."""
    parts = [{"type": "text", "text": N.USER}]
    conversations = [pr.history, [{"role": "user", "content": N.USER}], [{"role": "user", "content": parts}],
                     [{"role": "system", "content": N.SYSTEM}, {"role": "user", "content": N.USER}]]
    refused = True
    for messages in conversations:
        for tools in (None, N.TOOLS):
            for agp in (True, False):
                out = pr.render(messages, tools, agp)
                if out is not None and N.USER in out:
                    return
                refused = refused and out is None
    why = "it raises on every basic conversation" if refused else "it does not print the user's message"
    raise AnalysisError(f"cannot read the template: {why}", template=renderer.name)


def vocabulary(pr: Prober, literals: tuple[str, ...]) -> marker.Vocabulary:
    """The template's markers: the pieces of its own text, of its generation prompt and of what
    follows an answer (text no data was put in)."""
    from ..diff.split import common_prefix_len, fix_prefix_end

    with_gp, without = pr.prompt() or "", pr.render(pr.history, None, False) or ""
    texts = [with_gp[fix_prefix_end(with_gp, common_prefix_len(with_gp, without)):]]
    turn = content_turn(pr)
    if turn is not None and N.ASSISTANT in turn:
        texts.append(turn[turn.index(N.ASSISTANT) + len(N.ASSISTANT):])
    return marker.Vocabulary.of_template(literals).with_text(*texts)


def _analyze_unchecked(renderer: Renderer) -> Analysis:
    pr = Prober(renderer, {"enable_thinking": True})
    _check_readable(pr, renderer)
    with marker.using(vocabulary(pr, renderer.literals)):
        return _analyze_with_markers(pr, renderer)


def _analyze_with_markers(pr: Prober, renderer: Renderer) -> Analysis:
    caps = probe_capabilities(pr)
    notes: list[str] = []
    content, eot, eot_text = analyze_content(pr)
    keys = json_turn_keys(pr)
    if keys:
        # the answer is a JSON string inside an object that is the whole turn: no marker frames it
        gp = pr.generation_prompt()
        found = analyze_envelope(pr)
        if found is None:
            note = (f"{CANNOT_READ} the whole turn is one JSON object (keys: {', '.join(keys)}); its members "
                    "(reply, reasoning, calls) are not told apart, the output reads as content")
            return Analysis(template=renderer.name, digest=renderer.digest, capabilities=caps,
                            generation_prompt=gp, end_of_turn=eot, assistant_header=_header(gp, ReasoningFormat()),
                            notes=(note,))
        envelope, section = found
        caps = dataclasses.replace(caps, reasoning=caps.reasoning or bool(envelope.reasoning_key),
                                   tool_calls=caps.tool_calls and bool(envelope.calls_key))
        note = (f"the whole turn is one JSON object: reasoning {envelope.reasoning_key or '-'}, reply "
                f"{envelope.content_key}, calls {envelope.calls_key or '-'}; the grammars constrain the calls only")
        return Analysis(template=renderer.name, digest=renderer.digest, capabilities=caps, generation_prompt=gp,
                        end_of_turn=eot, assistant_header=_header(gp, ReasoningFormat()), tools=section,
                        envelope=envelope,
                        notes=(note,))
    reasoning = analyze_reasoning(pr, renderer.source, content_start=content.start)
    if not content.start and reasoning.mode != "none":
        declared = declared_tags(pr, {"enable_thinking": True}, {})
        if "content" in declared:
            content = ContentFormat(start=declared["content"][0], end=declared["content"][1])
    tools = ToolFormat()
    if caps.tool_calls:
        try:
            tools, tool_notes = analyze_tools(pr, eot_text, reasoning.end, eot)
        except (ValueError, IndexError, KeyError) as e:   # a rendering no rule expected: no tool format
            log.warning("%s: tool analysis failed: %s", renderer.name, e)
            tools, tool_notes = ToolFormat(), [f"tool analysis failed: {type(e).__name__}: {e}"]
        notes += tool_notes
    gp = pr.generation_prompt()
    if tools.style != "none" and _inside_answer(tools, content):
        # the answer's own block holds the calls (``<answer>text<call>...</call></answer>``): it is
        # no call section, or the answer before the calls would be read as part of one
        tools = dataclasses.replace(tools, section_start="", section_end="")
        notes.append("calls are written inside the answer's wrapper")
    if tools.style != "none":
        tools = call_start_in_prompt(tools, gp)
        content = recipient_start(pr, content, tools.call_start, gp)
        extra = tool_turn_wrappers(pr, content, tools.section_start or tools.call_start)
        if extra:
            content = dataclasses.replace(content, in_tool_turns=extra)
    caps = dataclasses.replace(caps, reasoning=caps.reasoning or reasoning.mode != "none",
                               thinking_toggle=bool(reasoning.off_kwargs))
    analysis = Analysis(template=renderer.name, digest=renderer.digest, capabilities=caps,
                        generation_prompt=gp, reasoning=reasoning, content=content,
                        tools=tools, end_of_turn=eot, assistant_header=_header(gp, reasoning),
                        notes=tuple(notes))
    return apply_special(analysis, renderer)
