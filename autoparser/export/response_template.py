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

from .. import markers as mk
from ..analysis.model import LINE_ARGS, Analysis, LiteralArgs, TaggedArgs, ToolFormat
from ..errors import ExportError
from ..markers import definition as dm

__all__ = ["REASONS", "response_template"]

#: Every reason an export is refused, by key (``ExportError.reason``), with its message.
REASONS: dict[str, str] = {
    "reasoning-without-opener": "reasoning has an end marker but no opening marker: a field needs an "
                                "opener, and the implicit field is taken by the content",
    "no-call-opener": "tool calls have no opening marker (the call starts with the tool's name, or "
                      "a recipient such as `>>>NAME`)",
    "markerless-parallel": "tool calls written as bare JSON objects with no marker: one call can be "
                           "found with a lookahead, several in a row cannot be split",
    "name-as-key": "the tool name is a JSON key ({\"NAME\": {...}}); transforms only copy fixed paths",
    "html-escaped": "the template HTML-escapes its JSON (&#34;); the json parser reads plain JSON",
    "name-in-id": "the tool name is read back from the call id",
    "id-after-args": "the call id follows the arguments outside the JSON",
    "python-args": "calls or arguments are Python literals ({'k': 'v'}, True, None); the json parser "
                   "reads JSON only",
    "bare-strings": "literal arguments print strings unquoted (f(k=Paris, France))",
    "literal-style": "a literal argument style no content parser reads (only Gemma-style "
                     "{k:<|\"|>v<|\"|>} and Python call lists [f(k='v')] are expressible)",
    "yaml-args": "arguments are `key: value` lines (YAML) or bare `key=value` pairs; no content parser reads them",
    "nested-tagged": "tagged argument values are closed by a tag naming the key (nested XML objects)",
    "tagged-separator": "tagged arguments are separated by text that is not whitespace",
    "no-anchor": "the assistant turn has no header to anchor the prompt replay, and the prompt "
                 "opens a reasoning block",
    "json-envelope": "the whole turn is one JSON object whose keys hold the reasoning, the answer and "
                     "the calls; regions cannot read the keys of one object",
    "python-values": "argument values are printed as Python literals ({'k': 'v'}, ['a'], None, True); "
                     "transformers types values as JSON only",
    "cdata-values": "argument values may be wrapped in <![CDATA[...]]>, which xml-inline keeps as text",
    "unescaped-strings": "Python-call string arguments are printed without escaping their quotes "
                         "(f(k='it's')); python-call-list cannot read them",
}

TRAILING_WS = r"\s*"            # a call's close takes the whitespace after it: an empty content region
                                 # there would overwrite the content written before the call
NAME = r"(?P<name>[\w.\-]+)"      # a tool name as the runtime's NAME wildcard reads it
ID = r"[^\n]*?"                   # a call id between two markers


def _refuse(analysis: Analysis, reason: str, detail: str = "") -> ExportError:
    msg = REASONS[reason] + (f" ({detail})" if detail else "")
    return ExportError(msg, template=analysis.template, reason=reason)


# ------------------------------------------------------------------ markers
def _is_literal(marker: str) -> bool:
    """A marker the parser can match as a fixed string: no inner whitespace, digits or wildcards."""
    s = marker.strip()
    return bool(s) and len(mk.tokens(s)) == 1 and not regex.search(r"\d|\x03|\x04", s)


def _rx(marker: str) -> str:
    """Regex source for a marker (whitespace between its pieces optional, digits flexible)."""
    return mk.pattern(marker)


def _put(field: dict[str, Any], key: str, markers: list[str]) -> None:
    """``open``/``close`` as literals when every marker allows it, else ``*_pattern``."""
    markers = [m for m in dict.fromkeys(m.strip() for m in markers) if m]
    if not markers:
        return
    if all(_is_literal(m) for m in markers):
        field[key] = markers[0] if len(markers) == 1 else markers
    else:
        field[f"{key}_pattern"] = "|".join(_rx(m) for m in sorted(markers, key=len, reverse=True))


def _set(field: dict[str, Any], key: str, value: str) -> None:
    if value:
        field[key] = value


