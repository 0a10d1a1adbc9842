"""Learning how a call's values are spelled (step 5 of :mod:`.learn`).

One call renders a probe value per key (:func:`value_probes`, declared by :func:`value_tool`); the
text of each value in the arguments hole (:func:`value_slots`, or :func:`column_slots` for items
written as columns) gives each type's spelling: a codec for strings (the first candidate that
reproduces every probe, :func:`learn_string`), the number, boolean and null spellings, and how
arrays and objects are written (a serializer in a frame, or the encoding's own containers).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from ...diff.split import common_prefix_len, common_suffix_len
from ...probes import needles as N
from ...values import codecs
from ...values.spelling import KEY_AGAIN, Items, Slot, Values, encode_value, nested_text
from ...values.yamlblock import is_block, spec_name
from .renders import Renders


# ---------------------------------------------------------------- probe values
def value_probes() -> list[tuple[str, Any]]:
    """(key, value) pairs rendered in one call to learn how each type is written."""
    out: list[tuple[str, Any]] = [(f"pv{i:02d}_str", s) for i, s in enumerate(codecs.PROBE_STRINGS)]
    out += [("pv50_int", 7), ("pv51_neg", -31), ("pv52_flt", 2.5), ("pv53_true", True), ("pv54_false", False),
            ("pv55_null", None), ("pv56_arr", ["x y", 3]),
            ("pv57_obj", {"ko": "v w", "kn": 1, "kb": True, "kz": None, "ka": [False]})]
    return out


def value_tool(name: str) -> dict[str, Any]:
    """A probe tool declaring the probe values' keys (templates that iterate the schema render them)."""
    kinds = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}
    props = {k: ({"type": kinds.get(type(v), "string")} if v is not None else {"type": ["string", "null"]})
             for k, v in value_probes()}
    return {"type": "function", "function": {"name": name, "description": "Probe values.",
                                             "parameters": {"type": "object", "properties": props, "required": []}}}

# ---------------------------------------------------------------- value spellings
def value_slots(region: str, items: Items, keys: Sequence[str]) -> dict[str, str] | None:
    """The text of each probe value in the arguments hole of the value probe."""
    out: dict[str, str] = {}
    positions = []
    at = len(items.open)
    for key in keys:
        found = region.find(key, at) if items.keyed else at
        if found < 0:
            return None
        positions.append(found)
        at = found + (len(key) if items.keyed else 0)
    probes = dict(value_probes())
    frames = [items.frame_of(probes.get(key)) for key in keys]   # (a type written in a frame of its own)
    for n, key in enumerate(keys):
        k = positions[n]
        start = k + len(key) + len(frames[n].kv) if items.keyed else k + len(items.item_pre)
        if items.keyed and block_after(region, k + len(key), items.kv):
            start = k + len(key) + len(items.kv.rstrip(" \t"))   # (a block below the key: ``filters:⏎``)
        post = frames[n].item_post.replace(KEY_AGAIN, key)
        if n + 1 < len(keys):
            nxt = positions[n + 1]
            end = nxt - len(frames[n + 1].item_pre) - len(items.sep) - len(post) if items.keyed else -1
        else:
            end = len(region) - len(items.close) - len(post)
        if not items.keyed:
            return None   # positional values are read by their separators (below)
        if end < start:
            if key in WORD_PROBES and items.kv.rstrip() and region[k + len(key):end] == items.kv.rstrip():
                out[key] = ""   # written as nothing, and the white space the separator ends with left out (``a =``)
                continue
            if key in FLAGGED_PROBES:
                continue   # (a boolean written as the key alone: ``--flag``, ``--no-flag``)
            return None
        out[key] = region[start:end]
    return out


def block_after(region: str, at: int, kv: str) -> bool:
    """The key/value separator at ``at`` is written without the white space it ends with, a line
    break right after it (a value written as a block on the lines below: ``filters:⏎  lang: en``)."""
    core = kv.rstrip(" \t")
    return core != kv and not region.startswith(kv, at) and region.startswith(core, at) and \
        region[at + len(core):at + len(core) + 1] in ("\n", "\r")


NULL_PROBE = "pv55_null"


