"""The reader of a call written as one JSON object (``{"name": ..., "arguments": {...}}``):
the call is announced once its name is read, its arguments streamed raw up to the scanner's commit
point; an object in another layout than the template's is read by its members."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..values.callobj import START_KEYS, call_shaped, read_call_object
from ..values.decode import args_text
from ..values.jsonfix import StringMender
from ..values.jsonscan import JsonScanner
from ..values.pyliteral import python_to_json
from .calls import CallReader, _ArgsStream, _skip_ws

if TYPE_CHECKING:
    from ..analysis.model import JsonLayout, ToolFormat
    from .sink import CallSink as Engine

# members a call object may carry beside its name, arguments and id: recognised, not kept
_ENVELOPE_KEYS = frozenset({"type", "id", "index", "call_id", "tool_call_id"})


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


def _closing_within(sc: JsonScanner, depth: int) -> str:
    """Closers for the containers opened inside the member at ``depth``."""
    inner = sc.closers[depth:]
    return (sc._quote if sc.commit_in_string else "") + "".join(reversed(inner))


__all__ = ["JsonCallReader"]
