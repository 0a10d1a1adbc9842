#!/usr/bin/env python3
"""Analysis cost benchmark (issue 2): cold analysis and warm ``apply()`` per template.

For every ``*.jinja`` in the third-party corpus (``../shared/templates``, or
``$AUTOPARSER_SHARED/templates``, or the folders/files given on the command line):

* **cold**: clear the analysis and compile caches, then time
  ``ChatTemplate.from_file(...)`` plus the first ``.analysis`` (compile + every probe render);
  best of ``--repeat`` runs;
* **cold + verification**: the same, plus ``tmpl.analysis.verification`` (the self-test
  that verifies the analysis, issue 17): what a server pays before its first request;
* **warm apply**: with that analysis cached, time ``tmpl.apply(history, tools=TOOLS)``
  (one render of the prompt plus building the parser spec); median of ``--applies`` calls;
* **warm apply + parse**: the same plus the request's first ``parse`` of a short answer (what a
  server pays per request: the parser's tables are built for the request, or shared with an
  earlier request whose output may be the same).

Both are measured as CPU time of this process (``time.process_time``, robust to other load on
the machine) and as wall time (``time.perf_counter``). Prints median / p90 / max over
templates, the slowest templates, and the failures. The targets apply to the CPU figures:
median cold analysis (verification included) <= 30 ms, median warm apply <= 1 ms.
``--key`` times the key templates (``../shared/conformance/key-templates.txt``) only.

    python benchmarks/analysis.py [--key] [--repeat N] [--applies N] [--slowest 5] [PATH ...]
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import autoparser
import autoparser.analysis
from autoparser import ChatTemplate

COLD_TARGET_MS = 30.0
APPLY_TARGET_MS = 1.0
BOS, EOS = "<s>", "</s>"
HISTORIES: list[list[dict[str, Any]]] = [
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "What is the weather in Paris?"}],
    [{"role": "user", "content": "What is the weather in Paris?"}],
]
ANSWER = "The weather in Paris is sunny, 21 degrees."
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather for a city.",
    "parameters": {"type": "object", "properties": {
        "location": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["location"]}}}]


def shared_dir() -> Path:
    """``$AUTOPARSER_SHARED`` or the ``shared`` folder next to the repository."""
    env = os.environ.get("AUTOPARSER_SHARED")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared"


def clear_caches() -> None:
    """Forget every cached analysis and compiled template."""
    clear = getattr(autoparser.analysis, "clear_cache", None)
    if callable(clear):
        clear()
    else:   # older trees
        autoparser.analysis._analyze_cached.cache_clear()
    try:
        from autoparser.render import renderer
    except ImportError:
        return
    clear = getattr(renderer, "clear_caches", None)   # every compile-side cache, where available
    if callable(clear):
        clear()
        return
    compile_fn = getattr(renderer, "_compile", None)
    if compile_fn is not None and hasattr(compile_fn, "cache_clear"):
        compile_fn.cache_clear()


@dataclass
class Result:
    """Timings (milliseconds; CPU time, and wall time in ``*_wall_ms``) for one template."""

    name: str
    cold_ms: float | None = None
    cold_wall_ms: float | None = None
    verified_ms: float | None = None      # cold analysis plus its verification (CPU)
    apply_ms: float | None = None
    apply_wall_ms: float | None = None
    apply_parse_ms: float | None = None   # apply plus the request's first parse (CPU)
    errors: list[str] = field(default_factory=list)


def _first_line(e: Exception) -> str:
    text = str(e)
    return f"{type(e).__name__}: {text.splitlines()[0][:100] if text else ''}"


def time_template(path: Path, repeat: int, applies: int) -> Result:
    res = Result(path.name)
    tmpl: ChatTemplate | None = None
    cpu: list[float] = []
    wall: list[float] = []
    verified: list[float] = []
    for _ in range(max(1, repeat)):
        clear_caches()
        c0, t0 = time.process_time(), time.perf_counter()
        try:
            tmpl = ChatTemplate.from_file(path, bos_token=BOS, eos_token=EOS)
            tmpl.analysis  # noqa: B018 - the property runs the analysis
        except Exception as e:  # the corpus holds templates the project may not support yet
            res.errors.append(f"analysis: {_first_line(e)}")
            return res
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        verification = getattr(tmpl.analysis, "verification", None)   # older trees: none
        if verification is not None:
            verified.append(time.process_time() - c0)
    res.cold_ms, res.cold_wall_ms = 1000 * min(cpu), 1000 * min(wall)
    res.verified_ms = 1000 * min(verified) if verified else None
    assert tmpl is not None
    last_error = ""
    for history in HISTORIES:
        try:
            tmpl.apply(history, tools=TOOLS)  # warm-up: first render of this shape
        except Exception as e:
            last_error = f"apply: {_first_line(e)}"
            continue
        cpu, wall = [], []
        for _ in range(max(1, applies)):
            c0, t0 = time.process_time(), time.perf_counter()
            tmpl.apply(history, tools=TOOLS)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        res.apply_ms, res.apply_wall_ms = 1000 * statistics.median(cpu), 1000 * statistics.median(wall)
        cpu = []
        for _ in range(max(1, applies)):
            c0 = time.process_time()
            tmpl.apply(history, tools=TOOLS).parse(ANSWER)
            cpu.append(time.process_time() - c0)
        res.apply_parse_ms = 1000 * statistics.median(cpu)
        return res
    res.errors.append(last_error)
    return res


def collect(paths: list[str]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, paths):
        files.extend(sorted(p.glob("*.jinja")) if p.is_dir() else [p])
    return files


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("paths", nargs="*", help="templates or folders (default: the shared corpus)")
    ap.add_argument("--key", action="store_true", help="the key templates of ../shared/conformance only")
    ap.add_argument("--repeat", type=int, default=3, help="cold runs per template, best kept (default 3)")
    ap.add_argument("--applies", type=int, default=20, help="warm apply() calls per template (default 20)")
    ap.add_argument("--slowest", type=int, default=5)
    ap.add_argument("--errors", action="store_true", help="list every template that failed")
    ap.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    args = ap.parse_args(argv)
    logging.getLogger("autoparser").setLevel(logging.ERROR)   # the verification's failed-template warnings

    paths = args.paths or [str(shared_dir() / "templates")]
    files = collect(paths)
    if args.key:
        key = set((shared_dir() / "conformance" / "key-templates.txt").read_text(encoding="utf-8").split())
        files = [f for f in files if f.name in key]
    if not files:
        print(f"no templates found in {', '.join(paths)}", file=sys.stderr)
        return 2
    t_all, c_all = time.perf_counter(), time.process_time()
    results = [time_template(f, args.repeat, args.applies) for f in files]
    wall, cpu = time.perf_counter() - t_all, time.process_time() - c_all
    cold = [r.cold_ms for r in results if r.cold_ms is not None]
    warm = [r.apply_ms for r in results if r.apply_ms is not None]

    print(f"{len(files)} templates, {len(cold)} analysed, {len(warm)} applied, "
          f"{wall:.1f} s wall, {cpu:.1f} s CPU (best of {max(1, args.repeat)} cold runs)\n")
    print(f"{'':<27}{'n':>5}{'median':>9}{'p90':>9}{'max':>9}{'target':>9}  ok")
    ok = True
    rows: tuple[tuple[str, list[float], float | None], ...] = (
        ("cold analysis, CPU (ms)", cold, COLD_TARGET_MS),
        ("cold analysis, wall (ms)", [r.cold_wall_ms for r in results if r.cold_wall_ms is not None], None),
        ("cold + verification (ms)", [r.verified_ms for r in results if r.verified_ms is not None], COLD_TARGET_MS),
        ("warm apply, CPU (ms)", warm, APPLY_TARGET_MS),
        ("warm apply, wall (ms)", [r.apply_wall_ms for r in results if r.apply_wall_ms is not None], None),
        ("warm apply + parse (ms)", [r.apply_parse_ms for r in results if r.apply_parse_ms is not None], None))
    for label, values, target in rows:
        if not values:
            print(f"{label:<27}{0:>5}")
            ok &= target is None
            continue
        med = statistics.median(values)
        verdict = "" if target is None else "OK" if med <= target else "FAIL"
        ok &= target is None or med <= target
        print(f"{label:<27}{len(values):>5}{med:>9.3f}{pct(values, 0.9):>9.3f}{max(values):>9.3f}"
              f"{'' if target is None else f'{target:g}':>9}  {verdict}")

    print(f"\nslowest {args.slowest} cold analyses (CPU; wall):")
    for r in sorted((r for r in results if r.cold_ms is not None), key=lambda r: -(r.cold_ms or 0))[:args.slowest]:
        apply = f"{r.apply_ms:8.2f}" if r.apply_ms is not None else "       -"
        print(f"  {r.cold_ms:9.1f} ms {r.cold_wall_ms:9.1f} ms   apply {apply} ms   {r.name}")
    print(f"\nslowest {args.slowest} warm applies:")
    for r in sorted((r for r in results if r.apply_ms is not None), key=lambda r: -(r.apply_ms or 0))[:args.slowest]:
        print(f"  {r.apply_ms:9.2f} ms   {r.name}")

    failed = [r for r in results if r.errors]
    if failed:
        print(f"\n{len(failed)} templates failed (left out of the figures)"
              + ("" if args.errors else "; --errors lists them"))
        for r in failed if args.errors else []:
            print(f"  {r.name}: {r.errors[0]}")
    return 1 if (args.strict and not ok) else 0


if __name__ == "__main__":
    sys.exit(main())