def null_item(region: str, items: Items, keys: Sequence[str]) -> str:
    """The text after the null probe's key when null is written as an item of its own shape (``<KEY/>``,
    ``Items.null_item``): up to the next item, "" when there is none (or null is a value in a slot)."""
    if not items.keyed or items.columns or NULL_PROBE not in keys or keys[-1] == NULL_PROBE:
        return ""
    k = region.find(NULL_PROBE)
    nxt = region.find(keys[keys.index(NULL_PROBE) + 1], k + 1) if k >= 0 else -1
    if nxt < 0:
        return ""
    before = items.sep + items.item_pre
    end = nxt - len(before)
    text = region[k + len(NULL_PROBE):end]
    if end < k + len(NULL_PROBE) or region[end:nxt] != before or not text.strip() or NULL_PROBE in text or \
            text.startswith(items.kv):
        return ""
    return text


def column_slots(r: Renders, region: tuple[int, int], items: Items,
                 unwrapped: Callable[[str | None], str | None]) -> dict[str, str] | None:
    """Columns: the text of each probe value, from a call with that value alone (a row of values
    does not say where one ends when a value holds the separator)."""
    if r.render is None:
        return None
    prefix, suffix = r.one[:region[0]], r.one[region[1]:]
    out: dict[str, str] = {}
    for key, value in value_probes():
        turn = r.render({key: value})
        if turn is None or not turn.startswith(prefix) or not turn.endswith(suffix) or \
                len(turn) < len(prefix) + len(suffix):
            continue
        hole = unwrapped(turn[len(prefix):len(turn) - len(suffix)]) or ""
        head = items.open + items.key.pre + key + items.key.post + items.kv + items.item_pre
        tail = items.item_post + items.close
        if hole.startswith(head) and hole.endswith(tail) and len(hole) >= len(head) + len(tail):
            out[key] = hole[len(head):len(hole) - len(tail)]
    return out or None


def _find_frame(text: str, body: str) -> tuple[str, str] | None:
    i = text.find(body)
    return (text[:i], text[i + len(body):]) if i >= 0 and body else None


_QUOTES = "\"'`"
_BRACKETS = ("{}", "[]", "()", "<>")


def _frame(texts: Sequence[str]) -> tuple[int, int]:
    """Lengths of the prefix and the suffix every text shares."""
    first = texts[0]
    p = len(first)
    s = len(first)
    for t in texts[1:]:
        p = min(p, common_prefix_len(first, t))
        s = min(s, common_suffix_len(first, t))
    shortest = min(len(t) for t in texts)
    if p + s > shortest:
        s = max(0, shortest - p)
    return p, s


def learn_string(samples: Sequence[tuple[str, str]], delimiters: Sequence[str] = ()) -> Slot | None:
    """The string slot: the text every string shares around it, and the codec (learned from the
    samples) that writes the rest. A quote the frame begins and ends with is tried as the codec's
    own first (``"..."`` is JSON's), then as the frame's (a bare codec inside it)."""
    if not samples:
        return None
    texts = [t for _, t in samples]
    p, s = _frame(texts)
    pre, post = texts[0][:p], texts[0][len(texts[0]) - s:]
    frames = [(pre, post)]
    if pre and post and ((pre[-1] == post[0] and pre[-1] in _QUOTES) or pre[-1] + post[0] in _BRACKETS):
        # the quote (or bracket) around every value may be the codec's own (it then says where the
        # value ends: ``{a \} b}`` is a value framed by braces with the braces inside escaped)
        frames.insert(0, (pre[:-1], post[1:]))
    for fpre, fpost in frames:
        bodies = [(v, t[len(fpre): len(t) - len(fpost)]) for v, t in samples]
        codec = codecs.learn_codec(bodies, delimiters)
        if codec is not None:
            return Slot(fpre, fpost, codec.spec)
    return None


