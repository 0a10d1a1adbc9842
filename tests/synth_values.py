"""The value readers the drawn formats' decoders share (test code, not autoparser).

``Reader`` is a cursor with strict literal matching; ``read_string`` / ``read_nstring`` read a string
written with one codec (JSON, Python/Ruby single quotes, doubled quotes, shell, percent-encoding,
XML entities, raw text up to a delimiter, CDATA, CSV, Nix, HCL, backslash-escaped lines, Tcl, CSS,
Elixir, wiki entities, Erlang binaries, LaTeX braces, folded mail headers, logfmt, URL paths, Java
properties); ``typed`` types an unquoted token by the tool's JSON schema; ``Values`` reads any value
of one spelling (strings, booleans, null, nested objects and arrays natively or as JSON).
"""

from __future__ import annotations

import html
import json
import re
from typing import Any
from urllib.parse import unquote, unquote_plus

from synth_axes import Obj


class Unreadable(ValueError):
    """The text is not what the format writes."""


class Reader:
    """A cursor over a text with strict literal matching."""

    def __init__(self, s: str, i: int = 0) -> None:
        self.s, self.i = s, i

    def at(self, lit: str) -> bool:
        return self.s.startswith(lit, self.i)

    def eat(self, lit: str) -> bool:
        if lit and self.at(lit):
            self.i += len(lit)
            return True
        return not lit

    def expect(self, lit: str) -> None:
        if not self.eat(lit):
            raise Unreadable(f"expected {lit!r} at {self.i}: {self.s[self.i:self.i + 40]!r}")

    def match(self, pattern: str) -> re.Match[str] | None:
        m = re.compile(pattern).match(self.s, self.i)
        if m:
            self.i = m.end()
        return m

    def need(self, pattern: str) -> re.Match[str]:
        m = self.match(pattern)
        if m is None:
            raise Unreadable(f"expected /{pattern}/ at {self.i}: {self.s[self.i:self.i + 40]!r}")
        return m

    def until(self, lit: str) -> str:
        j = self.s.find(lit, self.i)
        if j < 0:
            raise Unreadable(f"no {lit!r} after {self.i}")
        out, self.i = self.s[self.i:j], j
        return out

    def json(self) -> Any:
        try:
            value, self.i = json.JSONDecoder().raw_decode(self.s, self.i)
        except ValueError as e:
            raise Unreadable(f"JSON at {self.i}: {e}") from None
        return value

    @property
    def done(self) -> bool:
        return self.i >= len(self.s)


IDENT = r"[A-Za-z_][A-Za-z0-9_]*"
NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
BARE = r"[A-Za-z0-9_#.+\-~]*"
_ESC = {"n": "\n", "r": "\r", "t": "\t", "b": "\b", "f": "\f", "/": "/", "\\": "\\", '"': '"', "'": "'", "$": "$"}


def _backslashed(r: Reader, quote: str, escapes: str) -> str:
    """A string between ``quote``s whose backslash escapes are ``escapes`` (``u`` for \\uXXXX)."""
    r.expect(quote)
    out = []
    while True:
        if r.done:
            raise Unreadable("unterminated string")
        c = r.s[r.i]
        if c == quote:
            r.i += 1
            return "".join(out)
        if c == "\\" and r.i + 1 < len(r.s) and r.s[r.i + 1] in escapes:
            e = r.s[r.i + 1]
            if e == "u":
                code = int(r.s[r.i + 2:r.i + 6], 16)
                r.i += 6
                if 0xD800 <= code < 0xDC00 and r.at("\\u"):
                    code = 0x10000 + ((code - 0xD800) << 10) + int(r.s[r.i + 2:r.i + 6], 16) - 0xDC00
                    r.i += 6
                out.append(chr(code))
                continue
            out.append(_ESC[e])
            r.i += 2
            continue
        if c == "\\":
            raise Unreadable(f"unknown escape at {r.i}")
        out.append(c)
        r.i += 1


