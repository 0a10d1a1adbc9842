"""The public codec value: a spec string naming one implementation, hashable and JSON-serialisable."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from .base import Impl, IncrementalDecoder
from .escapes import Escaped, Json, Python, Quoted, ShellDouble
from .ifneeded import IfNeeded
from .lang import Form, ascii_only, may_write, never_contains, regex_source
from .plain import Doubled, Raw, Table
from .shell import Shell
from .web import Entities, Percent

__all__ = ["Codec", "lookup"]


def _no_args(make: Callable[[], Impl]) -> Callable[[str], Impl]:
    def parse(args: str) -> Impl:
        if args:
            raise ValueError(f"unexpected arguments {args!r}")
        return make()
    return parse


def _shell(args: str) -> Impl:
    if args in ("", "sq", "sq,bs"):
        return Shell(args)
    if args in ("dq", "dq,bare"):
        return ShellDouble(bare=args == "dq,bare")
    raise ValueError(f"shell: {args!r}")


def _ifneeded(args: str) -> Impl:
    return IfNeeded.parse(args, lookup)


_FAMILIES: dict[str, Callable[[str], Impl]] = {
    "raw": _no_args(Raw), "json": Json.parse, "python": _no_args(Python), "quoted": Quoted.parse,
    "doubled": Doubled.parse, "shell": _shell, "percent": Percent.parse, "entities": Entities.parse,
    "escaped": Escaped.parse, "table": Table.parse, "ifneeded": _ifneeded,
}


@lru_cache(maxsize=512)
def lookup(spec: str) -> Impl:
    """The implementation a spec names (ValueError for an unknown or malformed spec)."""
    name, paren, rest = spec.partition("(")
    if paren and not rest.endswith(")"):
        raise ValueError(f"codec spec {spec!r}: no closing parenthesis")
    family = _FAMILIES.get(name)
    if family is None:
        raise ValueError(f"codec spec {spec!r}: unknown codec {name!r}")
    return family(rest[:-1] if paren else "")


@dataclass(frozen=True)
class Codec:
    """How a template writes a string value, and how to read it back.

    Stored as its ``spec`` (``"json"``, ``"quoted(\\",backslash,nl)"``, ``"percent(plus)"``...; see
    the package docstring for the list); ``Codec.from_spec`` reads one back and ``Codec(spec)``
    accepts only the canonical spelling ``from_spec(...).spec``.
    """

    spec: str

    def __post_init__(self) -> None:
        if lookup(self.spec).spec != self.spec:
            raise ValueError(f"codec spec {self.spec!r} is not canonical: {lookup(self.spec).spec!r}")

    @classmethod
    def from_spec(cls, spec: str) -> Codec:
        """The codec a spec names, in any accepted spelling (``entities(#34,#39)`` is ``entities(html)``)."""
        return cls(lookup(spec).spec)

    @property
    def _impl(self) -> Impl:
        return lookup(self.spec)

    @property
    def kind(self) -> str:
        """The family: raw, json, python, quoted, doubled, shell, percent, entities, escaped, table, ifneeded."""
        return self.spec.partition("(")[0]

    @property
    def self_delimiting(self) -> bool:
        """Whether the encoded text says where it ends (a closing quote, or a character that cannot
        continue it, like the space after a shell word): the decoder reports the end."""
        return self._impl.self_delimiting

    @property
    def delimits_when_opened(self) -> bool:
        """Whether a value that starts with :attr:`quote` ends by itself (at its closing quote) though
        the codec is not self-delimiting (``ifneeded``: quoted only when needed, else bare)."""
        return getattr(self._impl, "delimits_when_opened", False)

    @property
    def quote(self) -> str:
        """The opener of a value that ends by itself: :attr:`opener` for a self-delimiting codec, the
        inner codec's quote for ``ifneeded``; "" otherwise."""
        impl = self._impl
        return impl.openers[0] if impl.self_delimiting else str(getattr(impl, "quote", ""))

    @property
    def when_opened(self) -> Codec:
        """The codec of a value that starts with :attr:`quote`: the inner, quoted codec for
        ``ifneeded``, the codec itself otherwise."""
        inner = getattr(self._impl, "inner", None)
        return Codec(inner.spec) if isinstance(inner, Impl) else self

    @property
    def openers(self) -> tuple[str, ...]:
        """The texts an encoded value starts with; ``("",)`` when it has no fixed opener."""
        return self._impl.openers

    @property
    def opener(self) -> str:
        """The first opener (``'"'``, ``"'"``), "" when the value has no fixed opener."""
        return self._impl.openers[0]

    @property
    def forms(self) -> tuple[Form, ...]:
        """The language of the encodings (for the grammar printers)."""
        return self._impl.forms

    @property
    def never_contains(self) -> frozenset[str]:
        """ASCII characters that appear nowhere in any encoded value, not even inside an escape or as
        its quotes (percent-encoding: space, ``& = ; < >``...): the first one ends a value that is
        not self-delimiting."""
        return never_contains(self._impl.forms)

    @property
    def ascii_only(self) -> bool:
        """Whether every encoded value is ASCII (so it never holds a non-ASCII character either)."""
        return ascii_only(self._impl.forms)

    def may_contain(self, c: str) -> bool:
        """Whether an encoded value may hold the character `c` raw."""
        return any(may_write(f, c) for f in self._impl.forms)

    def encode(self, s: str) -> str:
        """Exactly what the template writes for the string `s`."""
        return self._impl.encode(s)

    @property
    def white_words(self) -> tuple[str, ...]:
        """What the codec writes, all white space, for a white space character it does not write as
        itself (a folded line break ``⏎\t``), longest first: at a value's end such text is the
        value's, not padding before what ends it."""
        words = {w for c in "\n\r\t " if (w := self.encode(c)) != c and w and not w.strip()}
        return tuple(sorted(words, key=lambda w: (-len(w), w)))

    def decode_checked(self, text: str) -> tuple[str, bool]:
        """The string `text` encodes, and whether it was well formed. Never raises: an escape that
        does not decode stays as literal text, text after a self-delimiting value is kept as it is."""
        dec = self._impl.decoder()
        value, end = dec.feed(text, final=True)
        if end is not None and end < len(text):
            return value + text[end:], False
        return value, not dec.malformed

    def decode(self, text: str) -> str:
        """The string `text` encodes (see :meth:`decode_checked`)."""
        return self.decode_checked(text)[0]

    def decoder(self) -> IncrementalDecoder:
        """A fresh incremental decoder (see :class:`IncrementalDecoder`)."""
        return self._impl.decoder()

    def regex_source(self, until: str = "") -> str:
        """A linear-time ``regex`` source matching one complete encoded value; for a codec that is not
        self-delimiting, `until` (the text that follows the value) may not start inside it."""
        return regex_source(self._impl.forms, "" if self._impl.self_delimiting else until)
