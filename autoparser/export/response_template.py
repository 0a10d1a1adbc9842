"""Export an analysis as a transformers ``response_template`` (declarative response parsing).

transformers (``tokenizer.parse_response`` / ``get_response_parser``), vLLM's ``hf``
parsers and SGLang's ``response_template`` detectors read a dict of *regions*:

    {"version": 1, "defaults": {"role": "assistant"}, "start_anchor": ...,
     "fields": {"thinking": {...}, "tool_calls": {...}, "content": {...}}}

A region opens at a marker, collects text up to its close, and is parsed by a content
parser (``text``, ``json``, ``xml-inline``, ``python-call-list``); regions do not
nest, and at most one field (``content`` here) takes the text outside the others.
:func:`response_template` builds that dict from the marker structures of
``tmpl.analysis`` and raises :class:`~autoparser.errors.ExportError` naming what the
language cannot express (:data:`REASONS`) instead of exporting a template that would
read the model's output differently from ``Request.parse``.

Choices (transformers 5.24's parser):

* the reasoning field is named ``thinking``, the only name vLLM and SGLang accept;
* ``start_anchor`` is the assistant header, so that a reasoning block the prompt
  opens (``<think>\\n``) or closes empty (thinking off) is replayed from ``prefix=``;
* tool-call openers start with ``\\s*``, their closes end with it, and the content
  close is ``\\s*(?:END_OF_TURN|SECTION_END|...)``, so whitespace between regions never
  opens an empty content region (which would overwrite the real content); no pattern
  uses ``\\Z``, which would hide partial markers from the streaming parser;
* markers become literals where they have no inner whitespace, else regexes with
  optional whitespace between their pieces (as the runtime reads them);
* call ids are not exported: vLLM and SGLang generate their own.
"""

from __future__ import annotations

from typing import Any

import regex

from ..analysis.model import LINE_ARGS, Analysis, LiteralArgs, TaggedArgs, ToolFormat
from ..markers import definition as dm
from .layout import layout_calls
from .regions import (
    ID,
    NAME,
    REASONS,
    TRAILING_WS,
    alt,
    alternatives,
    lookahead,
    opt,
    put,
    refuse,
    rx,
    seq,
    set_key,
    transform,
)

__all__ = ["REASONS", "response_template"]

# ------------------------------------------------------------------ anchor and reasoning
_LAST_WORD = regex.compile(r"\S+\Z")


def _split_start(a: Analysis) -> tuple[str, str]:
    """(header part, opener) of the reasoning start marker.

    Some analyses read the whole generation prompt as the opener
    (``<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|><|START_THINKING|>``, ``assistant: <think>``);
    the assistant header is then everything before its last marker.
    """
    start = a.reasoning.start.strip()
    header = a.assistant_header.strip()
    if header and start.startswith(header) and start != header:
        return header, start[len(header):].strip()
    if not header and start:
        m = dm.trailing_shape(start) or _LAST_WORD.search(start)
        if m is not None and m.start() > 0:
            return start[: m.start()].strip(), m.group()
    return "", start


def _reasoning_open(a: Analysis) -> str:
    """The reasoning opener without the assistant header some analyses include in it."""
    return _split_start(a)[1]


def _without_reasoning(a: Analysis, text: str) -> str:
    """``text`` without a trailing reasoning opener or thinking-off closer (``<think>``, ``</think>``)."""
    text = text.strip()
    for marker in (a.reasoning.end.strip(), a.reasoning.start.strip()):
        if marker and text.endswith(marker) and text != marker:
            text = text[: -len(marker)].strip()
    return text


def _header(a: Analysis) -> str:
    return _without_reasoning(a, a.assistant_header)


def _anchor(a: Analysis) -> str:
    header = _header(a) or _split_start(a)[0]
    if header:
        return header
    gp = _without_reasoning(a, a.generation_prompt)
    if gp:
        return gp
    if a.reasoning.prefilled:
        raise refuse(a, "no-anchor")
    return ""


