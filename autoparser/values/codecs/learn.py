"""Learning a value codec from probe renderings: the first candidate that reproduces every sample.

The analysis renders :data:`PROBE_STRINGS` as argument values (one call, one argument each), cuts
each value's text out of the rendering and calls :func:`learn_codec` with the (value, rendered)
pairs and the literal texts that follow the value in the layout. Candidates are tried in the
order below, simplest first; each is *checked*: its ``encode`` must give every rendered text
exactly, its ``decode`` must give every value back, and the value must be readable in front of
each delimiter (a self-delimiting codec's decoder stops right before it; any other codec's
encoding must not hold it). Candidates:

1. ``raw``;
2. ``json``, ``json(ascii)``, ``json(ascii,html)``, ``json(html)``, then the same with ``bare``;
3. ``python`` (``repr``);
4. ``quoted(q,...)`` for ``q`` in ``" ' ``` (quoted, then bare), the newline / tab / CR flags
   read off the samples, with the backslash escaped and then not;
5. ``doubled(')``, ``doubled(")``, then bare;
6. ``shell`` (``shlex.quote``), ``shell(sq)``, ``shell(sq,bs)``, ``shell(dq)``, ``shell(dq,bare)``;
7. ``percent(%20)``, ``percent(plus)``, ``percent(%20,safe=)``, ``percent(plus,safe=/)``;
8. ``entities(html)``, ``entities(xml)``, ``entities(quot,#x27)``, ``entities(quot,-)``,
   ``entities(quot,apos)``, then the other quote spellings;
9. ``ifneeded(...)``: some samples written as they are, the others by a quoted codec (JSON,
   quoted, doubled quotes): quoted only when needed (:mod:`.ifneeded`);
10. ``escaped(...)``: the characters the samples show with a backslash before them;
11. ``table(...)``: a substitution learned from the samples (prefix-free ones only), framed by
    the opener and closer all renderings share, if any.

Which probe tells which apart (see :data:`PROBE_STRINGS`): ``Q"R`` and ``Q'R`` give the quote
choice of ``python`` against ``quoted``, the quote spellings of ``entities`` and the ``'"'"'``
of ``shell``; ``Q`R\\S$T`` whether the backslash is escaped and the ``$`` / backtick escapes of
``shell(dq)``; the control probe the ``nl``/``tab``/``cr`` flags and ``json`` against ``quoted``
(``\\u001b``); the separator probe ``%20`` against ``+``, and the markup ``entities`` against
``table``; the non-ASCII probe ``ascii`` and percent's UTF-8; the bracket probe ``html``-safe
JSON against plain; the shell-safe probe ``shlex``'s bare words and percent's ``safe`` set.
Letters ``Q``-``Z`` between the special characters anchor the table learner (no escape holds them).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

from .base import Impl
from .codec import Codec
from .escapes import Escaped, Json, Python, Quoted, ShellDouble
from .ifneeded import IfNeeded, learn_ifneeded
from .plain import Doubled, Raw, Table
from .shell import Shell
from .web import Entities, Percent

__all__ = ["PROBE_STRINGS", "CodecChoice", "learn_codec", "learn_codec_explained"]

PROBE_STRINGS: tuple[str, ...] = (
    'Q"R',                         # double quote alone: python picks '...'
    "Q'R",                         # single quote alone: python picks "...", shell's '"'"'
    "Q`R\\S$T",                    # backtick, backslash (before a letter), dollar
    "Q\nR\tS\rT\x1bU",             # newline, tab, CR, a control character
    "Q R,S&T=U;V<W>X",             # space, separators, markup
    "Qé中R😀S",                    # accented letter, CJK, emoji (outside the BMP)
    "Q{R}S[T]U(V)W!X*Y",           # brackets and marks
    "Q=R,S.T/U-V:W@X%Y+Z",         # only what shlex leaves bare; / + % for percent's safe set
    "42",                          # looks like a number
    "true",                        # looks like a boolean
)

_ENTITY_ORDER = (("#34", "#39"), ("-", "-"), ("quot", "#x27"), ("quot", "-"), ("quot", "apos"))


@lru_cache(maxsize=1)
def _fixed() -> tuple[tuple[Impl, ...], tuple[Impl, ...]]:
    """The candidates that need no sample to build: those before the quoted family, those after."""
    jsons = (Json(a, h, bare) for bare in (False, True) for a, h in ((False, False), (True, False), (True, True), (False, True)))
    entities = [*_ENTITY_ORDER, *((dq, sq) for dq in ("-", "quot", "#34", "#x22") for sq in ("-", "apos", "#39", "#x27")
                                  if (dq, sq) not in _ENTITY_ORDER)]
    return (Raw(), *jsons, Python()), (
        *(Doubled(q, bare) for bare in (False, True) for q in "'\""),
        Shell(), Shell("sq"), Shell("sq,bs"), ShellDouble(), ShellDouble(bare=True),
        Percent(), Percent(plus=True), Percent(safe=""), Percent(plus=True, safe="/"),
        *(Entities(dq, sq) for dq, sq in entities))


_PIECE = re.compile(r"[A-Za-z0-9]+|[^A-Za-z0-9]+")
_AFTER_BACKSLASH = re.compile(r"(?<=\\)[\s\S]")
_ALNUM = re.compile(r"[A-Za-z0-9]")


@dataclass(frozen=True)
class CodecChoice:
    """What :func:`learn_codec_explained` found: the codec, or None and why not. ``clashes`` lists
    (spec, delimiter) for candidates that reproduce every sample but cannot be read back in front
    of that delimiter (a value's encoding holds it, or the decoder reads past it)."""

    codec: Codec | None
    reason: str = ""
    clashes: tuple[tuple[str, str], ...] = ()


def _quoted(samples: Sequence[tuple[str, str]]) -> Iterator[Impl]:
    """Quoted candidates, the newline / tab / CR flags read off the samples that hold one."""
    flags = []
    for c in "\n\t\r":
        shown = [r for v, r in samples if c in v]
        flags.append(bool(shown) and all(c not in r for r in shown))
    for bare in (False, True):
        for q in "\"'`":
            if not bare and not all(len(r) >= 2 and r[0] == q == r[-1] for _, r in samples):
                continue
            for backslash in (True, False):
                yield _quoted_impl(q, backslash, *flags, bare)


@lru_cache(maxsize=128)
def _quoted_impl(q: str, backslash: bool, nl: bool, tab: bool, cr: bool, bare: bool) -> Quoted:
    return Quoted(q, backslash, nl, tab, cr, bare)


def _escaped(samples: Sequence[tuple[str, str]]) -> Iterator[Impl]:
    """The backslash-escaped candidate: the characters the samples write with a backslash before."""
    shown = {c for v, r in samples for c in set(v) & set(_AFTER_BACKSLASH.findall(r)) if not c.isalnum()}
    if shown - {"\\"}:
        yield Escaped("".join(shown))


def _runs(samples: Sequence[tuple[str, str]]) -> list[tuple[str, str]] | None:
    """(run of special characters, its rendered text) for each sample, aligned on the ASCII letters
    and digits around the runs (they stand for themselves); None when they do not align."""
    runs: list[tuple[str, str]] = []
    for v, r in samples:
        pos, pending = 0, ""
        for m in _PIECE.finditer(v):
            text = m.group()
            if text[0].isascii() and text[0].isalnum():
                j = r.find(text, pos) if pending else (pos if r.startswith(text, pos) else -1)
                if j < 0:
                    return None
                if pending:
                    runs.append((pending, r[pos:j]))
                pos, pending = j + len(text), ""
            else:
                pending = text
        if pending:
            runs.append((pending, r[pos:]))
        elif pos != len(r):
            return None
    return runs


def _solve(run: str, word: str, table: dict[str, str]) -> bool | None:
    """Learn the one unknown character of `run` from its rendered `word` (True), find nothing to
    learn (False: all known, or too many unknown) or a contradiction (None)."""
    unknown = {c for c in run if c not in table}
    if not unknown:
        return False
    if len(unknown) > 1:
        return False
    c = unknown.pop()
    i = run.index(c)
    head = "".join(table[x] for x in run[:i])
    if run.count(c) > 1 or not word.startswith(head):
        return None
    tail = "".join(table.get(x, "") for x in run[i + 1:])
    if len(word) < len(head) + len(tail) or not word.endswith(tail):
        return None
    table[c] = word[len(head):len(word) - len(tail)]
    return True


def _common_prefix(texts: list[str]) -> str:
    low, high = min(texts), max(texts)
    i = 0
    while i < len(low) and low[i] == high[i]:
        i += 1
    return low[:i]


def _first_alnum(text: str) -> int:
    m = _ALNUM.search(text)
    return m.start() if m is not None else len(text)


def _frame(samples: Sequence[tuple[str, str]]) -> tuple[str, str]:
    """The text every rendering starts with and ends with, up to the first letter or digit."""
    texts = [r for _, r in samples]
    head = _common_prefix(texts)
    tail = _common_prefix([t[::-1] for t in texts])[::-1]
    head = head[:_first_alnum(head)]
    tail = tail[len(tail) - _first_alnum(tail[::-1]):]
    if not head or not tail or any(len(t) < len(head) + len(tail) for t in texts):
        return "", ""
    return head, tail


def _learn_table(samples: Sequence[tuple[str, str]]) -> dict[str, str] | None:
    """The substitution the samples show (special characters between ASCII letters and digits)."""
    runs = _runs(samples)
    if runs is None:
        return None
    table: dict[str, str] = {}
    todo = []
    for run, word in runs:
        if len(run) > 1:
            todo.append((run, word))
        elif table.setdefault(run, word) != word:
            return None
    while todo:
        left = []
        for run, word in todo:
            got = _solve(run, word, table)
            if got is None:
                return None
            if not got and any(c not in table for c in run):
                left.append((run, word))
        if len(left) == len(todo):
            if any(word != run for run, word in left):
                return None
            table.update({c: c for run, _ in left for c in run if c not in table})
            break
        todo = left
    return {c: w for c, w in table.items() if w != c}


def _table(samples: Sequence[tuple[str, str]]) -> Iterator[Impl]:
    """A learned table, framed by the opener and closer every rendering shares if there are some."""
    opener, closer = _frame(samples)
    body = [(v, r[len(opener):len(r) - len(closer)]) for v, r in samples] if closer else samples
    table = _learn_table(body)
    if table:
        try:
            yield Table(table, opener, closer)
        except ValueError:
            return


def _candidates(samples: Sequence[tuple[str, str]]) -> Iterator[Impl]:
    head, tail = _fixed()
    yield from head
    yield from _quoted(samples)
    yield from tail
    yield from learn_ifneeded(samples)
    yield from _escaped(samples)
    yield from _table(samples)


def _clash(impl: Impl, samples: Sequence[tuple[str, str]], delimiters: Sequence[str]) -> str | None:
    """A delimiter some value cannot be read in front of, or None."""
    for d in delimiters:
        for _, r in samples:
            if isinstance(impl, IfNeeded):
                if not impl.ends_before(r, d):
                    return d
            elif impl.self_delimiting:
                _, end = impl.decoder().feed(r + d, final=True)
                if end != len(r):
                    return d
            elif (r + d).find(d) != len(r):
                return d
    return None


def _reads_back(impl: Impl, samples: Sequence[tuple[str, str]]) -> bool:
    for v, r in samples:
        dec = impl.decoder()
        text, end = dec.feed(r, final=True)
        if text != v or dec.malformed or (end is not None and end != len(r)):
            return False
    return True


def learn_codec_explained(samples: Sequence[tuple[str, str]], delimiters: Sequence[str] = ()) -> CodecChoice:
    """The first candidate (module docstring) whose ``encode`` reproduces every (value, rendered)
    sample, whose ``decode`` gives every value back and that can be read in front of every
    delimiter; or None with the reason."""
    if not samples:
        return CodecChoice(None, "no samples")
    delimiters = [d for d in delimiters if d]
    clashes: list[tuple[str, str]] = []
    for impl in _candidates(samples):
        if not all(impl.encode(v) == r for v, r in samples) or not _reads_back(impl, samples):
            continue
        clash = _clash(impl, samples, delimiters)
        if clash is None:
            return CodecChoice(Codec(impl.spec), "", tuple(clashes))
        clashes.append((impl.spec, clash))
    if clashes:
        specs = ", ".join(f"{spec} (before {d!r})" for spec, d in clashes)
        return CodecChoice(None, f"the samples fit {specs}, but a value could not be read back in front of the delimiter",
                           tuple(clashes))
    return CodecChoice(None, "no candidate codec reproduces every sample")


def learn_codec(samples: Sequence[tuple[str, str]], delimiters: Sequence[str] = ()) -> Codec | None:
    """The codec of :func:`learn_codec_explained`, or None."""
    return learn_codec_explained(samples, delimiters).codec
