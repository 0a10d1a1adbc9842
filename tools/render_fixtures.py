"""Render every fixture template in templates/ and show the assistant turns it produces.

For each fixture and scenario this renders the history with the generation prompt,
then the history plus one assistant message without it, and prints what the
assistant message added after the generation prompt. It checks that

* the generation prompt is a byte prefix of the rendered assistant turn
  (except for fixtures in PREFILL, whose history deliberately differs);
* tool definitions reach the prompt whenever the fixture renders tool calls;
* tool results of the history reach the prompt;
* arguments given as a JSON string render like the same arguments given as a dict,
  or are refused with an error (noted, not a failure: per-key formats have no slot
  for a JSON blob).

With enable_thinking=false the reply is rendered without its reasoning (a model with
thinking off writes none); those runs are shown only when the toggle changes the prompt.

Usage: python tools/render_fixtures.py [--json] [--quiet] [NAME ...]
Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autoparser.render import Renderer  # noqa: E402

TEMPLATES = ROOT / "templates"

# Generation prompt opens the reasoning block; history strips reasoning, so no prefix.
PREFILL = frozenset({"forced_open_think"})
# Refuses a system message: histories are rendered without it.
NO_SYSTEM = frozenset({"gemma_plain"})
# Refuses more than one tool call per message: histories keep one; a two-call reply must raise.
SINGLE_CALL = frozenset({"llama3_json"})

Message = dict[str, Any]

TOOLS: list[dict[str, Any]] = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Current weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "unit": {"type": "string", "enum": ["c", "f"]}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "search_docs", "description": "Full-text search over the docs.",
        "parameters": {"type": "object", "properties": {
            "query": {"type": "string"}, "limit": {"type": "integer"}, "filters": {"type": "object"}},
            "required": ["query"]}}},
]

SYSTEM: Message = {"role": "system", "content": "You are terse."}
USER: Message = {"role": "user", "content": "Weather in Paris, and find the API docs?"}
REASONING = "The user wants two things.\nCheck the weather first."
LATE_REASONING = "Both results are in."
CALL_WEATHER: dict[str, Any] = {"id": "call0A1b2", "type": "function", "function": {
    "name": "get_weather", "arguments": {"city": "Paris", "unit": "c"}}}
CALL_SEARCH: dict[str, Any] = {"id": "call9Z8y7", "type": "function", "function": {
    "name": "search_docs", "arguments": {"query": "it's \"api\"", "limit": 3,
                                         "filters": {"lang": ["en", "fr"], "draft": False}}}}


def assistant(content: str | None, reasoning: str | None = None,
              calls: list[dict[str, Any]] | None = None) -> Message:
    msg: Message = {"role": "assistant", "content": content}
    if reasoning is not None:
        msg["reasoning_content"] = reasoning
    if calls:
        msg["tool_calls"] = copy.deepcopy(calls)
    return msg


def tool_result(call: dict[str, Any], content: str) -> Message:
    return {"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"], "content": content}


@dataclass(frozen=True)
class Scenario:
    name: str
    history: list[Message]
    reply: Message


BASE = [SYSTEM, USER]
SCENARIOS: list[Scenario] = [
    Scenario("reasoning+content", BASE, assistant("It is sunny.", REASONING)),
    Scenario("content only", BASE, assistant("It is sunny.")),
    Scenario("one tool call", BASE, assistant("", REASONING, [CALL_WEATHER])),
    Scenario("content+one call", BASE, assistant("Checking.", None, [CALL_WEATHER])),
    Scenario("two tool calls", BASE, assistant(None, REASONING, [CALL_WEATHER, CALL_SEARCH])),
    Scenario("after tool results",
             [*BASE, assistant(None, REASONING, [CALL_WEATHER, CALL_SEARCH]),
              tool_result(CALL_WEATHER, "18 C, clear"), tool_result(CALL_SEARCH, '{"hits": 2}')],
             assistant("18 C and clear; 2 doc hits.", LATE_REASONING)),
]


def stringify_args(msg: Message) -> Message:
    out = copy.deepcopy(msg)
    for call in out.get("tool_calls", []):
        call["function"]["arguments"] = json.dumps(call["function"]["arguments"])
    return out


def without_reasoning(msg: Message) -> Message:
    return {k: v for k, v in msg.items() if k != "reasoning_content"}


def adapt_history(name: str, history: list[Message]) -> list[Message]:
    """Shape a scenario history to what the fixture accepts."""
    out: list[Message] = []
    kept_ids: set[str] = set()
    for m in history:
        if m["role"] == "system" and name in NO_SYSTEM:
            continue
        if m["role"] == "assistant" and name in SINGLE_CALL and len(m.get("tool_calls", [])) > 1:
            m = {**m, "tool_calls": m["tool_calls"][:1]}
        if m["role"] == "assistant":
            kept_ids = {c["id"] for c in m.get("tool_calls", [])}
        if m["role"] == "tool" and m["tool_call_id"] not in kept_ids:
            continue
        out.append(m)
    return out


@dataclass
class Report:
    name: str
    problems: list[str] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)
    has_tools: bool = False
    has_reasoning: bool = False
    toggles: bool = False


def first_line(e: Exception) -> str:
    msg = str(e).splitlines()[0] if str(e) else ""
    return f"{type(e).__name__}: {msg.split('(render): ')[-1]}"


def attempt(fn: Callable[[], str]) -> tuple[str | None, str | None]:
    try:
        return fn(), None
    except Exception as e:  # fixtures refuse some inputs on purpose; the caller decides
        return None, first_line(e)


def show(text: str, as_json: bool) -> str:
    if as_json:
        return json.dumps(text, ensure_ascii=False)
    lines = text.replace("\n", "\u21b5\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return "\n".join("    " + line for line in lines)


class FixtureRun:
    def __init__(self, path: Path, as_json: bool, quiet: bool) -> None:
        self.name = path.stem
        self.renderer = Renderer(path.read_text(encoding="utf-8"), name=path.name,
                                 bos_token="<s>", eos_token="</s>")
        self.as_json = as_json
        self.quiet = quiet
        self.report = Report(self.name)

    def out(self, text: str) -> None:
        if not self.quiet:
            print(text)

    def render(self, messages: list[Message], gen: bool, thinking: bool) -> str:
        return self.renderer.render(messages, tools=TOOLS, add_generation_prompt=gen, enable_thinking=thinking)

    def run(self) -> Report:
        rep = self.report
        self.out(f"\n=== {self.name} ===")
        base = adapt_history(self.name, BASE)
        on, off = (attempt(lambda t=t: self.render(base, True, t))[0] for t in (True, False))
        rep.toggles = on != off
        for sc in SCENARIOS:
            for thinking in (True, False) if rep.toggles else (True,):
                self.scenario(sc, thinking)
        return rep

    def scenario(self, sc: Scenario, thinking: bool) -> None:
        rep = self.report
        history = adapt_history(self.name, sc.history)
        reply = sc.reply if thinking else without_reasoning(sc.reply)
        calls = reply.get("tool_calls", [])
        label = f"{sc.name}" + ("" if not rep.toggles else f" [thinking={'on' if thinking else 'off'}]")
        prompt, err = attempt(lambda: self.render(history, True, thinking))
        full = None
        if err is None:
            full, err = attempt(lambda: self.render([*history, reply], False, thinking))
        if err is not None or prompt is None or full is None:
            self.out(f"--- {label}: raises {err}")
            if self.name in SINGLE_CALL and len(calls) > 1:
                rep.notes.add(f"more than one call per message refused ({err})")
            else:
                rep.problems.append(f"{label}: raises {err}")
            return
        if full.startswith(prompt):
            turn = full[len(prompt):]
            self.out(f"--- {label}\n{show(turn, self.as_json)}")
        else:
            if self.name not in PREFILL:
                rep.problems.append(f"{label}: generation prompt is not a prefix of the rendered turn")
            rep.notes.add("generation prompt is not a prefix of history turns (prefill family)")
            cut = len(self.render(history, False, thinking))
            turn = full[cut:]
            self.out(f"--- {label}: generation prompt is NOT a prefix\n"
                     f"  generation prompt:\n{show(prompt[cut:], self.as_json)}\n"
                     f"  turn as rendered in history:\n{show(turn, self.as_json)}")
        if REASONING in turn or LATE_REASONING in turn:
            rep.has_reasoning = True
        if not calls or calls[0]["function"]["name"] not in turn:
            return
        rep.has_tools = True
        for tool in TOOLS:
            if tool["function"]["description"] not in prompt:
                rep.problems.append(f"{label}: tool {tool['function']['name']} missing from the prompt")
        for m in history:
            if m["role"] == "tool" and m["content"] not in prompt:
                rep.problems.append(f"{label}: tool result {m['content']!r} missing from the prompt")
        as_string, serr = attempt(lambda: self.render([*history, stringify_args(reply)], False, thinking))
        if serr is not None:
            rep.notes.add(f"string arguments refused ({serr})")
        elif as_string != full:
            rep.notes.add("string arguments render differently from dict arguments")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("names", nargs="*", help="fixture names (file stems); default: all")
    ap.add_argument("--json", action="store_true", help="print turns as JSON strings instead of ↵-marked text")
    ap.add_argument("--quiet", action="store_true", help="print only the summary")
    args = ap.parse_args(argv)
    paths = sorted(TEMPLATES.glob("*.jinja"))
    if args.names:
        paths = [p for p in paths if p.stem in args.names]
    reports = [FixtureRun(p, args.json, args.quiet).run() for p in paths]
    print(f"\n{'fixture':<22} {'tools':<6}{'reasoning':<10}{'toggle':<7}result")
    for rep in reports:
        flags = "".join(f"{'yes' if v else '-':<{w}}" for v, w in
                        ((rep.has_tools, 6), (rep.has_reasoning, 10), (rep.toggles, 7)))
        print(f"{rep.name:<22} {flags}{'FAIL' if rep.problems else 'ok'}")
        for p in rep.problems:
            print(f"    problem: {p}")
        for n in sorted(rep.notes):
            print(f"    note: {n}")
    failed = sum(bool(r.problems) for r in reports)
    print(f"\n{len(reports)} fixtures, {failed} failing")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
