"""The text of a parsimonious grammar: terminals (literals, regexes, markers), rule names and the
rule set one request's PEG is written into (:class:`_Rules`); shared by :mod:`.peg` and
:mod:`.peg_layout`."""

from __future__ import annotations

import json
from typing import Any

import regex

from .. import ir
from .. import markers as mk

_CONTROL = {"\n": "n", "\r": "r", "\t": "t"}


def _lit(s: str) -> str:
    """A parsimonious string literal for ``s``."""
    return json.dumps(s, ensure_ascii=False)


def _rx(src: str) -> str:
    """A parsimonious regex terminal (``~r"..."``) for the regex source ``src``."""
    out: list[str] = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if c == "\\" and i + 1 < n:
            nxt = src[i + 1]
            out.append("\\" + _CONTROL.get(nxt, nxt) if nxt in _CONTROL or nxt.isprintable() else f"\\x{ord(nxt):02x}")
            i += 2
            continue
        if c == '"':
            out.append('\\"')
        elif c in _CONTROL:
            out.append("\\" + _CONTROL[c])
        elif not c.isprintable() and c != " ":
            out.append(f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
        else:
            out.append(c)
        i += 1
    return '~r"' + "".join(out) + '"'


# JSON values as PEG rules; string and number tokens are regular, so they are regex terminals.
_DQ_STRING = r'"(?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*"'
_SQ_STRING = r"'(?:[^'\\\n]|\\.)*'"     # Python's repr of a string
_JSON_RULES = {
    "json_value": "json_object / json_array / json_string / json_number / json_literal",
    "json_object": '"{" ws (json_member (ws "," ws json_member)*)? ws "}"',
    "json_member": 'json_string ws ":" ws json_value',
    "json_array": '"[" ws (json_value (ws "," ws json_value)*)? ws "]"',
    "json_string": _rx(_DQ_STRING),
    "json_number": _rx(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"),
    "json_literal": '"true" / "false" / "null"',
}
# ... and the Python spellings a template that prints ``{{ arguments }}`` produces
_PYTHON_JSON = {"json_string": f"{_rx(_DQ_STRING)} / {_rx(_SQ_STRING)}",
                "json_literal": '"true" / "false" / "null" / "True" / "False" / "None"'}


def _alts(items: list[str]) -> str:
    return items[0] if len(items) == 1 else "(" + " / ".join(items) + ")"


def _seq(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _rule_name(key: str) -> str:
    return regex.sub(r"[^A-Za-z0-9_]+", "_", key).strip("_").lower() or "key"


class _Rules:
    """Rule source in insertion order; ``marker`` adds a whitespace-tolerant marker terminal."""

    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self.layout: Any = None   # a call layout's rules (peg_layout.LayoutRules), when the format has one

    def add(self, name: str, body: str) -> str:
        self.rules.setdefault(name, body)
        return name

    def marker(self, name: str, marker: str) -> str:
        """``name = ~r"\\s*PATTERN"``, or "" when the marker is only whitespace."""
        src = mk.pattern(marker)
        return self.add(name, _rx(r"\s*" + src)) if src else ""

    def text(self) -> str:
        """The source, top-down from ``message``: structure, then terminals, JSON/literal rules, ``ws``."""
        seen: list[str] = []

        def walk(name: str) -> None:
            if name in self.rules and name not in seen:
                seen.append(name)
                for ref in _IDENT.findall(_STRINGS.sub(" ", self.rules[name])):
                    walk(ref)

        walk("message")
        seen += [n for n in self.rules if n not in seen]

        def rank(name: str) -> int:
            if name == "ws":
                return 3
            if name.startswith(("json_", "lit_")):
                return 2
            return 1 if self.rules[name].startswith("~") else 0

        order = sorted(seen, key=rank)
        width = max(len(n) for n in order)
        return "\n".join(f"{n:<{width}} = {self.rules[n]}" for n in order) + "\n"


_STRINGS = regex.compile(r'~?r?"(?:[^"\\]|\\.)*"')
_IDENT = regex.compile(r"[A-Za-z_][A-Za-z_0-9]*")




def _closing(b: _Rules, g: ir.Grammar, role: str, marker: str) -> str:
    """A closing marker; the end-of-turn markers it ends with are optional (:meth:`ir.Grammar.closing`)."""
    head, stops = g.closing(marker)
    required = b.marker(role, head) if head.strip() else ""
    if not stops.strip():
        return required
    return _seq(required, b.marker(role + "_stop" if required else role, stops) + "?")


