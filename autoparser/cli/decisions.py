"""Show the per-request decisions (PRE.1-PRE.6) an inference server takes for a template.

PRE.1 ``skip_special_tokens`` and the tokens to preserve; PRE.2 the
``chat_template_kwargs`` that switch reasoning off; PRE.3 whether the prompt leaves
reasoning open, also after a tool result; PRE.4 what a forced call (``tool_choice``
required or named) starts with and whether reasoning comes first; PRE.5 the stop
strings; PRE.6 whether a stray leading reasoning marker is stripped.

Given one template (a ``.jinja`` file, model folder, config or ``.gguf``) it prints its
row; ``--kwargs``/``--messages``/``--tools``/``--tool-choice`` make it the row of one
request. Given a folder of ``.jinja`` files it prints the whole table. ``--tokenizer``
takes the special tokens (and EOS) from a model folder or a ``.gguf``; without a
tokenizer PRE.1 is "unknown" and the heuristic's value is shown.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import sources
from ..errors import AutoparserError, TemplateError
from ._common import (
    FAILURE,
    USAGE,
    CliError,
    add_source_arguments,
    console,
    load_source,
    print_json,
    read_kwargs,
    read_messages,
    read_tools,
    show,
    template_from_source,
    tool_choice,
)

if TYPE_CHECKING:
    from ..decisions.row import DecisionRow
    from ..template import ChatTemplate, Request

HELP = "per-request decisions (PRE.1-PRE.6): special tokens, reasoning gates, prefill, stop strings"

_MODEL_FILES = ("tokenizer_config.json", "chat_template.jinja", "chat_template.json")

# the decisions, each named (its PRE label in brackets, as the issues and the README cite it)
SKIP, PRESERVE, OFF, OPENS, FORCED, STOP, STRIP = (
    "skip special tokens when decoding [PRE.1]", "tokens the detokenizer must keep [PRE.1]",
    "kwargs that switch reasoning off [PRE.2]", "reasoning at the start of the output [PRE.3]",
    "what a forced call starts with [PRE.4]", "stop strings [PRE.5]", "stray reasoning opener dropped [PRE.6]")
COLUMNS: tuple[str, ...] = ("template", SKIP, PRESERVE, OFF, OPENS, FORCED, STOP, STRIP)
_STATES = {"open": "the prompt opens the reasoning block", "closed": "the prompt closes an empty block (thinking off)",
           "plain": "the prompt opens no reasoning block"}
_AFTER_TOOL = {True: "the block is opened again", False: "no block is opened again", None: "n/a"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser)
    parser.add_argument("--tokenizer", metavar="DIR_OR_GGUF",
                        help="take special tokens (and EOS) from this model folder, tokenizer_config.json or .gguf")
    parser.add_argument("--kwargs", metavar="JSON", help="chat_template_kwargs of a request (file, - or inline)")
    parser.add_argument("--messages", metavar="JSON", help="messages of a request (file, - or inline)")
    parser.add_argument("--tools", metavar="JSON", help="tools of a request (file, - or inline)")
    parser.add_argument("--tool-choice", metavar="CHOICE", help="auto, required, none or a function name")
    parser.add_argument("--glob", default="*.jinja", help="files to take from a folder of templates (default *.jinja)")
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--markdown", action="store_true", help="print a Markdown table")
    out.add_argument("--json", action="store_true", help="print the rows as JSON")


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> argparse.ArgumentParser:
    """Register ``decisions`` on an ``argparse`` subparsers object (for CLIs without the registry)."""
    p = subparsers.add_parser("decisions", help=HELP, description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    p.set_defaults(_run=run)
    parser: argparse.ArgumentParser = p
    return parser


# --------------------------------------------------------------------------- loading


def _is_template_folder(path: Path) -> bool:
    return path.is_dir() and not any((path / f).is_file() for f in _MODEL_FILES)


def _tokenizer_source(path: str) -> sources.TemplateSource:
    """Special tokens and EOS from a tokenizer folder, config or GGUF (its own template is not used)."""
    p = Path(path)
    if not p.exists():
        raise CliError(f"--tokenizer {path}: no such file or directory")
    try:
        return sources.load_gguf(p) if p.suffix.lower() == ".gguf" else sources.load_pretrained(p)
    except TemplateError as e:
        raise CliError(f"--tokenizer {path}: {e.message}") from None


def _load(path: Path, args: argparse.Namespace, tok: sources.TemplateSource | None) -> ChatTemplate:
    try:
        src = load_source(path, template_name=args.template_name, bos_token=args.bos_token,
                          eos_token=args.eos_token, announce=tok is None and Path(args.template) == path)
    except TemplateError as e:
        if e.phase == "load":
            raise CliError(str(e), USAGE) from None
        raise
    if tok is not None:
        src = replace(src, special_tokens=tok.special_tokens,
                      eos_token=src.eos_token if args.eos_token is not None or src.origin != "file"
                      else tok.eos_token or src.eos_token,
                      bos_token=src.bos_token if args.bos_token is not None or src.origin != "file"
                      else tok.bos_token or src.bos_token)
    return template_from_source(src)


def _request(tmpl: ChatTemplate, args: argparse.Namespace) -> Request | None:
    """A request when any request option is given, else None (the template's row)."""
    if not any((args.kwargs, args.messages, args.tools, args.tool_choice)):
        return None
    tools = read_tools(args.tools)
    return tmpl.apply(read_messages(args.messages), tools=tools, chat_template_kwargs=read_kwargs(args.kwargs),
                      tool_choice=tool_choice(args.tool_choice, tools))


def _row(path: Path, args: argparse.Namespace, tok: sources.TemplateSource | None) -> DecisionRow:
    from ..decisions.row import decide

    tmpl = _load(path, args, tok)
    req = _request(tmpl, args)
    return req.decisions if req is not None else decide(tmpl)


# --------------------------------------------------------------------------- cells


def _s(text: str) -> str:
    return show(text)


def _kw(pairs: tuple[tuple[str, Any], ...]) -> str:
    return ", ".join(f"{k}={json.dumps(v)}" for k, v in pairs) or "-"


def cells(row: DecisionRow) -> dict[str, str]:
    """The table cells of one DecisionRow, in plain words."""
    if row.skip_special_tokens is None:
        pre1 = f"{str(row.skip_special_tokens_applied).lower()} (no tokenizer: guessed from the markers' looks)"
    else:
        pre1 = f"{str(row.skip_special_tokens).lower()} (the tokenizer's special tokens)"
    state = "the prompt opens the reasoning block" if row.prompt_opens_reasoning else _STATES[row.prompt_state]
    pre3 = f"{state}; after a tool result: {_AFTER_TOOL[row.reseeds_reasoning_after_tool]}"
    if row.forced_call_style == "none":
        pre4 = "no tool calls"
    else:
        start = _s(row.forced_call_start) if row.forced_call_start.strip() else "a bare JSON object"
        pre4 = f"{start}; reasoning before it: {row.reasoning_before_forced_call}"
    off = _kw(row.reasoning_off_kwargs) if row.reasoning_off_kwargs else "none found"
    if row.reasoning_off:
        off += " (this request switches it off)"
    return {
        "template": row.template,
        SKIP: pre1,
        PRESERVE: " ".join(row.preserved_tokens) or "-",
        OFF: off,
        OPENS: pre3,
        FORCED: pre4,
        STOP: " ".join(row.stop) or "-",
        STRIP: f"{_s(row.leading_reasoning_start)} at the start of the output" if row.strip_leading_reasoning_start
        else "no",
    }


def _markdown(rows: list[dict[str, str]]) -> str:
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", "\\n")

    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(esc(r.get(c, "")) for c in COLUMNS) + " |" for r in rows]
    return "\n".join(lines)


