"""Analyse a chat template and show how the model writes reasoning, content and tool calls.

The summary lists what the template can render (capabilities), the reasoning, content
and tool-call formats with their markers, and the end-of-turn markers. ``--json``
prints ``analysis.to_dict()`` instead.
"""

from __future__ import annotations

import argparse

from ._common import add_source_arguments, console, print_json, template_from_args

HELP = "analyse a template: capabilities, markers and formats (--json for machines)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print analysis.to_dict() as JSON")


def run(args: argparse.Namespace) -> int:
    tmpl = template_from_args(args)
    analysis = tmpl.analysis
    if args.json:
        print_json(analysis.to_dict())
        return 0
    from rich.panel import Panel

    from ._show import analysis_view

    console().print(Panel(analysis_view(analysis), title=f"[bold]{tmpl.name}[/]", title_align="left",
                          subtitle=f"digest {analysis.digest[:12]}", subtitle_align="right"))
    return 0
