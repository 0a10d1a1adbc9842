"""The frame of a tagged call: the markers around its arguments, read as phases (the name
between its prefix and suffix, an id before or after the name or after the arguments, the close)
and the call announced once its name and id are known. ``tagged.TaggedCallReader`` adds the
arguments' phases."""

from __future__ import annotations

from typing import TYPE_CHECKING

import regex

from .. import markers as mk
from ..markers import definition as dm
from ..values.jsonscan import JsonScanner
from .calls import CallReader, _ArgsStream, _cut_marker, _skip_ws, name_stops
from .lineargs import LineArgsReader
from .phases import Phases
from .tolerance import close_head, close_tail, loose_marker, self_closing

if TYPE_CHECKING:
    from ..analysis.model import ToolFormat
    from .sink import CallSink as Engine

_NAME = regex.compile(r"[^\s<>\[\]{}\"'|,:=()`]+")


class _TaggedFrame(Phases, CallReader):
    """A tagged call's markers: its state, the name and id phases, the close (``_close``)."""

    def __init__(self, engine: Engine, fmt: ToolFormat) -> None:
        self.engine = engine
        self.fmt = fmt
        self.origin = engine.pos
        self.phase = "id_first" if fmt.id_position == "before_name" else "name_prefix"
        self.broke = False          # the arguments broke off (the engine looks for the next call)
        self.implied = False        # the call's start marker was left out (the engine found its name prefix)
        self.name = ""
        self.call_id = ""
        self.index: int | None = None
        self.scanner: JsonScanner | None = None
        self.args_start = 0
        self.args: _ArgsStream | None = None
        self.lines: LineArgsReader | None = None
        self.attr_fed = 0     # character-referenced arguments: raw text decoded so far, and its pieces
        self.attr_pieces: list[tuple[int, str, int]] = []     # (raw start, raw text, decoded start)
        self.nargs = 0
        self.key = ""
        self.value_parts: list[str] = []
        self._held: list[str] = []
        self.value_is_string = False
        self.value_sent_open = False
        self._value_first = True
        self._cdata_checked = True
        self._held_nl = ""
        p = loose_marker
        names = engine.plan.tools.names if engine.plan.tools is not None else ()
        self.p_name_prefix = p(fmt.name_prefix, names)
        self.p_name_suffix = p(fmt.name_suffix)
        self.p_id_prefix = p(fmt.id_prefix)
        self.p_id_suffix = p(fmt.id_suffix)
        self.p_close = p(fmt.call_close)
        self.p_close_head = close_head(fmt.call_close)
        self.p_self_close = self_closing(fmt)
        self.p_call_end = p(fmt.call_end)
        ta = fmt.tagged
        # a JSON object may stand for tagged arguments whose markers do not themselves start with "{"
        self._json_for_tags = ta is not None and not ta.prefix.strip().startswith("{")
        if ta is not None:
            self.p_arg_prefix = p(ta.prefix)
            self.p_key_suffix = p(ta.key_suffix)
            self.p_value_end = p(ta.value_end)
            # a value whose end marker the model left out ends where the next argument begins
            # (``Dallas\n<parameter=state>``; a quoted call close stays in the value)
            nxt = []
            if ta.value_end.strip() and ta.prefix.strip() and ta.key_suffix.strip():
                nxt.append(r"(?=\s*" + mk.pattern(ta.prefix) + r"[\w.\-]{1,64}" + mk.pattern(ta.key_suffix) + ")")
            if nxt and self.p_value_end is not None:
                self.p_value_end = mk.compile_source("(?P<vend>" + mk.pattern(ta.value_end) + ")|" + "|".join(nxt))
            self.p_arg_sep = p(ta.separator)
        self.p_name_stop, self._stop_firsts = name_stops(fmt)

    # -------------------------------------------------------------- phases (run by Phases.step)
    def _name_prefix(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        self.header_start = _skip_ws(buf, pos)
        st, end = mk.match_here(self.p_name_prefix, buf, pos, final)
        if st == "more" or (final and self.p_name_prefix is not None and _cut_marker(
                self.p_name_prefix, buf, self.header_start)):
            return "more", pos
        if st == "no":
            return "bad", pos
        self.phase = "name"
        return "next", end

    def _id_first(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """``<tool_call id="ID">``: the call marker ends right before the id."""
        self.header_start = _skip_ws(buf, pos)
        if self.p_id_suffix is None:
            self.phase = "name_prefix"
            return "next", pos
        m = self.p_id_suffix.search(buf, pos, partial=not final)
        if m is None or m.partial:
            if not final and len(buf) - pos > 256:
                return "bad", pos
            return "more", pos
        self.call_id = buf[pos:m.start()].strip()
        self.phase = "name_prefix"
        return "next", m.end()

    def _name(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        i = _skip_ws(buf, pos)
        if self.p_name_stop is not None:
            m = self.p_name_stop.search(buf, i, partial=True)
            if m is None or (m.partial and not final):
                if not final and len(buf) - i > 256:
                    return "bad", pos
                return "more", pos   # at the end of the output: the name may be cut
            if not final and self._cut_stop_before(buf, i, m.start()):
                return "more", pos
            end = m.start()   # at the end, a cut marker after the name still ends it
        else:
            m = _NAME.match(buf, i)
            if m is None or m.end() == len(buf):
                return ("bad", pos) if m is None and i < len(buf) else ("more", pos)
            end = m.end()
        name = buf[i:end].strip()
        if not name or len(name) > 256 or any(c in name for c in "\n<>{}"):
            return "bad", pos
        if self.fmt.name_in_id:
            m2 = regex.match(self.fmt.name_in_id, name)
            if m2:
                self.call_id = name
                name = m2.group("name")
        self.name = name
        self.phase = "name_suffix"
        return "next", end

    def _cut_stop_before(self, buf: str, i: int, at: int) -> bool:
        """A stop marker begins before ``at`` and runs to the end of the text (``regex`` prefers the
        complete match at ``at``, as ``<`` inside ``">]<`` of ``">]<]xyz[>[``)."""
        for j in range(i, at):
            if buf[j] in self._stop_firsts and self.p_name_stop is not None:
                p = self.p_name_stop.match(buf, j, partial=True)
                if p is not None and p.partial:
                    return True
        return False

    def _name_suffix(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.p_self_close is not None:
            st, end = mk.match_here(self.p_self_close, buf, pos, final)
            if st == "more":
                return "more", pos
            if st == "match":     # <invoke name="f"/>: a call with no arguments, closed with its name
                self._announce()
                self._args("{}")
                self.phase = "self_closed"
                return "next", end
        st, end = mk.match_here(self.p_name_suffix, buf, pos, final)
        if st == "more":
            return "more", pos
        if final and st == "no" and self.p_name_suffix is not None \
                and _cut_marker(self.p_name_suffix, buf, _skip_ws(buf, pos)):
            return "more", len(buf)   # the output stopped inside the marker after the name: it is that marker
        if st == "no" and self.fmt.name_suffix.strip():
            # tolerate a missing suffix only when what follows is clearly the arguments
            pass
        pos = end if st == "match" else pos
        if self.fmt.id_from_header and not self.call_id:
            header = buf[self.header_start:pos]
            cut = dm.next_open(header, 1)
            self.call_id = header[:cut].strip()
        self.phase = "id_after" if self.fmt.id_position == "after_name" else "args_begin"
        return "next", pos

    def _self_closed(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """After a self-closing name tag: the rest of a close of several pieces may still follow
        (``<function=f/>`` then ``</tool_call>``)."""
        tail = close_tail(self.fmt.call_close)
        st, end = mk.match_here(tail, buf, pos, final) if tail is not None else ("no", pos)
        if st == "more":
            return "more", pos
        return "done", end if st == "match" else pos

    def _id_after(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        return self._read_id(buf, pos, final, then="args_begin")

    def _read_id(self, buf: str, pos: int, final: bool, then: str) -> tuple[str, int]:
        st, end = mk.match_here(self.p_id_prefix, buf, pos, final)
        if st == "more" or (final and st == "no" and self.p_id_prefix is not None
                            and _cut_marker(self.p_id_prefix, buf, _skip_ws(buf, pos))):
            return "more", pos
        if st == "no":
            st, end = self._id_block_left_out(buf, pos, final)
            if st == "more":
                return "more", pos
            self.phase = then
            return "next", end
        if self.p_id_suffix is not None:
            m = self.p_id_suffix.search(buf, end, partial=not final)
            if m is None or m.partial:
                return "more", pos   # the id, or the marker after it, is still being written
            self.call_id = buf[end:m.start()].strip()
            self.phase = then
            return "next", m.end()
        m = _NAME.match(buf, end)
        if m is None or (m.end() == len(buf) and not final):
            return ("more", pos) if not final else ("bad", pos)
        self.call_id = m.group()
        self.phase = then
        return "next", m.end()

    def _match_close(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """The call's close (``markers.match_here``); a close of several pieces may stop after its first
        one when what follows is not the rest (``</function>`` then text, the ``</tool_call>`` left out)."""
        st, end = mk.match_here(self.p_close, buf, pos, final)
        if st == "no" and self.p_close_head is not None:
            return mk.match_here(self.p_close_head, buf, pos, final)
        return st, end

    def _id_block_left_out(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """No id block where the layout has one: its closing marker alone may still be written
        (``NAME[ARGS]{...}`` for ``NAME[CALL_ID]ID[ARGS]{...}``): ``("more", pos)`` while that is
        undecided, else ``("next", where it ends or pos)``."""
        if self.p_id_suffix is None or not self.fmt.id_prefix.strip():
            return "next", pos
        st, end = mk.match_here(self.p_id_suffix, buf, pos, final)
        if st == "more" or (final and st == "no" and _cut_marker(self.p_id_suffix, buf, _skip_ws(buf, pos))):
            return "more", pos
        return "next", end if st == "match" else pos

    def _args(self, fragment: str) -> None:
        """Argument text: sent at once, or held while the id is still to come (ids after arguments)."""
        if self.index is None:
            self._held.append(fragment)
        else:
            self.engine.call_args(self.index, fragment)

    def _announce(self) -> None:
        self.index = self.engine.call_header(self.name, self.call_id)
        for fragment in self._held:
            self.engine.call_args(self.index, fragment)
        self._held = []


    def _close(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.fmt.id_position == "after_args" and not self.call_id:
            st, end = mk.match_here(self.p_id_prefix, buf, pos, final)
            if st == "more":
                return "more", pos
            if st == "match" and self.p_id_suffix is not None:
                m = self.p_id_suffix.search(buf, end, partial=not final)
                if m is None or m.partial:
                    return ("more", pos) if not final else ("done", pos)
                self.call_id = buf[end:m.start()].strip()
                pos = m.end()
        if self.index is None:
            self._announce()
        st, end = self._match_close(buf, pos, final)
        if st == "more":
            return "more", pos
        at = _skip_ws(buf, pos)
        if st == "no" and final and at < len(buf) and self.p_close is not None and _cut_marker(self.p_close, buf, at):
            return "done", len(buf)   # the output stopped inside the call's close marker
        return "done", (end if st == "match" else pos)
