"""Reasoning analysis: markers around ``reasoning_content``, prefill and the thinking toggle.

R1: render a turn with and without reasoning; the markers next to the needle
are the start and end. Where no marker definition names what sits there, the
text the template writes around the needle is: what the turn without reasoning
does not share opens the block (``<<thinking>>``, ``Thought: ``), checked with a
second reasoning text, and a closer may be line breaks alone (a label ended by a
blank line: the block ends at the first one, see ``markers.block_pattern``).
R2: render the generation prompt with thinking on and
off; an opened block (``<think>\\n``) means the prompt prefills reasoning, an
empty closed one (``<think>\\n\\n</think>``) means thinking is off. When the
template drops reasoning from history (QwQ, R1-Distill) the opened block in the
generation prompt is paired with the closing marker the template source names.
"""

from __future__ import annotations

import itertools
from typing import Any, Literal

import regex

from ..diff.split import common_prefix_len, first_marker, fix_prefix_end
from ..markers import definition as mk
from ..probes import needles as N
from ..probes.prober import Prober
from .model import ReasoningFormat, ReasoningMode

THINKING_KWARGS = ("enable_thinking", "thinking")
# a marker that names the speaker is a role header (Apertus "<|assistant_start|>"), not a reasoning opener
_ROLE = regex.compile(r"assistant|model|bot|gpt|ai\b", regex.IGNORECASE)


closing_candidates = mk.closing_candidates


def _marker_ending_at(body: str, i: int, floor: int) -> regex.Match[str] | None:
    found = None
    for cand in mk.finditer(body, max(floor, i - 130), i):
        if cand.end() == i:
            found = cand
    return found


def marker_run_before(text: str, floor: int = 0) -> str:
    """The run of markers (and words glued between them) that ends ``text``, plus trailing whitespace.

    ``<|open|>think<|sep|>`` is one run; a marker already in the run ends it, so a
    role header's ``<|sep|>`` is not swallowed. Nothing before ``floor`` is taken.
    """
    body = text.rstrip()
    i = len(body)
    seen: list[str] = []
    start = i
    w = regex.search(r"\w{1,40}\Z", body[max(floor, i - 40):i])
    if w is not None and _marker_ending_at(body, i - len(w.group()), floor) is not None:
        i -= len(w.group())   # "<|channel>thought": a word glued after the last marker
    while i > floor:
        m = _marker_ending_at(body, i, floor)
        if m is not None:
            if m.group() in seen:
                break
            seen.append(m.group())
            i = start = m.start()
            continue
        w = regex.search(r"\w{1,40}\Z", body[max(floor, i - 40):i])
        if w is not None and seen:
            j = i - len(w.group())
            prev = _marker_ending_at(body, j, floor)
            if prev is not None and prev.group() not in seen:
                i = j
                continue
        break
    if seen:
        # a recipient glued to the run at the very start of the turn: " to=self<|message|>"
        lead = body[floor:start]
        token = lead.strip()
        if token and len(token) <= 40 and not any(c.isspace() or c in mk.TOKEN_CHARS for c in token):
            start = floor + lead.index(token)
    return text[start:] if seen else ""


def _is_header(marker: str, content_full: str | None) -> bool:
    """A marker directly followed by the answer in a plain turn heads the turn (``<|assistant_start|>``)."""
    if not content_full or N.ASSISTANT not in content_full:
        return False
    before = content_full[: content_full.index(N.ASSISTANT)].rstrip()
    return before.endswith(marker.strip())


def drop_header(run: str, content_full: str | None) -> str:
    """Remove from the front of a marker run the part that heads every answer turn.

    The header is what a plain answer turn also starts with: ``<|assistant_start|>``
    before the answer, or ``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>``
    before ``<|START_TEXT|>``, also when the answer's own run begins earlier (the end of the user's turn).
    """
    if not content_full or N.ASSISTANT not in content_full:
        return run
    head = content_full[: content_full.index(N.ASSISTANT)].rstrip()
    content_run = marker_run_before(head)
    cut = 0
    for m in mk.finditer(run):
        prefix = run[: m.end()].strip()
        if (head.endswith(prefix) or prefix in content_run) and run[m.end():].strip():
            cut = m.end()
        else:
            break
    return run[cut:].lstrip(" ") if cut else run


def _last_line(text: str) -> str:
    body = text.rstrip("\n")
    return text[body.rfind("\n") + 1:]


