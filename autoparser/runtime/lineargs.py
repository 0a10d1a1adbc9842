"""Streaming ``key: value`` argument lines (a YAML block mapping) as JSON argument fragments.

:class:`LineArgsReader` reads the arguments of one call (args ``"yaml"``): each key starts a
line at one indentation (the first key's), its value runs to the next such key line or to
whatever ends the arguments (:func:`args_end_source`: the call's close, its end, the section's
end, the next call, an end-of-turn marker). Each character is searched once (one regex search
from where the last one stopped, holding back only a possible key line or end marker).

A string value the template writes raw is streamed as it comes (its trailing white space held
back, so a value's text is the same however it is chunked); any other value (a number, JSON,
a nested block, a block scalar) is read whole with :func:`~autoparser.values.yamlargs.yaml_value`
once its end is known. The PEG mapper reads a whole argument block with the same regexes and
:func:`split_entries`, so both give the same arguments.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import regex

from .. import markers as mk
from ..values.jsonscan import closed_json
from ..values.yamlargs import is_raw, key_line_source, keys_source, next_key_source, value_json
from .phases import Phases

if TYPE_CHECKING:
    from ..analysis.model import ToolFormat

__all__ = ["LineArgsReader", "args_end_source", "body_source", "layout", "quote_chars", "split_entries"]

_escape = json.encoder.encode_basestring


def args_end_source(fmt: ToolFormat, stops: Sequence[str], loose: bool = False) -> str:
    """Regex source for what ends ``key: value`` arguments, with the white space before it:
    the call's close or end marker, the section's end, an end-of-turn marker, and (when the
    call has no close of its own) the separator and start of the next call. ``loose`` (the engine
    only): the call markers in the spellings models also write (:func:`autoparser.markers.loose`)."""
    call = mk.loose if loose else mk.pattern
    alts = [call(m) for m in (fmt.call_close, fmt.call_end, fmt.section_end) if m.strip()]
    alts += [mk.pattern(m) for m in stops if m.strip()]
    head = fmt.call_start + fmt.name_prefix
    if not (fmt.call_close.strip() or fmt.call_end.strip()) and head.strip():
        sep = mk.pattern(fmt.separator) if fmt.separator.strip() else (r"\r?\n" if "\n" in fmt.separator else "")
        alts.append(sep + r"\s*" + call(head))
    alts = [a for a in dict.fromkeys(alts) if a]
    return r"\s*(?:" + "|".join(alts) + ")" if alts else ""


def _cut_end_source(fmt: ToolFormat) -> str:
    """Regex source for the first marker after the arguments as the template renders it (the white
    space before it included): only a tail of the output that begins it so is that marker, cut off
    (``x </tool_`` is text where the template writes ``x\n</tool_use>``)."""
    if fmt.call_close.strip():
        alts = [fmt.call_close]
    else:
        after = next((m for m in (fmt.call_end, fmt.section_end) if m.strip()), "")
        alts = [fmt.call_close + after] if after else []
        head = fmt.call_start + fmt.name_prefix
        if not fmt.call_end.strip() and head.strip():
            # no marker closes a call: the next call's head, as the template writes it after a call
            alts.append(fmt.call_close + (fmt.separator if fmt.separator.strip() else "") + head)
    return "|".join(regex.escape(a) for a in alts)


def layout(fmt: ToolFormat) -> tuple[str, str | None]:
    """(the separator after a key, ``:`` or ``=``; the separator of pairs on one line, or None for
    one argument per line)."""
    ta = fmt.tagged
    if ta is None:
        return ":", None
    return ta.key_suffix.strip() or ":", (None if "\n" in ta.prefix else ta.separator)


def quote_chars(fmt: ToolFormat) -> str:
    """The quotes that open a string in a value, when the template quotes its strings: inside one,
    nothing ends the value (``query="a; b=1"``). Python literals (``=``) take both quotes; YAML
    (``:``) the double quote only (an apostrophe in a plain scalar is text)."""
    ta = fmt.tagged
    if ta is None or not ta.strings_json:
        return ""
    return "\"'" if layout(fmt)[0] == "=" else '"'


def body_source(quotes: str) -> str:
    """Regex source for argument text up to (lazily) what follows it, quoted strings whole."""
    if not quotes:
        return r"(?s:.*?)"
    strings = "|".join(f"{regex.escape(q)}(?:[^{regex.escape(q)}\\\\]|\\\\.)*{regex.escape(q)}" for q in quotes)
    return "(?s:(?:" + strings + "|[^" + regex.escape(quotes) + "])*?)"


class _Quotes:
    """Whether a position of a value is inside a quoted string (backslash escapes), tracked forward
    from the value's start, each character once."""

    def __init__(self, chars: str) -> None:
        self.chars = chars
        self.pos = 0
        self.open = ""
        self.escaped = False

    def reset(self, pos: int) -> None:
        self.pos, self.open, self.escaped = pos, "", False

    def inside(self, text: str, upto: int) -> bool:
        if not self.chars:
            return False
        for i in range(self.pos, upto):
            c = text[i]
            if self.open:
                if self.escaped:
                    self.escaped = False
                elif c == "\\":
                    self.escaped = True
                elif c == self.open:
                    self.open = ""
            elif c in self.chars:
                self.open = c
        self.pos = max(self.pos, upto)
        return bool(self.open)


