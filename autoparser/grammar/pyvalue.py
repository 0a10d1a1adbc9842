"""JSON Schema -> GBNF for Python-literal and argument-literal spellings of values.

Some templates print tool arguments as Python reprs (``{'k': 'v', 'b': True, 'n': None}``)
or as argument literals (bare keys with a custom quote ``{k:<|"|>v<|"|>}``, Python calls ``f(k='v', n=3)``).
:class:`LiteralConverter` extends :mod:`autoparser.grammar.schema`'s converter (references,
anyOf/oneOf/allOf, arrays, the declared-order member layout and bounded repetition are
reused) and changes only the spellings:

* strings in any of the given quotes: ``'...'`` and ``"..."`` with backslash escapes (raw
  newlines allowed, as ``repr`` of a dict does not escape them in every template), and
  multi-character quotes (``<|"|>``) holding raw text up to the closing quote;
* booleans ``true``/``false``/``True``/``False``, null ``null``/``None``;
* object keys quoted (any quote) or, when ``bare_keys``, bare identifiers;
* the top-level object may use other brackets and separator (``(k=v)``);
* object members in declared order or sorted by key (templates printing ``|dictsort``);
* argument literals only (``bare_keys``): values other than strings may also be quoted
  (``top_k:<escape>3<escape>``), and the commas between the top-level
  arguments may be missing, as the parser reads them (one corpus template drops them).

minLength/maxLength are not enforced on these strings.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from autoparser.grammar.gbnf import ANY_CHAR, GbnfBuilder, char_class, literal
from autoparser.grammar.schema import (
    _Converter,
    _group,
    _is_any,
    _join,
    _unique,
    json_rule,
    json_string_expr,
    schema_rule,
    space_rule,
)

_IDENTIFIER = "[A-Za-z_] [A-Za-z0-9_]{0,63}"


def _py_escape(s: str, quote: str) -> str:
    """`s` inside `quote` as Python's repr escapes it (backslash, the quote, controls)."""
    out = s.replace("\\", "\\\\").replace(quote, "\\" + quote)
    return out.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")


