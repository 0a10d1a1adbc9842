"""The message half of the engine: what the readers find, written into a :class:`.message.Message`.

:class:`MessageBuilder` holds the engine's emitters: content and reasoning with the engine's
white-space rules (a segment's leading and trailing white space trimmed, white space around a
recognised marker dropped, white space around calls kept inside the answer), calls with their
ids, their arguments reshaped by the tool's schema (:mod:`autoparser.values.argfit`), and the call
guard (:mod:`.guard`) at the end. :class:`~.engine.Engine` is a builder that reads a stream;
:meth:`MessageBuilder.build` is the same builder fed the steps a whole-text reader took through a
complete output (:mod:`.whole`), without the engine's reading state and without the stream's
deltas (``live=False``), so ``Request.parse`` of clean output builds its message with the very
code a stream builds it with.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from ..plan import RequestPlan
from ..values.argfit import ArgsFit, FitStream
from .guard import CallGuard, check_calls, guard_for
from .message import Message, ToolCall

WS = " \t\r\n"

#: What a whole-text reader found, in order (:meth:`MessageBuilder.build`): ``("content", text)``,
#: ``("reasoning", text)``, ``("boundary",)`` (a marker was dropped), ``("calls",)`` (calls begin
#: or end), ``("call", name, call_id, arguments, value)`` (``value``: the decoded arguments, or
#: None when the guard is to decode them).
Step = tuple[Any, ...]


class MessageBuilder:
    """A message being built from content, reasoning and calls, as the engine's readers find them.

    ``guard``: the plan's call guard when the caller holds it already (default: looked up on the
    first call); ``live``: record the OpenAI deltas a stream sends (``deltas``)."""

    # what most messages keep as it starts (set on the instance when it changes)
    _pending_ws = ""                 # trailing whitespace held back in content/reasoning
    _segment_start = True            # skip leading whitespace of a new content/reasoning segment
    _inline = ""                     # reasoning_format "none": the prompt's open block, put back in the content
    _live = True
    _values: dict[int, Any] | None = None   # arguments a whole-text reader decoded, by call index

    def __init__(self, plan: RequestPlan, guard: CallGuard | None = None, live: bool = True) -> None:
        self.plan = plan
        self._guard_obj = guard
        if not live:
            self._live = False
        self.msg = Message()
        self._parts: dict[str, list[str]] = {"content": [], "reasoning_content": []}
        self._arg_parts: list[list[str]] = []
        self._fits: list[FitStream | None] = []   # per call: its arguments reshaped by the tool's schema
        self._args_seen: list[bool] = []
        self._fit_notes: set[str] = set()
        self.deltas: list[dict[str, Any]] = []
        r = plan.reasoning
        if r.open_at_start and r.inline_prefix and not r.extract:
            # put back before the model's first text, or at the end (not when a call comes first: the
            # call ends the empty block)
            self._inline = r.inline_prefix
        prefill = plan.prefill
        if prefill.reasoning:
            self.prefill_reasoning(prefill.reasoning, still_open=prefill.reasoning_open)
        if prefill.content:
            self.prefill_content(prefill.content)

    # ------------------------------------------------------------ the readers' side
    def schema(self, name: str) -> Mapping[str, Any]:
        """The parameters schema of tool ``name`` ({} when unknown)."""
        tp = self.plan.tools
        return (tp.schemas.get(name) if tp is not None else None) or {}

    def emit_content(self, text: str, raw: bool = False) -> None:
        """Text a call reader gives back as content."""
        self._content(text, raw)

    def prefill_content(self, text: str) -> None:
        """``continue_final_message``: the prompt already holds this part of the answer."""
        self._emit_text("content", text, raw=True)

    def prefill_reasoning(self, text: str, still_open: bool) -> None:
        """``continue_final_message``: reasoning the prompt already holds."""
        self._parts["reasoning_content"].append(text)
        if self._live:
            self.deltas.append({"reasoning_content": text})
        self._segment_start = not still_open

    def warn(self, text: str, malformed: bool = True) -> None:
        self.msg.warnings.append(text)
        if malformed:
            self.msg.malformed = True

    # ------------------------------------------------------------ text
    def _content(self, text: str, raw: bool = False) -> None:
        self._emit_text("content", text, raw)

    def _reasoning(self, text: str) -> None:
        self._emit_text("reasoning_content", text, False)

    def _emit_text(self, key: str, text: str, raw: bool) -> None:
        if not text:
            return
        if self._inline and key == "content":
            if not text.strip(WS):
                self._inline += text
                return
            prefix, self._inline = self._inline, ""
            self._emit_text(key, prefix, raw=True)
        if raw:
            out = self._pending_ws + text
            self._pending_ws = ""
            self._segment_start = False
        else:
            if self._segment_start:
                text = text.lstrip(WS)
                if not text:
                    return
                self._segment_start = False
            body = text.rstrip(WS)
            tail = text[len(body):]
            if not body:
                self._pending_ws += tail
                return
            out = self._pending_ws + body
            self._pending_ws = tail
        self._parts[key].append(out)
        if self._live:
            self.deltas.append({key: out})

    def _boundary(self) -> None:
        """A marker was recognised: whitespace around it belongs to the marker."""
        self._pending_ws = ""
        self._segment_start = True

    def _call_boundary(self) -> None:
        """Calls begin or end here: whitespace outside the call markers belongs to the content around
        them (``"Intro.\\n<call>...</call>\\nOutro."`` keeps both newlines), but the answer's own
        leading and trailing whitespace is still trimmed."""
        if not self._parts["content"]:
            self._boundary()
            return
        self._segment_start = False

    # ------------------------------------------------------------ calls
    @property
    def guard(self) -> CallGuard:
        """The plan's call guard (its checks and argument fits)."""
        g = self._guard_obj
        if g is None:
            g = self._guard_obj = guard_for(self.plan)
        return g

    def _add_call(self, name: str, call_id: str) -> tuple[int, ArgsFit | None]:
        """A call's header: the call is added (an id made when it has none); its index and its tool's fit."""
        if self._inline:
            self._inline = ""
        calls = self.msg.tool_calls
        index = len(calls)
        if not call_id:
            call_id = f"{self.plan.id_prefix}{index}"
        calls.append(ToolCall(name, "", call_id))
        self._arg_parts.append([])
        self._args_seen.append(False)
        if self._live:
            self.deltas.append({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                                "function": {"name": name, "arguments": ""}}]})
        if self.plan.tools is None:
            return index, None
        return index, (self._guard_obj or self.guard).fit_for(name)

    def call_header(self, name: str, call_id: str) -> int:
        index, fit = self._add_call(name, call_id)
        self._fits.append(FitStream(fit) if fit is not None else None)
        return index

    def call_args(self, index: int, fragment: str) -> None:
        if not fragment:
            return
        self._args_seen[index] = True
        fit = self._fits[index]
        if fit is not None:
            fragment = fit.feed(fragment)
            self._note_fit(fit)
        self._send_args(index, fragment)

    def has_args(self, index: int) -> bool:
        return self._args_seen[index]

    def _send_args(self, index: int, fragment: str) -> None:
        if fragment:
            self._arg_parts[index].append(fragment)
            if self._live:
                self.deltas.append({"tool_calls": [{"index": index, "function": {"arguments": fragment}}]})

    def _note_fit(self, fit: FitStream) -> None:
        for note in fit.notes:
            if note not in self._fit_notes:
                self._fit_notes.add(note)
                self.warn(note, malformed=False)

    def _flush_fits(self) -> None:
        """The output ended: argument text held for reshaping goes out as written."""
        for index, fit in enumerate(self._fits):
            if fit is not None:
                self._send_args(index, fit.flush())

    # ------------------------------------------------------------ the end
    def _end_inline(self) -> None:
        """The output ended: the prompt's open block (reasoning_format "none") when nothing was written
        after it."""
        if self._inline:
            prefix, self._inline = self._inline, ""
            self._emit_text("content", prefix, raw=True)

    def sync(self) -> Message:
        """Join the collected pieces into ``self.msg`` (joining once keeps streaming linear)."""
        msg, texts = self.msg, self._parts
        parts = texts["content"]
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        msg.content = parts[0] if parts else None
        parts = texts["reasoning_content"]
        if len(parts) > 1:
            parts[:] = ["".join(parts)]
        msg.reasoning_content = parts[0] if parts else None
        for call, parts in zip(msg.tool_calls, self._arg_parts, strict=True):
            if len(parts) > 1:
                parts[:] = ["".join(parts)]
            call.arguments = parts[0] if parts else ""
        return msg

    def _guard(self, values: Mapping[int, Any] | None = None) -> None:
        """Mark the calls that do not fit the request's tools, its ``tool_choice`` or its
        ``parallel_tool_calls`` (``ToolCall.invalid``), with a warning each, and warn when a required
        call is missing; ``values`` holds arguments already decoded, by call index."""
        if self.plan.tools is None:
            return
        found = values or {}
        for warning in check_calls(self.plan, self.msg.tool_calls, found.get, self.guard):
            self.warn(warning, malformed=False)

    # ------------------------------------------------------------ a whole-text reader's steps
    def put_content(self, text: str) -> None:
        """Content read in the content state."""
        self._emit_text("content", text, False)

    def put_reasoning(self, text: str) -> None:
        self._emit_text("reasoning_content", text, False)

    def put_boundary(self) -> None:
        self._boundary()

    def put_calls(self) -> None:
        self._call_boundary()

    def put_call(self, name: str, call_id: str, text: str, value: Any) -> None:
        """A call a whole-text reader read at once (``value``: its arguments decoded, or None): its
        arguments sent as the stream would send them; their decoded value kept for the guard when it
        is the text's."""
        index, fit = self._add_call(name, call_id)
        if fit is not None:
            if value is None:
                try:
                    value = json.loads(text)
                except (ValueError, RecursionError):
                    value = None
            if value is None or fit.whole(value) is not None:
                # something to reshape (or unreadable): as a stream reads it
                self._fits.append(FitStream(fit))
                self.call_args(index, text)
                return
        self._fits.append(None)     # nothing held: the text goes out as written
        if text:
            self._args_seen[index] = True
            self._send_args(index, text)
        if value is not None:
            if self._values is None:
                self._values = {}
            self._values[index] = value

    def done(self) -> Message:
        """The output ended where the steps end: the message, its calls guarded."""
        self._flush_fits()
        self._end_inline()
        self.sync()
        self._guard(self._values)
        return self.msg

    def build(self, steps: list[Step]) -> Message:
        """The message of a complete output from the steps a whole-text reader took through it
        (:mod:`.whole`): they must be the ones the engine takes reading it."""
        for step in steps:
            kind = step[0]
            if kind == "content":
                self.put_content(step[1])
            elif kind == "reasoning":
                self.put_reasoning(step[1])
            elif kind == "boundary":
                self._boundary()
            elif kind == "calls":
                self._call_boundary()
            else:
                self.put_call(step[1], step[2], step[3], step[4])
        return self.done()


class StepSink(Protocol):
    """What a whole-text reader gives its steps to (a :class:`MessageBuilder`, or a list of them)."""

    def put_content(self, text: str) -> None: ...

    def put_reasoning(self, text: str) -> None: ...

    def put_boundary(self) -> None: ...

    def put_calls(self) -> None: ...

    def put_call(self, name: str, call_id: str, text: str, value: Any) -> None: ...


__all__ = ["MessageBuilder", "Step", "StepSink"]
