"""What every server adapter needs, with no server imported.

* :func:`template_from_tokenizer`: the ``ChatTemplate`` a (Hugging Face style)
  tokenizer carries, analysed once per template digest (sha256 of source, BOS
  and EOS) in a bounded LRU cache shared by all requests of a process.
* :func:`reasoning_markers`: the reasoning start/end strings of a template and,
  given a tokenizer, their token ids (``is_reasoning_end`` on ids).
* :func:`reasoning_split`: where the text after the reasoning block begins in a
  raw output, so that a tool parser downstream gets that text verbatim.
* :func:`reasoning_expected`: whether a request's output may hold reasoning.
* :func:`gbnf_for_xgrammar`: a request's GBNF in the dialect xgrammar parses.
* :func:`require_verified`: refuse a template whose verdict is not clean (self-test failures no
  accepted limitation covers: ``AUTOPARSER_ACCEPT``); opt out with ``AUTOPARSER_ALLOW_UNVERIFIED=1``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import markers as mk
from ..analysis.verdict import ACCEPT_ENV
from ..errors import TemplateError
from ..template import ChatTemplate, Request

__all__ = [
    "ReasoningMarkers",
    "cached_template",
    "ends_within",
    "find_end",
    "gbnf_for_xgrammar",
    "marker_token_ids",
    "reasoning_expected",
    "reasoning_markers",
    "reasoning_split",
    "require_verified",
    "starts_in_reasoning",
    "template_digest",
    "template_from_tokenizer",
    "tokenizer_template_source",
]

CACHE_SIZE = 32
log = logging.getLogger("autoparser")

_cache: OrderedDict[str, ChatTemplate] = OrderedDict()
_lock = threading.Lock()


def template_digest(source: str, bos_token: str = "", eos_token: str = "") -> str:
    """The cache key of a template: sha256 over its source, BOS and EOS."""
    h = hashlib.sha256()
    for part in (source, bos_token, eos_token):
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def cached_template(source: str, *, bos_token: str = "", eos_token: str = "",
                    name: str = "<tokenizer>") -> ChatTemplate:
    """One ``ChatTemplate`` per digest (bounded LRU); its analysis runs on first use."""
    key = template_digest(source, bos_token, eos_token)
    with _lock:
        tmpl = _cache.get(key)
        if tmpl is not None:
            _cache.move_to_end(key)
            return tmpl
    tmpl = ChatTemplate.from_string(source, name=name, bos_token=bos_token, eos_token=eos_token)
    with _lock:
        tmpl = _cache.setdefault(key, tmpl)
        _cache.move_to_end(key)
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return tmpl


def _token_str(value: Any) -> str:
    """``bos_token``/``eos_token`` may be a str, an ``AddedToken`` or None."""
    if value is None:
        return ""
    content = getattr(value, "content", None)
    return content if isinstance(content, str) else str(value)


def tokenizer_template_source(tokenizer: Any, *, tools: bool = False) -> str | None:
    """The chat template a tokenizer carries, else the model folder's ``chat_template.jinja``.

    Named templates (a dict, or transformers' list of ``{"name", "template"}``) give
    ``tool_use`` when ``tools`` and it exists, else ``default``, else the first one.
    """
    tmpl = getattr(tokenizer, "chat_template", None)
    if isinstance(tmpl, list):
        tmpl = {t.get("name"): t.get("template") for t in tmpl if isinstance(t, dict)}
    if isinstance(tmpl, dict):
        named = {k: v for k, v in tmpl.items() if isinstance(v, str) and v}
        tmpl = (named.get("tool_use") if tools else None) or named.get("default") or \
            next(iter(named.values()), None)
    if isinstance(tmpl, str) and tmpl.strip():
        return tmpl
    folder = getattr(tokenizer, "name_or_path", None) or getattr(tokenizer, "path", None)
    if isinstance(folder, (str, Path)) and folder:
        path = Path(folder) / "chat_template.jinja"
        try:
            if path.is_file():
                return path.read_text(encoding="utf-8")
        except OSError:
            return None
    return None


def template_from_tokenizer(tokenizer: Any, *, tools: bool = False) -> ChatTemplate:
    """The tokenizer's chat template (cached per digest). Raises ``TemplateError`` when it has none."""
    source = tokenizer_template_source(tokenizer, tools=tools)
    if source is None:
        raise TemplateError("autoparser needs a Jinja chat template: the tokenizer has none "
                            "(tokenizer.chat_template is empty and no chat_template.jinja was found)",
                            phase="load")
    name = str(getattr(tokenizer, "name_or_path", "") or "<tokenizer>")
    return cached_template(source, bos_token=_token_str(getattr(tokenizer, "bos_token", None)),
                           eos_token=_token_str(getattr(tokenizer, "eos_token", None)), name=name)


ALLOW_UNVERIFIED = "AUTOPARSER_ALLOW_UNVERIFIED"


def require_verified(template: ChatTemplate) -> None:
    """Raise ``TemplateError`` when the template's verdict (``template.verdict``: its self-test
    failures that no accepted limitation covers) is not clean, as ``autoparser check`` fails on it.

    A server executes the calls it is given and returns the text it parses, so such a template is
    refused, naming each failed capability, its reason and the acceptance entries that would accept
    them. Accepted limitations (``AUTOPARSER_ACCEPT``, the list ``autoparser check --accept`` takes)
    block nothing. ``AUTOPARSER_ALLOW_UNVERIFIED=1`` serves a refused template anyway (every parsed
    message then carries the warning, and the refusal is logged instead).
    """
    v = template.verdict
    if v.ok:
        if v.accepted:
            log.info("%s: accepted limitations: %s", template.name, ", ".join(c.scenario for c in v.accepted))
        return
    what = "reads this template's tool calls wrong" if any(c.calls_misread for c in v.failed) else \
        "reads part of this template's output wrong"
    message = (f"the self-test {what}: {v.describe()}. Fix the template, accept the known limitation "
               f"({ACCEPT_ENV}={v.accept_hint()!r}, as `autoparser check --accept` takes it), or set "
               f"{ALLOW_UNVERIFIED}=1 to run it anyway")
    if os.environ.get(ALLOW_UNVERIFIED, "").strip().lower() in ("1", "true", "yes"):
        log.warning("%s: %s (allowed by %s)", template.name, message, ALLOW_UNVERIFIED)
        return
    raise TemplateError(message, template=template.name, phase="verify")


def marker_token_ids(tokenizer: Any, marker: str) -> tuple[int, ...]:
    """The token ids of a marker (whitespace around it dropped): one id when it is a vocabulary entry."""
    text = marker.strip()
    if not text:
        return ()
    try:
        vocab = tokenizer.get_vocab()
    except (AttributeError, NotImplementedError):
        vocab = {}
    if text in vocab:
        return (int(vocab[text]),)
    return tuple(int(i) for i in tokenizer.encode(text, add_special_tokens=False))


@dataclass(frozen=True)
class ReasoningMarkers:
    """A template's reasoning markers as strings and, when a tokenizer was given, token ids."""

    start: str = ""
    end: str = ""
    start_ids: tuple[int, ...] = ()
    end_ids: tuple[int, ...] = ()

    @property
    def present(self) -> bool:
        return bool(self.end or self.start)


def reasoning_markers(template: ChatTemplate, tokenizer: Any = None) -> ReasoningMarkers:
    """The template's reasoning start and end (stripped), with token ids when ``tokenizer`` is given."""
    r = template.analysis.reasoning
    if r.mode == "none":
        return ReasoningMarkers()
    start, end = r.start.strip(), r.end.strip()
    if tokenizer is None:
        return ReasoningMarkers(start, end)
    return ReasoningMarkers(start, end, marker_token_ids(tokenizer, start), marker_token_ids(tokenizer, end))


def ends_within(ids: Sequence[int], delta_len: int, marker: Sequence[int]) -> bool:
    """Does ``marker`` occur in ``ids`` with its last token among the last ``delta_len`` ids?"""
    m, n = len(marker), len(ids)
    if not m or delta_len <= 0 or n < m:
        return False
    target = list(marker)
    return any(list(ids[s:s + m]) == target for s in range(max(0, n - delta_len - m + 1), n - m + 1))


def find_end(ids: Sequence[int], marker: Sequence[int]) -> int | None:
    """The index just past the last occurrence of ``marker`` in ``ids``, or None."""
    m = len(marker)
    if not m:
        return None
    target = list(marker)
    for s in range(len(ids) - m, -1, -1):
        if list(ids[s:s + m]) == target:
            return s + m
    return None


def reasoning_expected(request: Request) -> bool:
    """May the output of ``request`` hold reasoning the parser extracts (the template has it, not off)?"""
    return request.plan.reasoning.extract


def starts_in_reasoning(request: Request) -> bool:
    """Does the output of ``request`` start inside a reasoning block (the prompt opened it)?"""
    return request.plan.reasoning.open_at_start and request.plan.reasoning.extract


def reasoning_split(raw: str, reasoning: str | None, markers: ReasoningMarkers) -> int:
    """Where the text after the reasoning block starts in ``raw`` (0 when there was no block).

    ``reasoning`` is what the parser extracted (verbatim text of ``raw``). The split is
    just past the first end marker after it; with no reasoning text, past a first end
    marker that only a start marker and whitespace precede (``<think></think>``).
    """
    end = mk.compile_marker(markers.end) if markers.end else None
    if end is None:
        return 0
    text = (reasoning or "").strip()
    if text:
        i = raw.find(text)
        if i < 0:
            ends = [int(m.end()) for m in end.finditer(raw)]
            return ends[-1] if ends else 0
        m = end.search(raw, i + len(text))
        return int(m.end()) if m is not None else i + len(text)
    m = end.search(raw)
    if m is None:
        return 0
    before = raw[:m.start()].strip()
    if before:
        start = mk.compile_marker(markers.start) if markers.start else None
        if start is None or start.fullmatch(before) is None:
            return 0
    return int(m.end())


_RULE_START = re.compile(r"[A-Za-z0-9_-]+[ \t]*::=")


def gbnf_for_xgrammar(gbnf: str) -> str:
    """llama.cpp GBNF as xgrammar's EBNF parser takes it: an empty alternative is written ``""``.

    ``a ::= | b``, ``( x | )`` and ``x |`` at the end of a rule are valid GBNF (an empty
    sequence) that xgrammar rejects ("Expect element"); everything else is kept as is.
    String literals, character classes and comments are copied untouched.
    """
    out: list[str] = []
    i, n = 0, len(gbnf)
    prev = "start"          # the last significant token: start (after ::=), bar, lparen, other
    while i < n:
        c = gbnf[i]
        if c in "\"[":
            close = '"' if c == '"' else "]"
            j = i + 1
            while j < n and gbnf[j] != close:
                j += 2 if gbnf[j] == "\\" else 1
            out.append(gbnf[i:j + 1])
            i, prev = j + 1, "other"
        elif c == "#":
            j = gbnf.find("\n", i)
            j = n if j < 0 else j
            out.append(gbnf[i:j])
            i = j
        elif gbnf.startswith("::=", i):
            out.append("::=")
            i, prev = i + 3, "start"
        elif c == "|":
            if prev in ("start", "bar", "lparen"):
                out.append('"" ')
            out.append("|")
            i += 1
            j = i
            while j < n and gbnf[j] in " \t\r\n":
                j += 1
            if j >= n or gbnf[j] == ")" or _RULE_START.match(gbnf, j):
                out.append(' ""')
                prev = "other"
            else:
                prev = "bar"
        else:
            out.append(c)
            if c == "(":
                prev = "lparen"
            elif not c.isspace():
                prev = "other"
            i += 1
    return "".join(out)
