"""A chat-template synthesizer: templates written by combining independent format axes.

Each axis is one decision a template author makes; a combination is a whole, coherent
template in a format that may exist nowhere in the corpus. The analysis should read every
combination because it is general, not because the family was seen before. Axes:

* ``roles``: how turns are delimited (ChatML, Llama 3 headers, Gemma, a bracketed header line);
* ``markers``: how a call is marked (``<tool_call>``, ``[TOOL_CALLS]``, DeepSeek-style fullwidth
  tokens, unusual symbols such as ``✦CALL✦``);
* ``name``: where the function name lives (a JSON key ``name`` or ``function``, a tag
  ``<function=NAME>``, an attribute ``<invoke name="NAME">``);
* ``args``: how arguments are written (a JSON object, a JSON string, one tag per parameter,
  ``key: value`` lines);
* ``envelope``: one marker pair per call, or one section around all calls (calls on their own
  lines, or separated by ``, ``);
* ``reasoning``: none, a ``<think>`` block in history, a block the generation prompt opens, a
  block that ends with the opener of the answer (``<|thinking|>…<|answer|>``).

``combinations()`` lists every coherent combination, ``render(combo)`` writes its template.
Issue 21's further axes (argument encodings, name and id placements, value codecs and spellings,
reasoning delimiters) are too many to combine exhaustively: ``tests/synth_axes.py`` draws them
(``drawn(n, seed)`` here). Nothing here imports autoparser.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import synth_axes

ROLES = {
    # name: (turn open for ROLE, turn close, assistant header)
    "chatml": ("<|im_start|>{role}\n", "<|im_end|>\n"),
    "llama3": ("<|start_header_id|>{role}<|end_header_id|>\n\n", "<|eot_id|>"),
    "gemma": ("<start_of_turn>{role}\n", "<end_of_turn>\n"),
    "bracket": ("[|{role}|]\n", "[|end|]\n"),
}
MARKERS = {
    # name: (call open, call close)
    "xml": ("<tool_call>", "</tool_call>"),
    "brackets": ("[TOOL_CALLS]", "[/TOOL_CALLS]"),
    "fullwidth": ("<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>"),
    "symbols": ("✦CALL✦", "✦END✦"),
    "fence": ("```tool_call", "```"),
}
NAMES = ("json_name", "json_function", "tag", "attribute", "label")
ARGS = ("object", "string", "params", "yaml")
ENVELOPES = ("each", "section", "comma")
REASONING = ("none", "think", "prompt_think", "answer_tag")
AXES = {"roles": tuple(ROLES), "markers": tuple(MARKERS), "name": NAMES, "args": ARGS,
        "envelope": ENVELOPES, "reasoning": REASONING}


@dataclass(frozen=True)
class Combo:
    roles: str
    markers: str
    name: str
    args: str
    envelope: str
    reasoning: str

    @property
    def id(self) -> str:
        return "-".join((self.roles, self.markers, self.name, self.args, self.envelope, self.reasoning))


def drawn(n: int = synth_axes.N_DRAWN, seed: int = synth_axes.SEED) -> list[synth_axes.Format]:
    """Issue 21's seeded draw of ``n`` formats (``synth_axes.DRAWN`` is the fixed one);
    ``synth_axes.render(f)`` writes each template."""
    return synth_axes.draw(n, seed)


def coherent(c: Combo) -> bool:
    """One tag per parameter, or YAML lines, need a name outside JSON."""
    return not (c.args in ("params", "yaml") and c.name.startswith("json"))


def combinations() -> list[Combo]:
    return [c for c in (Combo(*values) for values in itertools.product(*AXES.values())) if coherent(c)]


def _lit(s: str) -> str:
    """A Jinja string literal."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def _call(c: Combo) -> str:
    """Jinja statements writing one call ``fn`` (name and arguments) without its markers."""
    if c.args == "string":
        args = "(fn.arguments if fn.arguments is string else fn.arguments | tojson) | tojson"
    else:
        args = "(fn.arguments | tojson if fn.arguments is not string else fn.arguments)"
    if c.name in ("json_name", "json_function"):
        key = "name" if c.name == "json_name" else "function"
        return ("{{- '{\"" + key + "\": ' ~ (fn.name | tojson) ~ ', \"arguments\": ' ~ " + args + " ~ '}' -}}")
    if c.name == "tag":
        head, tail = "'<function=' ~ fn.name ~ '>'", "'</function>'"
    elif c.name == "label":
        head, tail = "'Action: ' ~ fn.name ~ '\\nArguments:' ~ " + ("''" if c.args == "yaml" else "' '"), "''"
    else:
        head, tail = "'<invoke name=\"' ~ fn.name ~ '\">'", "'</invoke>'"
    if c.args == "yaml":
        body = ("{%- for k, v in (fn.arguments or {}).items() -%}"
                "{{- '\\n  ' ~ k ~ ': ' ~ (v if v is string else v | tojson) -}}"
                "{%- endfor -%}")
    elif c.args == "params":
        body = ("{%- for k, v in (fn.arguments or {}).items() -%}"
                "{{- '\\n<parameter=' ~ k ~ '>' ~ (v if v is string else v | tojson) ~ '</parameter>' -}}"
                "{%- endfor -%}{{- '\\n' -}}")
    else:
        body = "{{- " + args + " -}}"
    return "{{- " + head + " -}}" + body + "{{- " + tail + " -}}"


