"""Call readers: turn the text of one tool call into a call header and argument fragments.

Each reader consumes each character once and reports ``("more" | "done" | "bad", position)``.
This module holds what they share: the :class:`CallReader` interface, the stream of one JSON
value's raw text as argument fragments (:class:`_ArgsStream`) and what ends a tagged call's name
(:func:`name_stops`). The readers: ``jsoncall.JsonCallReader`` (the name inside a JSON object),
``tagged.TaggedCallReader`` (a name between markers followed by JSON, Python-literal, ``key: value``
or tagged arguments; its markers read by ``tagged_frame``), ``layout.LayoutCallReader`` (a learned
call layout); ``readers.make_call_reader`` picks one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import regex

from .. import markers as mk
from ..analysis.model import LINE_ARGS
from ..values.jsonfix import StringMender
from ..values.jsonscan import JsonScanner
from .tolerance import self_closing_source

if TYPE_CHECKING:
    from ..analysis.model import ToolFormat
    from .sink import CallSink as Engine

WS = " \t\r\n"


class CallReader:
    origin: int = 0
    quiet: bool = False       # the text it gave back was no call at all (no marker opened it): no warning
    implied: bool = False     # the call's start marker was left out (the engine found its name prefix)
    index: int | None = None     # the call's index once announced
    broke: bool = False          # its arguments broke off (closed; the rest of the text is content)
    engine: Engine

    def _mark_truncated(self) -> None:
        """The call this reader announced was cut short."""
        assert self.index is not None
        self.engine.msg.tool_calls[self.index].truncated = True

    def can_start(self, buf: str, pos: int) -> bool:
        return True

    def _broke_off(self, end: int) -> tuple[str, int]:
        """The arguments broke off: they are closed, and the text from ``end`` (after their last
        complete value: a member cut by a marker, a stray token) is content again."""
        self.truncate()
        self.engine.warn("tool call broke off; its arguments were closed and the rest kept as content")
        self.broke = True
        return "done", end

    def step(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        raise NotImplementedError

    def truncate(self) -> None:
        """The output ended inside this call: close its arguments."""


def _skip_ws(buf: str, i: int) -> int:
    n = len(buf)
    while i < n and buf[i] in WS:
        i += 1
    return i


class _ArgsStream:
    """Streams one JSON value's raw text as argument fragments, up to the scanner's commit point."""

    def __init__(self, engine: Engine, index: int | None, sink: Any = None) -> None:
        self.engine = engine
        self.index = index
        self.sent = 0
        self.sink = sink   # where fragments go; defaults to the engine
        self.mend = StringMender()

    def push(self, scanner: JsonScanner, start: int, end: int | None) -> None:
        limit = end if end is not None else scanner.commit
        if limit > start + self.sent:
            mended = self.mend.mended
            fragment = self.mend(scanner.text[start + self.sent:limit])
            if self.mend.mended and not mended:
                self.engine.warn("tool arguments held raw control characters or stray backslashes "
                                 "in strings; they were escaped")
            if self.sink is not None:
                self.sink(fragment)
            else:
                assert self.index is not None, "fragments go to an announced call"
                self.engine.call_args(self.index, fragment)
            self.sent = limit - start


def _cut_marker(pat: regex.Pattern[str], buf: str, at: int) -> bool:
    """The output ends inside this marker."""
    m = pat.match(buf, at, partial=True)
    return m is not None and m.partial


def name_stops(fmt: ToolFormat) -> tuple[regex.Pattern[str] | None, frozenset[str]]:
    """What ends a tagged call's name (None: the name is one word) and the characters such a
    marker may begin with."""
    ta = fmt.tagged
    after_name = fmt.id_position == "after_name"
    # the id block after the name may be left out with its closer written ([ARGS] without [CALL_ID]x)
    stop = [t for t in (fmt.name_suffix, fmt.id_prefix if after_name else "", fmt.id_suffix if after_name else "",
                        ta.prefix if ta else "", fmt.call_close, fmt.call_end) if t.strip()]
    stop_src = [mk.loose(s) for s in stop]
    if self_closing_source(fmt):
        stop_src.insert(0, self_closing_source(fmt))
    if not fmt.name_suffix.strip():
        # the arguments themselves end the name: "call:NAME{...", "NAME(...", "NAME\n{...}"
        opener = fmt.literal.open if fmt.args == "literal" and fmt.literal else "{"
        stop_src.append(regex.escape(opener))
        stop.append(opener)
        if fmt.args in LINE_ARGS:
            stop_src.append(r"(?=\s)")    # "NAME key=value": white space ends the name
    if fmt.name_suffix.startswith(mk.HEADER):
        stop_src = []   # header fields follow the name: the name is one word
    firsts = frozenset(s.strip()[0] for s in stop) | frozenset("<[")   # "<", "[": a marker respelled
    return (mk.compile_source("|".join(stop_src)) if stop_src else None), firsts
