"""GBNF for one tool call written as a learned layout (:class:`~autoparser.analysis.layout.CallLayout`).

The call's pieces in order: literals as markers are spelled (bounded white space between their
pieces, digit runs flexible, the end-of-turn markers a last literal ends with optional), the
name as the tool's literal name (``name_again`` too: the template writes the same name), the id
as bounded text up to the literal after it, and the arguments:

* a JSON object per the tool's schema (``json``) or a Python literal (``python``); written inside a
  string codec, the schema's rules copied through the codec (:mod:`.escaped`), or any string the
  codec writes when the codec cannot be copied through (a ``repr`` chooses its quotes by the value);
* items (:mod:`.spelled`): the schema's properties as the layout writes them, each value spelled
  by its type; inside a string codec, the items' rules copied through it.

The literal after the arguments is printed with them: a value that does not delimit itself runs
through it.
"""

from __future__ import annotations

from typing import Any, Protocol

from autoparser import markers as mk
from autoparser.analysis.layout.model import CallLayout, Piece
from autoparser.analysis.model import ToolFormat
from autoparser.values.codecs import Codec
from autoparser.values.spelling import Values, with_name

from .codecs import codec_string_rule
from .escaped import codec_copy, frame
from .gbnf import GbnfBuilder, char_class, literal, sanitize_name
from .pieces import WS_MAX
from .pyvalue import LiteralConverter
from .schema import _Converter, strict_objects
from .spelled import Speller
from .spelled_base import Follow, cut


class _Grammar(Protocol):
    """What a call layout's rules take from the request's grammar under construction
    (:class:`autoparser.grammar.request._Grammar`)."""

    b: GbnfBuilder
    ws: str
    t: ToolFormat
    stops: list[str]

    @property
    def plan(self) -> Any: ...

    def lead(self, role: str, m: str) -> str: ...

    def marker(self, role: str, m: str) -> str: ...

    def split_stop(self, m: str) -> tuple[str, str]: ...

__all__ = ["hole_ws", "layout_call", "name_index"]

ID_MAX = 64
_ID_EXCLUDED = " \t\r\n<>[]{}\"'|,=()`"        # never inside an id written between literals
_WORD_EXCLUDED = _ID_EXCLUDED + ":"           # an id with no literal after it (one word)


def name_index(layout: CallLayout) -> int:
    """Where the call's name is among its pieces."""
    return next(i for i, p in enumerate(layout.pieces) if p.kind == "name")


def hole_ws(b: GbnfBuilder) -> str:
    """White space before a name or id hole: spaces and tabs (the reader skips those only: a line
    break there ends a hole read as one word)."""
    return b.rule("hole-ws", f"[ \\t]{{0,{WS_MAX}}}")


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def layout_call(g: _Grammar, tool: str, start: int = 0, spell: bool = False) -> str:
    """One call of `tool` from piece `start` on (the opener printed the pieces before it), inline;
    ``spell``: its name one character class at a time."""
    layout = g.t.layout
    assert layout is not None
    pieces = layout.pieces
    last = len(pieces) - 1
    parts: list[str] = []
    i = start
    while i <= last:
        p = pieces[i]
        nxt = pieces[i + 1] if i < last else None
        if p.kind == "lit":
            hole = nxt is not None and nxt.kind in ("name", "id")
            word = i > 0 and pieces[i - 1].kind in ("name", "name_again", "id") and bool(p.text) and not p.text.strip()
            spaced = i > 0 and pieces[i - 1].kind == "id" and pieces[i - 1].codec == "raw"
            parts.append(_literal(g, p.text, final=i == last, hole=hole, word=word, spaced=spaced))
        elif p.kind in ("name", "name_again"):
            text = Codec.from_spec(p.codec).encode(tool) if p.codec != "raw" else tool
            parts.append(" ".join(char_class([c]) for c in text) if spell and p.kind == "name" else literal(text))
        elif p.kind == "id":
            opens = not g.t.call_start.strip() and all(not q.text.strip() for q in pieces[:i])
            parts.append(_id(g, p, nxt, opens))
        else:
            follow = Follow()
            hole_after = ""
            if nxt is not None and nxt.kind == "lit":
                follow = _follow(g, nxt.text, final=i + 1 == last)
                i += 1     # printed with the arguments
                if i < last and pieces[i + 1].kind in ("name", "id") and nxt.text[-1:].isspace():
                    hole_after = hole_ws(g.b)   # (the white space it ends with comes before the hole)
            parts.append(_args(g, layout, tool, follow))
            if hole_after:
                parts.append(hole_after)
        i += 1
    return _join(*parts)


