"""Last-resort, template-specific knowledge, applied after the general analysis.

Each entry names the family it serves, says why rendering cannot reveal the
format, and is expressed as data (the same ``ToolFormat`` the analysis would
produce). Every entry is exercised by ``tests/test_special.py`` on the
templates it names. Keep this list short: a template that renders its own
tool calls never needs an entry here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from ..render import Renderer
from .model import Analysis, LiteralArgs, ToolFormat


@dataclass(frozen=True)
class Special:
    name: str                      # family, as named in tests
    why: str                       # why the general analysis cannot see it
    applies: Callable[[Analysis, str], bool]
    tools: ToolFormat


SPECIALS: tuple[Special, ...] = (
    Special(
        name="lfm2-pythonic",
        why="LFM2 / LFM2.5 templates list tools ('List of tools:') but never render assistant tool calls; "
            "the model writes <|tool_call_start|>[name(key=value, ...)]<|tool_call_end|>",
        applies=lambda a, src: a.tools.style == "none" and "List of tools:" in src,
        tools=ToolFormat(style="tagged", section_start="<|tool_call_start|>[", section_end="]<|tool_call_end|>",
                         separator=",", args="literal",
                         literal=LiteralArgs(open="(", close=")", kv_sep="=", quotes=('"', "'"))),
    ),
)


def apply_special(analysis: Analysis, renderer: Renderer) -> Analysis:
    """Fill in what rendering could not show, for the families listed in ``SPECIALS``."""
    for special in SPECIALS:
        if special.applies(analysis, renderer.source):
            return dataclasses.replace(analysis, tools=special.tools, handler=special.name,
                                       notes=(*analysis.notes, f"special: {special.name}: {special.why}"))
    return analysis
