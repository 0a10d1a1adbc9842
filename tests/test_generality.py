"""Formats no fixture shows, read by general mechanisms (issue 21's generality): formats drawn by
``tests/synth_novel.py`` (written to a temporary folder) whose every scenario must parse back,
stream to the same message in any chunking, read the same with the strict PEG and (tool calls)
be accepted by the request's GBNF.

* ``logfmt`` with a ``> `` reasoning label under ``<<assistant>>`` role headers: values quoted
  only when needed (the ``ifneeded`` codec, learned from the probes), and a reasoning opener that
  is not the generation prompt's own ``>``;
* ``kdl``: arrays written as values side by side (``tags "a" "b"``), at the top and nested;
* ``org``: a value with escaped line breaks before the item's closing ``\n:`` (a ``:`` inside
  the value does not end it);
* ``properties`` (``NAME.key=value``: the call's name written in each item);
* ``latex`` (``{a \\} b}``: values framed by braces, the braces inside escaped: the frame is the
  codec's) and ``sql`` (an object in a string's quotes then more text: ``'{...}'::jsonb``);
* ``pipe_line`` with no marker around the calls (``NAME|K=V`` lines): a call opens at a tool's name
  followed by the items' first text;
* ``email`` (a mail header's folded lines): a value that ends in a line break keeps it (``…⏎\t``
  before the item's own ``⏎``: white space the codec writes for a character is the value's);
* ``nginx``, ``apache`` (an object item written in another frame than the others: ``KEY {`` ... ``}``
  with no ``;`` after it, ``<KEY>`` ... ``</KEY>``; ``Items.frames``);
* ``properties`` (nested values as dotted paths) and the hand-written
  ``templates/incoming/shell_flags.jinja`` (booleans as ``--flag`` / ``--no-flag``): the layout is
  learned with those spellings left unverified; every scenario without them reads back, and the
  verification flags the ones with them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import synth_novel
import turns
from gbnf_check import accepts, cfg_accepts

from autoparser import ChatTemplate
from autoparser.values.codecs import Codec

KEYS = ["logfmt-angle_role-numbered-blockquote-off", "logfmt-chatml-lines-none-on", "kdl-chatml-dashes-html_comment-on",
        "org-sharp-count-none-off", "latex-dbl-numbered-none-on", "sql-gemma-emoji-bot-off",
        "properties-sharp-hr-percent-on",   # (dotted path keys: NAME.filters.lang=en)
        "properties-dbl-begin_end-percent-off",   # (array elements as paths, each on its line: NAME.tags.1=b)
        "nginx-chatml-dashes-percent-off", "apache-angle_role-hr-html_comment-on",   # (objects in a frame of their own)
        "pipe_line-sharp-lines-html_comment-off",   # (no marker: NAME|K=V lines open at a tool's name and "|")
        "email-pipe-dashes-html_comment-on"]   # (a folded value ending in a line break: "…⏎\t" then the item's "⏎")
PARTIAL: dict[str, str] = {}
INCOMING = Path(__file__).resolve().parent.parent / "templates" / "incoming"


def _template(key: str, folder: Path) -> Path:
    path = folder / (key + ".jinja")
    if not path.exists():
        path.write_text(synth_novel.render(synth_novel.Novel.parse(key)), encoding="utf-8")
    return path


def _load(path: Path) -> Any:
    return ChatTemplate.from_file(str(path), bos_token="<s>", eos_token="</s>")


def _streamed(req: Any, text: str, size: int) -> dict[str, Any]:
    s = req.stream()
    for i in range(0, len(text), size):
        s.feed(text[i:i + size])
    s.finish()
    return dict(s.message.to_dict())


def _normal(msg: dict[str, Any]) -> dict[str, Any]:
    return {"content": turns.norm(msg.get("content")), "reasoning": turns.norm(msg.get("reasoning_content")),
            "calls": [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg.get("tool_calls") or []]}


@pytest.mark.parametrize("key", KEYS)
def test_round_trip(key: str, tmp_path: Path) -> None:
    path = _template(key, tmp_path)
    tmpl = _load(path)
    assert tmpl.analysis.verification is not None and tmpl.analysis.verification.ok, tmpl.analysis.verification
    _round_trip(tmpl, path, set())


@pytest.mark.parametrize("key", [*PARTIAL, "shell_flags"])
def test_partial_layout(key: str, tmp_path: Path) -> None:
    """Spellings no candidate writes leave the layout learned, those capabilities flagged."""
    path = INCOMING / (key + ".jinja") if key == "shell_flags" else _template(key, tmp_path)
    tmpl = _load(path)
    assert tmpl.analysis.tools.style == "layout"
    v = tmpl.analysis.verification
    assert v is not None
    failed = {c.name for c in v.capabilities if c.status != "verified"}
    assert {"one call", "parallel calls", "string arguments", "number arguments"}.isdisjoint(failed), failed
    if key in PARTIAL:
        assert PARTIAL[key] in failed
    else:
        assert "boolean arguments" in failed
    _round_trip(tmpl, path, {"rich_args"} if key in PARTIAL else set())


def _round_trip(tmpl: Any, path: Path, skip: set[str]) -> None:
    cases = [c for c in turns.build_cases(path) if c.scenario not in skip]
    assert {"content", "tool", "parallel"} <= {c.scenario for c in cases}
    for case in cases:
        req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
        got = req.parse(case.text).to_dict()
        why = turns.compare(case.expected, got, case.text)
        assert why is None, f"{case.scenario}: {why}\n  text: {case.text!r}\n  got:  {got}"
        for size in (1, 3, 7):
            assert _streamed(req, case.text, size) == got, f"{case.scenario}: stream in {size}s != parse"
        assert _normal(req.parse_strict(case.text).to_dict()) == _normal(got), case.scenario
        if case.expected.get("tool_calls") and not case.expected.get("content"):   # (required: calls only)
            forced = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None,
                                tool_choice="required")
            # (llguidance's lexer may take a value's characters for the next call's start: then the
            # text must still match the grammar as a CFG, as tests/test_agreement.py tells apart)
            assert forced.gbnf is not None and (accepts(forced.gbnf, case.text) or cfg_accepts(forced.gbnf, case.text)), \
                f"{case.scenario}: gbnf rejects"


def test_logfmt_values_are_quoted_only_when_needed(tmp_path: Path) -> None:
    """The learned string codec writes bare words bare and quotes the rest; a quoted value holding the
    pair separator and ``key=`` text is read whole."""
    tmpl = _load(_template(KEYS[0], tmp_path))
    layout = tmpl.analysis.tools.layout
    assert layout is not None and layout.args.items is not None and layout.args.items.values is not None
    codec = Codec.from_spec(layout.args.items.values.string.codec)
    assert codec.kind == "ifneeded" and codec.when_opened.kind == "json"
    assert codec.encode("celsius") == "celsius" and codec.encode("a b") == '"a b"' and codec.encode("") == '""'
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "a": {"type": "string"}, "b": {"type": "string"}, "n": {"type": "integer"}}}}}]
    req = tmpl.apply([{"role": "user", "content": "hi"}], tools=tools)
    text = '1. tool=f a="x b=y \\"z\\"" b=plain n=3'
    msg = req.parse(text).to_dict()
    assert json.loads(msg["tool_calls"][0]["function"]["arguments"]) == {"a": 'x b=y "z"', "b": "plain", "n": 3}
    assert _streamed(req, text, 1) == msg


def test_reasoning_opener_is_not_the_role_headers_own_text(tmp_path: Path) -> None:
    """``> `` opens reasoning; the ``>`` that ends ``<<assistant>>`` neither prefills nor opens it."""
    tmpl = _load(_template(KEYS[0], tmp_path))
    r = tmpl.analysis.reasoning
    assert (r.start, r.end, r.prefilled) == ("> ", "\n\n", False)
    req = tmpl.apply([{"role": "user", "content": "hi"}])
    assert req.parse("Paris.").to_dict()["content"] == "Paris."
    got = req.parse("> Think.\n\nParis.").to_dict()
    assert (got["reasoning_content"], got["content"]) == ("Think.", "Paris.")
