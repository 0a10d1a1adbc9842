"""Content analysis: wrapper markers around the answer and the end-of-turn text."""

from __future__ import annotations

from ..diff.split import MARKER, first_marker
from ..probes import needles as N
from ..probes.prober import Prober
from .model import ContentFormat, ReasoningFormat


def content_turn(pr: Prober) -> str | None:
    return pr.turn({"role": "assistant", "content": N.ASSISTANT})


def analyze_content(pr: Prober, reasoning: ReasoningFormat) -> tuple[ContentFormat, tuple[str, ...], str]:
    """Return the content wrapper, the end-of-turn markers, and the raw end-of-turn text."""
    turn = content_turn(pr)
    if turn is None or N.ASSISTANT not in turn:
        return ContentFormat(), (), ""
    i = turn.index(N.ASSISTANT)
    before, after = turn[:i], turn[i + len(N.ASSISTANT):]
    if reasoning.end.strip() and reasoning.end.strip() in before:
        before = before[before.index(reasoning.end.strip()) + len(reasoning.end.strip()):]
    start = end = ""
    m = None
    for m in MARKER.finditer(before):
        pass
    if m is not None and not before[m.end():].strip():
        start = before[m.start():]
        # a content wrapper closes right after the content
        first = first_marker(after)
        if first is not None and not after[:first.start()].strip():
            end = after[:first.end()]
            after = after[first.end():]
    eot = tuple(mm.group() for mm in MARKER.finditer(after))
    return ContentFormat(start=start, end=end), eot, after