def render(c: Combo, pretty: bool = False) -> str:
    """The template source of one combination (``pretty``: one tag per line, same output)."""
    source = _render(c)
    if not pretty:
        return source
    # every tag trims the whitespace around it, so a newline between two tags renders nothing
    return source.replace("-%}{", "-%}\n{").replace("-}}{", "-}}\n{").replace("-#}", "-#}") + "\n"


def _render(c: Combo) -> str:
    turn_open, turn_close = ROLES[c.roles]
    call_open, call_close = MARKERS[c.markers]

    def open_(role: str) -> str:
        before, after = turn_open.split("{role}")
        return _lit(before) + " ~ " + role + " ~ " + _lit(after)

    think = c.reasoning in ("think", "prompt_think")
    reasoning = ("{%- if message.reasoning_content -%}{{- '<think>\\n' ~ message.reasoning_content ~ "
                 "'\\n</think>\\n\\n' -}}{%- endif -%}") if think else ""
    if c.reasoning == "answer_tag":
        reasoning = ("{%- if message.reasoning_content -%}{{- '<|thinking|>\\n' ~ message.reasoning_content -}}"
                     "{%- endif -%}{{- '<|answer|>\\n' -}}")
    call = _call(c)
    if c.envelope == "each":
        calls = ("{%- for tc in message.tool_calls or [] -%}{%- set fn = tc.function -%}"
                 "{%- if content or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
                 "{{- " + _lit(call_open + "\n") + " -}}" + call + "{{- " + _lit("\n" + call_close) + " -}}"
                 "{%- endfor -%}")
    else:
        sep = ", " if c.envelope == "comma" else "\n"
        calls = ("{%- if message.tool_calls -%}{%- if content -%}{{- '\\n' -}}{%- endif -%}"
                 "{{- " + _lit(call_open + "\n") + " -}}"
                 "{%- for tc in message.tool_calls -%}{%- set fn = tc.function -%}"
                 "{%- if not loop.first -%}{{- " + _lit(sep) + " -}}{%- endif -%}" + call + "{%- endfor -%}"
                 "{{- " + _lit("\n" + call_close) + " -}}{%- endif -%}")
    prompt_open = "{{- '<think>\\n' -}}" if c.reasoning == "prompt_think" else ""
    tools_line = ("{%- if tools -%}{{- " + open_("'system'") + " ~ 'Tools:\\n' -}}"
                  "{%- for t in tools -%}{{- (t.function | tojson) ~ '\\n' -}}{%- endfor -%}"
                  "{{- " + _lit("Call a tool with " + call_open + " ... " + call_close + ".") + " ~ "
                  + _lit(turn_close) + " -}}{%- endif -%}")
    return (
        "{#- synthesized: " + c.id + " -#}\n"
        + tools_line
        + "{%- for message in messages -%}"
        "{%- if message.role == 'assistant' -%}"
        "{%- set content = message.content or '' -%}"
        "{{- " + open_("'assistant'") + " -}}" + reasoning + "{{- content -}}" + calls
        + "{{- " + _lit(turn_close) + " -}}"
        "{%- elif message.role == 'tool' -%}"
        "{{- " + open_("'tool'") + " ~ (message.content | string) ~ " + _lit(turn_close) + " -}}"
        "{%- else -%}"
        "{{- " + open_("message.role") + " ~ (message.content | string) ~ " + _lit(turn_close) + " -}}"
        "{%- endif -%}{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- " + open_("'assistant'") + " -}}" + prompt_open + "{%- endif -%}"
    )


