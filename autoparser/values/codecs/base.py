"""What every codec implementation provides, and the incremental decoder they share.

A codec implementation (:class:`Impl`) encodes a Python string as a template writes it and hands
out :class:`IncrementalDecoder` s reading that text back. The public face is
:class:`autoparser.values.codecs.Codec`, which stores only the spec string and looks the
implementation up.
"""

from __future__ import annotations

from .lang import Form

__all__ = ["Impl", "IncrementalDecoder", "Step"]

# what one decoding step returns: (decoded text, index just past the value or None, index from
# which the text is held back when the value has not ended)
Step = tuple[str, "int | None", int]


class IncrementalDecoder:
    """Decode the continuation of one encoded value, a piece at a time.

    ``feed(text, final)`` returns the text decoded so far as far as it is certain (an escape cut
    by the end of ``text``, such as ``\\``, ``%4`` or ``&am``, is held back until the next piece)
    and, once the value's end is seen (a self-delimiting codec), the index in ``text`` just past
    it; the decoder then stops consuming and later feeds return ``("", None)``. The index is
    negative only when the value ended inside text held back from an earlier piece (a value
    ``doubled(',bare)`` reads waits for the character after a quote). With ``final`` the text
    ends there: what is held back is decoded as literal text, and a self-delimiting value ends
    at the end of the text. ``malformed`` is set when an escape could not be decoded (it is kept
    as literal text), a quoted value ended unclosed, or a value did not start with its opener.
    Every character is looked at a bounded number of times over all feeds: linear time, and
    pieces decode to what the whole text decodes to.
    """

    __slots__ = ("_fed", "_pending", "end", "malformed")

    def __init__(self) -> None:
        self.malformed = False
        self.end: int | None = None      # absolute index (over all feeds) just past the value
        self._pending = ""
        self._fed = 0

    @property
    def done(self) -> bool:
        """Whether the value's end was found."""
        return self.end is not None

    @property
    def inside(self) -> bool:
        """Whether the text fed so far ends inside a quoted part of a value that has no opener of its
        own (a shell word's ``'...'``): no text there can end the value."""
        return False

    def feed(self, text: str, final: bool = False) -> tuple[str, int | None]:
        """Decode `text`, the continuation of the value; see the class docstring."""
        if self.end is not None:
            return "", None
        buf = self._pending + text if self._pending else text
        shift = len(buf) - len(text)
        out, stop, keep = self._step(buf, final)
        start = self._fed - shift
        self._fed += len(text)
        if stop is not None:
            self._pending = ""
            self.end = start + stop
            return out, stop - shift
        self._pending = buf[keep:]
        return out, None

    def _step(self, buf: str, final: bool) -> Step:
        """Decode `buf` (held-back text + the new piece); subclasses implement."""
        raise NotImplementedError


class Impl:
    """One codec: encoder, decoder factory and the language of its encodings.

    ``self_delimiting``: the decoder finds the end of the value itself (a closing quote, or the
    first character that cannot continue the value, such as an unquoted space after a shell word);
    ``openers``: the texts a value may start with ("" in the tuple when it has no fixed opener).
    """

    spec = ""
    self_delimiting = False
    openers: tuple[str, ...] = ("",)
    forms: tuple[Form, ...] = ()

    def encode(self, s: str) -> str:
        raise NotImplementedError

    def decoder(self) -> IncrementalDecoder:
        raise NotImplementedError
