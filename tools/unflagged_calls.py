"""Count parsed messages whose tool calls differ from the rendered ones, and how many are flagged.

Every scenario of tests/turns.py (one call, two calls, rich, tricky and escaped arguments, ...)
is rendered through each template and parsed back with ``req.parse``. A message is *wrong*
when its calls (names and arguments) differ from the rendered ones, and *flagged* when the
parse says so: ``malformed``, ``truncated``, a warning, or a call marked ``invalid`` by the
call guard. Issue 17 asks for 0 wrong and unflagged.

Usage:
    python tools/unflagged_calls.py [FOLDER ...]     # default: templates/ and ../shared/templates
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import turns  # noqa: E402

from autoparser import ChatTemplate  # noqa: E402
from autoparser.errors import AutoparserError  # noqa: E402


def calls_of(msg: dict) -> list[tuple[str, object]]:
    out = []
    for c in msg.get("tool_calls") or []:
        fn = c.get("function") or {}
        args = fn.get("arguments")
        with contextlib.suppress(ValueError):
            args = json.loads(args) if isinstance(args, str) else args
        out.append((fn.get("name"), args))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folders", nargs="*", type=Path)
    ap.add_argument("-v", "--verbose", action="store_true", help="list the unflagged cases")
    args = ap.parse_args(argv)
    folders = args.folders or [ROOT / "templates", *([turns.shared_dir() / "templates"] if turns.shared_dir() else [])]
    wrong = flagged = scenarios = 0
    unflagged: list[str] = []
    for folder in folders:
        for path in sorted(folder.glob("*.jinja")):
            try:
                tmpl = ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)
                cases = [c for c in turns.build_cases(path, corpus=True) if c.expected.get("tool_calls")]
            except (AutoparserError, Exception):   # a template the checker cannot render: nothing to count
                continue
            for case in cases:
                try:
                    req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
                except AutoparserError:
                    continue
                scenarios += 1
                msg = req.parse(case.text)
                if calls_of(msg.to_dict()) == calls_of(case.expected):
                    continue
                wrong += 1
                if msg.malformed or msg.truncated or msg.warnings or any(c.invalid for c in msg.tool_calls):
                    flagged += 1
                else:
                    unflagged.append(f"{path.name} {case.scenario}: {calls_of(msg.to_dict())}")
    print(f"tool-call scenarios {scenarios}: wrong {wrong}, flagged {flagged}, unflagged {len(unflagged)}")
    for line in unflagged if args.verbose else unflagged[:10]:
        print("  " + line[:300])
    return 1 if unflagged else 0


if __name__ == "__main__":
    sys.exit(main())