def _alternatives(markers: list[str]) -> list[str]:
    """Regex alternatives for markers, longest first, safe for streaming.

    With ``partial=True`` the regex module prefers a complete match of a shorter
    marker to a partial match of a longer one it starts (``<|close|>`` before
    ``<|close|>response``), so a stream would close too early. A marker that starts
    another therefore matches only when the next character cannot continue the longer
    one, or at the very end of the text.
    """
    unique = sorted({m.strip() for m in markers if m.strip()}, key=len, reverse=True)
    flat = {m: "".join(m.split()) for m in unique}
    out = []
    for m in unique:
        nexts = sorted({flat[o][len(flat[m])] for o in unique
                        if o != m and flat[o].startswith(flat[m]) and len(flat[o]) > len(flat[m])})
        if nexts:
            chars = "[" + "".join(regex.escape(c) for c in nexts) + "]"
            out.append(f"{_rx(m)}(?!\\s*{chars}|\\Z)|{_rx(m)}\\Z")
        else:
            out.append(_rx(m))
    return out


def _lookahead(*sources: str) -> str:
    """A zero-width close before the next call or the end of the turn (no ``\\Z``: with
    ``partial=True`` a complete match at the end hides a partial marker before it)."""
    present = [x for x in sources if x]
    return "(?=" + r"\s*" + _alt(present) + ")" if present else ""


def _seq(*parts: str) -> str:
    """Regex pieces in a row, optional whitespace between them."""
    out = r"\s*".join(p for p in parts if p)
    while r"\s*\s*" in out:
        out = out.replace(r"\s*\s*", r"\s*")
    return out


def _alt(sources: list[str]) -> str:
    sources = [s for s in dict.fromkeys(sources) if s]
    return sources[0] if len(sources) == 1 else "(?:" + "|".join(sources) + ")"


def _opt(source: str) -> str:
    return f"(?:{source}\\s*)?" if source else ""


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
        raise _refuse(a, "no-anchor")
    return ""


def _thinking(a: Analysis) -> dict[str, Any] | None:
    r = a.reasoning
    if r.mode == "none":
        return None
    opener = _reasoning_open(a)
    if r.mode == "delimiter" or not opener or not r.end.strip():
        raise _refuse(a, "reasoning-without-opener", f"end marker {r.end.strip()!r}")
    field: dict[str, Any] = {}
    if r.prefilled:
        # a prompt that closes the block it would open (thinking off: `</think>` alone after the
        # header) replays an empty reasoning region instead of leaking the closer into the content
        field["open_pattern"] = f"{_rx(opener)}|(?={_rx(r.end)})"
    else:
        _put(field, "open", [opener])
    _put(field, "close", [r.end])
    field["content"] = "text"
    return field


