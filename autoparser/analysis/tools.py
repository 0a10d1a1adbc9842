"""Tool-call analysis: section and per-call markers, name, id and argument encoding.

T1 renders one call, T2 two calls; with names and ids replaced by sentinels the
two calls are identical, so the text between them is ``call_end + separator +
call_start`` and the common affixes with the one-call turn give each marker.
The call core is a JSON object when the name sits inside one, otherwise the
name is framed by markers and followed by JSON, Python, YAML-like or tagged
arguments. Tagged arguments are read from renders with one and two arguments.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import markers as mk
from ..diff.split import common_prefix_len, fix_prefix_end, shared_prefix, shared_suffix
from ..errors import TemplateLimitError
from ..markers import definition as dm
from ..probes import needles as N
from ..probes.prober import Prober
from ..values.jsonscan import JsonScanner
from ..values.literal import LiteralEnd, literal_value
from ..values.pyliteral import python_to_json
from .model import JsonLayout, LiteralArgs, TaggedArgs, ToolFormat

NM, IM = N.NAME_MARK, N.ID_MARK


def _norm(text: str) -> str:
    for a, b in ((N.FN1, NM), (N.FN2, NM), (N.ID1, IM), (N.ID2, IM)):
        text = text.replace(a, b)
    return text


@dataclass
class CallTurns:
    one: str            # one call, normalised
    two: str | None     # two calls, normalised
    empty: str | None   # no call, empty content, normalised
    two_args: str | None  # one call with two arguments, normalised
    content_none: bool
    args_string: bool
    typed_args: str | None = None   # second argument an integer: markers that depend on the type


def render_calls(pr: Prober) -> CallTurns | None:
    """Render the probe turns, trying content "" / None and dict / string arguments."""
    for as_string in (False, True):
        for content in ("", None):
            def turn(calls: list[dict[str, Any]], content: Any = content) -> str | None:
                return pr.turn({"role": "assistant", "content": content, "tool_calls": calls}, tools=N.TOOLS)
            one = turn([N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1}, as_string)])
            if one is None or (N.FN1 not in one and N.ID1 not in one):
                continue
            two = turn([N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1}, as_string),
                        N.call(N.ID2, N.FN2, {N.ARG1: N.VAL1}, as_string)])
            if two is not None and N.FN2 not in two and N.ID2 not in two:
                two = None
            two_args = turn([N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1, N.ARG2: N.VAL2}, as_string)])
            typed = turn([N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1, N.ARG2: 12345}, as_string)])
            empty = pr.turn({"role": "assistant", "content": ""}, tools=N.TOOLS)
            return CallTurns(_norm(one), _norm(two) if two else None, _norm(empty) if empty else None,
                             _norm(two_args) if two_args else None, content is None, as_string,
                             _norm(typed) if typed else None)
    return None


def render_call_turn(pr: Prober, content: str) -> str | None:
    """A turn with some answer text and one call (for wrappers that only appear next to calls)."""
    for as_string in (False, True):
        out = pr.turn({"role": "assistant", "content": content,
                       "tool_calls": [N.call(N.ID1, N.FN1, {N.ARG1: N.VAL1}, as_string)]}, tools=N.TOOLS)
        if out is not None:
            return out
    return None


def last_marker_in(text: str, start: int = 0, end: int | None = None) -> Any:
    """The last marker in ``text[start:end]``, or None."""
    found = None
    for found in dm.finditer(text, start, len(text) if end is None else end):  # noqa: B007
        pass
    return found


# ------------------------------------------------------------------ JSON helpers
def scan_json(text: str, start: int) -> tuple[int, Any, bool] | None:
    """Decode the JSON (or Python-literal) value at ``start``: (end, value, python)."""
    for python in (False, True):
        sc = JsonScanner(python=python, track_depth=0)
        end = sc.feed(text[start:])
        if end is None:
            end = sc.finish()
        if end is None or sc.failed:
            continue
        raw = text[start:start + end]
        try:
            value = json.loads(python_to_json(raw) if python else raw, strict=False)
        except ValueError:
            continue
        return start + end, value, python
    return None


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    out = [(path, value)]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*path, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*path, i))
    return out


def _count_names(value: Any) -> int:
    n = 0
    for path, v in _paths(value):
        if v == NM or (path and path[-1] == NM):
            n += 1
    return n


def find_call_object(text: str, name_at: int) -> tuple[int, int, Any, bool] | None:
    """The JSON object holding the name at ``name_at``, grown outward while it holds one call."""
    best = None
    i = name_at
    while True:
        i = text.rfind("{", 0, i)
        if i < 0:
            break
        got = scan_json(text, i)
        if got is not None and got[0] > name_at and isinstance(got[1], dict):
            if _count_names(got[1]) != 1:
                break
            if any(v == NM for _, v in _paths(got[1])) or any(p and p[-1] == NM for p, _ in _paths(got[1])):
                best = (i, got[0], got[1], got[2])
    return best


def json_layout(obj: dict[str, Any], args_string: bool) -> JsonLayout | None:
    name_path = args_path = id_path = None
    name_is_key = False
    for path, v in _paths(obj):
        if v == NM and name_path is None:
            name_path = path
        if path and path[-1] == NM:
            name_is_key, name_path, args_path = True, path, path
        if v == IM and id_path is None:
            id_path = path
        if isinstance(v, dict) and N.ARG1 in v and args_path is None:
            args_path = path
        if isinstance(v, str) and N.ARG1 in v and v != NM and args_path is None and _json_object_with(v, N.ARG1):
            args_path, args_string = path, True   # a JSON string holding the JSON arguments
    if name_path is None or args_path is None or (args_path == () and not name_is_key):
        return None   # no arguments member (arguments flattened beside the name: a layout reads them)
    if id_path is None and not name_is_key:
        # an id the template writes itself ("tool_call_id": "0"): any other key naming an id
        for k in obj:
            if isinstance(k, str) and "id" in k.lower() and (k,) not in (name_path, args_path):
                id_path = (k,)
                break
    keys = list(obj.keys())
    id_after = id_path is not None and bool(id_path) and not name_is_key and id_path[0] in keys \
        and args_path is not None and args_path[0] in keys and keys.index(id_path[0]) > keys.index(args_path[0])
    read = {p[0] for p in (name_path, args_path, id_path) if p}
    constants = tuple(k for k in keys if isinstance(k, str) and k not in read and not name_is_key)
    return JsonLayout(name_path=tuple(name_path), args_path=tuple(args_path), id_path=tuple(id_path or ()),
                      name_is_key=name_is_key, args_as_string=args_string, id_after_args=id_after,
                      constants=constants, constant_values=tuple(_constant_text(obj[k]) for k in constants))


def _constant_text(value: Any) -> str:
    """A constant member's value as JSON text, or "" when a probe needle is in it (it varies)."""
    text = json.dumps(value, ensure_ascii=False)
    return "" if any(n in text for n in (NM, IM, N.ARG1)) else text


