"""Where a lazy grammar starts constraining: the call section's trigger (:attr:`.nodes.Calls.trigger`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .. import markers as mk
from ..markers import definition as dm
from ..plan import ToolPlan, bare_section_opener


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
    strong = dm.token_shaped(first) and len(first) >= 4 and not re.search(r"\d|\x03|\x04", first)
    if strong and op.role != "call_name" and not bare_section_opener(t):
        return Trigger("word", first)
    value = mk.pattern(op.marker)
    if bare_section_opener(t):
        head = r"\{\s*[\"']" if t.style == "json" else (
            (mk.pattern(t.call_start) + r"\s*" if t.call_start.strip() else "")
            + (mk.pattern(t.name_prefix) if t.name_prefix.strip() else "") + "(?:" + names + ")")
        value += r"\s*" + head
    return Trigger("pattern", value)


__all__ = ["Trigger", "trigger"]
