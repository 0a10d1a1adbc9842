"""JSON Schema -> GBNF rules on a :class:`GbnfBuilder`.

Layout follows llama.cpp's json-schema-to-grammar (``"{" space kv "," space kv "}"``,
``space ::= | " " | "\\n"{1,2} [ \\t]{0,20}``) with one difference: value rules are
*bare*, they do not end in ``space``; containers add ``space`` after each member and
:func:`schema_rule` adds it after the whole value. llguidance lexes terminal rules
greedily, so a value ending in ``space`` followed by a marker that starts with
whitespace (``"\\n</parameter>"``) would be rejected there although llama.cpp accepts it.

Supported: type (and type lists), enum, const, properties/required (optional
properties in any subset, declared order), additionalProperties (false, a schema, or
absent = any value unless ``additional_default=False``), items, prefixItems,
minItems/maxItems, anyOf/oneOf, allOf (shallow merge), nullable, local ``$ref``
(recursion allowed), minLength/maxLength. pattern and format are ignored (plain string).
Bounds above :data:`MAX_BOUNDED_REPEAT` are treated as unbounded. Object keys come in
declared order; an additional key may not spell a declared one.

:func:`schema_value_rule` is the tagged-format variant (``<parameter=k>VALUE</parameter>``):
a string is raw text up to the first closing marker, other values are JSON, and
booleans/null also take Python's ``True``/``False``/``None`` spellings.
"""

from __future__ import annotations

import json
from typing import Any

from autoparser.grammar.gbnf import NAME_RE, GbnfBuilder, char_class, literal
from autoparser.values.refs import resolve_pointer

SPACE_BODY = r'| " " | "\n"{1,2} [ \t]{0,20}'
MAX_BOUNDED_REPEAT = 256
INT_DIGITS = 20
FRACTION_DIGITS = 20
EXPONENT_DIGITS = 4
BLOCKS = ("json", "string", "number", "space")

_CONTROL = [chr(i) for i in range(0x20)]
_QUOTE = literal('"')
_ANNOTATIONS = frozenset({"title", "description", "default", "examples", "$comment", "$schema", "$id"})


def _join(*parts: str) -> str:
    """Concatenate non-empty expression parts."""
    return " ".join(p for p in parts if p)


def _group(alts: list[str]) -> str:
    """One expression for a list of alternatives."""
    return alts[0] if len(alts) == 1 else "( " + " | ".join(alts) + " )"


def _unique(items: list[str]) -> list[str]:
    """Drop repeated alternatives, keeping order."""
    return list(dict.fromkeys(items))


def space_rule(b: GbnfBuilder) -> str:
    """Bounded optional whitespace between JSON tokens."""
    return b.rule("space", SPACE_BODY)


def _escape(b: GbnfBuilder) -> str:
    escaped = char_class('"/\\bfnrt')
    return b.rule("json-escape", f'"\\\\" ({escaped} | "u" {_hex()}{{4}})')


def _hex() -> str:
    return char_class("0123456789abcdefABCDEF")


def _plain_char_class(extra: list[str] | tuple[str, ...] = ()) -> str:
    """Unescaped string character, excluding `extra` too."""
    return char_class(['"', "\\", *_CONTROL, *extra], negate=True)


def _char(b: GbnfBuilder) -> str:
    return b.rule("json-char", f"{_plain_char_class()} | {_escape(b)}")


def _chars(b: GbnfBuilder) -> str:
    char = _char(b)
    return b.recursive_rule("json-chars", lambda n: f"| {char} {n}", key="json-chars")


def _string(b: GbnfBuilder) -> str:
    return b.rule("json-string", _join(_QUOTE, _chars(b), _QUOTE))


def _int_part(b: GbnfBuilder) -> str:
    return b.rule("json-int-part", f"[0] | [1-9] [0-9]{{0,{INT_DIGITS - 1}}}")


def _integer(b: GbnfBuilder) -> str:
    return b.rule("json-integer", f'"-"? {_int_part(b)}')


def _number(b: GbnfBuilder) -> str:
    fraction = b.rule("json-fraction", f'"." [0-9]{{1,{FRACTION_DIGITS}}}')
    exponent = b.rule("json-exponent", f"[eE] [+-]? [0-9]{{1,{EXPONENT_DIGITS}}}")
    return b.rule("json-number", f'"-"? {_int_part(b)} {fraction}? {exponent}?')


