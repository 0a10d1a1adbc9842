"""Where a lazy grammar starts constraining: the call section's trigger (:attr:`.nodes.Calls.trigger`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .. import markers as mk
from ..analysis.model import ToolFormat
from ..markers import definition as dm
from ..plan import ToolPlan
from ..plan.openers import bare_section_opener


@dataclass(frozen=True)
class Trigger:
    """Where a lazy grammar starts constraining (a server's ``grammar_triggers`` entry): a word
    (the opener's first marker piece) or a regex."""

    type: Literal["word", "pattern"]
    value: str


def trigger(tp: ToolPlan) -> Trigger:
    """Where a lazy grammar for ``tp``'s calls starts: the opener's first piece as a word when it
    is a distinctive special token, else a regex a server can search for."""
    t, op = tp.format, tp.opener
    names = "|".join(re.escape(n) for n in tp.allowed)
    if not op.role:
        if t.style == "json":
            if t.json is not None and t.json.name_is_key:
                return Trigger("pattern", r"\{\s*\"(?:" + names + r")\"\s*:")
            # the name prefix as written: the engine's opener adds lookaheads a server's regex may not know
            return Trigger("pattern", mk.pattern(t.name_prefix) or r"\{\s*\"")
        return Trigger("pattern", "(?:" + names + ")" + (r"\s*" + mk.pattern(t.name_suffix)
                                                         if t.name_suffix.strip() else ""))
    first = mk.tokens(op.marker)[0]
    # (punctuation alone, ``--[[``, may also open a comment or the reasoning: not distinctive)
    strong = dm.token_shaped(first) and len(first) >= 4 and not re.search(r"\d|\x03|\x04", first) \
        and any(ch.isalpha() for ch in first)
    if strong and op.role != "call_name" and not bare_section_opener(t):
        return Trigger("word", first)
    value = mk.pattern(op.marker)
    if t.style == "layout" and t.layout is not None and op.role in ("name_prefix", "call_name", "call_start"):
        # a weak marker (``<``, ``[``, ``call ``): the trigger reads on to the call's name
        return Trigger("pattern", value + _layout_head(t, names, skip_first=op.role != "call_start"))
    if bare_section_opener(t):
        head = r"\{\s*[\"']" if t.style == "json" else (
            (mk.pattern(t.call_start) + r"\s*" if t.call_start.strip() else "")
            + (mk.pattern(t.name_prefix) if t.name_prefix.strip() else "") + "(?:" + names + ")")
        value += r"\s*" + head
    return Trigger("pattern", value)


def _layout_head(t: ToolFormat, names: str, skip_first: bool) -> str:
    """Regex for a layout's pieces up to its name (the first one left out when the opener is it):
    literals whitespace-tolerant, an id as a bounded word."""
    assert t.layout is not None
    out = []
    for i, p in enumerate(t.layout.pieces):
        if i == 0 and skip_first and p.kind == "lit":
            continue
        if p.kind == "name":
            out.append(r"\s*(?:" + names + ")")
            break
        if p.kind == "lit":
            out.append(r"\s*" + mk.pattern(p.text) if p.text.strip() else r"\s*")
        else:
            out.append(r"\s*[^\s<>\[\]{}\"'|,=()`]{1,64}?")
    return "".join(out)


__all__ = ["Trigger", "trigger"]
