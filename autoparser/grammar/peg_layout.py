"""The strict parser of a call written as a learned layout (:class:`~autoparser.analysis.layout.CallLayout`).

Printed from the same description the reader walks: per allowed tool, the layout's pieces in
order (literals whitespace-tolerant as :func:`autoparser.markers.lit_source` matches them, the
tool's name, the id as text up to the literal after it, any name where the name is written
again), then the arguments:

* a JSON (or Python-literal) object, or the text of one written inside a string codec (the mapper
  decodes it and reads it as the reader does, :func:`autoparser.values.decode.args_text`);
* items with the tool's declared keys (any order, as the reader takes them), each value a string
  its codec delimits, a nested JSON or Python literal, or raw text up to what the reader ends it
  at: the item's closing text, the next item's declared key, or the end of the arguments; the
  mapper decodes each value with :func:`autoparser.values.decode.item_value` (typed by the
  schema; own-syntax arrays and objects through :mod:`autoparser.values.nested`);
* items written inside a string codec: the text, which the mapper decodes and parses with a
  grammar of its own for the items.

Value rules are listed in :attr:`LayoutRules.values` (rule name -> how to decode), which the
mapper reads; nothing here imports the runtime.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import regex
from parsimonious.grammar import Grammar

from .. import markers as mk
from ..analysis.layout.model import KEY_AGAIN, CallLayout, Items
from ..plan.openers import call_head_source
from ..values.codecs import Codec
from ..values.decode import ItemHow, streams
from ..values.keypaths import MAX_SEGMENTS, segment_source, suffix_source
from ..values.nested import own_openers
from ..values.spelling import Values, schema_types, with_name
from ..values.written import Frame, column_headers
from .peg_rules import _JSON_RULES, _PYTHON_JSON, _closing, _lit, _Rules, _rx, _seq

if TYPE_CHECKING:
    from .. import ir
    from ..plan import ToolPlan

__all__ = ["LayoutRules", "LayoutValue", "Wrapped", "layout_call"]

_GENERIC_KEY = r"[\w.\-]{1,64}"
_NAME_WORD = r"[^\s<>\[\]{}\"'|,:=()`]{1,256}"


@dataclass(frozen=True)
class LayoutValue:
    """How the mapper reads a value rule: the item's key (None: the key text before it), how the
    value is written, the spelling and the argument's schema."""

    key: str | None
    how: ItemHow
    values: Values
    prop: Any


@dataclass(frozen=True)
class Wrapped:
    """A rule whose text is written with a string codec: ``items`` (the decoded text is parsed with
    ``grammar``) or ``json`` / ``python`` arguments."""

    codec: str
    kind: str
    grammar: Grammar | None = None


@dataclass
class LayoutRules:
    """What the mapper needs to read the layout's rules."""

    values: dict[str, LayoutValue] = field(default_factory=dict)
    keys: set[str] = field(default_factory=set)               # rules whose text is a key
    path_keys: set[str] = field(default_factory=set)          # rules whose text is a path key (``filters[lang]=``)
    wrapped: dict[str, Wrapped] = field(default_factory=dict)
    python: bool = False                                       # JSON arguments in Python spellings


def _piece_rx(text: str, separates: bool = False) -> str:
    """A literal piece as the reader matches it: white space before it, its own white space tolerated."""
    return r"\s*" + mk.lit_source(text, separates=separates) if text.strip() else (r"\s+" if separates else r"\s*")


