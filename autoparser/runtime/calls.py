"""Call readers: turn the text of one tool call into a call header and argument fragments.

``JsonCallReader`` reads a call whose name sits inside a JSON object;
``TaggedCallReader`` reads a name between markers
followed by JSON, Python-literal or tagged arguments. Both consume each character once and report
``("more" | "done" | "bad", position)``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import regex

from .. import markers as mk
from ..analysis.model import LINE_ARGS
from ..markers import definition as dm
from ..values.callobj import START_KEYS, call_shaped, read_call_object
from ..values.coerce import coerce, raw_string
from ..values.decode import args_text, typed_value
from ..values.entities import decodable, raw_length, unescape
from ..values.jsonfix import StringMender
from ..values.jsonscan import JsonScanner
from ..values.jsonscan import closed_json as _closed_json
from ..values.literal import LiteralEnd, literal_to_json, read_partial_literal
from ..values.pyliteral import python_to_json
from .lineargs import LineArgsReader
from .phases import Phases
from .tolerance import close_head, close_tail, loose_marker, self_closing, self_closing_source

if TYPE_CHECKING:
    from ..analysis.model import JsonLayout, ToolFormat
    from .sink import CallSink as Engine

WS = " \t\r\n"
_escape = json.encoder.encode_basestring   # the C escaper json.dumps(ensure_ascii=False) uses
_NAME = regex.compile(r"[^\s<>\[\]{}\"'|,:=()`]+")


class CallReader:
    origin: int = 0
    quiet: bool = False       # the text it gave back was no call at all (no marker opened it): no warning
    implied: bool = False     # the call's start marker was left out (the engine found its name prefix)
    index: int | None = None     # the call's index once announced
    engine: Engine

    def _mark_truncated(self) -> None:
        """The call this reader announced was cut short."""
        assert self.index is not None
        self.engine.msg.tool_calls[self.index].truncated = True

    def can_start(self, buf: str, pos: int) -> bool:
        return True

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


class JsonCallReader(CallReader):
    """A call written as one JSON object: ``{"name": ..., "arguments": {...}}``."""

    def __init__(self, engine: Engine, fmt: ToolFormat) -> None:
        self.engine = engine
        self.fmt = fmt
        assert fmt.json is not None, "a JSON call reader needs the JSON layout"
        self.layout: JsonLayout = fmt.json
        self.python = fmt.python_literals    # the object is written with Python literals ({'name': ...})
        self.scanner = self._scanner()
        self.origin = engine.pos
        self.start: int | None = None     # buffer index of the object's first character
        self.index: int | None = None
        self.args: _ArgsStream | None = None
        self.name: str | None = None
        self.not_a_call: int | None = None   # where the text stopped fitting a call that was never announced
        self.broke = False                   # the object broke off after it was announced (the engine looks
                                             # for the next call of the section)

    def _scanner(self) -> JsonScanner:
        return JsonScanner(python=self.python, track_depth=max(len(self.layout.name_path), len(self.layout.args_path),
                                                               len(self.layout.id_path), 1))

    def can_start(self, buf: str, pos: int) -> bool:
        return buf[pos] == "{"

    def step(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.start is None:
            i = _skip_ws(buf, pos)
            if i == len(buf):
                return ("bad", pos) if final else ("more", pos)
            if buf[i] != "{":
                return "bad", pos
            j = _skip_ws(buf, i + 1)
            if j == len(buf) and not final:
                return "more", pos   # its first key tells JSON from a Python literal
            if j < len(buf) and buf[j] == "'" and not self.python:
                # a call object written as a Python literal in a JSON format: read as one
                self.python = True
                self.scanner = self._scanner()
                self.engine.warn("a tool call object was written with Python literals; read as JSON", malformed=False)
            self.start = i
            fed = i
        else:
            fed = self.start + len(self.scanner.text)
        end = self.scanner.feed(buf[fed:])
        if self.scanner.failed:
            self._progress(None)   # what came before the break, as a stream would have seen it
            return self._fail(buf)
        self._progress(end)
        if self.not_a_call is not None:
            return "bad", self.not_a_call
        if end is None:
            return "more", len(buf)
        if self.index is None:
            return self._other_layout(buf, end)
        return "done", self.start + end

    def _other_layout(self, buf: str, end: int) -> tuple[str, int]:
        """A complete object whose name was not where the layout puts it: read by its members in any
        common layout (:mod:`autoparser.values.callobj`), when it names one of the request's tools."""
        assert self.start is not None
        raw = self.scanner.text[:end]
        try:
            value = json.loads(python_to_json(raw) if self.python else raw, strict=False)
        except (ValueError, RecursionError):
            value = None
        tools = self.engine.plan.tools
        lay = self.layout
        found = read_call_object(value, tools.names if tools is not None else (), lay.name_path[:1],
                                 lay.args_path[:1], lay.id_path[:1]) if not lay.name_is_key or value else None
        if found is None:
            self.quiet = tools is not None and not tools.opener.role   # no marker opened it: plain text
            if self.quiet and call_shaped(value):
                self.engine.warn("a call-shaped object named no declared tool; kept as content", malformed=False)
            return self._fail(buf)
        name, args, call_id = found
        self.engine.warn("a tool call object was written in another layout; read by its members", malformed=False)
        self.index = self.engine.call_header(name, call_id)
        self.engine.call_args(self.index, json.dumps(args, ensure_ascii=False))
        return "done", self.start + end

    def _fail(self, buf: str) -> tuple[str, int]:
        if self.index is not None:
            # the call was announced: close what was sent; the text after the last complete value
            # (a member cut by a marker, a stray token) is content again
            self.truncate()
            self.engine.warn("tool call broke off; its arguments were closed and the rest kept as content")
            self.broke = True
            return "done", self.start + self._kept_upto() if self.start is not None else len(buf)
        return "bad", len(buf) if self.start is None else self.start + self.scanner.pos

    def _kept_upto(self) -> int:
        """Where the text the call kept ends: its last complete value once its arguments began; before
        that, the end of the last member it read (other members, cut short, are content again)."""
        sc = self.scanner
        if sc.spans.get(getattr(self, "_args_path", ())) is not None:
            return sc.commit
        read = [p for p in (self._name_path(), self.layout.id_path) if p]
        ends = [sc.spans[p][1] for p in read if p in sc.spans and sc.spans[p][1] >= 0]
        return min(sc.commit, max(ends)) if ends else sc.commit

    def _name_path(self) -> tuple[Any, ...] | None:
        if not self.layout.name_is_key:
            return self.layout.name_path
        for path in self.scanner.spans:
            if len(path) == 1 and path[0] is not None:
                return path
        return None

    def _progress(self, end: int | None) -> None:
        sc, layout = self.scanner, self.layout
        if self.name is None:
            if layout.name_is_key:
                path = self._name_path()
                if path is None:
                    return
                if sc.text[sc.spans[path][0]] != "{":
                    if path[0] in START_KEYS:
                        return      # {"name": ...}: a call object in another layout, read once complete
                    # {"NAME": {ARGS}}: a key whose value is no object names no call (a flat argument
                    # object written without its name); deterministic cut, whatever the chunking
                    self.not_a_call = (self.start or 0) + sc.spans[path][0]
                    return
                self.name = str(path[0])
                self._args_path = path
            else:
                raw = sc.value(layout.name_path)
                if raw is None:
                    return
                try:
                    self.name = str(json.loads(raw)) if raw.startswith('"') else python_to_json(raw).strip('"')
                except ValueError:
                    self.name = raw.strip("\"'")
                self._args_path = layout.args_path
                tools = self.engine.plan.tools
                if tools is not None and not tools.opener.role and tools.names and self.name not in tools.names:
                    # no marker opened this object: a name no tool has makes it text (a stream that
                    # started it on a cut-off name decides here, as the whole-text trigger does)
                    self.not_a_call = self.start
                    self.quiet = True
                    return
        if self.index is None:
            if layout.id_path and (layout.id_after_args or sc.started(layout.id_path) is not None) \
                    and end is None and sc.value(layout.id_path) is None:
                return
            args_started = sc.started(self._args_path) is not None
            id_pending = bool(layout.id_path) and not layout.id_after_args and sc.value(layout.id_path) is None
            span = sc.spans.get(self._args_path)
            args_done = span is not None and span[1] >= 0
            if (not args_started or args_done) and end is None and id_pending:
                return      # the arguments came first, whole: nothing to stream before the id comes
            call_id = ""
            if layout.id_path:
                raw_id = sc.value(layout.id_path)
                if raw_id is not None:
                    try:
                        call_id = str(json.loads(python_to_json(raw_id)))
                    except ValueError:
                        call_id = raw_id.strip("\"'")
            self.index = self.engine.call_header(self.name, call_id)
            self.args = _ArgsStream(self.engine, self.index)
        span = sc.spans.get(self._args_path)
        if span is None:
            if end is not None:
                self.engine.call_args(self.index, self._unread_as_args())
            return
        if end is not None:
            self._unread_as_content()
        args, index = self.args, self.index
        assert args is not None and index is not None
        start, stop = span[0], (span[1] if span[1] >= 0 else None)
        first = sc.text[start]
        if first in "\"'" or self.python:
            # a JSON string holding JSON, or Python literals: convert once complete
            if stop is not None and args.sent == 0:
                raw = sc.text[start:stop]
                self.engine.call_args(index, args_text(raw, self.python))
                args.sent = stop - start
            return
        args.push(sc, start, stop)

    def _unread(self) -> list[tuple[object, str]]:
        """The call object's complete members that no layout path reads, as (key, raw value) pairs."""
        sc, layout = self.scanner, self.layout
        read = [p for p in (self._name_path() if layout.name_is_key else layout.name_path,
                            self._args_path, layout.id_path) if p]
        out = []
        for path, (start, stop) in sc.spans.items():
            if not path or stop < 0 or path[-1] in _ENVELOPE_KEYS or path[0] in layout.constants:
                continue
            if any(r[:len(path)] == path for r in read):
                continue      # read, or on the way to what is read
            if any(r[:len(path) - 1] == path[:-1] for r in read):   # a sibling of a read member
                out.append((path[-1], sc.text[start:stop]))
        return out

    def _open_member(self) -> tuple[object, ...] | None:
        """The object member the output was cut inside, beside the read ones and read by none (a
        mangled ``" arguments"``): the arguments under another key."""
        sc, layout = self.scanner, self.layout
        depth = len(layout.name_path)
        for path, (start, stop) in sc.spans.items():
            if stop < 0 and len(path) == depth and path[-1] not in _ENVELOPE_KEYS \
                    and path[0] not in layout.constants and sc.text[start:start + 1] == "{" \
                    and path[:-1] == tuple(layout.name_path[:-1]) and path != tuple(layout.name_path):
                return tuple(path)
        return None

    def _unread_as_args(self) -> str:
        """No arguments member: one other object member is the arguments under another key
        ("parameters", a mangled "arguments"); otherwise the other members are taken as them."""
        members = self._unread()
        if not members:
            return "{}"
        self.engine.warn("tool call had no arguments member; its other members were taken as the arguments")
        if len(members) == 1 and members[0][1].startswith("{"):
            raw = members[0][1]
        elif len(members) == 1 and members[0][1][:1] in "\"'" and args_text(members[0][1], self.python)[:1] == "{":
            return args_text(members[0][1], self.python)     # the arguments as a JSON string
        else:
            raw = "{" + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)}: {v}" for k, v in members) + "}"
        if self.python:
            return args_text(raw, True)
        return StringMender()(raw)

    def _unread_as_content(self) -> None:
        members = self._unread()
        if members:
            self.engine.warn("tool call object held members the format does not have; kept as content")
            self.engine.emit_content(", ".join(f"{json.dumps(str(k), ensure_ascii=False)}: {v}" for k, v in members),
                                 raw=True)

    def truncate(self) -> None:
        sc = self.scanner
        if self.name is None and self.layout.name_is_key and len(sc.keys) == 1 and isinstance(sc.keys[0], str):
            self.name = sc.keys[0]   # '{"get_weather"' or '{"get_weather":': the key is the name
            self._args_path = (self.name,)
        if self.index is None and self.name is not None:
            self.index = self.engine.call_header(self.name, "")
            self.args = _ArgsStream(self.engine, self.index)
        if self.index is None or self.args is None:
            return
        sc = self.scanner
        self._mark_truncated()
        span = sc.spans.get(getattr(self, "_args_path", ()))
        if span is None:
            if self.engine.has_args(self.index):
                return
            cut = self._open_member()
            if cut is None:     # no arguments member: the other complete members are them, as in a whole call
                self.engine.call_args(self.index, self._unread_as_args())
                return
            self.engine.warn("tool call had no arguments member; its other members were taken as the arguments")
            self._args_path = cut
            span = sc.spans[cut]
        if span[1] >= 0:   # the arguments were complete: send what was held back
            raw = sc.text[span[0]:span[1]]
            if raw[:1] in "\"'" or self.python:
                if not self.engine.has_args(self.index):
                    self.engine.call_args(self.index, args_text(raw, self.python))
            else:
                self.args.push(sc, span[0], span[1])
            return
        if sc.text[span[0]] in "\"'" or self.python:
            raw = sc.text[span[0]:sc.commit] + _closing_within(sc, len(self._args_path))
            self.engine.call_args(self.index, args_text(raw, self.python) if raw.strip() else "{}")
        else:
            self.args.push(sc, span[0], None)
            self.engine.call_args(self.index, _closing_within(sc, len(self._args_path)))
        self._mark_truncated()


