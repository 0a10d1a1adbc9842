"""What ends free answer text: every marker the tolerant engine looks for in content, in order.

The strict parser's ``content_text`` ends at the ``strict`` ones (printed from the same list);
the engine searches all of them at once, the first listed winning where two match at the same
place. Besides the grammar's own markers (the reasoning opener and closer, the answer's
wrappers, the calls' opener, the turn markers) the engine reads what models write off the
template's path: a stray reasoning block when reasoning is off, a call start the model writes
without its section or name prefix, the rest of a call start the prompt wrote, a closer the
template never renders, a message to another recipient.
"""

from __future__ import annotations

from .. import markers as mk
from ..analysis.model import ToolFormat
from ..markers import definition as dm
from ..plan import RequestPlan
from ..plan.openers import name_prefix_pattern
from ..plan.openers import opener as plan_opener
from .nodes import Marker, Pattern, Stop

#: the opening of a list of calls: ``[``, or a word glued to it (``functools[``), then white space
LIST_OPEN = r"(?:(?<![\w.])[A-Za-z_]\w{0,31})?\[\s*"


def content_stops(plan: RequestPlan) -> tuple[Stop, ...]:
    """The engine's content markers for ``plan``, in its order (see the module's doc)."""
    p, r, c = plan, plan.reasoning, plan.content
    t = p.tools.format if p.tools is not None else None
    out: list[Stop] = []

    def add(kind: str, node: Marker | Pattern, source: str, strict: bool = False) -> None:
        if source:
            out.append(Stop(kind, node, source, strict))

    start = Marker("reasoning_start", r.start)
    end = Marker("reasoning_end", r.end)
    if r.extract and r.start:
        add("rstart", start, mk.line_anchor(r.start, opener=True) + mk.pattern_label_optional(r.start),
            strict=bool(start.pattern))
    if r.strip_stray and r.start:
        # reasoning is off but the model opens a block anyway (PRE.6): its markers are dropped
        add("rstray", start, r"\A\s*" + start.pattern)
        if r.end.strip():   # (a closer of whitespace alone, a blank line, is the answer's own)
            add("rstray2", end, end.pattern, strict=bool(start.pattern))
    answer_start = ""   # the answer's start marker, when it begins with the call start (``>>>all``)
    if t is not None and t.call_start.strip() and c.start.strip().startswith(t.call_start.strip()):
        answer_start = mk.pattern(c.start) + dm.word_end(c.start)
        add("cwrap", Marker("answer_start", c.start), answer_start)   # before the call opener: the longer wins
    if p.prompt_opened:
        # the prompt wrote the call start: the output begins with a call's name or the answer start's rest
        rest = answer_start_rest(plan)
        if rest is not None:
            add("cwrap_opened", rest, r"\A\s*" + rest.source)
        if p.tools is not None and t is not None:
            prefix = name_prefix_pattern(t) + r"\s*" if t.name_prefix.strip() else ""
            src = r"\A(?=\s*" + prefix + mk.tool_name(p.tools.names) + ")"
            add("tcall_opened", Pattern("call_opened", src), src)
    if p.tools is not None and t is not None:
        if t.section_end and not t.section_start:
            # a section end after trailing content; a turn marker for the grammars (``stop_markers``)
            send = Marker("section_end", t.section_end)
            add("send", send, send.pattern, strict=bool(t.section_end.strip() and not t.section_start.strip()))
        for i, closer in enumerate(p.tools.stray_closers):
            add(f"xclose{i}", Marker("stray_closer", closer), mk.pattern(closer))   # recognised and dropped
        op = p.tools.opener
        if op.pattern:
            # a section or call opener is consumed; a name or a JSON object starts the call itself
            kind = {"section_start": "tsection", "call_start": "tcall", "call_name": "tcall"}.get(op.role, "tname")
            add(kind, Pattern("calls_opener", op.pattern), op.loose or op.pattern, strict=True)
            if not op.role and t.style == "json" and not t.section_start.strip() and not t.call_end.strip():
                # calls written as a list (``[{...}, {...}]``, ``functools[{...}]``) where the template
                # writes call objects one after another: the list's brackets are the calls' wrapper
                add("tlist", Pattern("calls_opener", LIST_OPEN), LIST_OPEN + "(?=" + (op.loose or op.pattern) + ")")
            if implied_section(t):
                add("tsection_implied", Marker("call_start", t.call_start), mk.pattern(t.call_start))
            elif implied_section_by_name(t) and p.tools.names:
                # ``<invoke name="get_weather">`` written without its section opener (``<calls>``): the section
                # is implied where the name prefix names a declared tool
                src = mk.pattern(t.name_prefix) + "(?=" + mk.tool_name(p.tools.names) + ")"
                add("tsection_implied", Pattern("name_prefix", src), src)
            if implied_call_start(t) and p.tools.names:
                # "<function=NAME>" written without its "<tool_call>": the call start is implied
                src = mk.pattern(t.name_prefix) + "(?=" + mk.tool_name(p.tools.names) + ")"
                add("tcall_implied", Pattern("name_prefix", src), src)
            elif (after := name_first_tag(t)) and p.tools.names:
                # "NAME<arg_key>" written without its "<tool_call>": a declared tool's name right before
                # the tag the call goes on with
                src = mk.tool_name(p.tools.names) + r"(?=\s*" + mk.pattern(after) + ")"
                add("tcall_implied", Pattern("name_prefix", src), src)
    head, _ = split_header(c.aside_start)
    if head.strip():
        # a message to another recipient; one whose header opens a call is a call (or, with no tools, text)
        calls = call_marker(plan)
        add("aside", Marker("aside_start", head), (f"(?!{calls.source})" if calls is not None else "") + mk.pattern(head))
    if c.start and not answer_start:
        # a label (``Answer:``) only where a line begins, as the reasoning's: "The Answer: is" stays prose
        add("cwrap", Marker("content_start", c.start),
            mk.line_anchor(c.start, opener=True) + mk.pattern(c.start) + dm.word_end(c.start))
    if c.end:
        add("cwrap2", Marker("content_end", c.end), mk.pattern(c.end), strict=bool(c.end.strip()))
    # an answer before calls may have its own wrapper (a channel format's commentary preamble): the first two
    # markers that are not blank; further ones are dropped wherever they appear
    nth = 0
    for i, m in enumerate(c.markers):
        role = "dropped"
        if m.strip():
            role = ("preamble_start", "preamble_end", "dropped")[min(nth, 2)]
            nth += 1
        add(f"cwrap{i + 3}", Marker(role, m), mk.pattern(m), strict=role == "preamble_end")
    turn_at = len(out)
    for i, m in enumerate(p.recognised):
        add(f"stop{i}", Marker("stop", m), mk.pattern(m), strict=True)
    # a closing reasoning marker with no opening one (prompt opened it, or reasoning is off); not a blank
    # line. Before the turn markers it begins with (``<|close|>`` of ``<|close|>think<|sep|>``): the longer
    # wins, or the rest of the closer would be read as the reasoning's opener (``think<|sep|>``)
    closer = r.end.strip()
    if r.extract and closer:
        first = any(closer.startswith(m.strip()) and len(m.strip()) < len(closer) for m in p.recognised if m.strip())
        out.insert(turn_at if first else len(out), Stop("rend", end, end.pattern, True))
    return tuple(out)


