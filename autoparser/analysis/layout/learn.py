"""Learning a call's layout from needle renderings.

The renders (assistant turns cut after the generation prompt, names and ids replaced by
sentinels) are: one call with one argument, two calls, one call with no argument, with two
arguments (in both orders), with a number as second argument, and one call with an argument
per probe value. From them:

1. the needles of one call span its core; the text two calls repeat around it gives the
   section, the call's start and end and the separator between calls (as for every format);
2. the turn with no argument against the turn with one gives the arguments hole: what differs;
   the literal text around the holes (name, id, arguments) are the call's pieces;
3. one argument against two gives the items: the text before a key, between key and value,
   after a value and between two items; whether keys are written at all (else positional, in
   the schema's order);
4. a string against a number in the same slot gives where a value's own text begins and ends;
5. the probe values give each type's spelling: a codec for strings (the first candidate that
   reproduces every probe), the number, boolean and null spellings, how nested values are
   written (:mod:`.spellings`).

The result is checked by re-encoding: :func:`~.encode.encode_call` must reproduce the renders
exactly, else the layout is not used.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from ...diff.split import common_prefix_len, common_suffix_len, shared_prefix, shared_suffix
from ...markers import NAME_WILDCARD
from ...probes import needles as N
from ...values import codecs
from ...values.spelling import KEY_AGAIN, Items, Slot, encode_items, encode_value, nested_text
from .frames import member_frames, top_frames
from .model import ArgsLayout, CallLayout, Piece
from .paths import learn_paths
from .renders import Renders
from .spellings import (
    FLAGGED_PROBES,
    WORD_PROBES,
    column_slots,
    learn_values,
    null_item,
    repeat_frame,
    value_probes,
    value_slots,
)

NM, IM = N.NAME_MARK, N.ID_MARK
ARG3, VAL3 = "cc_arg_thd", "ZZZZ_VAL_THR"


@dataclass(frozen=True)
class CallUnits:
    """What two calls repeat: the section and the call unit around the first call's core."""

    section_start: str
    call_start: str
    separator: str
    call_end: str
    rest: str            # after the last call (the section's end, the turn's end)
    unit_start: int      # where call_start begins in the one-call turn
    unit_end: int        # where call_end ends


# ---------------------------------------------------------------- needles
def _needles(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int, str]]:
    """(start, end, needle) of every needle of a call in ``text[start:end]``, in order."""
    end = len(text) if end is None else end
    found: list[tuple[int, int, str]] = []
    for needle in (NM, IM, NAME_WILDCARD, N.ARG1, N.ARG2, N.VAL1, N.VAL2):
        i = text.find(needle, start, end)
        while i >= 0:
            found.append((i, i + len(needle), needle))
            i = text.find(needle, i + len(needle), end)
    return sorted(found)


def call_units(one: str, two: str | None, base: int) -> CallUnits | None:
    """The section and call markers: what the two-call turn repeats around the first call's core."""
    first = _needles(one, base)
    if not first or not any(n in (NM, NAME_WILDCARD) for _, _, n in first):
        return None
    s1, e1 = first[0][0], first[-1][1]
    left, right = one[base:s1], one[e1:]
    k = len(first)
    both = _needles(two, base) if two is not None else []
    if two is None or len(both) != 2 * k:
        return CallUnits("", left, "", right, "", base, len(one))
    middle = two[both[k - 1][1]:both[k][0]]
    cs = shared_suffix(left, middle, digits_alike=True)
    ce = shared_prefix(right, middle, digits_alike=True)
    if cs + ce > len(middle):
        cs = max(0, len(middle) - ce)
    return CallUnits(section_start=left[: len(left) - cs], call_start=left[len(left) - cs:],
                     separator=middle[ce: len(middle) - cs], call_end=right[:ce], rest=right[ce:],
                     unit_start=base + len(left) - cs, unit_end=e1 + ce)


