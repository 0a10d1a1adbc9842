"""An incremental JSON (and Python-literal) value scanner.

Fed text a piece at a time, it finds where one JSON value ends, records the
spans of shallow object members (so a call's ``name`` or ``arguments`` can be
cut out as they complete), and keeps a *commit point*: the longest prefix that,
followed by ``closing()``, is valid JSON. Streaming emits raw text only up to
the commit point, so a number, literal, key or trailing comma is never sent
before it is terminated. Each character is looked at once: linear time.
"""

from __future__ import annotations

import json
import re

_STRING_RUN = {'"': re.compile(r'[^"\\]+'), "'": re.compile(r"[^'\\]+")}
_ATOM_CHARS = frozenset("0123456789+-.eEtruefalsnNTFo")
_WS = frozenset(" \t\r\n")

# scanner states
VALUE, KEY, COLON, AFTER, STRING, ATOM, DONE, ERROR = range(8)


class JsonScanner:
    """Scan one JSON value; ``feed`` returns the index just past it once complete."""

    __slots__ = ("_atom_start", "_esc", "_key_buf", "_quote", "_skips", "_string_is_key", "_track_depth",
                 "closers", "commit", "commit_in_string", "keys", "pos", "python", "spans", "state", "text")

    def __init__(self, *, python: bool = False, track_depth: int = 2) -> None:
        self.text = ""
        self.pos = 0
        self.state = VALUE
        self.closers: list[str] = []      # "}" or "]" per open container
        self.keys: list[object] = []      # key (object) or index (array) per open container
        self.spans: dict[tuple[object, ...], list[int]] = {}   # path -> [start, end or -1]
        self.commit = 0
        self.commit_in_string = False
        self.python = python
        self._quote = '"'
        self._esc = False
        self._string_is_key = False
        self._key_buf: list[str] = []
        self._atom_start = 0
        self._track_depth = track_depth
        self._skips = 0 if python else _SKIP_TRIES

    # ------------------------------------------------------------------ API
    @property
    def done(self) -> bool:
        return self.state == DONE

    @property
    def failed(self) -> bool:
        return self.state == ERROR

    def feed(self, chunk: str) -> int | None:
        """Add text; return the end index of the value in ``self.text`` once it is complete."""
        text, self.text = self.text, ""
        text += chunk          # a sole reference: grown in place, not copied
        self.text = text
        return self._run()

    def finish(self) -> int | None:
        """End of input: a top-level atom (``42``) completes here."""
        if self.state == ATOM and not self.closers:
            self._end_value(self.pos)
            self.state = DONE
            return self.pos
        return self.pos if self.state == DONE else None

    def closing(self) -> str:
        """Text that closes every open string and container after the commit point."""
        return (self._quote if self.commit_in_string else "") + "".join(reversed(self.closers))

    def value(self, path: tuple[object, ...]) -> str | None:
        """Raw text of the complete member at ``path``, or None."""
        span = self.spans.get(path)
        if span is None or span[1] < 0:
            return None
        return self.text[span[0]:span[1]]

    def started(self, path: tuple[object, ...]) -> int | None:
        span = self.spans.get(path)
        return None if span is None else span[0]

    # ------------------------------------------------------------ internals
    def _path(self) -> tuple[object, ...]:
        return tuple(self.keys)

    def _start_value(self, at: int) -> None:
        if len(self.keys) <= self._track_depth:
            self.spans[self._path()] = [at, -1]

    def _end_value(self, at: int) -> None:
        if len(self.keys) <= self._track_depth:
            span = self.spans.get(self._path())
            if span is not None and span[1] < 0:
                span[1] = at
        self.commit = at
        self.commit_in_string = False
        if not self.closers:
            self.state = DONE
        else:
            self.state = AFTER

    def _run(self) -> int | None:
        text, n = self.text, len(self.text)
        i = self.pos
        while i < n:
            st = self.state
            if st in (DONE, ERROR):
                break
            ch = text[i]
            if st == STRING:
                if self._esc:
                    self._esc = False
                    i += 1
                    if not self._string_is_key and ch != "u":
                        self.commit = i
                    elif not self._string_is_key:
                        # \uXXXX: commit only once the four hex digits are in
                        if i + 4 <= n:
                            i += 4
                            self.commit = i
                        else:
                            # wait for the rest of the escape
                            self.pos = i - 2
                            self._esc = False
                            self.text = text
                            return self._rewind_escape(i - 2)
                    continue
                m = _STRING_RUN[self._quote].match(text, i)
                if m:
                    if self._string_is_key:
                        self._key_buf.append(m.group())
                    i = m.end()
                    if not self._string_is_key:
                        self.commit = i
                    continue
                if ch == "\\":
                    if self._string_is_key:
                        self._key_buf.append(text[i:i + 2])
                    self._esc = True
                    i += 1
                    continue
                # closing quote
                i += 1
                if self._string_is_key:
                    self.keys[-1] = _decode_key("".join(self._key_buf))
                    self._key_buf = []
                    self.state = COLON
                else:
                    self._end_value(i)
                continue
            if st == ATOM:
                if ch in _ATOM_CHARS:
                    i += 1
                    continue
                if not _valid_atom(text[self._atom_start:i], self.python):
                    self.state = ERROR
                    break
                self._end_value(i)
                continue   # re-read the terminator (whitespace included) in the new state
            if ch in _WS:
                i += 1
                continue
            if st == VALUE:
                if (ch == "{" or ch == "[") and self._skips and len(self.keys) >= self._track_depth:
                    # a container no span is tracked inside: when it is complete already (whole-text
                    # parse) the C decoder finds its end; else it is scanned below, and this is tried
                    # again only a bounded number of times (streaming stays linear)
                    end = _complete_value_end(text, i)
                    if end is not None:
                        self._start_value(i)
                        self._end_value(end)
                        i = end
                        continue
                    self._skips -= 1
                if ch == "{" or ch == "[":
                    self._start_value(i)
                    self.closers.append("}" if ch == "{" else "]")
                    self.keys.append(None if ch == "{" else 0)
                    self.state = KEY if ch == "{" else VALUE
                    i += 1
                    self.commit = i
                    self.commit_in_string = False
                    if ch == "[":
                        # an empty array closes at once; peek handled by the "]" branch below
                        self.state = VALUE
                    continue
                if ch == "]" and self.closers and self.closers[-1] == "]":
                    self._close(i)
                    i += 1
                    continue
                if ch == '"' or (ch == "'" and self.python):
                    self._start_value(i)
                    self._quote = ch
                    self._string_is_key = False
                    self.state = STRING
                    i += 1
                    self.commit = i
                    self.commit_in_string = True
                    continue
                if ch in _ATOM_CHARS:
                    self._start_value(i)
                    self._atom_start = i
                    self.state = ATOM
                    i += 1
                    continue
                self.state = ERROR
                break
            if st == KEY:
                if ch == '"' or (ch == "'" and self.python):
                    self._quote = ch
                    self._string_is_key = True
                    self._key_buf = []
                    self.state = STRING
                    i += 1
                    continue
                if ch == "}":
                    self._close(i)
                    i += 1
                    continue
                self.state = ERROR
                break
            if st == COLON:
                if ch == ":":
                    self.state = VALUE
                    i += 1
                    continue
                self.state = ERROR
                break
            if st == AFTER:
                closer = self.closers[-1]
                if ch == ",":
                    if closer == "}":
                        self.state = KEY
                    else:
                        self.keys[-1] = int(self.keys[-1]) + 1  # type: ignore[call-overload]
                        self.state = VALUE
                    i += 1
                    continue
                if ch == closer:
                    self._close(i)
                    i += 1
                    continue
                self.state = ERROR
                break
        self.pos = i
        return i if self.state == DONE else None

    def _rewind_escape(self, at: int) -> int | None:
        # leave the scanner just before the backslash so the escape is re-read whole
        self.pos = at
        self.state = STRING
        return None

    def _close(self, i: int) -> None:
        self.closers.pop()
        self.keys.pop()
        self._end_value(i + 1)


