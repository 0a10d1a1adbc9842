"""GBNF for arguments written as ``key: value`` lines (args ``"yaml"``), per the tool's schema.

Each argument is a line break, the template's indentation, the key, ``:`` and its value, in
declared order (optional ones may be left out). A value is what the parser
(:mod:`autoparser.runtime.lineargs`) reads back as the schema's type:

* a string the template writes raw: the text on the key's line (no leading space or block
  header, no line break, not running into the marker ``end`` that may follow it on the line),
  or a YAML literal block (``|`` / ``|-`` and lines indented two more spaces); a string enum
  is one of its values as written;
* an object: JSON, or a block mapping of its properties, two more spaces in, their values
  read the same way (nested strings are JSON strings there, which YAML reads as written);
* an array: JSON, or a block sequence (``- item`` lines, two more spaces in) of JSON items;
* anything else: JSON, booleans and null also in Python's spelling; after ``=`` (Python keyword
  arguments, ``key=value`` pairs) a Python literal or JSON.

Nesting deeper than :data:`MAX_DEPTH` blocks (a recursive ``$ref``) is written as JSON.
"""

from __future__ import annotations

from typing import Any

from ..values.coerce import raw_string
from .gbnf import GbnfBuilder, char_class, literal, sanitize_name
from .pyvalue import python_value_rule
from .schema import _Converter, _group, json_rule, schema_value_rule

__all__ = ["line_args_rule", "ordered"]

STEP = "  "          # a nested block is indented this much more than its key
MAX_DEPTH = 4
_NOT_FIRST = " \t\r\n|>"   # a raw string does not start with white space or a block header


def line_args_rule(b: GbnfBuilder, schema: dict[str, Any], name: str, *, prefix: str, key_suffix: str,
                   quoted: bool, end: str, separator: str = "") -> str:
    """The arguments of one tool: its key lines in declared order (or, for a schema that names no
    properties, any ``key: value`` lines). ``prefix`` is the line break and indentation before a
    key ("" for ``key=value`` pairs on one line, ``separator`` between them), ``end`` the first
    marker piece that may follow the last value on its line ("" when the arguments end with a
    line break)."""
    return _Lines(b, schema, quoted, end, key_suffix, separator).mapping(schema, name, prefix, 0)


