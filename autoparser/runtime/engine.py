"""The output parser: one linear-time state machine for whole texts and streams.

``Engine.feed(chunk)`` consumes text and returns OpenAI deltas; ``finish()``
flushes what was held back. ``Request.parse(text)`` is ``feed(text)`` plus
``finish()``, so a streamed message always equals the parsed one. The engine
never re-reads text it has consumed: markers are found with one regex search
from the current position (holding back only a possible marker prefix), JSON
arguments go through an incremental scanner, tagged arguments are turned into
JSON as they arrive.

What it looks for is compiled from the request's grammar IR (:mod:`autoparser.ir`), the same
description the strict PEG and the GBNF are printed from (:func:`compile_tables`).

(Over 600 lines: its phases share one state and one position in the text; the emitters that
build the message are :mod:`.build`, the call readers their own modules.)

States: ``content`` (looking for reasoning, tool or wrapper markers),
``reasoning`` (looking for the end marker), ``tools`` (between calls of a
section) and ``call`` (inside one call, driven by a call reader).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import regex

from .. import ir
from .. import markers as mk
from ..analysis.model import ToolFormat
from ..plan import PerPlan, RequestPlan, name_prefix_pattern
from ..plan.openers import call_head_source, opening_id
from .build import MessageBuilder, Step
from .calls import CallReader
from .message import Message
from .readers import make_call_reader

WS = " \t\r\n"
Hit = tuple[int, int, "regex.Match[str]"]   # (start, kind, match): where tentative reasoning may end
_LOOSE_SEPARATORS = ";,"   # between two calls of a format that renders none
_LIST_CLOSE = regex.compile(r"\s*\]")   # the end of calls opened as a list


@dataclass(frozen=True)
class _Tables:
    """Compiled patterns of one plan, read off its grammar IR (built once per plan, shared by its engines)."""

    content: regex.Pattern[str] | None            # any marker that interrupts free content
    content_alts: tuple[regex.Pattern[str], ...]  # ... each on its own (a longer one may still match)
    tool_alts: tuple[regex.Pattern[str], ...]     # the call openers among them
    answer_alts: tuple[regex.Pattern[str], ...]   # ... and the reasoning opener and answer wrappers
    reasoning_end: regex.Pattern[str] | None
    reasoning_reopen: regex.Pattern[str] | None   # the opener written again at the start of a block
    reasoning_call: regex.Pattern[str] | None     # a call opener marker: ends a block never closed
    reasoning_close: regex.Pattern[str] | None    # the end marker alone
    named_call: regex.Pattern[str] | None         # calls with no marker: NAME(
    section_end: regex.Pattern[str] | None
    call_start: regex.Pattern[str] | None
    separator: regex.Pattern[str] | None
    call_end: regex.Pattern[str] | None
    resync: regex.Pattern[str] | None             # after a broken call: the next call start or section end
    aside_header: regex.Pattern[str] | None       # the rest of a message's header, after its recipient
    answer_start: regex.Pattern[str] | None       # an answer start that begins with the call start (``>>>all``)
    aside_end: regex.Pattern[str] | None          # the end of a message to another recipient


def compile_tables(g: ir.Grammar) -> _Tables:
    """The engine's patterns, read off the request's grammar IR: what it looks for in each state.

    Content is searched for every content stop at once (:attr:`ir.Grammar.content_stops`, each a
    named group); reasoning for its end marker (and a call marker, which ends a block never closed);
    the call section's markers are its :class:`ir.Calls` node's format."""
    calls = g.tool_calls
    tp = calls.tools if calls is not None else None
    t = tp.format if tp is not None else None
    named = [(s.kind, s.source) for s in g.content_stops]
    named_call: regex.Pattern[str] | None = None   # calls with no marker: NAME(...
    if tp is not None and t is not None and tp.opener.pattern and not tp.opener.role and t.style in ("tagged", "layout"):
        named_call = mk.compile_source(tp.opener.pattern)
    elif tp is not None and t is not None and t.layout is not None and not t.call_start.strip() and tp.names:
        head = opening_id(t.layout)   # a call that opens with its id: its id, then a declared name
        named_call = mk.compile_source(call_head_source(head, tp.names)) if head else None
    answer_start = next((s.source for s in g.content_stops if s.node.role == "answer_start"), "")
    start, end = _marker(g, "reasoning_start"), _marker(g, "reasoning_end")
    call_marker = g.get("call_marker")
    # the answer's opener right before a call opener inside reasoning is the calls' wrapper, not reasoning
    wrap = next((s.source for s in g.content_stops if s.node.role == "content_start"), "")
    call_in_reasoning = "" if not isinstance(call_marker, ir.Pattern) else \
        (f"(?:(?:{wrap})\\s*)?(?:{call_marker.source})" if wrap else call_marker.source)
    return _Tables(
        content=mk.compile_any(named),
        content_alts=tuple(mk.compile_source(src) for _, src in named),
        tool_alts=tuple(mk.compile_source(src) for n, src in named if n.startswith("t")),
        answer_alts=tuple(mk.compile_source(src) for n, src in named if n == "rstart" or n.startswith("cwrap")),
        # a model that opens its tool calls without closing its reasoning: the calls end it
        reasoning_end=mk.compile_any([("rend", mk.block_pattern(end, opener=False))]), named_call=named_call,
        reasoning_reopen=mk.compile_source(mk.line_anchor(start, opener=True) + mk.pattern_label_optional(start))
        if start else None,
        reasoning_call=mk.compile_source(call_in_reasoning) if call_in_reasoning else None,
        reasoning_close=mk.compile_source(close) if (close := mk.block_pattern(end, opener=False)) else None,
        section_end=_loose(t.section_end) if t is not None else None,
        call_start=_loose(t.call_start, tp.names if tp is not None else ()) if t is not None else None,
        separator=mk.compile_marker(t.separator) if t is not None else None,
        call_end=_loose(t.call_end) if t is not None else None,
        resync=_resync(t), answer_start=mk.compile_source(answer_start) if answer_start else None,
        aside_header=mk.compile_marker(_marker(g, "aside_header")) if g.get("aside_header") else None,
        aside_end=mk.compile_marker(_marker(g, "aside_end")) if g.get("aside_end") else None)


def _loose(marker: str, names: tuple[str, ...] = ()) -> regex.Pattern[str] | None:
    """A call marker as the engine reads it: in the spellings models also write (:func:`markers.loose`)."""
    src = mk.loose(marker, names)
    return mk.compile_source(src) if src else None


def _marker(g: ir.Grammar, role: str) -> str:
    """The text of the grammar's marker rule ``role`` ("" when the request has none)."""
    node = g.get(role)
    return node.text if isinstance(node, ir.Marker) else ""


