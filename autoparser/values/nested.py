"""Reading arrays and objects written in the encoding's own syntax (``{k = "v", n = 1}``,
``(:k "v" :n 1)``, ``<k>v</k><n>1</n>``): a recursive descent over the :class:`~.spelling.Items`
of :class:`~.spelling.Values` (``nested == "own"``), its leaves spelled as the values say.

:func:`parse_own` reads one whole value and returns None when the text is not one. White space
around the literals is tolerated; the depth and the work are bounded (untrusted text).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

import regex

from .codecs import Codec
from .written import KEY_AGAIN, MAX_DEPTH, NUMBER, Items, Values

_MAX_STEPS = 100_000
_KEY = regex.compile(r"[\w.\-$@]{1,128}")
_KEY_MAX = 256


class _Fail(Exception):
    pass


class _Parser:
    def __init__(self, text: str, values: Values) -> None:
        self.text = text
        self.values = values
        self.i = 0
        self.steps = 0
        self.budget = 8 * len(text) + 2000   # characters the parse may look at, backtracking included
        self.string = Codec.from_spec(values.string.codec)
        self.types: Callable[[Any], frozenset[str]] | None = None   # the JSON types a schema allows

    # ---------------------------------------------------------------- literals
    def _tick(self, cost: int = 1) -> None:
        self.steps += cost
        if self.steps > min(_MAX_STEPS, self.budget):
            raise _Fail

    def ws(self) -> None:
        t, i = self.text, self.i
        while i < len(t) and t[i] in " \t\r\n":
            i += 1
        self.i = i

    def at(self, lit: str) -> bool:
        """``lit`` (white space around it tolerated) is next; consumed when it is."""
        if not lit:
            return True
        save = self.i
        core = lit.strip()
        if not core:
            self.ws()
            return True
        self.ws()
        if self.text.startswith(core, self.i):
            self.i += len(core)
            return True
        self.i = save
        return False

    def peek(self, lit: str) -> bool:
        save = self.i
        ok = bool(lit.strip()) and self.at(lit)
        self.i = save
        return ok

    # ---------------------------------------------------------------- values
    def value(self, depth: int, stops: tuple[str, ...], bare_ok: bool = True, prop: Any = None) -> Any:
        self._tick()
        if depth > MAX_DEPTH:
            raise _Fail
        v = self.values
        kinds = self.types(prop) & {"object", "array"} if self.types is not None and prop is not None else frozenset()
        # the schema's container first (``<item>a</item>`` is an array of one where it declares one)
        for items in ((v.array, v.object) if kinds == {"array"} else (v.object, v.array)):
            bare = bare_ok and items is not None and items is v.array and _bare(items)
            if items is not None and (items.open.strip() or items.item_pre.strip() or bare):
                save = self.i
                try:
                    got = self.container(items, depth, stops, prop)
                    if bare and len(got) < 2:
                        raise _Fail   # one value and no brackets: the value itself
                    return got
                except _Fail:
                    self.i = save
        self.ws()
        got = self.leaf(stops)
        if got == "" and kinds and self.types is not None and "string" not in self.types(prop) and empty_is_nothing(v):
            return [] if kinds == {"array"} else {}   # (no item and nothing around: ``<tags></tags>``)
        return got

    def container(self, items: Items, depth: int, stops: tuple[str, ...], prop: Any = None) -> Any:
        if not self.at(items.open):
            raise _Fail
        out_obj: dict[str, Any] = {}
        out_arr: list[Any] = []
        inner_stops = tuple(s for s in (items.item_post.replace(KEY_AGAIN, ""), items.sep, items.close) if s.strip())
        first = True
        bare = _bare(items)
        while True:
            self._tick()
            if items.close.strip() and self.at(items.close):
                break
            save = self.i
            if bare and not first:
                # values side by side (``"a" "b"``): the separator exactly, not any white space
                if not self.text.startswith(items.sep, self.i):
                    break
                self.i += len(items.sep)
            elif not first and not self.at(items.sep):
                if items.close.strip():
                    raise _Fail
                break   # no close: the container ends where no next item begins
            framed = self.framed(items, depth, stops, prop, out_obj) if items.frames and items.keyed else None
            if framed is not None:
                first = False
                out_obj[framed[0]] = framed[1]
                if self._last(items):
                    break
                continue
            if not self.at(items.item_pre):
                if items.close.strip() or first:
                    raise _Fail
                self.i = save
                break
            key = ""
            null = items.keyed and bool(items.null_item.strip()) and self.null_key(items.null_item)
            if null:
                key = null
                if key in out_obj:
                    raise _Fail
            elif items.keyed:
                try:
                    key = self.key(items.kv)
                except _Fail:
                    if items.close.strip() or first:
                        raise
                    self.i = save   # (no key after the item's opening text: the enclosing item's closing text)
                    break
                if key in out_obj:
                    raise _Fail     # a key written twice is no object (``<item>a</item><item>b</item>``)
            first = False
            post = items.item_post.replace(KEY_AGAIN, key)
            value = None if null else \
                self.value(depth + 1, tuple(s for s in (post, *inner_stops) if s.strip()) or stops, not bare,
                           _member(prop, key if items.keyed else None))
            if not null and not self.at(post):
                raise _Fail
            if items.keyed:
                out_obj[key] = value
            else:
                out_arr.append(value)
            if self._last(items):
                break
        return out_obj if items.keyed else out_arr

    def _last(self, items: Items) -> bool:
        """A container with no closing text ends here: no next item begins (or the text ends)."""
        if items.close.strip():
            return False
        if (items.sep + items.item_pre).strip() and \
                not any(self.peek(items.sep + pre) for pre in (items.item_pre, *(f.item_pre for f in items.frames))):
            return True
        return self.i >= len(self.text)

    def framed(self, items: Items, depth: int, stops: tuple[str, ...], prop: Any, seen: dict[str, Any]
               ) -> tuple[str, Any] | None:
        """A member written in a frame of its own (:class:`~.written.Frame`: its value always a container
        of that kind), after the separator, consumed; None (nothing consumed) when none is next."""
        save = self.i
        for fr in items.frames:
            cont = self.values.object if fr.kind == "object" else self.values.array
            if cont is None:
                continue
            self.i = save
            try:
                if not self.at(fr.item_pre):
                    continue
                key = self.key(fr.kv)
                if key in seen:
                    continue
                post = fr.item_post.replace(KEY_AGAIN, key)
                inner = tuple(s for s in (post, *stops) if s.strip())
                value = self.container(cont, depth + 1, inner, _member(prop, key))
                if self.at(post):
                    return key, value
            except _Fail:
                continue
        self.i = save
        return None

    def null_key(self, null_item: str) -> str:
        """The key of a null member written as an item of its own shape (``kz/>`` after ``<``),
        consumed with that text; "" (nothing consumed) when none is next."""
        save = self.i
        self.ws()
        core = null_item.strip()
        j = self.text.find(core, self.i, self.i + _KEY_MAX)
        self._tick(_KEY_MAX // 8)
        key = self.text[self.i:j].strip() if j >= 0 else ""
        if key and _KEY.fullmatch(key):
            self.i = j
            if self.at(null_item):
                return key
        self.i = save
        return ""

    def key(self, kv: str) -> str:
        self.ws()
        core = kv.strip()
        if not core:
            j = self.i
            while j < len(self.text) and self.text[j] not in " \t\r\n":
                j += 1
        else:
            j = self.text.find(core, self.i, self.i + _KEY_MAX)
            self._tick(_KEY_MAX // 8)
            if j < 0:
                raise _Fail
        key = self.text[self.i:j].strip()
        if not _KEY.fullmatch(key):
            raise _Fail   # a key is a name: text holding brackets or quotes is something else
        self.i = j
        if not self.at(kv):
            raise _Fail
        return key

    def leaf(self, stops: tuple[str, ...]) -> Any:
        v, t = self.values, self.text
        s = v.string
        if self.string.self_delimiting:
            opener = s.pre + self.string.opener
            if opener and t.startswith(opener, self.i):
                dec = self.string.decoder()
                out, end = dec.feed(t[self.i + len(s.pre):], True)
                self._tick(len(out) + 1)
                if end is None:
                    raise _Fail
                self.i += len(s.pre) + end
                if s.post and not self.at(s.post):
                    raise _Fail
                return out
        for spelled, value in sorted(((v.true, True), (v.false, False), (v.null, None)),
                                     key=lambda sv: -len(sv[0])):
            core = spelled.strip()
            if core and t.startswith(core, self.i) and self._boundary(self.i + len(core), stops):
                self.i += len(core)
                return value
        for n in (v.integer, v.number):
            if n is None or not t.startswith(n.pre, self.i):
                continue
            m = NUMBER.match(t, self.i + len(n.pre))
            if m is not None and t.startswith(n.post, m.end()) and self._boundary(m.end() + len(n.post), stops):
                self.i = m.end() + len(n.post)
                return json.loads(m.group())
        if s.pre.strip() and s.post.strip() and t.startswith(s.pre, self.i):
            # a string between its own texts (``<str>...</str>``): up to its closing text
            j = t.find(s.post, self.i + len(s.pre))
            if j >= 0:
                body = t[self.i + len(s.pre):j]
                self.i = j + len(s.post)
                return self.string.decode(body)
        # a string written raw (or quoted with no escapes): up to what may follow it
        end = min((j for j in (t.find(x.strip(), self.i) for x in stops if x.strip()) if j >= 0), default=len(t))
        self._tick(end - self.i + 1)
        raw = t[self.i:end].rstrip()
        self.i = end
        body = raw[len(s.pre): len(raw) - len(s.post)] if s.pre and raw.startswith(s.pre) and s.post and \
            raw.endswith(s.post) else raw
        return self.string.decode(body)

    def _boundary(self, j: int, stops: tuple[str, ...]) -> bool:
        t = self.text
        if j >= len(t) or not (t[j].isalnum() or t[j] == "_"):
            return True
        return any(t.startswith(x.strip(), j) for x in stops if x.strip())


def _bare(items: Items) -> bool:
    """An array written as its values side by side, with no brackets (``tags "a" "b"``)."""
    return not items.keyed and not (items.open + items.item_pre + items.close).strip() and bool(items.sep)


def _member(prop: Any, key: str | None) -> Any:
    """The schema of a member of a container of schema `prop`: the property `key`, or an array's items."""
    if not isinstance(prop, Mapping):
        return None
    sub = prop.get("properties") if key is not None else prop.get("items")
    return (sub.get(key) if isinstance(sub, Mapping) else None) if key is not None else sub