# ---------------------------------------------------------------- the arguments hole
def args_region(with_args: str, zero: str, lo: int, hi: int) -> tuple[int, int] | None:
    """Where the arguments are in ``with_args``: what differs from the call with no argument,
    within ``[lo, hi)`` (the call's unit)."""
    p = common_prefix_len(with_args, zero)
    s = common_suffix_len(with_args, zero)
    # marker-safe boundaries (``<parameter=`` does not share its ``<`` with ``</function>``), unless
    # the arguments sit inside one marker (``<invoke tool="NAME" id="ID" k="v"/>``): then the
    # boundaries stay where the texts differ; the prefix first, the suffix gets what it gives back
    safe_p, safe_s = min(p, shared_prefix(with_args, zero)), min(s, shared_suffix(with_args, zero))
    inside = _inside_tag(with_args, p, len(with_args) - min(s, len(zero) - p))
    if not inside and _after_needles(with_args, safe_p, p) == safe_p:
        p = safe_p
    if p + s > len(zero):
        s = len(zero) - p
    if not inside and with_args[len(with_args) - s:].lstrip()[:1] not in ("<", "["):
        s = min(s, safe_s)   # (a suffix that begins with a marker's opening bracket splits no marker)
    if p + s > len(zero):
        s = len(zero) - p
    start, end = p, len(with_args) - s
    if start < lo or end > hi or start > end:
        return None
    return start, end


def _after_needles(text: str, lo: int, hi: int) -> int:
    """Just past the last name or id sentinel in ``text[lo:hi]`` (``lo`` when none)."""
    return max((text.rfind(n, lo, hi) + 1 for n in (NM, IM, NAME_WILDCARD) if text.rfind(n, lo, hi) >= 0), default=lo)


def _inside_tag(text: str, a: int, b: int) -> bool:
    """``text[a:b]`` lies inside one ``<...>`` tag or ``[...]`` bracket: opened before it, closed after."""
    for op, cl in (("<", ">"), ("[", "]")):
        lt, gt = text.rfind(op, 0, a), text.rfind(cl, 0, a)
        after_gt, after_lt = text.find(cl, b), text.find(op, b)
        if lt > gt and after_gt >= 0 and (after_lt < 0 or after_gt < after_lt) and \
                op not in text[a:b].replace("&lt;", ""):
            return True
    return False


def _key_again(text: str, key: str) -> str:
    """``text`` with the key's second writing (a closing ``</KEY>``) made :data:`KEY_AGAIN`."""
    i = text.find(key)
    j = text.find(key, i + len(key)) if i >= 0 else -1
    return text if j < 0 else text[:j] + KEY_AGAIN + text[j + len(key):]


def learn_items(r1: str, r2: str | None, reversed2: str | None) -> Items | None:
    """Items from the arguments hole with one argument (``r1``) and with two (``r2``)."""
    keyed = N.ARG1 in r1
    if keyed:
        r1 = _key_again(r1, N.ARG1)
        k1 = r1.find(N.ARG1)
        v1 = r1.find(N.VAL1, k1 + len(N.ARG1))
        if v1 < 0:
            return None
        lead, kv, tail = r1[:k1], r1[k1 + len(N.ARG1):v1], r1[v1 + len(N.VAL1):]
    else:
        v1 = r1.find(N.VAL1)
        if v1 < 0:
            return None
        lead, kv, tail = r1[:v1], "", r1[v1 + len(N.VAL1):]
    gap = None
    if r2 is not None:
        if keyed:
            r2 = _key_again(_key_again(r2, N.ARG1), N.ARG2)
            a, b = r2.find(N.VAL1), r2.find(N.ARG2)
            ok = 0 <= a < b and r2.startswith(lead + N.ARG1 + kv + N.VAL1) and \
                r2[b + len(N.ARG2):].startswith(kv + N.VAL2) and r2.endswith(N.VAL2 + tail)
        else:
            a, b = r2.find(N.VAL1), r2.find(N.VAL2)
            ok = 0 <= a < b and r2.startswith(lead + N.VAL1) and r2.endswith(N.VAL2 + tail)
        if ok:
            gap = r2[a + len(N.VAL1):b]
        if not ok and keyed:
            columns = _columns(r2, lead, kv, tail)
            if columns is not None:
                return columns
    if gap is None:
        return Items(open=lead, close=tail, kv=kv, keyed=keyed)
    opened, item_pre, sep, item_post, close = repeat_frame(lead, gap, tail)
    return Items(open=opened, close=close, sep=sep, item_pre=item_pre, kv=kv, item_post=item_post, keyed=keyed)