class LiteralConverter(_Converter):
    """Schema walker writing Python / argument-literal spellings."""

    def __init__(self, b: GbnfBuilder, root: Any, quotes: tuple[str, ...] = ("'", '"'),
                 bare_keys: bool = False, bare_strings: bool = False) -> None:
        super().__init__(b, root, additional_default=True)
        self.quotes = tuple(q for q in quotes if q) or ("'", '"')
        self.bare_keys = bare_keys
        self.bare_strings = bare_strings
        self.tag = "lit" if bare_keys else "py"

    def space(self) -> str:
        """Whitespace between tokens. Beside unquoted strings, which hold whitespace themselves,
        one character at a time: a multi-character whitespace lexeme would hide, in llguidance's
        greedy lexer, the string going on after it (``code=def f(x):\n    return``)."""
        if not self.bare_strings:
            return space_rule(self.b)
        return self.b.recursive_rule("lit-space", lambda r: f"| {char_class(list(' ' + chr(9) + chr(10) + chr(13)))} {r}",
                                     key=("lit-space",))

    # --- schema dispatch ----------------------------------------------------------

    def typed(self, kind: Any, schema: dict[str, Any], name: str) -> list[str]:
        if kind == "object":
            return [self.scalar(self.object_expr(schema, name))]
        if kind == "array":
            return [self.scalar(self.array_expr(schema, name))]
        if kind == "string":
            return [self.string()]
        if kind in ("number", "integer"):
            return [self.scalar(json_rule(self.b, kind))]
        if kind == "boolean":
            return [self.scalar(self.boolean())]
        if kind == "null":
            return [self.scalar(self.null())]
        return [self.any_value()]

    def scalar(self, expr: str) -> str:
        """A bare value, or (argument literals) the same quoted: ``<escape>3<escape>``."""
        if not self.bare_keys:
            return expr
        quoted = [_join(literal(q), expr, literal(q)) for q in self.quotes]
        return "( " + " | ".join([expr, *quoted]) + " )"

    # --- objects ------------------------------------------------------------------

    def object_expr(self, schema: dict[str, Any], name: str, *, open_: str = "{", close: str = "}",
                    sep: str = ":", top: bool = False) -> str:
        """Object with declared properties in order (optional ones in any subset), then extras."""
        props = schema.get("properties") or {}
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        extra = schema.get("additionalProperties", True)
        space = self.space()
        if not props and not required and _is_any(extra):
            members = self.any_members(sep)
            return _join(literal(open_), space, f"( {members} )?", literal(close))
        keys = list(props) + [k for k in required if k not in props]
        fallback = extra if isinstance(extra, dict) else {}
        slots = [(k, self.kv(k, props.get(k, fallback), name, sep), k in required) for k in keys]
        extra_kv = None if extra is False else self.extra_member(extra, name, sep)
        # templates may leave commas out; not where strings are bare (the comma ends them)
        comma = f'( "," {space} )?' if top and self.bare_keys and not self.bare_strings else f'"," {space}'
        layouts = [self.members(slots, extra_kv, name, comma)]
        ordered = sorted(slots, key=lambda slot: slot[0].lower())
        if ordered != slots:   # templates that print arguments with |dictsort
            layouts.append(self.members(ordered, extra_kv, f"{name}-sorted", comma))
        body = layouts[0] if len(layouts) == 1 else "( " + " | ".join(layouts) + " )"
        return _join(literal(open_), space, body, literal(close))

    def args_expr(self, schema: Any, name: str, open_: str, close: str, sep: str) -> str:
        """The top-level arguments literal (``{k:v}``, ``(k=v)``) for a tool's parameters."""
        schema = self.deref(schema)
        if not isinstance(schema, dict) or _is_any(schema):
            schema = {"type": "object"}
        merged = self.branches(schema)
        if merged is not None and len(merged) == 1 and isinstance(merged[0], dict):
            schema = merged[0]
        return self.object_expr(schema, name, open_=open_, close=close, sep=sep, top=True)

    def members(self, slots: list[tuple[str, str, bool]], extra_kv: str | None, name: str,
                comma: str = "") -> str:
        """Members separated by `comma`: required slots always, optional ones in any subset.

        As :meth:`_Converter.members` (everything inline), with a configurable separator.
        """
        comma = comma or f'"," {self.space()}'
        n = len(slots)
        first_required = next((i for i, (_, _, req) in enumerate(slots) if req), n)
        rest = [""] * (n + 1)
        if extra_kv:
            rest[n] = self.b.recursive_rule(f"{name}-additional-rest", lambda r: f"| {comma} {extra_kv} {r}")
        for j in range(n - 1, 0, -1):
            _key, kv, req = slots[j]
            item = f"{comma} {kv}"
            rest[j] = _join(item if req else f"( {item} )?", rest[j + 1])
        firsts = [_join(slots[i][1], rest[i + 1]) for i in range(min(first_required + 1, n))]
        if first_required < n:
            return _group(firsts)
        if extra_kv:
            firsts.append(_join(extra_kv, rest[n]))
        return f"( {' | '.join(firsts)} )?" if firsts else ""

    def kv(self, key: str, schema: Any, name: str, sep: str) -> str:
        """``key sep value`` followed by space."""
        space = self.space()
        value = self.rule_for(schema, f"{name}-{key}")
        return self.b.rule(f"{name}-{key}-kv", _join(self.key(key), space, literal(sep), space, value, space))

    def key(self, key: str) -> str:
        """A known key, quoted in any of the quotes (or bare)."""
        alts = [self.quoted_const(key, q) for q in self.quotes]
        if self.bare_keys and key.isidentifier():
            alts.append(literal(key))
        return _group(_unique(alts))

    def any_key(self) -> str:
        alts = [self.string()] + ([self.b.rule(f"{self.tag}-identifier", _IDENTIFIER)] if self.bare_keys else [])
        return _group(alts)

    def extra_member(self, extra: Any, name: str, sep: str) -> str:
        space = self.space()
        value = self.rule_for(extra if isinstance(extra, dict) else {}, f"{name}-additional-value")
        return self.b.rule(f"{name}-additional-kv", _join(self.any_key(), space, literal(sep), space, value, space))

    def any_members(self, sep: str) -> str:
        """One or more members with any keys and values (comma-separated, right recursive)."""
        space = self.space()
        member = self.b.rule(f"{self.tag}-member-{sep}",
                             _join(self.any_key(), space, literal(sep), space, self.any_value(), space))
        rest = self.b.recursive_rule(f"{self.tag}-members-rest", lambda r: f'| "," {space} {member} {r}',
                                     key=(self.tag, "members-rest", sep, self.quotes))
        return f"{member} {rest}"

    # --- scalars ------------------------------------------------------------------

    def string(self) -> str:
        """A string in any of the quotes (or unquoted, with ``bare_strings``)."""
        return self.b.cached((self.tag, "string", self.quotes, self.bare_strings), self._string)

    def _string(self) -> str:
        alts = []
        for q in self.quotes:
            if len(q) == 1:
                chars = self.b.recursive_rule(f"{self.tag}-chars", functools.partial(_quoted_chars, q))
                alts.append(_join(literal(q), chars, literal(q)))
            else:
                alts.append(_join(literal(q), self.b.string_until(q)))
        if self.bare_strings:   # unquoted text (code too): brackets paired, quoted pieces whole
            group = self.b.reserve(f"{self.tag}-bare-group")
            quoted = " | ".join(
                _join(literal(q), self.b.recursive_rule(
                    f"{self.tag}-bare-quoted", functools.partial(_bare_quoted_chars, q)), literal(q))
                for q in ("'", '"'))
            inner = self.b.recursive_rule(
                f"{self.tag}-bare-inner", lambda r: f"| {char_class(list('()[]{}'), negate=True)} {r} | {group} {r}")
            self.b.define(group, " | ".join(_join(literal(o), inner, literal(c)) for o, c in ("()", "[]", "{}")))
            rest = self.b.recursive_rule(
                f"{self.tag}-bare-chars",
                lambda r: f"| {char_class(list('()[]{}'), negate=True)} {r} | {group} {r} | ( {quoted} ) {r}")
            first = char_class(list("\"'()[]{}=, " + chr(10)), negate=True)
            alts.append(self.b.rule(f"{self.tag}-bare-string", f"{first} {rest}"))
        return self.b.rule(f"{self.tag}-string", " | ".join(alts))

    def quoted_const(self, value: str, quote: str) -> str:
        """The string `value` in `quote` as a template writes it."""
        if quote == '"':
            return json_string_expr(value)
        if len(quote) == 1:
            return literal(quote + _py_escape(value, quote) + quote)
        return literal(quote + value + quote)

    def boolean(self) -> str:
        return self.b.rule("tagged-boolean", '"true" | "false" | "True" | "False"')

    def null(self) -> str:
        return self.b.rule("tagged-null", '"null" | "None"')

    def const(self, value: Any) -> str:
        """Exactly `value`, in any spelling."""
        space = self.space()
        if isinstance(value, str):
            bare = [literal(value)] if self.bare_strings and value.strip() == value else []
            return _group(_unique([*[self.quoted_const(value, q) for q in self.quotes], *bare]))
        if isinstance(value, bool):
            return f"( {literal(json.dumps(value))} | {literal(repr(value))} )"
        if value is None:
            return self.null()
        if isinstance(value, dict):
            kvs = [_join(self.key(str(k)), space, '":"', space, self.const(v), space) for k, v in value.items()]
            return _join('"{"', space, f' "," {space} '.join(kvs), '"}"')
        if isinstance(value, (list, tuple)):
            items = [f"{self.const(v)} {space}" for v in value]
            return _join('"["', space, f' "," {space} '.join(items), '"]"')
        return literal(json.dumps(value))

    def any_value(self) -> str:
        """Any value in this spelling (recursive)."""
        key = (self.tag, "value", self.quotes, self.bare_keys)
        return self.b.recursive_rule(f"{self.tag}-value", self._any_body, key=key)

    def _any_body(self, value: str) -> str:
        space = self.space()
        member = self.b.rule(f"{self.tag}-any-member", _join(self.any_key(), space, '":"', space, value, space))
        mrest = self.b.recursive_rule(f"{self.tag}-any-members", lambda r: f'| "," {space} {member} {r}')
        obj = self.b.rule(f"{self.tag}-object", f'"{{" {space} ( {member} {mrest} )? "}}"')
        arest = self.b.recursive_rule(f"{self.tag}-any-items", lambda r: f'| "," {space} {value} {space} {r}')
        arr = self.b.rule(f"{self.tag}-array", f'"[" {space} ( {value} {space} {arest} )? "]"')
        return " | ".join([obj, arr, self.string(), json_rule(self.b, "number"), self.boolean(), self.null()])