def learn_values(slots: dict[str, str], s_pre: str, s_post: str, n_pre: str, n_post: str,
                 why: list[str], delimiters: Sequence[str] = ()) -> Values | None:
    probes = dict(value_probes())
    strings = [(N.VAL1, s_pre + N.VAL1 + s_post)] + [(probes[k], t) for k, t in slots.items()
                                                     if isinstance(probes.get(k), str)]
    string = learn_string(strings, delimiters)
    if string is None:
        why.append("no codec writes the strings: " + "; ".join(f"{v!r} -> {t!r}" for v, t in strings[1:4]))
        return None
    integer = Slot(n_pre, n_post)
    number: Slot | None = None
    for key in ("pv50_int", "pv51_neg", "pv52_flt"):
        text = slots.get(key)
        if text is None:
            continue
        value = probes[key]
        body = json.dumps(value)
        frame = _find_frame(text, body)
        if frame is None:
            why.append(f"numbers are not written as numbers: {value!r} -> {text!r}")
            return None
        if isinstance(value, int):
            integer = Slot(*frame)
        else:
            number = Slot(*frame)   # a float may be written otherwise (``<double>2.5</double>``)
    values = Values(string=string, integer=integer, number=number or integer, true=slots.get("pv53_true", "true"),
                    false=slots.get("pv54_false", "false"), null=slots.get("pv55_null", "null"))
    nested = _learn_nested([(probes[k], slots[k]) for k in NESTED_PROBES if k in slots], values)
    if nested is None:
        # the rest of the layout is still read; arrays and objects are left unverified (the
        # verification's array and object scenarios flag them), written as JSON meanwhile
        why.append("arrays and objects are written in no known way: " +
                   "; ".join(f"{probes[k]!r} -> {slots[k]!r}" for k in NESTED_PROBES if k in slots))
        return values
    return nested


NESTED_PROBES = ("pv56_arr", "pv57_obj")
# probe values whose spelling may be left unverified (the verification flags their scenarios)
WORD_PROBES = ("pv53_true", "pv54_false", "pv55_null")
FLAGGED_PROBES = (*WORD_PROBES, *NESTED_PROBES)


def _learn_own(samples: Sequence[tuple[Any, str]], values: Values) -> Values | None:
    """Arrays and objects in the encoding's own syntax: the array container from the array probe
    (its items are the leaves as the values spell them), then the object container from the
    object probe (its last member an array); checked by writing both again."""
    arr = next((t for v, t in samples if isinstance(v, list)), None)
    obj = next(((v, t) for v, t in samples if isinstance(v, dict)), None)
    if arr is None or obj is None:
        return None
    leaves = [encode_value(values, x) for x in ["x y", 3]]
    array = container_items(arr, leaves, [], False)
    if array is None:
        return None
    with_array = replace(values, nested="own", array=array)
    value, text = obj
    leaves = [encode_value(with_array, x) for x in value.values()]
    obj_items = container_items(text, leaves, list(value), True)
    if obj_items is None and None in value.values():
        # a null member written as an item of its own shape (``<kz/>``): the container from the
        # others, the null member's text after its key from the gap that holds it
        members: list[tuple[str, Any]] = []
        nulls: dict[int, str] = {}   # gap (after member n) -> the null member's key
        for k, x in value.items():
            if x is None:
                nulls[len(members) - 1] = k
            else:
                members.append((k, x))
        obj_items = container_items(text, [encode_value(with_array, x) for _, x in members], [k for k, _ in members],
                               True, nulls)
    if obj_items is None:
        return None
    own = replace(with_array, object=obj_items)
    if any(t != nested_text(v, "own", "", own) for v, t in samples):
        return None
    return own


