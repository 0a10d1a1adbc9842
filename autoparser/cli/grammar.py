"""Print the GBNF grammar that constrains a model's output for one request.

The grammar covers the tool calls for --tools (and, with --tool-choice required or a
function name, forces them); it is lazy when tool calls are optional: the triggers
(--json shows them) say where constrained decoding starts.
"""

from __future__ import annotations

import argparse
import sys

from ._common import add_source_arguments, print_json
from .parse import add_request_arguments, build_request

HELP = "print the GBNF grammar for a request (--tools, --tool-choice)"

UNAVAILABLE = ("no grammar: GBNF generation is not available in this build "
               "(autoparser.grammar.request is missing)")


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
                    "stop": list(req.stop), **({"error": UNAVAILABLE} if gbnf is None else {})})
        return 0 if gbnf is not None else 1
    if gbnf is None:
        print(f"autoparser grammar: {UNAVAILABLE}", file=sys.stderr)
        return 1
    sys.stdout.write(gbnf if gbnf.endswith("\n") else gbnf + "\n")
    return 0
