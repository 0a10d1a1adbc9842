#!/usr/bin/env python3
"""Value codec speed (issue 21): learning a codec from the probe renderings, and decoding a long
value a few characters at a time.

* ``learn µs``: ``learn_codec`` on the (value, rendering) pairs of ``PROBE_STRINGS`` through a Jinja
  expression a template writes (the best of ``--rounds`` rounds of ``--loops`` calls); the last
  row renders with ``upper``, which no candidate reproduces (every candidate tried).
* ``stream ms``: a 64 KB value, encoded, fed to the codec's incremental decoder in 4-character
  pieces; ``call loop`` is the same number of calls to a method doing nothing (the floor on
  this machine).

    python benchmarks/codecs.py [--rounds 5] [--loops 50]
"""

from __future__ import annotations

import argparse
import json
import shlex
import time
from collections.abc import Callable

from jinja2.sandbox import ImmutableSandboxedEnvironment

from autoparser.values.codecs import PROBE_STRINGS, Codec, learn_codec

BS = r"replace('\\', '\\\\')"
EXPRESSIONS = {
    "raw": "{{ v }}",
    "tojson (Jinja)": "{{ v | tojson }}",
    "tojson (HF)": "{{ v | tojson }}",
    "repr": "{{ [v] }}",
    "quoted": r"""{{ '"' ~ v | %s | replace('"', '\\"') ~ '"' }}""" % BS,   # noqa: UP031
    "doubled": """{{ "'" ~ v | replace("'", "''") ~ "'" }}""",
    "shlex.quote": "{{ v | shell_quote }}",
    "urlencode": "{{ v | urlencode }}",
    "e": "{{ v | e }}",
    "table": "{{ v | replace('&', '&amp;') | replace('<', '&lt;') }}",
    "nothing fits": "{{ v | upper }}",
}
STREAMED = ("raw", "json", "json(ascii)", "python", 'quoted(",backslash)', "shell", "percent(%20)",
            "entities(html)", 'table({"&": "&amp;", "<": "&lt;"})')


def best(run: Callable[[], object], rounds: int, loops: int) -> float:
    """Seconds per call, best round."""
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(loops):
            run()
        times.append((time.perf_counter() - t0) / loops)
    return min(times)


class _Nothing:
    def feed(self, text: str, final: bool = False) -> tuple[str, None]:
        return text, None


def stream(codec: Codec | None, text: str) -> None:
    dec = codec.decoder() if codec is not None else _Nothing()
    for i in range(0, len(text), 4):
        dec.feed(text[i:i + 4], final=i + 4 >= len(text))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--loops", type=int, default=50)
    args = ap.parse_args()
    jinja, hf = ImmutableSandboxedEnvironment(), ImmutableSandboxedEnvironment()
    hf.filters["tojson"] = lambda x: json.dumps(x, ensure_ascii=False)
    jinja.filters["shell_quote"] = shlex.quote
    print(f"{'expression':16} {'codec':36} {'learn µs':>9}")
    for name, source in EXPRESSIONS.items():
        template = (hf if "HF" in name else jinja).from_string(source)
        samples = [(p, template.render(v=p)[1:-1] if name == "repr" else template.render(v=p)) for p in PROBE_STRINGS]
        codec = learn_codec(samples)
        seconds = best(lambda samples=samples: learn_codec(samples), args.rounds, args.loops)
        print(f"{name:16} {codec.spec if codec else '-':36} {seconds * 1e6:9.1f}")
    value = ("ligne é 😀 \"q\" & <b> 100% \\ " * 3000)[:65536]
    print(f"\n{'codec':36} {'chars':>7} {'stream ms':>9}")
    print(f"{'call loop':36} {len(value):7} {best(lambda: stream(None, value), args.rounds, 1) * 1e3:9.1f}")
    for spec in STREAMED:
        codec = Codec.from_spec(spec)
        text = codec.encode(value)
        print(f"{spec:36} {len(text):7} {best(lambda: stream(codec, text), args.rounds, 1) * 1e3:9.1f}")  # noqa: B023


if __name__ == "__main__":
    main()