def _resync(t: ToolFormat | None) -> regex.Pattern[str] | None:
    """After a broken call in a section: the next call's start or the section's end. A JSON array's
    next call is its separator and the start of a call object (``, {"name":``): the separator is
    consumed (``sep``), the call object starts the next call."""
    if t is None or not t.section_start.strip():
        return None
    ends = [mk.pattern(t.section_end)] if t.section_end.strip() else []
    if t.call_start.strip():
        return mk.compile_any([("next", "|".join([mk.pattern(t.call_start), *ends]))])
    if t.style == "json" and t.separator.strip() and t.name_prefix.strip():
        return mk.compile_any([("sep", mk.pattern(t.separator) + r"\s*(?=" + name_prefix_pattern(t, True) + ")"),
                               ("next", "|".join(ends))])
    return None


def _compile(plan: RequestPlan) -> _Tables:
    return compile_tables(ir.message_grammar(plan))


_tables: PerPlan[_Tables] = PerPlan(_compile, shared=True)


Tables = _Tables


def tables(plan: RequestPlan) -> Tables:
    """The engine's compiled patterns for ``plan`` (built once per plan; the whole-text reader,
    :mod:`.whole`, looks for markers with the same ones)."""
    return _tables(plan)


def start_state(plan: RequestPlan) -> str:
    """The state the output begins in (:attr:`ir.Grammar.begins`): ``reasoning`` (the prompt opened
    the block), ``tentative`` (reasoning only if its end marker comes) or ``content``."""
    return ir.message_grammar(plan).begins