def layout_call(b: _Rules, g: ir.Grammar, tp: ToolPlan, lr: LayoutRules) -> tuple[str, str]:
    """The call rules of a layout format: (the call's start, the rest of the call)."""

    t = tp.format
    layout = t.layout
    assert layout is not None
    start = b.marker("call_start", t.call_start) if t.call_start.strip() else ""
    lr.python = layout.args.kind == "python"
    end_src = _args_end_source(g, tp, layout)
    pieces = layout.pieces
    at = next(i for i, p in enumerate(pieces) if p.kind == "name")
    header_end = at + 1 if at + 1 < len(pieces) and pieces[at + 1].kind == "lit" else -1
    bodies = []
    for n, tool in enumerate(sorted(tp.allowed, key=len, reverse=True)):
        parts: list[str] = []
        for i, p in enumerate(pieces):
            if p.kind == "lit":
                last = i == len(pieces) - 1
                if last and p.text.strip():
                    parts.append(_closing(b, g, f"layout_lit_{i}", p.text))
                else:
                    parts.append(b.add(f"layout_lit_{i}", _rx(_piece_rx(p.text))))
            elif p.kind == "name":
                text = Codec.from_spec(p.codec).encode(tool) if p.codec != "raw" else tool
                parts.append(b.add(f"call_name_{n}", r"ws " + _lit(text)))
            elif p.kind == "name_again":
                parts.append(b.add("call_name_again", _rx(_hole_source(pieces, i))))
            elif p.kind == "id":
                parts.append(b.add("call_id", _rx(_hole_source(pieces, i))))
            else:
                parts.append(_args(b, tp, layout, tool, n, end_src, lr))
            if i == header_end and t.id_from_header:
                parts = [b.add(f"call_header_{n}", _seq(*parts))]
        bodies.append(_seq(*parts))
    b.add("call_name", " / ".join(f"call_name_{n}" for n in range(len(bodies))))
    # inline: a rule that only names another would take that rule's name (``call`` would be lost)
    if len(bodies) == 1:
        return start, bodies[0]
    return start, "(" + " / ".join(b.add(f"call_body_{n}", body) for n, body in enumerate(bodies)) + ")"


def _hole_source(pieces: tuple[Any, ...], i: int) -> str:
    """A name or id hole: the text up to the literal after it (stripped by the mapper), or one word."""
    nxt = pieces[i + 1] if i + 1 < len(pieces) else None
    lead = r"\s*" if i == 0 else r"[ \t]*"   # (a call that opens with it: any white space before, as the engine skips)
    if nxt is None or nxt.kind != "lit" or not nxt.text.strip() or nxt.text.startswith(mk.HEADER):
        return lead + _NAME_WORD
    return lead + r"[^\n]*?(?=" + mk.lit_source(nxt.text) + ")"


def _args_end_source(g: ir.Grammar, tp: ToolPlan, layout: CallLayout) -> str:
    """What may follow the arguments: the next literal piece (when it ends the call, followed by
    what may follow a call), else what may follow a call."""
    t = tp.format
    at = next(i for i, p in enumerate(layout.pieces) if p.kind == "args")
    rest = [p for p in layout.pieces[at + 1:] if p.kind == "lit" and p.text.strip()]
    alts = [r"\s*\Z"] + [r"\s*" + mk.pattern(m) for m in (t.section_end, *g.server_stops) if m.strip()]
    if t.call_start.strip():
        alts.append(r"\s*" + (mk.pattern(t.separator) + r"\s*" if t.separator.strip() else "")
                    + mk.pattern(t.call_start))
    elif tp.names:
        head = mk.pattern(t.name_prefix) + r"\s*" if t.name_prefix.strip() else ""
        at = next(i for i, p in enumerate(layout.pieces) if p.kind == "name")
        named = at <= 1 or not head
        sep = r"\s*" + (mk.pattern(t.separator) + r"\s*" if t.separator.strip() else "")
        if not head and at > 1 and all(p.kind in ("lit", "id") for p in layout.pieces[:at]):
            alts.append(sep + call_head_source(layout.pieces[:at], tp.names))   # (the call opens with its id)
        else:
            alts.append(sep + head + (mk.tool_name(tp.names) if named else ""))   # (an id between: the prefix alone)
    follow = "|".join(dict.fromkeys(alts))
    if rest:
        src = mk.lit_source(rest[0].text, lead_optional=True)
        return src + ("(?=" + follow + ")" if rest[0] is layout.pieces[-1] else "")
    return follow


