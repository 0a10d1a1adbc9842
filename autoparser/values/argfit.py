"""Arguments written in another shape than the tool's schema: reshaped where the schema says how.

Models write arguments in shapes their template never renders but the request's tool schema
explains (issue 22). Two are read back, each only where the schema leaves no doubt:

* **wrapped once more**: the arguments put in an object under keys the tool does not declare
  (``{"arguments": {...}}``, ``{"input": {...}}``, or a whole call object ``{"name": "f",
  "arguments": {...}}`` in the arguments' place). The object is unwrapped when none of its keys
  is a declared parameter, exactly one member holds an object (or a JSON string holding one),
  every other member is a plain value (a name, a type), and the inner object fits the schema;
* **typed values as strings**: a parameter the schema types as an array or an object (and never
  as a string) written as a JSON string holding that value (``"tags": "[\\"a\\"]"``), or with its
  quotes escaped once more (``"tags": "\\"[\\\\\\"a\\\\\\"]\\""``), is decoded when the decoded
  value has the type the schema asks for.

:class:`ArgsFit` holds what one tool's schema says (built once per tool and request plan, by
the call guard); :meth:`ArgsFit.whole` reshapes decoded arguments. :class:`FitStream` does the same
on the argument text a call reader streams: the text goes out as it comes, except the part that
may still be reshaped (the start of an object until its first key shows whether it is a wrapper,
a whole object with an undeclared first key, a string value of an array- or object-typed
parameter), which is held until it is complete. The stream's output, joined, is what
:meth:`ArgsFit.whole` would make of the whole text (``dumps`` of the reshaped value where
something changed, the text as written elsewhere), so a stream and a parse agree.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Mapping
from typing import Any

from .jsonscan import JsonScanner

WRAPPED = "tool arguments were wrapped in a key the tool does not declare; unwrapped"
STRINGIFIED = "a tool argument the schema types as an array or object was written as a JSON string; decoded"
_CONTAINERS = {"array": list, "object": dict}


def _types(prop: Any) -> list[str]:
    t = prop.get("type") if isinstance(prop, Mapping) else None
    if isinstance(t, str):
        return [t]
    return [x for x in t if isinstance(x, str)] if isinstance(t, list) else []


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def string_container(text: str, wanted: tuple[type, ...]) -> Any:
    """The container (of one of the ``wanted`` classes) that ``text``, a JSON value's text, holds
    as a JSON string, or holding it escaped once more (twice: a value spelled raw, the text of a JSON
    string of a JSON string), or its own text with its quotes escaped once more and no quotes around
    it (``[{\\"id\\": 1}]``); None when it holds none."""
    body = text.strip()
    if body[:1] in "[{" and body[-1:] in "]}" and '\\"' in body:
        try:
            json.loads(body)
        except (ValueError, RecursionError):   # (read as the JSON string it would be inside quotes)
            return string_container('"' + body + '"', wanted)
    value: Any = text
    for _ in range(3):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            return None
        if isinstance(value, wanted):
            return value
        if not isinstance(value, str):
            return None
    return None


class ArgsFit:
    """What one tool's ``parameters`` schema says about arguments written in another shape.

    ``fits(value)`` says whether an object follows the schema (the call guard's check)."""

    def __init__(self, schema: Mapping[str, Any], fits: Callable[[Any], bool]) -> None:
        props = schema.get("properties") if isinstance(schema, Mapping) else None
        props = props if isinstance(props, Mapping) else {}
        extra = schema.get("additionalProperties", False) if isinstance(schema, Mapping) else False
        # a wrapper can be told apart only when the schema names its keys and takes no others
        self.declared: frozenset[str] | None = frozenset(props) if props and extra is False else None
        self.decoded: dict[str, tuple[type, ...]] = {}   # parameter -> the container classes it takes
        for key, prop in props.items():
            types = _types(prop)
            wanted = tuple(_CONTAINERS[t] for t in types if t in _CONTAINERS)
            if wanted and "string" not in types:
                self.decoded[key] = wanted
        self.fits = fits

    @property
    def active(self) -> bool:
        """The schema may reshape something."""
        return self.declared is not None or bool(self.decoded)

    def wrapper_key(self, key: object) -> bool:
        """``key``, the first key of the arguments, is none the tool declares: the object may be a wrapper."""
        return self.declared is not None and key not in self.declared

    def decodes(self, key: object) -> bool:
        """A string written for parameter ``key`` may hold its value."""
        return key in self.decoded

    def member(self, key: str, value: Any) -> Any:
        """The value of parameter ``key``, decoded from a JSON string when the schema wants a container
        there and the string holds one (``_NOT`` when it does not)."""
        wanted = self.decoded.get(key)
        if wanted is None or not isinstance(value, str):
            return _NOT
        found = string_container(value, wanted)
        return _NOT if found is None else found

    def whole(self, value: Any) -> tuple[Any, list[str]] | None:
        """Decoded arguments reshaped, with a note per repair; None when nothing changes."""
        if not isinstance(value, dict):
            return None
        notes: list[str] = []
        inner = self._unwrapped(value)
        if inner is None and (not self.decoded or not any(isinstance(v, str) and k in self.decoded
                                                          for k, v in value.items())):
            return None     # no wrapper, no string where the schema wants a container: nothing changes
        if inner is not None:
            value = inner
            notes.append(WRAPPED)
        out = {}
        for key, v in value.items():
            new = self.member(key, v)
            if new is not _NOT:
                notes.append(STRINGIFIED)
                v = new
            out[key] = v
        return (out, list(dict.fromkeys(notes))) if notes else None

    def _unwrapped(self, value: dict[str, Any]) -> dict[str, Any] | None:
        if self.declared is None or not value or not self.declared.isdisjoint(value):
            return None
        inner = None
        for v in value.values():
            if isinstance(v, str) and v.lstrip().startswith("{"):
                try:
                    v = json.loads(v)
                except (ValueError, RecursionError):
                    return None
            if isinstance(v, dict):
                if inner is not None:
                    return None      # two objects: no one of them is the arguments
                inner = v
            elif not _plain(v):
                return None
        if inner is None:
            return None
        fixed = {k: (v if (new := self.member(k, v)) is _NOT else new) for k, v in inner.items()}
        return fixed if self.fits(fixed) else None


_NOT: Any = object()   # "no decoded value"


class FitStream:
    """Argument text (one JSON value, streamed) reshaped by an :class:`ArgsFit` as it comes.

    ``feed(text)`` returns what may go out now; ``flush()`` what was held, at the end. ``notes``
    collects the repairs made (each once). Each character is scanned once (the scanner records
    the spans of the object's members; the members are looked at once each)."""

    def __init__(self, fit: ArgsFit) -> None:
        self.fit = fit
        self.scanner = JsonScanner(track_depth=1)
        self.sent = 0          # how much of the scanner's text has gone out
        self.done = False      # the value is complete: text passes as it comes
        self.raw = False       # no object, or no reshaping: the text goes out as written
        self.notes: list[str] = []
        self._seen = 0         # spans looked at
        self._members: list[tuple[object, list[int]]] = []   # (key, span) of the object's members, in order
        self._next = 0         # the first member not yet sent
        self._whole: bool | None = None   # held whole (its first key is none the tool declares)

    def feed(self, text: str) -> str:
        if self.raw or self.done:
            return text
        sc = self.scanner
        end = sc.feed(text)
        root = sc.spans.get(())
        if sc.failed or (root is None and sc.text.strip()) or (root is not None and sc.text[root[0]] != "{"):
            return self._pass()     # no object: nothing to reshape
        if root is None:
            return ""
        self._collect()
        if self._whole is None and self._members:
            self._whole = self.fit.wrapper_key(self._members[0][0])
        if end is None:
            return "" if self._whole is not False else self._out(sc.commit)
        self.done = True
        return (self._whole_value(end) if self._whole else self._out(end)) + sc.text[end:]

    def flush(self) -> str:
        """The output ended: what was held goes out as written."""
        if self.raw or self.done:
            return ""
        self.done = True
        return self._pass()

    def _pass(self) -> str:
        self.raw = True
        out = self.scanner.text[self.sent:]
        self.sent = len(self.scanner.text)
        return out

    def _collect(self) -> None:
        spans = self.scanner.spans
        if len(spans) == self._seen:
            return
        for path, span in itertools.islice(spans.items(), self._seen, None):
            if len(path) == 1:
                self._members.append((path[0], span))
        self._seen = len(spans)

    def _out(self, limit: int) -> str:
        """The text up to ``limit``, a member whose string may hold its value decoded once complete
        (held until then)."""
        sc, out = self.scanner, []
        while self._next < len(self._members):
            key, (begin, stop) = self._members[self._next]
            if begin >= limit:
                break
            if self.fit.decodes(key) and sc.text[begin] == '"':
                if stop < 0:
                    limit = begin
                    break
                out.append(sc.text[self.sent:begin])
                out.append(self._member(str(key), sc.text[begin:stop]))
                self.sent = stop
            self._next += 1
        if limit > self.sent:
            out.append(sc.text[self.sent:limit])
            self.sent = limit
        return "".join(out)

    def _member(self, key: str, raw: str) -> str:
        try:
            value = json.loads(raw, strict=False)
        except ValueError:
            return raw
        new = self.fit.member(key, value)
        if new is _NOT:
            return raw
        self._note(STRINGIFIED)
        return json.dumps(new, ensure_ascii=False)

    def _whole_value(self, end: int) -> str:
        """The object held whole, reshaped as one value."""
        text = self.scanner.text[:end]
        self.sent = end
        try:
            value = json.loads(text, strict=False)
        except (ValueError, RecursionError):
            return text
        shaped = self.fit.whole(value)
        if shaped is None:
            return text
        for note in shaped[1]:
            self._note(note)
        return json.dumps(shaped[0], ensure_ascii=False)

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)


__all__ = ["STRINGIFIED", "WRAPPED", "ArgsFit", "FitStream", "string_container"]
