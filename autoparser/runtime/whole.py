"""The whole-text fast path of ``Request.parse(text)``: the engine's route through a complete
output, taken in one pass.

:class:`~.engine.Engine` reads a whole text as a stream would: a state step at a time, each
marker checked again for a longer one more text could make, call objects scanned a character
at a time, arguments passed through the string mender; 30-70 µs for a one- or two-call
output. :class:`WholeReader` (built once per plan) takes the same route through a complete
text and gives the engine's steps (:data:`.build.Step`) to a :class:`.build.MessageBuilder`,
the engine's own emitters without its reading state (:class:`WholeParse`, once per request,
is ``Request.parse``'s route), so whitespace, ids, warnings and the call guard are the
engine's; :func:`whole_steps` lists the steps instead (:meth:`.engine.Engine.replay`).

* Free text runs to where the engine's compiled patterns (:func:`.engine.tables`, or their
  ``re`` twins, :mod:`.retwin`) find their first marker: one search per segment. A regex over
  the whole message would run its free text lazily, a character at a time (6-17 µs for 200
  characters), and would stop at the grammar's markers, not at every marker the engine also
  reads. A marker expected in place is matched with the white space before it in one match.
* A call in a JSON layout (``{"name": "NAME", "arguments": {...}}``, an id member before or
  after them) or a tagged one with JSON arguments (``<function=NAME>{...}</function>``) is one
  anchored regex over its header, compiled once per plan from the format, then one strict C
  ``json`` decode of its arguments, whose value the guard reuses. Other layouts (tagged or
  literal arguments, Python literals, a name as key, ids outside the object, members written
  the same in every call such as ``"jsonrpc": "2.0"``) are read by the engine's own call
  reader. Around calls, section ends, separators and call starts are matched as the engine's
  tools state matches them.

It takes only the well-formed route and returns None at anything off it; the engine then
parses the text: a marker the engine drops, repairs or reads as implied (a re-emitted
reasoning opener, a call opener inside reasoning, an implied section, a separator the
template never shows), arguments the engine mends (raw control characters, a trailing comma,
NaN) or a call reader's warning, a block or call never closed, a marker cut off by the end of
the text, a reasoning block after answer text. ``tests/test_whole.py`` checks that the message
is the engine's, field for field, on every fixture scenario, a corpus sample and their cut
and corrupted variants.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

import regex

from .. import markers as mk
from ..analysis.model import ToolFormat
from ..plan import PerPlan, RequestPlan
from ..values.decode import args_text
from .build import MessageBuilder, Step, StepSink
from .calls import name_stops
from .engine import Hit, Tables, first_hit, start_state, tables
from .guard import guard_for
from .message import Message, ToolCall
from .readers import make_call_reader
from .retwin import twin

WS = " \t\r\n"          # what the engine skips before a marker or a JSON value
_JWS = "[ \t\r\n]*"
_BOUNDARY: Step = ("boundary",)
_CALLS: Step = ("calls",)


class _Steps(list[Step]):
    """The steps listed (:func:`whole_steps`)."""

    def put_content(self, text: str) -> None:
        self.append(("content", text))

    def put_reasoning(self, text: str) -> None:
        self.append(("reasoning", text))

    def put_boundary(self) -> None:
        self.append(_BOUNDARY)

    def put_calls(self) -> None:
        self.append(_CALLS)

    def put_call(self, name: str, call_id: str, text: str, value: Any) -> None:
        self.append(("call", name, call_id, text, value))
_NO_NAME_CHARS = frozenset('\n<>{}"\\')     # names the engine refuses or a JSON string escapes


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


# strict: raw control characters in strings are refused (the engine would mend them, with a warning)
_decode = json.JSONDecoder(parse_constant=_no_constant).raw_decode

#: one call read from ``pos``: (name, id, arguments, their value if decoded, end) or None
CallRead = Callable[[RequestPlan, str, int], "tuple[str, str, str, Any, int] | None"]
_NOT_DECODED = None      # the arguments' value is left to the guard to decode


def _here(pat: regex.Pattern[str] | None, text: str, pos: int) -> int:
    """``markers.match_here`` at the end of a whole text: where the marker ends, -1 when it is not
    here; raises :class:`_Off` when the text ends inside it (the engine reads such a cut marker
    its own way)."""
    if pat is None:
        return pos
    n = len(text)
    i = pos
    while i < n and text[i] in WS:
        i += 1
    if i == n:
        return -1
    m = pat.match(text, i)
    if m is not None:
        return m.end()
    if pat.match(text, i, partial=True) is not None:
        raise _Off
    return -1


def _here_for(pat: regex.Pattern[str] | None) -> Callable[[str, int], int]:
    """:func:`_here` for one marker, the white space before it read by the same match (possessive,
    as the loop in :func:`_here` reads it); :func:`_here` itself where the marker is not there."""
    if pat is None:
        return lambda text, pos: pos
    lead = None
    if "\\G" not in pat.pattern:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                lead = twin(regex.compile(r"([ \t\r\n]*+)(?:" + pat.pattern + ")", cache_pattern=False))
        except (regex.error, Warning):
            lead = None
    if lead is None:
        return lambda text, pos: _here(pat, text, pos)
    match = lead.match

    def here(text: str, pos: int) -> int:
        m = match(text, pos)
        if m is None:
            return _here(pat, text, pos) if pos < len(text) else -1
        return m.end() if m.end(1) < len(text) else -1     # nothing but white space: no marker here
    return here


class _Off(Exception):
    """The text leaves the well-formed route: the engine parses it."""


def _names(names: tuple[str, ...], ok: Callable[[str], bool]) -> str:
    usable = sorted((n for n in names if n and ok(n)), key=len, reverse=True)
    return "(?P<name>" + "|".join(regex.escape(n) for n in usable) + ")" if usable else ""


def _json_key(key: object) -> str:
    return regex.escape(json.dumps(key, ensure_ascii=False))


def _json_reader(t: ToolFormat, names: tuple[str, ...]) -> CallRead | None:
    """A call written as one JSON object ``{"name": "NAME", "arguments": {...}}`` with an optional
    string id before the name, before the arguments or after them (nothing else in it)."""
    lay = t.json
    if lay is None or lay.name_is_key or t.python_literals or any(
            len(p) > 1 for p in (lay.name_path, lay.args_path, lay.id_path)) or not lay.name_path \
            or not lay.args_path:
        return None
    name = _names(names, lambda n: not (_NO_NAME_CHARS & set(n)) and n.isprintable())
    if not name:
        return None

    def the_id(group: str) -> str:
        if not lay.id_path:
            return ""
        return "(?:" + _json_key(lay.id_path[0]) + _JWS + ":" + _JWS + '"(?P<' + group + r'>[^"\\\x00-\x1f]*)"' + \
            _JWS + "," + _JWS + ")?"
    # {["id": "ID",] "name": "NAME", ["id": "ID",] "arguments":   ...   [, "id": "ID"] }
    head = _JWS + r"\{" + _JWS + the_id("id0") + _json_key(lay.name_path[0]) + _JWS + ":" + _JWS + '"' + name + '"' + \
        _JWS + "," + _JWS + the_id("id1") + _json_key(lay.args_path[0]) + _JWS + ":" + _JWS
    tail = _JWS + ("(?:," + _JWS + _json_key(lay.id_path[0]) + _JWS + ":" + _JWS + r'"(?P<id2>[^"\\\x00-\x1f]*)"' + _JWS
                   + ")?" if lay.id_path else "") + r"\}"
    # plain ``re`` (faster here): no class in these sources differs from the engine's ``regex``
    p_head, p_tail = re.compile(head), re.compile(tail)
    ids = bool(lay.id_path)

    def read(plan: RequestPlan, text: str, pos: int) -> tuple[str, str, str, Any, int] | None:
        h = p_head.match(text, pos)
        if h is None:
            return None
        try:
            value, end = _decode(text, h.end())
        except (ValueError, RecursionError):
            return None
        raw = text[h.end():end]
        if isinstance(value, str):
            raw, value = args_text(raw, False), _NOT_DECODED   # a JSON string holding the arguments' JSON
        elif not isinstance(value, (dict, list)):
            return None
        tl = p_tail.match(text, end)
        if tl is None:
            return None
        call_id = ""
        if ids:
            found = [i for i in (h.group("id0"), h.group("id1"), tl.group("id2")) if i is not None]
            if len(found) > 1:
                return None
            call_id = found[0] if found else ""
        return h.group("name"), call_id, raw, value, tl.end()
    return read


def _tagged_reader(t: ToolFormat, names: tuple[str, ...]) -> CallRead | None:
    """A name between markers, then a JSON object: ``<function=NAME>{...}</function>``."""
    if t.args != "json" or t.python_literals or t.id_position != "none" or t.name_in_id or t.id_from_header:
        return None
    stop, _ = name_stops(t)
    if stop is None:
        return None      # header fields after the name (the name is one word there)
    suffix = t.name_suffix.strip()

    def fits(n: str) -> bool:
        # the engine's name runs to the first stop marker: no stop may begin inside a usable name
        if _NO_NAME_CHARS & set(n) or any(c.isspace() for c in n) or len(n) > 256:
            return False
        m = stop.search(n + (suffix or "{"))
        return m is not None and m.start() == len(n)

    name = _names(names, fits)
    if not name:
        return None
    # the name is stripped (any white space around it), the markers are found after JSON white space
    p_head = regex.compile(_JWS + mk.pattern(t.name_prefix) + r"\s*" + name + r"\s*" + mk.pattern(t.name_suffix) + _JWS,
                           cache_pattern=False)
    close_here = _here_for(mk.compile_marker(t.call_close))
    strings = t.args_as_string

    def read(plan: RequestPlan, text: str, pos: int) -> tuple[str, str, str, Any, int] | None:
        h = p_head.match(text, pos)
        if h is None:
            return None
        try:
            value, end = _decode(text, h.end())
        except (ValueError, RecursionError):
            return None
        raw = text[h.end():end]
        if isinstance(value, str) and strings:
            raw, value = args_text(raw, False), _NOT_DECODED
        elif not isinstance(value, (dict, list)):
            return None
        close = close_here(text, end)
        return h.group("name"), "", raw, value, (close if close >= 0 else end)
    return read


class _Recorder:
    """The engine's side of a call reader (:class:`.sink.CallSink`), recording one call: for the
    layouts no regex above reads, the engine's own reader reads the call."""

    def __init__(self, plan: RequestPlan, text: str, pos: int) -> None:
        self.plan = plan
        self.buf = text
        self.pos = pos
        self.msg = Message()
        self.args: list[str] = []
        self.section_end = tables(plan).section_end
        self.off = False      # the reader repaired something or wrote content: the engine's job

    def call_header(self, name: str, call_id: str) -> int:
        self.off = self.off or bool(self.msg.tool_calls)
        self.msg.tool_calls.append(ToolCall(name=name, id=call_id))
        return 0

    def call_args(self, index: int, fragment: str) -> None:
        if fragment:
            self.args.append(fragment)

    def has_args(self, index: int) -> bool:
        return bool(self.args)

    def emit_content(self, text: str, raw: bool = False) -> None:
        self.off = True

    def warn(self, text: str, malformed: bool = True) -> None:
        self.off = True

    def schema(self, name: str) -> Mapping[str, Any]:
        tp = self.plan.tools
        return (tp.schemas.get(name) if tp is not None else None) or {}


