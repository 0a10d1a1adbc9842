"""Arguments whose arrays and objects are written as several items with path keys
(:class:`~.written.KeyPath`): ``filters[lang]=en&filters[scope][site]=docs&tags[0]=a&tags[1]=b``,
``lookup.filters.lang=en``, ``filters%lang='en'``.

Both directions, shared by the encoder, the streaming reader and the strict parser:

* :func:`flatten`: one argument as the (path key, leaf value) pairs the template writes;
* :func:`split_path`: a key's text as its segments (None: a plain key);
* :class:`PathStack`: the JSON object text of a call's arguments, key by key: each key's text gives
  the fragment that closes the containers the previous key left open and opens the ones this key
  needs (the value is written after it). A path that does not continue what is open (an index out
  of turn, a container reopened after it was closed, a kind the schema forbids) is a plain key:
  nothing raises and no text is lost. Depth and segment counts are bounded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .schematypes import schema_types
from .written import KeyPath

MAX_SEGMENTS = 16
_escape = json.encoder.encode_basestring


def _index(path: KeyPath, n: int) -> str:
    return "" if path.arrays == "empty" else str(n + (1 if path.arrays == "1" else 0))


def flatten(key: str, value: Any, path: KeyPath, depth: int = 0) -> Iterator[tuple[str, Any]]:
    """(key, leaf) pairs writing ``value`` under ``key``: a non-empty object per member, a non-empty
    array per element (unless arrays are written whole), anything else as it is."""
    if depth < MAX_SEGMENTS and isinstance(value, dict) and value:
        for k, x in value.items():
            yield from flatten(key + path.open + str(k) + path.close, x, path, depth + 1)
    elif depth < MAX_SEGMENTS and isinstance(value, list) and value and path.arrays != "whole":
        for n, x in enumerate(value):
            yield from flatten(key + path.open + _index(path, n) + path.close, x, path, depth + 1)
    else:
        yield key, value


def segment_source(path: KeyPath) -> str:
    """A regex source for one path segment after a key (a child key or an index)."""
    import regex

    chars = r"\w\-" if "." in path.open + path.close else r"\w.\-"
    least = 0 if path.close else 1
    return regex.escape(path.open) + f"[{chars}]{{{least},64}}" + regex.escape(path.close)


def suffix_source(path: KeyPath | None) -> str:
    """A regex source for the path segments a key may go on with ("" without paths)."""
    return "" if path is None else f"(?:{segment_source(path)}){{0,{MAX_SEGMENTS}}}"


def split_path(text: str, path: KeyPath | None, declared: Any = ()) -> list[str] | None:
    """The segments of a path key (the parent key first), or None when ``text`` is a plain key: a
    declared key, a key with no segment, or text that is no well-formed path."""
    if path is None or not path.open or text in declared:
        return None
    op, cl = path.open, path.close
    head = next((k for k in sorted((k for k in declared if isinstance(k, str)), key=len, reverse=True)
                 if k and text.startswith(k + op)), None)
    if head is None:
        i = text.find(op)
        if i <= 0:
            return None
        head = text[:i]
    segs, rest = [head], text[len(head):]
    while rest:
        if not rest.startswith(op) or len(segs) > MAX_SEGMENTS:
            return None
        rest = rest[len(op):]
        if cl:
            j = rest.find(cl)
            if j < 0:
                return None
            seg, rest = rest[:j], rest[j + len(cl):]
        else:
            j = rest.find(op)
            seg, rest = (rest, "") if j < 0 else (rest[:j], rest[j:])
        if not seg and path.arrays != "empty":
            return None
        segs.append(seg)
    return segs


def _types(prop: Any) -> frozenset[str]:
    return schema_types(prop)


def _child(prop: Any, kind: str, seg: str) -> Any:
    """The schema of a container's member ``seg`` (an object's property, an array's items)."""
    if not isinstance(prop, Mapping):
        return None
    if kind == "array":
        return prop.get("items")
    props = prop.get("properties")
    return props.get(seg) if isinstance(props, Mapping) else None


@dataclass
class _Frame:
    kind: str                 # "object" or "array"
    seg: str                  # the segment that opened it ("" for the root)
    prop: Any                 # its schema
    count: int = 0
    keys: set[str] = field(default_factory=set)   # an object's members that held containers
    seen: set[str] = field(default_factory=set)   # an object's members


