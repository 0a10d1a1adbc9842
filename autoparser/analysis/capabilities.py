"""Capability probes: what the template renders, read from needles (a refusal reads False)."""

from __future__ import annotations

from ..probes import needles as N
from ..probes.prober import Prober
from .model import Capabilities


def probe_capabilities(pr: Prober) -> Capabilities:
    sys_out = pr.render([{"role": "system", "content": N.SYSTEM}, {"role": "user", "content": N.USER}], None, True)
    tools_out = pr.prompt(tools=N.TOOLS) or ""

    def calls(content: object, as_string: bool, n: int = 1) -> str:
        """The assistant turn with calls (not the whole prompt: the tool list names the tools too)."""
        cs = [N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1}, as_string)]
        if n == 2:
            cs.append(N.call(N.ID2, N.FN2, {N.ARG1: N.VAL1}, as_string))
        out = pr.turn({"role": "assistant", "content": content, "tool_calls": cs}, tools=N.TOOLS)
        return out or ""

    # a tool list rendered after the turn names the tools too: only extra occurrences count
    listed = pr.turn({"role": "assistant", "content": ""}, tools=N.TOOLS) or ""

    def shows(text: str, needle: str) -> bool:
        return text.count(needle) > listed.count(needle)

    obj = calls("", False) or calls(None, False)
    strg = calls("", True) or calls(None, True)
    any_call = obj if shows(obj, N.FN1) or shows(obj, N.ID1) else strg
    two = calls("", False, 2) or calls("", True, 2) or calls(None, False, 2)
    reasoning_out = pr.full({"role": "assistant", "content": N.ASSISTANT, "reasoning_content": N.REASONING}) or ""
    return Capabilities(
        system_role=bool(sys_out and N.SYSTEM in sys_out),
        tools=N.FN1 in tools_out,
        tool_calls=shows(any_call, N.FN1) or shows(any_call, N.ID1),
        parallel_tool_calls=shows(two, N.FN2) or shows(two, N.ID2),
        tool_call_id=shows(any_call, N.ID1),
        object_arguments=N.VAL1 in obj,
        string_arguments=N.VAL1 in strg,
        null_content=bool(calls(None, False) or calls(None, True)),
        reasoning=N.REASONING in reasoning_out,
    )