def _find_start(full: str, r: int, prompt: str, base: str, gp: str, content_full: str | None,
                blank_end: bool = False) -> str:
    """The opening marker of the reasoning block whose needle sits at ``full[r]``.

    With ``blank_end`` (only line breaks follow the reasoning), a marker that also directly precedes
    the answer in a plain turn is no header but the block's opener, which that turn writes empty
    (``Thought: ⏎⏎A``), unless it names the speaker."""
    before = full[:r]
    if full.startswith(prompt):
        start = marker_run_before(before, len(prompt))
        if start.strip():
            return _marker_lines_before(before, len(prompt), start) + start
        # a marker the prompt began and the model ends (prompt "...assistant", turn "assistant/think")
        split = mk.spanning(full, len(prompt))
        if split is not None and split.end() <= r and not full[split.end():r].strip():
            return full[len(prompt):r]
    floor = len(base) if full.startswith(base) else 0
    start = drop_header(marker_run_before(before, floor), content_full)
    if start.strip() and (not _is_header(start, content_full) or (blank_end and not _ROLE.search(start))):
        return start
    line = _last_line(before)
    if line.strip() and not mk.search(line):
        return _marker_lines_before(before, len(prompt) if full.startswith(prompt) else floor, line) + line
    line = _last_line(gp)
    if line.strip() and not mk.search(line) and line.strip() not in full:
        return line
    return ""


def _marker_lines_before(before: str, floor: int, run: str) -> str:
    """The whole lines of markers between ``floor`` and the opener's run, when nothing else stands there:
    an opener of several lines (``[thinking]⏎____⏎``) is one opener."""
    lead = before[floor:len(before) - len(run)]
    if not lead.strip() or not lead.endswith("\n"):
        return ""
    lines = lead.split("\n")
    if all(not ln.strip() or marker_run_before(ln).strip() == ln.strip() for ln in lines):
        return lead
    return ""


def _find_end(between: str, answer_found: bool, content_start: str) -> str:
    if content_start and between.rstrip().endswith(content_start.strip()):
        head = between.rstrip()[: -len(content_start.strip())]
        # nothing but the answer's own opener follows the reasoning (``<|thinking|>R<|answer|>A``):
        # that opener ends the reasoning too
        return head if head.strip() else between
    if answer_found and len(between.strip()) <= 80:
        return between
    m = first_marker(between)
    if m is None:
        return between if between.strip() else ""
    end = m.end()
    while end < len(between) and between[end] in " \t\r\n":
        end += 1
    return between[:end]


def _turn(reasoning: str | None, scope: str) -> tuple[dict[str, Any], list[dict[str, Any]] | None]:
    """The probe turn (and its tools) holding ``reasoning``, as found: with the answer, or with a call."""
    msg: dict[str, Any] = {"role": "assistant", "content": N.ASSISTANT}
    tools = None
    if scope == "tools_only":
        msg, tools = {"role": "assistant", "content": "", "tool_calls": [N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1})]}, \
            N.TOOLS
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    return msg, tools


def _written_opener(pr: Prober, full: str, r: int, scope: str, on_kw: dict[str, Any], floor: int) -> str:
    """What the template writes before the reasoning needle at ``full[r]`` when no marker is found there.

    The turn rendered without reasoning shares everything else: what only the reasoning brings opens
    it (``<<thinking>>``, ``Thought: ``), its last line when it spans several. When that turn writes the
    block too, empty (thinking on by default), the line before the needle opens it if it is one token
    that holds a marker shape without being one (``<<thinking>>``), within the turn (after ``floor``).
    "" when a second reasoning text changes what surrounds the needle, or nothing fits."""
    plain_msg, tools = _turn(None, scope)
    plain = pr.full(plain_msg, tools, **on_kw)
    other = pr.full(_turn(N.REASONING_TWO, scope)[0], tools, **on_kw)
    tail = full[r + len(N.REASONING):]
    if not plain or not other or not other.startswith(full[:r]) or not other.endswith(tail):
        return ""
    p = min(common_prefix_len(plain, full), r)
    p = min(fix_prefix_end(full, p), _word_start(full, p))
    opener = full[p:r]
    if not opener.strip():
        line = _last_line(full[floor:r])
        token = line.strip()
        glued = 2 <= len(token) <= mk.MAX_LEN and not any(c.isspace() for c in token)
        return line if glued and mk.search(token) is not None and mk.fullmatch(token) is None else ""
    # only the last line: a header the turn writes before it belongs to the turn (never a lone newline)
    line_start = opener.rstrip("\n").rfind("\n") + 1
    return opener[line_start:] if opener[line_start:].strip() else ""


def _word_start(text: str, i: int) -> int:
    """``i``, moved back to the start of the word it cuts (``Th|ought:`` gives the ``T``)."""
    while 0 < i < len(text) and _wordy(text[i - 1]) and _wordy(text[i]):
        i -= 1
    return i


