"""Rich views of an analysis, shared by ``analyze`` and ``debug``."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from ..analysis.layout.words import layout_rows
from ..analysis.model import Analysis, LiteralArgs, TaggedArgs, ToolFormat
from ._checks import undetected
from ._common import WILDCARD_WORDS, show


def marker(text: str) -> Text:
    """A marker as a quoted literal (whitespace visible), or a dim dash when empty."""
    return Text(show(text), style="bold cyan") if text else Text("-", style="dim")


def capabilities_table(analysis: Analysis) -> Table:
    table = Table(title="Capabilities", title_justify="left", show_header=False, box=None, padding=(0, 2))
    caps = analysis.capabilities
    names = [f.name for f in fields(caps)]
    half = (len(names) + 1) // 2
    right_names = [*names[half:], *[""] * (2 * half - len(names))]
    for left, right in zip(names[:half], right_names, strict=True):
        row: list[RenderableType] = []
        for name in (left, right):
            if not name:
                row += ["", ""]
                continue
            ok = getattr(caps, name)
            row += [Text("✓" if ok else "✗", style="green" if ok else "red"), name.replace("_", " ")]
        table.add_row(*row)
    return table


# fields holding a mode or a position rather than rendered text (shown unquoted, defaults hidden)
_ENUMS = {"mode": "none", "style": "none", "scope": "always", "args": "", "id_position": "none"}


def _field_rows(obj: Any, skip: tuple[str, ...] = ()) -> list[tuple[str, RenderableType]]:
    rows: list[tuple[str, RenderableType]] = []
    for f in fields(obj):
        if f.name in skip:
            continue
        value = getattr(obj, f.name)
        label = f.name.replace("_", " ")
        if f.name in _ENUMS:
            if value != _ENUMS[f.name]:
                rows.append((label, Text(str(value))))
        elif isinstance(value, str):
            if value:
                rows.append((label, marker(value)))
        elif isinstance(value, bool):
            if value:
                rows.append((label, Text("yes")))
        elif isinstance(value, dict):
            if value:     # chat template kwargs, in JSON spelling (``enable_thinking=false``)
                rows.append((label, Text(", ".join(f"{k}={json.dumps(v)}" for k, v in value.items()))))
        elif isinstance(value, tuple):
            if value:
                rows.append((label, Text(", ".join(show(v) if isinstance(v, str) else str(v) for v in value),
                                         style="bold cyan")))
        elif isinstance(value, LiteralArgs):
            rows.append((label, Text(literal_words(value))))
        elif value is not None and not isinstance(value, (TaggedArgs,)):
            rows.append((label, Text(str(value))))
    return rows


def literal_words(lit: LiteralArgs) -> str:
    """Literal arguments in plain words: ``NAME(key=value, ...), strings in ' or "``."""
    quotes = " or ".join(q for q in lit.quotes)
    strings = "strings unquoted" if lit.bare_strings else f"strings in {quotes}"
    return f"NAME{lit.open}key{lit.kv_sep}value, ...{lit.close}; {strings}" if lit.open == "(" else \
        f"{lit.open}key{lit.kv_sep}value, ...{lit.close}; {strings}"


def _section(title: str, headline: str, rows: list[tuple[str, RenderableType]], style: str) -> Table:
    table = Table(show_header=False, box=None, padding=(0, 1))
    table.add_column(width=18, style="dim")
    table.add_column()
    table.add_row(Text(title, style="bold"), Text(headline, style=style))
    for label, value in rows:
        table.add_row(f"  {label}", value)
    return table


def _tools_rows(tools: ToolFormat) -> list[tuple[str, RenderableType]]:
    rows = _field_rows(tools, skip=("style", "args", "json", "tagged", "layout"))
    if tools.layout is not None:   # the call's pieces and the spelling of its arguments, in words
        rows += [(label, Text(text)) for label, text in layout_rows(tools.layout)]
    if tools.json is not None:
        layout = tools.json
        rows.append(("json layout", Text(
            f"name at {'.'.join(layout.name_path)}, arguments at {'.'.join(layout.args_path)}"
            + (f", id at {'.'.join(layout.id_path)}" if layout.id_path else "")
            + (", name is the key" if layout.name_is_key else "")
            + (", arguments as a string" if layout.args_as_string else "")
            + (", id after arguments" if layout.id_after_args else ""))))
    if tools.tagged is not None:
        rows += [(f"arg {label}", value) for label, value in _field_rows(tools.tagged)]
    return rows


def wildcard_legend(analysis: Analysis) -> str:
    """What the placeholders in the markers shown stand for (only those that appear)."""
    text = json.dumps(analysis.to_dict(), ensure_ascii=False)
    said = [words for sentinel, words in WILDCARD_WORDS.items() if json.dumps(sentinel)[1:-1] in text]
    return ("in markers: " + "; ".join(said)) if said else ""


def analysis_view(analysis: Analysis, capabilities: bool = True) -> Group:
    """Capabilities, then each format with its markers, end of turn, markers and notes."""
    r, c, t = analysis.reasoning, analysis.content, analysis.tools
    parts: list[RenderableType] = [capabilities_table(analysis), Text("")] if capabilities else []
    parts.append(_section("generation prompt", show(analysis.generation_prompt), [], "cyan"))
    found = "green" if r.mode != "none" else "dim"
    parts.append(_section("reasoning", r.mode, _field_rows(r, skip=("mode",)), found))
    wrapped = bool(c.start or c.end)
    parts.append(_section("content", "wrapped" if wrapped else "plain", _field_rows(c), "green" if wrapped else "dim"))
    parts.append(_section("tool calls", t.style + (f" (arguments: {t.args})" if t.style not in ("none", "layout") else ""),
                          _tools_rows(t) if t.style != "none" else [], "green" if t.style != "none" else "dim"))
    env = analysis.envelope
    if env is not None:   # the turn is one JSON object: which member holds which part
        members: list[tuple[str, RenderableType]] = [(label, Text(show(key))) for label, key in
                   (("reasoning key", env.reasoning_key), ("reply key", env.content_key), ("calls key", env.calls_key))
                   if key]
        parts.append(_section("turn envelope", "one JSON object", members, "green"))
    eot = Text(" ".join(show(m) for m in analysis.end_of_turn) or "-")
    parts.append(_section("end of turn", "", [("markers", eot)], ""))
    parts.append(_section("parser markers", " ".join(analysis.markers()) or "-", [], "bold cyan"))
    if analysis.handler:
        parts.append(_section("handler", analysis.handler, [], "yellow"))
    legend = wildcard_legend(analysis)
    if legend:
        parts.append(Text(legend, style="dim"))
    for note in analysis.notes:
        parts.append(Text(f"note: {note}", style="yellow"))
    problems = undetected(analysis)
    for problem in problems:
        parts.append(Text(f"undetected: {problem}", style="bold red"))
    return Group(*parts)