# ---------------------------------------------------------------- what the analysis must find
def combo_of_fixture(source: str) -> Combo | None:
    """The axes a synthesized fixture names in its header (``Axes: chatml-xml-...``), or None."""
    for line in source.splitlines()[:4]:
        if "Axes: " in line:
            return Combo(*line.split("Axes: ", 1)[1].split(" ", 1)[0].split("-"))
    return None


def expected_end_of_turn(c: Combo) -> tuple[str, ...]:
    return (ROLES[c.roles][1].strip(),)


def expected_header(c: Combo) -> str:
    return ROLES[c.roles][0].replace("{role}", "assistant").strip()


def expected_reasoning(c: Combo) -> tuple[str, str, str, bool]:
    """(mode, start, end, prefilled), markers stripped."""
    if c.reasoning in ("think", "prompt_think"):
        return "tagged", "<think>", "</think>", c.reasoning == "prompt_think"
    return "none", "", "", False


def expected_tools(c: Combo) -> dict[str, object]:
    """Fields of the tool format the axes decide (dotted paths into ``ToolFormat``)."""
    out: dict[str, object] = {"style": "json" if c.name.startswith("json") else "layout"}
    if c.name.startswith("json"):
        out["json.name_path"] = ("name",) if c.name == "json_name" else ("function",)
        out["json.args_as_string"] = c.args == "string"
    else:   # a call layout (issue 21): arguments as items, or one JSON object (inside a JSON string)
        out["layout.args.kind"] = "items" if c.args in ("params", "yaml") else "json"
        out["layout.args.codec"] = "json" if c.args == "string" else ""
    return out


# ---------------------------------------------------------------- what the analysis does not read yet
def known_gap(c: Combo) -> str | None:
    """Why the analysis cannot read this combination yet (issue 13), or None when it must."""
    return None


def main() -> None:
    """Run every combination through the self-test; print the figures per axis value."""
    import collections
    import sys

    from autoparser import ChatTemplate
    from autoparser.selftest import self_test

    combos = combinations()
    passed, fails, total = 0, collections.Counter[tuple[str, str]](), collections.Counter[tuple[str, str]]()
    unexpected = []
    for c in combos:
        result = self_test(ChatTemplate.from_string(render(c), name=c.id))
        ok = result.ok and bool(result.passed)
        passed += ok
        if ok == (known_gap(c) is not None):
            unexpected.append(c.id)
        for axis, value in zip(AXES, (c.roles, c.markers, c.name, c.args, c.envelope, c.reasoning), strict=True):
            total[axis, value] += 1
            fails[axis, value] += not ok
    print(f"{len(AXES)} axes, {len(combos)} coherent combinations: {passed} pass, {len(combos) - passed} fail")
    for key in sorted(total):
        print(f"  {key[0]:10} {key[1]:14} fail {fails[key]}/{total[key]}")
    print(f"not as known_gap() says: {len(unexpected)}", *unexpected[:20], sep="\n  ")
    sys.exit(1 if unexpected else 0)


if __name__ == "__main__":
    main()