def _engine_reader(t: ToolFormat) -> CallRead:
    """The engine's call reader, on the whole text as the engine's two passes run it."""
    def read(plan: RequestPlan, text: str, pos: int) -> tuple[str, str, str, Any, int] | None:
        rec = _Recorder(plan, text, pos)
        reader = make_call_reader(rec, t)
        status, end = reader.step(text, pos, False)
        if status == "more":        # a marker that ends the text ends the call in the final pass
            status, end = reader.step(text, end, True)
        msg = rec.msg
        if status != "done" or rec.off or len(msg.tool_calls) != 1 or msg.truncated or msg.tool_calls[0].truncated \
                or getattr(reader, "broke", False):
            return None
        call = msg.tool_calls[0]
        return call.name, call.id, "".join(rec.args), _NOT_DECODED, end
    return read


@dataclass(frozen=True)
class _Twins:
    """The engine's patterns the reader searches with, as :func:`.retwin.twin` gives them."""

    content: re.Pattern[str] | regex.Pattern[str] | None
    answer_alts: tuple[re.Pattern[str] | regex.Pattern[str] | None, ...]
    reasoning_end: re.Pattern[str] | regex.Pattern[str] | None
    tool_alts: tuple[re.Pattern[str] | regex.Pattern[str] | None, ...]
    reasoning_call: re.Pattern[str] | regex.Pattern[str] | None


