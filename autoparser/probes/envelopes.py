"""The exact text a template writes around tool calls, for whitespace-exact constraints.

Structural tags (xgrammar, vLLM, SGLang) match envelopes literally, so they must be spelled
exactly as the template renders them, not as the analysis' whitespace-tolerant markers.
:func:`call_envelopes` renders an assistant turn with one call, then with two, every call
with empty arguments (``{}``), and cuts the text around each name and its arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .. import markers as mk
from ..diff.split import shared_prefix, shared_suffix
from . import needles as N
from .prober import Prober

ARGS = "{}"


@dataclass(frozen=True)
class CallEnvelope:
    """The text before a call's arguments (its name included) and after them."""

    begin: str
    end: str


@dataclass(frozen=True)
class Envelopes:
    """Per tool name its envelope; the section around all calls and the separator between two."""

    calls: dict[str, CallEnvelope]
    section_begin: str = ""
    section_end: str = ""
    separator: str | None = ""       # None: the template renders one call per turn


def _turn_calls(prober: Prober, names: list[str], tools: list[dict[str, Any]],
                args: dict[str, Any] | None = None) -> str | None:
    """The text the calls add to an empty assistant turn."""
    empty = prober.full({"role": "assistant", "content": ""}, tools)
    calls = [{"id": f"call{i:05d}", "type": "function", "function": {"name": n, "arguments": dict(args or {})}}
             for i, n in enumerate(names)]
    full = prober.full({"role": "assistant", "content": "", "tool_calls": calls}, tools)
    if empty is None or full is None:
        return None
    head = shared_prefix(empty, full)
    tail = min(shared_suffix(empty, full), len(empty) - head)
    return full[head:len(full) - tail]


def _mismatch(both: str, head: str, end: str, second: str) -> str:
    """Why a turn with two calls is not two copies of the one-call envelope."""
    if second not in both:
        return "the template renders one call per turn (a second call is dropped)"
    starts = sorted({i for tok in mk.tokens(end) for i in [end.find(tok)] if i > 0}, reverse=True)
    for k in (len(end) - i for i in starts):        # a trailer of whole markers, shortest first
        trailer = end[-k:]
        if trailer.strip() and both.endswith(trailer) and both.startswith(head + end[:-k]) \
                and not both.startswith(head + end):
            return (f"the template writes {trailer.strip()!r} once after the last call, not after each call "
                    "(a section end with no section start)")
    return "the call envelope holds a per-call id or index (two calls are not two copies of one)"


def call_envelopes(prober: Prober, names: tuple[str, ...], section_start: str, section_end: str,
                   args: dict[str, str] | None = None, args_text: str = ARGS) -> Envelopes | str:
    """The envelopes of ``names``, or why they cannot be cut out exactly: the text around the
    arguments ``args`` (none by default: ``{}``), which the template writes as ``args_text``."""
    props = {k: {"type": "string"} for k in args or {}}
    tools = [{"type": "function", "function": {"name": n, "description": N.USER,
                                               "parameters": {"type": "object", "properties": props}}}
             for n in names]
    out: dict[str, CallEnvelope] = {}
    section_begin = section_close = ""
    for name in names:
        block = _turn_calls(prober, [name], tools, args)
        if block is None or block.count(name) != 1:
            return f"the template does not render a call of {name!r} with its name once"
        at = block.index(name)
        cut = block.find(args_text, at + len(name))
        if cut < 0 or block.count(args_text) != 1:
            return "arguments are not rendered as a JSON object" if args_text == ARGS else \
                "the arguments are not rendered as the call layout says"
        begin, end = block[:cut], block[cut + len(args_text):]
        if section_start.strip() and section_end.strip():
            s_at, e_at = begin.find(section_start.strip()), end.rfind(section_end.strip())
            if s_at < 0 or e_at < 0:
                return "the call section's markers are not rendered around the call"
            s_end = s_at + len(section_start.strip())
            while s_end < len(begin) and begin[s_end] in " \t\r\n" and section_start[-1:] in " \t\r\n":
                s_end += 1
            section_begin, begin = begin[:s_end], begin[s_end:]
            section_close, end = end[e_at:], end[:e_at]
        out[name] = CallEnvelope(begin, end)
    separator: str | None = ""
    if len(names) > 1:
        first, second = names[0], names[1]
        both = _turn_calls(prober, [first, second], tools, args)
        one, two = out[first], out[second]
        expected_head = section_begin + one.begin + args_text + one.end
        if both is None:
            separator = None          # the template renders one call per turn
        elif not both.startswith(expected_head) or not both.endswith(two.begin + args_text + two.end + section_close):
            return _mismatch(both, section_begin + one.begin + args_text, one.end, second)
        else:
            rest = both[len(expected_head):]
            separator = rest[:len(rest) - len(two.begin + args_text + two.end + section_close)]
    # whitespace a template writes before the first call (indentation, a newline after the content)
    # belongs to the turn's layout, not to what a model writes: the envelope starts at the marker; with
    # no section, so does the white space after a call (``</tool_call>\n``: the turn may end right after
    # the last call's marker): the envelope ends at its closing marker
    if section_begin:
        section_begin = section_begin.lstrip()
    else:
        out = {n: CallEnvelope(e.begin.lstrip(), e.end.rstrip() if e.end.strip() else e.end) for n, e in out.items()}
    return Envelopes(out, section_begin, section_close, separator)