# ------------------------------------------------------------------ unit split
def split_units(one: str, two: str | None, s1: int, e1: int, s2: tuple[int, int] | None,
                base: int) -> tuple[str, str, str, str, str]:
    """(section_start, call_start, separator, call_end, rest_after) from one- and two-call turns.

    ``[s1, e1)`` is the call core in ``one``; ``s2`` the (end of first core, start of
    second core) in ``two``; ``base`` is where the turn's own text begins in ``one``.
    """
    left, right = one[base:s1], one[e1:]
    if two is None or s2 is None:
        m = last_marker_in(left)
        call_start = left[m.start():] if m is not None and not left[m.end():].strip() else ""
        section_start = left[: len(left) - len(call_start)]
        return section_start, call_start, "", "", right
    middle = two[s2[0]:s2[1]]
    cs = shared_suffix(left, middle, digits_alike=True)
    ce = shared_prefix(right, middle, digits_alike=True)
    if cs + ce > len(middle):
        cs = max(0, len(middle) - ce)
    call_start = left[len(left) - cs:] if cs else ""
    call_end = right[:ce]
    separator = middle[ce: len(middle) - cs]
    section_start = left[: len(left) - cs]
    return section_start, call_start, separator, call_end, right[ce:]


def _split_before_name(prefix: str) -> tuple[str, str]:
    """Split a call prefix into (call_start, name_prefix) at the last complete marker."""
    m = last_marker_in(prefix)
    if m is None:
        return "", prefix
    return prefix[: m.end()], prefix[m.end():]


def _strip_tail(text: str, tail: str) -> str:
    t = tail.strip()
    s = text.rstrip()
    if t and s.endswith(t):
        return s[: len(s) - len(t)]
    return text


# ------------------------------------------------------------------ analysis
def _after_reasoning(text: str, reasoning_end: str) -> str:
    """Drop an (empty) reasoning block the template writes before the calls."""
    end = reasoning_end.strip()
    if end and end in text:
        return text[text.rindex(end) + len(end):]
    return text


