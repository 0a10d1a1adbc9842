"""A POSIX shell word as ``shlex.quote`` writes it, read back as the shell reads a word."""

from __future__ import annotations

import re
import shlex

from .base import Impl, IncrementalDecoder, Step
from .lang import ANY, Alt, Cat, Form, Lit, Node, Star, chars

__all__ = ["Shell"]

# characters that end an unquoted word, besides the quotes and the backslash that continue it
_ENDS = " \t\n\r\f\v;&|<>()"
_BARE_RUN = re.compile("[^" + re.escape(_ENDS + "'\"\\") + "]+")
_DQ_RUN = re.compile(r'[^"\\]+')
_DQ_ESCAPES = frozenset('"\\$`\n')

OUT, SQ, DQ = 0, 1, 2


class _ShellDecoder(IncrementalDecoder):
    """Reads one word: unquoted runs, ``'...'``, ``"..."`` (``\\`` escapes ``" \\ $ ``` and a newline),
    and ``\\c`` outside quotes; the word ends before an unquoted space or ``; & | < > ( )``."""

    __slots__ = ("_state",)

    def __init__(self) -> None:
        super().__init__()
        self._state = OUT

    @property
    def inside(self) -> bool:
        return self._state != OUT

    def _step(self, buf: str, final: bool) -> Step:
        out: list[str] = []
        i, n = 0, len(buf)
        while i < n:
            state = self._state
            if state == SQ:
                j = buf.find("'", i)
                if j < 0:
                    out.append(buf[i:])
                    i = n
                    break
                out.append(buf[i:j])
                i, self._state = j + 1, OUT
                continue
            run = (_BARE_RUN if state == OUT else _DQ_RUN).match(buf, i)
            if run is not None:
                out.append(run.group())
                i = run.end()
                if i >= n:
                    break
            c = buf[i]
            if c == "\\":
                if i + 1 >= n:
                    if not final:
                        return "".join(out), None, i
                    out.append("\\")
                    self.malformed = True
                    i += 1
                    break
                nxt = buf[i + 1]
                if state == DQ and nxt not in _DQ_ESCAPES:
                    out.append("\\" + nxt)
                elif nxt != "\n":
                    out.append(nxt)
                i += 2
            elif state == DQ:                 # the closing double quote
                i, self._state = i + 1, OUT
            elif c == "'":
                i, self._state = i + 1, SQ
            elif c == '"':
                i, self._state = i + 1, DQ
            else:                             # an unquoted space or operator: the word ends
                return "".join(out), i, n
        if final:
            self.malformed |= self._state != OUT
            return "".join(out), n, n
        return "".join(out), None, n


class Shell(Impl):
    """A shell word as ``shlex.quote`` writes it: bare when it holds only ``A-Z a-z 0-9 _ @ % + = : ,
    . / -``, else in single quotes with each ``'`` written ``'"'"'`` (a host's ``shlex.quote``
    filter). ``shell(sq)`` always single-quotes (``"'" ~ v | replace("'", "'\"'\"'") ~ "'"``),
    ``shell(sq,bs)`` writes a quote ``'\\''``. Self-delimiting: the word ends before an unquoted
    space or shell operator; any POSIX quoting decodes."""

    self_delimiting = True
    openers = ("",)

    def __init__(self, mode: str = "") -> None:
        if mode not in ("", "sq", "sq,bs"):
            raise ValueError(f"shell: {mode!r}")
        self.mode = mode
        self.spec = f"shell({mode})" if mode else "shell"
        self._quote = "'\\''" if mode == "sq,bs" else "'\"'\"'"
        word: tuple[Node, ...] = (
            chars(_ENDS + "'\"\\", negate=True),
            Cat((Lit("'"), Star(chars("'", negate=True)), Lit("'"))),
            Cat((Lit('"'), Star(Alt((chars('"\\', negate=True), Cat((Lit("\\"), ANY))))), Lit('"'))),
            Cat((Lit("\\"), ANY)),
        )
        self.forms = (Form("", word, min1=True),)

    def encode(self, s: str) -> str:
        if not self.mode:
            return shlex.quote(s)
        return "'" + s.replace("'", self._quote) + "'"

    def decoder(self) -> IncrementalDecoder:
        return _ShellDecoder()