def _thinking(a: Analysis) -> dict[str, Any] | None:
    r = a.reasoning
    if r.mode == "none":
        return None
    opener = _reasoning_open(a)
    if opener and r.mode == "tagged" and r.end.strip(" \t") and not r.end.strip():
        raise refuse(a, "blank-line-closer", f"opener {opener!r}")
    if r.mode == "delimiter" or not opener or not r.end.strip():
        raise refuse(a, "reasoning-without-opener", f"end marker {r.end.strip()!r}")
    field: dict[str, Any] = {}
    if r.prefilled:
        # a prompt that closes the block it would open (thinking off: `</think>` alone after the
        # header) replays an empty reasoning region instead of leaking the closer into the content
        field["open_pattern"] = f"{rx(opener)}|(?={_end_not_opener(r.end, opener)})"
    else:
        # an end marker that starts the turn (a template writing an empty block's closer alone,
        # ``</mm:think>answer``) closes an empty reasoning region, as Request.parse drops it; not where
        # the opener begins with the end marker (``:::thinking`` closed by ``:::``)
        field["open_pattern"] = f"{rx(opener)}|\\A\\s*(?={_end_not_opener(r.end, opener)})"
    put(field, "close", [r.end])
    field["content"] = "text"
    return field


def _end_not_opener(end: str, opener: str) -> str:
    """The end marker, and when the opener begins with it (``:::`` and ``:::thinking``) the first
    character that leaves the opener: a streaming parser holds a partial match back, where a
    negative lookahead at the end of its buffer would pass too early."""
    close = end.strip()
    if not opener.startswith(close) or len(opener) == len(close):
        return rx(end)
    rest = opener[len(close):]
    diverge = "|".join(regex.escape(rest[:i]) + "[^" + regex.escape(rest[i]) + "]" for i in range(len(rest)))
    return f"{rx(close)}(?:{diverge})"


# ------------------------------------------------------------------ tool calls
def _section_brackets(t: ToolFormat) -> tuple[str, str] | None:
    """(opener, closer) when the section is a bracketed list of calls (``[TOOL_CALLS][...]``)."""
    start, end = t.section_start.rstrip(), t.section_end.lstrip()
    if start.endswith("[") and end.startswith("]") and not t.call_start.strip() and not t.call_end.strip():
        return start[:-1], end[1:]
    return None


def _json_calls(a: Analysis, end_lookahead: str) -> dict[str, Any]:
    t = a.tools
    lay = t.json
    assert lay is not None
    if lay.name_is_key:
        raise refuse(a, "name-as-key")
    name_path = ".".join(lay.name_path)
    args_path = ".".join(lay.args_path)
    brackets = _section_brackets(t)
    if brackets is not None:
        opener, closer = brackets
        field: dict[str, Any] = {"open_pattern": r"\s*" + rx(opener) if opener.strip() else r"(?=\s*\[\s*\{)"}
        if closer.strip():
            field["close_pattern"] = rx(closer) + TRAILING_WS
        elif end_lookahead:   # `[TOOL_CALLS][...]` ends with the list: close before the end of turn
            field["close_pattern"] = r"(?<=\])" + lookahead(end_lookahead)
        field.update(content="json", transform=transform("{" + name_path + "}", "{" + args_path + "}"),
                     transform_each=True)
        return field
    first_key = rx(t.name_prefix.strip() or '{"' + lay.name_path[0] + '"')
    if not t.call_start.strip():
        # bare JSON objects, maybe inside a section (MiniMax-M1 `<tool_calls>\n{...}\n{...}`): a call
        # starts at its first key and ends at a `}` followed by the next call or the end
        if not t.section_start.strip() and a.capabilities.parallel_tool_calls:
            raise refuse(a, "markerless-parallel")
        field = {"open_pattern": seq(r"\s*" if t.section_start.strip() else "", opt(rx(t.separator)),
                                      opt(rx(t.section_start)), f"(?={first_key})")}
        if t.section_start.strip():
            nxt = alt([first_key, rx(t.section_end), rx(t.call_end), end_lookahead])
            field["close_pattern"] = r"(?<=\})(?=\s*" + opt(rx(t.separator)) + nxt + ")"
        elif end_lookahead:
            field["close_pattern"] = r"(?<=\})" + lookahead(end_lookahead)
    else:
        field = {"open_pattern": seq(r"\s*", opt(rx(t.separator)), _section_opt(t), rx(t.call_start))}
        close = t.call_end.strip()
        if close:
            field["close_pattern"] = rx(close) + TRAILING_WS
        else:
            set_key(field, "close_pattern", lookahead(rx(t.call_start), end_lookahead))
    field.update(repeats=True, content="json",
                 transform=transform("{content." + name_path + "}", "{content." + args_path + "}"))
    return field