class Engine(MessageBuilder):
    """Incremental parser producing deltas and a message (the emitters are :class:`.build.MessageBuilder`'s)."""

    def __init__(self, plan: RequestPlan) -> None:
        self.tools: ToolFormat | None = plan.tools.format if plan.tools is not None else None
        self.buf = ""
        self.pos = 0
        self.state = start_state(plan)
        self._scan = 0                   # where the tentative search resumes
        self._rscan = -1                 # a call opener inside reasoning: where the search for its end resumes
        self._content_ws: str | None = None   # the answer's whitespace before a block inside it
        self._fence = False              # a ``` code fence is open in the answer
        self._fence_tail = ""            # the answer's last two characters (a fence split across chunks)
        self._call: CallReader | None = None
        self._in_section = False
        self._in_list = False            # the calls were opened as a list (``[{...}, ...]``): its ``]`` ends them
        self._aside_from = 0             # where a message to another recipient began
        self._aside_header_at = -1       # ... while its header is still to be read
        self._finished = False
        tables = self._t = _tables(plan)
        self.section_end = tables.section_end
        self._named_call = tables.named_call
        super().__init__(plan)

    # ------------------------------------------------------------ API
    def feed(self, chunk: str) -> list[dict[str, Any]]:
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if chunk:
            buf, self.buf = self.buf, ""
            buf += chunk          # a sole reference: CPython grows the string in place
            self.buf = buf
            self._run(final=False)
        return self._take()

    def finish(self) -> list[dict[str, Any]]:
        if not self._finished:
            self._run(final=True)
            self._close_all()
            self._finished = True
            self.sync()
            self._guard()
        return self._take()

    def parse_whole(self, text: str) -> Message:
        """``feed(text)`` and ``finish()``, without the deltas a stream would get."""
        if self._finished or self.buf:
            raise RuntimeError("parse_whole() on an engine already fed")
        self.buf = text
        self._run(final=False)   # as a stream sees it (a marker cut off by the end is read as one)
        self.finish()
        self.deltas = []
        return self.msg

    def replay(self, text: str, steps: list[Step]) -> Message:
        """The message for the whole ``text`` from the steps a whole-text reader took through it
        (:mod:`.whole`; :meth:`.build.MessageBuilder.build`). The steps must be the ones
        ``parse_whole`` would take."""
        if self._finished or self.buf:
            raise RuntimeError("replay() on an engine already fed")
        self.buf, self.pos, self.state = text, len(text), "content"
        self._finished = True
        self.build(steps)
        self.deltas = []
        return self.msg

    def finish_partial(self) -> None:
        """The text so far is a prefix: close an open call's arguments, keep held-back text back."""
        self._run(final=False)
        if self._call is not None and not isinstance(self._call, _Closing):
            self._call.truncate()
            self.msg.truncated = True
        elif self.state == "tools" and self._named_call is not None and \
                _cut_at_end(self._named_call, self.buf, self.pos):
            self.msg.truncated = True    # the text stops inside what opens a call (``call_4|sea``)
        self._flush_fits()
        self._finished = True
        self.sync()

    def _take(self) -> list[dict[str, Any]]:
        out, self.deltas = self.deltas, []
        return out

    def _run(self, final: bool) -> None:
        while final or self.pos < len(self.buf):
            before = (self.state, self.pos)
            if self.state == "content":
                self._step_content(final)
            elif self.state == "reasoning":
                self._step_reasoning(final)
            elif self.state == "tentative":
                self._step_tentative(final)
            elif self.state == "tools":
                self._step_tools(final)
            elif self.state == "call":
                self._step_call(final)
            elif self.state == "resync":
                self._step_resync(final)
            elif self.state == "aside":
                self._step_aside(final)
            if (self.state, self.pos) == before:
                break

    def _free_text(self, text: str) -> None:
        """Content read in the content state; tracks whether a ``` code fence is open."""
        if text:
            s = self._fence_tail + text
            if s.count("```") % 2:
                self._fence = not self._fence
            self._fence_tail = s[-2:]
        self._content(text)

    def _step_content(self, final: bool) -> None:
        pat = self._t.content
        if pat is None:
            self._free_text(self.buf[self.pos:])
            self.pos = len(self.buf)
            return
        m = leftmost(pat, self.buf, self.pos, final)
        if m is None:
            self._free_text(self.buf[self.pos:])
            self.pos = len(self.buf)
            return
        self._free_text(self.buf[self.pos:m.start()])
        self.pos = m.start()
        # a longer marker may still match here: wait for more text (a name and its opener is whole)
        if m.partial or (not final and m.end() == len(self.buf)
                         and not (m.lastgroup == "tname" and self._named_call is not None)):
            return
        if not final and any((p := alt.match(self.buf, m.start(), partial=True)) is not None and p.partial
                             for alt in self._t.content_alts):
            return   # "<|close|>" is complete but "<|close|>response" may be coming
        kind = m.lastgroup or ""
        if self._fence and kind[:1] == "t":
            # call markup inside a code fence in the answer is quoted: it stays text
            self._free_text(m.group())
            self.pos = m.end()
            return
        if kind == "rstart":
            # a block inside the answer: the answer's whitespace on both sides is kept around it
            self._content_ws = self._pending_ws if self._parts["content"] else None
            self._boundary()
            self.pos = m.end()
            self.state = "reasoning"
        elif kind == "rend":
            # a close with no open: what came before, if it was the first thing, was reasoning
            self.pos = m.end()
            self._boundary()
        elif kind == "rstray":
            self.pos = m.end()
            self._boundary()
        elif kind == "rstray2":
            # the close of a stray block: dropped, but the text on either side stays apart
            self.pos = m.end()
        elif kind == "tsection":
            self._call_boundary()
            self.pos = m.end()
            self._in_section = True
            self.state = "tools"
        elif kind == "tsection_implied":
            # a call marker with no section opener before it: the section is implied
            self._call_boundary()
            self._in_section = True
            self.state = "tools"
        elif kind == "tcall_implied" or kind == "tcall_opened":
            self._call_boundary()
            self._start_call()
            if self._call is not None:
                self._call.implied = True
        elif kind == "tcall":
            self._call_boundary()
            self.pos = m.end()
            self._start_call()
            if self._call is not None and self.tools is not None and m.group().strip() != self.tools.call_start.strip():
                # the marker in another spelling than the template's (``<invoke>`` for ``<|invoke|>``): it is
                # text again when no call reads after it
                self._call.origin = m.start()
        elif kind == "tname" or kind == "tjson":
            self._call_boundary()
            self._start_call()
        elif kind == "tlist":
            # calls written as a list where the template writes them one after another: the brackets
            # are their wrapper (the calls follow at once, see ``ir.stops``)
            self._call_boundary()
            self.pos = m.end()
            self._in_list = True
            self._start_call()
            if self._call is not None:
                self._call.origin = m.start()   # (a first call that does not read: its list is text)
        elif kind == "aside":
            self._aside_from = self._aside_header_at = m.start()
            self.pos = m.end()
            self.state = "aside"
        elif kind.startswith("xclose"):   # a stray closer after calls: the content around it stays apart
            self._call_boundary()
            self.pos = m.end()
        else:  # wrappers and stop markers: recognised and dropped
            self._boundary()
            self.pos = m.end()

    def _step_aside(self, final: bool) -> None:
        """A message to another recipient (a built-in tool): set aside as written, up to its end marker
        or the end of the output."""
        if self._aside_from == self._aside_header_at and self._t.aside_header is not None:
            st, end = mk.match_here(self._t.aside_header, self.buf, self.pos, final)
            if st == "more":
                return
            if st == "no":   # no header follows the recipient: it was text
                self._free_text(self.buf[self._aside_from:self.pos])
                self.state = "content"
                return
            self.pos = end
            self._aside_header_at = -1
            self._boundary()
        pat = self._t.aside_end
        m = pat.search(self.buf, self.pos, partial=not final) if pat is not None else None
        if m is None or m.partial or (not final and m.end() == len(self.buf)):
            self.pos = m.start() if m is not None else len(self.buf)
            if final:
                self._set_aside(len(self.buf))
            return
        self._set_aside(m.end())

    def _set_aside(self, end: int) -> None:
        text = self.buf[self._aside_from:end]
        self.msg.asides.append(text)
        self.warn(f"a message to another recipient was set aside: {text[:60]!r}", malformed=False)
        self.pos = end
        self._boundary()
        self.state = "content"

    def _step_reasoning(self, final: bool) -> None:
        if self._segment_start and self._t.reasoning_reopen is not None:
            # the model writes the opener the prompt (or its own opener) already wrote: dropped
            st, end = mk.match_here(self._t.reasoning_reopen, self.buf, self.pos, final)
            if st == "more":
                return
            if st == "match":
                self.pos = end
                return
        pat = self._t.reasoning_end
        if pat is None:
            self._reasoning(self.buf[self.pos:])
            self.pos = len(self.buf)
            return
        m = leftmost(pat, self.buf, self.pos, final)
        call = self._t.reasoning_call
        c = call.search(self.buf, self.pos, partial=not final) if call is not None else None
        if c is not None and (m is None or c.start() < m.start()):
            self._reasoning(self.buf[self.pos:c.start()])
            self.pos = c.start()
            if c.partial or (not final and c.end() == len(self.buf)):
                return
            self._call_in_reasoning(c.end(), final)
            return
        if m is None:
            self._reasoning(self.buf[self.pos:])
            self.pos = len(self.buf)
            return
        self._reasoning(self.buf[self.pos:m.start()])
        self.pos = m.start()
        if m.partial or (not final and m.end() == len(self.buf)):
            return   # a longer marker may still match here: wait for more text
        self._leave_reasoning()
        if m.lastgroup == "rend":
            self.pos = m.end()

    def _leave_reasoning(self) -> None:
        self._boundary()
        self.state = "content"
        if self._content_ws is not None:
            self._pending_ws, self._segment_start = self._content_ws, False
            self._content_ws = None

    def _call_in_reasoning(self, after: int, final: bool) -> None:
        """A call opener inside reasoning: quoted if the block closes later, else the call ends the block.

        The text from the opener on is held until the end marker comes (the opener was quoted: it
        stays reasoning) or the output ends (the block was never closed: the calls end it).
        """
        close = self._t.reasoning_close
        start = max(after, self._rscan)
        e = close.search(self.buf, start, partial=not final) if close is not None else None
        if e is not None and not e.partial and (final or e.end() < len(self.buf)):
            self._rscan = -1
            if self._calls_close_block(self.pos, e.start()):
                # the model called a tool and then closed its reasoning: the calls are read from the
                # opener on, and the closer after them is dropped (a close with no open)
                self._boundary()
                self.state = "content"
                return
            self._reasoning(self.buf[self.pos:e.start()])
            self.pos = e.end()
            self._leave_reasoning()
            return
        if not final:
            self._rscan = e.start() if e is not None else max(after, len(self.buf) - 64)
            return
        self._rscan = -1
        self._boundary()
        self.state = "content"

    def _calls_close_block(self, start: int, end: int) -> bool:
        """The text from a call opener at ``start`` to the reasoning closer at ``end`` is calls that end
        right before the closer, naming a declared tool (a call the model wrote inside its reasoning,
        not one it quoted mid-thought)."""
        t, tp = self.tools, self.plan.tools
        if t is None or tp is None or not tp.names:
            return False
        last = next((m for m in (t.section_end, t.call_end, t.call_close) if m.strip()), "")
        if not last:
            return False
        region = self.buf[start:end].rstrip(WS)
        ends = mk.compile_source("(?:" + mk.loose(last) + r")\Z")
        return ends.search(region) is not None and mk.compile_source(mk.tool_name(tp.names)).search(region) is not None

    def _step_tentative(self, final: bool) -> None:
        """Delimiter-style reasoning: hold text until its end marker (reasoning) or a call / the end (content)."""
        tools = self._t.tool_alts
        start = max(self.pos, self._scan)
        hits: list[Hit] = []
        for alt in self._t.answer_alts:
            m = alt.search(self.buf, start, partial=not final)
            if m is not None:
                hits.append((m.start(), 1, m))
        if self._t.reasoning_end is not None:
            m = self._t.reasoning_end.search(self.buf, start, partial=not final)
            if m is not None:
                hits.append((m.start(), 0, m))
        for alt in tools:
            m = alt.search(self.buf, start, partial=not final)
            if m is not None:
                hits.append((m.start(), 1, m))
        if hits:
            at, kind, m = first_hit(hits)
            if m.partial or (not final and m.end() == len(self.buf)):
                self._scan = at
                return
            if kind == 0:
                self._reasoning(self.buf[self.pos:m.start()])
                self.pos = m.end()
                self._boundary()
            # a call, an answer wrapper or the opener came first: the held text was the answer
            self.state = "content"
            return
        self._scan = max(self.pos, len(self.buf) - 64)
        if final:
            self.state = "content"

    def _step_tools(self, final: bool) -> None:
        t = self.tools
        assert t is not None
        st, end = mk.match_here(self.section_end, self.buf, self.pos, final) if t.section_end else ("no", 0)
        if st == "no" and final and _cut_at_end(self.section_end, self.buf, self.pos):
            st, end = "match", len(self.buf)   # the output stopped inside the section's end marker
        if st == "match":
            self.pos = end
            self._in_section = False
            self._call_boundary()
            self.state = "content"
            return
        if st == "more":
            return
        if self._in_list:
            st, end = mk.match_here(_LIST_CLOSE, self.buf, self.pos, final)
            if st == "more":
                return
            if st == "match":
                self.pos = end
                self._leave_tools()
                return
        if self.msg.tool_calls and t.separator:
            st, end = mk.match_here(self._t.separator, self.buf, self.pos, final)
            if st == "more":
                return
            if st == "match" and end > self.pos:
                self.pos = end
        if t.call_start:
            st, end = mk.match_here(self._t.answer_start, self.buf, self.pos, final) \
                if self._t.answer_start is not None else ("no", 0)
            if st == "more":
                return
            if st == "match":   # the answer's start, which begins like a call's: the calls end here
                self._leave_tools()
                return
            st, end = mk.match_here(self._t.call_start, self.buf, self.pos, final)
            if st == "more":
                return
            if st == "match":
                self.pos = end
                self._start_call()
                return
            self._leave_tools()
            return
        # no per-call marker: the call itself (JSON object or name) starts here
        i = self.pos
        while i < len(self.buf) and self.buf[i] in WS:
            i += 1
        if i == len(self.buf):
            if final:
                self._leave_tools()
            return
        if t.call_start and not t.section_end:
            self._leave_tools()
            return
        if self._named_call is not None:   # only a tool's name and its opener start another call
            m = self._named_call.match(self.buf, i, partial=True)
            if m is not None and m.partial and final:
                # the output stopped inside what opens a call (``call_4|sea``): a call cut short
                self.msg.truncated = True
                self.warn("output ended inside a tool call", malformed=False)
                m = None
            if m is None:
                self._leave_tools()
                return
            if m.partial:
                return
        if self.msg.tool_calls and not self._in_section and self._t.content is not None:
            # the turn's end marker after calls that no section holds (``\endturn`` after ``\call{...}``):
            # the calls end here, even where a call's opener, loosely read, could begin with its first
            # character
            m = self._t.content.match(self.buf, i, partial=not final)
            if m is not None and m.partial:
                return   # (``<`` may begin ``<|im_end|>`` as well as a call)
            if m is not None and (m.lastgroup or "").startswith("stop"):
                self._leave_tools()
                return
        reader = make_call_reader(self, t)
        if self.msg.tool_calls and not t.separator and self.buf[i] in _LOOSE_SEPARATORS:
            # a separator the template never shows ("; ", ","): skipped when another call follows it
            j = i + 1
            while j < len(self.buf) and self.buf[j] in WS:
                j += 1
            if j == len(self.buf) and not final:
                return
            if j < len(self.buf) and reader.can_start(self.buf, j):
                i = j
        if not reader.can_start(self.buf, i):
            self._leave_tools()
            return
        self.pos = i
        self._call = reader
        self.state = "call"

    def _step_resync(self, final: bool) -> None:
        """After a broken call inside a section: its rest, as written, is content up to the next
        call start or the section's end."""
        pat = self._t.resync
        assert pat is not None
        m = leftmost(pat, self.buf, self.pos, final)
        if m is None:
            self._content(self.buf[self.pos:], raw=True)
            self.pos = len(self.buf)
            if final:
                self._leave_tools()
            return
        self._content(self.buf[self.pos:m.start()], raw=True)
        self.pos = m.start()
        if m.partial or (not final and m.end() == len(self.buf)):
            return
        if m.lastgroup == "sep":
            self.pos = m.end()
        self._boundary()
        self.state = "tools"

    def _leave_tools(self) -> None:
        """Tool section ended without its closing marker: back to content."""
        self._in_section = False
        self._in_list = False
        self._call_boundary()
        self.state = "content"

    def _start_call(self) -> None:
        assert self.tools is not None
        self._call = make_call_reader(self, self.tools)
        self.state = "call"

    def _step_call(self, final: bool) -> None:
        reader = self._call
        assert reader is not None
        status, pos = reader.step(self.buf, self.pos, final)
        self.pos = pos
        if status == "more":
            return
        self._call = None
        if status == "bad":
            self.state = "content"
            if getattr(reader, "index", None) is not None:
                # the call was announced: close it, and what follows is content again
                reader.truncate()
                self.warn("tool call broke off; its arguments were closed and the rest kept as content")
                if self._in_section and self._t.resync is not None:
                    self.state = "resync"   # a later call of the same section is still a call
                return
            # the text did not fit the format: keep it as content
            self._in_list = False
            if not reader.quiet:
                self.warn("tool call did not match the format; kept as content")
            if self.pos <= reader.origin < len(self.buf):
                self.pos = reader.origin + 1   # what opened it is text: the search goes on after it
            self._content(self.buf[reader.origin:self.pos], raw=True)
            if self._in_section and self._t.resync is not None:
                self.state = "resync"   # a later call of the same section is still a call
            return
        t = self.tools
        assert t is not None
        if getattr(reader, "broke", False) and self._in_section and self._t.resync is not None:
            self.state = "resync"   # a later call of the same section is still a call
            return
        if t.call_end and not isinstance(reader, _Closing):   # _Closing has read the end marker already
            st, end = mk.match_here(self._t.call_end, self.buf, self.pos, final)
            if st == "more" and not final:
                self._call = _Closing(self)
                self.state = "call"
                return
            if st == "no" and final and _cut_at_end(self._t.call_end, self.buf, self.pos):
                st, end = "match", len(self.buf)   # the output stopped inside the call's end marker
            if st == "match":
                self.pos = end
        self._after_call()

    def _after_call(self) -> None:
        self._call_boundary()
        self.state = "tools" if (self._in_section or (self.tools is not None and not self.tools.section_start)) \
            else "content"

    def _close_all(self) -> None:
        if self._call is not None and not isinstance(self._call, _Closing):
            reader = self._call
            reader.truncate()
            self.msg.truncated = True
            self.warn("output ended inside a tool call", malformed=False)
            self._call = None
            if getattr(reader, "index", 0) is None:
                # never announced: its text stays in the message as content
                self.pos = min(self.pos, reader.origin)
        elif self.state == "reasoning":
            self.msg.truncated = True
            self.warn("output ended inside the reasoning block", malformed=False)
        self._flush_fits()
        rest = self.buf[self.pos:]
        if rest.strip():
            self._content(rest, raw=True)
        self.pos = len(self.buf)
        self._end_inline()