# ------------------------------------------------------------------ tool calls
def _transform(name: str, args: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": args}}


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
        raise _refuse(a, "name-as-key")
    name_path = ".".join(lay.name_path)
    args_path = ".".join(lay.args_path)
    brackets = _section_brackets(t)
    if brackets is not None:
        opener, closer = brackets
        field: dict[str, Any] = {"open_pattern": r"\s*" + _rx(opener) if opener.strip() else r"(?=\s*\[\s*\{)"}
        if closer.strip():
            field["close_pattern"] = _rx(closer) + TRAILING_WS
        elif end_lookahead:   # `[TOOL_CALLS][...]` ends with the list: close before the end of turn
            field["close_pattern"] = r"(?<=\])" + _lookahead(end_lookahead)
        field.update(content="json", transform=_transform("{" + name_path + "}", "{" + args_path + "}"),
                     transform_each=True)
        return field
    first_key = _rx(t.name_prefix.strip() or '{"' + lay.name_path[0] + '"')
    if not t.call_start.strip():
        # bare JSON objects, maybe inside a section (MiniMax-M1 `<tool_calls>\n{...}\n{...}`): a call
        # starts at its first key and ends at a `}` followed by the next call or the end
        if not t.section_start.strip() and a.capabilities.parallel_tool_calls:
            raise _refuse(a, "markerless-parallel")
        field = {"open_pattern": _seq(r"\s*" if t.section_start.strip() else "", _opt(_rx(t.separator)),
                                      _opt(_rx(t.section_start)), f"(?={first_key})")}
        if t.section_start.strip():
            nxt = _alt([first_key, _rx(t.section_end), _rx(t.call_end), end_lookahead])
            field["close_pattern"] = r"(?<=\})(?=\s*" + _opt(_rx(t.separator)) + nxt + ")"
        elif end_lookahead:
            field["close_pattern"] = r"(?<=\})" + _lookahead(end_lookahead)
    else:
        field = {"open_pattern": _seq(r"\s*", _opt(_rx(t.separator)), _section_opt(t), _rx(t.call_start))}
        close = t.call_end.strip()
        if close:
            field["close_pattern"] = _rx(close) + TRAILING_WS
        else:
            _set(field, "close_pattern", _lookahead(_rx(t.call_start), end_lookahead))
    field.update(repeats=True, content="json",
                 transform=_transform("{content." + name_path + "}", "{content." + args_path + "}"))
    return field


def _section_opt(t: ToolFormat) -> str:
    return _opt(_rx(t.section_start)) if t.section_start.strip() and t.call_start.strip() else ""


def _tagged_args(a: Analysis, tg: TaggedArgs) -> dict[str, Any]:
    if "\x04" in tg.value_end or "\x04" in tg.prefix:
        raise _refuse(a, "nested-tagged")
    if tg.separator.strip():
        raise _refuse(a, "tagged-separator", repr(tg.separator))
    key_end = tg.key_suffix.strip()
    key = r"(?P<key>[^\s<>=\"]+?)" if key_end else r"(?P<key>[\w.\-]+)"
    pattern = _rx(tg.prefix) + key + (_rx(key_end) if key_end else "") + r"\s*(?P<value>.*?)\s*" + _rx(tg.value_end)
    args: dict[str, Any] = {"tag_pattern": pattern}
    if tg.strings_json:
        args["value_parser"] = {"name": "json", "args": {"allow_non_json": True}}
    return {"content": "xml-inline", "content_args": args}


def _literal_args(a: Analysis, lit: LiteralArgs) -> dict[str, Any]:
    if lit.bare_strings:
        raise _refuse(a, "bare-strings")
    if lit.open == "{" and lit.close == "}" and lit.kv_sep == ":":
        delims = [[q, q] for q in lit.quotes if q not in ('"', "'")]
        args: dict[str, Any] = {"unquoted_keys": True}
        if delims:
            args["string_delims"] = delims
        return {"content": "json", "content_args": args}
    raise _refuse(a, "literal-style", f"{lit.open}k{lit.kv_sep}v{lit.close}")


def _python_calls(a: Analysis) -> dict[str, Any]:
    """``[f(k='v'), g(k=1)]`` inside a section: transformers' ``python-call-list``."""
    t = a.tools
    brackets = _section_brackets(t)
    lit = t.literal
    if brackets is None or lit is None or t.name_prefix.strip() or t.name_suffix.strip():
        raise _refuse(a, "literal-style", "Python calls outside a bracketed section")
    if lit.bare_strings:
        raise _refuse(a, "bare-strings")
    opener, closer = brackets
    if not opener.strip():
        raise _refuse(a, "no-call-opener")
    field: dict[str, Any] = {"open_pattern": r"\s*" + _rx(opener)}
    if closer.strip():
        field["close_pattern"] = _rx(closer) + TRAILING_WS
    field.update(content="python-call-list", transform=_transform("{name}", "{arguments}"), transform_each=True)
    return field


def _framed_calls(a: Analysis, end_lookahead: str) -> dict[str, Any]:
    """Calls whose name sits between markers, followed by JSON, literal or tagged arguments."""
    t = a.tools
    if t.name_in_id:
        raise _refuse(a, "name-in-id")
    if t.args == "literal" and t.literal is not None and t.literal.open == "(":
        return _python_calls(a)
    if not (t.section_start.strip() or t.call_start.strip() or t.name_prefix.strip()):
        raise _refuse(a, "no-call-opener", f"separator {t.separator.strip()!r}" if t.separator.strip() else "")
    if t.call_start.strip() and not t.section_start.strip() and a.generation_prompt.endswith(t.call_start.strip()):
        # Functionary v3.2: the prompt writes the first call's opener (``>>>``), so the output starts with a name
        raise _refuse(a, "no-call-opener", f"the generation prompt writes the first {t.call_start.strip()!r}")
    if t.call_start.strip() or t.name_prefix.strip():
        lead = [_opt(_rx(t.separator)), _opt(_rx(t.section_start)) if t.section_start.strip() else ""]
    else:   # the section opener is all that starts a call (gpt-oss ` to=functions.NAME`): required
        lead = [_opt(_rx(t.separator)), _rx(t.section_start)]
    if t.id_position == "before_name":
        parts = [_rx(t.call_start), _seq(_rx(t.id_prefix), ID) if t.id_prefix.strip() else ID,
                 _rx(t.id_suffix), _rx(t.name_prefix), NAME, _rx(t.name_suffix)]
    elif t.id_position == "after_name":
        idp = _rx(t.id_prefix)
        parts = [_rx(t.call_start), _rx(t.name_prefix), NAME, _rx(t.name_suffix),
                 f"(?:{idp}{ID})?" if idp else ID, _rx(t.id_suffix)]
    elif t.id_position == "after_args":
        raise _refuse(a, "id-after-args")
    else:
        parts = [_rx(t.call_start), _rx(t.name_prefix), NAME, _rx(t.name_suffix)]
    field: dict[str, Any] = {"open_pattern": r"\s*" + _seq(*lead, *parts)}
    close = " ".join(x for x in (t.call_close.strip(), t.call_end.strip()) if x)
    if close:
        field["close_pattern"] = _rx(close) + TRAILING_WS
    else:
        _set(field, "close_pattern", _lookahead(_rx(t.call_start) or _rx(t.name_prefix), end_lookahead))
    if t.args == "tagged" and t.tagged is not None:
        field.update(_tagged_args(a, t.tagged))
    elif t.args == "literal" and t.literal is not None:
        field.update(_literal_args(a, t.literal))
    else:
        field["content"] = "json"
    field.update(repeats=True, transform=_transform("{name}", "{content}"))
    return field


def _tool_calls(a: Analysis, end_lookahead: str) -> dict[str, Any] | None:
    t = a.tools
    if t.style == "none":
        return None
    if any(e in m for m in (t.name_prefix, t.name_suffix, t.call_start, t.section_start)
           for e in ("&#34;", "&quot;")):
        raise _refuse(a, "html-escaped")
    if t.python_literals or t.args == "python":
        raise _refuse(a, "python-args")
    if t.args in LINE_ARGS:
        raise _refuse(a, "yaml-args")
    if t.args == "json_attr":
        raise _refuse(a, "html-escaped")
    if t.style == "json" and t.json is not None:
        return _json_calls(a, end_lookahead)
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
    alternatives = _alternatives(ends)
    if not alternatives:
        return {"content": "text"}
    return {"close_pattern": r"\s*(?:" + "|".join(alternatives) + ")" + TRAILING_WS, "content": "text"}


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
    if "<![CDATA[" in sample:
        raise _refuse(a, "cdata-values")
    if t.args == "literal" and t.literal is not None and t.literal.open == "(":
        import ast

        start = sample.find("[")
        end = sample.rfind("]")
        try:
            ast.parse(sample[start:end + 1] if 0 <= start < end else sample, mode="eval")
        except (SyntaxError, ValueError):
            raise _refuse(a, "unescaped-strings") from None
        return
    # raw tagged values are typed by the tool's schema, which reads True / None; containers it does not
    if _PY_CONTAINER.search(sample) or (t.args != "tagged" and _PY_WORD.search(sample)):
        raise _refuse(a, "python-values")


def response_template(analysis: Analysis, *, eos_token: str = "", argument_sample: str = "") -> dict[str, Any]:
    """The transformers ``response_template`` for ``analysis``; raises ``ExportError``.

    ``argument_sample`` is the template's rendering of a call with every argument type (see
    :func:`_check_values`); ``ChatTemplate.response_template`` passes it.
    """
    a = analysis
    if a.envelope is not None:
        raise _refuse(a, "json-envelope")
    anchor = _anchor(a)
    fields: dict[str, Any] = {}
    thinking = _thinking(a)
    if thinking is not None:
        fields["thinking"] = thinking
    ends = [e.strip() for e in (*a.end_of_turn, eos_token) if e and e.strip()]
    end_lookahead = _alt([_rx(e) for e in ends])
    tools = _tool_calls(a, end_lookahead)
    if tools is not None:
        if argument_sample:
            _check_values(a, argument_sample)
        fields["tool_calls"] = tools
        if thinking is not None and a.reasoning.prefilled and (a.tools.call_start.strip() or a.tools.section_start.strip()):
            # a call opener ends a reasoning block left open, as Request.parse reads it (real output)
            opener = tools.get("open_pattern") or regex.escape(str(tools.get("open", "")))
            opener = opener.replace("(?P<name>", "(?:")   # a capture belongs to the call field only
            close = thinking.pop("close", None)
            closes = [regex.escape(c) for c in ([close] if isinstance(close, str) else close or [])]
            closes += [thinking.pop("close_pattern")] if "close_pattern" in thinking else []
            thinking["close_pattern"] = "|".join([*closes, f"(?={opener})"])
    fields["content"] = _content(a, eos_token, tools)
    out: dict[str, Any] = {"version": 1, "defaults": {"role": "assistant"}}
    if anchor:
        out["start_anchor"] = anchor
    else:
        out["start_anchor_pattern"] = r"\Z"   # nothing of the prompt belongs to the turn
    out["fields"] = fields
    return out
