"""Measure how many unfamiliar call formats the analysis reads (issue 21's measuring stick).

Writes three template sets into a folder and runs the conformance harness
(``../shared/conformance/roundtrip.py --stream``) on each:

* ``axes``: formats drawn from issue 21's axes (``tests/synth_axes.py``, seeded);
* ``novel``: formats along axes no issue lists (``tests/synth_novel.py``, seeded);
* ``fixtures``: the hand-written templates waiting in ``templates/incoming/``.

Prints per set the scenarios passed and the formats read whole ("formats read whole: 10/48"),
with ``--by-axis`` which axis values fail and with ``--why N`` the commonest failure reasons; the
harness's full results are left in ``<out>/<set>/_result.json`` (``-v`` shows its warnings). The code measured is the autoparser package under
``--code`` (default: the checkout holding this script), so it measures /work/main or any worktree.

Usage:
    python tools/zoo.py                          # all sets: 48 axes formats, 48 novel ones; streaming on
    python tools/zoo.py --sets axes --limit 520  # the whole fixed draw
    python tools/zoo.py --seed 7 --limit 100     # another draw
    python tools/zoo.py --code /work/main --grammar --by-axis
    python tools/zoo.py --update-known --jobs 2  # rewrite tests/synth_known_unread.txt (tests/test_synth.py)
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import synth_axes  # noqa: E402

HARNESS = ROOT.parent / "shared" / "conformance" / "roundtrip.py"
SETS = ("axes", "novel", "fixtures")
PINNED = int(datetime(2026, 1, 15, tzinfo=timezone.utc).timestamp())   # the harness pins strftime_now


def write_axes(folder: Path, limit: int, seed: int) -> dict[str, str]:
    """The axes draw as ``ax###_<encoding>_<placement>.jinja``; returns file name -> axes key."""
    formats = synth_axes.draw(limit, seed) if seed != synth_axes.SEED or limit > len(synth_axes.DRAWN) \
        else synth_axes.DRAWN[:limit]
    out = {}
    for i, f in enumerate(formats):
        name = f"ax{i:03d}_{f.encoding}_{f.placement}.jinja"
        (folder / name).write_text(synth_axes.render(f), encoding="utf-8")
        out[name] = f.key
    return out


def write_novel(folder: Path, limit: int, seed: int) -> dict[str, str]:
    import synth_novel

    formats = synth_novel.DRAWN[:limit] if seed == synth_novel.SEED and limit <= len(synth_novel.DRAWN) \
        else synth_novel.draw(limit, seed)
    out = {}
    for i, f in enumerate(formats):
        name = f"nv{i:02d}_{f.form}.jinja"
        (folder / name).write_text(synth_novel.render(f), encoding="utf-8")
        out[name] = f.key
    return out


def write_fixtures(folder: Path) -> dict[str, str]:
    out = {}
    for path in sorted((ROOT / "templates" / "incoming").glob("*.jinja")):
        shutil.copy(path, folder / path.name)
        out[path.name] = path.stem
    return out


def run_harness(folder: Path, code: Path, stream: bool, grammar: bool, quiet: bool) -> list[dict[str, object]]:
    """The harness's per-template results on every template of ``folder``."""
    report = folder / "_result.json"
    cmd = [sys.executable, str(HARNESS), str(folder), "--json", str(report)]
    cmd += ["--stream"] if stream else []
    cmd += ["--grammar"] if grammar else []
    env = dict(os.environ, PYTHONPATH=str(code), SOURCE_DATE_EPOCH=str(PINNED))
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, cwd=str(code),
                   stderr=subprocess.DEVNULL if quiet else None)
    results: list[dict[str, object]] = json.loads(report.read_text(encoding="utf-8"))
    return results


def summary(results: list[dict[str, object]]) -> tuple[int, int, int, int]:
    """(scenarios passed, failed, n/a, formats read whole)."""
    passed = failed = na = whole = 0
    for r in results:
        states = [s["status"] for s in r["scenarios"].values()]   # type: ignore[attr-defined]
        p, f, n = states.count("pass"), states.count("fail") + bool(r["error"]), states.count("n/a")
        passed, failed, na = passed + p, failed + f, na + n
        whole += f == 0 and p > 0
    return passed, failed, na, whole


def by_axis(results: list[dict[str, object]], keys: dict[str, str], axes: list[str]) -> list[str]:
    """Lines: per axis value, formats not read whole / formats."""
    total: collections.Counter[tuple[str, str]] = collections.Counter()
    bad: collections.Counter[tuple[str, str]] = collections.Counter()
    for r in results:
        key = keys.get(str(r["template"]))
        if key is None:
            continue
        states = [s["status"] for s in r["scenarios"].values()]   # type: ignore[attr-defined]
        ok = "fail" not in states and not r["error"] and "pass" in states
        for axis, value in zip(axes, key.split("-"), strict=False):
            value = value.split(".")[0] if axis in ("envelope", "name", "id") else value
            total[axis, value] += 1
            bad[axis, value] += not ok
    return [f"    {a:11} {v:16} not whole {bad[a, v]:3}/{total[a, v]}" for a, v in sorted(total)]


