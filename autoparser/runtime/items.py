"""Streaming a call's arguments written as items (:class:`~autoparser.analysis.layout.Items`) as
JSON argument fragments.

Items are ``open`` item (``sep`` item)* ``close``, each ``item_pre KEY kv VALUE item_post`` (or
a positional VALUE, named by the schema's properties in order). A value is read by its
spelling (:class:`~autoparser.values.spelling.Values`): a string whose codec delimits itself (a
quoted string) through the codec's incremental decoder; a nested JSON or Python literal through
the JSON scanner; anything else up to what may follow it: the item's closing literal, else the
next item (its separator, a key the tool declares and the key/value separator) or the end of the
arguments. Strings a tool declares as strings stream as they come; other values are decoded
whole (:func:`~autoparser.values.spelling.decode_value`), typed by the tool's schema.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Callable, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

import regex

from .. import markers as mk
from ..analysis.layout.model import KEY_AGAIN, Items
from ..markers import lit_source as _strict_lit
from ..values.codecs import Codec, IncrementalDecoder
from ..values.jsonscan import JsonScanner
from ..values.keypaths import PathStack, suffix_source
from ..values.nested import own_openers, parse_own
from ..values.pyliteral import python_to_json
from ..values.spelling import Values, decode_value, schema_types
from ..values.written import ID_AGAIN, Frame
from .phases import Phases
from .tolerance import drifted_close_source

_escape = json.encoder.encode_basestring
_MAX_KEY = 256
_MAX_HEADER = 8192
_GENERIC_KEY = r"[\w.\-]{1,64}"
_KEY_WORD = regex.compile(_GENERIC_KEY)


def _bracketed(before: str, after: str) -> bool:
    """A key between these texts sits inside a tag or brackets they open and close."""
    return any(o in before and c not in before.split(o)[-1] and c in after for o, c in (("<", ">"), ("[", "]")))


def _opt(src: str) -> str:
    return src if src else ""


def lit_source(text: str, call_id: str | None = None, **kw: Any) -> str:
    """:func:`autoparser.markers.lit_source` as the engine reads an item's literal pieces: each
    bracket-decorated token in the spellings models also write (``<|/calls|>`` for ``</calls>``), as
    the engine's call markers are read. Where the literal writes the call's id again
    (:data:`ID_AGAIN`), exactly `call_id` (any name-like word when it is not known)."""
    if ID_AGAIN not in text:
        return _strict_lit(text, loose=(), **kw)
    same = regex.escape(call_id) if call_id else _GENERIC_KEY
    return same.join(_strict_lit(part, loose=(), **kw) if part else "" for part in text.split(ID_AGAIN))


class ItemsReader(Phases):
    """The arguments of one call, written as items; emits JSON text through ``emit``."""

    def __init__(self, emit: Callable[[str], None], items: Items, schema: Mapping[str, Any],
                 end_sources: tuple[str, str], hold: int = 0, call_id: str = "") -> None:
        self.emit = emit
        self.call_id = call_id   # the call's id, where the items write it again (:data:`ID_AGAIN`)
        self.items = items
        self.keyed = items.keyed and not items.columns   # a key before each value
        self.values: Values = items.values if items.values is not None else Values()
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        self.props: Mapping[str, Any] = props if isinstance(props, Mapping) else {}
        self.keys = tuple(k for k in self.props if isinstance(k, str))
        self.end_sources = end_sources   # what may follow the arguments: while streaming, at the end
        self.hold = hold                 # characters at the end of the text a value keeps back until final
        self.n = 0
        self.key = ""
        self.phase = "start"
        self.string_codec = Codec.from_spec(self.values.string.codec)
        self.ws_words = self.string_codec.white_words
        self.decoder: IncrementalDecoder | None = None
        self.scanner: JsonScanner | None = None
        self.value_start = 0
        self.scan = 0
        self.streaming = False     # the current value streams as a JSON string
        self.parts: list[str] = []
        self.brackets = ""
        self.malformed = False
        self.own_post = False       # the value's end is its own closing text (then the item's)
        self.own_tries = 0          # own-syntax containers: ends tried
        self.word: IncrementalDecoder | None = None   # a word codec's decoder: where the raw value may end
        self.word_fed = 0
        self.word_flips: list[int] = []   # where the word goes in or out of a quote (absolute positions)
        self.own_value = False      # the value opens an own-syntax container (its items are not the next item)
        self.quoted_nested = False  # the quoted value just read was an array or object
        self.other_quote = False    # the string being read is quoted with the other quote character
        it = items
        keyalt = "(?:" + "|".join(regex.escape(k) for k in sorted(self.keys, key=len, reverse=True)) + ")" \
            if self.keys else _GENERIC_KEY
        # arrays and objects written as items with path keys (``filters[lang]=``): the JSON text around
        # each key from the stack of open containers, each value typed by its path's schema
        path = self.values.path if self.keyed else None
        self.paths = PathStack(path, self.props) if path is not None else None
        self.leaf_prop: Any = None
        keyalt += suffix_source(path)
        self.keyalt = keyalt
        # the next item: a declared key, or any key inside a tag or brackets (``<parameter=unit>``)
        ahead = _GENERIC_KEY if _bracketed(it.item_pre, it.kv) else keyalt
        # a null value's item of its own shape (``<KEY/>``): the text after its key
        self.null_src = self._lit(it.null_item) if self.keyed and it.null_item.strip() else ""
        self.kv_ahead = "(?:" + self._lit(it.kv) + "|" + self.null_src + ")" if self.null_src else self._lit(it.kv)
        # values of a type written in a frame of their own (``<KEY>`` ... ``</KEY>``): the frame is known
        # from the item's opening text or its key/value separator where these differ, else from the value
        self.frames = it.frames if self.keyed and not it.columns else ()
        self.frame: Frame | None = None
        heads = self._heads(ahead)
        c = mk.compile_source
        first = self._lit(it.open) + heads
        self.p_first = c(first) if first else None
        nxt = self._lit(it.sep) + heads
        self.p_next = c(nxt) if nxt else None
        self.p_close = c(self._lit(it.close)) if it.close.strip() else None
        self.p_empty = c(self._lit(it.empty)) if it.empty.strip() else None
        kvs = "".join(f"(?P<f{i}>{self._lit(f.kv, separates=True)})|" for i, f in enumerate(self.frames)
                      if f.kv.strip() and f.kv != it.kv)
        self.p_kv = c(kvs + self._lit(it.kv, separates=True)) if it.kv else None
        if self.p_kv is not None and self.null_src:
            self.p_kv = c("(?P<null>" + self.null_src + ")|" + kvs + self._lit(it.kv, separates=True))
        self.header: tuple[str, ...] = ()
        self.unfinished = False     # the text ended inside a value or before a header's last value
        self.p_row = c(mk.row_break_source(it.kv)) if it.columns else None
        self.p_item_pre = c(self._lit(it.item_pre)) if it.columns and it.item_pre else None
        if it.columns:   # (the header row is read by its own phase)
            self.p_first = c(self._lit(it.open)) if it.open else None

    def _begun(self, buf: str, pos: int) -> bool:
        """At the end of the output, the rest from ``pos`` begins the items (a key cut short) or
        their text for none, or is nothing where that text must come."""
        rest = buf[pos:].lstrip()
        if not rest:
            return self.p_empty is not None
        at = len(buf) - len(rest)
        return any(p is not None and mk.match_here(p, buf, at, False)[0] == "more" for p in (self.p_first, self.p_empty))

    def _lit(self, text: str, **kw: Any) -> str:
        return lit_source(text, self.call_id, **kw)

    def _heads(self, key: str) -> str:
        """An item's opening text, keyed followed by a `key` (regex source) and the key/value separator:
        in the items' frame or in a frame of its own (:class:`~autoparser.values.written.Frame`)."""
        it = self.items
        alts = [self._lit(it.item_pre) + ("(?=" + key + self.kv_ahead + ")" if self.keyed else "")]
        alts += [self._lit(f.item_pre) + "(?=" + key + self._lit(f.kv) + ")" for f in self.frames
                 if (f.item_pre, f.kv) != (it.item_pre, it.kv)]
        return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"

    def _item_post(self) -> str:
        """The current item's closing text (its frame's), the key written again where it is."""
        post = self.frame.item_post if self.frame is not None else self.items.item_post
        return post.replace(KEY_AGAIN, self.key) if self.key else post

    # -------------------------------------------------------------- structure
    def _start(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        first = "header" if self.items.columns else "key" if self.keyed else "value_begin"
        if self.p_first is None:
            self.phase = first
            return "next", pos
        st, end = mk.match_here(self.p_first, buf, pos, final)
        if st == "more":
            return "more", pos
        if st == "no":
            if self.p_empty is not None:   # the text written for no argument at all
                st, end = mk.match_here(self.p_empty, buf, pos, final)
                if st == "more":
                    return "more", pos
                pos = end if st == "match" else pos
            if final and st == "no" and self._begun(buf, pos):
                self.unfinished = True     # the output stopped where the items begin (``c1|f|loc``)
            self.emit("{}")
            return "done", pos
        self.phase = first
        return "next", end

    def _header(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """Columns: the header row of keys, up to the row break; the values follow in its order."""
        assert self.p_row is not None
        m = self.p_row.search(buf, pos, min(len(buf), pos + _MAX_HEADER), partial=not final)
        if m is None or m.partial or (not final and m.end() == len(buf)):
            if final or len(buf) - pos > _MAX_HEADER:
                self._end()
                return "bad", pos
            return "more", pos
        k, it = self.items.key, self.items
        keys = [x.strip() for x in buf[pos:m.start()].split(it.key_sep.strip() or it.key_sep)]
        self.header = tuple(x[len(k.pre):len(x) - len(k.post)] if k.pre and x.startswith(k.pre) and k.post and
                            x.endswith(k.post) and len(x) >= len(k.pre) + len(k.post) else x for x in keys if x)
        if any(x not in self.props and not _KEY_WORD.fullmatch(x) for x in self.header):
            self.header = ()
            self._end()
            return "done", pos     # no header row: the call has no arguments
        self.phase = "row" if self.header else "after"
        return "next", m.end()

    def _row(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """Columns: the first value's opening text (``item_pre``)."""
        return self._optional(self.p_item_pre, "value_begin", buf, pos, final)

    def _optional(self, pat: regex.Pattern[str] | None, then: str, buf: str, pos: int, final: bool
                  ) -> tuple[str, int]:
        """``pat`` here, taken when it matches (waiting while it may still), then phase `then`."""
        if pat is not None:
            st, end = mk.match_here(pat, buf, pos, final)
            if st == "more":
                return "more", pos
            if st == "match":
                pos = end
        self.phase = then
        return "next", pos

    def _key(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.p_kv is None:
            return "bad", pos
        m = self.p_kv.search(buf, pos, min(len(buf), pos + _MAX_KEY + 32), partial=not final)
        if m is None or m.partial or (not final and m.end() == len(buf)):
            if final or len(buf) - pos > _MAX_KEY:
                self._end()
                return "bad", pos
            return "more", pos
        key = buf[pos:m.start()].strip()
        if not key or "\n" in key:
            self._end()
            return "bad", pos
        self.key = key
        self.frame = next((f for i, f in enumerate(self.frames) if m.groupdict().get(f"f{i}") is not None), None)
        if self.paths is not None:
            text, self.leaf_prop = self.paths.key(key)
            self.emit(text)
        else:
            self.emit(("{" if self.n == 0 else ", ") + _escape(key) + ": ")
        self.n += 1
        if self.null_src and m.group("null") is not None:
            self.emit("null")      # (the item was the null value's own shape: ``<KEY/>``)
            self.phase = "after"
            return "next", m.end()
        self.phase = "value_begin"
        return "next", m.end()

    def _post(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        it = self.items
        post = self._item_post()
        src = self._lit(post) if post.strip() else ""
        drifted = drifted_close_source(post) if src and self.keyed and it.item_pre.strip() else ""
        if drifted:   # (``</parameter1>`` with the next item right after it)
            src = f"(?:{src})|(?:{drifted})(?=\\s*{self._lit(it.sep)}{self._lit(it.item_pre)})"
        return self._optional(mk.compile_source(src) if src else None, "after", buf, pos, final)

    def _after(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if self.p_next is not None:
            st, end = mk.match_here(self.p_next, buf, pos, final)
            if st == "more":
                return "more", pos
            if st == "match" and (end > pos or self.keyed) and \
                    not (self.items.columns and self.n >= len(self.header)):   # keyed: a key was seen ahead
                self.phase = "key" if self.keyed else "value_begin"
                return "next", end
        if self.p_close is not None:
            st, end = mk.match_here(self.p_close, buf, pos, final)
            if st == "more":
                return "more", pos
            if st == "match":
                pos = end
        if self.items.columns and self.n < len(self.header) and final and not buf[pos:].strip():
            self.unfinished = True   # (the output ended before the header's last value)
        self._end()
        return "done", pos

    def _end(self) -> None:
        self.emit(self.paths.end() if self.paths is not None else "}" if self.n else "{}")

    # -------------------------------------------------------------- values
    def _prop(self) -> Any:
        if self.paths is not None:
            return self.leaf_prop
        return self.props.get(self.key) if self.key else None

    def _value_begin(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        if not self.keyed:
            names = self.header if self.items.columns else self.keys
            self.key = names[self.n] if self.n < len(names) else f"arg{self.n}"
            self.emit(("{" if self.n == 0 else ", ") + _escape(self.key) + ": ")
            self.n += 1
        v = self.values
        types = schema_types(self._prop())
        text = buf[pos:pos + 64]
        s = v.string
        if final and not text.strip() and self.keyed and v.null.strip():
            self.unfinished = True   # (the output stopped right after a key: its value never came)
        openers = own_openers(v) if not types or types & {"object", "array"} else ()
        if not final and len(text) < 64 and (any(len(text) < len(o) and o.startswith(text)
                                                for o in (s.pre, v.nested_pre, v.number.pre,
                                                          v.integer.pre if v.integer else "") if o) or
                                            any(o.startswith(text.lstrip()) for o in openers)):
            return "more", pos   # a value's opening text is still being written
        self.own_value = any(text.lstrip().startswith(o) for o in openers)
        if self.frame is None and self.own_value:
            # (a frame told apart by its value alone: ``KEY {`` ... ``}`` beside ``KEY value;``)
            self.frame = next((f for f in self.frames if self._opens(f.kind, text)), None)
        if self.frame is not None:   # (a value in a frame of its own: read whole up to the frame's closing text)
            self.own_value, self.streaming = True, False
            return self._raw_begin(pos, False)
        codec = self.string_codec
        delimits = codec.self_delimiting or codec.delimits_when_opened   # (a value quoted only when needed)
        opener = s.pre + (codec.quote if delimits else "")
        other = _OTHER_QUOTE.get(s.pre) if s.pre == s.post and not delimits else None
        if other is not None and text.startswith(other):
            # the template writes strings as they are between quote characters ('...'), the model quoted
            # with the other one ("..."): a string literal in the quotes written, a backslash escaping its
            # quote (the value ends at that quote, not at the template's)
            self.other_quote = True
            return self._open_quoted(Codec.from_spec(f"quoted({other},backslash,nl)"), types, pos)
        side_by_side = v.nested == "own" and v.array is not None and not (v.array.open + v.array.item_pre).strip() \
            and "array" in types and "string" not in types   # (``tags "a" "b"``: read whole, up to its end)
        if delimits and opener.strip() and not side_by_side:
            if not final and len(text) < len(opener) and opener.startswith(text):
                return "more", pos
            if text.startswith(opener):
                return self._open_quoted(self.string_codec, types, pos + len(s.pre))
        nested_open = v.nested_pre
        if not v.nested_codec and v.nested != "own" and (not types or types & {"object", "array"}):
            head = text[len(nested_open):len(nested_open) + 1] if text.startswith(nested_open) else ""
            if not final and len(text) <= len(nested_open) and nested_open.startswith(text):
                return "more", pos
            if head in ("{", "["):
                self.scanner = JsonScanner(python=True, track_depth=0)   # JSON or Python literals alike
                self.value_start = pos + len(nested_open)
                self.phase = "nested"
                return "next", self.value_start
        self.streaming = types == {"string"} and not self.string_codec.self_delimiting
        if self.streaming:
            self.decoder = self.string_codec.decoder()
            self.emit('"')
            if s.pre and text.startswith(s.pre):
                pos += len(s.pre)
        return self._raw_begin(pos, _word_codec(self.string_codec) and not self.streaming)

    def _opens(self, kind: str, text: str) -> bool:
        """`text` begins a container of `kind` in the encoding's own syntax with a bracket of its own."""
        cont = self.values.object if kind == "object" else self.values.array
        head = (cont.open + cont.item_pre).strip() if cont is not None else ""
        return bool(head) and text.lstrip().startswith(head)

    def _raw_begin(self, pos: int, word: bool) -> tuple[str, int]:
        """A value read as raw text from `pos`, up to what ends it (`word`: a word codec's, never inside
        its quotes)."""
        self.parts = []
        self.brackets = ""   # the value's brackets as read so far
        self.value_start = self.scan = pos
        self.own_tries = 0
        self.word = self.string_codec.decoder() if word else None
        self.word_fed = pos
        self.word_flips = []
        self.phase = "raw"
        return "next", pos

    def _cut_closer(self, buf: str, pos: int) -> int | None:
        """Where the text at the end of the output that only begins what ends the value starts (a
        partial match running to the end), or None. A closing text that begins with white space
        (``⏎</parameter>``) is begun only by such white space: ``a <`` is a value that ends in ``<``."""
        c = self._value_end(False).search(buf, max(pos, self.scan), partial=True)
        if c is None or not c.partial or c.start() >= len(buf):
            return None
        it = self.items
        post = self._item_post()
        s_post = self.values.string.post if self.streaming else ""
        closer = s_post + post
        got = buf[c.start():]
        got_lead = got[:len(got) - len(got.lstrip())]
        if not closer.strip():
            # a value that runs to what follows it: the next item or the call's end, begun by the white
            # space before the next item (items on lines of their own begin on a new line; ``b=plain n``
            # is a value that ends in ``n`` where items are spaced)
            between = post + it.sep
            if "\n" in between[:len(between) - len(between.lstrip())] and "\n" not in got_lead:
                return None
            item = between + (it.item_pre if self.keyed else "")
            if item[:1].isspace() and not got_lead and (got[:1].isalnum() or got[:1] == "_"):
                return None   # a word (a key, a call's number) begins the next item only after its space
            return c.start()
        lead = closer[:len(closer) - len(closer.lstrip())]
        if lead and (not got_lead or ("\n" in lead) != ("\n" in got_lead)):
            return None
        return c.start()

    def _value_end(self, final: bool) -> regex.Pattern[str]:
        """What ends a value that does not delimit itself."""
        end_source = self.end_sources[1 if final else 0]
        it = self.items
        post = self._item_post()
        s_post = self.values.string.post if self.streaming else ""
        self.own_post = bool((s_post + post).strip())
        if self.own_post:
            codec = self.string_codec
            src = "(?P<post>" + mk.post_source(s_post + post, codec.never_contains, codec.may_contain, loose=()) + ")"
            if self.keyed and it.item_pre.strip() and it.kv.strip() and not self.own_value:
                # a value whose closing text was left out ends where the next item begins: a declared key,
                # or any key written inside a tag or brackets (``<parameter=unit>``, ``[ARG unit]``)
                key = self.keyalt
                if _bracketed(it.item_pre, it.kv):
                    key = _GENERIC_KEY
                nxt = r"(?=\s*" + self._lit(it.sep) + self._heads(key) + ")"
                drifted = drifted_close_source(s_post + post)   # (``</parameter1>``, then the next item)
                if drifted:
                    src += "|(?P<drifted>" + drifted + ")" + nxt
                src += "|" + nxt
            return mk.compile_source(src)
        alts = []   # the value's end is what follows it: white space, then the next item or the end
        nxt = self._lit(post + it.sep, lead_optional=True, separates=True) + self._lit(it.item_pre)
        if self.keyed:
            alts.append(self._lit(post + it.sep, lead_optional=True, separates=True) + self._heads(self.keyalt))
        elif nxt:
            alts.append(nxt)
        # the item's own white space (``item_post``) before the end is the item's, not the value's
        tail = self._lit(post + it.close, lead_optional=True) if it.close.strip() or (post and end_source) else ""
        if tail or end_source:
            alts.append(tail + (r"(?=" + end_source + ")" if end_source else ""))
        return mk.compile_source("|".join(a for a in alts if a) or r"\Z")

    def _in_quote(self, buf: str, at: int) -> bool:
        """A value written by a codec that delimits itself with no opener of its own (a shell word):
        whether ``at`` lies inside a quoted part of it (``'a # b'``), where nothing ends the value.
        The decoder is fed one character at a time up to ``at`` (once per value: linear), and the
        positions where it goes in or out of a quote are kept."""
        dec = self.word
        if dec is None:
            return False
        while self.word_fed < min(at, len(buf)) and dec.end is None:
            dec.feed(buf[self.word_fed], False)
            self.word_fed += 1
            if dec.inside != (len(self.word_flips) % 2 == 1):
                self.word_flips.append(self.word_fed)
        return bisect.bisect_right(self.word_flips, at) % 2 == 1

    def _raw(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        at = self.scan
        if final:
            cut = self._cut_closer(buf, pos)
            if cut is not None and self._in_quote(buf, cut):
                cut = None
            whole = self._value_end(True).search(buf, at) if cut is not None else None
            if whole is not None and cut is not None and whole.start() <= cut \
                    and not _opened_inside(self.brackets + buf[pos:whole.start()], buf[whole.start():]):
                cut = None   # the closing text is there whole (``f(a=Paris)`` at the end of the output)
            if cut is not None:
                # the output stopped inside what ends the value (``Paris<``, ``3}``): the value ends there
                self._take(buf[pos:cut], final=True)
                self._finish_value()
                self.phase = "after"
                return "next", len(buf)   # (the closing text begun is the call's: nothing after it)
        pat = self._value_end(final)
        m = pat.search(buf, at, partial=not final)
        while m is not None and self._in_quote(buf, m.start()):   # (inside a quote of a word: not its end)
            m = pat.search(buf, m.start() + 1, partial=not final) if m.start() < len(buf) else None
        if final and self._in_quote(buf, len(buf)):
            self.unfinished = True   # (an unclosed quote runs to the end of the output: cut short)
        while m is not None and not m.partial and self._inside_own(buf, m.start()):
            # an array or object in the encoding's own syntax holds the same closing text: the value
            # ends at the first one after which it reads whole
            self._take(buf[pos:m.end()], final=False)
            pos = self.scan = m.end()
            m = pat.search(buf, self.scan, partial=not final)
        if m is not None and not m.partial and not final and self.paths is not None:
            m = self._sooner(pat, buf, m)
        if m is None:
            stop = len(buf)
            if not final:
                stop = max(pos, stop - self.hold)   # what only the end of the text can end stays unread
                self._take(buf[pos:stop], final=False)
                self.scan = stop
                return "more", stop
            self._take(buf[pos:stop], final=True)
            self._finish_value()
            self.phase = "after"
            return "next", stop
        if m.partial:
            cut = max(pos, min(m.start(), len(buf) - self.hold))
            self._take(buf[pos:cut], final=False)
            self.scan = cut
            return "more", cut
        end = m.start() if self.own_post else self._keep_encoded(pat, buf, m.start())
        self._take(buf[pos:end], final=True)
        self._finish_value()
        if self.own_post:
            self.phase = "after"   # the value's closing text and the item's were the delimiter (or the
            return "next", m.end() if m.lastgroup in ("post", "drifted") else m.start()   # next item, without it)
        self.phase = "post"
        return "next", m.start()

    def _open_quoted(self, codec: Codec, types: AbstractSet[str], at: int) -> tuple[str, int]:
        """A string value `codec` delimits begins at ``at``; it streams as a JSON string when the schema
        allows only strings (or says nothing)."""
        self.decoder = codec.decoder()
        self.streaming = not types or types == {"string"}
        self.parts = []
        if self.streaming:
            self.emit('"')
        self.phase = "quoted"
        return "next", at

    def _keep_encoded(self, pat: regex.Pattern[str], buf: str, end: int) -> int:
        """The value's end moved over the white space it ends with, through the last character the
        codec encodes as white space (``a ⏎\t`` for ``"a \\n"``: a folded line break), as long as what ends
        the value still follows (bounded by the white space run)."""
        if not self.ws_words:
            return end
        white = _WHITE.match(buf, end)   # (no copy of the rest of the text: a hot path)
        best, i, stop = end, end, white.end() if white is not None else end
        while i < stop:
            w = next((w for w in self.ws_words if buf.startswith(w, i)), "")
            if w and pat.match(buf, i + len(w)) is not None:
                best = i + len(w)
            i += len(w) or 1
        return best

    def _sooner(self, pat: regex.Pattern[str], buf: str, m: regex.Match[str]) -> regex.Match[str]:
        """A partial match before the complete one `m` (the next item's path key, ``&filters[lang]=``,
        not yet written whole while the ``[`` in it already looks like what follows the call): the
        value waits for it (regex prefers a complete match anywhere to a partial one)."""
        early = pat.search(buf, self.scan, m.start(), partial=True)
        return early if early is not None and early.partial else m

    def _inside_own(self, buf: str, end: int) -> bool:
        """The value is an own-syntax container that does not read whole up to ``end`` (bounded tries)."""
        v = self.values
        if self.streaming or v.nested != "own" or self.own_tries >= 16:
            return False
        text = buf[self.value_start:end].strip()
        if self.frame is not None:
            self.own_tries += 1
            return parse_own(text, v, self._prop(), schema_types, self.frame.kind) is None
        openers = [x.open + x.item_pre for x in (v.object, v.array) if x is not None]
        if not any(o.strip() and text.startswith(o.strip()[:1]) for o in openers):
            return False
        self.own_tries += 1
        return parse_own(text, v) is None

    def _take(self, text: str, final: bool) -> None:
        self.brackets += "".join(ch for ch in text if ch in "()[]{}")
        if self.streaming and self.decoder is not None:
            out, _ = self.decoder.feed(text, final)
            if out:
                self.emit(_escape(out)[1:-1])
        else:
            self.parts.append(text)

    def _finish_value(self) -> None:
        if self.streaming:
            self.emit('"')
            self.streaming = False
            return
        raw = "".join(self.parts)
        value = parse_own(raw.strip(), self.values, self._prop(), schema_types, self.frame.kind) \
            if self.frame is not None else None
        if value is None:
            value = decode_value(raw, self.values, self._prop())
        self.emit(json.dumps(value, ensure_ascii=False))

    def _quoted(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        dec = self.decoder
        assert dec is not None
        out, end = dec.feed(buf[pos:], final)
        if self.streaming:
            if out:
                self.emit(_escape(out)[1:-1])
        else:
            self.parts.append(out)
        if end is None:
            if final:
                self._close_quoted()
                self.unfinished = True
                self.phase = "after"
                return "next", len(buf)
            return "more", len(buf)
        self._close_quoted()
        if final and dec.malformed and pos + end >= len(buf):
            self.unfinished = True     # (the value ran unclosed to the end of the output: cut short)
        self.phase = "string_post"
        return "next", pos + end

    def _string_post(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """The text the template writes after a quoted string's own quotes (after an array or object
        written in the string's quotes, what the nested values' closing text adds: ``'...'::jsonb``)."""
        v, quote = self.values, self.string_codec.quote
        post = v.string.post
        if self.other_quote:
            self.other_quote = False
            return self._expect("", buf, pos, final)   # (its own closing quote was read with it)
        if self.quoted_nested and quote and v.nested_pre == v.string.pre + quote and v.nested_post.startswith(quote):
            post = v.nested_post[len(quote):]
        return self._expect(post, buf, pos, final)

    def _expect(self, post: str, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """``post`` here, taken when it is (waiting while it may still be written), then the item's end."""
        if post:
            got = buf[pos:pos + len(post)]
            if not final and len(got) < len(post) and post.startswith(got):
                return "more", pos
            if got == post:
                pos += len(post)
        self.phase = "post"
        return "next", pos

    def _close_quoted(self) -> None:
        self.quoted_nested = False
        if self.streaming:
            self.emit('"')
            self.streaming = False
        else:
            text = "".join(self.parts)
            value: Any = text
            types = schema_types(self._prop())
            if types and "string" not in types:
                try:
                    value = json.loads(text)
                except ValueError:
                    value = text
            self.quoted_nested = isinstance(value, (dict, list))
            self.emit(json.dumps(value, ensure_ascii=False))

    def _nested(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        sc = self.scanner
        assert sc is not None
        end = sc.feed(buf[self.value_start + len(sc.text):])
        if sc.failed:
            # no JSON or Python literal after all (``{1, 2, 3}``): the value's text, read as written
            self.scanner = None
            self.parts = []
            self.scan = self.value_start
            self.phase = "raw"
            return "next", self.value_start
        if end is None and final:
            raw = sc.text[:sc.commit] + (sc.closing() if not sc.failed else "")
            self._emit_nested(raw or "null")
            self.scanner = None
            self.phase = "after"
            return "next", self.value_start + (sc.commit if sc.failed else len(sc.text))
        if end is None:
            return "more", len(buf)
        self._emit_nested(sc.text[:end])
        self.scanner = None
        self.phase = "nested_post"
        return "next", self.value_start + end

    def _nested_post(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """The text the template writes after a nested value (a closing quote)."""
        return self._expect(self.values.nested_post, buf, pos, final)

    def _emit_nested(self, raw: str) -> None:
        for cand in (raw, python_to_json(raw)):
            try:
                self.emit(json.dumps(json.loads(cand, strict=False), ensure_ascii=False))
                return
            except ValueError:
                continue
        self.emit(_escape(raw))

    # -------------------------------------------------------------- truncation
    def truncate(self, buf: str) -> None:
        """The output ended inside the arguments: close what is open."""
        if self.phase == "raw":
            self._take(buf[self.scan:], final=True) if self.streaming else self.parts.append(buf[self.scan:])
            self._finish_value()
        elif self.phase == "quoted":
            self._close_quoted()
        elif self.phase == "nested" and self.scanner is not None:
            sc = self.scanner
            self._emit_nested((sc.text[:sc.commit] + sc.closing()) or "null")
        elif self.phase == "value_begin" and self.n:
            self.emit("null")
        if self.phase == "start":
            self.emit("{}")
            return
        self._end()


__all__ = ["ItemsReader", "lit_source"]


_PAIRS = {")": "(", "]": "[", "}": "{"}
_WHITE = regex.compile(r"\s*")
#: a string's quote character and the other one, which models write as well
_OTHER_QUOTE = {"'": '"', '"': "'"}


def _word_codec(codec: Codec) -> bool:
    """A codec that delimits its value itself with no fixed opener (a shell word: bare, ``'...'``,
    ``"..."``): the reader reads it as raw text, up to what follows it, but never inside it."""
    return codec.self_delimiting and not codec.opener


def _opened_inside(value: str, rest: str) -> bool:
    """The bracket ``rest`` begins with closes one the value opened (``print("x")`` cut before the
    call's own ``)``): the value goes on, the output stopped inside it."""
    rest = rest.lstrip()
    opener = _PAIRS.get(rest[:1])
    return opener is not None and value.count(opener) > value.count(rest[0])