def _wordy(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _prefilled(prompt: str, full: str, r: int, start: str, gp_on: str) -> bool:
    """Whether the generation prompt itself writes the opener `start` (found before the needle at
    `r` in `full`). When the prompt is a prefix of the rendering, the opener is prefilled only if
    the prompt reaches into it (a role header ending in ``>`` does not prefill an opener ``> ``);
    otherwise the generation prompt must end with the opener."""
    opener = start.strip()
    if not opener:
        return False
    if prompt and full.startswith(prompt.rstrip()):
        at = full.rfind(opener, 0, r)
        return at >= 0 and len(prompt.rstrip()) > at
    return gp_on.rstrip().endswith(opener)


def analyze_reasoning(pr: Prober, source: str, content_start: str = "") -> ReasoningFormat:
    """Find the reasoning markers; returns mode "none" when the template shows no reasoning."""
    on_kw, off_kw = _toggle(pr)
    gp_on = pr.generation_prompt(**on_kw)
    gp_off = pr.generation_prompt(**off_kw) if off_kw else gp_on
    toggles: dict[str, Any] = {"off_kwargs": off_kw if gp_off != gp_on else {},
                               "on_kwargs": on_kw if gp_off != gp_on else {}}
    prompt = pr.prompt(**on_kw) or ""
    base = pr.render(pr.history, None, False, **on_kw) or ""
    content_full = pr.full({"role": "assistant", "content": N.ASSISTANT}, **on_kw)
    scope: Literal["always", "tools_only"] = "always"
    full = pr.full({"role": "assistant", "content": N.ASSISTANT, "reasoning_content": N.REASONING}, **on_kw)
    if not full or N.REASONING not in full:
        # reasoning as a "thinking" content chunk
        chunks = [{"type": "thinking", "thinking": N.REASONING}, {"type": "text", "text": N.ASSISTANT}]
        chunked = pr.full({"role": "assistant", "content": chunks}, **on_kw)
        if chunked and N.REASONING in chunked and N.ASSISTANT in chunked:
            between = chunked[chunked.index(N.REASONING): chunked.index(N.ASSISTANT)]
            if "type" not in between and "thinking'" not in chunked:   # not the list printed raw
                full = chunked
    if not full or N.REASONING not in full:
        call = N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1})
        with_call = pr.full({"role": "assistant", "content": "", "reasoning_content": N.REASONING,
                             "tool_calls": [call]}, tools=N.TOOLS, **on_kw)
        if with_call and N.REASONING in with_call:
            full, scope = with_call, "tools_only"
            prompt = pr.prompt(tools=N.TOOLS, **on_kw) or ""
            base = pr.render(pr.history, N.TOOLS, False, **on_kw) or ""
    if full and N.REASONING in full:
        r = full.index(N.REASONING)
        after = full[r + len(N.REASONING):]
        a = after.find(N.ASSISTANT)
        end = _find_end(after[:a] if a >= 0 else after, a >= 0, content_start)
        start = _find_start(full, r, prompt, base, gp_on, content_full, a >= 0 and "\n" in end and not end.strip())
        if not start.strip() and (end.strip() or (a >= 0 and "\n" in end)):
            # no marker before the needle: what the template writes there, if anything, opens the block
            # (also one a line break ends: ``(thinking) R⏎A``)
            start = _written_opener(pr, full, r, scope, on_kw, len(base) if full.startswith(base) else 0)
        if not end.strip() and not (start.strip() and a >= 0 and "\n" in end):
            # a closer of whitespace only ends the block at its first line break or blank line (a label
            # "Thought: " ended by a blank line); without an opener it is no reasoning format
            return ReasoningFormat()
        mode: ReasoningMode = "tagged" if start.strip() else "delimiter"
        prefilled = _prefilled(prompt, full, r, start, gp_on)
        return ReasoningFormat(mode=mode, start=start, end=end, scope=scope, prefilled=prefilled, **toggles)
    # reasoning dropped from history: read the generation prompt
    for gp in (gp_on, gp_off):
        opened = drop_header(marker_run_before(gp), content_full) or _prompt_opener(gp, content_full)
        answer_end = content_full[content_full.index(N.ASSISTANT):] if content_full and \
            N.ASSISTANT in content_full else ""
        if opened and not _ROLE.search(opened):
            for closer in closing_candidates(opened):
                # a closer that ends every answer turn is the turn's own end, not reasoning's
                if closer in source and closer not in answer_end:
                    return ReasoningFormat(mode="tagged", start=opened, end=closer, prefilled=gp is gp_on,
                                           **toggles)
        pair = _empty_block(gp)
        if pair:
            return ReasoningFormat(mode="tagged", start=pair[0], end=pair[1], prefilled=False, **toggles)
    declared = declared_tags(pr, on_kw, off_kw)
    if declared.get("reasoning"):
        start, end = declared["reasoning"]
        return ReasoningFormat(mode="tagged", start=start, end=end, **toggles)
    stripped = stripped_closer(source)
    if stripped:
        return ReasoningFormat(mode="tagged", start=stripped[0], end=stripped[1], **toggles)
    return ReasoningFormat()


