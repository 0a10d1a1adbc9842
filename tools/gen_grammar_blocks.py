"""Write the reusable GBNF blocks in grammars/ from autoparser.grammar.schema.

Each block (json, string, number, space) is rendered by ``grammar_block`` so the files
never drift from the code. ``--check`` writes nothing and reports drift instead.

Usage: python tools/gen_grammar_blocks.py [--check] [--out DIR]
Exit status is 1 with --check when a block file is missing or differs.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autoparser.grammar.schema import BLOCKS, grammar_block  # noqa: E402

GRAMMARS = ROOT / "grammars"


def expected_blocks() -> dict[str, str]:
    """File name -> text for every block."""
    return {f"{kind}.gbnf": grammar_block(kind) for kind in BLOCKS}


def drift(out: Path) -> list[str]:
    """Unified diffs (or 'missing' notes) for block files that differ from the code."""
    problems = []
    for name, text in expected_blocks().items():
        path = out / name
        if not path.exists():
            problems.append(f"{path}: missing")
            continue
        current = path.read_text(encoding="utf-8")
        if current != text:
            diff = difflib.unified_diff(current.splitlines(True), text.splitlines(True), str(path), "generated")
            problems.append("".join(diff))
    return problems


def write(out: Path) -> list[Path]:
    """Write every block file that changed; return the paths written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in expected_blocks().items():
        path = out / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--check", action="store_true", help="report drift and exit 1 instead of writing")
    ap.add_argument("--out", type=Path, default=GRAMMARS, help="output directory (default: grammars/)")
    args = ap.parse_args(argv)
    if args.check:
        problems = drift(args.out)
        for problem in problems:
            print(problem)
        print(f"{len(problems)} block(s) out of date" if problems else "grammar blocks up to date")
        return 1 if problems else 0
    for path in write(args.out):
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