def _columns(r2: str, lead: str, kv: str, tail: str) -> Items | None:
    """Items written as columns (a header row of keys, then a row of values: CSV with a header line)
    from the hole with two arguments, ``lead`` ARG1 ``kv`` VAL1 ``tail`` being the hole with one."""
    i1, i2 = r2.find(N.ARG1), r2.find(N.ARG2)
    a, b = r2.find(N.VAL1), r2.find(N.VAL2)
    if not (0 <= i1 < i2 < a < b) or not r2.startswith(lead + N.ARG1) or \
            not r2.startswith(kv + N.VAL1, i2 + len(N.ARG2)) or not r2.endswith(N.VAL2 + tail):
        return None
    key_gap, gap = r2[i1 + len(N.ARG1):i2], r2[a + len(N.VAL1):b]
    if not key_gap or not gap:
        return None
    # the values repeat after the row break (which holds the last key's closing text), the keys before it
    row, item_pre, sep, item_post, close = repeat_frame(kv, gap, tail)
    opened, key_pre, key_sep, key_post, row_break = repeat_frame(lead, key_gap, row)
    if not row_break:
        return None
    return Items(open=opened, close=close, sep=sep, item_pre=item_pre, kv=row_break, item_post=item_post,
                 key=Slot(key_pre, key_post), columns=True, key_sep=key_sep)


def split_value_frame(items: Items, r2: str | None, typed: str | None) -> tuple[Items, str, str, str, str]:
    """(items with the frame every value shares, string pre, string post, number pre, number post):
    a string and a number written in the same slot show which text around a value is the value's."""
    if r2 is None or typed is None:
        return items, "", "", "", ""
    p = common_prefix_len(r2, typed)
    s = common_suffix_len(r2, typed)
    if p + s > min(len(r2), len(typed)):
        return items, "", "", "", ""
    stext, ntext = r2[p: len(r2) - s], typed[p: len(typed) - s]
    i, j = stext.find(N.VAL2), ntext.find("12345")
    if i < 0 or j < 0:
        return items, "", "", "", ""
    s_pre, s_post, n_pre, n_post = stext[:i], stext[i + len(N.VAL2):], ntext[:j], ntext[j + 5:]
    kv, post = (items.item_pre if items.columns else items.kv), items.item_post
    if not kv.endswith(s_pre) or not (post + items.sep + items.close).startswith(s_post):
        return items, "", "", "", ""
    kv = kv[: len(kv) - len(s_pre)]
    moved = s_post
    if post.startswith(moved):
        post = post[len(moved):]
        frame = replace(items, item_pre=kv, item_post=post) if items.columns else \
            replace(items, kv=kv, item_post=post)
    else:
        return items, "", "", "", ""
    if not (frame.kv.endswith("") and n_pre.startswith("") and n_post.endswith("")):
        return items, "", "", "", ""
    return frame, s_pre, s_post, n_pre, n_post


# ---------------------------------------------------------------- the layout
def pieces_of(unit: str, region: tuple[int, int] | None) -> tuple[Piece, ...] | None:
    """The unit's literals and holes, in order (``region``: the arguments hole within the unit)."""
    out: list[Piece] = []
    lit: list[str] = []
    named = False
    i = 0

    def flush() -> None:
        if lit:
            out.append(Piece("lit", "".join(lit)))
            lit.clear()

    while i < len(unit):
        if region is not None and i == region[0]:
            flush()
            out.append(Piece("args"))
            i = region[1]
            continue
        ch = unit[i]
        if ch in (NM, NAME_WILDCARD):
            flush()
            out.append(Piece("name_again" if named or ch == NAME_WILDCARD else "name"))
            named = named or ch == NM
        elif ch == IM:
            flush()
            out.append(Piece("id"))
        else:
            lit.append(ch)
        i += 1
    if region is not None and region[0] == len(unit):
        flush()
        out.append(Piece("args"))
    flush()
    kinds = [p.kind for p in out]
    if kinds.count("name") != 1 or kinds.count("args") != 1 or kinds.count("id") > 1:
        return None
    return tuple(out)