def answer_start_rest(plan: RequestPlan) -> Pattern | None:
    """What follows the call start the prompt wrote (:attr:`RequestPlan.prompt_opened`) in an answer
    start that begins with it (``all`` of ``>>>all``), as a word; None when none."""
    start, opened = plan.content.start.strip(), plan.prompt_opened
    rest = start[len(opened):] if opened and start.startswith(opened) else ""
    return Pattern("answer_start_rest", mk.pattern(rest) + dm.word_end(rest), rest) if rest.strip() else None


def call_marker(plan: RequestPlan) -> Pattern | None:
    """The marker that opens calls in this format (also when the request declares no tools), or None
    when calls start with no marker (a JSON object or a name, which prose inside reasoning also holds)."""
    op = plan.tools.opener if plan.tools is not None else plan_opener(plan.analysis, ())
    if not op.role or not op.pattern:
        return None
    # a call start needs no lookahead for its name here: any call, in any spelling, ends the block
    src = mk.pattern(op.marker) if op.role == "call_start" else op.pattern
    t = plan.analysis.tools
    if implied_section(t):
        src = src + "|" + mk.pattern(t.call_start)
    elif implied_section_by_name(t) and plan.tools is not None and plan.tools.names:
        src = src + "|" + mk.pattern(t.name_prefix) + "(?=" + mk.tool_name(plan.tools.names) + ")"
    return Pattern("call_marker", src)