_SKIP_TRIES = 4   # failed whole-value decodes before a scanner stops trying


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(strict=False, parse_constant=_no_constant)


def _complete_value_end(text: str, at: int) -> int | None:
    """The end of the complete JSON value at ``at`` (raw control characters allowed), or None."""
    try:
        return _DECODER.raw_decode(text, at)[1]
    except (ValueError, RecursionError):     # nested too deep for the C decoder: scanned instead
        return None


def _decode_key(raw: str) -> str:
    if "\\" not in raw:
        return raw
    try:
        return str(json.loads('"' + raw + '"'))
    except ValueError:
        return raw


_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?\Z")


def _valid_atom(s: str, python: bool) -> bool:
    if s in ("true", "false", "null") or (python and s in ("True", "False", "None")):
        return True
    return bool(_NUMBER.match(s))


def partial_atom_ok(s: str) -> bool:
    """True when ``s`` is a complete number (used when input ends inside an atom)."""
    return bool(_NUMBER.match(s))


def closed_json(text: str) -> str:
    """A JSON text that broke off, closed after its last complete value ("{}" when none)."""
    sc = JsonScanner(track_depth=0)
    if sc.feed(text) is not None:
        return text
    return (text[:sc.commit] + sc.closing()) if not sc.failed and sc.commit else "{}"