@dataclass(frozen=True, eq=False)
class WholeReader:
    """The steps of one plan's well-formed outputs (built once per plan)."""

    seen: bool                      # the engine starts with answer text (a prefill, an inline block)
    start: str                      # the engine's state at the start of the output
    tb: Tables                      # the engine's compiled patterns
    fmt: ToolFormat | None          # the format of the calls (None: no calls)
    read_call: CallRead | None      # None: calls are left to the engine
    # _here of the markers the calls' route matches in place
    tw: _Twins                      # the patterns searched, as ``re`` twins where they have one
    stop_at_end: bool               # a content stop may match at the end of a text (empty, or looking back)
    reopen_here: Callable[[str, int], int]
    section_end_here: Callable[[str, int], int]
    separator_here: Callable[[str, int], int]
    answer_start_here: Callable[[str, int], int]
    call_start_here: Callable[[str, int], int]
    call_end_here: Callable[[str, int], int]

    def steps(self, plan: RequestPlan, text: str) -> list[Step] | None:
        """The engine's steps through ``text``, or None when it leaves the well-formed route."""
        out = _Steps()
        return out if self.read(plan, text, out) else None

    def read(self, plan: RequestPlan, text: str, out: StepSink) -> bool:
        """The engine's steps through ``text``, given to ``out`` as they are found; False when the text
        leaves the well-formed route (``out`` has then been given the steps up to there)."""
        try:
            return self._steps(plan, text, out)
        except _Off:
            return False

    def _steps(self, plan: RequestPlan, text: str, out: StepSink) -> bool:
        pos = 0
        if self.start == "tentative":
            pos = self._tentative(text, out)
        elif self.start == "reasoning":
            pos = self._reasoning(text, 0, out)
        fence, tail, seen = False, "", self.seen
        calls = 0       # calls so far in the message
        content = self.tw.content
        n = len(text)
        at_end = self.stop_at_end
        while True:
            m = content.search(text, pos) if content is not None and (pos < n or at_end) else None
            stop = m.start() if m is not None else n
            if stop > pos:
                piece = text[pos:stop]
                out.put_content(piece)
                s = tail + piece       # as the engine tracks a ``` fence in the answer
                if "```" in s and s.count("```") % 2:
                    fence = not fence
                tail = s[-2:]
                seen = seen or bool(piece.strip(WS))
            if m is None:
                return True
            kind = m.lastgroup or ""
            at = m.end()
            if fence and kind[:1] == "t":      # call markup inside a code fence: quoted text
                piece = m.group()
                out.put_content(piece)
                s = tail + piece
                if "```" in s and s.count("```") % 2:
                    fence = not fence
                tail = s[-2:]
                seen = seen or bool(piece.strip(WS))
            elif kind in ("tsection", "tcall", "tname"):
                out.put_calls()
                at, calls = self._calls(plan, text, m.start() if kind == "tname" else at, out, calls,
                                        section=kind == "tsection")
                out.put_calls()
            elif kind == "rstart" and not seen:
                out.put_boundary()
                at = self._reasoning(text, at, out)
            elif kind in ("rend", "rstray", "send") or kind.startswith(("stop", "cwrap")):
                out.put_boundary()
            elif kind == "rstray2":
                pass
            elif kind.startswith("xclose"):
                out.put_calls()
            else:
                return False
            if at <= pos:
                return False
            pos = at

    def _tentative(self, text: str, out: StepSink) -> int:
        """Reasoning without its opener: reasoning if its end comes before a call or an answer marker."""
        tw = self.tw
        hits: list[Hit] = []     # (``re`` matches among them: first_hit reads their start and end only)
        # only a hit that starts no later than the first one found can come first: at the text's start, a
        # match there is all that is left to look for
        first = -1      # where the first hit so far starts
        for kind, alts in ((1, tw.answer_alts), (0, (tw.reasoning_end,)), (1, tw.tool_alts)):
            for alt in alts:
                if alt is not None:
                    m = alt.match(text, 0) if first == 0 else alt.search(text, 0)
                    if m is not None:
                        hits.append((m.start(), kind, cast("regex.Match[str]", m)))
                        first = m.start() if first < 0 else min(first, m.start())
        if not hits:
            return 0
        at, kind, m = first_hit(hits) if len(hits) > 1 else hits[0]
        if kind:
            return 0
        out.put_reasoning(text[:at])
        out.put_boundary()
        return m.end()

    def _reasoning(self, text: str, pos: int, out: StepSink) -> int:
        """A reasoning block from ``pos`` to its end marker."""
        tb = self.tb
        if tb.reasoning_reopen is not None and self.reopen_here(text, pos) >= 0:
            raise _Off      # the opener written again: the engine drops it
        end = self.tw.reasoning_end
        if end is None:
            raise _Off
        m = end.search(text, pos)
        if m is None:
            raise _Off      # never closed: the engine flags the message truncated
        if self.tw.reasoning_call is not None:
            c = self.tw.reasoning_call.search(text, pos)
            if c is not None and c.start() < m.start():
                raise _Off  # a call marker inside the block
        out.put_reasoning(text[pos:m.start()])
        out.put_boundary()
        return m.end()

    def _calls(self, plan: RequestPlan, text: str, pos: int, out: StepSink, count: int,
               section: bool) -> tuple[int, int]:
        """Calls from ``pos`` (a section's inside, or a call's start): where content resumes, and
        the number of calls in the message so far (``count`` before)."""
        read, t, tb = self.read_call, self.fmt, self.tb
        if read is None or t is None:
            raise _Off
        in_call = not section
        n = len(text)
        while True:
            if not in_call:     # between calls: the section's end, a separator, the next call
                if t.section_end:
                    end = self.section_end_here(text, pos)
                    if end >= 0:
                        return end, count
                if count and t.separator:
                    end = self.separator_here(text, pos)
                    if end > pos:
                        pos = end
                if t.call_start:
                    if tb.answer_start is not None and self.answer_start_here(text, pos) >= 0:
                        return pos, count     # the answer's start, which begins like a call's
                    end = self.call_start_here(text, pos)
                    if end < 0:
                        return pos, count
                    pos = end
                else:
                    i = pos
                    while i < n and text[i] in WS:
                        i += 1
                    if i == n:
                        return pos, count
                    if tb.named_call is not None:    # only a tool's name and its opener start a call
                        m = tb.named_call.match(text, i, partial=True)
                        if m is None:
                            return pos, count
                        if m.partial:
                            raise _Off
                    if count and not t.separator and text[i] in ";,":
                        raise _Off      # a separator the template never shows
                    if t.style == "json" and text[i] != "{":
                        return pos, count
                    pos = i
            call = read(plan, text, pos)
            if call is None:
                raise _Off
            name, call_id, args, value, pos = call
            out.put_call(name, call_id, args, value)
            count += 1
            if t.call_end:
                end = self.call_end_here(text, pos)
                if end >= 0:
                    pos = end
            if not (section or not t.section_start):
                return pos, count
            in_call = False