def _literal(g: _Grammar, text: str, final: bool, hole: bool = False, word: bool = False,
             spaced: bool = False) -> str:
    """A literal piece; a last one's trailing end-of-turn markers are optional (the server stops there);
    ``hole``: a name or id follows it; ``word``: it is white space after one, which the reader then
    reads as one word (``get_weather location=``: some white space ends it); ``spaced``: it follows an
    id and begins with white space, which then ends the id (`` call `` after ``#call00001``)."""
    ws = hole_ws(g.b) if hole else g.ws
    if word:
        # (the call's last piece: the end of the output, or the white space before the next call, ends the word too)
        return ws if final else _ws1(g)
    if not text.strip():
        return ws

    def lead(role: str, m: str) -> str:
        if spaced and text[0].isspace():
            return _join(_ws1(g), g.marker(role, m))
        return g.lead(role, m)

    if not final:   # white space it ends with comes before the next piece
        trailing = text[len(text.rstrip()):]
        if hole and "\n" in trailing:
            # a line break before a name or id: written as the template does (the hole's own white space
            # is spaces and tabs only)
            return _join(lead("layout-lit", text), literal(trailing), ws)
        return _join(lead("layout-lit", text), ws if text[-1].isspace() else "")
    required, stops = g.split_stop(text)
    out = lead("layout-lit", required) if required.strip() else ""
    return _join(out, f"( {g.lead('layout-lit-stop', stops)} )?" if stops.strip() else "")


def _ws1(g: _Grammar) -> str:
    """Some white space (one character or more)."""
    return g.b.rule("ws1", f"[ \\t\\n\\r]{{1,{WS_MAX}}}")


def _follow(g: _Grammar, text: str, final: bool) -> Follow:
    """The literal after the arguments as what follows their last value."""
    if not final:
        return Follow(text)
    required, stops = g.split_stop(text)
    return Follow(required, f"( {g.lead('layout-lit-stop', stops)} )?" if stops.strip() else "")


def _id(g: _Grammar, p: Piece, nxt: Piece | None, opens: bool = False) -> str:
    """The id: bounded text up to the literal after it (its first character never in the id).
    ``opens``: nothing but white space comes before it in the call, so a raw value that ends the call
    before may as well go on where it begins (``celsius\ncall00002,...``): the id is then spelled one
    character at a time, for llguidance's lexer would commit to a many-character id lexeme and
    drop the value going on."""
    if opens and p.codec == "raw":
        after = nxt.text.lstrip() if nxt is not None and nxt.kind == "lit" else ""
        cls = char_class(_ID_EXCLUDED + (_lead_block(after[0]) if after else ""), negate=True)
        return g.b.recursive_rule("call-id-chars", lambda r: f"{cls} {r} | {cls}")
    if p.codec != "raw":
        codec = Codec.from_spec(p.codec)
        if codec.self_delimiting:
            return codec_string_rule(g.b, codec)
    after = nxt.text.lstrip() if nxt is not None and nxt.kind == "lit" else ""
    if not after:
        # (the call's last piece: the separator may come right after it, ``id=call00001;``)
        sep = g.t.separator.strip() if nxt is None else ""
        excluded = _WORD_EXCLUDED + (_lead_block(sep[0]) if sep and sep[0] not in _WORD_EXCLUDED else "")
        return g.b.rule("call-id-word", f"{char_class(excluded, negate=True)}{{1,{ID_MAX}}}")
    if nxt is not None and nxt.text[:1].isspace():   # white space ends the id: the literal's text may begin it
        return g.b.rule("call-id-spaced", f"{char_class(_ID_EXCLUDED, negate=True)}{{1,{ID_MAX}}}")
    return g.b.rule("call-id", f"{char_class(_ID_EXCLUDED + _lead_block(after[0]), negate=True)}{{1,{ID_MAX}}}")


