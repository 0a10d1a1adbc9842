"""Raw text up to one of several stop texts, as GBNF (:func:`raw_until`): the values a
:class:`~.spelled.Speller` prints that do not delimit themselves run through what follows them."""

from __future__ import annotations

from .gbnf import ANY_CHAR, GbnfBuilder, char_class


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)

def raw_until(b: GbnfBuilder, stops: tuple[tuple[str, str, bool], ...], banned: tuple[str, ...]) -> str:
    """Raw text, then one of `stops` (text, what follows it, first): a ``first`` stop ends the text
    where it first occurs (the text never holds it); another may come anywhere (the text may hold
    it too). The text never holds a `banned` one; a ``first`` stop that holds one (the value's own
    closing text, then the next item's start) goes on past it exactly. An Aho-Corasick automaton
    over the texts."""
    def make() -> str:
        firsts: dict[str, list[str]] = {}
        for text, cont, first in stops:
            if first:
                firsts.setdefault(text, []).append(cont)
        for text in banned:
            firsts.setdefault(text, [])
        # spelled one character class at a time: a literal would be one llguidance lexeme that
        # outruns, then hides, the text going on after a near miss (``</parameter>\n<parameter=``)
        ends = [_join(*(char_class([c]) for c in text), cont) for text, cont, first in stops if not first]
        texts = list(firsts)
        states = sorted({t[:i] for t in texts for i in range(len(t))}, key=lambda u: (len(u), u))
        alphabet = sorted({c for t in texts for c in t})
        names = {u: b.reserve("raw-until") for u in states}
        for u in states:
            alts = list(ends)
            to: dict[str, list[str]] = {}
            done: dict[str, list[str]] = {}
            blocked: list[str] = []
            for c in alphabet:
                seen = u + c
                completed = [t for t in texts if seen.endswith(t)]
                if completed:
                    blocked.append(c)
                    for cont in dict.fromkeys(x for t in completed for x in firsts[t]):
                        done.setdefault(cont, []).append(c)
                    for text, cont, first in stops:
                        for ban in completed:
                            j = text.find(ban) + len(ban) if first and ban in banned else -1
                            if len(ban) <= j < len(text) and seen.endswith(text[:j]):
                                done.setdefault(_join(*(char_class([x]) for x in text[j:]), cont), []).append(c)
                    continue
                v = next(seen[i:] for i in range(len(seen) + 1) if seen[i:] in names)
                if v:
                    blocked.append(c)
                    to.setdefault(v, []).append(c)
            alts.append(f"{char_class(blocked, negate=True)} {names['']}" if blocked else f"{ANY_CHAR} {names['']}")
            alts += [f"{char_class(cs)} {names[v]}" for v, cs in to.items()]
            alts += [_join(char_class(cs), cont) for cont, cs in done.items()]
            b.define(names[u], " | ".join(alts))
        return names[""]
    return b.cached(("raw-until", stops, banned), make)


__all__ = ["raw_until"]
