"""``runtime/retwin.py``: an ``re`` twin matches what the engine's ``regex`` pattern matches.

For every fixture template's request (with tools, and without), every pattern the whole-text
reader searches with (the engine's tables, and the marker-in-place patterns) is compared with its
twin on the template's scenario texts and on variants with white space of every kind, markers and
quotes inserted: the same match (span, group) at every start position.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import pytest
import regex
import turns

from autoparser import ChatTemplate
from autoparser.runtime.engine import tables
from autoparser.runtime.retwin import _translate, twin

INSERTS = ["\n", " ", "\t", "\xa0", "\u2028", "\x0b", "\x1c", "\x1f", "\u3000", "\u200b", "<", ">", "{", '"', "'",
           "```", "</think>", "<tool_call>"]


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def patterns(req: Any) -> list[regex.Pattern[str]]:
    tb = tables(req.plan)
    found = [tb.content, tb.reasoning_end, tb.reasoning_call, tb.reasoning_reopen, tb.section_end, tb.call_start,
             tb.separator, tb.call_end, tb.answer_start, *tb.answer_alts, *tb.tool_alts]
    out = [p for p in found if p is not None]
    out += [regex.compile(r"([ \t\r\n]*+)(?:" + p.pattern + ")") for p in out]
    return out


def same(pat: regex.Pattern[str], text: str) -> None:
    tw = twin(pat)
    if tw is pat:
        return
    for pos in range(len(text) + 1):
        for a, b in ((pat.search(text, pos), tw.search(text, pos)), (pat.match(text, pos), tw.match(text, pos))):
            got = None if a is None else (a.span(), a.lastgroup, a.groups())
            want = None if b is None else (b.span(), b.lastgroup, b.groups())
            assert got == want, (pat.pattern, text, pos)


@pytest.mark.parametrize("path", turns.fixture_templates(), ids=lambda p: p.stem)
def test_twins_match_alike(path: Any) -> None:
    cases = turns.build_cases(path)
    if not cases:
        pytest.skip("no scenario renders")
    rng = random.Random(path.stem)
    seen: set[str] = set()
    for case in cases[:6]:
        try:
            req = template(case.path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
        except ValueError:
            continue
        texts = [case.text[:200]]
        for snippet in INSERTS:
            i = rng.randrange(len(texts[0]) + 1)
            texts.append(texts[0][:i] + snippet + texts[0][i:])
        for pat in patterns(req):
            if pat.pattern in seen:
                continue
            seen.add(pat.pattern)
            for text in texts:
                same(pat, text)


def test_what_has_no_twin() -> None:
    assert _translate(r"\s*<x>") is not None and _translate(r"\{\}") is not None
    for src in [r"(?i)x", r"\w+", r"[[a]", r"(?<!\w)get", r"a\b", r"\d", r"(?P=x)", r"x{e<=1}", r"[]a]", r"\1", r"\p{L}"]:
        assert _translate(src) is None, src
    assert twin(regex.compile(r"\s")).match("\x1c") is None       # regex's \s, not re's
    assert twin(regex.compile(r"\s")).match("\u2028") is not None