def _prompt_opener(gp: str, content_full: str | None) -> str:
    """The generation prompt's last line when it is one token with a marker character that no marker
    definition reads and the plain turn does not write (``<<thinking>>``): a block the prompt opens."""
    line = _last_line(gp)
    token = line.strip()
    if not 2 <= len(token) <= mk.MAX_LEN or any(c.isspace() for c in token) or _ROLE.search(token):
        return ""
    if content_full is None or token in content_full or not any(mk.marker_char(c) for c in token):
        return ""
    return line


_SPLIT_LITERAL = regex.compile(r"""\.split\(\s*(['"])([^'"\\\n]{2,60})\1\s*\)""")
_REASONING_WORDS = ("think", "reason", "thought")
_ANSWER_WORDS = ("response", "answer")
PAIR_GAP = 80   # at most this much text between an opener and its closer written as an example pair


def stripped_closer(source: str) -> tuple[str, str] | None:
    """A reasoning closer the template cuts out of assistant history (``content.split('</think>')``):
    the model writes ``<think>…</think>`` even though no render shows it. Any closer the marker
    definition pairs with an opener counts (``[/THINK]``, ``⟪/think⟫``)."""
    for m in _SPLIT_LITERAL.finditer(source):
        closer = m.group(2)
        opener = mk.opener_of(closer) if mk.marker_like(closer, labels=False) else None
        if opener is not None and any(w in closer.lower() for w in _REASONING_WORDS):
            return opener, closer
    return None


def _written_pairs(text: str) -> list[tuple[str, str]]:
    """Opener/closer pairs written next to each other (``<think></think>``, ``[THINK]...[/THINK]``):
    two consecutive markers at most :data:`PAIR_GAP` apart, the second closing the first."""
    found = list(mk.finditer(text))
    return [(a.group(), b.group()) for a, b in itertools.pairwise(found)
            if b.start() - a.end() <= PAIR_GAP and mk.opener_of(b.group()) == a.group()]


def declared_tags(pr: Prober, on_kw: dict[str, Any], off_kw: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Marker pairs the template's thinking-on instructions tell the model to write.

    Only text that thinking switches on counts: ``<think></think>`` becomes the
    reasoning markers, ``<response></response>`` the answer's wrapper.
    """
    found: dict[str, tuple[str, str]] = {}
    user_only = [{"role": "user", "content": N.USER}]   # a given system message would replace the instructions
    for key in ("enable_thinking", "thinking"):
        on = pr.render(user_only, None, True, **{key: True}) or ""
        off = pr.render(user_only, None, True, **{key: False}) or ""
        if on == off:
            continue
        for pair in _written_pairs(on):
            if pair[0] in off:
                continue
            low = pair[0].lower()
            if any(w in low for w in _REASONING_WORDS):
                found.setdefault("reasoning", pair)
            elif any(w in low for w in _ANSWER_WORDS):
                found.setdefault("content", pair)
        if found:
            break
    return found


def _empty_block(gp: str) -> tuple[str, str] | None:
    """An empty closed block ending the generation prompt (thinking off): ``<think>\\n\\n</think>``,
    also with a label glued to the opener (``<|channel>thought\\n<channel|>``)."""
    found = list(mk.finditer(gp))
    if len(found) >= 2:
        a, b = found[-2], found[-1]
        between = gp[a.end():b.start()]
        if regex.fullmatch(r"\w{0,20}\s*", between) and not _ROLE.search(between) and not gp[b.end():].strip() and \
                b.group() in closing_candidates(a.group()):
            return a.group() + between, b.group()
    return None


def _toggle(pr: Prober) -> tuple[dict[str, Any], dict[str, Any]]:
    """The chat_template_kwargs that switch thinking on and off, found by rendering."""
    for key in THINKING_KWARGS:
        on = pr.generation_prompt(None, **{key: True})
        off = pr.generation_prompt(None, **{key: False})
        if on != off:
            return {key: True}, {key: False}
    return {"enable_thinking": True}, {}
