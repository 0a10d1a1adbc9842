"""Regenerate the analysis snapshots of the fixture templates: templates/<stem>.expected.json.

Each snapshot is ``analysis.to_dict()`` without the volatile ``digest`` and ``template``
fields, for the template loaded exactly as ``autoparser check`` loads it (a bare .jinja
file renders with BOS ``<s>`` and EOS ``</s>``). ``autoparser check templates/`` compares
against these files.

Usage:
    python tools/update_expectations.py            # rewrite the snapshots that changed
    python tools/update_expectations.py --check    # exit 1 when a snapshot is missing or drifted
    python tools/update_expectations.py NAME ...   # only these fixtures (stem or file name)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autoparser.cli._checks import (  # noqa: E402
    EXPECT_SUFFIX,
    diff,
    dump_expectation,
    expected_dict,
    normalize,
    read_expectation,
)
from autoparser.cli._common import load_template  # noqa: E402

TEMPLATES = ROOT / "templates"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="fixture stems or file names (default: every templates/*.jinja)")
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 on a missing or drifted snapshot")
    ap.add_argument("--dir", type=Path, default=TEMPLATES, help="folder of fixtures (default: templates/)")
    args = ap.parse_args(argv)
    files = sorted(args.dir.glob("*.jinja"))
    if args.names:
        wanted = {Path(n).name.removesuffix(".jinja") for n in args.names}
        files = [f for f in files if f.stem in wanted]
        missing = wanted - {f.stem for f in files}
        if missing:
            print(f"no such fixture: {', '.join(sorted(missing))}", file=sys.stderr)
            return 2
    stale = written = 0
    for path in files:
        current = expected_dict(load_template(path).analysis)
        target = path.with_name(path.stem + EXPECT_SUFFIX)
        try:
            stored = read_expectation(target)
        except ValueError as e:
            stored, problem = None, [str(e)]
        else:
            problem = ["missing"] if stored is None else diff(normalize(stored), current)
        if args.check:
            if not problem:
                continue
            stale += 1
            print(f"drift: {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
            for line in problem[:10]:
                print(f"    {line}")
            continue
        text = dump_expectation(current)
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        target.write_text(text, encoding="utf-8")
        written += 1
        what = "new" if stored is None else f"{len(problem)} changes" if problem else "new fields at their defaults"
        print(f"wrote {target.name} ({what})")
    if args.check:
        print(f"{len(files)} snapshots checked, {stale} drifted")
        return 1 if stale else 0
    print(f"{len(files)} snapshots, {written} written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
