#!/usr/bin/env python3
"""How long each hostile tool schema of ``tests/test_hostile_schemas.py`` costs a server (issue 23).

For every kind (and every odd-but-valid schema), on each template the test uses: ``apply()``, then,
when it is accepted, ``parse``, a stream in 5-character chunks, the GBNF, the PEG and the structural
tag, as a server would run them for one request. Prints the wall and CPU seconds of the slowest
template per kind and what ``apply()`` said; exits 1 when one kind takes more than ``--limit``
seconds of CPU time (2 s: issue 23's bound), made a connection, or raised something that is not an
``AutoparserError``.

    python benchmarks/hostile_schemas.py [--limit 2]
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from test_hostile_schemas import HOSTILE, ODD, TEMPLATES, USER, _exercise, _template, _tools  # noqa: E402

from autoparser import AutoparserError  # noqa: E402

ATTEMPTS: list[Any] = []


def _refuse(*args: Any, **kwargs: Any) -> Any:
    ATTEMPTS.append(args[:2])
    raise OSError("refused by the benchmark")


def run(params: Any, args: dict[str, Any], template: str) -> str:
    tmpl = _template(template)
    try:
        req = tmpl.apply(USER, tools=_tools(params))
    except AutoparserError as e:
        return f"refused: {type(e).__name__} ({getattr(e, 'keyword', '')})"
    msg = _exercise(tmpl, req, args)
    invalid = msg.tool_calls[0].invalid if msg.tool_calls else None
    return "accepted" + (f", call marked: {invalid[:60]}" if invalid else "")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=float, default=2.0, help="CPU seconds one kind may take (default 2)")
    opts = ap.parse_args()
    socket.socket.connect = _refuse            # type: ignore[method-assign]
    socket.create_connection = _refuse
    urllib.request.urlopen = _refuse
    for name in TEMPLATES:
        assert _template(name).verification is not None   # analysis and self-test are not the schema's cost
    cases = {**{k: (p, a) for k, (p, a, _kw) in HOSTILE.items()}, **ODD}
    worst = 0.0
    failed = False
    print(f"{'kind':34} {'wall s':>7} {'cpu s':>7}  outcome")
    for kind, (params, args) in cases.items():
        slowest = (0.0, 0.0, "")
        for template in TEMPLATES:
            wall, cpu = time.perf_counter(), time.process_time()
            try:
                outcome = run(params, args, template)
            except Exception as e:     # the benchmark reports it; the tests fail on it
                outcome = f"RAISED {type(e).__name__}: {e}"[:80]
                failed = True
            took = (time.perf_counter() - wall, time.process_time() - cpu, outcome)
            slowest = max(slowest, took, key=lambda t: t[1])
        worst = max(worst, slowest[1])
        print(f"{kind:34} {slowest[0]:7.3f} {slowest[1]:7.3f}  {slowest[2]}")
    print(f"slowest kind: {worst:.3f} s CPU; connections attempted: {len(ATTEMPTS)}")
    return 1 if failed or ATTEMPTS or worst > opts.limit else 0


if __name__ == "__main__":
    sys.exit(main())