def _tidy(fmt: ToolFormat, reasoning_end: str) -> ToolFormat:
    from dataclasses import replace

    section_start = _after_reasoning(fmt.section_start, reasoning_end)
    changes: dict[str, Any] = {"section_start": section_start if section_start.strip() else ""}
    for field in ("call_start", "call_end", "separator", "section_end"):
        value = getattr(fmt, field)
        if not value.strip() and field != "separator":
            changes[field] = ""
    if fmt.separator and not fmt.separator.strip():
        changes["separator"] = ""
    return replace(fmt, **changes)


def _cut_turn_markers(section_end: str, generation_prompt: str, eot: tuple[str, ...]) -> str:
    """A section end stops before the next turn's header and the end-of-turn markers."""
    heads = {m.group() for m in dm.finditer(generation_prompt)}
    for m in dm.finditer(section_end):
        if m.group() in heads:
            section_end = section_end[: m.start()]
            break
    changed = True
    while changed:
        changed = False
        for e in eot:
            if e and section_end.rstrip().endswith(e) and section_end.strip() != e:
                section_end = section_end.rstrip()[: -len(e)]
                changed = True
    return section_end if section_end.strip() else ""


def _repeated_name_as_wildcard(fmt: ToolFormat) -> ToolFormat:
    """A name written a second time inside a marker (``<atem:invoke name="NAME">``) matches any text there."""
    from dataclasses import replace

    changes: dict[str, Any] = {}
    for field in ("name_suffix", "call_close", "id_prefix", "id_suffix"):
        value = getattr(fmt, field)
        if NM in value:
            changes[field] = value.replace(NM, "\x03")
    if fmt.tagged is not None and any(NM in getattr(fmt.tagged, f) for f in ("prefix", "key_suffix", "value_end")):
        changes["tagged"] = replace(fmt.tagged, **{f: getattr(fmt.tagged, f).replace(NM, "\x03")
                                                   for f in ("prefix", "key_suffix", "value_end")})
    return replace(fmt, **changes) if changes else fmt


def analyze_tools(pr: Prober, eot_text: str, reasoning_end: str = "",
                  eot: tuple[str, ...] = ()) -> tuple[ToolFormat, list[str]]:
    from dataclasses import replace

    fmt, notes = _analyze_tools(pr, eot_text)
    fmt = _repeated_name_as_wildcard(fmt)
    fmt = _tidy(fmt, reasoning_end)
    fmt = replace(fmt, section_end=_cut_turn_markers(fmt.section_end, pr.generation_prompt(), eot))
    if fmt.style == "tagged" and fmt.id_position == "none" and _wordy(fmt.name_prefix, fmt.name_suffix):
        from dataclasses import replace

        notes.append("the id is the text around the name")
        fmt = replace(fmt, id_from_header=True)
    return fmt, notes


def call_start_in_prompt(fmt: ToolFormat, generation_prompt: str) -> ToolFormat:
    """Calls with no start marker but a separator that the generation prompt ends with (``>>>``): the separator is each call's start, which the prompt writes for the first one."""
    from dataclasses import replace

    sep = fmt.separator.strip()
    if fmt.call_start.strip() or fmt.section_start.strip() or not sep or not generation_prompt.endswith(sep):
        return fmt
    return replace(fmt, call_start=sep, separator="")


def _raw_strings(fmt: ToolFormat) -> bool:
    """A layout whose string values are raw text with nothing around them."""
    args = fmt.layout.args if fmt.layout is not None else None
    items = args.items if args is not None else None
    if items is None or items.values is None:
        return False
    s = items.values.string
    return s.codec == "raw" and not (s.pre or s.post).strip()


def _wordy(prefix: str, suffix: str) -> bool:
    """Text glued to the name that is not a marker: ``functions.`` before, ``:0`` after."""
    import regex

    return bool(regex.search(r"\w\.\Z", prefix)) and bool(regex.match(r":\d", suffix))


