"""Reasoning analysis: markers around ``reasoning_content``, prefill and the thinking toggle.

R1: render a turn with and without reasoning; the markers next to the needle
are the start and end. R2: render the generation prompt with thinking on and
off; an opened block (``<think>\\n``) means the prompt prefills reasoning, an
empty closed one (``<think>\\n\\n</think>``) means thinking is off. When the
template drops reasoning from history (QwQ, R1-Distill) the opened block in the
generation prompt is paired with the closing marker the template source names.
"""

from __future__ import annotations

import regex

from ..diff.split import MARKER, first_marker, last_marker
from ..probes import needles as N
from ..probes.prober import Prober
from .model import ReasoningFormat

THINKING_KWARGS = ("enable_thinking", "thinking")


def closing_candidates(start: str) -> list[str]:
    """Conventional closers for an opening marker: <x>→</x>, [X]→[/X], START→END, begin→end."""
    s = start.strip()
    out = []
    if s.startswith("<") and not s.startswith("</"):
        out.append("</" + s[1:])
        if s.startswith("<|"):
            out.append("<|/" + s[2:])
    if s.startswith("[") and not s.startswith("[/"):
        out.append("[/" + s[1:])
    for a, b in (("START", "END"), ("start", "end"), ("begin", "end"), ("BEGIN", "END"), ("open", "close")):
        if a in s:
            out.append(s.replace(a, b))
    # Gemma 4 style: <|channel>thought ... <channel|>
    m = regex.match(r"<\|(\w+)>", s)
    if m:
        out.append(f"<{m.group(1)}|>")
    m = regex.match(r"◁(\w+)▷", s)
    if m:
        out.append(f"◁/{m.group(1)}▷")
    return out


def _adjacent_marker_before(text: str) -> str:
    """The marker (with trailing whitespace) that ends ``text``, or ""."""
    stripped = text.rstrip()
    m = last_marker(stripped)
    if m and m.end() == len(stripped):
        return text[m.start():]
    return ""


def _first_marker_run(text: str) -> str:
    """Leading whitespace plus the first marker of ``text`` plus whitespace after it."""
    m = first_marker(text)
    if m is None:
        return text if text.strip() else ""
    if text[:m.start()].strip():
        # delimiter text before the first marker ("\n[BEGIN FINAL RESPONSE]" has none; Apriel text has)
        return text[:m.end()]
    end = m.end()
    while end < len(text) and text[end] in " \t\r\n":
        end += 1
    return text[:end]


def analyze_reasoning(pr: Prober, source: str, content_start: str = "") -> ReasoningFormat:
    """Find the reasoning markers; returns mode "none" when the template shows no reasoning."""
    on_kw, off_kw = _toggle(pr)
    gp_on = pr.generation_prompt(**on_kw)
    gp_off = pr.generation_prompt(**off_kw) if off_kw else gp_on
    msg = {"role": "assistant", "content": N.ASSISTANT, "reasoning_content": N.REASONING}
    full = pr.full(msg, **on_kw)
    prompt = pr.prompt(**on_kw) or ""
    if full and N.REASONING in full:
        r = full.index(N.REASONING)
        before = full[:r]
        start = _adjacent_marker_before(before)
        if not start:
            # delimiter text: what precedes the needle on its line, if the prompt adds it
            line = before[before.rfind("\n", 0, len(before.rstrip("\n"))) + 1:]
            start = line if line.strip() and not MARKER.search(line) and line.strip() in gp_on else ""
        after = full[r + len(N.REASONING):]
        a = after.find(N.ASSISTANT)
        between = after[:a] if a >= 0 else after
        if content_start and between.rstrip().endswith(content_start.strip()):
            between = between.rstrip()[: -len(content_start.strip())]
        end = _first_marker_run(between)
        if not end.strip():
            return ReasoningFormat()
        mode = "tagged" if start.strip() else "delimiter"
        prefilled = bool(start.strip()) and gp_on.rstrip().endswith(start.strip())
        scope = "always"
        return ReasoningFormat(mode=mode, start=start, end=end, scope=scope, prefilled=prefilled,
                               off_kwargs=off_kw if gp_off != gp_on else {},
                               on_kwargs=on_kw if gp_off != gp_on else {})
    # reasoning dropped from history: read the generation prompt
    for gp, kw in ((gp_on, on_kw), (gp_off, off_kw)):
        opened = _adjacent_marker_before(gp)
        if opened and opened.strip() not in prompt[: len(prompt) - len(gp)]:
            for closer in closing_candidates(opened):
                if closer in source:
                    return ReasoningFormat(mode="tagged", start=opened, end=closer, prefilled=gp is gp_on,
                                           off_kwargs=off_kw if gp_off != gp_on else {},
                                           on_kwargs=on_kw if gp_off != gp_on else {})
        # an empty closed block: thinking off written into the prompt
        pair = _empty_block(gp)
        if pair:
            return ReasoningFormat(mode="tagged", start=pair[0], end=pair[1], prefilled=False,
                                   off_kwargs=off_kw if gp_off != gp_on else {},
                                   on_kwargs=on_kw if gp_off != gp_on else {})
    return ReasoningFormat()


def _empty_block(gp: str) -> tuple[str, str] | None:
    found = list(MARKER.finditer(gp))
    if len(found) >= 2:
        a, b = found[-2], found[-1]
        if not gp[a.end():b.start()].strip() and not gp[b.end():].strip() and \
                b.group() in closing_candidates(a.group()):
            return a.group(), b.group()
    return None


def _toggle(pr: Prober) -> tuple[dict, dict]:
    """The chat_template_kwargs that switch thinking on and off, found by rendering."""
    for key in THINKING_KWARGS:
        on = pr.generation_prompt(**{key: True})
        off = pr.generation_prompt(**{key: False})
        if on != off:
            return {key: True}, {key: False}
    return {"enable_thinking": True}, {}