def _boolean(b: GbnfBuilder) -> str:
    return b.rule("json-boolean", '"true" | "false"')


def _null(b: GbnfBuilder) -> str:
    return b.rule("json-null", '"null"')


def _object_rule(b: GbnfBuilder, value: str) -> str:
    space = space_rule(b)
    member = b.rule("json-member", f'{_string(b)} {space} ":" {space} {value} {space}')
    rest = b.recursive_rule("json-object-rest", lambda n: f'| "," {space} {member} {n}', key="json-object-rest")
    return b.rule("json-object", f'"{{" {space} ( {member} {rest} )? "}}"')


def _array_rule(b: GbnfBuilder, value: str) -> str:
    space = space_rule(b)
    rest = b.recursive_rule("json-array-rest", lambda n: f'| "," {space} {value} {space} {n}', key="json-array-rest")
    return b.rule("json-array", f'"[" {space} ( {value} {space} {rest} )? "]"')


def _value_body(b: GbnfBuilder, value: str) -> str:
    obj = b.cached("json-object", lambda: _object_rule(b, value))
    arr = b.cached("json-array", lambda: _array_rule(b, value))
    return " | ".join([obj, arr, _string(b), _number(b), _boolean(b), _null(b)])


def _value(b: GbnfBuilder) -> str:
    return b.recursive_rule("json-value", lambda v: _value_body(b, v), key="json-value")


def _object(b: GbnfBuilder) -> str:
    return b.cached("json-object", lambda: _object_rule(b, _value(b)))


def _array(b: GbnfBuilder) -> str:
    return b.cached("json-array", lambda: _array_rule(b, _value(b)))


_PRIMITIVES = {
    "value": _value, "object": _object, "array": _array, "string": _string, "chars": _chars,
    "char": _char, "escape": _escape, "number": _number, "integer": _integer,
    "boolean": _boolean, "null": _null, "space": space_rule,
}


def json_rule(b: GbnfBuilder, kind: str = "value") -> str:
    """Generic bare JSON rule: value, object, array, string, chars, char, escape,
    number, integer, boolean, null (or space)."""
    return _PRIMITIVES[kind](b)


def json_string_expr(s: str) -> str:
    """Expression for the JSON string `s` as json.dumps writes it (ensure_ascii on or off)."""
    if s.isascii() and s.isprintable() and '"' not in s and "\\" not in s:
        return literal('"' + s + '"')     # written the same either way (most enum values)
    parts: list[str] = []
    run = '"'
    for c in s:
        raw, ascii_ = json.dumps(c, ensure_ascii=False)[1:-1], json.dumps(c)[1:-1]
        if raw == ascii_:
            run += raw
            continue
        parts += [literal(run), f"( {literal(raw)} | {literal(ascii_)} )"]
        run = ""
    return _join(*parts, literal(run + '"'))


def const_expr(b: GbnfBuilder, value: Any) -> str:
    """Bare expression matching exactly `value` as JSON (any whitespace layout)."""
    if isinstance(value, str):
        return json_string_expr(value)
    if not isinstance(value, (dict, list, tuple)):
        return literal(json.dumps(value))
    space = space_rule(b)
    if isinstance(value, dict):
        kvs = [f'{json_string_expr(str(k))} {space} ":" {space} {const_expr(b, v)} {space}' for k, v in value.items()]
        return _join('"{"', space, f' "," {space} '.join(kvs), '"}"')
    if isinstance(value, (list, tuple)):
        items = [f"{const_expr(b, v)} {space}" for v in value]
        return _join('"["', space, f' "," {space} '.join(items), '"]"')
    return literal(json.dumps(value))


def _infer_type(schema: dict[str, Any]) -> str | None:
    """Type implied by type-specific keywords when 'type' is absent."""
    keys = set(schema)
    if keys & {"properties", "additionalProperties", "required"}:
        return "object"
    if keys & {"items", "prefixItems", "minItems", "maxItems"}:
        return "array"
    if keys & {"minLength", "maxLength", "pattern", "format"}:
        return "string"
    return None


def _rep(item: str, lo: int, hi: int) -> str:
    """`item` repeated lo..hi times (bounded)."""
    if hi <= 0:
        return ""
    if (lo, hi) == (0, 1):
        return f"( {item} )?"
    return f"( {item} ){{{lo}}}" if lo == hi else f"( {item} ){{{lo},{hi}}}"