def _analyze_tools(pr: Prober, eot_text: str) -> tuple[ToolFormat, list[str]]:
    turns = render_calls(pr)
    if turns is None:
        return ToolFormat(), []
    fmt, notes = _read_turns(turns, eot_text)
    if fmt.style != "json":
        laid = layout_format(pr, turns, eot_text)
        # a layout that leaves some spellings unverified yields to a style format whose reader
        # handles them: the YAML style (nested YAML blocks, ``key:`` then indented items) or any
        # style when arrays are written as JSON or Python lists (its readers scan those)
        # And Python-call arguments whose strings the template writes raw (``"%s" | format(v)``) yield to
        # the literal reader: models quote those strings, and it reads them raw or quoted alike and
        # flags a raw value that holds a separator or the call's closer
        if laid is not None and not (laid[1] and (fmt.args == "yaml" or (fmt.style != "none" and laid[2]))) \
                and not (fmt.args == "literal" and _raw_strings(laid[0])):
            return laid[0], [n for n in notes if "not rendered" not in n]
    if _leaks(fmt) or "tool arguments are not rendered" in notes:
        # the name is written twice per call: in a header (`` to=NAME<|message|>``) and in the call
        # proper (read the call at its last writing), or in the call's opening and closing tags
        # (``<NAME>{...}</NAME>``: read it at its first); the other writing matches any name
        for keep, note in ((-1, "the name is also written in a header before the call"),
                           (0, "the name is written again after the arguments")):
            named = _name_in_header(turns, keep)
            if named is None:
                break
            retry, retry_notes = _read_turns(named, eot_text)
            if not _leaks(retry) and "tool arguments are not rendered" not in retry_notes:
                return retry, [*retry_notes, note]
    return fmt, notes


def _leaks(fmt: ToolFormat) -> bool:
    """A name sentinel left in a marker: the analysis did not find where the name goes."""
    return any(NM in v for v in (fmt.section_start, fmt.section_end, fmt.call_start, fmt.call_end,
                                 fmt.separator, fmt.name_prefix, fmt.name_suffix, fmt.call_close))


def _name_in_header(turns: CallTurns, keep: int = -1) -> CallTurns | None:
    """``turns`` with every writing of a call's name but one (``keep``: -1 the last, 0 the first)
    made a name wildcard, or None when the name is written once per call."""
    from dataclasses import replace

    k = turns.one.count(NM)
    if k < 2:
        return None
    kept = k if keep == -1 else keep + 1

    def keep_one(text: str | None) -> str | None:
        if text is None:
            return None
        parts = text.split(NM)
        if (len(parts) - 1) % k:
            return None
        out = [parts[0]]
        for i, part in enumerate(parts[1:], start=1):
            out.append((NM if (i - 1) % k + 1 == kept else mk.NAME_WILDCARD) + part)
        return "".join(out)

    return replace(turns, one=keep_one(turns.one) or turns.one, two=keep_one(turns.two),
                   two_args=keep_one(turns.two_args), typed_args=keep_one(turns.typed_args))


def turn_base(turns: CallTurns) -> int:
    """Where the call turn's own text begins: after what it shares with the turn without a call."""
    one = turns.one
    base = 0
    if turns.empty is not None:
        base = fix_prefix_end(one, common_prefix_len(turns.empty, one))
        if _empty_section(one, turns.empty, base):
            # the turn with no call still writes an empty section (when content is empty:
            # "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>"): the text it shares with the call turn opens it
            base = 0
        # "<|channel|>final" vs "<|channel|>commentary": a marker glued to differing words belongs to both
        m = last_marker_in(one, 0, base)
        if m is not None and m.end() == base and base < len(one) and base < len(turns.empty) \
                and one[base].isalnum() and turns.empty[base].isalnum():
            base = m.start()
        elif base < len(one) and base < len(turns.empty) and one[base] in (NM, mk.NAME_WILDCARD) \
                and turns.empty[base].isalnum():
            # " to=NAME" vs " to=user": the words glued to the name open the call too
            start = m.end() if m is not None else 0
            j = base
            while j > start and not one[j - 1].isspace():
                j -= 1
            base = j
    return base


def _read_turns(turns: CallTurns, eot_text: str) -> tuple[ToolFormat, list[str]]:
    notes: list[str] = []
    one = turns.one
    base = turn_base(turns)
    if NM not in one:
        notes.append("the call name is not rendered")
        return _name_in_id(turns, base, eot_text, notes)
    name_at = one.find(NM, base)
    if name_at < 0:
        name_at = one.index(NM)
        base = min(base, name_at)
    obj = find_call_object(one, name_at)
    if obj is not None:
        fmt = _json_style(turns, obj, base, eot_text, notes)
        if fmt is not None:
            return fmt, notes
    return _tagged_style(turns, name_at, base, eot_text, notes), notes


def _empty_section(one: str, empty: str, base: int) -> bool:
    """The call turn and the turn with no call share an opening marker that the latter closes at once."""
    from .reasoning import closing_candidates

    opener = last_marker_in(one, 0, base)
    closer = dm.match(empty, base)
    return opener is not None and opener.end() == base and closer is not None and \
        closer.group() in closing_candidates(opener.group()) and one.endswith(empty[base:])


