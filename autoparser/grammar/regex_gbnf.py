"""GBNF for a small regex: a format's ``name_in_id`` pattern (``functions.NAME:0``), with its
``name`` group replaced by the request's tool names. Literals, classes, groups, alternation and
repetition (unbounded ones capped at :data:`ID_MAX`) are converted; anchors are dropped."""

from __future__ import annotations

import sys
from typing import Any

from .gbnf import ANY_CHAR, char_class, literal
from .schema import _group

if sys.version_info >= (3, 11):
    import re._constants as sre_c
    import re._parser as sre_parse
else:  # Python 3.10
    import sre_constants as sre_c
    import sre_parse

ID_MAX = 64            # a call id written between markers (and the cap on an id pattern's repetitions)


_CATEGORY_CHARS = {
    sre_c.CATEGORY_DIGIT: "0123456789",
    sre_c.CATEGORY_SPACE: " \t\n\r\f\v",
    sre_c.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
}


def _regex_gbnf(pattern: str, names: tuple[str, ...]) -> str:
    """GBNF for a small regex (``name_in_id``) with its ``name`` group replaced by `names`.

    Literals, classes, groups, alternation and repetition (unbounded ones capped) are
    converted; anchors are dropped; anything else raises ValueError.
    """
    tree = sre_parse.parse(pattern)
    name_group = tree.state.groupdict.get("name")

    def klass(items: list[tuple[Any, Any]]) -> str:
        chars: set[str] = set()
        negate = False
        for op, av in items:
            if op is sre_c.NEGATE:
                negate = True
            elif op is sre_c.LITERAL:
                chars.add(chr(av))
            elif op is sre_c.RANGE and av[1] - av[0] < 4096:
                chars.update(chr(c) for c in range(av[0], av[1] + 1))
            elif op is sre_c.CATEGORY and av in _CATEGORY_CHARS:
                chars.update(_CATEGORY_CHARS[av])
            else:
                raise ValueError(f"unsupported class item {op}")
        return char_class(chars, negate=negate)

    def seq(items: Any) -> str:
        return " ".join(filter(None, (node(op, av) for op, av in items)))

    def node(op: Any, av: Any) -> str:
        if op is sre_c.LITERAL:
            return literal(chr(av))
        if op is sre_c.NOT_LITERAL:
            return char_class([chr(av)], negate=True)
        if op is sre_c.ANY:
            return ANY_CHAR
        if op is sre_c.IN:
            return klass(av)
        if op is sre_c.CATEGORY:
            return klass([(op, av)])
        if op is sre_c.AT:
            return ""
        if op is sre_c.SUBPATTERN:
            group, _add, _del, sub = av
            if group is not None and group == name_group:
                return _group([literal(n) for n in names])
            inner = seq(sub)
            return f"( {inner} )" if inner else ""
        if op is sre_c.BRANCH:
            alts = [seq(s) or '""' for s in av[1]]
            return "( " + " | ".join(alts) + " )"
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            inner = seq(sub)
            if not inner:
                return ""
            hi = lo + ID_MAX if hi is sre_c.MAXREPEAT or hi > lo + ID_MAX else hi
            if (lo, hi) == (0, 1):
                return f"( {inner} )?"
            return f"( {inner} ){{{lo},{hi}}}"
        raise ValueError(f"unsupported regex construct {op}")

    out = seq(tree)
    if not out:
        raise ValueError("empty pattern")
    return f"( {out} )"


__all__ = ["ID_MAX", "_regex_gbnf"]