def empty_is_nothing(values: Values) -> bool:
    """Both own containers write nothing around no item (``<tags></tags>``: the item's own text alone)."""
    return all(x is not None and not (x.open + x.close).strip() for x in (values.array, values.object))


def own_openers(values: Values) -> tuple[str, ...]:
    """The texts an array or object in the encoding's own syntax begins with, when each begins with a
    tag or bracket of its own (``<item>``, ``<``, ``{``): such a value's items are not the call's next item."""
    if values.nested != "own":
        return ()
    out = []
    for items in (values.object, values.array):
        head = (items.open + items.item_pre).lstrip() if items is not None else ""
        if head[:1] in ("<", "[", "{", "("):
            out.append(head)
    return tuple(out)


def parse_own(text: str, values: Values, prop: Any = None,
              types: Callable[[Any], frozenset[str]] | None = None, kind: str = "") -> Any:
    """The array or object ``text`` writes in ``values``' own syntax (a container of `kind` when given: a
    value written in a frame of its own, :class:`~.written.Frame`), or None; `prop`: its JSON schema,
    `types`: the JSON types a schema allows (which container to read first where both may write the
    text: ``<item>a</item>`` is an array of one where the schema declares one)."""
    if values.array is None and values.object is None:
        return None
    p = _Parser(text, values)
    p.types = types
    forced = values.object if kind == "object" else values.array if kind == "array" else None
    try:
        value = p.container(forced, 0, (), prop) if forced is not None else p.value(0, (), True, prop)
    except _Fail:
        return None
    p.ws()
    if p.i != len(text) or not isinstance(value, (dict, list)):
        return None
    return value


__all__ = ["empty_is_nothing", "own_openers", "parse_own"]