def python_value_rule(b: GbnfBuilder, schema: Any, name: str, root: Any = None) -> str:
    """Rule for a Python repr (or JSON text) of an instance of `schema` (no trailing space).

    `root` is the document local ``$ref`` pointers resolve against (default: `schema`).
    """
    conv = LiteralConverter(b, schema if root is None else root)
    final = b.reserve(name)
    return b.define(final, " | ".join(conv.alts(schema, final)))


def literal_args_rule(b: GbnfBuilder, schema: Any, name: str, *, open_: str, close: str, sep: str,
                      quotes: tuple[str, ...], bare_strings: bool = False) -> str:
    """Rule for a tool's arguments as an argument literal (``{k:v}`` or ``(k=v)``);
    ``bare_strings``: strings may also be written unquoted, as the template prints them."""
    conv = LiteralConverter(b, schema, quotes, bare_keys=True, bare_strings=bare_strings)
    final = b.reserve(name)
    body = conv.args_expr(schema, final, open_, close, sep)
    if open_ == "(":   # f({"k": "v"}): arguments given as a JSON text, written as they are
        space = conv.space()
        body = f"{body} | " + _join(literal(open_), space, schema_rule(b, schema, f"{name}-json"), space, literal(close))
    return b.define(final, body)


def _quoted_chars(quote: str, rest: str) -> str:
    """Body of a right-recursive rule: characters of a string in ``quote``, escapes included."""
    return f'| {char_class([quote, chr(92)], negate=True)} {rest} | "\\\\" {ANY_CHAR} {rest}'


def _bare_quoted_chars(quote: str, rest: str) -> str:
    """Body of a right-recursive rule: a quoted piece inside an unquoted value (one line)."""
    return f"| {char_class([quote, chr(10)], negate=True)} {rest}"