def split_header(marker: str) -> tuple[str, str]:
    """A marker with a header wildcard as (its head, the header from the wildcard on). Only the head is
    searched for: a regex search prefers a complete shorter marker inside the header to the longer one
    still partial, so the header is matched once the head is found."""
    i = marker.find(mk.HEADER)
    return (marker, "") if i < 0 else (marker[:i], marker[i:])


def implied_section_by_name(t: ToolFormat) -> bool:
    """Sectioned calls with no per-call marker but a tag-like name prefix (``<calls>`` +
    ``<invoke name="``): models also write the calls without the section opener."""
    first = mk.tokens(t.name_prefix)[0] if t.name_prefix.strip() else ""
    return t.style in ("tagged", "layout") and bool(t.section_start.strip()) and not t.call_start.strip() and \
        first.startswith("<") and len(first) >= 4 and first not in t.section_start


def name_first_tag(t: ToolFormat) -> str:
    """A layout whose call marker is followed at once by the name and then by a tag (``<tool_call>``
    NAME ``<arg_key>``): that tag, which models also write after the name with no call marker
    before it; "" otherwise."""
    lay = t.layout
    first = mk.tokens(t.call_start)[0] if t.call_start.strip() else ""
    if t.style != "layout" or lay is None or t.name_prefix.strip() or t.section_start.strip() or \
            len(first) < 4 or not first.startswith(("<", "[", "｜")):
        return ""
    kinds = [x.kind for x in lay.pieces]
    if "name" not in kinds or kinds.index("name") != 0 or len(kinds) < 2:
        return ""
    nxt = lay.pieces[1]
    if nxt.kind == "lit":
        after = nxt.text.strip()
    elif nxt.kind == "args" and lay.args.items is not None:
        after = (lay.args.items.open + lay.args.items.item_pre).strip()
    else:
        return ""
    tag = mk.tokens(after)[0] if after else ""
    # (a closing tag after the name, ``<methodName>NAME</methodName>``: the name sits inside the marker's
    # element, which cannot be left out)
    return tag if len(tag) >= 4 and tag.startswith("<") and not tag.startswith("</") and tag.endswith(">") else ""


def implied_call_start(t: ToolFormat) -> bool:
    """A call start followed by a tag-like name prefix (``<tool_call>`` + ``<function=``): models
    also write the name prefix alone."""
    first = mk.tokens(t.name_prefix)[0] if t.name_prefix.strip() else ""
    return t.style in ("tagged", "layout") and bool(t.call_start.strip()) and not t.section_start.strip() and \
        first.startswith("<") and len(first) >= 4 and first not in t.call_start


def implied_section(t: ToolFormat) -> bool:
    """Sectioned calls whose per-call marker is a special token: models also write the calls
    without the section opener (``<|tool_call_begin|>`` alone)."""
    first = mk.tokens(t.call_start)[0] if t.call_start.strip() else ""
    return bool(t.section_start.strip()) and len(first) >= 4 and \
        first.startswith(dm.TOKEN_OPENINGS) and first not in t.section_start


__all__ = ["LIST_OPEN", "answer_start_rest", "call_marker", "content_stops", "implied_call_start", "implied_section",
           "implied_section_by_name", "name_first_tag", "split_header"]