def failures(results: list[dict[str, object]], most: int) -> list[str]:
    """The most common failure reasons (first 60 characters)."""
    why: collections.Counter[str] = collections.Counter()
    for r in results:
        if r["error"]:
            why[f"error: {str(r['error'])[:60]}"] += 1
        for s in r["scenarios"].values():   # type: ignore[attr-defined]
            if s["status"] == "fail":
                why[str(s["why"])[:60]] += 1
    return [f"    {n:4}  {w}" for w, n in why.most_common(most)]


def _check_one(case: tuple[str, str, str]) -> tuple[str, str | None]:
    import synth_check

    set_name, key, source = case
    return f"{set_name} {key}", synth_check.reads_whole(source, key, synth_check.calls_required(set_name, key))


def update_known(code: Path, jobs: int) -> int:
    """Rewrite tests/synth_known_unread.txt: the drawn formats ``reads_whole`` fails with ``code``."""
    import multiprocessing

    sys.path.insert(0, str(code))
    os.environ.setdefault("SOURCE_DATE_EPOCH", str(PINNED))
    import synth_check

    cases = list(synth_check.drawn())
    if jobs > 1:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            results = pool.map(_check_one, cases, chunksize=8)
    else:
        results = [_check_one(c) for c in cases]
    unread = [line for line, why in results if why is not None]
    before = synth_check.KNOWN_UNREAD
    synth_check.write_known(unread)
    print(f"{len(cases) - len(unread)}/{len(cases)} drawn formats read whole; {len(unread)} listed in "
          f"{synth_check.KNOWN_FILE.name} (newly read: {len(before - set(unread))}, newly unread: "
          f"{len(set(unread) - before)})")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", default=",".join(SETS), help="comma-separated: axes,novel,fixtures")
    ap.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "zoo", help="folder for the sets")
    ap.add_argument("--code", type=Path, default=ROOT, help="checkout whose autoparser is measured")
    ap.add_argument("--limit", type=int, default=48, help="axes formats to write (the fixed draw has 520)")
    ap.add_argument("--novel-limit", type=int, default=48, help="novel formats to write (the fixed draw has 48)")
    ap.add_argument("--seed", type=int, default=synth_axes.SEED, help="seed of the axes draw")
    ap.add_argument("--novel-seed", type=int, default=21, help="seed of the novel draw")
    ap.add_argument("--no-stream", action="store_true", help="skip the streaming checks")
    ap.add_argument("--grammar", action="store_true", help="also check the GBNF accepts each call text")
    ap.add_argument("--by-axis", action="store_true", help="per axis value: formats not read whole")
    ap.add_argument("--why", type=int, default=0, metavar="N", help="print the N most common failure reasons")
    ap.add_argument("-v", "--verbose", action="store_true", help="show the warnings the harness prints")
    ap.add_argument("--update-known", action="store_true",
                    help="rewrite tests/synth_known_unread.txt from --code's self-test over every drawn format")
    ap.add_argument("--jobs", type=int, default=1, help="processes for --update-known")
    args = ap.parse_args(argv)
    if args.update_known:
        return update_known(args.code.resolve(), args.jobs)
    if not HARNESS.is_file():
        print(f"no conformance harness at {HARNESS}")
        return 2
    sets = [s for s in args.sets.split(",") if s]
    for name in sets:
        if name not in SETS:
            ap.error(f"unknown set {name!r}")
        folder = args.out / name
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        keys = (write_axes(folder, args.limit, args.seed) if name == "axes" else
                write_novel(folder, args.novel_limit, args.novel_seed) if name == "novel" else write_fixtures(folder))
        if not keys:
            print(f"{name:8}  no templates")
            continue
        results = run_harness(folder, args.code.resolve(), not args.no_stream, args.grammar, not args.verbose)
        passed, failed, na, whole = summary(results)
        print(f"{name:8}  scenarios {passed}/{passed + failed} passed ({na} n/a)   "
              f"formats read whole: {whole}/{len(results)}   [{folder}]")
        if args.by_axis and name != "fixtures":
            axes = list(synth_axes.AXES) if name == "axes" else list(__import__("synth_novel").AXES)
            print("\n".join(by_axis(results, keys, axes)))
        if args.why:
            print("\n".join(failures(results, args.why)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
