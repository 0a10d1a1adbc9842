"""GBNF rules for values written with a value codec (``autoparser.values.codecs``).

The rule is printed from the codec's own description of its encodings (its ``forms``), the same
one its ``regex_source`` is printed from. A value that is not self-delimiting ends where the
layout's next literal (`until`) starts, so its rule also keeps that literal out: raw text is
:meth:`GbnfBuilder.until`; another codec that may write every character of `until` gets a
product of its items with the literal's KMP automaton (items it cannot track, such as a
repetition inside an item that may write a character of `until`, are left out: the rule then
accepts a subset of the values, never a value the reader would cut short).
"""

from __future__ import annotations

from autoparser.values.codecs import Codec
from autoparser.values.codecs.lang import Alt, Cat, Chars, Lit, Node, Star, may_write

from .gbnf import ANY_CHAR, GbnfBuilder, char_class, literal

__all__ = ["codec_const", "codec_string_rule"]


def _class(ch: Chars) -> str:
    return ANY_CHAR if ch.negate and not ch.chars else char_class(ch.chars, negate=ch.negate)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _expr(b: GbnfBuilder, node: Node) -> str:
    """A GBNF expression for `node` (a repetition becomes a right-recursive rule)."""
    if isinstance(node, Lit):
        return literal(node.text) if node.text else ""
    if isinstance(node, Chars):
        return _class(node)
    if isinstance(node, Cat):
        return _join(*(_expr(b, n) for n in node.items))
    if isinstance(node, Alt):
        return "( " + " | ".join(_expr(b, n) for n in node.items) + " )"
    return _star(b, _expr(b, node.item), "codec-rep")


def _star(b: GbnfBuilder, item: str, name: str) -> str:
    """A rule matching `item` repeated, possibly zero times (right recursion)."""
    return b.recursive_rule(name, lambda n: f"| {item} {n}", key=("codec-star", item))


def _items(b: GbnfBuilder, items: tuple[Node, ...]) -> str:
    return _expr(b, items[0]) if len(items) == 1 else _expr(b, Alt(items))


def _plain_rule(b: GbnfBuilder, codec: Codec) -> str:
    """Any encoded value: the forms, each opener (items)* closer."""
    def make() -> str:
        alts = []
        for form in codec.forms:
            item = _items(b, form.items)
            rep = _star(b, item, f"codec-{codec.kind}-chars")
            body = _join(item, rep) if form.min1 else rep
            alts.append(_join(literal(form.opener) if form.opener else "", body,
                              literal(form.closer) if form.closer else ""))
        return b.rule(f"codec-{codec.kind}", " | ".join(alts))
    return b.cached(("codec", codec.spec), make)


def _kmp(until: str, state: int, c: str) -> int:
    """KMP state after `c`, from `state` matched characters of `until`."""
    seen = until[:state] + c
    k = len(seen)
    while k and not seen.endswith(until[:k]):
        k -= 1
    return k


def _walk(until: str, state: int, text: str) -> int:
    """KMP state after `text`; len(until) as soon as `until` is complete."""
    for c in text:
        state = _kmp(until, state, c) if c in until else 0
        if state == len(until):
            return state
    return state


def _product_rule(b: GbnfBuilder, codec: Codec, until: str, through: bool,
                  form_items: tuple[Node, ...] | None = None) -> str:
    """The codec's items (`form_items`, else its first form's) in a sequence that never holds
    `until` (then `until`, with `through`)."""
    items = codec.forms[0].items if form_items is None else form_items
    m, marks = len(until), sorted(set(until))

    def make() -> str:
        kind = "through" if through else "until"
        names = [b.reserve(f"codec-{codec.kind}-{kind}")]
        names += [b.reserve(f"{names[0]}-{k}") for k in range(1, m)]
        for k, name in enumerate(names):
            alts = [] if through else [""]
            if through and _walk(until, k, until[:-1]) < m:
                alts.append(literal(until))
            for item in items:
                alts += _moves(b, item, until, k, marks, names)
            b.define(name, " | ".join(alts))
        return names[0]
    return b.cached(("codec-product", codec.spec, until, through, form_items is None), make)


_MAX_EXPR = 4000    # an item whose split by automaton state grows past this is left out