def quote_char(codec: str) -> str | None:
    """The character a quoted string of ``codec`` starts with (None: strings are not quoted)."""
    return {"json": '"', "nix": '"', "hcl": '"', "python_single": "'", "ruby_single": "'", "single_doubled": "'",
            "shell": "'", "csv_all": '"', "csv_min": '"', "cdata": "<![CDATA["}.get(codec)


def read_string(r: Reader, codec: str, stop: str = "") -> str:
    """A string written with ``codec``; unquoted codecs read up to ``stop`` (a regex of what ends it)."""
    if codec == "json":
        return _backslashed(r, '"', '"\\/bfnrtu')
    if codec == "nix":
        return _backslashed(r, '"', '"\\/bfnrtu$')
    if codec == "hcl":   # JSON with ${ and %{ doubled: find the closing quote, undo the doubling
        j = r.i + 1
        while j < len(r.s) and r.s[j] != '"':
            j += 2 if r.s[j] == "\\" else 1
        if not r.at('"') or j >= len(r.s):
            raise Unreadable("no HCL string")
        text, r.i = r.s[r.i:j + 1].replace("$${", "${").replace("%%{", "%{"), j + 1
        return str(json.loads(text))
    if codec == "python_single":
        return _backslashed(r, "'", "\\'nrt")
    if codec == "ruby_single":
        return _backslashed(r, "'", "\\'")
    if codec == "single_doubled":
        r.expect("'")
        out = []
        while True:
            out.append(r.until("'"))
            r.i += 1
            if not r.eat("'"):
                return "".join(out)
            out.append("'")
    if codec == "shell":
        out = []
        while True:
            r.expect("'")
            out.append(r.until("'"))
            r.i += 1
            if not r.at("\\''"):
                return "".join(out)
            r.i += 2
            out.append("'")
    if codec in ("csv_all", "csv_min") and r.at('"'):
        r.i += 1
        out = []
        while True:
            out.append(r.until('"'))
            r.i += 1
            if not r.eat('"'):
                return "".join(out)
            out.append('"')
    if codec == "cdata":
        out = []
        r.expect("<![CDATA[")
        while True:
            out.append(r.until("]]>"))
            r.i += 3
            if not r.eat("<![CDATA["):
                return "".join(out)
    token = r.need(f"(?:(?!{stop})[\\s\\S])*" if stop else r"[A-Za-z0-9_.~/%+\-]*").group(0)
    if codec == "percent":
        return unquote(token)
    if codec == "percent_plus":
        return unquote_plus(token)
    if codec == "entity":
        return html.unescape(token)
    return token   # raw, csv_min unquoted


# ---------------------------------------------------------------- schema typing
def types_of(schema: dict[str, Any]) -> set[str]:
    """The JSON types a schema allows (empty: any)."""
    t = schema.get("type")
    out = set(t) if isinstance(t, list) else {t} if isinstance(t, str) else set()
    for sub in schema.get("anyOf", []) + schema.get("oneOf", []):
        out |= types_of(sub)
    if "enum" in schema and not out:
        out = {"string"}
    return out


def sub_schema(schema: dict[str, Any], key: str | int) -> dict[str, Any]:
    """The schema of a member (an object's property, an array's item)."""
    if isinstance(key, int):
        return dict(schema.get("items") or {})
    for s in [schema, *schema.get("anyOf", [])]:
        if key in (s.get("properties") or {}):
            return dict(s["properties"][key])
    return {}


def schema_of(tools: list[dict[str, Any]] | None, name: str) -> dict[str, Any]:
    for t in tools or []:
        fn = t.get("function", t)
        if fn.get("name") == name:
            return dict(fn.get("parameters") or {})
    return {}


def typed(tok: str, schema: dict[str, Any], true: str, false: str, null: str, may_be_string: bool) -> Any:
    """An unquoted token read as the schema says (untyped: null, boolean, number, then text)."""
    t = types_of(schema)
    if may_be_string and t and t <= {"string"}:
        return tok
    if t & {"object", "array"} and tok[:1] in "{[":
        return json.loads(tok)
    if tok == null and (not t or "null" in t):
        return None
    if tok in (true, false) and (not t or "boolean" in t):
        return tok == true
    if re.fullmatch(NUMBER, tok) and (not t or t & {"integer", "number"}):
        return float(tok) if re.search(r"[.eE]", tok) else int(tok)
    if may_be_string:
        return tok
    raise Unreadable(f"token {tok!r} is no value of {sorted(t)}")