def _section_opt(t: ToolFormat) -> str:
    return opt(rx(t.section_start)) if t.section_start.strip() and t.call_start.strip() else ""


def _tagged_args(a: Analysis, tg: TaggedArgs) -> dict[str, Any]:
    if "\x04" in tg.value_end or "\x04" in tg.prefix:
        raise refuse(a, "nested-tagged")
    if tg.separator.strip():
        raise refuse(a, "tagged-separator", repr(tg.separator))
    key_end = tg.key_suffix.strip()
    key = r"(?P<key>[^\s<>=\"]+?)" if key_end else r"(?P<key>[\w.\-]+)"
    pattern = rx(tg.prefix) + key + (rx(key_end) if key_end else "") + r"\s*(?P<value>.*?)\s*" + rx(tg.value_end)
    args: dict[str, Any] = {"tag_pattern": pattern}
    if tg.strings_json:
        args["value_parser"] = {"name": "json", "args": {"allow_non_json": True}}
    return {"content": "xml-inline", "content_args": args}


def _literal_args(a: Analysis, lit: LiteralArgs) -> dict[str, Any]:
    if lit.bare_strings:
        raise refuse(a, "bare-strings")
    if lit.open == "{" and lit.close == "}" and lit.kv_sep == ":":
        delims = [[q, q] for q in lit.quotes if q not in ('"', "'")]
        args: dict[str, Any] = {"unquoted_keys": True}
        if delims:
            args["string_delims"] = delims
        return {"content": "json", "content_args": args}
    raise refuse(a, "literal-style", f"{lit.open}k{lit.kv_sep}v{lit.close}")


def _python_calls(a: Analysis) -> dict[str, Any]:
    """``[f(k='v'), g(k=1)]`` inside a section: transformers' ``python-call-list``."""
    t = a.tools
    brackets = _section_brackets(t)
    lit = t.literal
    if brackets is None or lit is None or t.name_prefix.strip() or t.name_suffix.strip():
        raise refuse(a, "literal-style", "Python calls outside a bracketed section")
    if lit.bare_strings:
        raise refuse(a, "bare-strings")
    opener, closer = brackets
    if not opener.strip():
        raise refuse(a, "no-call-opener")
    field: dict[str, Any] = {"open_pattern": r"\s*" + rx(opener)}
    if closer.strip():
        field["close_pattern"] = rx(closer) + TRAILING_WS
    field.update(content="python-call-list", transform=transform("{name}", "{arguments}"), transform_each=True)
    return field


