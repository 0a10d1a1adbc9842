"""The patterns a layout's call reader (:mod:`.layout`) matches, compiled once per layout: each literal
piece, a closing literal the model cut short, what ends a name or id hole, how the arguments begin
and a name's tag closed on itself."""

from __future__ import annotations

import functools

import regex

from .. import markers as mk
from ..analysis.layout.model import CallLayout
from ..markers import lit_source
from ..values.spelling import NAME_AGAIN


@functools.lru_cache(maxsize=256)
def _piece_patterns(layout: CallLayout, names: tuple[str, ...]) -> tuple[regex.Pattern[str] | None, ...]:
    """The compiled pattern of each literal piece (None for holes and empty literals), as the engine
    reads it: its tokens in the spellings models also write, a namespace before a declared tool's
    name optional (``lit_source(loose=...)``)."""
    out: list[regex.Pattern[str] | None] = []
    for p in layout.pieces:
        src = lit_source(p.text, separates=True, loose=names) if p.kind == "lit" else ""
        out.append(mk.compile_source(src) if src else None)
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _tokens_optional(text: str) -> regex.Pattern[str] | None:
    """A literal of several marker tokens with each token optional, at least one written: a call's
    trailing literal after the arguments that the model cut short (``</function>`` then text, the
    ``</tool_call>`` left out) or began late (``</tool_call>`` alone after a self-closing tag)."""
    toks = mk.tokens(text)
    if len(toks) < 2:
        return None
    pats = ["(?:" + mk.loose(t) + ")" for t in toks]
    # from any token on (the first written), each later one optional with the white space before it
    alts = [pats[i] + "".join(r"(?:\s*" + p + ")?" for p in pats[i + 1:]) for i in range(len(toks))]
    return mk.compile_source(r"\s*(?:" + "|".join("(?:" + a + ")" for a in alts) + ")")


@functools.lru_cache(maxsize=512)
def _hole_ends(layout: CallLayout, i: int, names: tuple[str, ...] = ()) -> tuple[regex.Pattern[str], dict[str, int]] | None:
    """What ends hole ``i``: the literal after it, a later literal past an id hole (a model that
    leaves out ``[CALL_ID]ID``), or the start of the arguments (one that leaves out every literal
    up to them); the piece each alternative goes on with. None when the hole is one word (a hole,
    white space or header fields follow it)."""
    pieces = layout.pieces
    j = i + 1
    if j < len(pieces) and pieces[j].kind == "args" and _args_start(layout):
        # the arguments follow the hole directly: it runs to where they begin (``NAME/key/value``), to a
        # JSON object written for the items, or, when there are none, to the literal after them
        # (``<tool_call>NAME</tool_call>``)
        ahead = [f"(?={_args_start(layout, json_too=True)})"]
        after = pieces[j + 1] if j + 1 < len(pieces) else None
        if after is not None and after.kind == "lit" and after.text.strip():
            ahead.append(f"(?={lit_source(after.text)})")
        return mk.compile_source(f"(?P<e{j}>{'|'.join(ahead)})"), {f"e{j}": j}
    if j >= len(pieces) or pieces[j].kind != "lit" or not pieces[j].text.strip() or \
            pieces[j].text.startswith(mk.HEADER):
        return None
    alts: list[str] = []
    targets: dict[str, int] = {}
    k = j
    while k < len(pieces):
        p = pieces[k]
        if p.kind == "lit" and p.text.strip():
            group = f"e{k}"
            alts.append(f"(?P<{group}>{lit_source(p.text, loose=names)})")
            targets[group] = k
            closed = _self_closing(p.text) if k == j and pieces[i].kind == "name" else None
            if closed is not None:       # the name's tag closed on itself: read on at the literal
                alts.append(f"(?P<s{k}>(?={closed.pattern}))")
                targets[f"s{k}"] = k
        elif p.kind == "args":
            start = _args_start(layout, json_too=True)
            it = layout.args.items
            head = (it.open + it.item_pre).strip() if it is not None else "{"
            # (past the literals between, only where the arguments begin with a text of their own: JSON
            # arguments' ``{``, or items' opening of two characters or more; one punctuation character
            # such as EDN's ``:`` also sits inside those literals)
            if start and (k == j or it is None or len(head) >= 2):
                alts.append(f"(?P<e{k}>(?={start}))")
                targets[f"e{k}"] = k
            break
        elif p.kind != "id" and k > j:
            break
        k += 1
    return mk.compile_source("|".join(alts)), targets


def _args_start_text(layout: CallLayout) -> str:
    """The text items begin with ("" for other arguments)."""
    a = layout.args
    return (a.items.open + a.items.item_pre).strip() if a.kind == "items" and a.items is not None else ""


@functools.lru_cache(maxsize=256)
def _self_closing(after_name: str) -> regex.Pattern[str] | None:
    """The literal after a name that closes the tag the name is written in (``">``), written
    self-closing (``"/>``); None when it is no such literal."""
    core = after_name.strip()
    if not core.endswith(">") or core.endswith("/>") or "<" in core or len(core) > 8:
        return None
    return mk.compile_source(mk.pattern(core[:-1]) + r"\s*/>")


def _args_start(layout: CallLayout, json_too: bool = False) -> str:
    """How the arguments begin (a JSON object's brace, the first item's literal), "" when unknown;
    ``json_too``: items may also be written as a JSON object (white space before its brace)."""
    a = layout.args
    if a.kind != "items" or a.items is None:
        return r"\{" if not a.codec else ""
    head = (a.items.open + a.items.item_pre).strip()
    if not head:
        return ""
    # (the call's name written in the items' literals: any name there)
    src = r"[\w.\-]{1,64}".join(mk.pattern(part) if part.strip() else "" for part in head.split(NAME_AGAIN))
    if json_too and not a.codec and not head.startswith("{"):
        return "(?:" + src + r"|\s*\{)"
    return src
