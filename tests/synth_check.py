"""Whether autoparser reads a drawn format whole, and the list of the formats it does not read yet.

``reads_whole(source, name)`` is the check ``tests/test_synth.py`` makes of every drawn template
(``synth_axes.DRAWN``, ``synth_novel.DRAWN``): the template's self-test passes every scenario it
can render, whole and streamed, a call scenario among them (positional encodings excepted: they
do not write the argument names, so the self-test cannot render their calls), and the request GBNF
accepts the rendered calls. ``KNOWN_UNREAD`` (``tests/synth_known_unread.txt``) lists the formats
that fail it today; ``python tools/zoo.py --update-known`` rewrites the file from the current code.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import synth_axes
import synth_novel

KNOWN_FILE = Path(__file__).with_name("synth_known_unread.txt")
POSITIONAL = ("positional", "positional_sexp", "csv_pos")


def drawn() -> Iterator[tuple[str, str, str]]:
    """(set, key, template source) of every drawn format."""
    for f in synth_axes.DRAWN:
        yield "axes", f.key, synth_axes.render(f)
    for n in synth_novel.DRAWN:
        yield "novel", n.key, synth_novel.render(n)


def load_known() -> set[str]:
    """``set key`` lines of the known-unread file (comments and blank lines skipped)."""
    if not KNOWN_FILE.is_file():
        return set()
    lines = (line.strip() for line in KNOWN_FILE.read_text(encoding="utf-8").splitlines())
    return {line for line in lines if line and not line.startswith("#")}


KNOWN_UNREAD: set[str] = load_known()


def reads_whole(source: str, name: str, calls_required: bool = True) -> str | None:
    """None when autoparser reads the template whole, else why not."""
    import gbnf_check

    from autoparser import ChatTemplate
    from autoparser.selftest import HISTORIES, PROBE_TOOLS, self_test

    try:
        tmpl = ChatTemplate.from_string(source, name=name)
        result = self_test(tmpl)
    except Exception as e:   # a template the analysis refuses is not read
        return f"{type(e).__name__}: {e}"[:200]
    if not result.ok or not result.passed:
        return "; ".join(f"{s.name}: {s.why}" for s in result.failures)[:300] or "nothing passed"
    names = {sc.name for sc in result.passed}
    if calls_required and "tool" not in names:
        return "the self-test rendered no call"
    for sc in result.passed:
        if sc.name in ("tool", "parallel"):
            req = tmpl.apply(HISTORIES[1], tools=PROBE_TOOLS, tool_choice="required", chat_template_kwargs=sc.kwargs)
            if req.gbnf is None or not gbnf_check.accepts(req.gbnf, sc.text):
                return f"GBNF rejects the {sc.name} calls"
    return None


def calls_required(set_name: str, key: str) -> bool:
    return not (set_name == "axes" and synth_axes.Format.parse(key).encoding in POSITIONAL)


def write_known(unread: list[str]) -> None:
    head = ("# Drawn formats autoparser does not read whole yet (tests/synth_check.py, issue 21).\n"
            "# One 'set key' per line; rewrite with: python tools/zoo.py --update-known\n")
    KNOWN_FILE.write_text(head + "".join(f"{line}\n" for line in sorted(unread)), encoding="utf-8")