def _framed_calls(a: Analysis, end_lookahead: str) -> dict[str, Any]:
    """Calls whose name sits between markers, followed by JSON, literal or tagged arguments."""
    t = a.tools
    if t.name_in_id:
        raise refuse(a, "name-in-id")
    if t.args == "literal" and t.literal is not None and t.literal.open == "(":
        return _python_calls(a)
    if not (t.section_start.strip() or t.call_start.strip() or t.name_prefix.strip()):
        raise refuse(a, "no-call-opener", f"separator {t.separator.strip()!r}" if t.separator.strip() else "")
    if t.call_start.strip() and not t.section_start.strip() and a.generation_prompt.endswith(t.call_start.strip()):
        # Functionary v3.2: the prompt writes the first call's opener (``>>>``), so the output starts with a name
        raise refuse(a, "no-call-opener", f"the generation prompt writes the first {t.call_start.strip()!r}")
    if t.call_start.strip() or t.name_prefix.strip():
        lead = [opt(rx(t.separator)), opt(rx(t.section_start)) if t.section_start.strip() else ""]
    else:   # the section opener is all that starts a call (gpt-oss ` to=functions.NAME`): required
        lead = [opt(rx(t.separator)), rx(t.section_start)]
    if t.id_position == "before_name":
        parts = [rx(t.call_start), seq(rx(t.id_prefix), ID) if t.id_prefix.strip() else ID,
                 rx(t.id_suffix), rx(t.name_prefix), NAME, rx(t.name_suffix)]
    elif t.id_position == "after_name":
        idp = rx(t.id_prefix)
        parts = [rx(t.call_start), rx(t.name_prefix), NAME, rx(t.name_suffix),
                 f"(?:{idp}{ID})?" if idp else ID, rx(t.id_suffix)]
    elif t.id_position == "after_args":
        raise refuse(a, "id-after-args")
    else:
        parts = [rx(t.call_start), rx(t.name_prefix), NAME, rx(t.name_suffix)]
    field: dict[str, Any] = {"open_pattern": r"\s*" + seq(*lead, *parts)}
    close = " ".join(x for x in (t.call_close.strip(), t.call_end.strip()) if x)
    if close:
        field["close_pattern"] = rx(close) + TRAILING_WS
    else:
        set_key(field, "close_pattern", lookahead(rx(t.call_start) or rx(t.name_prefix), end_lookahead))
    if t.args == "tagged" and t.tagged is not None:
        field.update(_tagged_args(a, t.tagged))
    elif t.args == "literal" and t.literal is not None:
        field.update(_literal_args(a, t.literal))
    else:
        field["content"] = "json"
    field.update(repeats=True, transform=transform("{name}", "{content}"))
    return field


def _tool_calls(a: Analysis, end_lookahead: str) -> dict[str, Any] | None:
    t = a.tools
    if t.style == "none":
        return None
    if any(e in m for m in (t.name_prefix, t.name_suffix, t.call_start, t.section_start)
           for e in ("&#34;", "&quot;")):
        raise refuse(a, "html-escaped")
    if t.python_literals or t.args == "python":
        raise refuse(a, "python-args")
    if t.args in LINE_ARGS:
        raise refuse(a, "yaml-args")
    if t.args == "json_attr":
        raise refuse(a, "html-escaped")
    if t.style == "json" and t.json is not None:
        return _json_calls(a, end_lookahead)
    if t.style == "layout" and t.layout is not None:
        if t.name_in_id:
            raise refuse(a, "name-in-id")
        return layout_calls(a, end_lookahead)
    return _framed_calls(a, end_lookahead)


# ------------------------------------------------------------------ content
def _content(a: Analysis, eos: str, tools: dict[str, Any] | None) -> dict[str, Any]:
    """The answer: the implicit field, closed by anything that is no text of the answer.

    Markers that wrap the answer (``<|START_RESPONSE|>``, ``<|channel|>final<|message|>``),
    end-of-turn markers, the assistant header a model may echo and a tool section's end
    close it; text on either side stays content, as ``Request.parse`` keeps it.
    """
    c, t = a.content, a.tools
    reasoning_open = _reasoning_open(a)
    ends = [*a.end_of_turn, eos, _header(a), c.start, c.end,
            *(w for w in c.in_tool_turns if w.strip() != reasoning_open)]
    if tools is not None:
        ends += [t.section_end, t.call_end if not t.call_start.strip() else ""]
    closers = alternatives(ends)
    if not closers:
        return {"content": "text"}
    return {"close_pattern": r"\s*(?:" + "|".join(closers) + ")" + TRAILING_WS, "content": "text"}


# ------------------------------------------------------------------ argument values
_PY_CONTAINER = regex.compile(r"[\[{(,:=]\s*'[^'\n]*'\s*[:\],})]|\{'|\['")
_PY_WORD = regex.compile(r"(?<![\w\"'])(?:None|True|False)(?![\w\"'])")