def _second_core(two: str | None, finder: Callable[[str, int, int], tuple[int, int] | None]
                 ) -> tuple[int, int] | None:
    if two is None or two.count(NM) < 2:
        return None
    first = two.index(NM)
    second = two.index(NM, first + 1)
    return finder(two, first, second)


def _json_style(turns: CallTurns, obj: tuple[int, int, Any, bool], base: int, eot_text: str,
                notes: list[str]) -> ToolFormat | None:
    s1, e1, value, python = obj
    layout = json_layout(value, turns.args_string)
    if layout is None:
        return None
    if IM in turns.one[base:] and IM not in turns.one[s1:e1]:
        return None   # the id is written outside the call object: a layout reads the call

    def finder(two: str, first: int, second: int) -> tuple[int, int] | None:
        a = find_call_object(two, first)
        b = find_call_object(two, second)
        return (a[1], b[0]) if a and b else None

    s2 = _second_core(turns.two, finder)
    section_start, call_start, sep, call_end, rest = split_units(turns.one, turns.two, s1, e1, s2, base)
    section_end = _strip_tail(rest, eot_text)
    section_end = section_end if section_end.strip() else ""
    if not section_start.strip():
        section_start = ""
    return ToolFormat(style="json", section_start=section_start, section_end=section_end, call_start=call_start,
                      call_end=call_end, separator=sep, json=layout, python_literals=python,
                      id_position="json" if layout.id_path else "none",
                      name_prefix=_json_open(turns.one[s1:e1], layout))


def _json_open(core: str, layout: JsonLayout) -> str:
    """The object text before the name value (``{"name": "``), used to spot marker-less calls."""
    if layout.name_is_key:
        return core[: core.find(NM)]
    sc = JsonScanner(track_depth=1)
    sc.feed(core)
    first = min((span[0] for path, span in sc.spans.items() if len(path) == 1), default=0)
    return core[:first]


def _tagged_style(turns: CallTurns, name_at: int, base: int, eot_text: str, notes: list[str]) -> ToolFormat:
    one, two = turns.one, turns.two

    def finder(two: str, first: int, second: int) -> tuple[int, int]:
        return first + 1, second

    s2 = _second_core(two, finder)
    section_start, prefix, sep, body_end, rest = split_units(one, two, name_at, name_at + 1, s2, base)
    body = body_end  # name suffix .. call end (shared by both calls)
    if not s2:
        body = _strip_tail(rest, eot_text)
        rest = ""
    call_start, name_prefix = _split_before_name(prefix)
    id_position, id_suffix = "none", ""
    if IM in call_start:
        j = call_start.index(IM)
        call_start, id_suffix = call_start[:j], call_start[j + 1:]
        id_position = "before_name"
    section_end = _strip_tail(rest, eot_text)
    section_end = section_end if section_end.strip() else ""
    fmt: dict[str, Any] = dict(style="tagged", section_start=section_start if section_start.strip() else "",
                               section_end=section_end, call_start=call_start, separator=sep,
                               name_prefix=name_prefix, id_position=id_position, id_suffix=id_suffix)
    # arguments: JSON / Python object, or tagged pairs
    a = body.find("{")
    arg_at = body.find(N.ARG1)
    got = None
    while 0 <= a < arg_at:
        got = scan_json(body, a)
        if got is not None and isinstance(got[1], dict) and N.ARG1 in got[1]:
            break
        got = None
        a = body.find("{", a + 1)
    if got is not None:
        before_args, after_args = body[:a], body[got[0]:]
        fmt.update(args="python" if got[2] else "json", python_literals=got[2], call_close=after_args)
        fmt.update(_split_id(before_args, fmt))
        if IM in after_args:   # the id follows the arguments: what follows the id closes the call
            j = after_args.index(IM)
            fmt.update(id_position="after_args", id_prefix=after_args[:j], id_suffix=after_args[j + 1:],
                       call_close="")
        return ToolFormat(**fmt)
    quote = body.find('"')
    while 0 <= quote < arg_at:
        # the arguments as a JSON string holding their JSON (the OpenAI wire format, double-encoded)
        got = scan_json(body, quote)
        if got is not None and isinstance(got[1], str) and _json_object_with(got[1], N.ARG1):
            fmt.update(args="json", args_as_string=True, call_close=body[got[0]:])
            fmt.update(_split_id(body[:quote], fmt))
            return ToolFormat(**fmt)
        quote = body.find('"', quote + 1)
    escaped = _entity_json(body, arg_at)
    if escaped is not None:
        # a JSON object written with character references (``args="{&quot;k&quot;: 1}"``)
        e0, e1 = escaped
        fmt.update(args="json_attr", call_close=body[e1:])
        fmt.update(_split_id(body[:e0], fmt))
        return ToolFormat(**fmt)
    literal = _literal_args(body)
    if literal is not None:
        syntax, a0, a1 = literal
        fmt.update(args="literal", literal=syntax, call_close=body[a1:])
        fmt.update(_split_id(body[:a0], fmt))
        return ToolFormat(**fmt)
    if arg_at < 0:
        notes.append("tool arguments are not rendered")
        fmt.update(name_suffix=body, args="json")
        return ToolFormat(**fmt)
    lines = _line_args(body, turns.two_args)
    if lines is not None:
        # ``key: value`` lines (a YAML block mapping) or ``key=value`` pairs: no marker ends a value,
        # the next key does
        style, line_args, first, last = lines
        fmt.update(args=style, tagged=line_args, call_close=body[last:])
        fmt.update(_split_id(body[:first], fmt))
        return ToolFormat(**fmt)
    tagged, name_suffix, close = _tagged_args(body, turns.two_args, turns.typed_args)
    fmt.update(args="tagged", tagged=tagged, call_close=close)
    fmt.update(_split_id(name_suffix, fmt))
    return ToolFormat(**fmt)