def _is_any(schema: Any) -> bool:
    return schema is True or (isinstance(schema, dict) and not set(schema) - _ANNOTATIONS)


class _Converter:
    """Walks one root schema; $ref targets become (possibly recursive) rules."""

    def __init__(self, b: GbnfBuilder, root: Any, additional_default: bool, pad: str = "",
                 raw_edges: tuple[str, str] = ("", "")) -> None:
        self.b = b
        self.root = root
        self.additional_default = additional_default
        self.pad = pad            # tagged values: whitespace allowed around a non-raw value
        self.raw_edges = raw_edges   # tagged values: what the call reader strips around a raw string
        self.refs: dict[str, str] = {}

    # --- entry points -------------------------------------------------------------

    def rule_for(self, schema: Any, name: str) -> str:
        """Rule name for the bare value of `schema` (a primitive's name when possible)."""
        alts = self.alts(schema, name)
        if len(alts) == 1 and NAME_RE.fullmatch(alts[0]):
            return alts[0]
        return self.b.rule(name, " | ".join(alts))

    def alts(self, schema: Any, name: str) -> list[str]:
        """Alternatives (bare expressions) matching instances of `schema`.

        The spelling of a value comes from the hooks ``any_value``, ``null``, ``const`` and
        ``typed`` (JSON here; Python and argument literals in ``pyvalue.LiteralConverter``).
        """
        if _is_any(schema) or not isinstance(schema, dict):
            return [self.any_value()]
        if "$ref" in schema:
            return [self.ref(schema["$ref"], name)]
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return _unique([*self.alts(rest, name), self.null()])
        if "const" in schema:
            return [self.const(schema["const"])]
        if isinstance(schema.get("enum"), list):
            return _unique([self.const(v) for v in schema["enum"]])
        branches = self.branches(schema)
        if branches is not None:
            return _unique([self.rule_for(s, f"{name}-{i}") for i, s in enumerate(branches)])
        kind = schema.get("type") or _infer_type(schema)
        if isinstance(kind, list):
            return _unique([a for t in kind for a in self.alts({**schema, "type": t}, f"{name}-{t}")])
        return self.typed(kind, schema, name)

    def any_value(self) -> str:
        return json_rule(self.b, "value")

    def null(self) -> str:
        return json_rule(self.b, "null")

    def const(self, value: Any) -> str:
        return const_expr(self.b, value)

    def branches(self, schema: dict[str, Any]) -> list[Any] | None:
        """anyOf/oneOf branches (merged with sibling keywords), or the merged allOf."""
        for key in ("anyOf", "oneOf"):
            if isinstance(schema.get(key), list):
                rest = {k: v for k, v in schema.items() if k != key}
                return [self.merge([rest, s]) if isinstance(s, dict) else s for s in schema[key]]
        if isinstance(schema.get("allOf"), list):
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            return [self.merge([rest, *schema["allOf"]])]
        return None

    def merge(self, schemas: list[Any]) -> dict[str, Any]:
        """Shallow merge: properties and required are combined, other keys overwritten."""
        out: dict[str, Any] = {}
        for s in map(self.deref, schemas):
            for k, v in (s.items() if isinstance(s, dict) else ()):
                if k == "properties":
                    out[k] = {**out.get(k, {}), **v}
                elif k == "required":
                    out[k] = list(dict.fromkeys([*out.get(k, []), *v]))
                else:
                    out[k] = v
        return out

    # --- references ---------------------------------------------------------------

    def resolve(self, ref: str) -> Any:
        """Target of a local JSON pointer ($defs, definitions, or any path)."""
        return resolve_pointer(self.root, ref)

    def deref(self, schema: Any) -> Any:
        """Follow a chain of $ref at the top of `schema`."""
        for _ in range(32):
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)):
                break
            schema = self.resolve(schema["$ref"])
        return schema

    def ref(self, ref: str, name: str) -> str:
        """Rule for a $ref target, defined once per reference (recursion-safe)."""
        if ref not in self.refs:
            target = self.resolve(ref)
            segment = ref.rstrip("/").rsplit("/", 1)[-1]
            rname = self.b.reserve(segment if segment != "#" else f"{name}-self")
            self.refs[ref] = rname
            self.b.define(rname, " | ".join(self.alts(target, rname)))
        return self.refs[ref]

    # --- typed schemas ------------------------------------------------------------

    def typed(self, kind: Any, schema: dict[str, Any], name: str) -> list[str]:
        """Alternatives for a single JSON type."""
        if kind == "object":
            return [self.object_expr(schema, name)]
        if kind == "array":
            return [self.array_expr(schema, name)]
        if kind == "string":
            return [self.string_expr(schema)]
        if kind in ("number", "integer", "boolean", "null"):
            return [json_rule(self.b, kind)]
        return [json_rule(self.b, "value")]

    def string_expr(self, schema: dict[str, Any]) -> str:
        """JSON string, honouring minLength/maxLength (counted in JSON characters)."""
        lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
        hi = None if hi is None or hi > MAX_BOUNDED_REPEAT else max(int(hi), lo)
        if lo == 0 and hi is None:
            return json_rule(self.b, "string")
        char = json_rule(self.b, "char")
        if hi is None:
            middle = _join(f"{char}{{{lo}}}", json_rule(self.b, "chars"))
        elif hi == lo:
            middle = f"{char}{{{lo}}}" if lo else ""
        else:
            middle = f"{char}{{{lo},{hi}}}"
        return _join(_QUOTE, middle, _QUOTE)

    def array_expr(self, schema: dict[str, Any], name: str) -> str:
        """JSON array: tuple (prefixItems / items list) or items with min/maxItems."""
        space = space_rule(self.b)
        items, prefix = schema.get("items"), schema.get("prefixItems")
        if isinstance(items, list):
            prefix = items
        if isinstance(prefix, list) and prefix:
            parts = [f"{self.rule_for(s, f'{name}-{i}')} {space}" for i, s in enumerate(prefix)]
            return _join('"["', space, f' "," {space} '.join(parts), '"]"')
        lo, hi = int(schema.get("minItems", 0)), schema.get("maxItems")
        if items is False:
            hi = 0
        item = self.rule_for(items if isinstance(items, dict) else {}, f"{name}-item")
        return _join('"["', space, self.repeat(f"{item} {space}", lo, hi, f"{name}-rest"), '"]"')

    def repeat(self, item: str, lo: int, hi: int | None, name: str) -> str:
        """Comma-separated `item`, lo..hi times (hi None: unbounded, via recursion)."""
        hi = None if hi is None or hi > MAX_BOUNDED_REPEAT else max(int(hi), lo)
        if hi is not None and hi <= 0:
            return ""
        more = f'"," {space_rule(self.b)} {item}'
        if hi is None:
            tail = self.b.recursive_rule(name, lambda r: f"| {more} {r}")
            body = _join(item, _rep(more, lo - 1, lo - 1), tail)
        else:
            body = _join(item, _rep(more, max(lo - 1, 0), hi - 1))
        return f"( {body} )?" if lo <= 0 else body

    def object_expr(self, schema: dict[str, Any], name: str) -> str:
        """JSON object with declared properties in order, then additional ones."""
        props = schema.get("properties") or {}
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        extra = schema.get("additionalProperties", self.additional_default)
        if not props and not required and _is_any(extra):
            return json_rule(self.b, "object")
        keys = list(props) + [k for k in required if k not in props]
        fallback = extra if isinstance(extra, dict) else {}
        slots = [(k, self.kv_rule(k, props.get(k, fallback), name), k in required) for k in keys]
        extra_kv = None if extra is False else self.extra_kv(keys, extra, name)
        body = self.members(slots, extra_kv, name)
        by_key = sorted(slots, key=lambda slot: slot[0])
        if by_key != slots:   # templates that print with tojson(sort_keys=True) or |dictsort
            body = f"( {body} | {self.members(by_key, extra_kv, f'{name}-sorted')} )"
        return _join('"{"', space_rule(self.b), body, '"}"')

    def kv_rule(self, key: str, schema: Any, name: str) -> str:
        """`"key": value` followed by space."""
        space = space_rule(self.b)
        value = self.rule_for(schema, f"{name}-{key}")
        return self.b.rule(f"{name}-{key}-kv", f'{json_string_expr(key)} {space} ":" {space} {value} {space}')

    def extra_kv(self, keys: list[str], extra: Any, name: str) -> str:
        """Additional property: a key that is none of `keys`, with the extra schema's value."""
        space = space_rule(self.b)
        key = self.key_excluding(keys, f"{name}-additional-key") if keys else json_rule(self.b, "string")
        value = self.rule_for(extra if isinstance(extra, dict) else {}, f"{name}-additional-value")
        return self.b.rule(f"{name}-additional-kv", f'{key} {space} ":" {space} {value} {space}')

    def members(self, slots: list[tuple[str, str, bool]], extra_kv: str | None, name: str) -> str:
        """Comma-separated members: required slots always, optional ones in any subset.

        rest[j] matches the members from slot j on, after something was emitted. It stays
        inline: as a rule made only of terminals, llguidance would lex it as one regex
        starting with "," that greedily hides the "," of an earlier optional member
        (``{"a": 1, "b": 2, "c": 3}`` with three optional integers was rejected).
        """
        space, n = space_rule(self.b), len(slots)
        first_required = next((i for i, (_, _, req) in enumerate(slots) if req), n)
        rest = [""] * (n + 1)
        if extra_kv:
            rest[n] = self.b.recursive_rule(f"{name}-additional-rest", lambda r: f'| "," {space} {extra_kv} {r}')
        for j in range(n - 1, 0, -1):
            _key, kv, req = slots[j]
            item = f'"," {space} {kv}'
            expr = _join(item if req else f"( {item} )?", rest[j + 1])
            rest[j] = expr
        firsts = [_join(slots[i][1], rest[i + 1]) for i in range(min(first_required + 1, n))]
        if first_required < n:
            return _group(firsts)
        if extra_kv:
            firsts.append(_join(extra_kv, rest[n]))
        return f"( {' | '.join(firsts)} )?" if firsts else ""

    def key_excluding(self, keys: list[str], name: str) -> str:
        """JSON string (with quotes) whose raw text is none of `keys` (a trie of rules).

        Keys are compared as json.dumps(ensure_ascii=False) writes them; an escaped
        spelling of a known key (``"\\u0061"`` for ``"a"``) is not excluded.
        """
        trie: dict[str, Any] = {}
        for k in keys:
            node = trie
            for c in json.dumps(k, ensure_ascii=False)[1:-1]:
                node = node.setdefault(c, {})
            node[""] = {}
        return self.b.rule(name, f"{_QUOTE} {self.trie_node(trie, name, 0)}")

    def trie_node(self, node: dict[str, Any], name: str, depth: int) -> str:
        """Rest of a key (and closing quote) after the prefix leading to `node`."""
        chars, escape = json_rule(self.b, "chars"), json_rule(self.b, "escape")
        children = sorted(c for c in node if c)
        alts = [] if "" in node else [_QUOTE]
        alts += [f"{char_class(c)} {self.trie_node(node[c], name, depth + 1)}" for c in children]
        alts.append(f"{_plain_char_class(children)} {chars} {_QUOTE}")
        if "\\" not in children:
            alts.append(f"{escape} {chars} {_QUOTE}")
        return self.b.rule(f"{name}-{depth}", " | ".join(alts))

    # --- tagged values ------------------------------------------------------------

    def tagged_alts(self, schema: Any, name: str, raw: bool, closing: str) -> list[str]:
        """Alternatives for a tagged argument value, each ending with `closing`."""
        close = _join(self.pad, literal(closing)) if closing else ""
        schema = self.deref(schema)
        if _is_any(schema) or not isinstance(schema, dict):
            return [self.raw_text(closing)] if raw else [_join(self.pad, json_rule(self.b, "value"), close)]
        if schema.get("nullable") is True:
            rest = {k: v for k, v in schema.items() if k != "nullable"}
            return _unique([*self.tagged_alts(rest, name, raw, closing), self.tagged_const(None, raw, closing)])
        if "const" in schema or isinstance(schema.get("enum"), list):
            values = [schema["const"]] if "const" in schema else schema["enum"]
            return _unique([self.tagged_const(v, raw, closing) for v in values])
        branches = self.branches(schema)
        if branches is not None:
            return _unique([a for i, s in enumerate(branches) for a in self.tagged_alts(s, f"{name}-{i}", raw, closing)])
        kind = schema.get("type") or _infer_type(schema)
        if isinstance(kind, list):
            return _unique([a for t in kind for a in self.tagged_alts({**schema, "type": t}, f"{name}-{t}", raw, closing)])
        if kind == "string" and raw:
            return [self.raw_text(closing)]
        if kind == "boolean":
            return [_join(self.pad, self.b.rule("tagged-boolean", '"true" | "false" | "True" | "False"'), close)]
        if kind == "null":
            return [self.tagged_const(None, raw, closing)]
        return [_join(self.pad, _group(self.alts(schema, name)), close)]

    def tagged_const(self, value: Any, raw: bool, closing: str) -> str:
        """A constant as a template writes it: raw string, Python or JSON spelling, then `closing`.

        A raw string is the reader's text up to its closing marker, white space included: only
        the ``raw_edges`` (the line break a template writes around a value, which the reader
        strips) may surround it, or an enum value would come back padded and off its list."""
        close = _join(self.pad, literal(closing)) if closing else ""
        if isinstance(value, str) and raw:
            lead, trail = self.raw_edges
            return _join(lead, literal(value), trail, literal(closing) if closing else "")
        if value is None or isinstance(value, bool):
            spellings = [json.dumps(value), repr(value)]
            return _join(self.pad, f"( {literal(spellings[0])} | {literal(spellings[1])} )", close)
        return _join(self.pad, const_expr(self.b, value), close)

    def raw_text(self, closing: str) -> str:
        """Raw (unquoted) text up to and including the first `closing`."""
        if not closing:
            raise ValueError("raw string values need a closing marker")
        return self.b.string_until(closing)