# ---------------------------------------------------------------- codecs of synth_novel
def nquote(codec: str) -> str | None:
    """What a quoted string of ``codec`` starts with (None: the codec does not quote)."""
    if codec in ("json", "rust", "elixir", "tcl", "css", "logfmt", "csv_min", "backtick"):
        return '"'
    if codec in ("python_single", "ruby_single", "single_doubled"):
        return "'"
    return {"erlang": "<<", "latex": "{"}.get(codec)


def _escaped_until(r: Reader, stop: str) -> str:
    """Text with backslash escapes up to an unescaped match of ``stop`` (or the end)."""
    out, pat = [], re.compile(stop)
    while not r.done and not pat.match(r.s, r.i):
        c = r.s[r.i]
        if c == "\\" and r.i + 1 < len(r.s):
            e = r.s[r.i + 1]
            out.append({"n": "\n", "r": "\r", "t": "\t"}.get(e, e))
            r.i += 2
        else:
            out.append(c)
            r.i += 1
    return "".join(out)


def read_nstring(r: Reader, codec: str, stop: str = "") -> str:
    """A string written with one of synth_novel's codecs (unquoted ones read up to regex ``stop``)."""
    if codec.startswith("bs:"):
        return _escaped_until(r, stop or r"\n")
    if codec == "rust":
        s = read_string(r, "json")
        r.expect(".to_string()")
        return s
    if codec in ("elixir", "tcl"):
        r.expect('"')
        return _escaped_until(r, '"') + ("" if r.eat('"') else _raise("unterminated string"))
    if codec == "css":
        r.expect('"')
        out = []
        while not r.at('"'):
            if r.done:
                raise Unreadable("unterminated CSS string")
            m = r.match(r"\\([0-9a-fA-F]{1,6}) ?")
            if m:
                out.append(chr(int(m.group(1), 16)))
            elif r.eat("\\"):
                out.append(r.s[r.i])
                r.i += 1
            else:
                out.append(r.s[r.i])
                r.i += 1
        r.i += 1
        return "".join(out)
    if codec == "backtick":   # PowerShell: a backtick escapes (`` `n `t `r ``, any other character as itself)
        r.expect('"')
        out = []
        while not r.eat('"'):
            if r.done:
                raise Unreadable("unterminated string")
            if r.eat("`") and not r.done:
                out.append({"n": "\n", "r": "\r", "t": "\t"}.get(r.s[r.i], r.s[r.i]))
            else:
                out.append(r.s[r.i])
            r.i += 1
        return "".join(out)
    if codec == "erlang":
        r.expect("<<")
        s = read_string(r, "json")
        r.expect(">>")
        return s
    if codec == "latex":
        r.expect("{")
        s = _escaped_until(r, "}")
        r.expect("}")
        return s
    if codec == "logfmt":
        return read_string(r, "json") if r.at('"') else r.need(r"[^\s]*").group(0)
    if codec == "wiki":
        return html.unescape(r.need(r"(?:(?!\||\}\})[\s\S])*").group(0))
    if codec == "email":
        return r.need(r"(?:(?!\n(?!\t))[\s\S])*").group(0).replace("\n\t", "\n")
    if codec == "percent_path":
        return unquote(r.need(r"[^/?\s]*").group(0))
    if codec == "prop":
        return _escaped_until(r, r"\n")
    return read_string(r, codec, stop)


def _raise(why: str) -> str:
    raise Unreadable(why)


