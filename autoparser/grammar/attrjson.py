"""GBNF for JSON written with XML character references (args ``"json_attr"``): an attribute value.

The tool's JSON schema rules are built as usual on a builder of their own, then copied into the
request's builder with every character an attribute value may not hold raw replaced by its
references: ``"`` as ``&#34;`` or ``&quot;``, ``&`` as ``&amp;``, ``<`` as ``&lt;`` (``>`` and
``'`` raw or as ``&gt;``, ``&#39;``, ``&apos;``, ``&#x27;``), in literals and in the character
classes of strings. The language is the schema's JSON, escaped as ``html.escape`` or Jinja's
``|e`` escape it, which :func:`html.unescape` reads back.
"""

from __future__ import annotations

import re

from .gbnf import GbnfBuilder, literal

__all__ = ["escaped_copy"]

_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|\{[^}]*\}|[A-Za-z0-9_-]+|\s+|.', re.S)
_ESCAPE = {'"': '"', "\\": "\\", "n": "\n", "r": "\r", "t": "\t"}
#: how an attribute value writes each character that needs it (raw first when it may be raw)
_REFS: dict[str, tuple[str, ...]] = {
    '"': ("&#34;", "&quot;"), "&": ("&amp;",), "<": ("&lt;",),
    ">": (">", "&gt;"), "'": ("'", "&#39;", "&apos;", "&#x27;"),
}
_STRING_REFS = " | ".join(literal(r) for r in ("&amp;", "&lt;", "&gt;", "&#39;", "&apos;", "&#x27;"))


def _literal_text(token: str) -> str:
    """The text a GBNF literal token matches."""
    out, i, body = [], 0, token[1:-1]
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "x":
                out.append(chr(int(body[i + 2:i + 4], 16)))
                i += 4
                continue
            out.append(_ESCAPE.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _escaped_literal(token: str) -> str:
    text = _literal_text(token)
    if not any(c in _REFS for c in text):
        return token
    parts: list[str] = []
    run = ""
    for c in text:
        if c in _REFS:
            if run:
                parts.append(literal(run))
                run = ""
            refs = _REFS[c]
            parts.append(literal(refs[0]) if len(refs) == 1 else "( " + " | ".join(literal(r) for r in refs) + " )")
        else:
            run += c
    if run:
        parts.append(literal(run))
    return "( " + " ".join(parts) + " )"


def _escaped_class(token: str) -> str:
    """A character class: a string's characters (a negated class) take no raw ``&`` or ``<`` and
    take the references; a quote in a class (``\\"`` in an escape) is written as its reference."""
    if token.startswith("[^"):
        return f"( [^&<{token[2:]} | {_STRING_REFS} )"
    if '"' in token:
        rest = token.replace('"', "")
        alts = [] if rest == "[]" else [rest]
        return "( " + " | ".join([*alts, literal("&#34;"), literal("&quot;")]) + " )"
    return token


def escaped_copy(dest: GbnfBuilder, src: GbnfBuilder, root: str, prefix: str) -> str:
    """Copy the rules reachable from ``root`` in ``src`` into ``dest`` (names under ``prefix``),
    escaped for an attribute value; returns the copy of ``root``."""
    order = src.reachable(root)
    bodies = src.rules
    names = {name: dest.reserve(f"{prefix}-{name}") for name in order}
    for name in order:
        out = []
        for token in _TOKEN.findall(bodies[name]):
            if token.startswith('"'):
                out.append(_escaped_literal(token))
            elif token.startswith("["):
                out.append(_escaped_class(token))
            elif token in names:
                out.append(names[token])
            else:
                out.append(token)
        dest.define(names[name], "".join(out))
    return names[src.resolve(root)]
