"""Learning the frames of items whose values of one type are written in another frame (step 5 of
:mod:`.learn`, :class:`~autoparser.values.written.Frame`).

Some encodings write an object-valued argument otherwise than a scalar one: ``<KEY>`` ... ``</KEY>``
beside ``KEY value`` lines, ``KEY {`` ... ``}`` with no ``;`` after it beside ``KEY value;``. The
probe turn with every value shows it (the object probe's item does not fit the items' frame); a call
with one object argument says which text is the item's and which the object's, and a call whose
object holds an object does so for the members of the encoding's own objects. Two renders, made
only when the items' frame does not re-encode the probe values. (:class:`~autoparser.values.written.Frame`
takes arrays too, and the readers and grammars read any kind; arrays written in a frame of their own
are not learned yet: where a template does so, its arrays inside objects are framed too, and the
object container would have to be learned with its members' frames.)

Which text is the frame's: the object's members (their keys and leaves, spelled as learned) are
found in the item; the text before the first and after the last is the frame's and the container's
together (:func:`~.spellings.repeat_frame`). The container keeps the bracket it opens with and the
matching one it closes with (``{`` ... ``}``); text around them, or all of it when there is none
(``<KEY>`` ... ``</KEY>``), is the frame's.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ...values.spelling import KEY_AGAIN, Items, Values, encode_value
from ...values.written import Frame
from .spellings import container_items

OBJ_KEY = "pv57_obj"                        # the object probe's key (declared an object by the probe tool)
ONE = {"ko": "v w", "kn": 1}                # an object argument
INNER_MEMBERS = {"kn": 1, "km": 2}
INNER = {"ko": "v w", "kd": INNER_MEMBERS}   # an object holding an object
_OPENERS = {"{": "}", "[": "]", "(": ")"}

RenderHole = Callable[[dict[str, Any]], "str | None"]


def split_frame(item: str, key: str, members: dict[str, Any], values: Values) -> Frame | None:
    """The frame of ``item``: ``pre`` KEY ``kv`` OBJECT ``post``, the object holding `members`."""
    k = item.find(key)
    if k < 0:
        return None
    pre, rest = item[:k], item[k + len(key):]
    again = rest.find(key)
    if again >= 0:
        rest = rest[:again] + KEY_AGAIN + rest[again + len(key):]
    leaves = [encode_value(values, v) for v in members.values()]
    got = container_items(rest, leaves, list(members), True)
    if got is None:
        return None
    head, tail = got.open, got.close
    q = next((i for i, ch in enumerate(head) if ch in _OPENERS), -1)
    if q < 0:
        return Frame("object", pre, head, tail)
    r = tail.rfind(_OPENERS[head[q]])
    if r < 0:
        return None
    return Frame("object", pre, head[:q], tail[r + 1:])


def top_frames(hole: RenderHole, items: Items, values: Values) -> Items | None:
    """`items` with the frame of object arguments, when a call with one is written in another; None
    when it is not (or the render says nothing)."""
    text = hole({OBJ_KEY: ONE})
    if text is None or not text.startswith(items.open) or not text.endswith(items.close) or \
            len(text) < len(items.open) + len(items.close):
        return None
    item = text[len(items.open):len(text) - len(items.close)]
    head, post = items.item_pre + OBJ_KEY + items.kv, items.item_post.replace(KEY_AGAIN, OBJ_KEY)
    if item.startswith(head) and item.endswith(post) and len(item) >= len(head) + len(post):
        return None   # (written in the items' frame)
    fr = split_frame(item, OBJ_KEY, ONE, values)
    if fr is None or (fr.item_pre, fr.kv, fr.item_post) == (items.item_pre, items.kv, items.item_post):
        return None
    return replace(items, frames=(fr,))


def member_frames(hole: RenderHole, items: Items, values: Values) -> Values:
    """`values` with the frame of object members of the encoding's own objects, when an object
    member of one is written in another."""
    obj, top = values.object, items.frame("object")
    if obj is None or not top.kind:
        return values
    text = hole({OBJ_KEY: INNER})
    head = items.open + top.item_pre + OBJ_KEY + top.kv
    tail = top.item_post.replace(KEY_AGAIN, OBJ_KEY) + items.close
    if text is None or not text.startswith(head) or not text.endswith(tail) or len(text) < len(head) + len(tail):
        return values
    body = text[len(head):len(text) - len(tail)]
    first = obj.open + obj.item_pre + "ko" + obj.kv + encode_value(values, "v w") + obj.item_post.replace(
        KEY_AGAIN, "ko") + obj.sep
    if not body.startswith(first) or not body.endswith(obj.close) or len(body) < len(first) + len(obj.close):
        return values
    fr = split_frame(body[len(first):len(body) - len(obj.close)], "kd", INNER_MEMBERS, values)
    if fr is None or (fr.item_pre, fr.kv, fr.item_post) == (obj.item_pre, obj.kv, obj.item_post):
        return values
    return replace(values, object=replace(obj, frames=(fr,)))


__all__ = ["member_frames", "split_frame", "top_frames"]