class PathStack:
    """The arguments' JSON object text, written key by key (see the module's docstring)."""

    def __init__(self, path: KeyPath, props: Mapping[str, Any]) -> None:
        self.path = path
        self.declared = tuple(k for k in props if isinstance(k, str))
        self.frames = [_Frame("object", "", {"type": "object", "properties": props})]
        self.started = False

    def _is_index(self, seg: str) -> bool:
        if self.path.arrays == "whole":
            return False
        return seg == "" if self.path.arrays == "empty" else seg.isascii() and seg.isdigit()

    def _kind(self, prop: Any, seg: str) -> str | None:
        """The kind of a new container whose first member is ``seg`` (None: the schema forbids it)."""
        types = _types(prop)
        index = self._is_index(seg) and (seg == "" or seg == _index(self.path, 0))
        if "array" in types and "object" not in types:
            return "array" if index else None
        if "object" in types and "array" not in types:
            return "object" if seg else None
        return "array" if index else "object" if seg else None

    @staticmethod
    def _same_element(frame: _Frame, segs: list[str], keep: int) -> bool:
        """An element with no index (``rows[][k]=x&rows[][v]=1``) goes on while its members are new."""
        return frame.kind == "object" and segs[keep] not in frame.seen

    def _fits(self, frame: _Frame, seg: str, opens: bool) -> bool:
        """``seg`` is the next member of ``frame`` (a container it opens: one not written before)."""
        if frame.kind == "array":
            return self._is_index(seg) and (seg == "" or seg == _index(self.path, frame.count))
        return not (opens and seg in frame.keys)

    def key(self, text: str) -> tuple[str, Any]:
        """(the JSON text to write before the value of key ``text``, the value's schema)."""
        head = "" if self.started else "{"
        self.started = True
        segs = split_path(text, self.path, self.declared) or [text]
        plan = self._plan(segs)
        if plan is None:   # a plain key, at the top
            return head + self._close(1) + self._member(self.frames[0], text, None), \
                _child(self.frames[0].prop, "object", text)
        keep, kinds = plan
        out = [head, self._close(keep)]
        frame = self.frames[-1]
        prop: Any = frame.prop
        for n in range(keep - 1, len(segs)):
            seg = segs[n]
            prop = _child(frame.prop, frame.kind, seg)
            kind = kinds[n] if n < len(kinds) else None
            out.append(self._member(frame, seg, kind))
            if kind is not None:
                out.append("{" if kind == "object" else "[")
                frame = _Frame(kind, seg, prop)
                self.frames.append(frame)
        return "".join(out), prop

    def _plan(self, segs: list[str]) -> tuple[int, list[str | None]] | None:
        """(the frames kept, each segment's container kind: None for the leaf), or None: plain."""
        if len(segs) > MAX_SEGMENTS:
            return None
        keep = 1
        while keep < len(self.frames) and keep < len(segs) and self.frames[keep].seg == segs[keep - 1] and \
                (segs[keep - 1] != "" or self._same_element(self.frames[keep], segs, keep)) and \
                (self._is_index(segs[keep]) if self.frames[keep].kind == "array" else segs[keep] != ""):
            keep += 1
        kinds: list[str | None] = [None] * len(segs)
        frame = self.frames[keep - 1]
        prop = frame.prop
        kind = frame.kind
        for n in range(keep - 1, len(segs)):
            seg = segs[n]
            last = n == len(segs) - 1
            if n == keep - 1:
                if not self._fits(frame, seg, not last):
                    return None
            elif (kind == "array" and seg != _index(self.path, 0)) or (kind == "object" and not seg):
                return None
            child = _child(prop, kind, seg)
            if not last:
                sub = self._kind(child, segs[n + 1])
                if sub is None:
                    return None
                kinds[n] = kind = sub
                prop = child
        if len(segs) == 1 and keep == 1:
            return None
        return keep, kinds

    def _close(self, keep: int) -> str:
        out = []
        while len(self.frames) > keep:
            out.append("}" if self.frames.pop().kind == "object" else "]")
        return "".join(out)

    def _member(self, frame: _Frame, seg: str, opens: str | None) -> str:
        sep = ", " if frame.count else ""
        frame.count += 1
        if frame.kind == "array":
            return sep
        if opens is not None:
            frame.keys.add(seg)
        frame.seen.add(seg)
        return sep + _escape(seg) + ": "

    def end(self) -> str:
        """What closes the arguments (``{}`` when no key was written)."""
        if not self.started:
            return "{}"
        return self._close(1) + "}"


__all__ = ["MAX_SEGMENTS", "PathStack", "flatten", "segment_source", "split_path", "suffix_source"]
