"""Write the synthesized fixture templates (templates/synth_*.jinja) from tests/synth.py.

Ten formats the third-party corpus does not contain, each a combination of the
synthesizer's axes; the fixtures keep them under every fixture-level test (round trip,
streaming, PEG, GBNF, snapshots) so that the analysis stays general.

Usage:
    python tools/write_synth_fixtures.py           # (re)write them
    python tools/write_synth_fixtures.py --check   # exit 1 when one is missing or differs
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import synth  # noqa: E402

FIXTURES: dict[str, tuple[synth.Combo, str]] = {
    "synth_symbols_json": (synth.Combo("gemma", "symbols", "json_name", "object", "each", "think"),
                           "calls between ✦CALL✦ and ✦END✦, a JSON object with a name key, <think> reasoning"),
    "synth_fence_label": (synth.Combo("chatml", "fence", "label", "object", "each", "none"),
                          "a ```tool_call fence holding `Action: NAME` and `Arguments: {JSON}` lines"),
    "synth_bracket_invoke": (synth.Combo("bracket", "xml", "attribute", "params", "section", "prompt_think"),
                             "[|role|] headers, <invoke name=\"NAME\"> with one tag per parameter, "
                             "all calls in one section, the prompt opens <think>"),
    "synth_fullwidth_string": (synth.Combo("llama3", "fullwidth", "tag", "string", "each", "none"),
                               "fullwidth DeepSeek-style call tokens around <function=NAME> with the "
                               "arguments double-encoded as a JSON string"),
    "synth_function_key_comma": (synth.Combo("chatml", "xml", "json_function", "string", "comma", "think"),
                                 "one section, JSON calls with a `function` key and string arguments, "
                                 "separated by `, `"),
    "synth_brackets_invoke_json": (synth.Combo("llama3", "brackets", "attribute", "object", "section", "none"),
                                   "[TOOL_CALLS]…[/TOOL_CALLS] around <invoke name=\"NAME\">{JSON}</invoke> calls"),
    "synth_symbols_params_comma": (synth.Combo("bracket", "symbols", "tag", "params", "comma", "none"),
                                   "✦CALL✦ section, <function=NAME> with parameter tags, calls separated by `, `"),
    "synth_fence_invoke_string": (synth.Combo("gemma", "fence", "attribute", "string", "each", "think"),
                                  "```tool_call fences around <invoke name=\"NAME\"> with string-encoded arguments"),
    "synth_label_params": (synth.Combo("llama3", "xml", "label", "params", "each", "prompt_think"),
                           "`Action: NAME` then parameter tags, the prompt opens <think>"),
    "synth_brackets_json_comma": (synth.Combo("gemma", "brackets", "json_name", "object", "comma", "prompt_think"),
                                  "[TOOL_CALLS] section with JSON calls separated by `, `, the prompt opens <think>"),
}


def source(stem: str) -> str:
    combo, what = FIXTURES[stem]
    head = (f"{{#- autoparser fixture: {stem} (written by tools/write_synth_fixtures.py from tests/synth.py)\n"
            f"    {what}.\n    Axes: {combo.id} -#}}\n")
    return head + synth.render(combo, pretty=True).split("\n", 1)[1]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 on a missing or changed fixture")
    args = ap.parse_args(argv)
    bad = 0
    for stem in FIXTURES:
        path = ROOT / "templates" / f"{stem}.jinja"
        text = source(stem)
        if args.check:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                print(f"{path.name}: missing or changed")
                bad += 1
        else:
            path.write_text(text, encoding="utf-8")
    print(f"{len(FIXTURES)} synthesized fixtures {'checked' if args.check else 'written'}, {bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
