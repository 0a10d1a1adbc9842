"""Codecs without backslashes: raw text, quotes escaped by doubling, and a learned substitution table."""

from __future__ import annotations

import itertools
import json
import re
from functools import lru_cache

from .base import Impl, IncrementalDecoder, Step
from .lang import ANY, Form, Lit, Node, chars

__all__ = ["Doubled", "Raw", "Table", "prefix_free"]


class _RawDecoder(IncrementalDecoder):
    __slots__ = ()

    def _step(self, buf: str, final: bool) -> Step:
        return buf, None, len(buf)


class Raw(Impl):
    """The text itself (``{{ v }}``): not self-delimiting; the value ends where the layout's next
    literal starts, so it is readable only when no value holds that literal."""

    spec = "raw"
    forms = (Form("", (ANY,)),)

    def encode(self, s: str) -> str:
        return s

    def decoder(self) -> IncrementalDecoder:
        return _RawDecoder()


@lru_cache(maxsize=8)
def _not(q: str) -> re.Pattern[str]:
    return re.compile("[^" + re.escape(q) + "]+")


class _DoubledDecoder(IncrementalDecoder):
    """Reads ``'it''s'`` (or, bare, ``it''s`` up to the single quote that follows it)."""

    __slots__ = ("_bare", "_inside", "_q", "_run")

    def __init__(self, q: str, bare: bool) -> None:
        super().__init__()
        self._q, self._bare, self._inside = q, bare, bare
        self._run = _not(q)

    def _step(self, buf: str, final: bool) -> Step:
        i, n, q = 0, len(buf), self._q
        if not self._inside:
            if not buf:
                self.malformed |= final
                return "", (0 if final else None), 0
            self._inside = True
            if buf[0] == q:
                i = 1
            else:
                self.malformed = True
        out: list[str] = []
        while i < n:
            m = self._run.match(buf, i)
            if m is not None:
                out.append(m.group())
                i = m.end()
                if i >= n:
                    break
            if i + 1 < n and buf[i + 1] == q:
                out.append(q)
                i += 2
                continue
            if i + 1 >= n and not final:
                return "".join(out), None, i
            return "".join(out), (i if self._bare else i + 1), n
        if final:
            self.malformed |= not self._bare
            return "".join(out), n, n
        return "".join(out), None, n


class Doubled(Impl):
    """A string in quote `q` where the quote is written twice (``'it''s'``, SQL and CSV style:
    ``"'" ~ v | replace("'", "''") ~ "'"``); nothing else is escaped. ``bare``: the quotes belong to
    the layout and the value ends before a single quote."""

    def __init__(self, q: str, bare: bool = False) -> None:
        if len(q) != 1 or q not in "\"'`":
            raise ValueError(f"doubled: quote {q!r}")
        self.q, self.bare = q, bare
        self.spec = f"doubled({q},bare)" if bare else f"doubled({q})"
        self.self_delimiting = True
        self.openers = ("",) if bare else (q,)
        items: tuple[Node, ...] = (chars(q, negate=True), Lit(q + q))
        self.forms = (Form("", items),) if bare else (Form(q, items, q),)

    def encode(self, s: str) -> str:
        body = s.replace(self.q, self.q + self.q)
        return body if self.bare else self.q + body + self.q

    def decoder(self) -> IncrementalDecoder:
        return _DoubledDecoder(self.q, self.bare)

    @classmethod
    def parse(cls, args: str) -> Doubled:
        q, _, flag = args.partition(",")
        if flag not in ("", "bare"):
            raise ValueError(f"doubled: {args!r}")
        return cls(q, flag == "bare")


def prefix_free(table: dict[str, str]) -> bool:
    """Whether a substitution table decodes unambiguously: every replacement is non-empty and starts
    with a character that is itself replaced (so never stands for itself), and no replacement is a
    prefix of another."""
    words = sorted(w for c, w in table.items() if w != c)
    if any(not w or table.get(w[0], w[0]) == w[0] for w in words):
        return False
    return all(not b.startswith(a) for a, b in itertools.pairwise(words))


