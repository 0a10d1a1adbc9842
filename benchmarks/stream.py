#!/usr/bin/env python3
"""Streaming throughput benchmark (issue 3): is ``req.stream()`` linear in the output length?

Three output shapes, each at 1, 16 and 64 KB, streamed 4 characters per ``feed``:

* ``xml``       Qwen3-Coder-style tagged call (``templates/xml_params.jinja``) whose
                ``content`` string argument is the payload;
* ``hermes``    Hermes-style JSON call (``templates/hermes_json.jinja``), payload in a
                JSON string argument (so it is escaped);
* ``reasoning`` a ``<think>`` block (``templates/qwen3_think_json.jinja``) followed by
                a short answer.

The model text is cut out of the template's own rendering of the assistant turn. For every
run the script checks that the merged deltas equal ``req.parse(text)``, that the argument
fragments concatenate to the final arguments, and that the payload comes back unchanged.

Targets (on CPU time, which other load on the machine hardly changes): 64K/16K time ratio
<= 5 (linear gives ~4, quadratic ~16) and 64 KB in <= 0.5 s.

    python benchmarks/stream.py [--repeat N] [--chunk 4] [--strict]

Exit status: 1 when a correctness check fails (or, with ``--strict``, a target is missed).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from autoparser import ChatTemplate, merge_deltas

ROOT = Path(__file__).resolve().parents[1]
TEMPLATES = ROOT / "templates"
SIZES = (1024, 16 * 1024, 64 * 1024)
RATIO_TARGET = 5.0
SECONDS_TARGET_64K = 0.5
HISTORY = [{"role": "user", "content": "Write the file, please."}]
TOOLS = [{"type": "function", "function": {
    "name": "write_file", "description": "Write a text file.",
    "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "content": {"type": "string"}}, "required": ["path", "content"]}}}]
END_OF_TURN = "<|im_end|>\n"


def payload(size: int) -> str:
    """``size`` characters of code-like text: quotes, backslashes, ``<``, unicode, newlines."""
    lines: list[str] = []
    total, i = 0, 0
    while total < size:
        line = f'def f{i}(x):  # naïve café 東京 😀\n    return "a\\\\b" if x < {i} else \'</div>\'\n'
        lines.append(line)
        total += len(line)
        i += 1
    return "".join(lines)[:size]


@dataclass
class Case:
    """One output shape: how to render it and where the payload comes back."""

    name: str
    template: str
    turn: Callable[[str], dict[str, Any]]
    extract: Callable[[dict[str, Any]], str]


def _call_turn(value: str) -> dict[str, Any]:
    args = {"path": "/tmp/out.py", "content": value}
    return {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "write_file", "arguments": args}}]}


def _call_payload(msg: dict[str, Any]) -> str:
    return json.loads(msg["tool_calls"][0]["function"]["arguments"])["content"]


CASES = [
    Case("xml", "xml_params.jinja", _call_turn, _call_payload),
    Case("hermes", "hermes_json.jinja", _call_turn, _call_payload),
    Case("reasoning", "qwen3_think_json.jinja",
         lambda v: {"role": "assistant", "reasoning_content": v, "content": "Done."},
         lambda m: m["reasoning_content"] or ""),
]


def model_text(tmpl: ChatTemplate, turn: dict[str, Any]) -> str:
    """The text the model generates: the rendered turn after the prompt, minus the end of turn."""
    prompt = tmpl.render(HISTORY, tools=TOOLS, add_generation_prompt=True)
    full = tmpl.render([*HISTORY, turn], tools=TOOLS, add_generation_prompt=False)
    assert full.startswith(prompt), "generation prompt is not a prefix of the rendered turn"
    text = full[len(prompt):]
    return text.removesuffix(END_OF_TURN)


def stream_once(req: Any, text: str, chunk: int) -> tuple[float, float, list[dict[str, Any]]]:
    """(CPU seconds, wall seconds, deltas) of streaming ``text`` ``chunk`` characters at a time."""
    s = req.stream()
    deltas: list[dict[str, Any]] = []
    c0, t0 = time.process_time(), time.perf_counter()
    for i in range(0, len(text), chunk):
        deltas.extend(s.feed(text[i:i + chunk]))
    deltas.extend(s.finish())
    return time.process_time() - c0, time.perf_counter() - t0, deltas


def check(req: Any, text: str, deltas: list[dict[str, Any]], value: str, case: Case) -> list[str]:
    """Correctness problems of one streamed run (empty when all is well)."""
    problems: list[str] = []
    parsed = req.parse(text).to_dict()
    merged = merge_deltas(deltas)
    if merged != parsed:
        problems.append("merged deltas != req.parse(text)")
    fragments: dict[int, str] = {}
    for d in deltas:
        for tc in d.get("tool_calls") or []:
            fragments[tc["index"]] = fragments.get(tc["index"], "") + ((tc.get("function") or {}).get("arguments") or "")
    for i, call in enumerate(parsed.get("tool_calls") or []):
        if fragments.get(i, "") != call["function"]["arguments"]:
            problems.append(f"call {i}: argument fragments do not concatenate to the final arguments")
    try:
        if case.extract(parsed) != value:
            problems.append("payload changed on the way through")
    except (ValueError, KeyError, IndexError, TypeError) as e:
        problems.append(f"payload not found: {type(e).__name__}: {e}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="runs per size; the best is reported (default 3)")
    ap.add_argument("--chunk", type=int, default=4, help="characters per feed (default 4)")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a timing target is missed too")
    args = ap.parse_args(argv)

    print(f"streaming {args.chunk} characters per feed, best of {args.repeat} runs; CPU seconds "
          f"(time.process_time), and the 64K wall time (time.perf_counter)\n")
    head = f"{'case':<10}" + "".join(f"{s // 1024:>8}K" for s in SIZES) + f"{'64K/16K':>9}{'64K wall':>10}  " \
        f"{'ratio':<6}{'64K time':<9}check"
    print(head)
    print("-" * len(head))
    bad_check = bad_target = False
    for case in CASES:
        tmpl = ChatTemplate.from_file(TEMPLATES / case.template, bos_token="<s>", eos_token="</s>")
        req = tmpl.apply(HISTORY, tools=TOOLS)
        times: dict[int, float] = {}
        walls: dict[int, float] = {}
        problems: list[str] = []
        for size in SIZES:
            value = payload(size)
            text = model_text(tmpl, case.turn(value))
            cpu_runs, wall_runs = [], []
            for _ in range(max(1, args.repeat)):
                cpu, wall, deltas = stream_once(req, text, args.chunk)
                cpu_runs.append(cpu)
                wall_runs.append(wall)
            times[size], walls[size] = min(cpu_runs), min(wall_runs)
            problems += [f"{size // 1024}K: {p}" for p in check(req, text, deltas, value, case)]
        ratio = times[SIZES[-1]] / times[SIZES[-2]]
        ratio_ok = ratio <= RATIO_TARGET
        time_ok = times[SIZES[-1]] <= SECONDS_TARGET_64K
        bad_check |= bool(problems)
        bad_target |= not (ratio_ok and time_ok)
        print(f"{case.name:<10}" + "".join(f"{times[s]:>9.3f}" for s in SIZES) + f"{ratio:>9.2f}"
              f"{walls[SIZES[-1]]:>10.3f}  "
              f"{'OK' if ratio_ok else 'FAIL':<6}{'OK' if time_ok else 'FAIL':<9}{'FAIL' if problems else 'OK'}")
        for p in problems:
            print(f"    {case.name}: {p}")
    print(f"\ntargets: 64K/16K ratio <= {RATIO_TARGET:g} (quadratic ~16), 64 KB <= {SECONDS_TARGET_64K:g} s")
    if bad_check:
        print("correctness: FAIL")
        return 1
    print("correctness: OK")
    return 1 if (args.strict and bad_target) else 0


if __name__ == "__main__":
    sys.exit(main())
