"""Differential analysis: from a template alone to an ``Analysis`` (cached per template hash)."""

from __future__ import annotations

import dataclasses
import functools
import logging

from ..probes.prober import Prober
from ..render import Renderer
from .capabilities import probe_capabilities
from .content import analyze_content, tool_turn_wrappers
from .model import Analysis, Capabilities, ContentFormat, ReasoningFormat, ToolFormat
from .reasoning import analyze_reasoning, declared_tags
from .special import apply_special
from .tools import analyze_tools

log = logging.getLogger("autoparser")

__all__ = ["Analysis", "Capabilities", "ContentFormat", "ReasoningFormat", "ToolFormat", "analyze"]


def analyze(renderer: Renderer) -> Analysis:
    """Analyse a template (cached by the digest of source, bos and eos)."""
    return _analyze_cached(renderer.digest, renderer)


@functools.lru_cache(maxsize=512)
def _analyze_cached(digest: str, renderer: Renderer) -> Analysis:
    return _analyze(renderer)


def _header(gp: str, reasoning: ReasoningFormat) -> str:
    """The marker run that opens an assistant turn, without a prefilled reasoning opener."""
    from .reasoning import marker_run_before

    text = gp
    start = reasoning.start.strip()
    if start and text.rstrip().endswith(start):
        text = text.rstrip()[: -len(start)]
    return marker_run_before(text).strip()


def _analyze(renderer: Renderer) -> Analysis:
    pr = Prober(renderer, {"enable_thinking": True})
    caps = probe_capabilities(pr)
    notes: list[str] = []
    content, eot, eot_text = analyze_content(pr)
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
    if tools.style != "none":
        extra = tool_turn_wrappers(pr, content, tools.section_start or tools.call_start)
        if extra:
            content = dataclasses.replace(content, in_tool_turns=extra)
    caps = dataclasses.replace(caps, reasoning=caps.reasoning or reasoning.mode != "none",
                               thinking_toggle=bool(reasoning.off_kwargs))
    gp = pr.generation_prompt()
    analysis = Analysis(template=renderer.name, digest=renderer.digest, capabilities=caps,
                        generation_prompt=gp, reasoning=reasoning, content=content,
                        tools=tools, end_of_turn=eot, assistant_header=_header(gp, reasoning),
                        notes=tuple(notes))
    return apply_special(analysis, renderer)