def _reader(plan: RequestPlan) -> WholeReader:
    r = plan.reasoning
    # the engine writes these first (Engine.__init__): the answer is not empty then
    seen = bool(plan.prefill.content) or (r.open_at_start and not r.extract and bool(r.inline_prefix))
    read: CallRead | None = None
    tp = plan.tools
    if tp is not None:
        t = tp.format
        read = _json_reader(t, tp.names) if t.style == "json" else \
            _tagged_reader(t, tp.names) if t.style == "tagged" else None
        if read is None:
            read = _engine_reader(t)
    # nothing here refers to the plan: plans with the same output key share the reader
    tb = tables(plan)
    at_end = tb.content is not None and (tb.content.search("") is not None or "(?<" in tb.content.pattern)
    tw = _Twins(twin(tb.content, True), tuple(twin(p, True) for p in tb.answer_alts), twin(tb.reasoning_end, True),
                tuple(twin(p, True) for p in tb.tool_alts), twin(tb.reasoning_call, True))
    return WholeReader(seen, start_state(plan), tb, tp.format if tp is not None else None, read, tw, at_end,
                       *(_here_for(p) for p in (tb.reasoning_reopen, tb.section_end, tb.separator, tb.answer_start,
                                                tb.call_start, tb.call_end)))


_readers: PerPlan[WholeReader] = PerPlan(_reader, shared=True)


class WholeParse:
    """``Request.parse``'s well-formed route for one request plan: its reader and its call guard,
    looked up once (a request parses many outputs)."""

    __slots__ = ("guard", "plan", "reader")

    def __init__(self, plan: RequestPlan) -> None:
        self.plan = plan
        self.reader = _readers(plan)
        self.guard = guard_for(plan) if plan.tools is not None else None

    def parse(self, text: str, warnings: list[str]) -> Message | None:
        """The message of the complete output ``text`` (``warnings`` first among its warnings), or None
        when the text is off the well-formed route and the engine must read it."""
        builder = MessageBuilder(self.plan, self.guard, live=False)
        if warnings:
            builder.msg.warnings.extend(warnings)
        return builder.done() if self.reader.read(self.plan, text, builder) else None


def whole_steps(plan: RequestPlan, text: str) -> list[Step] | None:
    """The engine's steps through the complete output ``text`` (for :meth:`Engine.replay`), or None
    when the text is off the well-formed route and the engine must read it (always for a turn
    envelope: :class:`.envelope.EnvelopeEngine` reads it)."""
    if plan.analysis.envelope is not None:
        return None
    return _readers(plan).steps(plan, text)


__all__ = ["WholeParse", "WholeReader", "whole_steps"]