_CDATA = "<![CDATA["
_CDATA_END = regex.compile(r"\]\]>")

# members a call object may carry beside its name, arguments and id: recognised, not kept
_ENVELOPE_KEYS = frozenset({"type", "id", "index", "call_id", "tool_call_id"})


def _cut_marker(pat: regex.Pattern[str], buf: str, at: int) -> bool:
    """The output ends inside this marker."""
    m = pat.match(buf, at, partial=True)
    return m is not None and m.partial


def _closing_within(sc: JsonScanner, depth: int) -> str:
    """Closers for the containers opened inside the member at ``depth``."""
    inner = sc.closers[depth:]
    return (sc._quote if sc.commit_in_string else "") + "".join(reversed(inner))


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


class TaggedCallReader(Phases, CallReader):
    """A call whose name sits between markers: ``<function=NAME>`` + arguments + close."""

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

    def _args_begin(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.index is None and self.fmt.id_position != "after_args":
            self._announce()
        if self.fmt.args == "tagged":
            self.phase = "arg"
            return "next", pos
        if self.fmt.args in LINE_ARGS:
            self.lines = LineArgsReader(self._args, self.fmt, self.engine.schema(self.name), self.engine.plan.stops)
            self.phase = "line_args"
            return "next", pos
        i = _skip_ws(buf, pos)
        if self.fmt.args == "json_attr":
            # a JSON object written with character references: decoded as it comes, then read as JSON
            if i == len(buf):
                return "more", pos
            if buf[i] != "{":
                self._args("{}")
                self.phase = "close"
                return "next", pos
            self.scanner = JsonScanner(track_depth=0)
            self.args_start = self.attr_fed = i
            self.attr_pieces = []
            self.args = _ArgsStream(self.engine, self.index, self._args)
            self.phase = "attr_args"
            return "next", i
        if self.fmt.args == "literal" and self.fmt.literal is not None:
            if i == len(buf):
                return "more", pos
            if not buf.startswith(self.fmt.literal.open, i):
                self._args("{}")
                self.phase = "close"
                return "next", pos
            self.literal_end = LiteralEnd(self.fmt.literal.quotes, self._followers())
            self.args_start = i
            self.phase = "literal_args"
            return "next", i
        if i == len(buf):
            return "more", pos
        if buf[i] == '"' and self.fmt.args_as_string:
            # the arguments as a JSON string holding their JSON: read whole, then decoded
            self.scanner = JsonScanner(track_depth=0)
            self.args_start = i
            self.args = _ArgsStream(self.engine, self.index, self._args)
            self.phase = "json_args"
            return "next", i
        if buf[i] not in "{[":
            # no arguments object: an empty call, then its close
            self._args("{}")
            self.phase = "close"
            return "next", pos
        return self._json_from(i, python=self.fmt.python_literals or self.fmt.args == "python")

    def _json_from(self, i: int, python: bool = False) -> tuple[str, int]:
        """The arguments are a JSON object (or Python literal) starting at ``i``."""
        self.scanner = JsonScanner(python=python, track_depth=0)
        self.args_start = i
        self.args = _ArgsStream(self.engine, self.index, self._args)
        self.phase = "json_args"
        return "next", i

    def _line_args(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        assert self.lines is not None
        status, pos = self.lines.step(buf, pos, final)
        if status == "more":
            return "more", pos
        self.phase = "close"
        return "next", pos

    def _json_args(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        sc = self.scanner
        assert sc is not None and self.args is not None
        end = sc.feed(buf[self.args_start + len(sc.text):])
        if sc.failed:
            # the arguments broke off: close them; after their last complete value, the text is content
            self.truncate()
            self.engine.warn("tool call broke off; its arguments were closed and the rest kept as content")
            self.broke = True
            return "done", self.args_start + sc.commit
        python = sc.python
        whole = python or sc.text[:1] == '"'    # converted once complete
        if end is None:
            if not whole:
                self.args.push(sc, 0, None)
            return "more", len(buf)
        if whole:
            self._args(args_text(sc.text[:end], python))
        else:
            self.args.push(sc, 0, end)
        self.scanner = None
        self.phase = "close"
        return "next", self.args_start + end

    def _attr_args(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        sc = self.scanner
        assert sc is not None and self.args is not None
        raw = buf[self.attr_fed:]
        n = decodable(raw)       # a reference the output ends inside is cut off with it
        end = None
        if n:
            self.attr_pieces.append((self.attr_fed, raw[:n], len(sc.text)))
            self.attr_fed += n
            end = sc.feed(unescape(raw[:n]))
        if sc.failed:
            self.truncate()
            self.engine.warn("tool call broke off; its arguments were closed and the rest kept as content")
            self.broke = True
            return "done", self._raw_at(sc.commit)
        if end is None:
            self.args.push(sc, 0, None)
            return "more", len(buf)
        self.args.push(sc, 0, end)
        self.scanner = None
        self.phase = "close"
        return "next", self._raw_at(end)

    def _raw_at(self, decoded: int) -> int:
        """Where the raw text of character-referenced arguments reaches ``decoded`` decoded characters."""
        for start, raw, at in reversed(self.attr_pieces):
            if at <= decoded:
                return start + raw_length(raw, decoded - at)
        return self.args_start

    def _literal_args(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        lit = self.fmt.literal
        assert lit is not None
        end = self.literal_end.feed(buf, self.args_start, final)
        if end is None:
            if not final:
                return "more", len(buf)
            # the literal never closes: it stops at the call's end marker, or the output's end
            cut = self._literal_cut(buf)
            if cut is None:
                self.engine.msg.truncated = True
                self.engine.warn("output ended inside a tool call", malformed=False)
            else:
                self.engine.warn("tool arguments did not close before the end of the call; read up to it")
            stop = len(buf) if cut is None else cut
            text, used = read_partial_literal(buf[self.args_start:stop], lit.quotes, lit.kv_sep, self._keys())
            self._args(self._typed_literal(text))
            if cut is None:
                if self.index is None:     # an id written after the arguments never came: no id then
                    self._announce()
                self._mark_truncated()
            self.phase = "close"
            return "next", self.args_start + used
        if self.literal_end.unbalanced:
            self.engine.warn("tool arguments had unbalanced brackets; read as far as they pair up")
        raw = buf[self.args_start:self.args_start + end]
        notes: list[str] | None = [] if lit.bare_strings else None   # quoted strings: a bare value is no string
        try:
            text = self._typed_literal(literal_to_json(raw, lit.quotes, lit.kv_sep, notes))
            for note in notes or ():
                self.engine.warn(note, malformed=False)
        except (ValueError, IndexError):
            text = json.dumps({"_raw": raw}, ensure_ascii=False)
            self.engine.warn("tool arguments did not parse; kept raw")
        self._args(text)
        self.phase = "close"
        return "next", self.args_start + end

    def _keys(self) -> tuple[str, ...]:
        """The argument names this tool's schema declares."""
        props = self.engine.schema(self.name).get("properties")
        return tuple(props) if isinstance(props, dict) else ()

    def _typed_literal(self, text: str) -> str:
        """Literal arguments (JSON text) with their values typed by the tool's schema."""
        schema = self.engine.schema(self.name)
        return json.dumps(coerce(json.loads(text), schema), ensure_ascii=False) if schema else text

    def _followers(self) -> tuple[str, ...] | None:
        """What may follow literal arguments whose strings are unquoted (None when they are quoted)."""
        assert self.fmt.literal is not None
        if not self.fmt.literal.bare_strings:
            return None
        marks = (self.fmt.separator, self.fmt.call_close, self.fmt.call_end, self.fmt.section_end,
                 *self.engine.plan.stops)
        return tuple(dict.fromkeys(m.strip() for m in marks if m.strip()))

    def _literal_cut(self, buf: str) -> int | None:
        """Where the first end marker of the call (or of its section) after the arguments starts."""
        starts = [m.start() for p in (self.p_close, self.p_call_end, self.engine.section_end)
                  if p is not None and (m := p.search(buf, self.args_start)) is not None]
        return min(starts, default=None)

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

    # ------------------------------------------------------ tagged arguments
    def _arg(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        at = _skip_ws(buf, pos)
        if at == len(buf):
            return "more", pos   # the next argument or the close is still to come
        if not self.nargs and buf[at] == "{" and self._json_for_tags:
            # a JSON object where the parameter tags were expected: the arguments in the other encoding
            self.engine.warn("tool arguments were written as a JSON object instead of tagged parameters; "
                             "read as JSON", malformed=False)
            return self._json_from(at)
        if self.nargs and self.p_arg_sep is not None:
            st, end = mk.match_here(self.p_arg_sep, buf, pos, final)
            if st == "more":
                return "more", pos
            if st == "match":
                pos = end
        at = _skip_ws(buf, pos)
        if final and self.implied and self.p_close is not None and _cut_marker(self.p_close, buf, at):
            self._end_args()     # a call written without its start marker ends without its end marker
            return "done", len(buf)
        if final and any(p is not None and _cut_marker(p, buf, at) for p in (self.p_arg_prefix, self.p_close)):
            return "more", pos   # the output ends inside the next argument's marker or the close
        st, end = mk.match_here(self.p_arg_prefix, buf, pos, final)
        if st == "more":
            return "more", pos
        if st == "match":
            # an argument prefix that also begins the close (``<`` and ``</invoke>``): the longer wins
            st_c, end_c = self._match_close(buf, pos, final) if self.p_close is not None else ("no", 0)
            if st_c == "more":
                return "more", pos
            if not (st_c == "match" and end_c > end):
                self.phase = "arg_key"
                return "next", end
        st, end = self._match_close(buf, pos, final)
        if st == "more":
            return "more", pos
        self._end_args()
        if st == "match":
            return "done", end
        st2, _ = mk.match_here(self.p_call_end, buf, pos, final)
        if st2 == "more":
            return "more", pos
        return "done", pos

    def _end_args(self) -> None:
        self._args("}" if self.nargs else "{}")

    def _arg_key(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        m = self.p_key_suffix.search(buf, pos, partial=not final) if self.p_key_suffix else None
        if m is None or m.partial:
            if not final and len(buf) - pos > 512:
                return "bad", pos
            return "more", pos
        key = buf[pos:m.start()].strip()
        if not key or len(key) > 256:
            return "bad", pos
        self.key = key
        self.value_is_string = raw_string(self._schema_for(key), self.fmt.tagged is not None
                                          and self.fmt.tagged.strings_json)
        self.value_parts = []
        self._value_first = True
        self._held_nl = ""
        prefix = "{" if self.nargs == 0 else ", "
        self._args(f"{prefix}{json.dumps(key, ensure_ascii=False)}: ")
        if self.value_is_string:
            self._args('"')
        self.nargs += 1
        self.phase = "arg_value"
        self._cdata_checked = False
        return "next", m.end()

    def _arg_value(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if not self._cdata_checked:
            head = buf[pos:pos + len(_CDATA)]
            if not final and len(head) < len(_CDATA) and _CDATA.startswith(head):
                return "more", pos      # may still open a CDATA section
            self._cdata_checked = True
            if head == _CDATA:          # <![CDATA[...]]>: an XML value taken literally
                self._value_first = False
                self.phase = "arg_cdata"
                return "next", pos + len(_CDATA)
        m = self.p_value_end.search(buf, pos, partial=not final) if self.p_value_end else None
        if m is None:
            tail = buf[pos:]
            if final:
                cut = self._cut_end(self._held_nl + tail)   # the held newline may start the cut marker
                if cut > len(tail):
                    self._held_nl, tail = "", ""
                else:
                    tail = tail[: len(tail) - cut]
            self._value_chunk(tail, last=final)
            return "more", len(buf)
        self._value_chunk(buf[pos:m.start()])
        if m.partial:
            return "more", m.start()
        self._value_done()
        self.phase = "arg"
        return "next", m.end()

    def _arg_cdata(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        m = _CDATA_END.search(buf, pos, partial=not final)
        if m is None:
            self._value_chunk(buf[pos:], last=final)
            return "more", len(buf)
        self._value_chunk(buf[pos:m.start()], last=True)   # its newlines are the value's
        if m.partial:
            return "more", m.start()
        self.phase = "arg_value"        # then the value's end marker
        return "next", m.end()

    def _value_chunk(self, text: str, last: bool = False) -> None:
        if not text:
            return
        ta = self.fmt.tagged
        if self._value_first:
            self._value_first = False   # one newline belongs to the key's marker, even alone in its chunk
            if ta is not None and ta.key_suffix.endswith("\n") and text.startswith("\n"):
                text = text[1:]
            if not text:
                return
        text = self._held_nl + text
        self._held_nl = ""
        if not last and ta is not None and ta.value_end.startswith("\n") and text.endswith("\n"):
            self._held_nl = "\n"
            text = text[:-1]
        if self.value_is_string:
            if text:
                self._args(_escape(text)[1:-1])
        else:
            self.value_parts.append(text)

    def _cut_end(self, text: str) -> int:
        """Length of a value-end marker cut off at the end of ``text`` (0 if none).

        Only a tail that starts the marker as rendered (``"\n</para"``) is the cut
        marker; ``"a </"`` without the newline stays text.
        """
        end = self.fmt.tagged.value_end if self.fmt.tagged else ""
        if not end.strip():
            return 0
        for k in range(min(len(text), len(end)), 0, -1):
            tail = text[-k:]
            if end.startswith(tail):
                return k
        return 0

    def _value_done(self) -> None:
        if self.value_is_string:
            self._args('"')
            return
        raw = "".join(self.value_parts)
        self._args(typed_value(raw, self._schema_for(self.key)))

    def _schema_for(self, key: str) -> dict[str, Any]:
        schema = self.engine.schema(self.name)
        prop = (schema.get("properties") or {}).get(key)
        return prop if isinstance(prop, dict) else {}

    def truncate(self) -> None:
        if self.phase == "self_closed":
            return        # the call is complete: only the rest of its close may be missing
        if self.index is None:
            if self.phase in ("name_prefix", "id_first", "name"):
                return
            self._announce()
        assert self.index is not None
        if self.phase in ("name_suffix", "id_after", "args_begin") and not self.engine.has_args(self.index):
            self._args("{}")
            self._mark_truncated()
            return
        if self.phase == "literal_args":   # the literal reader reads its end itself when final
            lit = self.fmt.literal
            assert lit is not None
            self._args(self._typed_literal(read_partial_literal(self.engine.buf[self.args_start:],
                                                                lit.quotes, lit.kv_sep, self._keys())[0]))
        elif self.phase in ("json_args", "attr_args") and self.scanner is not None and self.args is not None:
            if self.scanner.python:
                raw = self.scanner.text[:self.scanner.commit] + self.scanner.closing()
                self._args(args_text(raw, True) if raw.strip() else "{}")
            elif self.scanner.text[:1] == '"':
                raw = self.scanner.text[:self.scanner.commit] + self.scanner.closing()
                self._args(_closed_json(json.loads(raw, strict=False)))
            else:
                self.args.push(self.scanner, 0, None)
                self._args(self.scanner.closing())
        elif self.phase == "line_args" and self.lines is not None:
            self.lines.truncate(self.engine.buf)
        elif self.phase in ("arg", "arg_key"):
            self._end_args()
        elif self.phase in ("arg_value", "arg_cdata"):
            if self.value_is_string:
                self._args('"')
            else:
                self._args(typed_value("".join(self.value_parts), self._schema_for(self.key)))
            self._args("}")
        self._mark_truncated()