def learn_call_layout(r: Renders, units: CallUnits, marker: str, why: list[str] | None = None) -> CallLayout | None:
    """The layout of one call after its start ``marker`` (the first part of ``units.call_start``),
    or None when the renders do not fit one (``why`` gets the reason)."""
    why = [] if why is None else why
    if r.zero is None:
        why.append("a call with no arguments does not render")
        return None
    one = r.one
    lo, hi = units.unit_start + len(marker), units.unit_end
    region = args_region(one, r.zero, lo, hi)
    if region is None:
        why.append("the arguments are not where the call is")
        return None
    whole = object_args(r, region, lo, hi)
    if whole is not None:
        (a, b), args = whole
        pieces = pieces_of(one[lo:hi], (a - lo, b - lo))
        return None if pieces is None else CallLayout(pieces=pieces, args=args)
    wrap = unwrap_codec(r, region, lo)

    def unwrapped(text: str | None) -> str | None:
        return text if text is None or not wrap else codecs.Codec.from_spec(wrap).decode(text)

    r1 = unwrapped(one[region[0]:region[1]])
    assert r1 is not None
    r2 = unwrapped(_region_text(r.two_args, r.zero, lo))
    typed = unwrapped(_region_text(r.typed, r.zero, lo))
    items = learn_items(r1, r2, unwrapped(_region_text(r.reversed_args, r.zero, lo)))
    if items is None:
        why.append(f"no items in the arguments {r1!r}")
        return None
    hole, inner = region, ("", "")
    if wrap:
        hole, inner = _string_bounds(one, region, lo, hi, wrap)
    pieces = pieces_of(one[lo:hi], (hole[0] - lo, hole[1] - lo))
    if pieces is None:
        why.append(f"the call's pieces are not one name, at most one id and the arguments: {one[lo:hi]!r}")
        return None
    items, s_pre, s_post, n_pre, n_post = split_value_frame(items, r2, typed)
    vregion = unwrapped(_region_text(r.values, r.zero, lo))
    spelled = _spelled_items(r, region, items, vregion, (s_pre, s_post, n_pre, n_post), why, unwrapped)
    if spelled is None:
        return None
    items = spelled
    if not wrap and not items.columns and items.keyed and vregion is not None and r.render is not None and \
            encode_items(items, value_probes()) != vregion:
        items = _framed(r, region, items, vregion, (s_pre, s_post, n_pre, n_post), unwrapped) or items
    if not wrap and not items.columns:
        # the text a call with no argument writes where the items go (``ID|NAME||``: ``|``)
        tail = len(one) - region[1]
        empty = r.zero[region[0]:len(r.zero) - tail] if region[0] <= len(r.zero) - tail else ""
        if empty.strip() and not any(m in empty for m in (NM, IM)):
            items = replace(items, empty=empty)
    return CallLayout(pieces=pieces, args=ArgsLayout(kind="items", codec=wrap, items=items,
                                                     inner_open=inner[0], inner_close=inner[1]))


def _framed(r: Renders, region: tuple[int, int], items: Items, vregion: str, frame: tuple[str, str, str, str],
            unwrapped: Callable[[str | None], str | None]) -> Items | None:
    """`items` with the frames of object values written in another frame (:mod:`.frames`), when they
    re-encode the probe values' arguments exactly; else None."""
    assert r.render is not None and items.values is not None
    prefix, suffix = r.one[:region[0]], r.one[region[1]:]

    def hole(args: dict[str, Any]) -> str | None:
        turn = r.render(args) if r.render is not None else None
        if turn is None or not turn.startswith(prefix) or not turn.endswith(suffix) or \
                len(turn) < len(prefix) + len(suffix):
            return None
        return unwrapped(turn[len(prefix):len(turn) - len(suffix)])

    framed = top_frames(hole, items, items.values)
    if framed is None:
        return None
    spelled = _spelled_items(r, region, replace(framed, values=None), vregion, frame, [], unwrapped)
    if spelled is None or spelled.values is None or spelled.values.nested != "own":
        return None   # (a frame's value is a container in the encoding's own syntax)
    spelled = replace(spelled, values=member_frames(hole, spelled, spelled.values))
    if encode_items(spelled, value_probes()) != vregion:
        return None
    return spelled