def _args(b: _Rules, tp: ToolPlan, layout: CallLayout, tool: str, n: int, end_src: str, lr: LayoutRules) -> str:
    a = layout.args
    schema = tp.schema(tool)
    if a.kind == "items" and a.items is not None:
        values = a.items.values or Values()
        items = with_name(a.items, tool)   # (the call's name written in the items' literals)
        if not a.codec:
            return _Items(b, lr, items, values, schema, f"t{n}", end_src).rule()
        inner = _inner_items(items, values, schema, f"w{n}", lr, a.inner_open, a.inner_close)
        return _coded(b, a.codec, end_src, f"args_wrapped_{n}", lr, Wrapped(a.codec, "items", inner))
    if a.codec:
        return _coded(b, a.codec, end_src, f"args_coded_{n}", lr, Wrapped(a.codec, a.kind))
    b.add("args_json", "pj_object / pj_array" if a.kind == "python" else "json_object / json_array")
    return "ws args_json"   # (the template writes {} for a call without arguments)


def _coded(b: _Rules, spec: str, end_src: str, name: str, lr: LayoutRules, wrapped: Wrapped) -> str:
    """Text written with a string codec: one encoded value, or (a codec that does not delimit
    itself) the text up to what may follow it."""
    codec = Codec.from_spec(spec)
    src = codec.regex_source() if codec.self_delimiting else r"(?s:.*?)(?=" + (end_src or r"\Z") + ")"
    lr.wrapped[name] = wrapped
    return "ws " + b.add(name, _rx(src))


def _inner_items(items: Items, values: Values, schema: Any, prefix: str, lr: LayoutRules,
                 opened: str = "", closed: str = "") -> Grammar:
    """A grammar of its own for items written inside a string codec (read from the decoded text),
    with the text always written around them there (``{`` and ``}``)."""

    inner = _Rules()
    close = r"\s*" + regex.escape(closed.strip()) if closed.strip() else ""
    root = _Items(inner, lr, items, values, schema, prefix, close + r"\s*\Z").rule()
    head = inner.add("inner_open", _rx(r"\s*" + regex.escape(opened.strip()))) + " " if opened.strip() else ""
    tail = " " + inner.add("inner_close", _rx(close)) if close else ""
    inner.rules = {"inner": f"{head}{root}{tail} ws", **inner.rules}
    inner.add("ws", _rx(r"\s*"))
    add_json_rules(inner, python=True)
    text = "\n".join(f"{k} = {v}" for k, v in inner.rules.items()) + "\n"
    return Grammar(text)


def add_json_rules(b: _Rules, python: bool) -> None:
    """``pj_*``: JSON values that also take Python's spellings (a nested value the reader scans as
    either); added when a rule uses them."""

    if not python and not any("pj_" in body for body in b.rules.values()):
        return
    for name, body in _JSON_RULES.items():
        b.add("pj_" + name[len("json_"):], regex.sub(r"\bjson_", "pj_", _PYTHON_JSON.get(name, body)))