class _TableDecoder(IncrementalDecoder):
    __slots__ = ("_impl", "_inside")

    def __init__(self, impl: Table) -> None:
        super().__init__()
        self._impl = impl
        self._inside = not impl.opener

    def _step(self, buf: str, final: bool) -> Step:
        impl, out, i, n = self._impl, [], 0, len(buf)
        if not self._inside:
            if not final and len(buf) < len(impl.opener) and impl.opener.startswith(buf):
                return "", None, 0
            self._inside = True
            if buf.startswith(impl.opener):
                i = len(impl.opener)
            else:
                self.malformed = True
        closer = impl.closer
        while i < n:
            m = impl.run.match(buf, i)
            if m is not None:
                out.append(m.group())
                i = m.end()
                if i >= n:
                    break
            c = buf[i]
            if closer and c == closer[0]:
                if buf.startswith(closer, i):
                    return "".join(out), i + len(closer), n
                if not final and i + len(closer) > n and closer.startswith(buf[i:]):
                    return "".join(out), None, i
            for word, decoded in impl.by_first.get(c, ()):
                if buf.startswith(word, i):
                    out.append(decoded)
                    i += len(word)
                    break
                if not final and i + len(word) > n and word.startswith(buf[i:]):
                    return "".join(out), None, i
            else:
                out.append(c)
                self.malformed = True
                i += 1
        if final and closer:
            self.malformed = True
            return "".join(out), n, n
        return "".join(out), None, n


MAX_WORD = 64


class Table(Impl):
    """A substitution learned from the probes, character by character (a template's own ``replace``
    chain that no other codec names, e.g. ``v | replace('&', '&amp;') | replace('<', '&lt;')`` with
    ``>`` left alone). Characters not in the table stand for themselves. Used only when the table
    is prefix-free (:func:`prefix_free`). Open (``table({...})``, not self-delimiting) or framed by
    an opener and a closer the template writes around it (``table("'",{...},"'")``, e.g.
    ``"'" ~ v | replace('\\', '\\\\') | replace("'", "\\'") | replace('"', '\\"') ~ "'"``): then
    self-delimiting, which needs the closer's first character replaced in the body and starting
    no replacement."""

    def __init__(self, table: dict[str, str], opener: str = "", closer: str = "") -> None:
        self.table = {c: w for c, w in table.items() if w != c}
        if (not self.table or any(len(c) != 1 for c in self.table) or not prefix_free(self.table)
                or any(len(w) > MAX_WORD for w in self.table.values())):
            raise ValueError("table: empty, not prefix-free, or with a replacement too long")
        firsts = "".join(sorted({w[0] for w in self.table.values()}))
        if bool(opener) != bool(closer) or (closer and (closer[0] not in self.table or closer[0] in firsts)):
            raise ValueError("table: a closer must come with an opener and start with a replaced character")
        self.opener, self.closer = opener, closer
        body = json.dumps(self.table, sort_keys=True)
        self.spec = f"table({json.dumps(opener)},{body},{json.dumps(closer)})" if closer else f"table({body})"
        self.self_delimiting = bool(closer)
        self.openers = (opener,)
        self._map = str.maketrans(self.table)
        self.run = re.compile("[^" + re.escape(firsts + closer[:1]) + "]+")
        self.by_first: dict[str, list[tuple[str, str]]] = {f: [] for f in firsts}
        for c, w in sorted(self.table.items(), key=lambda cw: cw[1]):
            self.by_first[w[0]].append((w, c))
        items: tuple[Node, ...] = (chars(self.table, negate=True), *(Lit(w) for w in sorted(self.table.values())))
        self.forms = (Form(opener, items, closer),)

    def encode(self, s: str) -> str:
        return self.opener + s.translate(self._map) + self.closer

    def decoder(self) -> IncrementalDecoder:
        return _TableDecoder(self)

    @classmethod
    def parse(cls, args: str) -> Table:
        try:
            parts = json.loads("[" + args + "]")
        except ValueError:
            raise ValueError(f"table: {args!r}") from None
        if len(parts) == 1:
            parts = ["", parts[0], ""]
        if (len(parts) != 3 or not isinstance(parts[1], dict) or not isinstance(parts[0], str)
                or not isinstance(parts[2], str) or not all(isinstance(w, str) for w in parts[1].values())):
            raise ValueError(f"table: {args!r}")
        return cls(parts[1], parts[0], parts[2])
