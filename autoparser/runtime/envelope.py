"""The reader for turn envelopes: the whole turn is one JSON object whose members hold the
reasoning, the reply and the calls (:class:`~autoparser.analysis.model.EnvelopeFormat`).

:class:`EnvelopeEngine` is an :class:`~.engine.Engine` whose main loop walks that object
instead of looking for markers; the emitters (whitespace, ids, deltas, the call guard) are the
engine's. The reasoning and reply members are JSON strings, decoded as they arrive: an escape
cut by a chunk boundary (``\\``, ``\\u00``, the first half of a surrogate pair) is held back
until its end comes, so a stream gives the same text as the whole output. A call object is
scanned incrementally (:class:`~autoparser.values.jsonscan.JsonScanner`) and announced once it
is complete. Every character is looked at a bounded number of times: linear time.

Off the format nothing is lost: text that is not the object (or where it breaks) is content,
with ``malformed`` set; an object cut off by the end keeps what was read (a reply or reasoning
so far, a call closed with what its arguments held) and sets ``truncated``. A key broken by white
space (``"resp onse"``) is the member it spells; a member under another key, or a reply that is not
a string, is kept as written, as content (``malformed``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import Any

from .. import ir
from ..analysis.model import JsonLayout
from ..plan import RequestPlan
from ..values.callobj import read_call_object
from ..values.jsonscan import JsonScanner
from .engine import Engine

WS = " \t\r\n"
MAX_KEY = 256   # a longer key is no key of the envelope (and is not re-scanned as a stream grows)
_KEY = re.compile(r'"((?:[^"\\]|\\.)*)"', re.S)
_RUN = re.compile(r'[^"\\]+')
_HEX = re.compile(r"[0-9a-fA-F]{0,4}")
_LOW = re.compile(r"\\u[dD][c-fC-F][0-9a-fA-F]{2}")
_LOW_PREFIX = re.compile(r"(?:\\(?:u(?:[dD](?:[c-fC-F][0-9a-fA-F]{0,2})?)?)?)?")
_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def decode_string_part(buf: str, pos: int, final: bool) -> tuple[str, int, bool]:
    """Decode a JSON string body from ``pos``: (text, where decoding stopped, closed). It stops
    before an escape whose end has not arrived yet (unless ``final``: then the escape is kept as
    written) and after the closing quote (``closed``). An escape JSON does not define is kept as
    written."""
    out: list[str] = []
    n = len(buf)
    i = pos
    while i < n:
        m = _RUN.match(buf, i)
        if m is not None:
            out.append(m.group())
            i = m.end()
            continue
        ch = buf[i]
        if ch == '"':
            return "".join(out), i + 1, True
        # a backslash
        if i + 1 >= n:
            if final:
                out.append("\\")
                i += 1
            break
        nxt = buf[i + 1]
        if nxt in _ESCAPES:
            out.append(_ESCAPES[nxt])
            i += 2
            continue
        if nxt != "u":
            out.append(buf[i:i + 2])
            i += 2
            continue
        got = _unicode_escape(buf, i, final)
        if got is None:
            break
        out.append(got[0])
        i = got[1]
    return "".join(out), i, False


def _unicode_escape(buf: str, i: int, final: bool) -> tuple[str, int] | None:
    """``\\uXXXX`` at ``i`` (a surrogate pair as one character): (its text, its end), or None when
    its end has not arrived. What is no character (a lone surrogate, ``\\u`` without four hex
    digits) is kept as written."""
    hexes = buf[i + 2:i + 6]
    if not _HEX.fullmatch(hexes):
        return buf[i:i + 2], i + 2
    if len(hexes) < 4:
        return None if not final else (buf[i:], len(buf))
    code = int(hexes, 16)
    if 0xD800 <= code < 0xDC00:
        tail = buf[i + 6:i + 12]
        if _LOW.fullmatch(tail):
            return chr(0x10000 + ((code - 0xD800) << 10) + (int(tail[2:], 16) - 0xDC00)), i + 12
        if not final and len(tail) < 6 and _LOW_PREFIX.fullmatch(tail):
            return None
        return buf[i:i + 6], i + 6
    if 0xDC00 <= code < 0xE000:
        return buf[i:i + 6], i + 6
    return chr(code), i + 6


_MISSING = object()
_CALL_KEYS = frozenset({"type", "id", "index", "call_id", "tool_call_id"})   # a call's own, never arguments


def _key(obj: dict[str, Any], key: str) -> str | None:
    """``key`` in ``obj``, or a key that spells it with white space inside (``" arguments"``)."""
    if key in obj:
        return key
    return next((k for k in obj if isinstance(k, str) and "".join(k.split()) == key), None)


def _get(obj: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        found = _key(obj, key) if isinstance(obj, dict) else None
        if found is None:
            return _MISSING
        obj = obj[found]
    return obj


def read_call(obj: Any, layout: JsonLayout, notes: list[str] | None = None,
              names: Collection[str] = ()) -> tuple[str, Any, str] | None:
    """(name, arguments, id) of a decoded call object, or None when it names no function. With no
    arguments member, one other object member is the arguments (under another key), else the other
    members are (as the call readers of marker formats do: nothing is lost); ``notes`` gets a
    warning then. An object with no name where the layout puts it is read in the other common
    layouts (:func:`~autoparser.values.callobj.read_call_object`) when it names one of ``names``."""
    if not isinstance(obj, dict):
        return None
    got = _layout_call(obj, layout, notes)
    if got is not None or not names:
        return got
    other = read_call_object(obj, names, layout.name_path[:1], layout.args_path[:1], layout.id_path[:1])
    if other is not None and notes is not None:
        notes.append("a tool call object was written in another layout; read by its members")
    return other


def _layout_call(obj: dict[str, Any], layout: JsonLayout, notes: list[str] | None) -> tuple[str, Any, str] | None:
    if layout.name_is_key:
        if len(obj) != 1:
            return None
        name, args = next(iter(obj.items()))
        call_id = ""
    else:
        name, args = _get(obj, layout.name_path), _get(obj, layout.args_path)
        found = _get(obj, layout.id_path) if layout.id_path else None
        call_id = found if isinstance(found, str) else ""
        if args is _MISSING:
            read = {_key(obj, p[0]) for p in (layout.name_path, layout.args_path, layout.id_path) if p}
            others = {k: v for k, v in obj.items() if k not in read and k not in _CALL_KEYS}
            only = next(iter(others.values())) if len(others) == 1 else None
            args = only if isinstance(only, dict) else (others or None)
            if others and notes is not None:
                notes.append("tool call had no arguments member; its other members were taken as the arguments")
    if not isinstance(name, str) or not name:
        return None
    return name, args, call_id


def arguments_text(args: Any) -> str:
    """The arguments as a JSON object's text (a string holding JSON is that JSON)."""
    if isinstance(args, str):
        try:
            args = json.loads(args, strict=False)
        except ValueError:
            return json.dumps(args, ensure_ascii=False)
    return json.dumps({} if args is None else args, ensure_ascii=False)


