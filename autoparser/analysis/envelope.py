"""Turn envelopes: the whole assistant turn is one JSON object whose members hold the reasoning,
the reply and the calls (``{"thought": R, "response": C, "tool_calls": [{"name": N, ...}]}``).

Every key is found by diffing paired renderings, never from a list of known names: the reply's
key holds the answer needle in a content-only turn, the reasoning's key holds the reasoning
needle in a turn that has one, and the calls' key holds an array that grows from one call
object to two between the one- and two-call turns. Inside a call object the name, the
arguments and the id sit where the probe's name, first argument and id are.
"""

from __future__ import annotations

import json
from typing import Any

from ..probes import needles as N
from ..probes.prober import Prober
from .model import EnvelopeFormat, JsonLayout, ToolFormat


def turn_object(turn: str | None) -> dict[str, Any] | None:
    """The JSON object that is the whole turn (only whitespace before it), or None."""
    if turn is None:
        return None
    at = turn.find("{")
    if at < 0 or turn[:at].strip():
        return None
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(turn, at)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _key_holding(obj: dict[str, Any] | None, needle: str) -> str:
    if obj is None:
        return ""
    return next((str(k) for k, v in obj.items() if v == needle), "")


def _paths(value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    out: list[tuple[tuple[str, ...], Any]] = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, str(k)))
    return out


def call_layout(obj: dict[str, Any]) -> JsonLayout | None:
    """Where the probe call's name, arguments and id sit in its rendered call object."""
    name_path: tuple[str, ...] | None = None
    args_path: tuple[str, ...] | None = None
    id_path: tuple[str, ...] = ()
    as_string = name_is_key = False
    for path, v in _paths(obj):
        if path and path[-1] == N.FN1 and isinstance(v, dict):
            name_path, args_path, name_is_key = path, path, True
        elif v == N.FN1 and name_path is None:
            name_path = path
        elif v == N.ID1 and not id_path:
            id_path = path
        elif isinstance(v, dict) and N.ARG1 in v and args_path is None:
            args_path = path
        elif isinstance(v, str) and N.ARG1 in v and args_path is None:
            args_path, as_string = path, True
    if name_path is None or args_path is None:
        return None
    return JsonLayout(name_path=name_path, args_path=args_path, id_path=id_path, name_is_key=name_is_key,
                      args_as_string=as_string)


def _section(one: str, two: str, key: str, layout: JsonLayout) -> ToolFormat:
    """The calls' member as a JSON call section, spelled as rendered: its key through the array's
    opening bracket (``"tool_calls": [``), the text between two call objects and the closing bracket."""
    decode = json.JSONDecoder(strict=False).raw_decode
    spelled = json.dumps(key, ensure_ascii=False)
    k1, k2 = one.find(spelled), two.find(spelled)
    b1, b2 = one.find("{", k1), two.find("{", k2)
    if min(k1, k2, b1, b2) < 0:
        return ToolFormat()
    try:
        e1 = decode(one, b1)[1]
        e2 = decode(two, b2)[1]
    except ValueError:
        return ToolFormat()
    close, second = one.find("]", e1), two.find("{", e2)
    if close < 0 or second < 0:
        return ToolFormat()
    return ToolFormat(style="json", section_start=one[k1:b1], section_end=one[e1:close + 1],
                      separator=two[e2:second], json=layout)


def _calls(pr: Prober) -> tuple[str, JsonLayout, ToolFormat] | None:
    """The calls' key, the call layout and the calls as a section: the member whose array holds
    one call object in the one-call turn and two in the two-call turn."""
    for as_string in (False, True):
        for content in ("", None):
            def turn(calls: list[dict[str, Any]], content: Any = content) -> str | None:
                return pr.turn({"role": "assistant", "content": content, "tool_calls": calls}, tools=N.TOOLS)
            one_text = turn([N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1}, as_string)])
            two_text = turn([N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1}, as_string),
                             N.call(N.ID2, N.FN2, {N.ARG1: N.VAL1}, as_string)])
            one, two = turn_object(one_text), turn_object(two_text)
            if one is None or two is None or one_text is None or two_text is None:
                continue
            for key, value in one.items():
                grown = two.get(key)
                if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict) \
                        and isinstance(grown, list) and len(grown) == 2:
                    layout = call_layout(value[0])
                    if layout is not None:
                        return str(key), layout, _section(one_text, two_text, str(key), layout)
    return None


def analyze_envelope(pr: Prober) -> tuple[EnvelopeFormat, ToolFormat] | None:
    """The turn's envelope, when a content-only turn is one JSON object holding the answer as a
    member's string value, and its calls' member as a JSON call section (what the request plan,
    the call guard and the grammars read: ``"tool_calls": [`` … ``]``); None otherwise."""
    content_key = _key_holding(turn_object(pr.turn({"role": "assistant", "content": N.ASSISTANT})), N.ASSISTANT)
    if not content_key:
        return None
    with_reasoning = turn_object(pr.turn({"role": "assistant", "reasoning_content": N.REASONING,
                                          "content": N.ASSISTANT}))
    reasoning_key = _key_holding(with_reasoning, N.REASONING)
    calls = _calls(pr)
    calls_key, layout, section = calls if calls is not None else ("", None, ToolFormat())
    if len({content_key, reasoning_key or content_key, calls_key or content_key}) != \
            1 + bool(reasoning_key) + bool(calls_key):
        return None
    return EnvelopeFormat(reasoning_key=reasoning_key, content_key=content_key, calls_key=calls_key,
                          call=layout), section