def _lead_block(c: str) -> str:
    """`c` and, when it takes several bytes in UTF-8, every character that starts with the same byte:
    llguidance lexes the id as one lexeme and backs up one byte only, so the id must end at the first
    byte of the literal after it (``#call01⟦/call⟧``: ``⟧`` shares ``⟦``'s first two bytes)."""
    lead = c.encode()[0]
    if lead < 0xC0:
        return c
    bits, size = (0x1F, 6) if lead < 0xE0 else (0x0F, 12) if lead < 0xF0 else (0x07, 18)
    low = (lead & bits) << size
    return "".join(map(chr, range(max(low, 0x80), low + (1 << size))))


def _end_text(g: _Grammar) -> str:
    """What a value the call ends with never holds: the section's end, else the next call's start,
    else an end-of-turn marker ("" when none is known)."""
    t = g.t
    for m in (g.split_stop(t.section_end)[0], t.call_start, t.name_prefix, *g.stops):
        if m.strip():
            toks = mk.tokens(m)   # (a token with a digit may be a call's number: ``1. `` then ``2. ``)
            return next((k for k in toks if not any(c.isdigit() for c in k)), toks[0])
    return ""


def _schema(g: _Grammar, tool: str) -> Any:

    return strict_objects(g.plan.schemas[tool])


def _args(g: _Grammar, layout: CallLayout, tool: str, follow: Follow) -> str:
    """The arguments, then `follow`."""
    a = layout.args
    schema = _schema(g, tool)
    name = f"{sanitize_name(tool)}-args"
    codec = Codec.from_spec(a.codec) if a.codec else None
    if a.kind == "items" and a.items is not None:
        values = a.items.values or Values()
        items = with_name(a.items, tool)   # (the call's name written in the items' literals)
        if codec is None:
            speller = Speller(g.b, values, schema, g.ws, end_text=_end_text(g))
            return speller.items_then(items, schema, name, (follow,))
        # inside the codec's string, white space alone between a key and its value is spaces: an escaped
        # line break (``\\n``) would begin like the escaped quote of a value after it (``\\"``) for
        # llguidance's lexer, which does not back off from a lexeme it can go on with
        src = GbnfBuilder()
        ws = src.rule("ws", f"[ \\t\\n\\r]{{0,{WS_MAX}}}")
        root = src.reserve(name)
        speller = Speller(src, values, schema, ws, wrapped=True, kv_ws=src.rule("kv-ws", f"[ ]{{1,{WS_MAX}}}"))
        body = speller.items_then(items, schema, name, (Follow(),))
        # the text always written around the items inside the codec (``"{:k \\"v\\"}"``: ``{`` and ``}``)
        opened = _join(literal(a.inner_open.strip()), ws) if a.inner_open.strip() else ""
        closed = _join(ws, literal(a.inner_close.strip())) if a.inner_close.strip() else ""
        src.define(root, _join(opened, body, closed))
        return _wrapped(g, src, root, codec, name, follow)
    if codec is None:
        return _join(g.ws, _object(g.b, schema, name, a.kind == "python"), _after(g, follow))
    src = GbnfBuilder()
    root = _object(src, schema, name, a.kind == "python")
    return _join(g.ws, _wrapped(g, src, root, codec, name, follow))


def _object(b: GbnfBuilder, schema: Any, name: str, python: bool) -> str:
    conv = LiteralConverter(b, schema) if python else _Converter(b, schema, additional_default=True)
    final = b.reserve(name)
    return b.define(final, " | ".join(conv.alts(schema, final)))


def _wrapped(g: _Grammar, src: GbnfBuilder, root: str, codec: Codec, name: str, follow: Follow) -> str:
    """The text of `src`'s rule `root`, written with the string `codec`, then `follow`."""
    copied = codec_copy(g.b, src, root, codec, f"{name}-{codec.kind}")
    if copied is None:     # the codec cannot be printed through: any string it writes
        if codec.self_delimiting:
            return _join(codec_string_rule(g.b, codec), _after(g, follow))
        head, tail = cut(follow.stop)
        body = codec_string_rule(g.b, codec, until=head, through=True) if head else codec_string_rule(g.b, codec)
        return _join(body, g.lead("layout-lit", tail) if tail.strip() else "", follow.rest)
    opener, closer = frame(codec)
    return _join(literal(opener) if opener else "", copied, literal(closer) if closer else "", _after(g, follow))


def _after(g: _Grammar, follow: Follow) -> str:
    return _join(g.lead("layout-lit", follow.stop) if follow.stop.strip() else "", follow.rest)