def _entity_json(body: str, arg_at: int) -> tuple[int, int] | None:
    """Where a JSON object holding the first argument is written with XML character references
    (``{&quot;k&quot;: &quot;v&quot;}``, ``{&#34;k&#34;: ...}``), or None."""
    from ..values.entities import unescape

    if arg_at < 0:
        return None
    a = body.rfind("{", 0, arg_at)
    while a >= 0:
        e = body.find("}", arg_at)
        while e >= 0:
            raw = body[a:e + 1]
            if "&" in raw and _json_object_with(unescape(raw), N.ARG1):
                return a, e + 1
            e = body.find("}", e + 1)
        a = body.rfind("{", 0, a)
    return None


def _json_object_with(text: str, key: str) -> bool:
    """``text`` is a JSON object with member ``key``."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    return isinstance(value, dict) and key in value


def _literal_args(body: str) -> tuple[LiteralArgs, int, int] | None:
    """Arguments written as ``{k:Q v Q}`` or ``(k=Q v Q)`` with some string quote Q."""
    import regex

    k = body.find(N.ARG1)
    v = body.find(N.VAL1, k)
    if k < 0 or v < 0:
        return None
    opener_at = max(body.rfind("{", 0, k), body.rfind("(", 0, k))
    if opener_at < 0 or body[opener_at + 1:k].strip() not in ("", '"', "'"):
        return None
    m = regex.match(r"\s*([:=])\s*(.*)\Z", body[k + len(N.ARG1):v], regex.DOTALL)
    if m is None:
        return None
    sep, quote = m.group(1), m.group(2)   # no quote: strings printed bare (``location=Paris``)
    if quote and not body.startswith(quote, v + len(N.VAL1)):
        return None
    opener = body[opener_at]
    closer = "}" if opener == "{" else ")"
    quotes = tuple(dict.fromkeys([q for q in (quote, '"', "'") if q]))
    end = LiteralEnd(quotes).feed(body, opener_at)
    if end is None:
        return None
    try:
        value = literal_value(body[opener_at:opener_at + end], quotes, sep)
    except (ValueError, IndexError):
        return None
    if value != {N.ARG1: N.VAL1}:
        return None
    return (LiteralArgs(open=opener, close=closer, kv_sep=sep, quotes=quotes, bare_strings=not quote),
            opener_at, opener_at + end)


def _line_args(body: str, two_args: str | None) -> tuple[str, TaggedArgs, int, int] | None:
    """Arguments written as ``key: value`` lines (YAML) or ``key=value`` pairs (Python keyword
    arguments without brackets): each key starts a line at the same indentation, or the pairs
    follow each other on one line with a separator (``; ``, ``, ``); ``:`` or ``=`` follows the
    key, and nothing but the line break and indentation, or the separator, comes between a value
    and the next key (the renders with one and two arguments show it). Returns the args style,
    the format, where the arguments begin and where the last value ends; None for any other layout."""
    import regex

    k = body.find(N.ARG1)
    v = body.find(N.VAL1, k)
    if k < 0 or v < 0 or two_args is None or N.ARG2 not in two_args or N.VAL2 not in two_args:
        return None
    m = regex.fullmatch(r"([ \t]*([:=])([ \t]*))([\"']?)", body[k + len(N.ARG1):v])
    if m is None:
        return None
    kv, quote = m.group(2), m.group(4)
    end = v + len(N.VAL1)
    if (quote and not body.startswith(quote, end)) or (kv == ":" and quote == "'"):
        return None
    t = two_args
    v1 = t.find(N.VAL1)
    k2 = t.find(N.ARG2, v1)
    if v1 < 0 or k2 < 0:
        return None
    between = t[v1 + len(N.VAL1) + len(quote):k2]
    key_suffix = m.group(1) + (" " if kv == ":" and not m.group(3) else "")
    brk = body.rfind("\n", 0, k)
    if brk >= 0 and not body[brk + 1:k].strip(" \t") and between == body[brk:k]:
        ta = TaggedArgs(prefix=body[brk:k], key_suffix=key_suffix, strings_json=bool(quote))
        return ("yaml" if kv == ":" else "kwargs"), ta, brk, end + len(quote)
    if kv == "=" and between and "\n" not in between and between.strip() in ("", ";", ","):
        # pairs on one line: the first key follows the name's markers
        ta = TaggedArgs(prefix="", key_suffix=key_suffix, separator=between, strings_json=bool(quote))
        return "kwargs", ta, k, end + len(quote)
    return None


def _split_id(before_args: str, fmt: dict[str, Any]) -> dict[str, Any]:
    """Text between name and arguments: a name suffix, or an id framed by markers."""
    if IM not in before_args:
        return {"name_suffix": before_args}
    j = before_args.index(IM)
    return {"name_suffix": "", "id_position": "after_name", "id_prefix": before_args[:j],
            "id_suffix": before_args[j + 1:]}


def _typed_key_suffix(key_suffix: str, typed: str | None) -> str:
    """Where the text between key and value depends on the value's type (DSML ``string="true"``)."""
    if not typed or N.ARG2 not in typed or "12345" not in typed:
        return key_suffix
    k = typed.index(N.ARG2) + len(N.ARG2)
    other = typed[k: typed.index("12345", k)]
    if other == key_suffix or not other:
        return key_suffix
    a = common_prefix_len(key_suffix, other)
    b = 0
    while b < min(len(key_suffix), len(other)) - a and key_suffix[-1 - b] == other[-1 - b]:
        b += 1
    return key_suffix[:a] + "\x03" + key_suffix[len(key_suffix) - b:]