def _indent(fmt: ToolFormat) -> str:
    """The indentation the template writes before each key."""
    prefix = fmt.tagged.prefix if fmt.tagged is not None else "\n"
    return prefix[prefix.rfind("\n") + 1:]


def _keys(schema: Mapping[str, Any]) -> str:
    props = schema.get("properties")
    return keys_source(list(props) if isinstance(props, Mapping) else [])


def _prop(schema: Mapping[str, Any], key: str) -> Any:
    props = schema.get("properties")
    found = props.get(key) if isinstance(props, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def split_entries(text: str, fmt: ToolFormat, schema: Mapping[str, Any]) -> list[tuple[str, str]] | None:
    """A whole argument block (everything between the name's markers and what ends the
    arguments) as ``(key, value text)`` pairs, split as :class:`LineArgsReader` splits it;
    None when it does not begin with a key line."""
    keys = _keys(schema)
    kv, sep = layout(fmt)
    first = mk.compile_source(key_line_source(keys, kv, sep))
    quotes = _Quotes(quote_chars(fmt))
    out: list[tuple[str, str]] = []
    pos = 0
    nxt: regex.Pattern[str] | None = None
    while True:
        m = first.match(text, pos)
        if m is None:
            return out if text[pos:].strip() == "" and (out or pos == 0) else None
        if nxt is None:
            indent = m.group("ind") if m.group("lead") else _indent(fmt)
            nxt = mk.compile_source(next_key_source(indent, keys, kv, sep))
        start = _after_colon(m)
        quotes.reset(start)
        e = nxt.search(text, start)
        while e is not None and quotes.inside(text, e.start()):
            e = nxt.search(text, e.start() + 1)
        stop = e.start() if e is not None else len(text)
        out.append((m.group("key"), text[start:stop].rstrip()))
        if e is None:
            return out
        pos = stop


def _after_colon(m: regex.Match[str]) -> int:
    """Where a key line's value begins: right after its ``:`` (the space or break after it is the value's)."""
    end = m.end()
    return end - 1 if end > m.start() and m.string[end - 1] in " \t\r\n" else end


class LineArgsReader(Phases):
    """One call's ``key: value`` arguments, streamed to ``emit`` as JSON fragments."""

    def __init__(self, emit: Callable[[str], None], fmt: ToolFormat, schema: Mapping[str, Any],
                 stops: Sequence[str]) -> None:
        self.emit = emit
        self.fmt = fmt
        self.schema = schema
        self.quoted = fmt.tagged is not None and fmt.tagged.strings_json
        self.keys = _keys(schema)
        self.kv, self.sep = layout(fmt)
        self.quotes = _Quotes(quote_chars(fmt))
        self.p_key = mk.compile_source(key_line_source(self.keys, self.kv, self.sep))
        self.end_src = args_end_source(fmt, stops, loose=True)
        self.p_end: regex.Pattern[str] | None = None   # the next key line or the end, once the indent is known
        self.p_close: regex.Pattern[str] | None = None  # the end as rendered (cut off at the end of the output)
        self.p_next: regex.Pattern[str] | None = None   # the next key line alone
        self.phase = "key"
        self.nargs = 0
        self.key = ""
        self.start = 0        # where the current value's text begins (after its ``:``)
        self.scan = 0         # where the next search for the value's end starts
        self.pending = ""     # white space at the end of a streamed value, held back
        self.cut = False      # the output stopped inside a key line

    def _key(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        m = self.p_key.match(buf, pos, partial=True)
        if self.cut or (final and (not buf[pos:].strip() or (m is not None and m.partial))):
            self.cut = True
            return "more", len(buf)     # the output stopped before or inside a key line: the call was cut there
        if m is not None and m.partial and final:
            m = None
        if m is not None and (m.partial or (not final and m.end() == len(buf))):
            return "more", pos
        if m is None:
            self.emit("}" if self.nargs else "{}")
            self.phase = "over"
            return "done", pos
        if self.p_end is None:
            indent = m.group("ind") if m.group("lead") else _indent(self.fmt)
            src = "(?P<next>" + next_key_source(indent, self.keys, self.kv, self.sep) + ")"
            if self.end_src:
                src += "|(?P<close>" + self.end_src + ")"
            self.p_end = mk.compile_source(src)
            self.p_next = mk.compile_source(next_key_source(indent, self.keys, self.kv, self.sep))
            cut = _cut_end_source(self.fmt)
            self.p_close = mk.compile_source(cut) if cut else None
        self.key = m.group("key")
        self.emit(("{" if not self.nargs else ", ") + json.dumps(self.key, ensure_ascii=False) + ": ")
        self.nargs += 1
        self.start = _after_colon(m)
        self.quotes.reset(self.start)
        self.phase = "head"
        return "next", self.start

    def _head(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """The value's first line tells a raw string from a value read whole."""
        i = pos
        while i < len(buf) and buf[i] in " \t":
            i += 1
        line = buf.find("\n", i)
        if not final and (i == len(buf) or (self.kv == ":" and buf[i] in "|>" and line < 0)):
            return "more", pos      # a block scalar's header is only known with its line
        self.scan = i
        if is_raw(buf[i:line + 1 if line >= 0 else len(buf)], _prop(self.schema, self.key), self.quoted, self.kv):
            self.emit('"')
            self.pending = ""
            self.phase = "raw"
            return "next", i
        self.phase = "whole"
        return "next", i

    def _find(self, buf: str, final: bool) -> tuple[int, str]:
        """Where the value ends and what comes there: ``"next"`` (a key line), ``"close"`` (the end
        of the arguments), ``"more"`` (it may, once more text comes) or ``"run"`` (not in sight)."""
        assert self.p_end is not None
        m = self.p_end.search(buf, self.scan, partial=not final)
        while m is not None and self.quotes.inside(buf, m.start()):
            self.scan = m.start() + 1          # inside a quoted string: not the end
            m = self.p_end.search(buf, self.scan, partial=not final) if self.scan < len(buf) else None
        self.scan = min(self.scan, len(buf))
        if m is None:
            if final:
                # the output stopped inside the marker that ends the arguments, or inside the next
                # key line: that ends the value
                cuts = [(cut.start(), what) for pat, what in ((self.p_close, "close"), (self.p_next, "next"))
                        if pat is not None and (cut := pat.search(buf, self.scan, partial=True)) is not None
                        and buf[cut.start():].strip() and not self.quotes.inside(buf, cut.start())]
                if cuts:
                    return min(cuts)
            return len(buf), "run"
        if m.partial or (not final and m.end() == len(buf)):
            return m.start(), "more"
        return m.start(), m.lastgroup or "close"

    def _raw(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        stop, what = self._find(buf, final)
        self._stream(buf[pos:stop])
        self.scan = stop
        if what in ("more", "run"):
            return "more", stop
        self.emit('"')
        return self._ended(what, stop)

    def _stream(self, text: str) -> None:
        if not text:
            return
        text = self.pending + text
        kept = text.rstrip()
        self.pending = text[len(kept):]
        if kept:
            self.emit(_escape(kept)[1:-1])

    def _whole(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        stop, what = self._find(buf, final)
        self.scan = stop
        if what in ("more", "run"):
            return "more", stop
        self.emit(value_json(buf[self.start:stop].rstrip(), _prop(self.schema, self.key), self.quoted, self.kv))
        return self._ended(what, stop)

    def _ended(self, what: str, stop: int) -> tuple[str, int]:
        if what == "next":
            self.phase = "key"
            return "next", stop
        self.emit("}")
        self.phase = "over"
        return "done", stop

    def _over(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        return "done", pos

    def truncate(self, buf: str) -> None:
        """The output ended inside the arguments: close the value and the object."""
        if self.phase == "over":
            return
        if self.phase == "key":
            self.emit("}" if self.nargs else "{}")
        elif self.phase == "raw":
            self.emit('"}')
        else:
            text = buf[self.start:].rstrip() if self.phase == "whole" else ""
            self.emit(_cut_value(text, _prop(self.schema, self.key), self.quoted, self.kv) + "}")
        self.phase = "over"


def _cut_value(text: str, schema: Any, quoted: bool, kv: str) -> str:
    """A value cut off by the end of the output: what of it reads (a JSON object or array closed
    after its last complete member)."""
    out = value_json(text, schema, quoted, kv)
    head = text.lstrip()
    if head[:1] in ("{", "[") and isinstance(json.loads(out), str):
        return closed_json(head)
    return out