def schema_rule(b: GbnfBuilder, schema: Any, name: str, *, additional_default: bool = True) -> str:
    """Rule `name` matching a JSON instance of `schema` followed by `space`; returns its name."""
    final = b.reserve(name)
    conv = _Converter(b, schema, additional_default)
    return b.define(final, _join(_group(conv.alts(schema, final)), space_rule(b)))


def schema_value_rule(
    b: GbnfBuilder,
    schema: Any,
    name: str,
    raw_strings: bool = True,
    *,
    closing: str = "",
    additional_default: bool = True,
    pad: str = "",
    raw_edges: tuple[str, str] = ("", ""),
    root: Any = None,
) -> str:
    """Rule for a tagged-format argument value followed by `closing` (e.g. "\\n</parameter>\\n").

    Strings are raw text up to the first `closing` when `raw_strings` (JSON strings
    otherwise); other values are JSON with no trailing whitespace; booleans and null
    also accept Python's True/False/None (templates render them with ``|string``).
    `pad` (a rule name, e.g. bounded whitespace) goes before a non-raw value and before
    its `closing`, for formats that write ``<parameter=k>\\n3\\n</parameter>`` with a
    trimmed closing marker; raw strings keep that whitespace as text, but for `raw_edges`
    (GBNF expressions before and after a raw string: what the call reader strips). `root` is the document
    local ``$ref`` pointers resolve against (default: `schema`).
    """
    final = b.reserve(name)
    conv = _Converter(b, schema if root is None else root, additional_default, pad, raw_edges)
    return b.define(final, " | ".join(conv.tagged_alts(schema, final, raw_strings, closing)))


