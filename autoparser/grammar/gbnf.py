"""Tiny GBNF builder: named rules, literals, character classes and delimiter automata.

The output is meant for llama.cpp's grammar sampler and must also load in llguidance
(our CI validator), so it keeps to the subset both accept:

* rule names match ``[a-z0-9-]+`` (llama.cpp rejects ``_``), never start with a digit
  and are never ``start`` (llguidance renames ``root`` to ``start``);
* one rule per line; no ``*``/``+``: repetition is ``{m,n}``, ``?`` or right recursion;
* no ``.`` (llguidance's ``.`` skips newlines; use ``char_class((), negate=True)``) and
  no ``\\u`` escapes (llguidance mangles them): non-ASCII characters are raw UTF-8.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable

NAME_RE = re.compile(r"[a-z0-9-]+")
RESERVED_NAMES = frozenset({"start"})
MAX_CODE_POINT = 0x10FFFF

_TOKEN_RE = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|\{[^}]*\}|[A-Za-z0-9_-]+|\s+|.', re.S)
_LITERAL_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
_CLASS_ESCAPES = {"\\": "\\\\", "]": "\\]", "[": "\\[", "^": "\\x5E", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def sanitize_name(name: str) -> str:
    """Map any text to a valid rule name: lowercase ``[a-z0-9-]``, not starting with a digit."""
    clean = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-") or "rule"
    return f"r-{clean}" if clean[0].isdigit() else clean


def _escape_char(c: str, table: dict[str, str]) -> str:
    """Escape one character with `table`, then control characters as ``\\xHH``."""
    if c in table:
        return table[c]
    code = ord(c)
    return f"\\x{code:02X}" if code < 0x20 or code == 0x7F else c


# :func:`_escape_char` with ``_LITERAL_ESCAPES`` as one translation table (one pass in C)
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_LITERAL_TABLE = {ord(c): _escape_char(c, _LITERAL_ESCAPES) for c in [*map(chr, range(0x20)), "\x7f", '"', "\\"]}


def literal(s: str) -> str:
    """GBNF string literal for `s` (quotes, backslashes and control characters escaped)."""
    if _CONTROL.search(s) is None:     # most literals: two passes in C
        return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return '"' + s.translate(_LITERAL_TABLE) + '"'


def _range_end(code: int) -> str:
    """A range endpoint ('-' escaped: Rust regex, hence llguidance, reads '--' as an operator)."""
    return "\\x2D" if code == 0x2D else _escape_char(chr(code), _CLASS_ESCAPES)


def _class_items(ranges: list[tuple[int, int]]) -> str:
    """Class contents for code point ranges; a lone '-' goes last, where it is literal."""
    items, dash = [], False
    for lo, hi in ranges:
        if hi - lo >= 2:
            items.append(f"{_range_end(lo)}-{_range_end(hi)}")
            continue
        for code in range(lo, hi + 1):
            dash = dash or code == 0x2D
            if code != 0x2D:
                items.append(_escape_char(chr(code), _CLASS_ESCAPES))
    return "".join(items) + ("-" if dash else "")


def _runs(points: list[int]) -> list[tuple[int, int]]:
    """Group sorted code points into consecutive runs."""
    runs: list[tuple[int, int]] = []
    for p in points:
        if runs and runs[-1][1] == p - 1:
            runs[-1] = (runs[-1][0], p)
        else:
            runs.append((p, p))
    return runs


def _complement(points: list[int]) -> list[tuple[int, int]]:
    """Code point ranges not in sorted `points` (surrogates, which UTF-8 cannot hold, left out)."""
    gaps, start = [], 0
    for p in [*points, MAX_CODE_POINT + 1]:
        if p > start:
            gaps.append((start, p - 1))
        start = p + 1
    out = []
    for lo, hi in gaps:
        out += [(lo, min(hi, 0xD7FF))] if lo < 0xD800 else []
        out += [(max(lo, 0xE000), hi)] if hi > 0xDFFF else []
    return out


def char_class(chars: Iterable[str], negate: bool = False) -> str:
    """Character class matching one of `chars` (or, negated, any other character).

    A negated set with non-ASCII members is written as positive ranges: llama.cpp
    checks a token that ends inside a multi-byte character against a negated class as
    if every character sharing those leading bytes were meant ([^é] refuses a split "ü").
    """
    points = sorted({ord(c) for c in chars})
    if negate and (not points or points[-1] >= 0x80):
        return "[" + _class_items(_complement(points)) + "]"
    if not points:
        raise ValueError("empty character class")
    return "[" + ("^" if negate else "") + _class_items(_runs(points)) + "]"


def rule_refs(body: str) -> list[str]:
    """Rule names referenced by a rule body, in order of first appearance."""
    refs: dict[str, None] = {}
    for token in _TOKEN_RE.findall(body):
        if token[0] not in '"[{' and (token[0].isalnum() or token[0] in "_-"):
            refs[token] = None
    return list(refs)


def _kmp_row(delimiter: str, state: int, exclude: str = "") -> dict[str, int]:
    """Next KMP state for each character of `delimiter`, from `state` matched characters
    (-1 for a character of `exclude`: it may not come at all)."""
    row: dict[str, int] = {c: -1 for c in exclude}
    for c in sorted(set(delimiter) - set(exclude)):
        seen = delimiter[:state] + c
        k = len(seen)
        while k and not seen.endswith(delimiter[:k]):
            k -= 1
        row[c] = k
    return row


def _state_body(row: dict[str, int], names: list[str], through: bool) -> str:
    """Body of one automaton state; reaching len(names) means the delimiter was seen."""
    targets: dict[int, list[str]] = {}
    for c, j in row.items():
        targets.setdefault(j, []).append(c)
    alts = [] if through else [""]
    for j in sorted(targets):
        if j < 0:
            continue
        if j == len(names):
            if through:
                alts.append(char_class(targets[j]))
        elif j:
            alts.append(f"{char_class(targets[j])} {names[j]}")
    moving = [c for c, j in row.items() if j]    # and the excluded characters (-1)
    alts.append(f"{char_class(moving, negate=True)} {names[0]}")
    return " | ".join(alts).strip()


class GbnfBuilder:
    """Collects named GBNF rules and renders the part reachable from a root."""

    def __init__(self) -> None:
        self._rules: dict[str, str | None] = {}
        self._by_body: dict[str, str] = {}
        self._aliases: dict[str, str] = {}
        self._cache: dict[Hashable, str] = {}

    literal = staticmethod(literal)
    char_class = staticmethod(char_class)

    @property
    def rules(self) -> dict[str, str]:
        """Defined rules, name -> body, in registration order."""
        return {name: body for name, body in self._rules.items() if body is not None}

    def __contains__(self, name: str) -> bool:
        return name in self._rules or name in self._aliases

    def reserve(self, name: str) -> str:
        """Claim a fresh rule name derived from `name`; define its body later."""
        base = sanitize_name(name)
        candidate, n = base, 0
        while candidate in self._rules or candidate in RESERVED_NAMES:
            n += 1
            candidate = f"{base}-{n}"
        self._rules[candidate] = None
        return candidate

    def define(self, name: str, body: str) -> str:
        """Set the body of a reserved rule (bodies may refer to the rule itself)."""
        body = _check_body(body)
        current = self._rules.get(name, "")
        if current is not None and current != body:
            raise ValueError(f"rule {name!r} is not reserved or already has another body")
        self._rules[name] = body
        self._by_body.setdefault(body, name)
        return name

    def rule(self, name: str, body: str) -> str:
        """Register a rule and return its final name; identical bodies share one rule."""
        body = _check_body(body)
        base = sanitize_name(name)
        if self._rules.get(base) == body:
            return base
        existing = self._by_body.get(body)
        if existing is not None:
            self._aliases.setdefault(base, existing)
            return existing
        return self.define(self.reserve(base), body)

    def recursive_rule(self, name: str, make_body: Callable[[str], str], key: Hashable | None = None) -> str:
        """Define a rule whose body refers to itself: `make_body` gets the final name.

        With a `key`, later calls with the same key return the first rule.
        """
        if key is not None and key in self._cache:
            return self._cache[key]
        final = self.reserve(name)
        if key is not None:
            self._cache[key] = final
        return self.define(final, make_body(final))

    def cached(self, key: Hashable, make: Callable[[], str]) -> str:
        """Memoize a rule-producing call under `key` (per builder)."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def until(self, delimiter: str) -> str:
        """Rule matching any text (possibly empty) that does not contain `delimiter`.

        When the delimiter itself comes next, use :meth:`string_until` instead:
        ``until(d) d`` over-accepts for self-overlapping delimiters ("x\n</p>\n</p>\n"
        with d = "\n</p>\n") and llguidance's greedy lexer rejects near misses such as
        "</thi" in front of a literal "</think>" (llama.cpp accepts them).
        """
        return self._automaton(delimiter, through=False)

    def line_until(self, delimiter: str) -> str:
        """Like :meth:`until`, on one line: the text holds no line break either."""
        return self._automaton(delimiter, through=False, exclude="\r\n")

    def string_until(self, delimiter: str) -> str:
        """Rule matching text that ends with `delimiter`, at its first occurrence."""
        return self._automaton(delimiter, through=True)

    def _automaton(self, delimiter: str, through: bool, exclude: str = "") -> str:
        """One rule per matched-prefix state of `delimiter` (KMP over code points)."""
        if not delimiter or set(delimiter) & set(exclude):
            raise ValueError("empty delimiter, or one holding an excluded character")
        kind = "through" if through else ("line-until" if exclude else "until")
        return self.cached((kind, delimiter, exclude),
                           lambda: self._build_automaton(delimiter, kind, through, exclude))

    def _build_automaton(self, delimiter: str, kind: str, through: bool, exclude: str = "") -> str:
        """Reserve state names, then define each state."""
        n = 1
        while f"{kind}-{n}" in self._rules:
            n += 1
        base = self.reserve(f"{kind}-{n}")
        width = max(2, len(str(len(delimiter) - 1)))
        names = [base] + [self.reserve(f"{base}-{i:0{width}d}") for i in range(1, len(delimiter))]
        for state, name in enumerate(names):
            self.define(name, _state_body(_kmp_row(delimiter, state, exclude), names, through))
        return base

    def resolve(self, name: str) -> str:
        """Defined rule behind `name` (following dedup aliases)."""
        if self._rules.get(name) is not None:
            return name
        if name in self._aliases:
            return self._aliases[name]
        raise ValueError(f"undefined rule {name!r}")

    def reachable(self, root: str = "root") -> list[str]:
        """Rule names reachable from `root`, breadth first, root first."""
        order = [self.resolve(root)]
        for name in order:
            for ref in rule_refs(self._rules[name] or ""):
                if self._rules.get(ref) is None:
                    raise ValueError(f"rule {name!r} refers to undefined rule {ref!r}")
                if ref not in order:
                    order.append(ref)
        return order

    def render(self, root: str = "root") -> str:
        """GBNF text: a rule named `root` first, then every rule reachable from it."""
        order = self.reachable(root)
        lines = [] if order[0] == root else [f"{root} ::= {order[0]}"]
        lines += [f"{name} ::= {self._rules[name]}" for name in order]
        return "\n".join(lines) + "\n"


def _check_body(body: str) -> str:
    """Normalize a rule body and reject what cannot live on one GBNF line."""
    body = body.strip()
    if "\n" in body or "\r" in body:
        raise ValueError("rule bodies must be single-line (escape newlines in literals)")
    return body


ANY_CHAR = char_class((), negate=True)