def _check_values(a: Analysis, sample: str) -> None:
    """Refuse argument values transformers cannot type as ``Request.parse`` does.

    ``sample`` is the template's own rendering of one call carrying every argument type
    (strings with quotes and a newline, numbers, booleans, null, objects, arrays; the
    self-test's ``args_all``). transformers types values as JSON (by the tool's schema);
    Python reprs, CDATA sections and unescaped quotes in Python calls read differently.
    """
    t = a.tools
    if t.style == "layout" and t.layout is not None:
        # the layout says how each value is written (and was checked against the renders): a CDATA
        # section it did not learn is one the template writes for some values only
        if "<![CDATA[" in sample and "<![CDATA[" not in repr(t.layout):
            raise refuse(a, "cdata-values")
        return
    if "<![CDATA[" in sample:
        raise refuse(a, "cdata-values")
    if t.args == "literal" and t.literal is not None and t.literal.open == "(":
        import ast

        start = sample.find("[")
        end = sample.rfind("]")
        try:
            ast.parse(sample[start:end + 1] if 0 <= start < end else sample, mode="eval")
        except (SyntaxError, ValueError):
            raise refuse(a, "unescaped-strings") from None
        return
    # raw tagged values are typed by the tool's schema, which reads True / None; containers it does not
    if _PY_CONTAINER.search(sample) or (t.args != "tagged" and _PY_WORD.search(sample)):
        raise refuse(a, "python-values")


def response_template(analysis: Analysis, *, eos_token: str = "", argument_sample: str = "",
                      reasoning_sample: str = "", reasoning_call_sample: str = "") -> dict[str, Any]:
    """The transformers ``response_template`` for ``analysis``; raises ``ExportError``.

    The samples are the template's own renderings (``ChatTemplate.response_template`` passes
    them): ``argument_sample`` a call with every argument type (see :func:`_check_values`),
    ``reasoning_sample`` reasoning with an answer and ``reasoning_call_sample`` reasoning before a
    call (see :func:`_close_thinking`).
    """
    a = analysis
    if a.envelope is not None:
        raise refuse(a, "json-envelope")
    anchor = _anchor(a)
    fields: dict[str, Any] = {}
    thinking = _thinking(a)
    if thinking is not None:
        fields["thinking"] = thinking
    ends = [e.strip() for e in (*a.end_of_turn, eos_token) if e and e.strip()]
    end_lookahead = alt([rx(e) for e in ends])
    tools = _tool_calls(a, end_lookahead)
    if tools is not None:
        if argument_sample:
            _check_values(a, argument_sample)
        fields["tool_calls"] = tools
    if thinking is not None:
        _close_thinking(a, thinking, tools, reasoning_sample, reasoning_call_sample)
    fields["content"] = _content(a, eos_token, tools)
    out: dict[str, Any] = {"version": 1, "defaults": {"role": "assistant"}}
    if anchor:
        out["start_anchor"] = anchor
    else:
        out["start_anchor_pattern"] = r"\Z"   # nothing of the prompt belongs to the turn
    out["fields"] = fields
    return out


def _close_thinking(a: Analysis, thinking: dict[str, Any], tools: dict[str, Any] | None,
                    reasoning_sample: str, reasoning_call_sample: str) -> None:
    """What else closes the reasoning field than its literal end marker (kept a literal where it
    can be: vLLM tokenizes it to find the end of reasoning under structured output).

    * A call opener, as ``Request.parse`` reads it, when the prompt leaves the block open or the
      template writes no end marker before a call (``Thought: ...\nAction: f``).
    * The whitespace after the end marker, when the template writes the reasoning after the
      answer (``C\n<rationale>R</rationale>``): a region of whitespace left after it would
      replace the answer.
    """
    r, t = a.reasoning, a.tools
    closes: list[str] = []
    end = r.end.strip()
    unclosed = r.prefilled or bool(reasoning_call_sample and end and end not in reasoning_call_sample)
    if tools is not None and unclosed and (t.call_start.strip() or t.section_start.strip()):
        opener = tools.get("open_pattern") or regex.escape(str(tools.get("open", "")))
        opener = opener.replace("(?P<name>", "(?:")   # a capture belongs to the call field only
        closes.append(f"(?={opener})")
    start = _reasoning_open(a)
    at = reasoning_sample.find(start) if start else -1
    trailing = r"\s*" if at > 0 and reasoning_sample[:at].strip() else ""
    if not closes and not trailing:
        return
    close = thinking.pop("close", None)
    literals = [regex.escape(c) + trailing for c in ([close] if isinstance(close, str) else close or [])]
    literals += [thinking.pop("close_pattern") + trailing] if "close_pattern" in thinking else []
    thinking["close_pattern"] = "|".join([*literals, *closes])