def _print_rows(rows: list[dict[str, str]], title: str, args: argparse.Namespace) -> None:
    if args.markdown:
        print(_markdown(rows))
        return
    from rich.table import Table

    if len(rows) == 1:
        table = Table(title=title, show_header=True, header_style="bold")
        table.add_column("decision")
        table.add_column("value", overflow="fold")
        for c in COLUMNS[1:]:
            table.add_row(c, rows[0][c])
    else:
        table = Table(title=title, header_style="bold", show_lines=False)
        for c in COLUMNS:
            table.add_column(c, overflow="fold")
        for r in rows:
            table.add_row(*(r.get(c, "") for c in COLUMNS))
    console().print(table)


# --------------------------------------------------------------------------- run


def run(args: argparse.Namespace) -> int:
    tok = _tokenizer_source(args.tokenizer) if args.tokenizer else None
    path = Path(args.template)
    if _is_template_folder(path):
        files = sorted(p for p in path.glob(args.glob) if p.is_file())
        if not files:
            raise CliError(f"{path}: no files match {args.glob!r}", USAGE)
    else:
        files = [path]
    rows, data, failed = [], [], 0
    for f in files:
        try:
            row = _row(f, args, tok)
        except CliError:
            if len(files) == 1:
                raise
            failed += 1
            rows.append({"template": f.name, SKIP: "error: cannot load"})
            continue
        except AutoparserError as e:
            if len(files) == 1:
                raise
            failed += 1
            rows.append({"template": f.name, SKIP: f"error: {e}"})
            data.append({"template": f.name, "error": str(e)})
            continue
        rows.append(cells(row))
        data.append(row.to_dict())
    if args.json:
        print_json(data[0] if len(files) == 1 else data)
    else:
        _print_rows(rows, str(path), args)
    return FAILURE if failed else 0