def _spelled_items(r: Renders, region: tuple[int, int], items: Items, vregion: str | None,
                   frame: tuple[str, str, str, str], why: list[str],
                   unwrapped: Callable[[str | None], str | None]) -> Items | None:
    """`items` with their values' spellings learned from the probe values' arguments (`vregion`),
    `frame` the string's and the number's texts around them (pre, post, pre, post)."""
    s_pre, s_post, n_pre, n_post = frame
    if items.columns:
        slots = column_slots(r, region, items, unwrapped)
        r.column_texts.update(slots or {})
    else:
        slots = value_slots(vregion, items, [k for k, _ in value_probes()]) if vregion is not None else None
    if slots is not None and vregion is not None and "pv55_null" not in slots:
        items = replace(items, null_item=null_item(vregion, items, [k for k, _ in value_probes()]))
    if slots is None:
        why.append("the probe values are not where the items are")
    elif items.item_pre.strip():
        # a boolean or null whose text holds the next item's start is no spelling (``--a --no-b``)
        slots = {k: t for k, t in slots.items() if k not in WORD_PROBES or items.item_pre.strip() not in t}
    if slots and vregion is not None and items.keyed and not items.columns and items.kv != items.kv.rstrip() and \
            any(slots.get(k) == "" and k + items.kv not in vregion for k in WORD_PROBES):
        items = replace(items, trim_empty=True)   # (``a =`` for a value written as nothing)
    follow = items.item_post if items.item_post.strip() else items.sep + items.item_pre
    values = learn_values(slots or {}, s_pre, s_post, n_pre, n_post, why,
                          [d for d in (follow, items.close) if d.strip()])
    if values is None:
        return None
    if vregion is not None and items.keyed and not items.columns:
        values = learn_paths(vregion, items, values) or values   # (arrays and objects as path keys)
    return replace(items, values=values)


def _string_bounds(one: str, region: tuple[int, int], lo: int, hi: int, wrap: str
                   ) -> tuple[tuple[int, int], tuple[str, str]]:
    """The whole string the escaped arguments are written in (``"{k: 'v'}"``: the brackets inside the
    quotes too), and the text it always holds before and after the items; the region itself when the
    codec writes no quotes."""
    codec = codecs.Codec.from_spec(wrap)
    quote = '"' if wrap.startswith("json") else wrap[len("quoted("):][:1] if wrap.startswith("quoted(") else ""
    if not quote or not codec.self_delimiting:
        return region, ("", "")
    a = one.rfind(quote, lo, region[0])
    b = one.find(quote, region[1], hi)
    if a < 0 or b < 0:
        return region, ("", "")
    before, after = one[a + 1:region[0]], one[region[1]:b]
    dec_b, ok_b = codec.decode_checked(before)
    dec_a, ok_a = codec.decode_checked(after)
    if not (ok_b and ok_a) or len(before) > 16 or len(after) > 16:
        return region, ("", "")
    return (a + 1, b), (dec_b, dec_a)


# string codecs a template may write a whole JSON object in (arguments as one escaped string)
WRAPS = ("json", "json(ascii)", "python", "entities(html)", "entities(xml)", "entities(quot,#x27)",
         "percent(%20)", "percent(plus)", "quoted(',backslash)", "quoted(\",backslash)")
# the codecs a template may escape the whole arguments text with, inside quotes the layout writes
UNWRAPS = ("json(bare)", "quoted(\",backslash,bare)", "quoted(',backslash,bare)", "entities(html)", "entities(xml)",
           "entities(quot,#x27)", "percent(%20)", "percent(plus)")


def unwrap_codec(r: Renders, region: tuple[int, int], lo: int) -> str:
    """The string codec the whole arguments text is escaped with ("" when it is not): decoding the
    probe values' arguments changes them and re-encoding gives them back, in every render."""
    if r.values is None or r.zero is None:
        return ""
    vregion = _region_text(r.values, r.zero, lo)
    if vregion is None:
        return ""
    texts = [r.one[region[0]:region[1]], vregion]
    for spec in UNWRAPS:
        codec = codecs.Codec.from_spec(spec)
        ok = True
        for text in texts:
            decoded, clean = codec.decode_checked(text)
            if not clean or codec.encode(decoded) != text:
                ok = False
                break
        if ok and codec.decode(vregion) != vregion:
            return spec
    return ""


