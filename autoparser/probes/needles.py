"""Probe needles: unique strings whose position in a rendering tells what the template did."""

from __future__ import annotations

from typing import Any

SYSTEM = "S_SYSTEM_MSG You are helpful END_S"
USER = "U_USER_MSG Hello END_U"
ASSISTANT = "A_ASST_MSG I can help END_A"
REASONING = "R_REASON_PART I am thinking END_R"
REASONING_TWO = "Q_OTHER_THOUGHT two lines\n\nof it END_Q"   # a second reasoning text, with a blank line
FN1, FN2 = "fff_first_fun", "sss_second_fun"
ARG1, ARG2 = "aa_arg_fst", "bb_arg_snd"
VAL1, VAL2 = "XXXX_VAL_ONE", "YYYY_VAL_TWO"
ID1, ID2 = "call00001", "call00002"

NAME_MARK, ID_MARK = "\x01", "\x02"   # sentinels that replace names and ids before diffing


def tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": f"Probe function {name}.",
        "parameters": {"type": "object", "properties": {
            ARG1: {"type": "string", "description": "first"},
            ARG2: {"type": "string", "description": "second"}}, "required": []}}}


TOOLS = [tool(FN1), tool(FN2)]


def call(call_id: str, name: str, args: dict[str, Any], as_string: bool = False) -> dict[str, Any]:
    import json

    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(args) if as_string else args}}
