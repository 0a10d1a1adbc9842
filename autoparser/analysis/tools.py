"""Tool-call analysis: section and per-call markers, name, id and argument encoding.

T1 renders one call, T2 two calls; with names and ids replaced by sentinels the
two calls are identical, so the text between them is ``call_end + separator +
call_start`` and the common affixes with the one-call turn give each marker.
The call core is a JSON object when the name sits inside one, otherwise the
name is framed by markers and followed by JSON, Python, YAML-like or tagged
arguments. Tagged arguments are read from renders with one and two arguments.
The JSON call object is read by :mod:`.calljson`, a framed call's arguments by :mod:`.callargs`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import markers as mk
from ..diff.split import common_prefix_len, fix_prefix_end, shared_prefix, shared_suffix
from ..errors import TemplateLimitError
from ..markers import definition as dm
from ..probes import needles as N
from ..probes.prober import Prober
from .callargs import _entity_json, _line_args, _literal_args, _split_id, _tagged_args
from .calljson import _json_object_with, _json_open, find_call_object, json_layout, scan_json
from .model import ToolFormat

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


# ------------------------------------------------------------------ unit split
def split_units(one: str, two: str | None, s1: int, e1: int, s2: tuple[int, int] | None,
                base: int) -> tuple[str, str, str, str, str]:
    """(section_start, call_start, separator, call_end, rest_after) from one- and two-call turns.

    ``[s1, e1)`` is the call core in ``one``; ``s2`` the (end of first core, start of
    second core) in ``two``; ``base`` is where the turn's own text begins in ``one``.
    """
    left, right = one[base:s1], one[e1:]
    if two is None or s2 is None:
        m = dm.last(left)
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
    m = dm.last(prefix)
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
        # (unless the style format leaves the call's id inside a marker: it does not read the id where
        # the template writes it, ``[ID] <tool name="NAME">``)
        if laid is not None and not (laid[1] and (fmt.args == "yaml" or (fmt.style != "none" and laid[2]))
                                     and not _leaks(fmt, IM)) \
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


def _leaks(fmt: ToolFormat, mark: str = NM) -> bool:
    """A name sentinel (or `mark`: the id's) left in a marker: the analysis did not find where the
    name (the id) goes."""
    return any(mark in v for v in (fmt.section_start, fmt.section_end, fmt.call_start, fmt.call_end,
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
        # nor inside a marker of the turn without a call (``\endturn`` shares its ``\`` with ``\toolcall{``)
        base = min(base, fix_prefix_end(turns.empty, base))
        if _empty_section(one, turns.empty, base):
            # the turn with no call still writes an empty section (when content is empty:
            # "<｜tool▁calls▁begin｜><｜tool▁calls▁end｜>"): the text it shares with the call turn opens it
            base = 0
        # "<|channel|>final" vs "<|channel|>commentary": a marker glued to differing words belongs to both
        m = dm.last(one, 0, base)
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

    opener = dm.last(one, 0, base)
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
    from .layout.renders import Renders
    from .layout.spellings import NESTED_PROBES, value_probes, value_tool

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
    r = Renders(one=turns.one, two=turns.two, zero=render({}), two_args=turns.two_args,
                reversed_args=render({N.ARG2: N.VAL2, N.ARG1: N.VAL1}), typed=turns.typed_args,
                values=render(dict(value_probes()), [value_tool(N.FN1), N.tool(N.FN2)]), base=base,
                render=lambda args: render(args, [value_tool(N.FN1), N.tool(N.FN2)]))
    marker, _ = _split_before_name(units.call_start)
    layout = L.learn_call_layout(r, units, marker)
    if layout is None or not L.check_layout(layout, r, units, marker):
        return None
    partial = not L.check_layout(layout, r, units, marker, tolerate=())
    # arrays written as JSON or Python lists, and only arrays and objects left unverified
    literals = partial and L.nested_as_literals(r) and L.check_layout(layout, r, units, marker, NESTED_PROBES)
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