def _split(b: GbnfBuilder, node: Node, until: str, k: int, marks: list[str]) -> dict[int, str] | None:
    """`node` read from KMP state `k`: an expression for each state it may end in (paths that
    complete `until` are left out); None when it cannot be followed (a repetition)."""
    m = len(until)
    if not any(may_write(node, c) for c in marks):
        if isinstance(node, Star):
            return None
        return {k: ""} if isinstance(node, Cat) and not node.items else {0: _expr(b, node)}
    if isinstance(node, Lit):
        nxt = _walk(until, k, node.text)
        return {} if nxt == m else {nxt: literal(node.text)}
    if isinstance(node, Chars):
        to: dict[int, set[str]] = {}
        for c in marks:
            if node.matches(c):
                to.setdefault(_kmp(until, k, c), set()).add(c)
        elsewhere = {c for j, cs in to.items() if j for c in cs}
        out = {j: char_class(cs) for j, cs in to.items() if 0 < j < m}
        rest = Chars(node.chars | elsewhere, True) if node.negate else Chars(node.chars - elsewhere)
        if rest.negate or rest.chars:
            out[0] = _class(rest)
        return out
    if isinstance(node, Star):
        return None
    alts: dict[int, list[str]] = {}
    if isinstance(node, Alt):
        for n in node.items:
            part = _split(b, n, until, k, marks)
            if part is None:
                return None
            for j, e in part.items():
                alts.setdefault(j, []).append(e)
    else:
        states = {k: [""]}
        for n in node.items:
            after: dict[int, list[str]] = {}
            for j, prefix in states.items():
                part = _split(b, n, until, j, marks)
                if part is None:
                    return None
                for t, e in part.items():
                    after.setdefault(t, []).append(_join(_alt(prefix), e))
            states = after
        alts = states
    out = {j: _alt(es) for j, es in alts.items()}
    return None if sum(map(len, out.values())) > _MAX_EXPR else out


def _alt(exprs: list[str]) -> str:
    exprs = list(dict.fromkeys(exprs))
    return exprs[0] if len(exprs) == 1 else "( " + " | ".join(exprs) + " )"


def _moves(b: GbnfBuilder, item: Node, until: str, k: int, marks: list[str], names: list[str]) -> list[str]:
    """The alternatives of state `k` that start with `item`."""
    split = _split(b, item, until, k, marks)
    return [_join(e, names[j]) for j, e in sorted((split or {}).items()) if e]


def codec_string_rule(b: GbnfBuilder, codec: Codec, until: str = "", through: bool = False) -> str:
    """A rule matching any value `codec` writes.

    For a codec that is not self-delimiting, `until` is the literal the layout writes next: the
    value never holds it (with `through`, the rule goes on through `until`, at its first
    occurrence, as :meth:`GbnfBuilder.string_until`). A self-delimiting value ends by itself.
    """
    if codec.delimits_when_opened and until:
        # quoted only when needed: a quoted value (it ends by itself), or a bare one up to `until`
        quoted = _plain_rule(b, codec.when_opened)
        if through:
            quoted = b.rule(f"{quoted}-then", f"{quoted} {literal(until)}")
        bare_items = codec.forms[-1].items
        if not all(any(may_write(n, c) for n in bare_items) for c in until):
            bare = _star(b, _items(b, bare_items), f"codec-{codec.kind}-bare")
            bare = b.rule(f"codec-{codec.kind}-bare-then", f"{bare} {literal(until)}") if through else bare
        else:
            bare = _product_rule(b, codec, until, through, bare_items)
        return b.rule(f"codec-{codec.kind}-value", f"{quoted} | {bare}")
    if codec.self_delimiting or not until or not all(codec.may_contain(c) for c in until) \
            or _written_through(codec, until):
        rule = _plain_rule(b, codec)
        return b.rule(f"{rule}-then", f"{rule} {literal(until)}") if through and until else rule
    if codec.kind == "raw":
        return b.string_until(until) if through else b.until(until)
    return _product_rule(b, codec, until, through)


def _written_through(codec: Codec, until: str) -> bool:
    """Whether the codec writes a character as `until` and more (a folded line break ``⏎\t`` before
    the item's ``⏎``): such a value is not one that never holds `until`; it is any value, then `until`
    (the grammar's ambiguity, as the reader's lookahead, tells them apart)."""
    if until.strip():
        return False    # (only white space: a value ends at text it never holds, ``&`` before ``&amp;``)
    w = codec.encode(until[0])
    return w != until[0] and len(w) > len(until) and w.startswith(until)


def codec_const(codec: Codec, s: str) -> str:
    """A GBNF expression for the fixed string `s` as `codec` writes it (an enum value)."""
    return literal(codec.encode(s))