class _Lines:
    def __init__(self, b: GbnfBuilder, root: dict[str, Any], quoted: bool, end: str, key_suffix: str,
                 separator: str) -> None:
        self.b = b
        self.conv = _Converter(b, root, True)
        self.root = root
        self.quoted = quoted
        self.sep = key_suffix.rstrip() or ":"
        self.yaml = self.sep == ":"
        self.space = key_suffix[len(key_suffix.rstrip()):] or (" " if self.yaml else "")
        self.pairs = separator     # ``key=value`` pairs on one line, this between them
        # a raw value runs to the line's end, or stops before the separator or the marker after it
        self.end = separator if separator.strip() else end

    def mapping(self, schema: Any, name: str, prefix: str, depth: int) -> str:
        schema = self.conv.deref(schema)
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict) or not props:
            word = self.b.rule("line-key", '[A-Za-z_] [A-Za-z0-9_.-]{0,63}')
            item = _join(literal(prefix) if prefix else "", word, literal(self.sep), self.scalar({}, f"{name}-any", depth))
            if self.pairs:
                rest = self.b.recursive_rule(f"{name}-any-pairs", lambda r: f"| {literal(self.pairs)} {item} {r}")
                return f"( {item} {rest} )?"
            return self.b.recursive_rule(f"{name}-any-lines", lambda r: f"| {item} {r}")
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        slots = []
        for key, prop in props.items():
            value = self.value(prop, f"{name}-{sanitize_name(key)}", prefix, depth)
            slots.append((" ".join((literal(prefix + key + self.sep), value)), key in required))
        sep = literal(self.pairs) if self.pairs and depth == 0 else ""
        layouts = [ordered(slots, sep, depth > 0)]
        by_key = [slot for _key, slot in sorted(zip(props, slots, strict=True), key=lambda ks: ks[0].lower())]
        if by_key != slots:      # templates that print arguments with |dictsort
            layouts.append(ordered(by_key, sep, depth > 0))
        return layouts[0] if len(layouts) == 1 else "( " + " | ".join(layouts) + " )"

    def value(self, schema: Any, name: str, prefix: str, depth: int) -> str:
        """What follows ``key:``: an inline value after a space, or a block on the lines below."""
        schema = self.conv.deref(schema)
        inner = prefix + STEP
        alts = [self.scalar(schema, name, depth, prefix)]
        kind = _kinds(schema)
        if self.yaml and depth < MAX_DEPTH and "object" in kind and isinstance(schema.get("properties"), dict):
            alts.append(self.mapping(schema, f"{name}-map", inner, depth + 1))
        if self.yaml and depth < MAX_DEPTH and "array" in kind and isinstance(schema.get("items"), dict):
            item = self.json(schema["items"], f"{name}-item")
            alts.append(self.b.recursive_rule(f"{name}-seq", lambda r: f"{literal(inner + '- ')} {item} {r}?"))
        if self.yaml and depth == 0 and raw_string(schema, self.quoted) and "enum" not in schema:
            line = _join(literal(inner), self.b.until("\n"))
            lines = self.b.recursive_rule(f"block-lines-{len(inner)}", lambda r: f"{line} {r}?",
                                          key=("block-lines", inner))
            alts.append(f'{literal(self.space)} "|" [-+]? {lines}')
        return alts[0] if len(alts) == 1 else "( " + " | ".join(alts) + " )"

    def scalar(self, schema: Any, name: str, depth: int, prefix: str = "") -> str:
        """An inline value, after the space that follows ``:``."""
        space = literal(self.space) if self.space else ""
        if depth == 0 and raw_string(schema, self.quoted):
            if isinstance(schema.get("enum"), list):
                return "( " + " | ".join(_join(space, literal(str(v))) for v in schema["enum"]) + " )"
            first = char_class(_NOT_FIRST + self.end[:1], negate=True)
            if self.pairs and self.pairs.strip():
                # pairs on one line: a raw value (line breaks and all) runs to the separator
                text = _join(space, first, self.b.until(self.pairs))
                return f"( {text} | {space}? )" if space else f"( {text} )?"
            rest = self.b.line_until(self.end) if self.end else self.b.until("\n")
            # more lines, indented deeper than the key (a raw string with line breaks)
            more = self.b.recursive_rule(f"more-lines-{len(prefix)}", lambda r: f"{literal(prefix + STEP)} {rest} {r}?",
                                         key=("more-lines", prefix, self.end))
            text = _join(space, first, rest, more + "?")
            return f"( {text} | {space}? )" if space else f"( {text} )?"
        if depth == 0 and not schema:
            return _join(space, f"( {json_rule(self.b, 'value')} | {self.b.until(chr(10))} )")
        return _join(space, self.json(schema, name))

    def json(self, schema: Any, name: str) -> str:
        """A JSON value of ``schema`` (booleans and null also as Python writes them); after ``=``, a
        Python literal or JSON."""
        if not self.yaml:
            return python_value_rule(self.b, schema, f"{name}-py", root=self.root)
        return schema_value_rule(self.b, schema, f"{name}-json", False, root=self.root)


def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


def _kinds(schema: Any) -> set[str]:
    if not isinstance(schema, dict):
        return set()
    kind = schema.get("type")
    out = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    if not out:
        out |= {"object"} if "properties" in schema else set()
        out |= {"array"} if "items" in schema else set()
    return out


def ordered(slots: list[tuple[str, bool]], sep: str, nonempty: bool = False) -> str:
    """Items in order, optional ones may be missing, `sep` between two present ones; with
    `nonempty`, at least one is there (a nested block mapping written with no line is YAML's null).

    Everything stays inline: a named rule made only of terminals becomes one llguidance
    lexeme, and a lexeme such as ``ws "<parameter=" ws "top_k" ...`` (an optional integer
    argument) would outrun, then hide, the shorter ``ws`` of the argument that is there.
    """
    if not slots:
        return ""
    if not sep and not nonempty:
        return " ".join(item if req else f"( {item} )?" for item, req in slots)
    n = len(slots)
    rest = [""] * (n + 1)
    for j in range(n - 1, 0, -1):
        item, req = slots[j]
        rest[j] = _join(_join(sep, item) if req else f"( {_join(sep, item)} )?", rest[j + 1])
    firsts = []
    for i, (item, req) in enumerate(slots):
        firsts.append(_join(item, rest[i + 1]))
        if req:
            return _group(firsts)
    return _group(firsts) if nonempty else f"( {' | '.join(firsts)} )?"