class EnvelopeEngine(Engine):
    """Walks the request IR's :class:`~autoparser.ir.Envelope`, the turn's JSON object: ``open`` (before ``{``), ``key``, ``colon``, ``value``,
    ``string`` (a reply or reasoning member), ``skip`` (a member under another key), ``calls``
    (inside the calls array), ``call`` (inside one call object), ``after`` (the object is closed),
    ``text`` (off the format: the rest is content)."""

    def __init__(self, plan: RequestPlan) -> None:
        super().__init__(plan)
        env = ir.message_grammar(plan).envelope
        if env is None:
            raise ValueError("the request's output is no turn envelope")
        self.env = env
        self.layout = env.layout or JsonLayout()
        self.state = "open"
        self._key = ""
        self._target = ""              # "content" or "reasoning_content" while in a string member
        self._scanner: JsonScanner | None = None
        self._origin = 0               # where the value being scanned began
        self._fed = 0                  # how far the scanner has been fed
        self._in_array = False         # the call being scanned is an element of the calls array
        self._members = 0              # members read since the last comma
        self._member_from = 0          # where the member being read began (its key)
        self._names = plan.tools.names if plan.tools is not None else ()   # the request's tools

    # ------------------------------------------------------------ main loop
    def _run(self, final: bool) -> None:
        while True:
            before = (self.state, self.pos)
            getattr(self, "_at_" + self.state)(final)
            if (self.state, self.pos) == before:
                break

    def _skip_ws(self) -> bool:
        """Skip whitespace; True when a character follows."""
        buf, i = self.buf, self.pos
        while i < len(buf) and buf[i] in WS:
            i += 1
        self.pos = i
        return i < len(buf)

    def _break(self, why: str) -> None:
        """Off the format from here: the rest of the output is content."""
        self.warn(f"the turn's JSON object breaks off: {why}; the rest is content")
        self._boundary()
        self.state = "text"

    def _at_text(self, final: bool) -> None:
        self._content(self.buf[self.pos:], raw=True)
        self.pos = len(self.buf)

    def _at_open(self, final: bool) -> None:
        if not self._skip_ws():
            return
        if self.buf[self.pos] == "{":
            self.pos += 1
            self.state = "key"
        else:
            self.warn("the turn is not a JSON object; it is content")
            self.state = "text"

    def _at_key(self, final: bool) -> None:
        while self._skip_ws() and self.buf[self.pos] == ",":
            self.pos += 1
            self._members = 0
        if self.pos >= len(self.buf):
            return
        ch = self.buf[self.pos]
        if ch == '"' and self._members:
            self.warn("a member of the turn's JSON object follows another with no comma")
            self._members = 0
        if ch == "}":
            self.pos += 1
            self._boundary()
            self.state = "after"
            return
        if ch != '"':
            self._break(f"a key was expected at {ch!r}")
            return
        m = _KEY.match(self.buf, self.pos, min(len(self.buf), self.pos + MAX_KEY))
        if m is None:
            if final or len(self.buf) - self.pos >= MAX_KEY:
                self._break("a key is not closed")
            return
        try:
            self._key = json.loads(m.group())
        except ValueError:
            self._key = m.group(1)
        self._member_from = self.pos
        self.pos = m.end()
        self.state = "colon"
        self._members += 1
        known = (self.env.reasoning_key, self.env.content_key, self.env.calls_key)
        if self._key not in known:
            # a key broken by white space (``"resp onse"``) is the member it spells
            squeezed = "".join(self._key.split())
            match = next((k for k in known if k and k == squeezed), None)
            if match is not None:
                self.warn(f"the key {self._key!r} of the turn's JSON object is read as {match!r}")
                self._key = match
            else:
                self.warn(f"the member {self._key!r} is not one of the turn's JSON object; it is kept as content")

    def _at_colon(self, final: bool) -> None:
        if not self._skip_ws():
            return
        if self.buf[self.pos] != ":":
            self.pos = self._member_from      # the key is text too
            self._break(f"':' was expected after the key {self._key!r}")
            return
        self.pos += 1
        self.state = "value"

    def _at_value(self, final: bool) -> None:
        if not self._skip_ws():
            return
        ch, key, env = self.buf[self.pos], self._key, self.env
        if ch == '"' and key and key in (env.content_key, env.reasoning_key):
            self.pos += 1
            self._target = "content" if key == env.content_key else "reasoning_content"
            self._boundary()
            self.state = "string"
        elif ch == "[" and key and key == env.calls_key:
            self.pos += 1
            self._call_boundary()
            self.state = "calls"
        else:
            self._in_array = False
            self._scan_from(self.pos, "call" if ch == "{" and key and key == env.calls_key else "skip")

    def _at_string(self, final: bool) -> None:
        text, end, closed = decode_string_part(self.buf, self.pos, final)
        self.pos = end
        if self._target == "reasoning_content":
            self._reasoning(text)
        else:
            self._content(text)
        if closed:
            self._boundary()
            self.state = "key"

    def _at_calls(self, final: bool) -> None:
        while self._skip_ws() and self.buf[self.pos] == ",":
            self.pos += 1
        if self.pos >= len(self.buf):
            return
        ch = self.buf[self.pos]
        if ch == "]":
            self.pos += 1
            self._call_boundary()
            self.state = "key"
        elif ch == "{":
            self._in_array = True
            self._scan_from(self.pos, "call")
        else:
            self._break(f"a call object was expected at {ch!r}")

    # ------------------------------------------------------------ scanned values
    def _scan_from(self, at: int, state: str) -> None:
        self._scanner = JsonScanner(track_depth=0)
        self._origin = self._fed = at
        self.state = state

    def _feed_scanner(self, final: bool) -> int | None:
        """Feed the scanner what arrived; the end of the scanned value (in ``buf``) once it is complete."""
        sc = self._scanner
        assert sc is not None
        end = sc.feed(self.buf[self._fed:])
        self._fed = len(self.buf)
        if end is None and final and not sc.failed:
            end = sc.finish()
        return None if end is None else self._origin + end

    def _at_skip(self, final: bool) -> None:
        end = self._feed_scanner(final)
        if end is not None:
            self.pos, self._scanner, self.state = end, None, "key"
            env = self.env
            if self._key in (env.reasoning_key, env.content_key) and self.buf[self._origin:end].strip() == "null":
                return      # no reasoning, no reply
            # a member the envelope has no place for (another key, a reply that is not a string): kept as
            # written, as content (nothing is lost)
            if self._key in (env.reasoning_key, env.content_key, env.calls_key):
                self.warn(f"the value of {self._key!r} in the turn's JSON object is kept as content")
            self._boundary()
            self._content(self.buf[self._member_from:end], raw=True)
            self._boundary()
        elif self._scanner is not None and self._scanner.failed:
            self.pos = self._member_from
            self._break(f"the value of {self._key!r} is not JSON")

    def _at_call(self, final: bool) -> None:
        end = self._feed_scanner(final)
        if end is None:
            if self._scanner is not None and self._scanner.failed:
                self.pos = self._origin
                self._break("a call object is not JSON")
            return
        raw = self.buf[self._origin:end]
        notes: list[str] = []
        try:
            got = read_call(json.loads(raw, strict=False), self.layout, notes, self._names)
        except ValueError:
            got = None
        for note in notes if got is not None else ():
            self.warn(note)
        if got is None:
            self.pos = self._origin
            self._break("a call object names no function")
            return
        self._announce(*got)
        self.pos, self._scanner = end, None
        self.state = "calls" if self._in_array else "key"

    def _announce(self, name: str, args: Any, call_id: str) -> int:
        index = self.call_header(name, call_id)
        self.call_args(index, arguments_text(args))
        return index

    # ------------------------------------------------------------ the end
    def _at_after(self, final: bool) -> None:
        if not final:
            return   # what follows the object is read at the end (a stop marker may be cut)
        rest = self.buf[self.pos:]
        for stop in self.plan.recognised:
            rest = rest.replace(stop, "") if stop.strip() else rest
        self.pos = len(self.buf)
        if rest.strip():
            self.warn("text after the turn's JSON object is content")
            self._content(rest, raw=True)

    def _close_all(self) -> None:
        state = self.state
        if state in ("text", "after", "open"):
            if state == "open" and self.pos < len(self.buf):
                self._content(self.buf[self.pos:], raw=True)
                self.pos = len(self.buf)
            return
        self.msg.truncated = True
        self.warn("output ended inside the turn's JSON object", malformed=False)
        if state == "call":
            self._truncated_call()
        elif state == "skip":
            self._content(self.buf[self._member_from:], raw=True)
        elif self.pos < len(self.buf):
            self._content(self.buf[self.pos:], raw=True)
        self.pos = len(self.buf)

    def _truncated_call(self, keep_back: bool = False) -> None:
        """A call object cut off by the end: announced with what it held when it names a
        function (flagged ``truncated``), else its text is content (held back: ``keep_back``)."""
        sc = self._scanner
        got = None
        if sc is not None and not sc.failed:
            partial = self.buf[self._origin:self._origin + sc.commit] + sc.closing()
            try:
                got = read_call(json.loads(partial, strict=False), self.layout, None, self._names)
            except ValueError:
                got = None
        if got is None:
            if not keep_back:
                self._content(self.buf[self._origin:], raw=True)
            return
        index = self._announce(*got)
        self.msg.tool_calls[index].truncated = True

    def finish_partial(self) -> None:
        """The text so far is a prefix: what was read stands; a call it ends inside is announced
        with what its arguments hold so far (flagged ``truncated``), other held-back text stays back."""
        self._run(final=False)
        if self.state == "call":
            self.msg.truncated = True
            self._truncated_call(keep_back=True)
        self._finished = True
        self.sync()


__all__ = ["EnvelopeEngine", "decode_string_part"]
