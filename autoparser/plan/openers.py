"""Where the tool calls open in free text (:class:`Opener`, part of a request's :class:`~autoparser.plan.ToolPlan`):
the marker, or a marker-less call's start, and the regexes that find it, for the engine, the PEG and
the GBNF alike; built from the analysed format and the request's tool names."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

from .. import markers as mk
from ..analysis.layout.model import CallLayout, Piece
from ..analysis.model import Analysis, ToolFormat
from ..values.callobj import START_KEYS

OpenerRole = Literal["", "section_start", "call_start", "call_name", "name_prefix"]


@dataclass(frozen=True)
class Opener:
    """Where the tool calls begin in free text.

    ``pattern`` is the whitespace-tolerant regex the engine and the PEG look for (with the
    lookahead that keeps a bare ``[`` from opening calls in prose); ``role`` and ``marker``
    say which marker opens them for the GBNF, ``exact`` is the literal text free content runs
    up to there. A marker-less format (a JSON object, ``NAME(``) has ``role`` "".
    """

    pattern: str = ""
    role: OpenerRole = ""
    marker: str = ""
    exact: str = ""
    loose: str = ""    # the engine's pattern: also a call object written with Python literals ({'name': ...})


def opener(a: Analysis, names: tuple[str, ...]) -> Opener:
    """Where the calls open: the marker (or marker-less start) and the regex that finds it; ``loose``
    is the engine's: markers in the spellings models also write, a call object in another layout."""
    strict = _opener(a, names, python=False)
    loose = _opener(a, names, python=a.tools.style == "json", tolerant=True).pattern
    return dataclasses.replace(strict, loose=loose) if loose != strict.pattern else strict


def _opener(a: Analysis, names: tuple[str, ...], python: bool, tolerant: bool = False) -> Opener:
    t = a.tools

    def pat(marker: str) -> str:
        return mk.loose(marker, names) if tolerant else mk.pattern(marker)
    if t.section_start.strip():
        return Opener(pat(t.section_start) + section_lookahead(t, names), "section_start",
                      t.section_start, _exact(mk.tokens(t.section_start)[0]))
    if t.call_start.strip():
        # the name prefix must follow: "<|channel|>" alone also opens reasoning and content
        named = bool(t.name_prefix.strip()) and t.id_position != "before_name"
        prefix = name_prefix_pattern(t, python) if t.style == "json" or not tolerant else pat(t.name_prefix)
        if tolerant and t.style == "json":   # the engine also reads a call object in another layout
            prefix = "(?:" + prefix + "|" + call_object_start(t, names) + ")"
        ahead = r"(?=\s*" + prefix + ")" if named else ""
        if named and _collides(t.call_start, a):
            both = t.call_start + " " + t.name_prefix
            return Opener(pat(t.call_start) + ahead, "call_name", both,
                          _exact((t.call_start + t.name_prefix).strip()))
        return Opener(pat(t.call_start) + ahead, "call_start", t.call_start,
                      _exact(mk.tokens(t.call_start)[0]))
    if t.style == "json":
        trigger = json_trigger(t, names, python)
        return Opener(trigger + "|" + call_object_start(t, names) if tolerant else trigger)
    if t.style in ("tagged", "layout") and t.name_prefix.strip():
        return Opener(pat(t.name_prefix), "name_prefix", t.name_prefix, _exact(mk.tokens(t.name_prefix)[0]))
    if t.style == "layout" and t.layout is not None and names:
        # no marker before the name (``get_weather(location='Paris')``): a tool's name and what follows it
        after, head = _layout_after_name(t), opening_id(t.layout)
        # a call that opens with its id (``call_1: CALL NAME``) starts there; after that head the
        # name needs no space after it to be a call
        start = call_head_source(head, names) if head else mk.tool_name(names)
        if after.strip():
            return Opener(start + r"\s*" + mk.pattern(after))
        # arguments right after the name (``get_weather|location=Paris``): their first text follows it
        lead = _items_lead(t.layout)
        return Opener(start + (r"(?!\w)" if head else r"(?=" + mk.pattern(lead) + r"|\s)" if lead else r"(?=\s)"))
    if t.style == "tagged" and t.args == "literal" and t.literal is not None and names:
        # no marker at all (``get_weather(location='Paris')``): a tool's name and its opener
        return Opener(mk.tool_name(names) + r"\s*" + re.escape(t.literal.open))
    return Opener()


def call_head_source(head: Sequence[Piece], names: Sequence[str]) -> str:
    """Where a call that opens with its id begins (``\\ncall_1,get_weather,``): the call's pieces
    before its name, then a declared name; literals as written, an id a word that runs to the
    literal after it."""
    out = []
    for i, p in enumerate(head):
        if p.kind == "lit":
            out.append(mk.pattern(p.text) if p.text.strip() else r"\s*")
        else:
            after = next((q.text.strip()[:1] for q in head[i + 1:] if q.kind == "lit" and q.text.strip()), "")
            # the id the call opens with is a word of its own: it does not begin inside a value (``limit=3``)
            first = all(q.kind == "lit" and not q.text.strip() for q in head[:i])
            out.append((r"(?<!\S)" if first else "")
                       + ("[^\\s" + re.escape(after) + "]{1,64}" if after else r"\S{1,64}"))
    return r"\s*".join(out) + r"\s*" + mk.tool_name(names)   # (white space between the pieces, as the GBNF allows)


def opening_id(layout: CallLayout) -> tuple[Piece, ...]:
    """The pieces before the name of a call that opens with its id (white space at most before
    it: ``call_1,get_weather,``), else ()."""
    at = next(i for i, p in enumerate(layout.pieces) if p.kind == "name")
    head = layout.pieces[:at]
    first = next((p.kind for p in head if p.kind != "lit" or p.text.strip()), "")
    return head if first == "id" and all(p.kind in ("lit", "id") for p in head) else ()


def _layout_after_name(t: ToolFormat) -> str:
    """The literal a layout writes right after the call's name ("" when a hole follows it)."""
    assert t.layout is not None
    pieces = t.layout.pieces
    for i, p in enumerate(pieces):
        if p.kind == "name":
            nxt = pieces[i + 1] if i + 1 < len(pieces) else None
            return nxt.text if nxt is not None and nxt.kind == "lit" else ""
    return ""


def _items_lead(lay: CallLayout) -> str:
    """The text key/value items open with when they follow the call's name directly (``|`` of
    ``NAME|K=V``; "" when a literal or another hole comes between, or nothing fixed opens them)."""
    pieces, items = lay.pieces, lay.args.items
    at = next((i for i, p in enumerate(pieces) if p.kind == "name"), -1)
    if items is None or at < 0 or at + 1 >= len(pieces) or pieces[at + 1].kind != "args":
        return ""
    lead = items.open or items.item_pre
    return lead if lead.strip() and not lead.strip()[0].isalnum() else ""


def json_trigger(t: ToolFormat, names: tuple[str, ...], python: bool = False) -> str:
    """The regex that opens a marker-less JSON call (``python``: also written with Python literals)."""
    q = "[\"']" if python else '"'
    if t.json is not None and t.json.name_is_key:
        alts = "|".join(re.escape(n) for n in names) or (r"[^\"']+" if python else r"[^\"]+")
        return r"\{\s*" + q + "(?:" + alts + ")" + q + r"\s*:"
    if names and t.name_prefix.rstrip().endswith(":"):
        # with no marker, only a declared tool's name makes a JSON object a call
        # (a name cut off by the end of the output still opens the call: it is truncated)
        rest = r"[^\"'\n]*\Z" if python else r"[^\"\n]*\Z"
        return name_prefix_pattern(t, python) + "(?=" + q + mk.tool_name(names)[len(r"(?<!\w)"):] + q + \
            "|" + q + rest + ")"
    return name_prefix_pattern(t, python)


def call_object_start(t: ToolFormat, names: tuple[str, ...]) -> str:
    """The start of a JSON call object in any common layout (:mod:`autoparser.values.callobj`): a first
    key that call objects use, or one of the request's tools as the key (``{"get_weather": {``)."""
    lay = t.json
    own = [p[0] for p in ((lay.name_path, lay.args_path, lay.id_path) if lay is not None else ()) if p]
    keys = [k for k in dict.fromkeys([*own, *START_KEYS]) if isinstance(k, str)]
    alts = "|".join(re.escape(k) for k in keys)
    named = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    keyed = r"|\{\s*[\"'](?:" + named + r")[\"']\s*:\s*[{\"]" if named else ""
    return r"\{\s*[\"'](?:" + alts + r")[\"']\s*:" + keyed


def name_prefix_pattern(t: ToolFormat, python: bool = False) -> str:
    """The name prefix as a regex; in a JSON call, whitespace may also sit inside the JSON
    punctuation (``{\\n  "name":``, as indented JSON is written); ``python``: its quotes may also
    be single (a call object written with Python literals, ``{'name': ...}``)."""
    if t.style != "json":
        return mk.pattern(t.name_prefix)
    out = []
    for ch in t.name_prefix.strip():
        if ch.isspace():
            continue
        piece = "[\"']" if python and ch == '"' else re.escape(ch)
        out.append((r"\s*" if ch == ":" else "") + piece + (r"\s*" if ch in "{[:," else ""))
    return "".join(out)


def bare_section_opener(t: ToolFormat) -> bool:
    """A short punctuation-only section start (a bare ``[``) that prose could also contain."""
    s = t.section_start.strip()
    return bool(s) and not any(ch.isalnum() or ch in "<|｜" for ch in s) and len(s) <= 3


def section_lookahead(t: ToolFormat, names: tuple[str, ...]) -> str:
    """A bare ``[`` opens the calls only when a call follows (``[get_weather(``, ``[{"name"``)."""
    if not bare_section_opener(t):
        return ""
    if t.style == "json":
        return r"(?=\s*\{\s*[\"'])"
    if not names:
        return ""
    alts = "|".join(re.escape(n) for n in names)
    return r"(?=\s*" + (mk.pattern(t.call_start) + r"\s*" if t.call_start else "") + \
        (mk.pattern(t.name_prefix) if t.name_prefix.strip() else "") + "(?:" + alts + "))"


def _exact(piece: str) -> str:
    """The first literal run of a marker piece, which free text runs up to: up to a wildcard
    (``to=NAME<|message|>`` gives ``to=``), or after one (``NAME<|invoke|>`` gives ``<|invoke|>``),
    or up to a digit run, which matches any index (``<|calls:2|>`` gives ``<|calls:``)."""
    return next((run for run in re.split(r"[\x03\x04]|\d+", piece) if run), piece)


def opener_inputs(a: Analysis) -> tuple[Hashable, ...]:
    """What :func:`opener` reads of an analysis (part of :attr:`RequestPlan.output_key`: the IR finds
    the format's call marker with it when a request declares no tools)."""
    return (a.tools, a.reasoning.start, a.content.start, a.content.in_tool_turns)


def _collides(call_start: str, a: Analysis) -> bool:
    """The call start's first piece also begins a reasoning or content marker."""
    first = mk.tokens(call_start)[0]
    others = [a.reasoning.start, a.content.start, *a.content.in_tool_turns]
    return any(o.strip().startswith(first) or first.startswith(o.strip()) for o in others if o.strip())


__all__ = ["Opener", "OpenerRole", "bare_section_opener", "call_head_source", "call_object_start", "json_trigger",
           "name_prefix_pattern", "opener", "opener_inputs", "opening_id", "section_lookahead"]
