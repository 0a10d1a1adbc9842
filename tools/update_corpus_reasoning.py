"""Regenerate tests/corpus_reasoning.json: the reasoning analysis of every shared corpus template.

For each ``../shared/templates/*.jinja`` (loaded with BOS ``<s>`` and EOS ``</s>``) the file holds
``analysis.reasoning`` as a dict, ``"none"`` when the template shows no reasoning, or the kind of
error that stops it (``"TemplateError"``, ``"AnalysisError"``). ``tests/test_corpus.py`` compares the
corpus with it, so that a change to the reasoning analysis shows, template by template, what it moves:
review each change (it must fix a template whose reasoning was read wrong), then run this tool.

Usage:
    python tools/update_corpus_reasoning.py            # rewrite the file
    python tools/update_corpus_reasoning.py --check    # exit 1 when a template's reasoning differs
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from autoparser import AnalysisError, ChatTemplate, TemplateError  # noqa: E402

SNAPSHOT = ROOT / "tests" / "corpus_reasoning.json"


def shared_templates() -> Path | None:
    """``$AUTOPARSER_SHARED/templates`` if set, else ``../shared/templates``; None when absent."""
    env = os.environ.get("AUTOPARSER_SHARED")
    folder = (Path(env) if env else ROOT.parent / "shared") / "templates"
    return folder if folder.is_dir() else None


def reasoning_of(path: Path) -> Any:
    """What the snapshot stores for one template."""
    try:
        r = ChatTemplate.from_file(path, bos_token="<s>", eos_token="</s>").analysis.reasoning
    except (TemplateError, AnalysisError) as e:
        return type(e).__name__
    return "none" if r.mode == "none" else dataclasses.asdict(r)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a template differs")
    args = ap.parse_args(argv)
    folder = shared_templates()
    if folder is None:
        print("no shared template corpus (set AUTOPARSER_SHARED): nothing to do")
        return 0
    current = {p.name: reasoning_of(p) for p in sorted(folder.glob("*.jinja"))}
    stored = json.loads(SNAPSHOT.read_text(encoding="utf-8")) if SNAPSHOT.is_file() else {}
    changed = sorted(k for k in set(current) | set(stored) if current.get(k) != stored.get(k))
    for name in changed:
        print(f"{name}: {stored.get(name, '<missing>')!r} -> {current.get(name, '<gone>')!r}")
    if args.check:
        print(f"{len(current)} templates checked, {len(changed)} changed")
        return 1 if changed else 0
    SNAPSHOT.write_text(json.dumps(current, indent=1, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {SNAPSHOT.relative_to(ROOT)} ({len(current)} templates, {len(changed)} changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
