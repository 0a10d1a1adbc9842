"""A value quoted only when it needs quoting (logfmt, CSV, INI, YAML-ish writers).

``ifneeded("<triggers>",<inner>)`` writes a string bare when it holds none of the `triggers`
characters (and is not empty and does not start with the inner codec's quote), else with the
inner, quoted codec: ``v if v and not (set(v) & set(' ="\\\\')) else v | tojson``.

The trigger set is learned from the probes (:func:`learn_ifneeded`): the characters of the probe
values written quoted that no probe written bare holds. The probes cannot tell every trigger
apart (a quoted probe holds several special characters at once), so the set may hold more
characters than the template's test; that only matters for writing. Reading never relies on it:
a value that starts with the inner codec's quote is read by the inner decoder (it ends at its
closing quote), any other value is the text itself, up to what the layout writes after it (the
codec is not self-delimiting, like ``raw``; :attr:`Codec.delimits_when_opened` tells the readers
that an opened value ends by itself).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence

from .base import Impl, IncrementalDecoder, Step
from .escapes import Json, Quoted
from .lang import ANY, Form, chars
from .plain import Doubled

__all__ = ["IfNeeded", "learn_ifneeded"]


class _IfNeededDecoder(IncrementalDecoder):
    """The inner decoder when the value starts with the quote, else the text as it is."""

    __slots__ = ("_impl", "_inner")

    def __init__(self, impl: IfNeeded) -> None:
        super().__init__()
        self._impl = impl
        self._inner: IncrementalDecoder | None = None

    def _step(self, buf: str, final: bool) -> Step:
        if self._inner is None:
            if not buf:
                return "", None, 0
            if buf[0] != self._impl.quote:
                self._inner = _PASS
            else:
                self._inner = self._impl.inner.decoder()
        if self._inner is _PASS:
            return buf, None, len(buf)
        out, end = self._inner.feed(buf, final)
        self.malformed |= self._inner.malformed
        return out, end, len(buf)


_PASS = IncrementalDecoder()   # marks a bare value (never fed)


class IfNeeded(Impl):
    """``inner`` (a quoted codec) for values holding a trigger character, empty ones and ones
    starting with the quote; the value itself otherwise. Not self-delimiting: a bare value runs to
    what follows it, a quoted one ends at its closing quote (:attr:`delimits_when_opened`)."""

    delimits_when_opened = True

    def __init__(self, triggers: str, inner: Impl) -> None:
        q = inner.openers[0]
        if len(q) != 1 or not inner.self_delimiting or len(inner.openers) != 1:
            raise ValueError("ifneeded: the inner codec must be quoted by one character")
        if not triggers:
            raise ValueError("ifneeded: no trigger characters")
        self.inner, self.quote = inner, q
        self.triggers = frozenset(triggers)
        trig = "".join(sorted(self.triggers))
        self.spec = f"ifneeded({json.dumps(trig)},{inner.spec})"
        self.openers = ("",)
        bare = chars(q, negate=True) if q in self.triggers else ANY
        self.forms = (*inner.forms, Form("", (bare,)))

    def needs(self, s: str) -> bool:
        """Whether the template quotes `s`."""
        return not s or s[0] == self.quote or not self.triggers.isdisjoint(s)

    def encode(self, s: str) -> str:
        return self.inner.encode(s) if self.needs(s) else s

    def decoder(self) -> IncrementalDecoder:
        return _IfNeededDecoder(self)

    def ends_before(self, rendered: str, delimiter: str) -> bool:
        """Whether the value `rendered` reads whole in front of `delimiter`."""
        if rendered[:1] == self.quote:
            _, end = self.inner.decoder().feed(rendered + delimiter, final=True)
            return end == len(rendered)
        return (rendered + delimiter).find(delimiter) == len(rendered)

    @classmethod
    def parse(cls, args: str, lookup: Callable[[str], Impl]) -> IfNeeded:
        """``"TRIGGERS",INNER``; ``lookup`` reads the inner codec's spec (the codec registry's)."""
        try:
            triggers, end = json.JSONDecoder().raw_decode(args)
        except ValueError:
            raise ValueError(f"ifneeded: {args!r}") from None
        if not isinstance(triggers, str) or args[end:end + 1] != ",":
            raise ValueError(f"ifneeded: {args!r}")
        return cls(triggers, lookup(args[end + 1:]))


def _inner_candidates(quoted: Sequence[tuple[str, str]]) -> Iterator[Impl]:
    yield from (Json(a, h) for a, h in ((False, False), (True, False), (True, True), (False, True)))
    flags = [any(c in v for v, _ in quoted) and all(c not in r for v, r in quoted if c in v) for c in "\n\t\r"]
    for q in "\"'":
        for backslash in (True, False):
            yield Quoted(q, backslash, *flags)
        yield Doubled(q)


def learn_ifneeded(samples: Sequence[tuple[str, str]]) -> Iterator[Impl]:
    """Candidates for samples some of which are written as they are and some quoted: the inner
    codecs that write every quoted one, with the triggers the samples show."""
    bare = [v for v, r in samples if v == r]
    quoted = [(v, r) for v, r in samples if v != r]
    if not bare or not quoted:
        return
    plain = set("".join(bare))
    triggers = {c for v, _ in quoted for c in v if c not in plain and not (c.isascii() and c.isalnum())}
    if not triggers or any(triggers.isdisjoint(v) and v and v[0] not in "\"'" for v, _ in quoted):
        return
    trig = "".join(sorted(triggers))
    for inner in _inner_candidates(quoted):
        if all(inner.encode(v) == r for v, r in quoted):
            yield IfNeeded(trig, inner)