def grammar_block(kind: str) -> str:
    """Standalone GBNF text of a reusable block: json, string, number or space."""
    b = GbnfBuilder()
    roots = {
        "json": lambda: f"{space_rule(b)} {json_rule(b, 'value')} {space_rule(b)}",
        "string": lambda: json_rule(b, "string"),
        "number": lambda: json_rule(b, "number"),
        "space": lambda: space_rule(b),
    }
    if kind not in roots:
        raise ValueError(f"unknown block {kind!r}; expected one of {BLOCKS}")
    b.define(b.reserve("root"), roots[kind]())
    header = f"# {kind}.gbnf: generated by tools/gen_grammar_blocks.py from autoparser/grammar/schema.py; do not edit.\n"
    return header + b.render("root")


_SCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")
_SCHEMA_ONE = ("items", "additionalProperties", "not", "contains", "if", "then", "else")


def strict_objects(schema: Any) -> Any:
    """`schema` with ``additionalProperties: false`` on objects that declare properties and omit it."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    for key in _SCHEMA_MAPS:
        if isinstance(schema.get(key), dict):
            out[key] = {k: strict_objects(v) for k, v in schema[key].items()}
    for key in _SCHEMA_LISTS:
        if isinstance(schema.get(key), list):
            out[key] = [strict_objects(v) for v in schema[key]]
    for key in _SCHEMA_ONE:
        value = schema.get(key)
        if isinstance(value, list):
            out[key] = [strict_objects(v) for v in value]
        elif isinstance(value, dict):
            out[key] = strict_objects(value)
    if isinstance(schema.get("properties"), dict) and schema["properties"] and "additionalProperties" not in schema:
        out["additionalProperties"] = False
    return out
