"""Parsed assistant messages and the flags that say how clean the parse was."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

FinishReason = Literal["stop", "tool_calls", "truncated"]


@dataclass
class ToolCall:
    """One parsed call; ``arguments`` is a JSON string."""

    name: str
    arguments: str = ""
    id: str = ""
    truncated: bool = False          # the output ended inside this call; arguments were closed for it
    invalid: str | None = None       # why the call does not fit the request's tools (None: it does)

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class Message:
    """An OpenAI-style assistant message plus parse diagnostics."""

    content: str | None = None
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    truncated: bool = False          # output ended inside a reasoning block, call or marker
    malformed: bool = False          # some text did not fit the format and was kept as content
    asides: list[str] = field(default_factory=list)   # messages to another recipient (built-in tools such as ``to=python``), as
                                                      # written: neither content nor calls (not in ``to_dict``)
    warnings: list[str] = field(default_factory=list)

    @property
    def finish_reason(self) -> FinishReason:
        if self.truncated:
            return "truncated"
        return "tool_calls" if self.tool_calls else "stop"

    @property
    def clean(self) -> bool:
        """Nothing to flag: not truncated, not malformed, no warning, no call marked invalid."""
        return not (self.truncated or self.malformed or self.warnings
                    or any(c.invalid or c.truncated for c in self.tool_calls))

    def to_dict(self) -> dict[str, Any]:
        """The OpenAI message dict: role, content, reasoning_content, and tool_calls when there are
        calls (OpenAI leaves the field out when there are none, and refuses an empty list on input)."""
        out: dict[str, Any] = {"role": "assistant", "content": self.content,
                               "reasoning_content": self.reasoning_content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_dict() for c in self.tool_calls]
        return out

    def report(self) -> dict[str, Any]:
        """What the parser knows beyond the OpenAI message: ``finish_reason``, ``truncated``,
        ``malformed``, ``warnings``, ``asides`` and, per call, ``invalid`` and ``truncated``."""
        return {"finish_reason": self.finish_reason, "truncated": self.truncated, "malformed": self.malformed,
                "warnings": list(self.warnings), "asides": list(self.asides),
                "tool_calls": [{"index": i, "id": c.id, "name": c.name, "invalid": c.invalid,
                                "truncated": c.truncated} for i, c in enumerate(self.tool_calls)]}


def merge_deltas(deltas: list[dict[str, Any]]) -> dict[str, Any]:
    """Fold OpenAI deltas into a message dict, as a client would."""
    msg: dict[str, Any] = {"role": "assistant", "content": None, "reasoning_content": None, "tool_calls": []}
    for d in deltas:
        for key in ("content", "reasoning_content"):
            if d.get(key):
                msg[key] = (msg[key] or "") + d[key]
        for tc in d.get("tool_calls") or []:
            calls = msg["tool_calls"]
            while len(calls) <= tc["index"]:
                calls.append({"id": "", "type": "function", "function": {"name": "", "arguments": ""}})
            slot = calls[tc["index"]]
            if tc.get("id"):
                slot["id"] = tc["id"]
            fn = tc.get("function") or {}
            slot["function"]["name"] += fn.get("name") or ""
            slot["function"]["arguments"] += fn.get("arguments") or ""
    if not msg["tool_calls"]:
        del msg["tool_calls"]      # as Message.to_dict(): no field when there are no calls
    return msg
