"""Check that templates are detected: the CI gate for new and changed chat templates.

For each template (a .jinja file, a model folder, a tokenizer_config.json or a .gguf;
a folder is searched for *.jinja, *.gguf and model folders) this

1. loads and renders it (a template that does not compile or render fails);
2. analyses it and flags undetected support: the template renders tool calls or
   reasoning but no format was found;
3. reports the self-test as the template's verdict (``tmpl.verdict``: the record the library
   itself uses at run time, ``analysis.verification``, with the accepted limitations applied):
   known turns (content, reasoning, one and two tool calls, content or reasoning with a call,
   one call per argument type) rendered and parsed back (see autoparser.selftest and
   autoparser.analysis.verification). A failure that --accept (or $AUTOPARSER_ACCEPT, which
   the server plugins read too) names is shown as accepted and fails nothing: the same
   verdict refuses a template in the vLLM plugin and warns in req.warnings;
4. compares the analysis with the stored expectation <stem>.expected.json (beside the
   template, or in --expect DIR); --update writes the expectations instead.

Exit status 0 when every template passes, 1 on any render failure, undetected support,
self-test failure or drift from the expectation, 2 on usage errors.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any

from ..analysis.verdict import parse_accept
from ._checks import STATUSES, Item, Options, Result, check_item, collect
from ._common import USAGE, CliError, add_source_arguments, console, print_json

HELP = "CI check: analyse, self-test and compare templates with stored expectations"
FORMATS = ("text", "json", "markdown", "github")
IN_PROCESS_BELOW = 4   # fewer templates than this run without a process pool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_source_arguments(parser, many=True)
    parser.add_argument("--expect", metavar="DIR",
                        help="folder of <stem>.expected.json files (default: beside each template)")
    parser.add_argument("--update", action="store_true",
                        help="write the current analysis as the expectation instead of comparing")
    parser.add_argument("--require-expect", action="store_true",
                        help="fail templates that have no expectation file")
    parser.add_argument("--no-expect", action="store_true", help="skip the expectation comparison")
    parser.add_argument("--skip-selftest", action="store_true", help="skip the render-and-parse self-test")
    parser.add_argument("--accept", action="append", default=[], metavar="TEMPLATE:CAPABILITY",
                        help="accept a known limitation: a template (file name, stem or *) and a self-test scenario "
                             "or capability (or *), e.g. openai-gpt-oss-120b.jinja:content_tool; or a file of such "
                             "lines. Repeatable; $AUTOPARSER_ACCEPT adds more (the server plugins read it too)")
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="report format; github prints ::error annotations (default: text)")
    parser.add_argument("-j", "--jobs", type=int, default=0, metavar="N",
                        help="worker processes (default: the usable CPU count)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (it goes to stderr)")
    parser.add_argument("-v", "--verbose", action="store_true", help="list every template, not only problems")


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def run(args: argparse.Namespace) -> int:
    if args.update and args.no_expect:
        raise CliError("--update and --no-expect contradict each other", USAGE)
    if args.jobs < 0:
        raise CliError("--jobs must be at least 0", USAGE)
    items = collect(args.paths, args.expect)
    if args.expect and (args.update or not args.no_expect):
        expect_dir = os.path.abspath(args.expect)
        if args.update:
            os.makedirs(expect_dir, exist_ok=True)
        elif not os.path.isdir(expect_dir):
            raise CliError(f"--expect {args.expect}: no such directory", USAGE)
    try:
        accepted = tuple(str(a) for a in parse_accept(args.accept))
    except (ValueError, OSError) as e:
        raise CliError(f"--accept: {e}", USAGE) from None
    options = Options(selftest=not args.skip_selftest, accept=accepted,
                      expect="off" if args.no_expect else "update" if args.update else "compare",
                      require_expect=args.require_expect, template_name=args.template_name,
                      bos_token=args.bos_token, eos_token=args.eos_token)
    started = time.perf_counter()
    progress = not args.no_progress
    results = run_checks(items, options, jobs=args.jobs or _cpus(), progress=progress)
    seconds = time.perf_counter() - started
    report = REPORTERS[args.format]
    report(results, seconds, args)
    return 1 if any(r.problems for r in results) else 0


# ------------------------------------------------------------------ running
def _groups(items: list[Item]) -> dict[str, int]:
    groups: Counter[str] = Counter(i.group for i in items)
    return dict(groups)


def run_checks(items: list[Item], options: Options, *, jobs: int = 1, progress: bool = False) -> list[Result]:
    """Check every item; results come back in the order of ``items``.

    With ``jobs`` > 1 the items go to a process pool; its workers start before the progress
    bar's refresh thread, so no thread is running when they fork.
    """
    done: dict[int, list[dict[str, Any]]] = {}
    pool = None
    if jobs > 1 and len(items) >= IN_PROCESS_BELOW:
        pool = ProcessPoolExecutor(max_workers=min(jobs, len(items)))
    bar = None
    try:
        futures = {pool.submit(check_item, item, options): i for i, item in enumerate(items)} if pool else {}
        if progress:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

            bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                           TimeElapsedColumn(), console=console(stderr=True), transient=False)
            tasks = {group: bar.add_task(group, total=n) for group, n in _groups(items).items()}
            bar.start()
        completed: Iterator[tuple[int, list[dict[str, Any]]]] = (
            ((futures[f], f.result()) for f in as_completed(futures)) if pool
            else ((i, check_item(item, options)) for i, item in enumerate(items)))
        for i, res in completed:
            done[i] = res
            if bar is not None:
                bar.advance(tasks[items[i].group])
    finally:
        if bar is not None:
            bar.stop()
            if not bar.console.is_terminal:
                bar.console.line()   # not animated: the final bar is printed once, without a newline
            bar.console.file.flush()
        if pool is not None:
            pool.shutdown(cancel_futures=True)
    return [Result.from_dict(r) for i in range(len(items)) for r in done[i]]


# ------------------------------------------------------------------ summaries
def summary(results: list[Result], seconds: float) -> dict[str, Any]:
    status = Counter(r.status for r in results)
    kinds = Counter(p.kind for r in results for p in r.problems)
    kinds_by_template = Counter(k for r in results for k in {p.kind for p in r.problems})
    expect = Counter(r.expectation for r in results)
    scenarios = Counter(s for r in results for s in r.selftest.values())
    return {
        "templates": len(results),
        **{s: status.get(s, 0) for s in STATUSES},
        "ok": sum(1 for r in results if not r.problems),
        "with_problems": sum(1 for r in results if r.problems),
        "problems": dict(sorted(kinds.items())),
        "templates_by_problem": dict(sorted(kinds_by_template.items())),
        "tool_formats": dict(Counter(r.tools for r in results if r.status != "error")),
        "reasoning_formats": dict(Counter(r.reasoning for r in results if r.status != "error")),
        "selftest": {k: scenarios.get(k, 0) for k in ("pass", "fail", "n/a", "accepted") if k != "accepted" or k in scenarios},
        "expectations": dict(sorted(expect.items())),
        "seconds": round(seconds, 2),
    }


def _selftest_cell(r: Result) -> str:
    if not r.selftest:
        return "-"
    c = r.counts()
    accepted = f" (+{c['accepted']} accepted)" if c.get("accepted") else ""
    return f"{c['pass']}/{c['fail']}/{c['n/a']}{accepted}"


def _short_name(r: Result) -> str:
    """The template's path relative to the folder it was found in (the table's title names the folder)."""
    prefix = r.group.rstrip("/\\") + os.sep
    return r.display[len(prefix):] if r.display.startswith(prefix) else r.display


def _detail(r: Result) -> str:
    if not r.problems:
        return r.expectation if r.expectation != "skipped" else ""
    first = r.problems[0].message
    return first + (f" (+{len(r.problems) - 1} more)" if len(r.problems) > 1 else "")


# ------------------------------------------------------------------ reporters
STATUS_STYLE = {"detected": "green", "plain": "cyan", "undetected": "bold yellow", "failing": "bold red",
                "error": "bold red"}


def report_text(results: list[Result], seconds: float, args: argparse.Namespace) -> None:
    from rich.table import Table
    from rich.text import Text

    out = console()
    shown = results if args.verbose else [r for r in results if r.problems]
    if shown:
        folders = sorted({r.group for r in shown if r.display.startswith(r.group.rstrip("/\\") + os.sep)})
        title = ("Templates" if args.verbose else "Templates with problems") + (
            f" (in {', '.join(folders)})" if folders else "")
        table = Table(title=title, title_justify="left")
        table.add_column("template", overflow="fold")
        table.add_column("status")
        table.add_column("reasoning")
        table.add_column("tools")
        table.add_column("self-test\npass/fail/na", justify="center")
        table.add_column("details", overflow="fold", ratio=1)
        for r in shown:
            table.add_row(_short_name(r), Text(r.status, style=STATUS_STYLE[r.status]), r.reasoning or "-", r.tools or "-",
                          _selftest_cell(r), _detail(r))
        out.print(table)
    s = summary(results, seconds)
    table = Table(title="Summary", title_justify="left")
    for col, style in (("templates", "bold"), ("detected", "green"), ("plain", "cyan"),
                       ("undetected", "yellow"), ("failing", "red"), ("errors", "red")):
        table.add_column(col, justify="right", style=style)
    table.add_row(str(s["templates"]), str(s["detected"]), str(s["plain"]), str(s["undetected"]),
                  str(s["failing"]), str(s["error"]))
    out.print(table)
    details = []
    if s["problems"]:
        details.append("problems: " + ", ".join(f"{k} {v}" for k, v in s["templates_by_problem"].items()))
    details.append("self-test scenarios: " + ", ".join(f"{k} {v}" for k, v in s["selftest"].items()))
    details.append("expectations: " + (", ".join(f"{k} {v}" for k, v in s["expectations"].items()) or "-"))
    details.append(f"{s['templates']} templates in {seconds:.1f} s; "
                   + ("all passed" if not s["with_problems"] else f"{s['with_problems']} with problems"))
    for line in details[:-1]:
        out.print(line, style="dim", markup=False)
    out.print(details[-1], style="bold red" if s["with_problems"] else "bold green", markup=False)


def report_json(results: list[Result], seconds: float, args: argparse.Namespace) -> None:
    print_json({"summary": summary(results, seconds), "templates": [r.to_dict() for r in results]})


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(results: list[Result], seconds: float, verbose: bool = False) -> str:
    s = summary(results, seconds)
    lines = ["## autoparser check", "",
             "| templates | detected | plain | undetected | failing | errors | time |",
             "|---:|---:|---:|---:|---:|---:|---:|",
             f"| {s['templates']} | {s['detected']} | {s['plain']} | {s['undetected']} | {s['failing']} "
             f"| {s['error']} | {seconds:.1f} s |", ""]
    shown = results if verbose else [r for r in results if r.problems]
    if shown:
        lines += ["| template | status | reasoning | tools | self-test (pass/fail/n/a) | details |",
                  "|---|---|---|---|---|---|"]
        lines += [f"| `{_md(r.display)}` | {r.status} | {r.reasoning or '-'} | {r.tools or '-'} | {_selftest_cell(r)} "
                  f"| {_md(_detail(r))} |" for r in shown]
    else:
        lines.append("All templates passed.")
    return "\n".join(lines) + "\n"


def report_markdown(results: list[Result], seconds: float, args: argparse.Namespace) -> None:
    sys.stdout.write(markdown(results, seconds, args.verbose))


def _gh_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _gh_prop(text: str) -> str:
    return _gh_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotations(results: list[Result]) -> list[str]:
    lines = []
    for r in results:
        path = r.path or r.display
        for p in r.problems:
            props = f"file={_gh_prop(path)}"
            if p.line:
                props += f",line={p.line}"
            props += f",title={_gh_prop(f'autoparser check: {p.kind}')}"
            lines.append(f"::error {props}::{_gh_data(p.message)}")
    return lines


def report_github(results: list[Result], seconds: float, args: argparse.Namespace) -> None:
    for line in github_annotations(results):
        print(line)
    s = summary(results, seconds)
    print(f"autoparser check: {s['templates']} templates, {s['detected']} detected, {s['plain']} plain, "
          f"{s['undetected']} undetected, {s['failing']} failing, {s['error']} errors ({seconds:.1f} s)")
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        with open(step_summary, "a", encoding="utf-8") as f:
            f.write(markdown(results, seconds))


REPORTERS: dict[str, Callable[[list[Result], float, argparse.Namespace], None]] = {
    "text": report_text, "json": report_json, "markdown": report_markdown, "github": report_github}
