"""The data of how a template writes argument values (:class:`Slot`, :class:`Items`, :class:`Values`):
learned by ``analysis.layout``, written and read back by :mod:`.spelling` and :mod:`.nested`."""

from __future__ import annotations

import itertools
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import regex

KEY_AGAIN = "\x04"   # in an item's literal: the key written a second time (``<KEY>v</KEY>``)
NAME_AGAIN = "\x01"  # in an item's literal: the call's name (``NAME.key=v``; the probes' name mark)
ID_AGAIN = "\x02"    # in an item's literal: the call's id (``call_1,f,key,value`` rows; the probes' id mark)


@dataclass(frozen=True)
class Slot:
    """How a string or a number is written: ``pre`` + codec(value) + ``post``."""

    pre: str = ""
    post: str = ""
    codec: str = "raw"


@dataclass(frozen=True)
class Frame:
    """An item's own text around its key and value where values of one JSON type (``kind``: "object"
    or "array") are written in another frame than the other values: ``<KEY>`` ... ``</KEY>`` beside
    ``KEY value`` lines, ``KEY {`` ... ``}`` with no ``;`` after it beside ``KEY value;``. Such a
    value is always written in the encoding's own container of that kind (``Values.object``)."""

    kind: str
    item_pre: str = ""
    kv: str = ""
    item_post: str = ""


@dataclass(frozen=True)
class Items:
    """A sequence of items: ``open`` item (``sep`` item)* ``close``, each item ``item_pre`` KEY
    ``kv`` VALUE ``item_post`` (``keyed`` False: positional values, no key). ``open``/``close``
    are written only when there is an item. ``item_post`` may hold :data:`KEY_AGAIN`. ``values``
    is how the values are written (a nested container's is its parent's, and None).

    ``columns``: the keys are written first, as a header row (each key in ``key``'s slot, joined by
    ``key_sep``), then ``kv``, then the values in the header's order as positional items
    (``open`` KEY (``key_sep`` KEY)* ``kv`` item (``sep`` item)* ``close``, each item ``item_pre``
    VALUE ``item_post``): CSV with a header line.

    ``null_item``: keyed items whose null value is written as an item of its own shape, the text after
    the key standing for ``kv`` VALUE ``item_post`` (an empty XML element ``<KEY/>``: ``"/>"``)."""

    open: str = ""
    close: str = ""
    sep: str = ""
    item_pre: str = ""
    kv: str = ""
    item_post: str = ""
    keyed: bool = True
    key: Slot = field(default_factory=Slot)
    values: Values | None = None
    columns: bool = False
    key_sep: str = ""
    trim_empty: bool = False    # a value written as nothing leaves out the white space ``kv`` ends with (``a =``)
    empty: str = ""             # what a call's arguments are written as when there is no item (``|``: ``ID|NAME||``)
    null_item: str = ""         # keyed: a null value's item is ``item_pre`` KEY ``null_item`` (``<KEY/>``), when set
    frames: tuple[Frame, ...] = ()   # keyed: the frames of values of a type written in another (:class:`Frame`)

    def frame(self, kind: str) -> Frame:
        """The frame a value of JSON type `kind` is written in: its own, else the items' (kind "")."""
        return next((f for f in self.frames if f.kind == kind), Frame("", self.item_pre, self.kv, self.item_post))

    def frame_of(self, value: object) -> Frame:
        """The frame `value` is written in."""
        return self.frame("object" if isinstance(value, dict) else "array" if isinstance(value, list) else "")


@dataclass(frozen=True)
class KeyPath:
    """Arrays and objects written as several items whose keys are paths (``filters[lang]=en&tags[0]=a``,
    ``a.b=``, ``a%b=``): each child's key (or an element's index) is written after its parent's key as
    ``open`` + child + ``close``. ``arrays``: ``"0"`` / ``"1"``, elements numbered from that base;
    ``"empty"``, no index (``tags[]=a``); ``"whole"``, arrays are not written as paths (``nested``
    writes them). Empty arrays and objects are written whole, as ``nested`` says."""

    open: str = "["
    close: str = "]"
    arrays: str = "0"


@dataclass(frozen=True)
class Values:
    """How argument values of each JSON type are written, after the key/value separator.

    ``string``, ``number`` and ``integer`` are slots; ``true``, ``false`` and ``null`` the whole texts the
    template writes for them; ``nested`` how arrays and objects are written: a serializer
    (``"json"``, ``"json(compact)"``, ``"python"``, ``"spelled"``: JSON's brackets with leaves
    spelled as here) with ``nested_pre``/``nested_post`` around it, escaped with the string codec
    ``nested_codec`` when the template writes it as a string; or ``"own"``: the containers
    ``array`` and ``object`` (:class:`Items` whose values are spelled as here). ``path``: a call's
    arguments write a non-empty array or object as items whose keys are paths (:class:`KeyPath`).
    """

    string: Slot = field(default_factory=Slot)
    number: Slot = field(default_factory=Slot)     # floats (and integers where ``integer`` is not set)
    integer: Slot | None = None                     # integers, when written otherwise than floats
    true: str = "true"
    false: str = "false"
    null: str = "null"
    nested: str = "json"
    nested_pre: str = ""
    nested_post: str = ""
    nested_codec: str = ""
    array: Items | None = None
    object: Items | None = None
    path: KeyPath | None = None     # arrays and objects as items with path keys (:mod:`.keypaths`)


MAX_HEADERS = 32     # columns: the header rows a grammar lists per tool


def column_headers(keys: Sequence[str], required: Collection[str], limit: int = MAX_HEADERS) -> list[list[str]]:
    """The header rows the grammars list for items written as columns: the keys in their order and
    sorted, optional ones left out or not, the longest first; never empty, at most `limit`."""
    headers: list[list[str]] = []
    for order in dict.fromkeys((tuple(keys), tuple(sorted(keys)))):
        optional = [k for k in order if k not in required]
        for n in range(len(optional) + 1):
            for left_out in itertools.combinations(optional, n):
                header = [k for k in order if k not in left_out]
                if header and header not in headers and len(headers) < limit:
                    headers.append(header)
    return headers


NUMBER = regex.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
MAX_DEPTH = 32


__all__ = ["ID_AGAIN", "KEY_AGAIN", "MAX_DEPTH", "MAX_HEADERS", "NAME_AGAIN", "NUMBER", "Frame", "Items", "KeyPath", "Slot",
           "Values", "column_headers"]
