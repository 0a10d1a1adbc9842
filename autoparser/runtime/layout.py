"""Reading one tool call by its learned layout (:class:`~autoparser.analysis.layout.CallLayout`).

:class:`LayoutCallReader` walks the layout's pieces: a literal is matched (white space in and
around it is tolerated as markers are), the name and the id run to the literal that follows
them, the arguments are read by :class:`~.items.ItemsReader` (items: key/value pairs or
positional values, each value spelled as the layout's :class:`~autoparser.values.spelling.Values`
say) or as a JSON / Python-literal object. Each character is read once; what is held back is a
possible literal at the end of the text. The patterns it matches are :mod:`.layout_patterns`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import regex

from .. import markers as mk
from ..analysis.layout.model import CallLayout
from ..markers import definition as dm
from ..markers import lit_source
from ..plan.openers import call_head_source
from ..values.codecs import Codec, IncrementalDecoder
from ..values.decode import args_text
from ..values.jsonscan import JsonScanner
from ..values.spelling import with_name
from .calls import CallReader, _ArgsStream
from .items import ItemsReader
from .layout_patterns import (
    _args_start,
    _args_start_text,
    _hole_ends,
    _piece_patterns,
    _self_closing,
    _tokens_optional,
)
from .phases import Phases

if TYPE_CHECKING:
    from ..analysis.model import ToolFormat
    from .sink import CallSink as Engine

_NAME = regex.compile(r"[^\s<>\[\]{}\"'|,:=()`]{1,256}")
_MAX_HOLE = 256


class LayoutCallReader(Phases, CallReader):
    """One call after its start marker, piece by piece."""

    def __init__(self, engine: Engine, fmt: ToolFormat) -> None:
        assert fmt.layout is not None, "a layout reader needs a layout"
        self.engine = engine
        self.fmt = fmt
        self.layout: CallLayout = fmt.layout
        tp = engine.plan.tools
        self.names: tuple[str, ...] = tuple(tp.names) if tp is not None else ()
        self.pats = _piece_patterns(self.layout, self.names)
        self.json_items = False      # a JSON object written where the layout's items were expected
        self.origin = engine.pos
        self.i = 0
        self.phase = "piece"
        self.name = ""
        self.call_id = ""
        self.index: int | None = None
        self.implied = False
        self.broke = False
        self._held: list[str] = []
        self.items: ItemsReader | None = None
        self.scanner: JsonScanner | None = None
        self.args: _ArgsStream | None = None
        self.args_start = 0
        self.args_done = False
        self.header_start = engine.pos
        at = next(i for i, p in enumerate(self.layout.pieces) if p.kind == "name")
        self._after_name = self.layout.pieces[at + 1] if at + 1 < len(self.layout.pieces) else None
        self.decoder: IncrementalDecoder | None = None   # arguments inside a string codec
        self.coded: list[str] = []
        self.inner = ""            # wrapped items: the decoded text read so far, and where the items reader is
        self.inner_pos = 0
        self.items_done = False
        self.scan = 0
        self.cut_after_hole = False   # the output stopped right after a name or id hole

    # -------------------------------------------------------------- helpers
    def _emit(self, fragment: str) -> None:
        if self.index is None:
            self._held.append(fragment)
        else:
            self.engine.call_args(self.index, fragment)

    def _announce(self) -> None:
        if self.index is not None:
            return
        self.index = self.engine.call_header(self.name, self.call_id)
        for fragment in self._held:
            self.engine.call_args(self.index, fragment)
        self._held = []

    def _id_later(self) -> bool:
        """The id, or the name, comes after the current piece (``<arguments>A</arguments><name>N</name>``):
        the call is announced once it is read, the arguments read before it are held back."""
        later = {p.kind for p in self.layout.pieces[self.i + 1:]}
        return ("id" in later and not self.call_id) or ("name" in later and not self.name)

    def _next_lit(self) -> regex.Pattern[str] | None:
        j = self.i + 1
        return self.pats[j] if j < len(self.pats) else None

    # -------------------------------------------------------------- phases
    def _piece(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.i >= len(self.layout.pieces):
            self._announce()
            if final and self.layout.pieces[-1].kind == "args" and self.fmt.section_end.strip() \
                    and self._cut_structure(buf[pos:]) and not self.truncated_flagged:
                # a call that ends with its arguments ends where the next call or the section's end
                # begins: the output stopped before either (or inside an argument's key)
                self._cut_short()
                return "done", len(buf)
            return "done", pos
        kind = self.layout.pieces[self.i].kind
        status, at = getattr(self, "_p_" + kind)(buf, pos, final)
        if status == "bad" and final and self.name and self.index is None and not self._closes_later(buf, at) \
                and "\n" not in buf[at:].strip():
            # the output stopped after the name, in what comes before the arguments (an id block, ``[CALL_ID]``):
            # a call with that name, cut short
            self._announce()
            self.truncate()
            self.engine.msg.truncated = True
            self.i = len(self.layout.pieces)
            return "next", len(buf)
        return status, at

    def _advance(self, pos: int) -> tuple[str, int]:
        self.i += 1
        return "next", pos

    def _p_lit(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.i == 0:
            self.header_start = _skip_ws(buf, pos)
        status, end = self._lit(buf, pos, final)
        if status == "next" and self.fmt.id_from_header and not self.call_id and self.name and \
                self.layout.pieces[self.i - 1] is self._after_name:
            header = buf[self.header_start:end]
            self.call_id = header[:dm.next_open(header, 1)].strip()   # the id is the header: functions.NAME:0
        return status, end

    def _lit(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        pat = self.pats[self.i]
        if not self.layout.pieces[self.i].text.strip():
            i = pos   # white space only: any white space, or none
            while i < len(buf) and buf[i] in " \t\r\n":
                i += 1
            if i == len(buf) and not final:
                return "more", pos
            return self._advance(i)
        st, end = mk.match_here(pat, buf, pos, final)
        if st == "more":
            return "more", pos
        if st == "match":
            return self._advance(end)
        if final and pat is not None and _cut(pat, buf, pos):
            self._cut_short()
            return self._advance(len(buf))   # the output stopped inside this literal
        if self.args_done:
            if final and self._cut_structure(buf[pos:]):
                self._cut_short()            # the output stopped before this literal, or inside the
                return self._advance(len(buf))   # start of another argument (``<arg_ke``)
            # a literal after the arguments cut short or left out: the call still ends
            part = _tokens_optional(self.layout.pieces[self.i].text)
            st, end = mk.match_here(part, buf, pos, final) if part is not None else ("no", pos)
            if st == "more":
                return "more", pos
            return self._advance(end if st == "match" else pos)
        if self.layout.pieces[self.i - 1].kind == "name" if self.i else False:
            return self._self_closed(buf, pos, final)
        return "bad", pos

    def _self_closed(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """The tag the name is written in closed on itself (``<invoke name="f"/>`` for
        ``<invoke name="f">...</invoke>``): a call with no arguments; what follows the arguments in the
        layout is read as cut short (each token optional)."""
        pat = _self_closing(self.layout.pieces[self.i].text)
        st, end = mk.match_here(pat, buf, pos, final) if pat is not None else ("no", pos)
        if st == "more":
            return "more", pos
        at = next((k for k, p in enumerate(self.layout.pieces) if p.kind == "args"), -1)
        if st != "match" or at < self.i:
            return "bad", pos
        self._announce()
        self._emit("{}")
        self.args_done = True
        self.i = at + 1
        return "next", end

    def _hole_text(self, buf: str, pos: int, final: bool) -> tuple[str, int, int] | str | None:
        """(text, where it ends, the piece reading goes on with) of a name or id hole; "more" to wait.

        The hole runs to the literal after it, or, when the model left that literal out, to a
        later one (past an id it did not write) or to where the arguments begin."""
        ends = _hole_ends(self.layout, self.i, self.names)
        i = pos
        while i < len(buf) and buf[i] in " \t":
            i += 1
        if ends is None:
            # a hole follows, or white space, or header fields: the hole is one word
            m = _NAME.match(buf, i)
            if m is None:
                return None if i < len(buf) or final else "more"
            if m.end() == len(buf) and not final:
                return "more"
            word, sep = m.group(), self.fmt.separator.strip()
            if self.i + 1 == len(self.layout.pieces) and sep and word.endswith(sep) and len(word) > len(sep):
                word = word[:-len(sep)]   # the call's last hole, the separator glued to it (``id=call00001;``)
            return word, m.start() + len(word), self.i + 1
        pat, targets = ends
        m = pat.search(buf, i, min(len(buf), i + _MAX_HOLE + 64), partial=not final)
        if m is not None and not m.partial and m.end() > m.start() == i:
            # an empty hole: the text that ends it also begins the hole's own (``#call00001 call NAME``,
            # the id ``call00001`` before the literal `` call ``): it ends at that text's next writing
            # on the line, where there is one
            later = pat.search(buf, i + 1, min(len(buf), i + _MAX_HOLE + 64), partial=not final)
            if later is not None and "\n" not in buf[i:later.start()]:
                if later.partial and not final:
                    return "more"
                m = m if later.partial else later
        if m is None and final:
            # the output stopped inside what ends the hole (``search_docs</me``): the hole is complete
            cut = pat.search(buf, i, partial=True)
            if cut is not None and cut.partial and cut.start() > i and "\n" not in buf[i:cut.start()].strip():
                self.cut_after_hole = True
                return buf[i:cut.start()], len(buf), self.i + 1
        if m is None or m.partial:
            if final or len(buf) - i > _MAX_HOLE:
                return None
            return "more"
        if not final and (m.end() == len(buf) or len(buf) - m.start() < 32):
            return "more"   # a longer literal may still match here (or an earlier one be still cut)
        return buf[i:m.start()], m.start(), targets[m.lastgroup or ""]

    def _p_name(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        got = self._hole_text(buf, pos, final)
        if got == "more":
            return "more", pos
        if got is None or isinstance(got, str):
            return "bad", pos
        text, end, then = got
        name = text.strip()
        if not name or "\n" in name or len(name) > _MAX_HOLE:
            return "bad", pos
        self.name = name
        self.i = then
        if self.cut_after_hole:
            self._announce()
            self.truncate()
            self.engine.msg.truncated = True
            self.i = len(self.layout.pieces)
        return "next", end

    def _p_name_again(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        got = self._hole_text(buf, pos, final)
        if got == "more":
            return "more", pos
        if got is None or isinstance(got, str):
            return self._advance(pos)
        self.i = got[2]
        return "next", got[1]

    def _p_id(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        got = self._hole_text(buf, pos, final)
        if got == "more":
            return "more", pos
        if got is None or isinstance(got, str):
            return self._advance(pos)   # no id where one was expected: the call has none
        self.call_id = got[0].strip()
        self.i = got[2]
        return "next", got[1]

    def _p_args(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if not self._id_later():
            self._announce()
        args = self.layout.args
        if args.kind == "items" and args.items is not None and not args.codec and self.items is None \
                and not self.json_items and self.scanner is None:
            at = _skip_ws(buf, pos)
            if at == len(buf) and not final:
                return "more", pos
            if at < len(buf) and buf[at] == "{" and not _args_start_text(self.layout).startswith("{"):
                # a JSON object where the items were expected: the arguments in the other encoding
                self.json_items = True
                self.engine.warn("tool arguments were written as a JSON object instead of the template's "
                                 "items; read as JSON", malformed=False)
        if self.json_items:
            return self._json_args(buf, pos, final)
        if args.kind == "items" and args.items is not None and args.codec:
            return self._wrapped_items(buf, pos, final)
        if args.kind == "items" and args.items is not None:
            if self.items is None:
                ends = (self._args_end_source(False), self._args_end_source(True))
                self.items = ItemsReader(self._emit, with_name(args.items, self.name, None),
                                         self.engine.schema(self.name), ends, call_id=self.call_id)
            status, pos = self.items.step(buf, pos, final)
            if status == "more":
                return "more", pos
            self.args_done = True
            if self.items.unfinished and final:
                self._cut_short()   # the output stopped inside a quoted value, or before a column's value
            if status == "bad":
                if final and not self._closes_later(buf, pos):
                    self._cut_short()   # the output stopped inside an item (``<arg_key>loca``)
                    return self._advance(len(buf))
                self.broke = True
            return self._advance(pos)
        if args.codec:
            return self._coded_args(buf, pos, final)
        return self._json_args(buf, pos, final)

    def _wrapped_items(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """Items written inside a string codec (``"input": "a=1&b=\\"x\\""``): the text is decoded
        as it comes and the items are read from the decoded text."""
        args = self.layout.args
        assert args.items is not None
        codec = Codec.from_spec(args.codec)
        if self.decoder is None:
            self.decoder, self.scan, self.inner, self.inner_pos = codec.decoder(), pos, "", 0
            close = (r"\s*" + regex.escape(args.inner_close.strip())) if args.inner_close.strip() else ""
            # the decoded text ends where the string does: its last characters are held back while the
            # string may still end there
            self.items = ItemsReader(self._emit, with_name(args.items, self.name, None), self.engine.schema(self.name),
                                     (r"(?!)", close + r"\s*\Z"), hold=len(args.inner_close) + 8, call_id=self.call_id)
        assert self.items is not None
        if codec.self_delimiting:
            out, end = self.decoder.feed(buf[self.scan:], final)
            stop = len(buf) if end is None else self.scan + end
        else:
            pat = mk.compile_source(self._args_end_source(final) or r"\Z")
            m = pat.search(buf, self.scan, partial=not final)
            end = None if m is None or m.partial else m.start()
            stop = len(buf) if m is None else m.start()
            out, _ = self.decoder.feed(buf[self.scan:stop], final or end is not None)
        self.inner += out
        self.scan = stop
        done = end is not None or final
        head = args.inner_open.strip()
        if head and self.inner_pos == 0:
            lead = self.inner.lstrip()
            if not done and len(lead) < len(head) and head.startswith(lead):
                return "more", stop
            if lead.startswith(head):   # the text always written inside the string before the items
                self.inner_pos = len(self.inner) - len(lead) + len(head)
        if not self.items_done:
            status, self.inner_pos = self.items.step(self.inner, self.inner_pos, done)
            self.items_done = status != "more"
        if not done:
            return "more", stop
        if not self.items_done:
            self.items.truncate(self.inner)
        self.args_done = True
        return self._advance(stop)

    def _coded_args(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """A JSON (or Python-literal) object written inside a string codec: decoded, then read."""
        codec = Codec.from_spec(self.layout.args.codec)
        if self.decoder is None:
            i = pos
            while i < len(buf) and buf[i] in " \t\r\n":
                i += 1
            if i == len(buf) and not final:
                return "more", pos
            self.decoder, self.args_start, self.coded = codec.decoder(), i, []
            self.scan = i
        dec = self.decoder
        if codec.self_delimiting:
            out, end = dec.feed(buf[self.scan:], final)
            self.coded.append(out)
            self.scan = len(buf) if end is None else self.scan + end
            if end is None and not final:
                return "more", len(buf)
            stop = self.scan
        else:
            pat = mk.compile_source(self._args_end_source(final) or r"\Z")
            m = pat.search(buf, self.scan, partial=not final)
            stop = len(buf) if m is None else m.start()
            if final and (m is None or m.start() == len(buf)):
                # the output stopped inside the text that ends the arguments (``"`` of ``"/>``)
                ahead = self._args_end_source(False)
                c = mk.compile_source(ahead).search(buf, self.scan, partial=True) if ahead else None
                if c is not None and c.partial and c.start() < len(buf):
                    stop = c.start()
                    self._cut_short()
            out, _ = dec.feed(buf[self.scan:stop], final or (m is not None and not m.partial))
            self.coded.append(out)
            self.scan = stop
            if (m is None or m.partial) and not final:
                return "more", stop
        text = "".join(self.coded)
        python = self.layout.args.kind == "python"
        closed = _closed_cut(text, python) if final and stop >= len(buf) else None
        if closed is not None:
            # the output stopped inside the arguments, maybe inside an escape (``&#3``, ``&``): decoded
            # as it would be mid-stream, which holds a partial escape back
            held = _closed_cut(codec.decoder().feed(buf[self.args_start:stop], False)[0], python)
            closed = held if held is not None else closed
        if closed is not None:
            # the output stopped inside the arguments: what was written, closed, and the call flagged
            self._emit(args_text(closed, python))
            self.args_done = True
            self._cut_short()
            return self._advance(stop)
        self._emit(args_text(text, python) if text.strip() else "{}")
        self.args_done = True
        return self._advance(stop)

    def _json_args(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.scanner is None:
            i = pos
            while i < len(buf) and buf[i] in " \t\r\n":
                i += 1
            if i == len(buf):
                if final:
                    self._emit("{}")
                    self.args_done = True
                    self._cut_short()   # the output stopped before the arguments the call writes
                    return self._advance(pos)
                return "more", pos
            if buf[i] not in "{[":
                self._emit("{}")
                self.args_done = True
                return self._advance(pos)
            self.scanner = JsonScanner(python=self.layout.args.kind == "python", track_depth=0)
            self.args_start = i
            self.args = _ArgsStream(self.engine, self.index, self._emit)
        sc, stream = self.scanner, self.args
        assert stream is not None
        end = sc.feed(buf[self.args_start + len(sc.text):])
        if sc.failed:
            return self._broke_off(self.args_start + sc.commit)
        if end is None:
            if not sc.python:
                stream.push(sc, 0, None)
            return "more", len(buf)
        if sc.python:
            self._emit(args_text(sc.text[:end], True))
        else:
            stream.push(sc, 0, end)
        self.args_done = True
        return self._advance(self.args_start + end)

    def _args_end_source(self, final: bool) -> str:
        """What may follow the arguments: the next literal piece, else the call's end, the next
        call, the section's end or an end-of-turn marker (``final``: the output is complete, so
        its end may follow too)."""
        rest = [p for p in self.layout.pieces[self.i + 1:] if p.kind == "lit" and p.text.strip()]
        if rest:
            last = rest[0] is self.layout.pieces[-1]
            # the call's last literal ends a raw value only where what may follow a call follows it
            follow = self._follow_source(final)
            return lit_source(rest[0].text, lead_optional=True, loose=self.names) + \
                ("(?=" + follow + ")" if last and follow else "")
        # the arguments end the call: what may follow a call follows them
        f = self.fmt
        follow = self._follow_source(final)
        if f.call_end.strip():
            follow = "|".join(x for x in (r"\s*" + mk.loose(f.call_end), follow) if x)
        return follow

    def _follow_source(self, final: bool) -> str:
        """What may follow a call: the section's end, an end-of-turn marker, the next call and, when
        the output is complete, its end."""
        f = self.fmt
        alts = ([r"\s*\Z"] if final else []) + \
            [r"\s*" + mk.loose(f.section_end)] * bool(f.section_end.strip()) + \
            [r"\s*" + mk.pattern(m) for m in self.engine.plan.stops if m.strip()]
        start = self._next_call_source()
        if start:
            sep = mk.pattern(f.separator) if f.separator.strip() else ""
            alts.append(r"\s*" + sep + r"\s*" + start)
        return "|".join(dict.fromkeys(alts))

    def _next_call_source(self) -> str:
        """Where another call of this format begins: its start marker, else the text before its name
        and a declared tool's name, else a tool's name and the literal after it."""
        f = self.fmt
        if f.call_start.strip():
            return mk.loose(f.call_start, self.names)
        tp = self.engine.plan.tools
        names = tp.names if tp is not None else ()
        if not names:
            return ""
        pieces = self.layout.pieces
        at = next(i for i, p in enumerate(pieces) if p.kind == "name")
        if f.name_prefix.strip():
            if at > 1:
                return mk.loose(f.name_prefix)   # an id (or more) between it and the name
            return mk.loose(f.name_prefix, names) + r"\s*" + mk.tool_name(names)
        if at > 1 and all(p.kind in ("lit", "id") for p in pieces[:at]):
            # the call opens with its id (``\ncall_1,get_weather,``): the pieces up to a declared name
            return call_head_source(pieces[:at], names)
        after = f.name_suffix if f.name_suffix.strip() else ""
        if after:
            return mk.tool_name(names) + r"\s*" + mk.pattern(after)
        # the arguments right after the name (``f|k=v``): white space or the items' first literal follows it
        start = _args_start(self.layout) if at + 1 < len(pieces) and pieces[at + 1].kind == "args" else ""
        return mk.tool_name(names) + (r"(?=\s|" + start + ")" if start else r"(?=\s)")

    # -------------------------------------------------------------- the end
    def _closes_later(self, buf: str, pos: int) -> bool:
        """The call's last literal piece (its end) is written somewhere after ``pos``."""
        last = max((i for i, p in enumerate(self.layout.pieces) if p.kind == "lit" and p.text.strip()), default=None)
        pat = self.pats[last] if last is not None and last > self.i else None
        return pat is not None and pat.search(buf, pos) is not None

    def _cut_structure(self, rest: str) -> bool:
        """``rest`` (the text left at the end of the output) is nothing, or the beginning of a text the
        call writes after its arguments' start: an item's opening, a separator, a key/value
        separator, a literal piece."""
        rest = rest.strip()
        if not rest:
            return True
        texts = [p.text for p in self.layout.pieces if p.kind == "lit"]
        it = self.layout.args.items
        if it is not None:
            texts += [it.sep + it.item_pre, it.item_pre, it.kv, it.item_post, it.close]
            if it.values is not None:   # what a value's own spelling closes with (``</string>``)
                v = it.values
                texts += [v.string.post, v.number.post, v.nested_post, *((v.integer.post,) if v.integer else ())]
        flat = "".join(rest.split())
        if any("".join(t.split()).startswith(flat) for t in texts if t.strip()):
            return True
        if it is None or not it.keyed:
            return False
        # an item cut inside its key (``<arg_key>loca``, ``{loc``, ``get_weather l``)
        for head in (it.sep + it.item_pre, it.open + it.item_pre, it.item_pre, ""):
            head = "".join(head.split())
            if flat.startswith(head):
                key = _KEY_START.match(flat, len(head))
                if key is None or (not head and not key.group()):
                    continue
                tail = flat[key.end():]
                if "".join(it.kv.split()).startswith(tail):
                    return True
        return False

    @property
    def truncated_flagged(self) -> bool:
        return self.index is not None and self.engine.msg.tool_calls[self.index].truncated

    def _cut_short(self) -> None:
        """The output ended before the call did (inside or before its closing literal, inside its
        arguments): the call and the message are flagged truncated."""
        if self.index is None and self.name:
            self._announce()
        if self.index is not None:
            self._mark_truncated()
            self.engine.msg.truncated = True

    def truncate(self) -> None:
        if self.index is None:
            if not self.name:
                return
            self._announce()
        assert self.index is not None
        if self.items is not None and not self.args_done:
            self.items.truncate(self.engine.buf)
        elif self.scanner is not None and self.args is not None and not self.args_done:
            sc = self.scanner
            if sc.python:
                raw = sc.text[:sc.commit] + sc.closing()
                self._emit(args_text(raw, True) if raw.strip() else "{}")
            else:
                self.args.push(sc, 0, None)
                self._emit(sc.closing())
        elif not self.engine.has_args(self.index):
            self._emit("{}")
        if not self.args_done:
            self._mark_truncated()


def _skip_ws(buf: str, i: int) -> int:
    while i < len(buf) and buf[i] in " \t\r\n":
        i += 1
    return i


def _cut(pat: regex.Pattern[str], buf: str, pos: int) -> bool:
    i = pos
    while i < len(buf) and buf[i] in " \t\r\n":
        i += 1
    if i == len(buf):
        return False
    m = pat.match(buf, i, partial=True)
    return m is not None and m.partial



_KEY_START = regex.compile(r"[\w.\-]*")


def _closed_cut(text: str, python: bool) -> str | None:
    """JSON (or a Python literal) the output stopped inside, closed after its last complete part;
    None when it is complete or no JSON at all."""
    if not text.strip():
        return None
    sc = JsonScanner(python=python, track_depth=0)
    if sc.feed(text) is not None:
        return None
    if sc.failed:
        # a cut escape the codec could not decode (``&#3``) ends it: the part before it, closed
        again = JsonScanner(python=python, track_depth=0)
        if not sc.commit or again.feed(text[:sc.commit]) is not None or again.failed:
            return None
        sc = again
    return sc.text[:sc.commit] + sc.closing()


__all__ = ["LayoutCallReader"]
