"""Shared machinery for ``tests/test_real_*.py``: outputs real models write, checked whole and streamed.

Each case is a model output taken from the public parser tests of vLLM, SGLang, Dynamo or
llama.cpp (``../shared/conformance/peer/*-vectors.json`` and ``llamacpp-vectors.json`` hold
them with their sources), the request it answers, and the message the rule promises. A case
is checked three ways: ``req.parse(text)``, a stream fed one character at a time, and streams
fed in seeded random chunks; the streamed deltas must merge to exactly the parsed message.
"""

from __future__ import annotations

import functools
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate, merge_deltas

SHARED = turns.shared_dir()
FIXTURES = Path(__file__).resolve().parents[1] / "templates"
WEATHER = [{"type": "function", "function": {"name": name, "description": f"{name} (test tool)", "parameters": {
    "type": "object", "properties": {key: {"type": "string"}}, "required": [key]}}}
    for name, key in (("get_weather", "location"), ("get_time", "timezone"), ("search", "query"),
                      ("ReadFile", "path"), ("special_function", "arg1"))]


@dataclass(frozen=True)
class Case:
    """One model output and what the rule says it parses to (None: not checked)."""

    id: str                                  # peer and test it comes from
    template: str                            # fixture stem, or a corpus file name (``X.jinja``)
    text: str
    reasoning: str | None = None
    content: str | None = None
    calls: list[tuple[str, dict[str, Any]]] | None = None
    tools: list[dict[str, Any]] | None = field(default_factory=lambda: WEATHER)
    thinking: bool | None = None             # chat_template_kwargs enable_thinking
    messages: list[dict[str, Any]] | None = None
    options: dict[str, Any] = field(default_factory=dict)   # further ``apply`` arguments (reasoning_format, ...)


@functools.cache
def template(name: str) -> ChatTemplate:
    if name.endswith(".jinja"):
        if SHARED is None:
            pytest.skip("shared template corpus not found (set AUTOPARSER_SHARED)")
        path = SHARED / "templates" / name
        if not path.exists():
            pytest.skip(f"{name} not in the shared corpus")
    else:
        path = FIXTURES / f"{name}.jinja"
    return ChatTemplate.from_file(str(path), bos_token="<s>", eos_token="</s>")


def request(case: Case) -> Any:
    kwargs: dict[str, Any] = {}
    if case.thinking is not None:
        kwargs["chat_template_kwargs"] = {"enable_thinking": case.thinking}
    messages = case.messages or [{"role": "user", "content": "What's the weather like? Use the tools if needed."}]
    return template(case.template).apply(messages, tools=case.tools, **kwargs, **case.options)


def _norm(s: str | None) -> str:
    return (s or "").strip()


def chunkings(text: str, seed: int = 0) -> list[list[str]]:
    """One character at a time, and three seeded random chunkings."""
    out = [list(text)]
    rng = random.Random(seed)
    for _ in range(3):
        parts, i = [], 0
        while i < len(text):
            n = rng.randint(1, 7)
            parts.append(text[i:i + n])
            i += n
        out.append(parts)
    return out


def stream(req: Any, parts: list[str]) -> dict[str, Any]:
    s = req.stream()
    deltas: list[dict[str, Any]] = []
    for p in parts:
        deltas.extend(s.feed(p))
    deltas.extend(s.finish())
    return merge_deltas(deltas)


def check(case: Case) -> None:
    """``parse`` gives what the case says; every streamed chunking gives exactly ``parse``."""
    req = request(case)
    msg = req.parse(case.text).to_dict()
    if case.reasoning is not None:
        assert _norm(msg.get("reasoning_content")) == _norm(case.reasoning), msg
    if case.content is not None:
        assert _norm(msg.get("content")) == _norm(case.content), msg
    if case.calls is not None:
        got = [(c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
               for c in msg.get("tool_calls") or []]
        assert got == case.calls, msg
    check_stream(req, case.text, msg)


def check_stream(req: Any, text: str, msg: dict[str, Any] | None = None) -> None:
    if msg is None:
        msg = req.parse(text).to_dict()
    want = {k: msg.get(k) for k in ("content", "reasoning_content")}
    want_calls = [(c["function"]["name"], c["function"]["arguments"]) for c in msg.get("tool_calls") or []]
    for parts in chunkings(text):
        got = stream(req, parts)
        assert {k: got.get(k) for k in want} == want, (parts[:8], got)
        assert [(c["function"]["name"], c["function"]["arguments"]) for c in got.get("tool_calls") or []] \
            == want_calls, (parts[:8], got)


def ids(cases: list[Case]) -> list[str]:
    return [c.id for c in cases]
