"""Parse model output (read from stdin or --input) with the parser derived from a template.

The prompt is rendered from --messages (default: one user turn) and --tools, so the
parser knows whether the prompt left a reasoning block open and which tools exist.
Prints the OpenAI-style assistant message as JSON; with --json, an object holding that
message and what the parser knows besides: finish_reason, truncated, malformed,
warnings, asides and, per call, invalid (why it does not fit the request) and truncated.
With --stream, reads the output in small chunks and prints each delta as one JSON line,
then a final line with the finish_reason and the same report. Warnings go to stderr.
--strict exits 1 when the output is not clean: truncated, malformed, a warning, or a call
that is invalid or truncated.

  autoparser parse T.jinja --tools tools.json < output.txt
  autoparser parse T.jinja --tools tools.json --json --strict < output.txt
  model | autoparser parse T.jinja --stream
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, TextIO

from ._common import (
    CliError,
    add_source_arguments,
    dumps,
    print_json,
    read_kwargs,
    read_messages,
    read_tools,
    template_from_args,
    tool_choice,
)

HELP = "parse model output from stdin into a message (--stream: deltas as JSON lines)"


def add_request_arguments(parser: argparse.ArgumentParser, *, tools_required: bool = False) -> None:
    """The options that shape the request (shared with ``grammar``)."""
    parser.add_argument("--tools", metavar="JSON", required=tools_required,
                        help="tools: a JSON file (list, or {\"tools\": [...]}), inline JSON or - for stdin")
    parser.add_argument("--messages", metavar="JSON",
                        help="the conversation before the output (default: one user turn)")
    parser.add_argument("--kwargs", "--chat-template-kwargs", dest="kwargs", metavar="JSON",
                        help="chat_template_kwargs as a JSON object, e.g. '{\"enable_thinking\": false}'")
    parser.add_argument("--tool-choice", metavar="auto|required|none|NAME", default="auto",
                        help="tool_choice: auto (default), required, none, or a function name")
    parser.add_argument("--no-parallel-tool-calls", action="store_true", help="parallel_tool_calls=False")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    add_request_arguments(parser)
    parser.add_argument("--reasoning-format", choices=("auto", "none", "deepseek", "deepseek-legacy"),
                        default="auto", help="reasoning_format (none: keep reasoning in the content)")
    parser.add_argument("--input", "-i", metavar="FILE", help="read the model output from FILE (default: stdin)")
    parser.add_argument("--stream", action="store_true", help="stream: print one JSON delta per line")
    parser.add_argument("--chunk-size", type=int, default=4, metavar="N",
                        help="characters fed to the stream parser at a time (default: 4)")
    parser.add_argument("--partial", action="store_true", help="the output is a prefix (it was cut off)")
    parser.add_argument("--prompt", action="store_true", help="print the rendered prompt to stderr first")
    parser.add_argument("--json", action="store_true",
                        help="print {message, finish_reason, truncated, malformed, warnings, asides, tool_calls: "
                             "[{index, id, name, invalid, truncated}]}")
    parser.add_argument("--strict", action="store_true",
                        help="exit 1 when the output is truncated, malformed, warned about or has an invalid call")


def build_request(args: argparse.Namespace, **extra: Any) -> Any:
    tmpl = template_from_args(args)
    tools = read_tools(args.tools)
    messages = read_messages(args.messages)
    return tmpl.apply(messages, tools=tools, chat_template_kwargs=read_kwargs(args.kwargs),
                      tool_choice=tool_choice(args.tool_choice, tools),
                      parallel_tool_calls=not args.no_parallel_tool_calls, **extra)


def _chunks(stream: TextIO, size: int) -> Iterator[str]:
    while True:
        chunk = stream.read(size)
        if not chunk:
            return
        yield chunk


def run(args: argparse.Namespace) -> int:
    if args.chunk_size < 1:
        raise CliError("--chunk-size must be at least 1")
    req = build_request(args, reasoning_format=args.reasoning_format)
    if args.prompt:
        sys.stderr.write(req.prompt + "\n")
    source: TextIO
    if args.input:
        try:
            source = open(args.input, encoding="utf-8")  # noqa: SIM115 - closed below
        except OSError as e:
            raise CliError(f"cannot read {args.input}: {e.strerror or e}") from None
    else:
        source = sys.stdin
    try:
        if args.stream:
            parser = req.stream()
            for chunk in _chunks(source, args.chunk_size):
                for delta in parser.feed(chunk):
                    sys.stdout.write(dumps(delta, None) + "\n")
            for delta in parser.finish():
                sys.stdout.write(dumps(delta, None) + "\n")
            message = parser.message
            sys.stdout.write(dumps(message.report(), None) + "\n")   # the final line: finish_reason and flags
        else:
            message = req.parse(source.read(), partial=args.partial)
            print_json({"message": message.to_dict(), **message.report()} if args.json else message.to_dict())
    finally:
        if source is not sys.stdin:
            source.close()
    for warning in message.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    if args.strict and not message.clean:
        flags = [f for f in ("truncated", "malformed") if getattr(message, f)]
        flags += [f"call {i} invalid" for i, c in enumerate(message.tool_calls) if c.invalid]
        print(f"autoparser parse: the output is not clean ({', '.join(flags) or 'warnings'}; "
              f"finish_reason {message.finish_reason})", file=sys.stderr)
        return 1
    return 0