def container_items(text: str, leaves: Sequence[str], keys: Sequence[str], keyed: bool,
               nulls: dict[int, str] | None = None) -> Items | None:
    """The container that writes ``leaves`` (with ``keys``) as ``text``: the text before the first
    leaf, between two and after the last give its literals, as for the arguments' items. ``nulls``:
    gaps (after leaf n) that also hold a null member under that key, written as an item of its own
    shape (``Items.null_item``)."""
    at, spans = 0, []
    for leaf in leaves:
        i = text.find(leaf, at)
        if i < 0:
            return None
        spans.append((i, i + len(leaf)))
        at = i + len(leaf)
    head, tail = text[:spans[0][0]], text[spans[-1][1]:]
    gaps = [text[spans[n][1]:spans[n + 1][0]] for n in range(len(spans) - 1)]
    kv = ""
    if keyed:
        def split(segment: str, key: str, prev: str) -> tuple[str, str] | None:
            if prev and prev in segment:
                segment = segment.replace(prev, KEY_AGAIN, 1)
            j = segment.rfind(key)
            return None if j < 0 else (segment[:j], segment[j + len(key):])
        first = split(head, keys[0], "")
        rest = [split(g, keys[n + 1], keys[n]) for n, g in enumerate(gaps)]
        if first is None or any(r is None for r in rest):
            return None
        kvs = {first[1], *(r[1] for r in rest if r is not None)}
        if len(kvs) != 1:
            return None
        kv = kvs.pop()
        head = first[0]
        gaps = [r[0] for r in rest if r is not None]
        if keys[-1] in tail:
            tail = tail.replace(keys[-1], KEY_AGAIN, 1)
    nulls = nulls or {}
    plain = [g for n, g in enumerate(gaps) if n not in nulls]
    if len(set(plain)) != 1 or any(not 0 <= n < len(gaps) for n in nulls):
        return None
    opened, item_pre, sep, item_post, close = repeat_frame(head, plain[0], tail)
    null_items = {_null_item(gaps[n], plain[0], key, sep + item_pre) for n, key in nulls.items()}
    if "" in null_items or len(null_items) > 1:
        return None
    return Items(open=opened, close=close, sep=sep, item_pre=item_pre, kv=kv, item_post=item_post, keyed=keyed,
                 null_item=null_items.pop() if null_items else "")


def _null_item(gap: str, plain: str, key: str, next_item: str) -> str:
    """The text after the key of a null member written in `gap` (a gap before an item, `plain`, then
    the null member's key, that text and the next item's start `next_item`), or "" when it is not so."""
    lead = plain + key
    if not gap.startswith(lead) or not gap.endswith(next_item) or len(gap) < len(lead) + len(next_item):
        return ""
    text = gap[len(lead):len(gap) - len(next_item)]
    return "" if KEY_AGAIN in text or key in text else text


def repeat_frame(head: str, gap: str, tail: str) -> tuple[str, str, str, str, str]:
    """(open, each unit's opening, separator, each unit's closing, close) of a repeated unit, from
    the text before the first unit (`head`), between two (`gap`) and after the last (`tail`): what
    the gap shares with the end of `head` opens each unit, what it shares with the start of `tail`
    closes each."""
    pre = common_suffix_len(head, gap)
    post = common_prefix_len(tail, gap)
    if pre + post > len(gap):
        post = max(0, len(gap) - pre)
    return head[:len(head) - pre], head[len(head) - pre:], gap[post:len(gap) - pre], tail[:post], tail[post:]


def _block_serializers(samples: Sequence[tuple[Any, str]]) -> list[str]:
    """YAML block serializers (:mod:`autoparser.values.yamlblock`) that may write the samples: the
    first level's indentation as the first sample shows it, each deeper level two, four or as many
    more."""
    text = samples[0][1]
    if text[:1] not in ("\n", "\r"):
        return []
    line = text.lstrip("\r\n")
    first = len(line) - len(line.lstrip(" "))
    if not 0 < first <= 16:
        return []
    return list(dict.fromkeys(spec_name(first, step) for step in (2, 4, first)))


def _learn_nested(samples: Sequence[tuple[Any, str]], values: Values) -> Values | None:
    """``values`` with how arrays and objects are written: a serializer, constant text around it
    and the string codec it is escaped with (when the template writes it as a string), or the
    encoding's own containers."""
    if not samples:
        return values
    string = values.string
    wraps = ["", string.codec] if string.codec != "raw" else [""]
    for serializer in ("json", "json(compact)", "python", "spelled", *_block_serializers(samples)):
        for wrap in wraps if not is_block(serializer) else [""]:   # (a block is never escaped)
            value, text = samples[0]
            body = nested_text(value, serializer, wrap, values)
            frame = _find_frame(text, body)
            if frame is None:
                continue
            pre, post = frame
            if all(t == pre + nested_text(v, serializer, wrap, values) + post for v, t in samples):
                return replace(values, nested=serializer, nested_pre=pre, nested_post=post, nested_codec=wrap)
    return _learn_own(samples, values)


__all__ = ["FLAGGED_PROBES", "NESTED_PROBES", "WORD_PROBES", "column_slots", "container_items", "learn_string", "learn_values",
           "null_item", "value_probes", "value_slots", "value_tool"]
