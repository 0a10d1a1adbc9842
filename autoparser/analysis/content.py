"""Content analysis: wrapper markers around the answer and the end-of-turn text."""

from __future__ import annotations

import regex

from ..diff.split import first_marker
from ..markers import definition as mk
from ..probes import needles as N
from ..probes.prober import Prober
from .model import ContentFormat

CANNOT_READ = "cannot read:"   # a note that names a format the analysis does not read


def json_turn_keys(pr: Prober) -> tuple[str, ...]:
    """The keys of the JSON object that is the whole assistant turn, when the answer is one of its string
    members (``{"thought": ..., "reply": "TEXT", "calls": [...]}``); () otherwise."""
    import json

    turn = content_turn(pr)
    if turn is None or N.ASSISTANT not in turn:
        return ()
    at = turn.find("{")
    if at < 0 or turn[:at].strip() or turn.index(N.ASSISTANT) < at:
        return ()
    try:
        value, _ = json.JSONDecoder().raw_decode(turn, at)
    except ValueError:
        return ()
    if isinstance(value, dict) and N.ASSISTANT in value.values():
        return tuple(str(k) for k in value)
    return ()


def content_turn(pr: Prober) -> str | None:
    return pr.turn({"role": "assistant", "content": N.ASSISTANT})


is_closing = mk.is_closing


def analyze_content(pr: Prober) -> tuple[ContentFormat, tuple[str, ...], str]:
    """Return the content wrapper, the end-of-turn markers, and the raw end-of-turn text."""
    from .reasoning import marker_run_before

    turn = content_turn(pr)
    if turn is None or N.ASSISTANT not in turn:
        return ContentFormat(), (), ""
    i = turn.index(N.ASSISTANT)
    before, after = turn[:i], turn[i + len(N.ASSISTANT):]
    start = end = ""
    run = marker_run_before(before)
    if run.strip() and not is_closing(run):
        start = run
        first = first_marker(after)
        if first is not None and not after[:first.start()].strip() and is_closing(first.group()):
            stop = _glued_end(after, first.end())   # "<|close|>response": a word glued to the closer
            if _closes(run, after[first.start():stop]):
                end = after[:stop]
                after = after[stop:]
    # a marker that is only the template's text ends the turn when it comes first ("«end»"), not in
    # what the template writes after the turn (the next header, instructions)
    eot = tuple(dict.fromkeys(mm.group() for mm in mk.finditer(after)
                              if mk.SHAPES.fullmatch(mm.group()) or not after[:mm.start()].strip()))
    return ContentFormat(start=start, end=end), eot, after


def _closes(start: str, closer: str) -> bool:
    """``closer`` ends the answer that ``start`` opens, not the turn: it pairs with the opener
    (``<|START_RESPONSE|>``…``<|END_RESPONSE|>``, ``⟪answer⟫``…``⟪/answer⟫``); a closer that pairs
    with nothing there (``<|answer|>``…``<|im_end|>``) is the turn's end."""
    openers = [start.strip()] + [m.group() for m in mk.finditer(start)]
    return any(c.startswith(closer) or closer.startswith(c) for o in openers for c in mk.closing_candidates(o))


def _glued_end(text: str, stop: int) -> int:
    glued = regex.match(r"\w{1,40}", text[stop:])
    return stop + glued.end() if glued is not None else stop


def recipient_start(pr: Prober, content: ContentFormat, call_start: str, generation_prompt: str) -> ContentFormat:
    """An answer headed like a call, by the call start the prompt ends with and a recipient word
    (``>>>all\n`` before the answer, ``>>>NAME\n`` before a call): that is its start."""
    start = call_start.strip()
    if content.start or not start or not generation_prompt.endswith(start):
        return content
    turn = content_turn(pr)
    if turn is None or N.ASSISTANT not in turn:
        return content
    head = turn[:turn.index(N.ASSISTANT)]
    if regex.fullmatch(r"\w{1,20}\n", head) is None:
        return content
    return ContentFormat(start=start + head, end=content.end, in_tool_turns=content.in_tool_turns)


def tool_turn_wrappers(pr: Prober, content: ContentFormat, call_start: str) -> tuple[str, ...]:
    """Markers around an answer written before tool calls, when they differ from the plain wrapper.

    A channel format writes ``<|channel|>commentary<|message|>TEXT<|end|><|start|>assistant`` before its calls
    but ``<|channel|>final<|message|>TEXT`` otherwise.
    """
    from .reasoning import marker_run_before
    from .tools import render_call_turn

    turn = render_call_turn(pr, N.ASSISTANT)
    if turn is None or N.ASSISTANT not in turn:
        return ()
    i = turn.index(N.ASSISTANT)
    found: list[str] = []
    run = marker_run_before(turn[:i])
    if run.strip() and not is_closing(run) and run.strip() != content.start.strip():
        found.append(run.strip())
    after = turn[i + len(N.ASSISTANT):]
    cut = after.find(call_start.strip()) if call_start.strip() else -1
    between = after[:cut].strip() if cut > 0 else ""
    if between and mk.match(between) and between != content.end.strip() and len(between) <= 80:
        found.append(between)
    return tuple(found)