# ---------------------------------------------------------------- values
class Values:
    """Reads values: a string codec, spellings of booleans and null, nested values natively
    (``obj``/``arr`` syntax) or as JSON (through the string codec when ``json_via_codec``)."""

    def __init__(self, strings: str, true: str, false: str, null: str, nested: str, obj: Obj | None,
                 arr: tuple[str, str, str] | None, json_via_codec: bool, terms: list[str] | None = None) -> None:
        self.strings, self.true, self.false, self.null, self.nested = strings, true, false, null, nested
        self.o, self.a, self.json_via_codec = obj, arr, json_via_codec
        self.quote = quote_char(strings)
        self.stop = {"entity": '["<]', "raw": "</", "csv_min": "[,\n]", "csv_all": "[,\n]"}.get(strings, "")
        if terms:   # raw text also ends where the call does
            self.stop = "|".join([self.stop, *(re.escape(t) for t in terms)])


    def string(self, r: Reader) -> str:
        return read_string(r, self.strings, self.stop)

    def value(self, r: Reader, schema: dict[str, Any]) -> Any:
        o, a = self.o, self.a
        if self.nested == "native" and o is not None and a is not None:
            if o.open == a[0]:   # plist ( / Lua {: an object starts with a key
                if r.at(o.open):
                    k = Reader(r.s, r.i + len(o.open))
                    if self.key_ahead(k, o) or r.at(o.open + o.close):
                        return self.obj(r, o, schema)
                    return self.arr(r, schema)
            elif r.at(o.open):
                return self.obj(r, o, schema)
            elif r.at(a[0]):
                return self.arr(r, schema)
        if self.nested == "json" and not self.json_via_codec and (r.at("{") or r.at("[")):
            return r.json()
        if self.quote and r.at(self.quote):
            s = self.string(r)
            if self.json_via_codec and types_of(schema) & {"object", "array"} and s[:1] in "{[":
                return json.loads(s)
            return s
        if self.quote is None or self.strings == "csv_min":
            tok = read_string(r, self.strings, self.stop)
            if tok[:1] in "{[" and types_of(schema) & {"object", "array"}:
                return json.loads(tok)
            return typed(tok, schema, self.true, self.false, self.null, True)
        tok = r.need(BARE).group(0)
        return typed(tok, schema, self.true, self.false, self.null, False)

    def key(self, r: Reader, o: Obj) -> str:
        if o.key == "ident":
            return r.need(IDENT).group(0)
        if o.key == "json":
            return read_string(r, "json")
        if o.key == "str":
            return self.string(r)
        r.expect(":" if o.key == "colon" else "--")
        return r.need(IDENT).group(0)

    def key_ahead(self, r: Reader, o: Obj) -> bool:
        """Whether a key and its separator follow (r is a copy)."""
        try:
            self.key(r, o)
        except (Unreadable, IndexError):
            return False
        return r.at(o.kv) or (self.null == "" and r.at(o.kv.rstrip()))

    def obj(self, r: Reader, o: Obj, schema: dict[str, Any], wrapped: bool = True) -> dict[str, Any]:
        """An object in syntax ``o`` (``wrapped``: with its brackets; else pairs while a key follows)."""
        out: dict[str, Any] = {}
        if wrapped:
            r.expect(o.open)
            if r.eat(o.close):
                return out
        while True:
            k = self.key(r, o)
            if self.null == "" and not r.at(o.kv) and r.eat(o.kv.rstrip()):
                out[k] = None
            else:
                r.expect(o.kv)
                out[k] = self.value(r, sub_schema(schema, k))
                r.expect(o.end)
            if wrapped:
                if r.eat(o.close):
                    return out
                r.expect(o.sep)
            elif r.at(o.sep) and self.key_ahead(Reader(r.s, r.i + len(o.sep)), o):
                r.i += len(o.sep)
            else:
                return out

    def arr(self, r: Reader, schema: dict[str, Any]) -> list[Any]:
        assert self.a is not None
        op, cl, sep = self.a
        r.expect(op)
        out: list[Any] = []
        if r.eat(cl):
            return out
        while True:
            out.append(self.value(r, sub_schema(schema, len(out))))
            if r.eat(cl):
                return out
            r.expect(sep)

    def typed_token(self, tok: str, schema: dict[str, Any], may_be_string: bool = True) -> Any:
        return typed(tok, schema, self.true, self.false, self.null, may_be_string)