def _tagged_args(body: str, two_args: str | None, typed: str | None = None) -> tuple[TaggedArgs, str, str]:
    """(tagged argument markers, name suffix, call close) from the call body.

    A key written again after its value (``<KEY>value</KEY>``) becomes a name wildcard.
    """
    body = _key_again(body, N.ARG1, N.VAL1)
    if two_args is not None:
        two_args = _key_again(_key_again(two_args, N.ARG1, N.VAL1), N.ARG2, N.VAL2)
    k1 = body.index(N.ARG1)
    v1 = body.find(N.VAL1, k1)
    pre1 = body[:k1]
    key_suffix = body[k1 + len(N.ARG1): v1]
    after1 = body[v1 + len(N.VAL1):]
    value_end, rest_x = "", ""
    if two_args and N.ARG2 in two_args and N.VAL2 in two_args:
        t = two_args
        x = t[t.index(N.VAL1) + len(N.VAL1): t.index(N.ARG2)]
        y = t[t.index(N.VAL2) + len(N.VAL2):]
        n = shared_prefix(x, y)
        if n == len(x) and (cs := shared_suffix(pre1, x)) and cs < len(x):
            n = len(x) - cs     # the next argument's prefix is also how the call closes: it is the prefix's
        value_end, rest_x = x[:n], x[n:]
    else:
        m = dm.search(after1)
        value_end = after1[: m.end()] if m else ""
    if not value_end.strip():
        m = dm.search(after1)
        value_end = after1[: m.end()] if m else after1
    close = after1[len(value_end):] if after1.startswith(value_end) else after1
    if rest_x:
        cs = shared_suffix(pre1, rest_x)
        prefix = pre1[len(pre1) - cs:] if cs else ""
        sep = rest_x[: len(rest_x) - cs]
    else:
        m = last_marker_in(pre1)
        prefix = pre1[m.start():] if m else ""
        sep = ""
    name_suffix = pre1[: len(pre1) - len(prefix)]
    strings_json = key_suffix.endswith('"') and value_end.startswith('"')
    if strings_json:
        key_suffix, value_end = key_suffix[:-1], value_end[1:]
    key_suffix = _typed_key_suffix(key_suffix, typed)
    tagged = TaggedArgs(prefix=prefix, key_suffix=key_suffix, value_end=value_end,
                        separator=sep if sep.strip() else "", strings_json=strings_json)
    return tagged, name_suffix, close