def first_hit(hits: list[Hit]) -> Hit:
    """The first of the ``(start, kind, match)`` hits of tentative reasoning; at one place the longest
    (an opener ``:::thinking`` over a closer ``:::``), then the lower kind (0: the reasoning's end)."""
    return min(hits, key=lambda h: (h[0], h[0] - h[2].end(), h[1]))


LOOKBACK = 4096   # characters before a complete marker where a longer one may still be growing


def leftmost(pat: regex.Pattern[str], buf: str, pos: int, final: bool) -> regex.Match[str] | None:
    """``pat.search(buf, pos, partial=not final)``, but leftmost: the ``regex`` module prefers any
    complete match to an earlier partial one, so a marker growing at the end of a stream
    (``` ```<｜tool▁call▁end｜><｜tool▁calls▁end｜><｜end▁of▁sentence｜`` ...) would lose to a shorter
    marker inside it (``<｜end▁of▁sentence｜>``) that the whole text never sees there. A partial
    match reaches the end of the buffer, so only the last :data:`LOOKBACK` characters are looked at
    again: the stream reads what the whole text reads."""
    m = pat.search(buf, pos, partial=not final)
    if m is None or final or m.partial:
        return m
    at = max(pos, len(buf) - LOOKBACK)
    while at < m.start():
        p = pat.search(buf, at, m.start(), partial=True)      # a candidate that runs into m
        if p is None:
            break
        q = pat.match(buf, p.start(), partial=True)
        if q is not None and q.start() < m.start():
            return q
        at = p.start() + 1
    return m


def _cut_at_end(pat: regex.Pattern[str] | None, buf: str, pos: int) -> bool:
    """The rest of the output (after whitespace) is the start of marker ``pat``, cut off by the end."""
    if pat is None:
        return False
    i = pos
    while i < len(buf) and buf[i] in WS:
        i += 1
    if i == len(buf):
        return False
    m = pat.match(buf, i, partial=True)
    return m is not None and m.partial


class _Closing(CallReader):
    """Waits for the rest of a call's end marker."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.origin = engine.pos
        self.call_end = engine._t.call_end

    def step(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        st, end = mk.match_here(self.call_end, buf, pos, final)
        if st == "more":
            return "more", pos
        return "done", (end if st == "match" else pos)

    def truncate(self) -> None:
        return None


__all__ = ["Engine"]
