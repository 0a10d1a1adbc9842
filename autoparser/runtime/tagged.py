"""The reader of a call whose name sits between markers (``<function=NAME>`` + arguments + close):
its frame (name, id, close) read by :class:`.tagged_frame._TaggedFrame`, its arguments here: JSON or
Python objects, a JSON string holding them, JSON written with character references, argument
literals, ``key: value`` lines (``lineargs``) or per-key tagged values typed by the tool's schema."""

from __future__ import annotations

import json
from typing import Any

import regex

from .. import markers as mk
from ..analysis.model import LINE_ARGS
from ..values.coerce import coerce, raw_string
from ..values.decode import args_text, typed_value
from ..values.entities import decodable, raw_length, unescape
from ..values.jsonscan import JsonScanner
from ..values.jsonscan import closed_json as _closed_json
from ..values.literal import LiteralEnd, literal_to_json, read_partial_literal
from .calls import _ArgsStream, _cut_marker, _skip_ws
from .lineargs import LineArgsReader
from .tagged_frame import _TaggedFrame

_escape = json.encoder.encode_basestring   # the C escaper json.dumps(ensure_ascii=False) uses
_CDATA = "<![CDATA["
_CDATA_END = regex.compile(r"\]\]>")


class TaggedCallReader(_TaggedFrame):
    """A call whose name sits between markers: ``<function=NAME>`` + arguments + close."""

    # -------------------------------------------------------------- the arguments (phases run by Phases.step)
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
            return self._broke_off(self.args_start + sc.commit)
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
            return self._broke_off(self._raw_at(sc.commit))
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
        self._args(typed_value(raw, self._schema_for(self.key), self._quoted))

    @property
    def _quoted(self) -> bool:
        return self.fmt.tagged is not None and self.fmt.tagged.strings_json

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
                self._args(typed_value("".join(self.value_parts), self._schema_for(self.key), self._quoted))
            self._args("}")
        self._mark_truncated()


__all__ = ["TaggedCallReader"]
