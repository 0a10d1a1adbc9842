"""The ``autoparser`` command line: ``autoparser COMMAND ...`` (also ``python -m autoparser``).

Subcommands live one per module. A command module defines

* ``HELP``: the one-line help shown in ``autoparser --help``;
* ``add_arguments(parser)``: fills its ``argparse`` subparser;
* ``run(args) -> int``: does the work and returns the exit status.

and is registered by name in :data:`COMMANDS` (or at run time with
:func:`register_command`). Modules are imported when the parser is built.

Exit status: 0 success, 1 failures (a template that fails to load or render, a check
that found problems), 2 usage errors (bad arguments, missing files, unreadable JSON).
``rich`` is imported only inside this package.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from ..errors import AutoparserError
from ._common import CliError

__all__ = ["COMMANDS", "build_parser", "main", "register_command"]

COMMANDS: dict[str, str] = {
    "analyze": "autoparser.cli.analyze",
    "parse": "autoparser.cli.parse",
    "grammar": "autoparser.cli.grammar",
    "check": "autoparser.cli.check",
    "debug": "autoparser.cli.debug",
    "decisions": "autoparser.cli.decisions",
    "export": "autoparser.cli.export",
}


def register_command(name: str, module: str) -> None:
    """Add (or replace) subcommand ``name`` implemented by the importable ``module``."""
    COMMANDS[name] = module


def _description(mod: ModuleType) -> str:
    """The module docstring, shown whole by ``autoparser COMMAND --help``."""
    return (mod.__doc__ or "").strip()


def build_parser() -> argparse.ArgumentParser:
    from .. import __version__

    parser = argparse.ArgumentParser(
        prog="autoparser",
        description="Read a model's chat template, find how it writes reasoning, content and tool calls, "
                    "and parse model output with it.")
    parser.add_argument("--version", action="version", version=f"autoparser {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, module_name in COMMANDS.items():
        mod = importlib.import_module(module_name)
        p = sub.add_parser(name, help=getattr(mod, "HELP", None), description=_description(mod),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        mod.add_arguments(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (never calls ``sys.exit``)."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
    except SystemExit as e:  # --help, --version and usage errors
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    try:
        return int(args._run(args) or 0)
    except CliError as e:
        print(f"autoparser {args.command}: error: {e}", file=sys.stderr)
        return e.code
    except AutoparserError as e:
        print(f"autoparser {args.command}: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # `autoparser ... | head`
        return 1
    except KeyboardInterrupt:
        return 130
