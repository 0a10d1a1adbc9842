"""Export what the analysis found in another tool's declarative language.

``autoparser export response-template TEMPLATE`` prints the transformers
``response_template`` (read by ``tokenizer.parse_response``, ``transformers serve``,
vLLM's ``--tool-call-parser hf --reasoning-parser hf`` and SGLang). With
``--into MODEL_DIR`` it is written into ``MODEL_DIR/tokenizer_config.json`` under
``response_template``, the key transformers loads; the rest of the file is kept
byte for byte (a key already there is replaced in place, a new one is appended).

A format the language cannot express exits with status 1 and names the reason.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from ._common import CliError, add_source_arguments, dumps, template_from_args

HELP = "export the analysis (response-template: transformers' response_template)"

CONFIG = "tokenizer_config.json"
KEY = "response_template"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    targets = parser.add_subparsers(dest="target", metavar="TARGET", required=True)
    p = targets.add_parser("response-template", help="transformers' response_template (parse_response, vLLM hf)",
                           description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_source_arguments(p)
    p.add_argument("--into", metavar="MODEL_DIR",
                   help=f"write it into MODEL_DIR/{CONFIG} (or into this {CONFIG} file) instead of printing it")


def run(args: argparse.Namespace) -> int:
    tmpl = template_from_args(args)
    template = tmpl.response_template()
    if not args.into:
        print(dumps(template))
        return 0
    target = Path(args.into)
    config = target if target.name == CONFIG or target.is_file() else target / CONFIG
    if not config.is_file():
        raise CliError(f"{config}: not found (transformers reads the response template from {CONFIG})")
    text = config.read_text(encoding="utf-8")
    config.write_text(set_key(text, KEY, template, where=str(config)), encoding="utf-8")
    print(f"wrote {KEY} into {config}")
    return 0


# ------------------------------------------------------------------ editing JSON in place
def _members(text: str, where: str) -> tuple[list[tuple[str, int, int, int]], int]:
    """Top-level members of a JSON object as (key, key_start, value_start, value_end), and the
    position of the closing brace (keys and values are read by ``json``'s decoder)."""
    decoder = json.JSONDecoder()

    def skip(i: int) -> int:
        while text[i] in " \t\r\n":
            i += 1
        return i

    def expect(i: int, ch: str) -> int:
        if text[i] != ch:
            raise ValueError(f"expected {ch!r}")
        return skip(i + 1)

    out: list[tuple[str, int, int, int]] = []
    try:
        i = skip(0)
        if text[i] != "{":
            raise CliError(f"{where}: not a JSON object")
        i = skip(i + 1)
        while text[i] != "}":
            if out:
                i = expect(i, ",")
            key_start = i
            key, i = decoder.raw_decode(text, i)
            value_start = expect(skip(i), ":")
            _, i = decoder.raw_decode(text, value_start)
            out.append((str(key), key_start, value_start, i))
            i = skip(i)
        return out, i
    except (ValueError, IndexError) as e:
        raise CliError(f"{where}: unreadable JSON ({e})") from None


def _indent(text: str, members: list[tuple[str, int, int, int]]) -> str:
    """The indentation of the top-level keys ("" for a one-line file)."""
    if not members:
        return "  "
    start = members[0][1]
    line = text.rfind("\n", 0, start)
    return text[line + 1: start] if line >= 0 and not text[line + 1: start].strip() else ""


def set_key(text: str, key: str, value: Any, *, where: str = CONFIG) -> str:
    """``text`` (a JSON object) with top-level ``key`` set to ``value``, everything else unchanged."""
    members, close = _members(text, where)
    indent = _indent(text, members)
    step = len(indent) or None
    dumped = json.dumps(value, ensure_ascii=False, indent=step)
    if indent:
        dumped = dumped.replace("\n", "\n" + indent)
    for name, _, value_start, value_end in members:
        if name == key:
            return text[:value_start] + dumped + text[value_end:]
    member = json.dumps(key) + ": " + dumped
    if not members:
        return text[:close] + ("\n" + indent + member + "\n" if indent else member) + text[close:]
    end = members[-1][3]
    sep = ",\n" + indent if indent else ", "
    return text[:end] + sep + member + text[end:]