class _Items:
    """The items of one tool's arguments."""

    def __init__(self, b: _Rules, lr: LayoutRules, items: Items, values: Values, schema: Any, prefix: str,
                 end_src: str) -> None:
        self.b, self.lr, self.items, self.values, self.prefix, self.end_src = b, lr, items, values, prefix, end_src
        props = schema.get("properties") if isinstance(schema, dict) else None
        self.props: dict[str, Any] = dict(props) if isinstance(props, dict) else {}
        self.keys = [k for k in self.props if isinstance(k, str)]
        self.by_key = items.keyed and not items.columns   # a key before each value
        required = schema.get("required") if isinstance(schema, dict) else None
        self.required = [k for k in required if isinstance(k, str)] if isinstance(required, list) else []
        self.keyalt = "(?:" + "|".join(regex.escape(k) for k in sorted(self.keys, key=len, reverse=True)) + ")" \
            if self.keys else _GENERIC_KEY
        self.path = values.path if self.by_key else None
        self.keyalt += suffix_source(self.path)     # (a key may go on with path segments: ``filters[lang]=``)
        self.codec = Codec.from_spec(values.string.codec)

    def name(self, what: str) -> str:
        return f"{self.prefix}_{what}"

    def rule(self) -> str:
        """The items rule: none, or the first item, more items after separators, the close."""
        it, b = self.items, self.b
        first = mk.lit_source(it.open) + mk.lit_source(it.item_pre)
        nxt = mk.lit_source(it.sep) + mk.lit_source(it.item_pre)
        head = b.add(self.name("items_first"), _rx(r"\s*" + first)) if first else ""
        more = b.add(self.name("items_next"), _rx(r"\s*" + nxt)) if nxt else ""
        close = b.add(self.name("items_close"), _rx(r"\s*" + mk.lit_source(it.close))) if it.close.strip() else ""
        if it.columns:
            return self.columns(more, close)
        if it.keyed:
            if self.keys:
                alts = [self.keyed(k, j) for j, k in enumerate(self.keys)]
                if self.path is not None:
                    alts.append(self.path_keyed(len(self.keys)))
                item = b.add(self.name("item"), " / ".join(alts))
            else:
                item = self.keyed(None, 0)
            body = _seq(head, item, f"({_seq(more, item)})*", f"{close}?" if close else "")
        else:
            positional = [self.positional(k, j) for j, k in enumerate(self.keys)]
            tail = ""
            for p in reversed(positional[1:]):
                tail = f"({_seq(more, p, tail)})?"
            body = _seq(head, positional[0], tail, f"{close}?" if close else "") if positional else ""
        if it.empty.strip() and body:   # (the text written for no argument at all: ``|``)
            none = b.add(self.name("items_empty"), _rx(r"\s*" + mk.lit_source(it.empty)))
            body = f"{body} / {none}"
        return b.add(self.name("items"), f"({body})?") if body else ""

    def columns(self, more: str, close: str) -> str:
        """Items written as columns: per header row (the declared keys in the schema's order or sorted,
        optional ones left out or not: :func:`~autoparser.values.written.column_headers`), that row, then its
        values."""
        it, b = self.items, self.b
        headers = column_headers(self.keys, self.required)
        key_sep = r"\s*" + mk.lit_source(it.key_sep.strip() or it.key_sep) + r"\s*"
        pre = b.add(self.name("row_pre"), _rx(r"\s*" + mk.lit_source(it.item_pre))) if it.item_pre else ""
        alts = []
        j = len(self.keys)
        for h, header in enumerate(headers):
            keys = key_sep.join(regex.escape(it.key.pre + k + it.key.post) for k in header)
            row = b.add(self.name(f"header_{h}"), _rx(r"\s*" + mk.lit_source(it.open) + keys +
                                                     mk.row_break_source(it.kv)))
            values = []
            for k in header:
                values.append(self.positional(k, j))
                j += 1
            rest = [_seq(more, v) for v in values[1:]]
            alts.append(_seq(row, pre, values[0], *rest, f"{close}?" if close else ""))
        if not (it.key.pre or it.key.post):
            # any other header of declared keys (any order): each value typed by its key when mapped
            key = b.add(self.name("header_key"), _rx(r"\s*" + self.keyalt))
            self.lr.keys.add(key)
            ksep = b.add(self.name("header_sep"), _rx(key_sep))
            row = b.add(self.name("header_any"), _seq(_rx(r"\s*" + mk.lit_source(it.open)) if it.open else "", key,
                                                       f"({_seq(ksep, key)})*", _rx(mk.row_break_source(it.kv))))
            value = self.positional(None, j)
            alts.append(_seq(row, pre, value, f"({_seq(more, value)})*", f"{close}?" if close else ""))
        return b.add(self.name("items"), f"({' / '.join(f'({a})' for a in alts)})?") if alts else ""

    def keyed(self, key: str | None, j: int) -> str:
        it, b = self.items, self.b
        kv = mk.lit_source(it.kv, separates=True)
        if key is None:
            krule = b.add(self.name("item_key"), _rx(r"\s*[^\n]*?(?=" + kv + ")"))
            b.add(self.name("item_kv"), _rx(kv))
            self.lr.keys.add(krule)
            head = _seq(krule, self.name("item_kv"))
        else:
            k = it.key
            text = k.pre + Codec.from_spec(k.codec).encode(key) + k.post
            head = b.add(self.name(f"key_{j}"), _rx(r"\s*" + regex.escape(text) + r"\s*" + kv))
        item = _seq(head, self.value(key, j))
        framed = [self.framed(f, key, j, i) for i, f in enumerate(it.frames) if it.keyed]
        if framed:   # (values of a type written in a frame of their own: tried first, as the reader does)
            item = " / ".join(f"({x})" for x in (*framed, item))
        if it.null_item.strip():
            # a null value written as an item of its own shape (``<KEY/>``): the key, then that text
            null = mk.lit_source(it.null_item)
            if key is None:
                nkey = b.add(self.name("null_key"), _rx(r"\s*" + _GENERIC_KEY + r"(?=\s*" + null + ")"))
                self.lr.keys.add(nkey)
                nval = self._value_rule(f"nul_{j}", _rx(r"\s*" + null), None, "null", None)
                item = f"({_seq(nkey, nval)}) / ({item})"
            else:
                k = it.key
                text = k.pre + Codec.from_spec(k.codec).encode(key) + k.post
                nval = self._value_rule(f"nul_{j}", _rx(r"\s*" + regex.escape(text) + r"\s*" + null), key, "null",
                                        self.props.get(key))
                item = f"({nval}) / ({item})"
        return b.add(self.name(f"item_{j}"), item)

    def framed(self, f: Frame, key: str | None, j: int, i: int) -> str:
        """An item in the frame `f` of its own (:class:`~autoparser.values.written.Frame`): its opening
        text, the key and its separator, a container of its kind in the encoding's own syntax (brackets
        balanced where it writes them, else up to the frame's closing text), that closing text."""
        it, b = self.items, self.b
        kv = mk.lit_source(f.kv, separates=True)
        lead = r"\s*" + mk.lit_source(f.item_pre) if f.item_pre.strip() else r"\s*"
        name = f"fr{i}_{j}"
        if key is None:
            krule = b.add(self.name(f"{name}_key"), _rx(r"\s*" + _GENERIC_KEY + r"(?=\s*" + kv + ")"))
            self.lr.keys.add(krule)
            head = _seq(b.add(self.name(f"{name}_lead"), _rx(lead)), krule, b.add(self.name(f"{name}_kv"), _rx(r"\s*" + kv)))
        else:
            k = it.key
            text = k.pre + Codec.from_spec(k.codec).encode(key) + k.post
            head = b.add(self.name(f"{name}_head"), _rx(lead + regex.escape(text) + r"\s*" + kv))
        post = f.item_post.replace(KEY_AGAIN, key if key is not None else "\x04")
        own = self.own_source(f.kind)
        if own:
            body = r"\s*" + own
        elif post.strip():
            body = r"\s*(?s:.*?)(?=" + mk.post_source(post, self.codec.never_contains, self.codec.may_contain) + ")"
        else:
            return head + " !" + head   # (nothing says where such a value ends: never)
        value = self._value_rule(f"{name}_v", _rx(body), key, "object" if f.kind == "object" else "array",
                                 self.props.get(key) if key is not None else None)
        post_rule = b.add(self.name(f"{name}_post"), _rx(r"\s*" + mk.lit_source(post))) if post.strip() else ""
        return _seq(head, value, post_rule)

    def path_keyed(self, j: int) -> str:
        """An item whose key is a path (a declared key, then segments): the mapper builds the nested
        value the reader builds (:class:`~autoparser.values.keypaths.PathStack`)."""
        assert self.path is not None
        kv = mk.lit_source(self.items.kv, separates=True)
        seg = segment_source(self.path)
        keys = "(?:" + "|".join(regex.escape(k) for k in sorted(self.keys, key=len, reverse=True)) + ")"
        krule = self.b.add(self.name("path_key"), _rx(r"\s*" + keys + f"(?:{seg}){{1,{MAX_SEGMENTS}}}(?=" + kv + ")"))
        self.lr.path_keys.add(krule)
        kv_rule = self.b.add(self.name("path_kv"), _rx(kv))
        return self.b.add(self.name(f"item_{j}"), _seq(krule, kv_rule, self.value(None, j)))

    def positional(self, key: str | None, j: int) -> str:
        return self.b.add(self.name(f"item_{j}"), self.value(key, j))

    def value(self, key: str | None, j: int) -> str:
        """A value and the item's closing text, alternatives in the reader's order."""
        it, v, b = self.items, self.values, self.b
        prop = self.props.get(key) if key is not None else None
        types = schema_types(prop)
        post = it.item_post.replace(KEY_AGAIN, key) if key is not None else it.item_post.replace(
            KEY_AGAIN, "\x04")
        post_rule = b.add(self.name(f"post_{j}"), _rx(r"\s*" + mk.lit_source(post))) if post.strip() else ""
        alts = []
        s = v.string
        quoted = self.codec.when_opened   # (the quoted codec of a value quoted only when needed)
        # an array written as its values side by side (``tags "a" "b"``): read whole, up to its end, as the
        # reader reads it, not as one quoted string
        side_by_side = v.nested == "own" and v.array is not None and not (v.array.open + v.array.item_pre).strip() \
            and "array" in types and "string" not in types
        if quoted.self_delimiting and (s.pre + quoted.opener).strip() and not side_by_side:
            after = s.post
            q = quoted.opener
            if (not types or types & {"object", "array"}) and q and v.nested_pre == s.pre + q and \
                    v.nested_post.startswith(q) and v.nested_post[len(q):]:
                after = v.nested_post[len(q):]   # (an array or object in the string's quotes: ``'...'::jsonb``)
            src = regex.escape(s.pre) + "(?:" + quoted.regex_source() + ")" + \
                ("(?:" + regex.escape(after) + ")?" if after else "")
            alts.append(self._value_rule(f"q_{j}", _rx(r"\s*" + src), key, "quoted", prop))
        if not v.nested_codec and v.nested != "own" and (not types or types & {"object", "array"}):
            pre = _rx(r"\s*" + regex.escape(v.nested_pre)) if v.nested_pre else "ws"
            npost = _rx(regex.escape(v.nested_post)) + "?" if v.nested_post else ""
            alts.append(self._value_rule(f"n_{j}", _seq(pre, "pj_object / pj_array" if not npost else
                                                        f"(pj_object / pj_array) {npost}"), key, "nested", prop))
        own = self.own_source() if v.nested == "own" and (not types or types & {"object", "array"}) else ""
        if own:
            alts.append(self._value_rule(f"o_{j}", _rx(r"\s*" + regex.escape(v.nested_pre) + own +
                                                       regex.escape(v.nested_post)), key, "raw", prop))
        streaming = streams(v, prop) if key is not None else False
        s_post = s.post if streaming else ""
        # (a word its codec delimits with no opener of its own, ``'a # b'``: nothing ends it inside)
        word = "(?>" + self.codec.regex_source() + ")?" if self.codec.self_delimiting and not self.codec.opener else ""
        # (through the last white space the codec writes for a character, as the reader reads it)
        kept = "|".join(regex.escape(w) for w in self.codec.white_words) if not (s_post + post).strip() else ""
        kept = r"(?:\s*?(?:" + kept + "))*" if kept else ""
        raw = self._value_rule(f"r_{j}", _rx(r"[ \t]*" + word + r"(?s:.*?)" + kept + "(?=" + self.raw_end(post, s_post) + ")"),
                               key, "raw", prop)
        own_post = bool((s_post + post).strip())
        openers = own_openers(v) if not types or types & {"object", "array"} else ()
        if own_post and openers:
            # an own-syntax container whose items open with a tag (``<lang>``): its items are not the next
            # item, the value runs to its item's closing text (as the reader reads it)
            src = r"\s*(?=" + "|".join(regex.escape(o) for o in openers) + r")(?s:.*?)(?=" + \
                self.raw_end(post, s_post, own=True) + ")"
            raw = f"{self._value_rule(f'ow_{j}', _rx(src), key, 'raw', prop)} / {raw}"
        if own_post:
            spost = b.add(self.name(f"spost_{j}"), _rx(r"\s*" + mk.lit_source(s_post + post, lead_optional=True)))
            alts.append(_seq(f"({raw})", spost + "?"))
        else:
            alts.append(raw)
        quoted_or_nested = [a for a in alts[:-1]]
        out = [_seq(a, post_rule + "?" if post_rule else "") for a in quoted_or_nested] + [alts[-1]]
        return "(" + " / ".join(out) + ")"

    def own_source(self, kind: str = "") -> str:
        """An array or object in the encoding's own syntax, as one regex: its containers' opening and
        closing texts balanced (a recursive group), quoted strings whole, anything else between
        (`kind`: a container of that kind only at the top)."""
        v = self.values
        boxes = [(x.open.strip(), x.close.strip()) for x in (v.object, v.array) if x is not None]
        top = [(x.open.strip(), x.close.strip()) for x in ((v.object if kind == "object" else v.array),)
               if x is not None] if kind else boxes
        if kind and not all(o and c for o, c in top):
            return ""
        boxes = [(o, c) for o, c in boxes if o and c]
        if not boxes:
            return ""
        marks = "|".join(regex.escape(t) for o, c in boxes for t in (o, c))
        quoted = self.codec.when_opened
        string = "(?:" + quoted.regex_source() + ")|" if quoted.self_delimiting and quoted.opener else ""
        inner = "(?:" + string + "(?&own)|(?!" + marks + ")(?s:.))*?"
        body = "|".join(regex.escape(o) + inner + r"\s*" + regex.escape(c) for o, c in boxes)
        if kind:   # (the group defined, the top container of that kind)
            first = "|".join(regex.escape(o) + inner + r"\s*" + regex.escape(c) for o, c in top)
            return "(?(DEFINE)(?P<own>" + body + "))(?:" + first + ")"
        return "(?P<own>" + body + ")"

    def _value_rule(self, what: str, body: str, key: str | None, how: ItemHow, prop: Any) -> str:
        name = self.b.add(self.name(what), body)
        self.lr.values[name] = LayoutValue(key, how, self.values, prop)
        return name

    def heads(self, kv: str, ahead: bool) -> str:
        """An item's opening text, a declared key and the key/value separator `kv` (`ahead`: the key and
        separator as a lookahead), in the items' frame or a frame of its own."""
        it = self.items
        alts = [(mk.lit_source(it.item_pre), kv)]
        alts += [(mk.lit_source(f.item_pre), mk.lit_source(f.kv)) for f in it.frames
                 if (f.item_pre, f.kv) != (it.item_pre, it.kv)]
        out = [pre + ("(?=" + self.keyalt + k + ")" if ahead else self.keyalt + k) for pre, k in alts]
        return out[0] if len(out) == 1 else "(?:" + "|".join(out) + ")"

    def raw_end(self, post: str, s_post: str, own: bool = False) -> str:
        """Where a raw value ends, as the reader finds it (`own`: an own-syntax container, which the
        next item's start does not end)."""
        it = self.items
        kv = mk.lit_source(it.kv)
        if self.by_key and it.null_item.strip():
            kv = "(?:" + kv + "|" + mk.lit_source(it.null_item) + ")"   # (or a null value's item: ``<KEY/>``)
        if (s_post + post).strip():
            src = mk.post_source(s_post + post, self.codec.never_contains, self.codec.may_contain)
            if self.by_key and it.item_pre.strip() and it.kv.strip() and not own:
                src += r"|\s*" + mk.lit_source(it.sep) + self.heads(kv, False)
            return src
        alts = []
        nxt = mk.lit_source(post + it.sep, lead_optional=True, separates=True) + mk.lit_source(it.item_pre)
        if self.by_key:
            alts.append(mk.lit_source(post + it.sep, lead_optional=True, separates=True) + self.heads(kv, True))
        elif nxt:
            alts.append(nxt)
        tail = mk.lit_source(post + it.close, lead_optional=True) if it.close.strip() else ""
        if tail or self.end_src:
            alts.append(tail + ("(?=" + self.end_src + ")" if self.end_src else ""))
        return "|".join(a for a in alts if a) or r"\Z"