def object_args(r: Renders, region: tuple[int, int], lo: int, hi: int
                ) -> tuple[tuple[int, int], ArgsLayout] | None:
    """The arguments written as one JSON or Python-literal object (in a string codec when the
    template escapes it): the span around the differing text that decodes to the arguments, in
    the one-argument turn and in the probe values' turn alike."""
    one = r.one
    want1 = {N.ARG1: N.VAL1}
    want_v = dict(value_probes())
    vregion = args_region(r.values, r.zero, lo, len(r.values)) if r.values is not None and r.zero else None
    for k in range(0, 8):
        for m in range(0, 8):
            a, b = region[0] - k, region[1] + m
            if a < lo or b > hi:
                continue
            text = one[a:b]
            if not text or text[0] not in "{\"'&%" or text[-1] not in "}\"';":
                continue
            for kind, serializer, codec in _object_candidates(text, want1):
                if vregion is not None and r.values is not None:
                    vtext = r.values[vregion[0] - k: vregion[1] + m]
                    if nested_text(want_v, "python" if kind == "python" else serializer, codec) != vtext:
                        continue
                return (a, b), ArgsLayout(kind=kind, codec=codec, serializer=serializer)
    return None


def _object_candidates(text: str, want: dict[str, Any]) -> list[tuple[Any, str, str]]:
    out: list[tuple[Any, str, str]] = []
    wraps = ["", *WRAPS]
    for codec in wraps:
        for kind, serializer in (("json", "json"), ("json", "json(compact)"), ("json", "json(ascii)"),
                                 ("python", "python")):
            if nested_text(want, serializer, codec) == text:
                out.append((kind, serializer, codec))
    return out


def _region_text(turn: str | None, zero: str, lo: int) -> str | None:
    if turn is None:
        return None
    region = args_region(turn, zero, lo, len(turn))
    return None if region is None else turn[region[0]:region[1]]


__all__ = ["CallUnits", "args_region", "call_units", "check_layout", "learn_call_layout", "learn_items"]


def check_layout(layout: CallLayout, r: Renders, units: CallUnits, marker: str,
                 tolerate: tuple[str, ...] = FLAGGED_PROBES) -> bool:
    """The layout re-encodes the one-call turn and the turns with two arguments and with the probe
    values exactly (the unit after the call's start marker), but for the probe values of
    `tolerate` (:func:`_scalars_agree`: spellings left to the verification)."""
    from .encode import encode_call

    lo = units.unit_start + len(marker)
    one_unit = r.one[lo:units.unit_end]
    if encode_call(layout, NM, IM, {N.ARG1: N.VAL1}) != one_unit.replace(NAME_WILDCARD, NM):
        return False
    for turn, args in ((r.two_args, {N.ARG1: N.VAL1, N.ARG2: N.VAL2}), (r.values, dict(value_probes()))):
        if turn is None:
            continue
        text = encode_call(layout, NM, IM, args)
        if turn[lo:lo + len(text)].replace(NAME_WILDCARD, NM) != text and \
                not (tolerate and turn is r.values and _scalars_agree(layout, r, lo, tolerate)):
            return False
    return True


def nested_as_literals(r: Renders) -> bool:
    """Whether the probe values' turn writes the array probe as a JSON or Python list (the style
    readers scan those; a partial layout does not read them)."""
    text = "".join((r.values or "").split())
    return '["xy",3]' in text or "['xy',3]" in text


def _scalars_agree(layout: CallLayout, r: Renders, lo: int, tolerate: tuple[str, ...]) -> bool:
    """The probe values' render holds every probe value where the items put it, and every string
    and number written as the layout writes it: only booleans, null, arrays and objects differ (a
    spelling no candidate writes, such as a boolean written as the key alone; left to the
    verification, which flags those scenarios)."""
    items = layout.args.items
    if layout.args.codec or items is None or items.values is None or not items.keyed or r.zero is None:
        return False
    region = _region_text(r.values, r.zero, lo)
    probes = value_probes()
    if items.columns:
        texts = r.column_texts
        if region is None or any(k not in texts for k, _ in probes):
            return False
        header = items.key_sep.join(items.key.pre + k + items.key.post for k, _ in probes)
        row = items.sep.join(items.item_pre + (texts[k] if k in tolerate else encode_value(items.values, v)) +
                             items.item_post for k, v in probes)
        return region == items.open + header + items.kv + row + items.close
    slots = value_slots(region, items, [k for k, _ in probes]) if region is not None else None
    if slots is None:
        return False
    return all(slots.get(k) == encode_value(items.values, v) for k, v in probes if k not in tolerate)
