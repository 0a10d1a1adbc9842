#!/usr/bin/env python3
"""Fuzz the parser with malformed outputs: does ``parse`` raise, does a stream differ from it?

For each template (every fixture by default; ``--corpus NAME ...`` adds templates of
``../shared/templates``; ``--all-corpus`` takes a tool-calling sample of 40), the valid output of
each scenario the template renders (``tests/turns.py``) is mutated ``--n`` times (per template,
spread over the scenarios; ``--scenario tool`` keeps one): one to three of a marker dropped, a
marker planted anywhere, whitespace inserted, a cut, random punctuation inserted, a span deleted,
a marker or a letter appended. Each output is parsed whole and streamed twice in random chunks
of 1 to 7 characters; the streamed message (content, reasoning, calls' names and arguments) must
equal the parsed one. Deterministic for a given ``--seed``.

    python tools/fuzz_stream.py [--n 2000] [--seed 0] [--corpus deepseek-ai-DeepSeek-R1-Distill-Qwen-32B]

Prints one line per template and a total ``N outputs: raised R, stream != parse D``; exits 1
when R or D is not 0. The first few failures are printed with their text.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import turns  # noqa: E402

from autoparser import ChatTemplate, merge_deltas  # noqa: E402

SHOWN = 5


def _view(msg: dict[str, Any]) -> tuple[Any, ...]:
    calls = [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]
    return msg.get("content"), msg.get("reasoning_content"), calls


class Fuzzer:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def mutate(self, text: str, markers: list[str]) -> str:
        rng = self.rng
        kind = rng.randrange(7)
        at = rng.randrange(len(text) + 1)
        if kind == 0 and markers:
            m = rng.choice(markers)
            i = text.find(m)
            return text[:i] + text[i + len(m):] if i >= 0 else text
        if kind == 1 and markers:
            return text[:at] + rng.choice(markers) + text[at:]
        if kind == 2:
            return text[:at] + rng.choice([" ", "\n", "\t", "  \n"]) + text[at:]
        if kind == 3:
            return text[:at]
        if kind == 4:
            return text[:at] + "".join(rng.choice("<>{}[]\"\\|:, ab\n") for _ in range(rng.randrange(1, 6))) + text[at:]
        if kind == 5:
            b = rng.randrange(len(text) + 1)
            return text[:min(at, b)] + text[max(at, b):]
        return text + rng.choice([*markers, "x"])

    def stream(self, req: Any, text: str) -> dict[str, Any]:
        parser = req.stream()
        deltas: list[dict[str, Any]] = []
        i = 0
        while i < len(text):
            j = i + self.rng.randrange(1, 8)
            deltas += parser.feed(text[i:j])
            i = j
        deltas += parser.finish()
        return merge_deltas(deltas)


def fuzz_template(path: Path, fz: Fuzzer, n: int, scenario: str | None, corpus: bool) -> tuple[int, int, int]:
    cases = [c for c in turns.build_cases(path, corpus=corpus) if scenario is None or c.scenario == scenario]
    if not cases:
        return 0, 0, 0
    tmpl = ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)
    raised = differ = 0
    for k in range(n):
        case = cases[k % len(cases)]
        req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
        markers = list(dict.fromkeys([*tmpl.analysis.markers(), *req.stop]))
        text = case.text
        for _ in range(fz.rng.randrange(1, 4)):
            text = fz.mutate(text, markers)
        try:
            whole = _view(req.parse(text).to_dict())
            for _ in range(2):
                got = _view(fz.stream(req, text))
                if got != whole:
                    differ += 1
                    if differ <= SHOWN:
                        print(f"  stream != parse ({case.id}): {text!r}\n    parse  {whole}\n    stream {got}")
                    break
        except Exception as e:   # a fuzz report, not a crash: parse must never raise
            raised += 1
            if raised <= SHOWN:
                print(f"  raised ({case.id}) {type(e).__name__}: {e}: {text!r}")
    return n, raised, differ


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="outputs per template (default 2000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scenario", help="fuzz this self-test scenario only (e.g. tool)")
    ap.add_argument("--corpus", nargs="*", default=[], metavar="NAME", help="templates of ../shared/templates")
    ap.add_argument("--no-fixtures", action="store_true", help="leave the fixtures out")
    ap.add_argument("--all-corpus", action="store_true", help="a 40-template tool-calling sample of the corpus")
    opts = ap.parse_args()
    shared = turns.shared_dir()
    paths = [] if opts.no_fixtures else [(p, False) for p in turns.fixture_templates()]
    if opts.corpus or opts.all_corpus:
        if shared is None:
            print("../shared/templates is not there (set AUTOPARSER_SHARED)")
            return 2
        paths += [(shared / "templates" / f"{n.removesuffix('.jinja')}.jinja", True) for n in opts.corpus]
        paths += [(p, True) for p in (turns.corpus_sample() if opts.all_corpus else [])]
    fz = Fuzzer(opts.seed)
    total = [0, 0, 0]
    for path, corpus in paths:
        got = fuzz_template(path, fz, opts.n, opts.scenario, corpus)
        total = [a + b for a, b in zip(total, got, strict=True)]
        if got[0]:
            print(f"{path.stem}: {got[0]} outputs: raised {got[1]}, stream != parse {got[2]}")
    print(f"{total[0]} outputs: raised {total[1]}, stream != parse {total[2]}")
    return 1 if total[1] or total[2] else 0


if __name__ == "__main__":
    sys.exit(main())