def _key_again(text: str, key: str, value: str) -> str:
    """``text`` with the key's first writing after its value (a closing ``</KEY>``) made a wildcard."""
    v = text.find(value, text.find(key))
    if v < 0:
        return text
    again = text.find(key, v + len(value))
    nxt = min((i for i in (text.find(N.ARG1, v), text.find(N.ARG2, v)) if i >= 0 and i != again), default=-1)
    if again < 0 or (0 <= nxt < again):
        return text
    return text[:again] + mk.NAME_WILDCARD + text[again + len(key):]


def _name_in_id(turns: CallTurns, base: int, eot_text: str, notes: list[str]) -> tuple[ToolFormat, list[str]]:
    """The id is rendered where the name would be (``functions.NAME:0``)."""
    one = turns.one
    if IM not in one:
        return ToolFormat(), notes
    # treat the id as the name slot; the runtime reads the name out of the id
    swapped = CallTurns(one.replace(IM, NM), turns.two.replace(IM, NM) if turns.two else None,
                        turns.empty, turns.two_args.replace(IM, NM) if turns.two_args else None,
                        turns.content_none, turns.args_string)
    name_at = swapped.one.find(NM, base)
    if name_at < 0:
        return ToolFormat(), notes
    fmt = _tagged_style(swapped, name_at, base, eot_text, notes)
    from dataclasses import replace

    notes.append("the call id stands where the name would be; the name is read from the id")
    return replace(fmt, name_in_id=r"(?:functions\.)?(?P<name>[^:\s]+)(?::\d+)?$"), notes


# ------------------------------------------------------------------ the general layout
def layout_format(pr: Prober, turns: CallTurns, eot_text: str) -> tuple[ToolFormat, bool, bool] | None:
    """The call format as a learned layout (:mod:`.layout`), when one re-encodes the renders,
    whether it leaves some value spellings (booleans, null, arrays, objects) unverified and whether
    only arrays and objects are, the template writing arrays as JSON or Python lists."""
    from dataclasses import replace

    from .layout import learn as L

    def render(args: dict[str, Any], tools: list[dict[str, Any]] | None = None) -> str | None:
        try:
            out = pr.turn({"role": "assistant", "content": None if turns.content_none else "",
                           "tool_calls": [N.call(N.ID1, N.FN1, args, turns.args_string)]}, tools=tools or N.TOOLS)
        except TemplateLimitError:   # a probe value the template cannot render within its limits
            return None
        return _norm(out) if out is not None else None

    base = turn_base(turns)
    units = L.call_units(turns.one, turns.two, base)
    if units is None:
        return None
    r = L.Renders(one=turns.one, two=turns.two, zero=render({}), two_args=turns.two_args,
                  reversed_args=render({N.ARG2: N.VAL2, N.ARG1: N.VAL1}), typed=turns.typed_args,
                  values=render(dict(L.value_probes()), [L.value_tool(N.FN1), N.tool(N.FN2)]), base=base,
                  render=lambda args: render(args, [L.value_tool(N.FN1), N.tool(N.FN2)]))
    marker, _ = _split_before_name(units.call_start)
    layout = L.learn_call_layout(r, units, marker)
    if layout is None or not L.check_layout(layout, r, units, marker):
        return None
    partial = not L.check_layout(layout, r, units, marker, tolerate=())
    # arrays written as JSON or Python lists, and only arrays and objects left unverified
    literals = partial and L.nested_as_literals(r) and L.check_layout(layout, r, units, marker, L.NESTED_PROBES)
    section_end = _strip_tail(units.rest, eot_text)
    lead = layout.pieces[0].text if layout.pieces and layout.pieces[0].kind == "lit" else ""
    at = next(i for i, p in enumerate(layout.pieces) if p.kind == "name")
    after = layout.pieces[at + 1].text if at + 1 < len(layout.pieces) and layout.pieces[at + 1].kind == "lit" else ""
    before = layout.pieces[at - 1].text if at > 0 and layout.pieces[at - 1].kind == "lit" else ""
    fmt = ToolFormat(style="layout", section_start=units.section_start if units.section_start.strip() else "",
                     section_end=section_end if section_end.strip() else "", call_start=marker,
                     separator=units.separator, name_prefix=lead, name_suffix=after, layout=layout,
                     id_from_header="id" not in layout.holes() and _wordy(before, after))
    return replace(fmt, separator=fmt.separator if fmt.separator.strip() else ""), partial, literals
