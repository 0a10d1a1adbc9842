"""GBNF for argument values spelled as a layout's :class:`~autoparser.values.spelling.Values` say,
and for :class:`~autoparser.values.spelling.Items` (a call's arguments, or the encoding's own
arrays and objects).

Each value is printed together with what follows it (:class:`Follow`): a value that does not
delimit itself (a string a codec writes bare, raw text) runs through the exact text that comes
next (``", unit="``, ``"</location>"``, ``")"``) as :meth:`GbnfBuilder.string_until` does; a value
that does (a quoted string, a number, ``true``) is followed by that text with white space
tolerated. Typed by the tool's JSON schema:

* strings: the slot's text around the codec's encoding (enum members: their encodings);
* integers and numbers: the slot's text around a JSON number; booleans and null: their texts;
* unions, ``$ref``, ``anyOf``: alternatives, as :mod:`.schema` reads them;
* arrays and objects: the ``nested`` serializer's text (JSON per schema, Python literals, JSON
  with leaves spelled as here, or the encoding's own containers, recursively, bounded), inside
  the nested codec when there is one (:mod:`.escaped`).

Items come in the schema's declared order (or sorted by key, for templates that sort), required
ones present, optional ones possibly left out; positional items in the same order; an object with
no declared properties takes any keys.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from autoparser.values.codecs import Codec
from autoparser.values.spelling import KEY_AGAIN, Items, Values, schema_types
from autoparser.values.written import column_headers
from autoparser.values.yamlblock import is_block

from ..markers import NAME_WILDCARD as WILD_NAME
from . import spelled_paths as paths
from .codecs import codec_string_rule
from .escaped import codec_copy, frame
from .gbnf import ANY_CHAR, GbnfBuilder, literal, sanitize_name
from .pieces import WS_MAX, piece_expr
from .pyvalue import LiteralConverter
from .raw_until import raw_until
from .schema import _Converter, _group, _infer_type, _is_any, _unique, json_rule
from .spelled_base import Follow, Next, SpelledConverter, _choice, _join, cut, number_expr
from .yamlblock import block_rule

_WORDS = re.compile(r"\w+|\W")
_NAME_CHAR = "[A-Za-z0-9_.-]"   # a name written again (markers.NAME_WILDCARD), one character

__all__ = ["Speller"]

MAX_OWN_DEPTH = 4      # containers in the encoding's own syntax, nested (deeper: scalars only)
_KEY = "[A-Za-z0-9_.$@-]{1,64}"   # a key no schema names


class Speller:
    """Prints values and items spelled as `values` say on builder `b` (`ws`: the white space
    rule; `root`: the schema local ``$ref`` s resolve against; `wrapped`: the text is inside a
    string codec, so a value with nothing after it runs to the end of that text; `end_text`:
    otherwise, such a value never holds it: what follows the calls, or the next call's start)."""

    def __init__(self, b: GbnfBuilder, values: Values, root: Any, ws: str, wrapped: bool = False,
                 end_text: str = "", kv_ws: str = "") -> None:
        self.b = b
        self.kv_ws = kv_ws            # white space alone between a key and its value, when not any (ws1)
        self.values = values
        self.root = root
        self.ws = ws
        self.wrapped = wrapped
        self.end_text = end_text     # what follows a call whose last value nothing else ends
        self.conv = _Converter(b, root, additional_default=True)
        self.string = Codec.from_spec(values.string.codec)
        self.path_kv: str | None = None   # items with path keys (:mod:`.spelled_paths`): the call's key/value text
        self.path_depth = 0

    # ---------------------------------------------------------------- literals
    def lit(self, text: str) -> str:
        """`text` with white space tolerated before and inside it (a blank text: white space)."""
        if not text:
            return ""
        if not text.strip():
            return self.ws
        # white space it ends with: a value that delimits itself may follow it (one that does not
        # takes that white space as its own text)
        return _join(self.ws, self.pieces(text), self.ws if text[-1].isspace() else "")

    def lead_in(self, head: str, key: str, items: Items, depth: int) -> str:
        """The text before an item's value: `head` (the separator or opener and ``item_pre``), then,
        keyed, the `key` text and ``kv``. A key and value separated by white space alone are separated
        by some (a key runs to white space). Inside a call's arguments (`depth` 0) the reader takes
        the white space `head` and ``kv`` end with at most once (more is the key's or the value's own
        text: `` = "a"`` is not ``=  "a"``); deeper, the encoding's own containers are read with white
        space around their literals tolerated."""
        kv = items.kv if items.keyed else ""
        ws_kv = bool(kv) and not kv.strip()
        kv_ws = self.kv_ws or self.ws1()
        if depth:
            return _join(self.lit(head + key + ("" if ws_kv else kv)), kv_ws if ws_kv else "")
        # (the reader skips white space before `head`; before ``kv``, only when ``kv`` begins with some)
        return _join(self.exact_trail(head, True), literal(key) if key else "",
                     kv_ws if ws_kv else self.exact_trail(kv, kv[:1].isspace()))

    def exact_trail(self, text: str, lead: bool) -> str:
        """`text` with white space tolerated inside it, before it when `lead`, the white space it ends
        with written at most once (a blank text: white space)."""
        if not text.strip():
            return self.ws if text else ""
        trail = text[len(text.rstrip()):]
        return _join(self.ws if lead else "", self.pieces(text), f"{literal(trail)}?" if trail else "")

    def closing(self, text: str) -> str:
        """An item's closing text after a value the reader reads up to it: the white space it begins
        and ends with written at most once (more before it is the value's own text)."""
        if not text.strip():
            return self.ws if text else ""
        lead = text[:len(text) - len(text.lstrip())]
        opt = "" if self.lead_required(text) else "?"
        return _join(f"{literal(lead)}{opt}" if lead else "", self.exact_trail(text.lstrip(), False))

    def lead_required(self, text: str) -> bool:
        """Whether the reader ends a value at the closing `text` only with the white space it begins
        with (:func:`autoparser.markers.post_source`): a value never holds that white space while it
        may hold the rest (``\\n:`` after a value whose line breaks are escaped is not a bare ``:``)."""
        lead, core = text[:len(text) - len(text.lstrip())], text.strip()
        codec = self.string
        return bool(lead) and all(c in codec.never_contains for c in lead) and all(codec.may_contain(c) for c in core)

    def ws1(self) -> str:
        return self.b.rule("ws1", f"[ \\t\\n\\r]{{1,{WS_MAX}}}")

    def empty(self, items: Items, nexts: Next, depth: int) -> str:
        """No item: nothing for a call's arguments (or the text it writes then: ``|``), the container's
        own brackets deeper (``{}``)."""
        none = self.lit(items.open + items.close) if depth else self.lit(items.empty) if items.empty else ""
        return _join(none, self.after(nexts))

    def pieces(self, text: str) -> str:
        """`text`'s white-space-split pieces; a name written again (``\\x04``: a key, or the call's id
        in a row that repeats it) is a rule of its own (inline, llguidance lexes it with the literal
        after it as one lexeme, which then fails to go on)."""
        def piece(p: str) -> str:
            chunks = p.split(WILD_NAME)
            if len(chunks) == 1:
                return piece_expr(p)
            # (one character at a time: a call that opens with its id may begin there too)
            name = self.b.recursive_rule("any-name", lambda r: f"{_NAME_CHAR} {r} | {_NAME_CHAR}", key="any-name")
            # the text around it in words and single signs, the lexemes a call that opens with its id
            # is printed with (``|`` ``get_weather`` ``|``), which a row writing the call again competes with
            parts: list[str] = []
            for i, chunk in enumerate(chunks):
                parts += ([name] if i else []) + [piece_expr(w) for w in _WORDS.findall(chunk)]
            return " ".join(parts)
        return f" {self.ws} ".join(piece(p) for p in text.split())

    def after(self, nexts: Next) -> str:
        """What follows a value that delimits itself."""
        return _choice([_join(self.lit(f.stop), f.rest) for f in nexts])

    def bare_const(self, values: list[Any]) -> bool:
        """String constants a codec writes bare that never holds white space (percent-encoding): the
        reader takes white space after one as its text, so what follows comes right after it."""
        never = self.string.never_contains
        return not self.string.self_delimiting and " " in never and "\n" in never and \
            all(isinstance(v, str) for v in values)

    def after_const(self, values: list[Any], nexts: Next) -> str:
        if not self.bare_const(values):
            return self.after(nexts)
        return _choice([_join(literal(f.stop) if f.stop else "", f.rest) for f in nexts])

    def through(self, codec: Codec, f: Follow, post: str = "") -> str:
        """A value `codec` writes bare, then its slot's closing text `post`, then `f`."""
        head, tail = cut(post + f.stop)
        if head:
            body = codec_string_rule(self.b, codec, until=head, through=True)
        elif self.end_text and not self.wrapped:
            body = codec_string_rule(self.b, codec, until=self.end_text)
        else:
            body = self._any_text()
        return _join(body, _join(self.ws, self.pieces(tail)) if tail.strip() else "", f.rest)

    def open_value(self, codec: Codec, nexts: Next, post: str = "", forbid: tuple[str, ...] = ()) -> str:
        """A value `codec` writes bare, then `post`, then one of `nexts`. Raw text may hold any
        character: it ends at the first text of a next item (never holding one of `forbid`, the
        starts of other items) or, anywhere, at the end (:func:`raw_until`)."""
        if codec.kind == "raw" and (len(nexts) > 1 or forbid or not all(f.first for f in nexts)):
            stops = []
            for f in nexts:
                head, tail = cut(post + f.stop)
                if not head:
                    break
                stops.append((head, _join(_join(self.ws, self.pieces(tail)) if tail.strip() else "", f.rest), f.first))
            else:
                banned = tuple(dict.fromkeys(h for h in (cut(post + t)[0] for t in forbid) if h))
                return raw_until(self.b, tuple(stops), banned)
        return _group(_unique([self.through(codec, f, post) for f in nexts]))

    def _any_text(self) -> str:
        return self.b.recursive_rule("any-text", lambda r: f"| {ANY_CHAR} {r}", key=("any-text",))

    # ---------------------------------------------------------------- values
    def then(self, schema: Any, name: str, nexts: Next, depth: int = 0, forbid: tuple[str, ...] = ()) -> list[str]:
        """Alternatives: a value of `schema`, then one of `nexts`."""
        schema = self.conv.deref(schema)
        if _is_any(schema) or not isinstance(schema, dict):
            return [self.any_then(nexts, depth, forbid)]
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return _unique([*self.then(rest, name, nexts, depth, forbid), _join(literal(self.values.null), self.after(nexts))])
        if "const" in schema or isinstance(schema.get("enum"), list):
            values = [schema["const"]] if "const" in schema else schema["enum"]
            return [_join(_group(_unique([self.const(v) for v in values])), self.after_const(values, nexts))]
        branches = self.conv.branches(schema)
        if branches is not None:
            return _unique([a for i, s in enumerate(branches) for a in self.then(s, f"{name}-{i}", nexts, depth, forbid)])
        kind = schema.get("type") or _infer_type(schema)
        if isinstance(kind, list):
            return _unique([a for t in kind for a in self.then({**schema, "type": t}, f"{name}-{t}", nexts, depth, forbid)])
        return self.typed(kind, schema, name, nexts, depth, forbid)

    def typed(self, kind: Any, schema: dict[str, Any], name: str, nexts: Next, depth: int,
              forbid: tuple[str, ...]) -> list[str]:
        v = self.values
        if kind == "string":
            return [self.string_then(nexts, forbid)]
        if kind in ("integer", "number"):
            return [_join(number_expr(self.b, v, kind), self.after(nexts))]
        if kind == "boolean":
            return [_join(_group(_unique([literal(v.true), literal(v.false)])), self.after(nexts))]
        if kind == "null":
            return [_join(literal(v.null), self.after(nexts))]
        if kind in ("object", "array"):
            return [self.nested_then(schema, kind, name, nexts, depth)]
        return [self.any_then(nexts, depth, forbid)]

    def string_then(self, nexts: Next, forbid: tuple[str, ...] = ()) -> str:
        s = self.values.string
        pre = literal(s.pre) if s.pre else ""
        if self.string.self_delimiting:
            body = codec_string_rule(self.b, self.string)
            return _join(pre, body, literal(s.post) if s.post else "", self.after(nexts))
        return _join(pre, self.open_value(self.string, nexts, s.post, forbid))

    def const(self, value: Any) -> str:
        v = self.values
        if isinstance(value, str):
            return literal(v.string.pre + self.string.encode(value) + v.string.post)
        if value is None or isinstance(value, bool):
            return literal(v.null if value is None else v.true if value else v.false)
        if isinstance(value, (int, float)):
            slot = v.integer if isinstance(value, int) and v.integer is not None else v.number
            return literal(slot.pre + json.dumps(value) + slot.post)
        kind = "object" if isinstance(value, dict) else "array"   # a constant container: any of its type
        return self.nested_value({"type": kind}, kind, "const", (Follow(),), 0)

    def any_then(self, nexts: Next, depth: int, forbid: tuple[str, ...] = ()) -> str:
        """Any value in this spelling, then one of `nexts`."""
        def make() -> str:
            v = self.values
            alts = [self.string_then(nexts, forbid), _join(number_expr(self.b, v, "number"), self.after(nexts)),
                    _join(_group(_unique([literal(v.true), literal(v.false), literal(v.null)])), self.after(nexts))]
            if v.nested != "own" or depth < MAX_OWN_DEPTH:
                for kind in ("object", "array"):
                    alts.append(self.nested_then({"type": kind}, kind, f"any-{kind}", nexts, depth))
            return self.b.rule("any-spelled", " | ".join(_unique(alts)))
        return self.b.cached(("any-then", nexts, depth, forbid, self.values, self.wrapped), make)

    # ---------------------------------------------------------------- arrays and objects
    def nested_then(self, schema: dict[str, Any], kind: str, name: str, nexts: Next, depth: int) -> str:
        v = self.values
        if v.nested == "own" and not v.nested_codec and not v.nested_pre and not v.nested_post:
            return self.own_then(schema, kind, name, nexts, depth)
        value = self.nested_value(schema, kind, name, nexts, depth)
        if value.startswith("open:"):
            return value[len("open:"):]
        return _join(value, self.after(nexts))

    def nested_value(self, schema: dict[str, Any], kind: str, name: str, nexts: Next, depth: int) -> str:
        """An array or object as ``nested`` writes it, with its text around (no follow), or
        ``"open:"`` + the value and `nexts` when its codec cannot be printed through."""
        v = self.values
        if not v.nested_codec:
            inner = self._nested_inner(self.b, schema, kind, name, depth)
            return _join(literal(v.nested_pre) if v.nested_pre else "", inner,
                         literal(v.nested_post) if v.nested_post else "")
        codec = Codec.from_spec(v.nested_codec)
        src = GbnfBuilder()
        root = src.reserve(f"{name}-nested")
        src.define(root, self._nested_inner(src, schema, kind, name, depth))
        copied = codec_copy(self.b, src, root, codec, sanitize_name(f"{name}-{codec.kind}"))
        pre = literal(v.nested_pre) if v.nested_pre else ""
        post = literal(v.nested_post) if v.nested_post else ""
        quoted = codec.when_opened
        if copied is None and quoted is not codec and quoted.self_delimiting:
            # a codec that quotes only when needed: the value quoted (JSON holds a quote or a separator
            # whenever it holds more than empty brackets), or the empty brackets it leaves bare
            copied = codec_copy(self.b, src, root, quoted, sanitize_name(f"{name}-{quoted.kind}"))
            if copied is not None:
                opener, closer = frame(quoted)
                bare = [literal(t) for t in ("{}", "[]") if codec.encode(t) == t and t[0] == "{[" [kind == "array"]]
                body = _choice([_join(literal(opener) if opener else "", copied, literal(closer) if closer else ""),
                                *bare])
                return _join(pre, body, post)
        if copied is None:
            if codec.self_delimiting:
                return _join(pre, codec_string_rule(self.b, codec), post)
            return "open:" + _join(pre, self.open_value(codec, nexts, v.nested_post))
        opener, closer = frame(codec)
        return _join(pre, literal(opener) if opener else "", copied, literal(closer) if closer else "", post)

    def _nested_inner(self, b: GbnfBuilder, schema: dict[str, Any], kind: str, name: str, depth: int) -> str:
        v = self.values
        if is_block(v.nested):
            return b.rule(f"{name}-{kind}", block_rule(self, b, schema, kind, name))
        if v.nested == "own":
            sub = Speller(b, v, self.root, b.rule("ws", "[ \\t\\n\\r]{0,32}"), wrapped=True)
            return sub.own_then(schema, kind, name, (Follow(),), depth)
        if v.nested == "python":
            conv: _Converter = LiteralConverter(b, self.root)
        elif v.nested == "spelled":
            conv = SpelledConverter(b, self.root, v)
        else:
            conv = _Converter(b, self.root, additional_default=True)
        return b.rule(f"{name}-{kind}", " | ".join(conv.alts(schema, f"{name}-{kind}")))

    def own_then(self, schema: dict[str, Any], kind: str, name: str, nexts: Next, depth: int) -> str:
        """An array or object in the encoding's own syntax, then one of `nexts`."""
        v = self.values
        items = v.object if kind == "object" else v.array
        if items is None or depth >= MAX_OWN_DEPTH:
            return _join(json_rule(self.b, "object" if kind == "object" else "array"), self.after(nexts))
        if kind == "array":
            item = schema.get("items")
            return self.repeated(items, item if isinstance(item, dict) else {}, f"{name}-item", nexts, depth + 1)
        return self.items_then(items, schema, name, nexts, depth + 1)

    # ---------------------------------------------------------------- items
    def key_text(self, items: Items, key: str) -> str:
        k = items.key
        return k.pre + Codec.from_spec(k.codec).encode(key) + k.post

    def items_then(self, items: Items, schema: Any, name: str, nexts: Next, depth: int = 0) -> str:
        """Items for an object of `schema` (positional: its properties' values in order), then one of `nexts`."""
        schema = self.conv.deref(schema)
        if not isinstance(schema, dict):
            schema = {}
        merged = self.conv.branches(schema)
        if merged is not None and len(merged) == 1 and isinstance(merged[0], dict):
            schema = merged[0]
        props = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        keys = [k for k in props if isinstance(k, str)] + [k for k in required if k not in props]
        extra = schema.get("additionalProperties", True)
        if not keys:
            if extra is False:
                return self.after(nexts)
            return self.repeated(items, extra if isinstance(extra, dict) else {}, f"{name}-any", nexts, depth)
        if items.columns:
            return self.columns(items, keys, props, set(required), name, nexts, depth)
        orders = [keys]
        if items.keyed and sorted(keys) != keys:    # templates that print arguments with |dictsort
            orders.append(sorted(keys))
        alts = [self.ordered(items, order, props, set(required), f"{name}-{i}" if i else name, nexts, depth)
                for i, order in enumerate(orders)]
        return _group(_unique(alts))

    def columns(self, items: Items, keys: list[str], props: dict[str, Any], required: set[str], name: str,
                nexts: Next, depth: int) -> str:
        """Items written as columns: per header (:func:`~autoparser.values.written.column_headers`),
        that header row, then its values in its order; no header at all when nothing is required."""
        row = replace(items, open="", keyed=False, columns=False)
        alts = [self.empty(items, nexts, depth)] if not required else []
        for h, header in enumerate(column_headers(keys, required)):
            text = items.open + items.key_sep.join(self.key_text(items, k) for k in header)
            values = self.ordered(row, header, props, set(header), f"{name}-h{h}", nexts, depth)
            alts.append(_join(self.lit(text), self.row_break(items.kv), values))
        return _group(_unique(alts))

    def row_break(self, text: str) -> str:
        """What ends a header row, as :func:`autoparser.markers.row_break_source` reads it: a line break
        written as white space alone is one line break (spaces around it); anything else its text."""
        if text.strip(" \t") == "\n":
            if self.wrapped:   # (inside a codec's string: one escaped line break, a lexeme of its own)
                return literal("\n")
            return self.b.rule("row-break", f'[ \\t]{{0,{WS_MAX}}} "\\r"? "\\n" [ \\t]{{0,{WS_MAX}}}')
        return self.lit(text) if text.strip() else self.ws1()

    def is_open(self, schema: Any) -> bool:
        """Whether a value of `schema` may be a string this spelling does not delimit (it then runs
        through what follows it)."""
        schema = self.conv.deref(schema)
        if self.string.self_delimiting:
            return False
        if not isinstance(schema, dict) or _is_any(schema):
            return True
        if "const" in schema or isinstance(schema.get("enum"), list):   # (a string constant in a bare codec)
            return self.bare_const([schema["const"]] if "const" in schema else schema["enum"])
        types = schema_types(schema)
        return not types or "string" in types

    def ordered(self, items: Items, order: list[str], props: dict[str, Any], required: set[str], name: str,
                nexts: Next, depth: int, first_head: str | None = None) -> str:
        """Items in `order`: required ones present, optional ones possibly left out.

        After a value that delimits itself the rest is a chain (each optional item present or
        not, then the end), printed inline so that no named rule is made only of terminals (one
        llguidance lexeme, which would outrun the shorter lexemes of another branch); a value
        that does not delimit itself runs through the start of the item that follows it or the
        end (:meth:`open_value`), in a rule of its own.
        """
        n = len(order)
        keys = [self.key_text(items, k) if items.keyed else "" for k in order]
        # (an argument that may be written as items with path keys: its key, then the value or the paths)
        pathed = [not depth and paths.pathed(self, items, props.get(k, {})) for k in order]
        pre = [items.item_pre + (keys[m] + ("" if pathed[m] else items.kv) if items.keyed else "") for m in range(n)]
        post = [items.item_post.replace(KEY_AGAIN, k) for k in order]
        labels = [f"{name}-{sanitize_name(k)}" for k in order]
        is_open = [pathed[m] or self.is_open(props.get(k, {})) for m, k in enumerate(order)]
        bare = replace(items, kv="")
        # a null value written as an item of its own shape (``<KEY/>``): its head, where the schema allows null
        as_null = replace(items, kv=items.null_item)
        nullable = [bool(items.keyed and items.null_item.strip() and self.null_ok(props.get(k, {}))) for k in order]
        chain: list[str] = [""] * (n + 1)      # after a present item, the items from m on and the end
        chain[n] = _choice([_join(self.lit(items.close + f.stop), f.rest) for f in nexts])
        # values of a type written in a frame of their own (``<KEY>`` ... ``</KEY>``): per item, (the text
        # after the item's opening, its key and the frame's separator, the container and the frame's closing
        # text); only such a frame where the schema allows no other type
        framed = [self.framed(items, order[m], keys[m], props.get(order[m], {}), labels[m], depth)
                  if first_head is None and not pathed[m] else [] for m in range(n)]
        only = [bool(framed[m]) and self.only_framed(items, props.get(order[m], {})) for m in range(n)]
        # between a value and the next item: some white space where the items are separated by white
        # space alone (the reader ends a value it reads up to what follows it there)
        between = items.item_post + items.sep
        gap = self.ws1() if not depth and between and not between.strip() else ""
        item: list[str] = [""] * n             # item m's value and everything after it
        # item m in a frame of its own and everything after it: a rule (the frame's value opens it with rules
        # of the container's items, so it is no one lexeme), written once however many texts lead to it
        framed_rest: list[list[tuple[str, str]]] = [[] for _ in range(n)]
        for m in range(n - 1, -1, -1):
            framed_rest[m] = [(head, self.b.rule(f"{labels[m]}-framed-{i}", _join(value, chain[m + 1])))
                              for i, (head, value) in enumerate(framed[m])]
            prop = props.get(order[m], {})
            if is_open[m]:
                # a value closed by text of its own ends at that text, the white space it begins with
                # optional (the reader takes it when present, else the value keeps it)
                own = self.values.string.post
                closed = bool((own + post[m]).strip())
                end = post[m].lstrip() if closed and not own.strip() and not self.lead_required(post[m]) else post[m]
                follows: list[Follow] = []
                for j in range(m + 1, n):
                    if not only[j]:
                        follows.append(Follow(end + items.sep + pre[j], item[j]))
                    follows += [Follow(end + items.sep + head, rest) for head, rest in framed_rest[j]]
                    if nullable[j]:
                        follows.append(Follow(end + items.sep + items.item_pre + keys[j] + items.null_item, chain[j + 1]))
                    if order[j] in required:
                        break
                else:
                    follows += [Follow(end + items.close + f.stop, f.rest, first=False) for f in nexts]
                    if not depth and items.close and not items.close.strip():
                        # (white space closing the arguments: the end of the output may leave it out)
                        follows += [Follow(end + f.stop, f.rest, first=False) for f in nexts]
                if depth and end.strip():
                    follows = [self.through_closing(end, follows)]
                taken = {f.stop for f in follows}
                # a raw value never holds another item's start, nor its own closing text: the reader
                # would end it there
                forbid = tuple(dict.fromkeys(t for t in (post[m] + items.sep + p for p in pre) if t not in taken)) \
                    if items.keyed else ()
                if closed:   # (the white space around it is optional to the reader)
                    forbid = (end.rstrip(), *forbid)
                if pathed[m]:
                    body = paths.path_item(self, items, keys[m], prop, labels[m], tuple(follows), forbid)
                else:
                    body = " | ".join(_unique(self.then(prop, labels[m], tuple(follows), depth, forbid)))
                item[m] = self.b.rule(f"{labels[m]}-item", body)
                present = _join(gap, self.lead_in(items.sep + items.item_pre, keys[m], bare if pathed[m] else items,
                                                  depth), item[m])
                alts = [] if only[m] else [present]
                alts += [_join(gap, self.lit(items.sep + head) if depth else self.exact_trail(items.sep + head, True),
                               rest) for head, rest in framed_rest[m]]
                if nullable[m]:
                    alts.append(_join(gap, self.lead_in(items.sep + items.item_pre, keys[m], as_null, depth),
                                      chain[m + 1]))
                chain[m] = _choice(alts if order[m] in required else [*alts, chain[m + 1]])
            else:
                value = _group(_unique(self.then(prop, labels[m], (Follow(),), depth)))
                # (a value the reader reads up to its item's closing text keeps white space before it)
                closing = self.closing(post[m]) if not depth else self.lit(post[m])
                item[m] = _join(value, closing, chain[m + 1])
                present = _join(gap, self.lead_in(items.sep + items.item_pre, keys[m], items, depth), value, closing)
                if framed[m]:
                    present = _group(_unique(([] if only[m] else [present]) + [
                        _join(gap, self.lit(items.sep + head) if depth else self.exact_trail(items.sep + head, True), fv)
                        for head, fv in framed[m]]))
                if nullable[m]:
                    present = _group([present, _join(gap, self.lead_in(items.sep + items.item_pre, keys[m], as_null,
                                                                       depth))])
                chain[m] = _join(present if order[m] in required else f"( {present} )?", chain[m + 1])
        first = self.empty(items, nexts, depth)
        heads: list[str] = []
        for m in range(n - 1, -1, -1):
            lead = self.lead_in(items.open + items.item_pre, keys[m], bare if pathed[m] else items, depth) \
                if first_head is None else _join(literal(first_head) if first_head else "", literal(keys[m]),
                                                 "" if pathed[m] else self.exact_trail(items.kv, False))
            present = _join(lead, item[m])
            alts = [] if only[m] else [present]
            alts += [_join(self.lit(items.open + head) if depth else self.exact_trail(items.open + head, True),
                           rest) for head, rest in framed_rest[m]]
            if nullable[m] and first_head is None:
                alts.append(_join(self.lead_in(items.open + items.item_pre, keys[m], as_null, depth), chain[m + 1]))
            first = _choice(alts) if order[m] in required else _choice([*alts, first])
            if first_head is not None:   # (path items after their parent's key: one at least)
                heads.insert(0, present)
                if order[m] in required:
                    heads[1:] = []
        return _group(heads) if first_head is not None and heads else first

    def framed(self, items: Items, key: str, key_text: str, prop: Any, label: str, depth: int) -> list[tuple[str, str]]:
        """Item `key` in each frame of its own its schema allows (:class:`~autoparser.values.written.Frame`):
        (the frame's opening text, the key and its separator; the container of the frame's kind in the
        encoding's own syntax, then the frame's closing text)."""
        out = []
        for f in items.frames if items.keyed and self.values.nested == "own" else ():
            schema = self.kind_schema(prop, f.kind)
            if schema is None:
                continue
            post = f.item_post.replace(KEY_AGAIN, key)
            out.append((f.item_pre + key_text + f.kv, self.framed_value(schema, f.kind, f"{label}-{f.kind}", post, depth)))
        return out

    def framed_value(self, schema: dict[str, Any], kind: str, name: str, post: str, depth: int) -> str:
        """A container of `kind` and `schema` in the encoding's own syntax, then a frame's closing text
        `post` (one rule per such value: any container of a kind once per depth)."""
        def make() -> str:
            return self.b.rule(name, self.own_then(schema, kind, name, (Follow(post, ""),), depth))
        if schema == {"type": kind}:
            return self.b.cached(("framed", kind, post, depth, self.values, self.wrapped), make)
        return make()

    def kind_schema(self, prop: Any, kind: str) -> dict[str, Any] | None:
        """`prop` as a schema of JSON type `kind` only (any schema: any such value), None when it declares
        no such type."""
        schema = self.conv.deref(prop)
        if not isinstance(schema, dict) or _is_any(schema):
            return {"type": kind}
        if kind not in schema_types(schema):
            return None
        return schema if schema_types(schema) == {kind} else {**schema, "type": kind}

    def only_framed(self, items: Items, prop: Any) -> bool:
        """A value of `prop` is always written in a frame of its own (its schema's only type has one)."""
        types = schema_types(self.conv.deref(prop))
        return len(types) == 1 and any(f.kind in types for f in items.frames)

    def through_closing(self, end: str, follows: list[Follow]) -> Follow:
        """`follows`, each beginning with a value's closing text `end`, as one: the value runs through
        `end`, then what each adds. In the encoding's own containers the value ends at its first closing
        text (as the reader reads them), and the closing text alone is one lexeme: a stop that begins a
        longer one (``</item>`` and ``</item><item>``) would be outrun by it in llguidance's lexer."""
        rests = [_join(self.lit(f.stop[len(end):]), f.rest) for f in follows if f.stop.startswith(end)]
        return Follow(end, _choice(rests))

    def null_ok(self, schema: Any) -> bool:
        """Whether a value of `schema` may be null (any, when it does not say)."""
        schema = self.conv.deref(schema)
        if not isinstance(schema, dict) or _is_any(schema) or schema.get("nullable") is True:
            return True
        types = schema_types(schema)
        return not types or "null" in types

    def repeated(self, items: Items, value: Any, name: str, nexts: Next, depth: int) -> str:
        """Any number of items, each a value of schema `value` (keyed: under any key), then one of `nexts`."""
        key = _join(literal(items.key.pre) if items.key.pre else "", _KEY,
                    literal(items.key.post) if items.key.post else "") if items.keyed else ""
        head_text = items.item_pre
        kv = self.lead_in("", "", items, depth) if items.keyed else ""
        post = items.item_post.replace(KEY_AGAIN, "\x04")     # the key again: any name there
        # a null value written as an item of its own shape (``<KEY/>``): after a key, that text or ``kv`` and a value
        after_key = self.b.reserve(f"{sanitize_name(name)}-key") \
            if items.keyed and items.null_item.strip() and self.null_ok(value) else ""

        # items in a frame of their own (``<KEY>`` ... ``</KEY>``): the frame's text around a container of its
        # kind, then what follows an item (`after`)
        frames = [f for f in items.frames if items.keyed and self.values.nested == "own"]
        after = self.b.reserve(f"{sanitize_name(name)}-after") if frames else ""
        framed: list[tuple[str, str]] = []   # (the frame's opening text, its separator, value and what follows)

        def body(r: str) -> str:
            for f in frames if not framed else ():
                fkv = self.lead_in("", "", replace(items, kv=f.kv), depth)
                fval = self.framed_value({"type": f.kind}, f.kind, f"any-{f.kind}-framed",
                                         f.item_post.replace(KEY_AGAIN, "\x04"), depth)
                framed.append((f.item_pre, _join(key, fkv, fval, after)))
            more = Follow(post + items.sep + head_text, _join(key, after_key or _join(kv, r)))
            more_framed = [Follow(post + items.sep + pre, rest) for pre, rest in framed]
            ends = [Follow(post + items.close + f.stop, f.rest, first=False) for f in nexts]
            follows = [self.through_closing(post, [more, *more_framed, *ends])] if depth and post.strip() else \
                [more, *more_framed, *ends]
            return " | ".join(_unique(self.then(value, name, tuple(follows), depth)))
        each = self.b.recursive_rule(f"{sanitize_name(name)}-rep", body)
        if after:
            self.b.define(after, _choice([_join(self.lit(items.sep + head_text), key, after_key or _join(kv, each)),
                                          *(_join(self.lit(items.sep + pre), rest) for pre, rest in framed),
                                          *(_join(self.lit(items.close + f.stop), f.rest) for f in nexts)]))
        if after_key:
            null_next = _choice([_join(self.lit(items.sep + head_text), key, after_key),
                                 *(_join(self.lit(items.close + f.stop), f.rest) for f in nexts)])
            self.b.define(after_key, " | ".join(_unique([_join(kv, each),
                                                         _join(self.lit(items.null_item), null_next)])))
        opener = self.lit(items.open + head_text) if items.keyed else self.lead_in(items.open + head_text, "", items, depth)
        return _choice([_join(opener, key, after_key or _join(kv, each)),
                        *(_join(self.lit(items.open + pre), rest) for pre, rest in framed), self.empty(items, nexts, depth)])

