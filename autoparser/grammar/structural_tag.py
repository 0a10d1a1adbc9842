"""xgrammar structural tags: the call envelope and arguments of a request, for vLLM and SGLang.

``structural_tag(plan, envelopes)`` writes the ``{"type": "structural_tag", "format": ...}``
response format that xgrammar compiles (vLLM and SGLang accept it as ``response_format``; a
vLLM tool parser can set it in ``adjust_request``). The format follows the request plan, as
the GBNF does: a reasoning block first (required when the prompt left it open, optional when
the model may open it, absent when switched off), then the calls, triggered by their opener:
``at_least_one`` for ``tool_choice`` required or a named function (only that function's tag),
``stop_after_first`` when ``parallel_tool_calls`` is off. Each call is a ``tag`` whose
``begin`` and ``end`` are spelled exactly as the template renders them
(:mod:`autoparser.probes.envelopes`: structural tags match literally) and whose content is
the tool's JSON schema, or for a layout's key/value items one tag per argument
(:mod:`.structural_items`). Arguments no structural tag can describe raise ``ExportError``.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from .. import markers as mk
from ..errors import ExportError
from ..plan import RequestPlan
from ..probes.envelopes import Envelopes
from .structural_items import items_content, layout_refusal

ReasoningMode = Literal["auto", "enabled", "disabled"]


def check_arguments(plan: RequestPlan) -> None:
    """Raise ``ExportError`` when the request's calls cannot be a structural tag's JSON-schema content."""
    tp = plan.tools
    if tp is None or not tp.allowed:
        raise ExportError("no tool calls apply to this request (no tools, or tool_choice 'none')",
                          template=plan.template)
    lay = tp.format.layout if tp.format.style == "layout" else None
    if lay is not None:
        why = layout_refusal(lay.args)
        if why:
            raise ExportError(why, template=plan.template, target="structural tag")
        return
    if tp.format.python_literals:
        raise ExportError("arguments are written as Python literals, not as a JSON object", template=plan.template,
                          target="structural tag")
    if tp.format.args != "json" or tp.format.args_as_string or (tp.format.json and tp.format.json.args_as_string):
        raise ExportError(f"arguments are written as {tp.format.args!r}, not as a JSON object",
                          template=plan.template)


def structural_tag(plan: RequestPlan, envelopes: Envelopes, reasoning: ReasoningMode = "auto") -> dict[str, Any]:
    """The request's structural tag (xgrammar ``format`` shape)."""
    check_arguments(plan)
    tp = plan.tools
    assert tp is not None
    tags: list[dict[str, Any]] = []
    begins: list[str] = []
    for name in tp.allowed:
        env = envelopes.calls.get(name)
        if env is None:
            raise ExportError(f"no envelope for tool {name!r}", template=plan.template)
        schema = dict(tp.schema(name)) or {"type": "object"}
        first = mk.tokens(tp.opener.marker)[0] if tp.opener.marker.strip() else ""
        if first and not (envelopes.section_begin or env.begin).lstrip().startswith(first):
            raise ExportError(f"the call envelope could not be cut exactly (it should start with {first!r})",
                              template=plan.template, target="structural tag")
        if not env.end.strip():
            # a line-based call (``Action Input: {...}`` then a line break) has no closing marker: the
            # last call ends with the output, which a tag's literal end cannot say
            raise ExportError("calls have no closing marker (they end with a line break or the output)",
                              template=plan.template, target="structural tag")
        begins.append(env.begin)
        lay = tp.format.layout if tp.format.style == "layout" else None
        content = items_content(lay.args.items, schema) if lay is not None and lay.args.items is not None \
            else {"type": "json_schema", "json_schema": schema}
        tags.append({"type": "tag", "begin": env.begin, "content": content, "end": env.end})
    single = not tp.parallel or envelopes.separator is None
    if envelopes.section_begin:
        inner = {"type": "tags_with_separator", "tags": tags, "separator": envelopes.separator or "",
                 "at_least_one": True, "stop_after_first": single}
        section = {"type": "tag", "begin": envelopes.section_begin, "content": inner, "end": envelopes.section_end}
        calls = {"type": "triggered_tags", "triggers": [envelopes.section_begin], "tags": [section],
                 "at_least_one": tp.forced, "stop_after_first": True}
    else:
        trigger = _trigger(begins, tp.opener.exact)
        calls = {"type": "triggered_tags", "triggers": [trigger], "tags": tags,
                 "at_least_one": tp.forced, "stop_after_first": single}
    block = _reasoning(plan, reasoning)
    # the whitespace a template writes after the reasoning block or at the start, before the first call
    # (``\n\n<｜DSML｜tool_calls>``): no free text, but layout, even when a call is required
    between: dict[str, Any] = {"type": "regex", "pattern": r"[ \t\r\n]*"}
    # (a reasoning block with an opener of its own may follow a line break too: ``\n<think>``)
    lead = [] if plan.reasoning.open_at_start else [between]
    elements: list[dict[str, Any]] = [*lead, block, between, calls] if block is not None else \
        [between, calls] if tp.forced else [calls]     # unforced: any text may come before the trigger
    start = plan.content.start
    if start.strip() and not envelopes.section_begin:
        # the answer's wrapper may hold the calls (``<answer><call>...``): its start may come first
        elements[-1:] = [{"type": "regex", "pattern": "(" + re.escape(start) + ")?"}, between, calls]
    fmt = elements[0] if len(elements) == 1 else {"type": "sequence", "elements": elements}
    return {"type": "structural_tag", "format": fmt}


def _trigger(begins: list[str], exact: str) -> str:
    """The opener every call begins with: the calls' marker, else the begins' common prefix."""
    if exact and all(b.startswith(exact) for b in begins):
        return exact
    prefix = begins[0]
    for b in begins[1:]:
        while not b.startswith(prefix):
            prefix = prefix[:-1]
    if not prefix:
        raise ExportError("the calls share no opening text to trigger on")
    return prefix


def _reasoning(plan: RequestPlan, mode: ReasoningMode) -> dict[str, Any] | None:
    r = plan.reasoning
    if mode == "disabled" or r.off or not r.end.strip() or (not r.start.strip() and not r.open_at_start):
        return None
    # the markers without the white space around them: an empty block is written without it
    # (``</think>`` for ``\n</think>\n``); what is around them is the block's text or the layout
    # the sequence allows before and after it
    block = {"type": "tag", "begin": "" if r.open_at_start else r.start.strip(), "content": {"type": "any_text"},
             "end": r.end.strip()}
    if (r.open_at_start and r.start.strip()) or mode == "enabled":
        return block      # a delimiter-only block the prompt opened may still be skipped: optional
    return {"type": "optional", "content": block}


__all__ = ["check_arguments", "structural_tag"]
