"""Show how the analysis reads a template, step by step.

Sections: the capabilities; each differential comparison (two renders that differ in
one thing, with the difference highlighted); the resulting markers and modes; the
generated PEG and GBNF for a request with probe tools; a sample parse of rendered
turns (the self-test). --json prints the same sections for machines.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..analysis.layout.words import layout_rows
from ..diff.split import common_prefix_len, common_suffix_len, fix_prefix_end, fix_suffix_start
from ..probes import needles as N
from ..probes.prober import Prober
from ..selftest import PROBE_TOOLS, SelfTestResult
from ..template import ChatTemplate, Request
from ._checks import undetected
from ._common import add_source_arguments, console, print_json, template_from_args
from .grammar import no_grammar_reason

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

HELP = "explain the analysis: comparisons, markers, grammars and a sample parse (--json)"
CONTEXT = 160          # characters of shared text shown around a difference
SAMPLE_ORDER = ("reasoning_tool", "content_tool", "parallel", "tool", "reasoning", "content")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print every section as one JSON object")
    parser.add_argument("--full", action="store_true", help="show whole renders, not just the text near a difference")


# ------------------------------------------------------------------ differential comparisons
@dataclass(frozen=True)
class Comparison:
    name: str
    question: str          # what the comparison asks
    a_label: str
    b_label: str
    a: str | None          # None: the template refused to render this
    b: str | None

    def split(self) -> tuple[str, str, str, str]:
        """(shared prefix, only in A, only in B, shared suffix)."""
        a, b = self.a or "", self.b or ""
        # cut back so that no marker (<...>, [...]) is split between shared and changed text
        p = fix_prefix_end(a, common_prefix_len(a, b))
        s = min(common_suffix_len(a[p:], b[p:]), len(a) - p, len(b) - p)
        if s:
            s = min(len(a) - fix_suffix_start(a, len(a) - s), len(b) - fix_suffix_start(b, len(b) - s))
        return a[:p], a[p:len(a) - s], b[p:len(b) - s], a[len(a) - s:]

    def to_dict(self) -> dict[str, Any]:
        prefix, a_only, b_only, suffix = self.split()
        return {"name": self.name, "question": self.question, "a_label": self.a_label, "b_label": self.b_label,
                "a": self.a, "b": self.b, "prefix": prefix, "a_only": a_only, "b_only": b_only,
                "suffix": suffix, "rendered": self.a is not None and self.b is not None}


def _call(i: int, n_args: int = 1, as_string: bool = False) -> dict[str, Any]:
    args = {N.ARG1: N.VAL1} if n_args == 1 else {N.ARG1: N.VAL1, N.ARG2: N.VAL2}
    return N.call(N.ID1 if i == 1 else N.ID2, N.FN1 if i == 1 else N.FN2, args, as_string)


def comparisons(tmpl: ChatTemplate) -> list[Comparison]:
    """The render pairs the analysis reads, with the same needles and history."""
    a = tmpl.analysis
    pr = Prober(tmpl.renderer, {"enable_thinking": True})
    history = pr.history
    content = {"role": "assistant", "content": N.ASSISTANT}
    with_reasoning = {**content, "reasoning_content": N.REASONING}

    def calls(*cs: dict[str, Any]) -> dict[str, Any]:
        return {"role": "assistant", "content": "", "tool_calls": list(cs)}

    out = [
        Comparison("generation prompt", "what add_generation_prompt appends",
                   "history", "history + generation prompt",
                   pr.render(history, None, False), pr.render(history, None, True)),
        Comparison("assistant turn", "how an answer is written (content markers, end of turn)",
                   "history + generation prompt", "history + assistant answer",
                   pr.prompt(), pr.full(content)),
        Comparison("reasoning", "the markers around reasoning_content",
                   "answer", "answer with reasoning_content", pr.turn(content), pr.turn(with_reasoning)),
    ]
    on = dict(a.reasoning.on_kwargs) or {"enable_thinking": True}
    off = dict(a.reasoning.off_kwargs) or dict.fromkeys(on, False)
    out.append(Comparison("thinking toggle", "what switching thinking off changes in the prompt",
                          f"prompt with {on}", f"prompt with {off}", pr.prompt(**on), pr.prompt(**off)))
    empty = {"role": "assistant", "content": ""}
    out += [
        Comparison("tool list", "where the tool definitions go", "prompt without tools", "prompt with tools",
                   pr.prompt(), pr.prompt(tools=N.TOOLS)),
        Comparison("tool call", "the markers around one call", "empty turn", "one call",
                   pr.turn(empty, tools=N.TOOLS), pr.turn(calls(_call(1)), tools=N.TOOLS)),
        Comparison("second call", "the separator between calls", "one call", "two calls",
                   pr.turn(calls(_call(1)), tools=N.TOOLS), pr.turn(calls(_call(1), _call(2)), tools=N.TOOLS)),
        Comparison("second argument", "how arguments are written", "one argument", "two arguments",
                   pr.turn(calls(_call(1)), tools=N.TOOLS), pr.turn(calls(_call(1, 2)), tools=N.TOOLS)),
        Comparison("string arguments", "arguments given as a JSON string instead of an object",
                   "arguments as an object", "arguments as a JSON string",
                   pr.turn(calls(_call(1)), tools=N.TOOLS), pr.turn(calls(_call(1, 1, True)), tools=N.TOOLS)),
    ]
    return out


# ------------------------------------------------------------------ grammars
def grammars(tmpl: ChatTemplate) -> dict[str, Any]:
    """PEG and GBNF for a request with the probe tools (when the template has tools)."""
    tools = PROBE_TOOLS if tmpl.analysis.tools.style != "none" else None
    out: dict[str, Any] = {"tools": [t["function"]["name"] for t in tools or []], "peg": None, "gbnf": None,
                           "triggers": [], "preserved_tokens": [], "messages": []}
    req = tmpl.apply([{"role": "user", "content": "What is the weather in Paris?"}], tools=tools)
    out["preserved_tokens"] = list(req.preserved_tokens)
    getters: tuple[tuple[str, Callable[[Request], Any]], ...] = (
        ("peg", lambda r: r.peg.text), ("gbnf", lambda r: r.gbnf), ("triggers", lambda r: r.grammar_triggers))
    for key, getter in getters:
        try:
            out[key] = getter(req)
        except Exception as e:  # debugging goes on: show the failure
            out["messages"].append(f"{key}: building it raised {type(e).__name__}: {e}")
    if out["gbnf"] is None and not any(m.startswith("gbnf") for m in out["messages"]):
        out["messages"].append(f"gbnf: {no_grammar_reason(req)}")
    return out


# ------------------------------------------------------------------ report
def collect(tmpl: ChatTemplate) -> dict[str, Any]:
    analysis = tmpl.analysis
    sample = tmpl.self_test
    return {
        "template": tmpl.name,
        "source": {"bos_token": tmpl.renderer.bos_token, "eos_token": tmpl.renderer.eos_token,
                   "special_tokens": None if tmpl.special_tokens is None else len(tmpl.special_tokens)},
        "capabilities": dataclasses.asdict(analysis.capabilities),
        "comparisons": [c.to_dict() for c in comparisons(tmpl)],
        "analysis": analysis.to_dict(),
        "markers": list(analysis.markers()),
        "layout": dict(layout_rows(analysis.tools.layout)) if analysis.tools.layout is not None else None,
        "undetected": undetected(analysis),
        "grammar": grammars(tmpl),
        "sample": sample.to_dict(),
    }


def run(args: argparse.Namespace) -> int:
    tmpl = template_from_args(args)
    if args.json:
        print_json(collect(tmpl))
        return 0
    _print(tmpl, args.full)
    return 0


def _clip(text: str, keep: int, side: str) -> str:
    if len(text) <= keep:
        return text
    return "…" + text[-keep:] if side == "left" else text[:keep] + "…"


def _diff_text(prefix: str, only: str, suffix: str, style: str, full: bool) -> Text:
    from rich.text import Text

    t = Text()
    t.append(prefix if full else _clip(prefix, CONTEXT, "left"), style="dim")
    t.append(only if only else "∅", style=style)
    t.append(suffix if full else _clip(suffix, CONTEXT, "right"), style="dim")
    return t


def _print(tmpl: ChatTemplate, full: bool) -> None:
    from rich.panel import Panel
    from rich.rule import Rule
    from rich.syntax import Syntax
    from rich.table import Table
    from rich.text import Text

    from ._show import analysis_view, capabilities_table

    out = console()
    analysis = tmpl.analysis
    out.print(Rule(f"[bold]autoparser debug: {tmpl.name}"))
    out.print(capabilities_table(analysis))

    out.print(Rule("differential comparisons"))
    out.print(Text("Each pair renders the same conversation twice, changing one thing. Shared text is dim; "
                   "red is only in A, green only in B. Needles: " + ", ".join(
                       [N.ASSISTANT, N.REASONING, N.FN1, N.ARG1, N.VAL1]), style="dim"))
    for c in comparisons(tmpl):
        title = f"[bold]{c.name}[/]: {c.question}"
        if c.a is None or c.b is None:
            which = " and ".join(lbl for lbl, v in ((c.a_label, c.a), (c.b_label, c.b)) if v is None)
            out.print(Panel(Text(f"the template refuses to render: {which}", style="yellow"), title=title,
                            title_align="left"))
            continue
        prefix, a_only, b_only, suffix = c.split()
        if not a_only and not b_only:
            out.print(Panel(Text("no difference: both render the same text", style="yellow"), title=title,
                            title_align="left"))
            continue
        grid = Table.grid(padding=(0, 1))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column()
        grid.add_row(f"A {c.a_label}", _diff_text(prefix, a_only, suffix, "bold red on grey11", full))
        grid.add_row(f"B {c.b_label}", _diff_text(prefix, b_only, suffix, "bold green on grey11", full))
        out.print(Panel(grid, title=title, title_align="left"))

    out.print(Rule("markers and modes"))
    out.print(analysis_view(analysis, capabilities=False))

    out.print(Rule("grammars"))
    g = grammars(tmpl)
    if g["tools"]:
        out.print(Text(f"request: one user turn, tools {', '.join(g['tools'])}, tool_choice auto", style="dim"))
    for key, lexer in (("peg", "peg"), ("gbnf", "ebnf")):
        if g[key]:
            out.print(Panel(Syntax(g[key], lexer, word_wrap=True, theme="ansi_dark"), title=key.upper(),
                            title_align="left"))
    if g["triggers"]:
        out.print(Text("triggers: " + ", ".join(map(str, g["triggers"]))))
    for message in g["messages"]:
        out.print(Text(message, style="yellow"))

    out.print(Rule("sample parse"))
    _print_sample(out, tmpl.self_test)


def _print_sample(out: Console, result: SelfTestResult) -> None:
    import json

    from rich.panel import Panel
    from rich.syntax import Syntax
    from rich.table import Table
    from rich.text import Text

    table = Table(title="self-test", title_justify="left")
    table.add_column("scenario")
    table.add_column("status")
    table.add_column("why", overflow="fold")
    for s in result.scenarios:
        style = {"pass": "green", "fail": "bold red", "n/a": "dim"}[s.status]
        table.add_row(s.name, Text(s.status, style=style), s.why)
    out.print(table)
    tried = [result.get(n) for n in SAMPLE_ORDER]
    shown = [s for s in tried if s is not None and s.status == "fail"][:1] or \
        [s for s in tried if s is not None and s.status == "pass"][:1]
    if not shown:
        out.print(Text("no scenario renders through this template", style="yellow"))
        return
    s = shown[0]
    out.print(Panel(Text(s.text), title=f"[bold]{s.name}[/]: text after the generation prompt "
                                        f"(end of turn cut){' ' + json.dumps(s.kwargs) if s.kwargs else ''}",
                    title_align="left"))
    out.print(Panel(Syntax(json.dumps(s.got, indent=2, ensure_ascii=False), "json", theme="ansi_dark",
                           word_wrap=True), title="req.parse(text).to_dict()", title_align="left"))
    if s.status == "fail":
        out.print(Text(f"expected: {json.dumps(s.expected, ensure_ascii=False)}", style="red"))
