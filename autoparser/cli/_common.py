"""Helpers shared by the subcommands: template sources, JSON inputs, consoles and printing."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import sources
from ..errors import TemplateError

if TYPE_CHECKING:
    from rich.console import Console

    from ..template import ChatTemplate

USAGE = 2          # exit status for usage errors
FAILURE = 1        # exit status for failures

# A bare .jinja file comes without a tokenizer. Its BOS/EOS come from --bos/--eos, else from a
# tokenizer_config.json beside it, else, like llama.cpp's template tests and the conformance
# harness, these strings, so that templates ending a turn with {{ eos_token }} show a real end
# marker; the command then says so on stderr (--eos '' turns it off).
JINJA_BOS, JINJA_EOS = "<s>", "</s>"

SOURCE_HELP = ("a chat template: a .jinja file, a Hugging Face model folder, a tokenizer_config.json "
               "(or chat_template.json) or a .gguf file")


class CliError(Exception):
    """A user-facing error with an exit status (2 usage, 1 failure)."""

    def __init__(self, message: str, code: int = USAGE) -> None:
        super().__init__(message)
        self.code = code


# ------------------------------------------------------------------ template sources
def add_source_arguments(parser: argparse.ArgumentParser, *, many: bool = False) -> None:
    """The template argument(s) and the source options every command takes."""
    if many:
        parser.add_argument("paths", nargs="+", metavar="PATH",
                            help=SOURCE_HELP + ", or a folder of them")
    else:
        parser.add_argument("template", metavar="TEMPLATE", help=SOURCE_HELP)
    parser.add_argument("--template-name", metavar="NAME",
                        help="which named template to use when the source holds several (e.g. tool_use)")
    parser.add_argument("--bos", "--bos-token", dest="bos_token", metavar="TEXT",
                        help="BOS string (default: the tokenizer's; for a bare .jinja file, a tokenizer_config.json "
                             f"beside it, else {JINJA_BOS!r}, said on stderr)")
    parser.add_argument("--eos", "--eos-token", dest="eos_token", metavar="TEXT",
                        help="EOS string (default: the tokenizer's; for a bare .jinja file, a tokenizer_config.json "
                             f"beside it, else {JINJA_EOS!r}, said on stderr)")


def load_source(path: str | Path, *, template_name: str | None = None, bos_token: str | None = None,
                eos_token: str | None = None, announce: bool = False) -> sources.TemplateSource:
    """Load a template source. A bare Jinja file takes BOS/EOS (and special tokens) from a
    ``tokenizer_config.json`` beside it, else the default strings; ``announce``: say on stderr
    which, when the caller did not give both."""
    src = sources.load_path(path, template_name=template_name, bos_token=bos_token, eos_token=eos_token)
    if src.origin == "file":
        from dataclasses import replace

        beside = sources.tokenizer_beside(path)
        if beside is not None:
            src = replace(src, bos_token=beside.bos_token if bos_token is None else bos_token,
                          eos_token=beside.eos_token if eos_token is None else eos_token,
                          special_tokens=beside.special_tokens)
            source = f"the {beside.name} beside it"
        else:
            src = replace(src, bos_token=JINJA_BOS if bos_token is None else bos_token,
                          eos_token=JINJA_EOS if eos_token is None else eos_token)
            source = "no tokenizer_config.json beside it: assumed"
        if announce and (bos_token is None or eos_token is None):
            print(f"autoparser: {Path(path).name}: BOS {src.bos_token!r} and EOS {src.eos_token!r} ({source}; "
                  "--bos/--eos set them)", file=sys.stderr)
    return src


def template_from_source(src: sources.TemplateSource) -> ChatTemplate:
    from ..template import ChatTemplate

    return ChatTemplate(src.source, name=src.name, bos_token=src.bos_token, eos_token=src.eos_token,
                        special_tokens=src.special_tokens)


def load_template(path: str | Path, *, template_name: str | None = None, bos_token: str | None = None,
                  eos_token: str | None = None, announce: bool = False) -> ChatTemplate:
    """A ChatTemplate from any supported source (load errors become usage errors)."""
    try:
        src = load_source(path, template_name=template_name, bos_token=bos_token, eos_token=eos_token,
                          announce=announce)
    except TemplateError as e:
        if e.phase == "load":
            raise CliError(str(e), USAGE) from None
        raise
    return template_from_source(src)


def template_from_args(args: argparse.Namespace) -> ChatTemplate:
    return load_template(args.template, template_name=args.template_name, bos_token=args.bos_token,
                         eos_token=args.eos_token, announce=True)


# ------------------------------------------------------------------ JSON inputs
def read_json(value: str, what: str) -> Any:
    """JSON from a file path, ``-`` for stdin, or inline text starting with ``[`` or ``{``."""
    text = value
    if value == "-":
        text = sys.stdin.read()
    elif not value.lstrip().startswith(("[", "{")):
        try:
            text = Path(value).read_text(encoding="utf-8")
        except OSError as e:
            raise CliError(f"cannot read {what} file {value}: {e.strerror or e}") from None
    try:
        return json.loads(text)
    except ValueError as e:
        raise CliError(f"{what} is not valid JSON ({value}): {e}") from None


def read_tools(value: str | None) -> list[dict[str, Any]] | None:
    """A tools list: ``[tool, ...]``, ``{"tools": [...]}`` or one tool object."""
    if value is None:
        return None
    data = read_json(value, "tools")
    if isinstance(data, dict):
        data = data.get("tools", [data])
    if not isinstance(data, list) or not all(isinstance(t, dict) for t in data):
        raise CliError("tools must be a JSON list of tool objects")
    return data


def read_messages(value: str | None) -> list[dict[str, Any]]:
    """A messages list: ``[message, ...]`` or ``{"messages": [...]}``; default one user turn."""
    if value is None:
        return [{"role": "user", "content": "Hello"}]
    data = read_json(value, "messages")
    if isinstance(data, dict):
        data = data.get("messages")
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        raise CliError("messages must be a JSON list of message objects")
    return data


def read_kwargs(value: str | None) -> dict[str, Any]:
    if value is None:
        return {}
    data = read_json(value, "chat template kwargs")
    if not isinstance(data, dict):
        raise CliError("chat template kwargs must be a JSON object")
    return data


def tool_choice(value: str | None, tools: list[dict[str, Any]] | None) -> Any:
    """``auto``/``required``/``none`` or a function name (checked against the tools)."""
    if value is None or value in ("auto", "required", "none"):
        return value or "auto"
    names = [(t.get("function") or t).get("name") for t in tools or []]
    if value not in names:
        raise CliError(f"--tool-choice {value!r} names no tool; tools: {', '.join(map(str, names)) or 'none'}")
    return {"type": "function", "function": {"name": value}}


# ------------------------------------------------------------------ output
def console(stderr: bool = False) -> Console:
    """A rich console on the current stdout/stderr (looked up now, so redirection works)."""
    import os

    from rich.console import Console

    out = Console(file=sys.stderr if stderr else sys.stdout, highlight=False, soft_wrap=False)
    if not out.is_terminal and not os.environ.get("COLUMNS"):
        out.width = 140   # logs and pipes: no terminal to fit, rich would assume 80 columns
    return out


def dumps(data: Any, indent: int | None = 2) -> str:
    return json.dumps(data, indent=indent, ensure_ascii=False)


def print_json(data: Any, indent: int | None = 2) -> None:
    sys.stdout.write(dumps(data, indent) + "\n")


# what an analysed marker's placeholders (``autoparser.markers``: WILDCARD, NAME_WILDCARD, HEADER) stand
# for, and how :func:`show` writes them
WILDCARD_WORDS = {"\x03": "… is text that varies between renders", "\x04": "NAME is the tool's name",
                  "\x05": "[fields] is header fields in any order, each optional"}
_SHOWN = {"\x03": "…", "\x04": "NAME", "\x05": "[fields]"}


def show(text: str) -> str:
    """A marker or text as a JSON string literal, so whitespace and control characters are visible;
    a marker's placeholders read ``…`` (varying text), ``NAME`` (a tool's name) and ``[fields]``
    (header fields in any order)."""
    out = json.dumps(text, ensure_ascii=False)
    for sentinel, words in _SHOWN.items():
        out = out.replace(json.dumps(sentinel)[1:-1], words)
    return out
