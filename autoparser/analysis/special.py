"""Last-resort, template-specific knowledge, applied after the general analysis.

Each entry names the family it serves, says why rendering cannot reveal the
format, and is expressed as data (the same ``ToolFormat`` the analysis would
produce). Every entry is exercised by ``tests/test_special.py`` on the
templates it names. Keep this list short: a template that renders its own
tool calls never needs an entry here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from .. import markers as mk
from ..render import Renderer
from .layout.model import Piece
from .model import Analysis, LiteralArgs, ToolFormat


@dataclass(frozen=True)
class Special:
    """One family's facts. It applies when every needle is in the template source and the general
    analysis found the tool style ``when_style`` (any style when empty)."""

    name: str                      # family, as named in tests
    why: str                       # why the general analysis cannot see it
    needles: tuple[str, ...]       # the template fingerprint: texts its source holds
    when_style: str = ""           # the tool style the general analysis found ("none": no calls rendered)
    tools: ToolFormat | None = None              # the call format, when rendering shows none
    markers: tuple[str, ...] = ()  # tokens the model writes around its answer or calls that no render shows;
                                   # recognised and dropped wherever they appear in free text
    tool_fields: tuple[tuple[str, str], ...] = ()       # ToolFormat fields the model writes otherwise
    reasoning_fields: tuple[tuple[str, str], ...] = ()  # ReasoningFormat fields the model writes otherwise
    content_fields: tuple[tuple[str, str], ...] = ()    # ContentFormat fields the model writes otherwise

    def applies(self, analysis: Analysis, source: str) -> bool:
        style = analysis.tools.style
        return all(n in source for n in self.needles) and \
            (not self.when_style or style == self.when_style or (self.when_style == "tagged" and style == "layout"))


SPECIALS: tuple[Special, ...] = (
    Special(
        name="lfm2-pythonic",
        why="LFM2 / LFM2.5 templates list tools ('List of tools:') but never render assistant tool calls; "
            "the model writes <|tool_call_start|>[name(key=value, ...)]<|tool_call_end|>",
        needles=("List of tools:",), when_style="none",
        tools=ToolFormat(style="tagged", section_start="<|tool_call_start|>[", section_end="]<|tool_call_end|>",
                         separator=",", args="literal",
                         literal=LiteralArgs(open="(", close=")", kv_sep="=", quotes=('"', "'"))),
    ),
    Special(
        name="harmony",
        why="gpt-oss (Harmony) writes a call header's fields in either order and with optional parts "
            "(' to=functions.NAME<|channel|>commentary json<|message|>', '<|channel|>commentary "
            "to=functions.NAME <|constrain|>json<|message|>'), one message per call (<|start|>assistant before "
            "each), a preamble on the commentary channel, and may stop a message at <|end|>; the template renders "
            "one spelling only (llama.cpp gpt-oss vectors, SGLang gpt_oss detector, Dynamo harmony fixtures). A "
            "message to a built-in tool (' to=python', ' to=container.exec', ' to=browser.search') is neither "
            "content nor a call of the request (llama.cpp drops it: gpt-oss vectors 13, 14): it is set aside",
        needles=("<|start|>assistant to=", "<|channel|>commentary", "<|message|>", "<|call|>"), when_style="tagged",
        tool_fields=(("section_start", ""), ("call_start", " to=functions."), ("name_prefix", ""),
                     ("name_suffix", mk.HEADER + "<|message|>")),
        reasoning_fields=(("end", "<|end|>"),),
        content_fields=(("aside_start", " to=" + mk.NAME_WILDCARD + mk.HEADER + "<|message|>"),
                        ("aside_end", "<|call|>")),
        markers=("<|channel|>commentary<|message|>", "<|channel|>final" + mk.HEADER + "<|message|>",
                 "<|channel|>commentary to=assistant", "<|channel|>commentary", "<|channel|>analysis",
                 "<|start|>assistant", "<|start|>", "<|end|>"),
    ),
    Special(
        name="hunyuan-a13b",
        why="Hunyuan-A13B writes <think>…</think> then <answer>…</answer>; vLLM's tool template for it renders "
            "neither (vLLM hunyuan_a13b reasoning and tool parser tests, SGLang hunyuan detector)",
        needles=("你是一位函数组合专家", "<tool_calls>["), when_style="json",
        reasoning_fields=(("mode", "tagged"), ("start", "<think>\n"), ("end", "</think>")),
        content_fields=(("start", "<answer>\n"), ("end", "</answer>")),
    ),
    Special(
        name="xlam",
        why="xLAM models also wrap their JSON call list in other families' markers: [TOOL_CALLS] before it, "
            "<tool_call>…</tool_call> around it; the templates render the bare list (vLLM xlam tool parser tests)",
        needles=("xLAM",), when_style="json",
        markers=("[TOOL_CALLS]", "<tool_call>", "</tool_call>"),
    ),
    Special(
        name="llama3-python-tag",
        why="Llama 3.x tokenizers declare <|python_tag|>, which the model writes before a JSON call; templates "
            "render custom-tool calls without it (vLLM llama3_json, SGLang llama32 detector tests)",
        needles=("<|start_header_id|>", "<|eot_id|>"), when_style="json",
        markers=("<|python_tag|>",),
    ),
    Special(
        name="llama4-python-block",
        why="Llama 4 tokenizers declare <|python_start|> / <|python_end|>, which the model writes around a "
            "pythonic call list; the templates never render them (vLLM llama4_pythonic tests)",
        needles=("<|header_start|>", "<|eot|>"), when_style="tagged",
        markers=("<|python_start|>", "<|python_end|>"),
    ),
)


def _with_fields(t: ToolFormat, fields: dict[str, Any]) -> ToolFormat:
    """``t`` with ``fields`` replaced; a layout's literals around the name follow ``name_prefix`` and
    ``name_suffix`` (the text before and after the name)."""
    out = dataclasses.replace(t, **fields)
    lay = out.layout
    if lay is None:
        return out
    pieces = list(lay.pieces)
    at = next((i for i, p in enumerate(pieces) if p.kind == "name"), -1)
    for key, where in (("name_suffix", at + 1), ("name_prefix", at - 1)):
        if key not in fields or at < 0:
            continue
        text = fields[key]
        if 0 <= where < len(pieces) and pieces[where].kind == "lit":
            pieces[where] = dataclasses.replace(pieces[where], text=text)
        elif text:
            pieces.insert(max(where, 0) if key == "name_suffix" else at, Piece("lit", text))
            at += key == "name_prefix"
    pieces = [p for p in pieces if p.kind != "lit" or p.text]
    return dataclasses.replace(out, layout=dataclasses.replace(lay, pieces=tuple(pieces)))


def apply_special(analysis: Analysis, renderer: Renderer) -> Analysis:
    """Fill in what rendering could not show, for the families listed in ``SPECIALS`` (each entry that
    applies adds its facts, in order: xLAM's Llama template also has Llama's ``<|python_tag|>``)."""
    out = analysis
    for special in SPECIALS:
        if special.applies(analysis, renderer.source):
            if special.tools is not None:
                out = dataclasses.replace(out, tools=special.tools)
            tool_fields: dict[str, Any] = dict(special.tool_fields)
            reasoning_fields: dict[str, Any] = dict(special.reasoning_fields)
            content_fields: dict[str, Any] = dict(special.content_fields)
            if tool_fields:
                out = dataclasses.replace(out, tools=_with_fields(out.tools, tool_fields))
            if reasoning_fields:
                out = dataclasses.replace(out, reasoning=dataclasses.replace(out.reasoning, **reasoning_fields))
            if content_fields:
                out = dataclasses.replace(out, content=dataclasses.replace(out.content, **content_fields))
            if special.markers:
                extra = tuple(m for m in special.markers if m not in out.content.in_tool_turns)
                out = dataclasses.replace(out, content=dataclasses.replace(
                    out.content, in_tool_turns=(*out.content.in_tool_turns, *extra)))
            # ``handler`` names an entry that supplies the whole call format; markers alone are a note
            out = dataclasses.replace(out, handler=special.name if special.tools is not None else out.handler,
                                      notes=(*out.notes, f"special: {special.name}: {special.why}"))
    return out
