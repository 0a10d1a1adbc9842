"""Print the GBNF grammar that constrains a model's output for one request.

The grammar covers the tool calls for --tools (and, with --tool-choice required or a
function name, forces them); it is lazy when tool calls are optional: the triggers
(--json shows them) say where constrained decoding starts.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ._common import add_source_arguments, print_json
from .parse import add_request_arguments, build_request

HELP = "print the GBNF grammar for a request (--tools, --tool-choice)"



def no_grammar_reason(req: Any) -> str:
    """Why a request has no GBNF (``req.gbnf`` is None): what in the request or the template leaves
    nothing to constrain."""
    plan = req.plan
    if plan.tools is not None or plan.answer.json:
        return "no grammar was built for this request"
    if not req.tools:
        return "no grammar: the request declares no tools and no response_format"
    if req.tool_choice == "none":
        return "no grammar: tool_choice 'none' allows no call, and there is no response_format"
    if plan.analysis.tools.style == "none":
        why = ("it renders no tool call" if not plan.analysis.capabilities.tool_calls
               else "its calls could not be read")
        return (f"no grammar: the template has no tool-call format ({why}; `autoparser analyze` shows its "
                "capabilities), so there are no calls to constrain")
    return "no grammar: no tool applies to this request"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    add_request_arguments(parser, tools_required=True)
    parser.add_argument("--json", action="store_true",
                        help="print {gbnf, triggers, preserved_tokens, stop} as JSON")


def run(args: argparse.Namespace) -> int:
    req = build_request(args)
    gbnf = req.gbnf
    if args.json:
        print_json({"gbnf": gbnf, "triggers": req.grammar_triggers, "preserved_tokens": list(req.preserved_tokens),
                    "stop": list(req.stop), **({"error": no_grammar_reason(req)} if gbnf is None else {})})
        return 0 if gbnf is not None else 1
    if gbnf is None:
        print(f"autoparser grammar: {no_grammar_reason(req)}", file=sys.stderr)
        return 1
    sys.stdout.write(gbnf if gbnf.endswith("\n") else gbnf + "\n")
    return 0
