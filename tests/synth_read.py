"""Hand-written decoders for the formats of ``tests/synth_axes.py`` (test code, not autoparser).

``decode(fmt, text, tools)`` reads one assistant output, as the conformance harness cuts it out of a
rendering (starting inside the reasoning block when the generation prompt opened one), back into
``{"reasoning_content", "content", "tool_calls": [{"id", "name", "arguments"}]}``. It knows the
format's axes and reads every part strictly (literal by literal, each value with its codec, untyped
tokens typed by the tool's JSON schema), so a format it reads back exactly is decodable: the values
can be recovered from the text. It raises ``Unreadable`` on anything it does not expect.

The building blocks (``Reader``, ``read_string``, ``typed``, ``schema_of``) are shared with
``tests/synth_novel.py``'s decoders.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from typing import Any
from urllib.parse import unquote, unquote_plus

import synth_axes as sa


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


# ---------------------------------------------------------------- values of one format
def terminators(fmt: sa.Format) -> list[str]:
    """What may follow the arguments of a call of ``fmt`` (raw text ends at the first of them)."""
    kind, *opt = fmt.envelope.split(".")
    out = ["```"] if kind.startswith("fence") else [sa.EACH[opt[0]][1]] if kind == "each" else []
    if fmt.placement == "tag":
        out.append("</")
    if fmt.placement in ("call", "sexp"):
        out.append(")")
    if fmt.id.startswith("after_args"):
        out.append(" " + sa.ID_SPELLINGS[fmt.id.split(".")[1]][0])
    return out



class Values:
    """Reads values: a string codec, spellings of booleans and null, nested values natively
    (``obj``/``arr`` syntax) or as JSON (through the string codec when ``json_via_codec``)."""

    def __init__(self, strings: str, true: str, false: str, null: str, nested: str, obj: sa.Obj | None,
                 arr: tuple[str, str, str] | None, json_via_codec: bool, terms: list[str] | None = None) -> None:
        self.strings, self.true, self.false, self.null, self.nested = strings, true, false, null, nested
        self.o, self.a, self.json_via_codec = obj, arr, json_via_codec
        self.quote = quote_char(strings)
        self.stop = {"entity": '["<]', "raw": "</", "csv_min": "[,\n]", "csv_all": "[,\n]"}.get(strings, "")
        if terms:   # raw text also ends where the call does
            self.stop = "|".join([self.stop, *(re.escape(t) for t in terms)])

    @classmethod
    def of(cls, fmt: sa.Format) -> Values:
        e = fmt.enc
        return cls(fmt.strings, *sa.BOOLEANS[fmt.booleans], sa.NULLS[fmt.null], fmt.nested, e.obj, e.arr,
                   e.json_via_codec, terminators(fmt) if fmt.strings in ("csv_min", "csv_all") else None)

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

    def key(self, r: Reader, o: sa.Obj) -> str:
        if o.key == "ident":
            return r.need(IDENT).group(0)
        if o.key == "json":
            return read_string(r, "json")
        if o.key == "str":
            return self.string(r)
        r.expect(":" if o.key == "colon" else "--")
        return r.need(IDENT).group(0)

    def key_ahead(self, r: Reader, o: sa.Obj) -> bool:
        """Whether a key and its separator follow (r is a copy)."""
        try:
            self.key(r, o)
        except (Unreadable, IndexError):
            return False
        return r.at(o.kv) or (self.null == "" and r.at(o.kv.rstrip()))

    def obj(self, r: Reader, o: sa.Obj, schema: dict[str, Any], wrapped: bool = True) -> dict[str, Any]:
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


# ---------------------------------------------------------------- arguments
def read_args(r: Reader, fmt: sa.Format, schema: dict[str, Any]) -> dict[str, Any]:
    """The argument object of one call, written in ``fmt``'s encoding, from ``r``'s position."""
    v, enc, e = Values.of(fmt), fmt.encoding, fmt.enc
    if enc == "json":
        out = r.json()
    elif enc == "json_string":
        out = json.loads(read_string(r, "json"))
    elif enc == "query" and fmt.nested == "native":
        out = _query_native(r, v, schema)
    elif enc in ("csv_header", "csv_pos"):
        out = _csv(r, v, schema, enc == "csv_header")
    elif enc == "xml_attrs":
        r.expect("<args")
        out = {}
        while r.eat(" "):
            k = r.need(IDENT).group(0)
            r.expect('="')
            out[k] = _token_value(v, read_string(r, "entity", '["<]'), sub_schema(schema, k))
            r.expect('"')
        r.expect("/>")
    elif enc == "xml_children":
        out = _xml_children(r, v, schema)
    elif enc == "yaml":
        out = _yaml(r, v, schema, "")
    elif enc in ("positional", "positional_sexp"):
        out = _positional(r, v, schema, enc == "positional_sexp")
    else:
        assert e.top is not None
        wrapped = bool(e.top.open) and not (enc == "plist" and fmt.placement == "sexp")
        if not wrapped and not v.key_ahead(Reader(r.s, r.i), e.top):
            return {}
        out = v.obj(r, e.top, schema, wrapped)
    if not isinstance(out, dict):
        raise Unreadable("arguments are not an object")
    return out


def _token_value(v: Values, text: str, schema: dict[str, Any]) -> Any:
    if types_of(schema) & {"object", "array"} and text[:1] in "{[":
        return json.loads(text)
    return v.typed_token(text, schema)


def _query_native(r: Reader, v: Values, schema: dict[str, Any]) -> dict[str, Any]:
    """``a[b][0]=x&...``: bracketed paths build the nested values (numeric steps are list indices)."""
    out: dict[str, Any] = {}
    while True:
        m = r.match(IDENT + r"((?:\[[^\]=&\s]*\])*)=")
        if m is None:
            return out
        path: list[str | int] = [m.group(0).split("[")[0].rstrip("=")]
        path += [int(p) if p.isdigit() else p for p in re.findall(r"\[([^\]]*)\]", m.group(1))]
        sch = schema
        for step in path:
            sch = sub_schema(sch, step)
        value = _token_value(v, read_string(r, v.strings), sch)
        node: Any = out
        for step, nxt in itertools.pairwise(path):
            if isinstance(node, list):
                while len(node) <= int(step):
                    node.append([] if isinstance(nxt, int) else {})
                node = node[int(step)]
            else:
                node = node.setdefault(step, [] if isinstance(nxt, int) else {})
        last = path[-1]
        if isinstance(node, list):
            node.append(value)
        else:
            node[last] = value
        if not (r.at("&") and re.match(IDENT, r.s[r.i + 1:r.i + 2] or "-")):
            return out
        r.i += 1


def _csv_field(r: Reader, v: Values, schema: dict[str, Any]) -> tuple[bool, Any]:
    """(written, value) of one CSV field (an unquoted empty field is not written)."""
    if r.at('"'):
        s = read_string(r, "csv_all")
        return True, json.loads(s) if types_of(schema) & {"object", "array"} and s[:1] in "{[" else s
    tok = r.need(f"(?:(?!{v.stop})[\\s\\S])*").group(0)
    if tok == "" and v.null != "":
        return False, None
    return True, v.typed_token(tok, schema, v.strings == "csv_min")


def _csv(r: Reader, v: Values, schema: dict[str, Any], header: bool) -> dict[str, Any]:
    if header:
        keys = r.need(r"[^\n]*").group(0).split(",")
        r.expect("\n")
    else:
        keys = list((schema.get("properties") or {}).keys())
    out: dict[str, Any] = {}
    for n, k in enumerate(keys):
        if n and not r.eat(","):
            if header:
                raise Unreadable("a CSV record shorter than its header")
            break
        written, value = _csv_field(r, v, sub_schema(schema, k))
        if written:
            out[k] = value
    return out


def _xml_children(r: Reader, v: Values, schema: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    first = True
    while first or (r.at("\n<") and re.match(IDENT, r.s[r.i + 2:r.i + 3] or "-")):
        if not first:
            r.i += 1
        first = False
        k, value = _xml_element(r, v, schema)
        out[k] = value
    return out


def _xml_element(r: Reader, v: Values, schema: dict[str, Any], key: str | int | None = None) -> tuple[str, Any]:
    r.expect("<")
    k = r.need(IDENT).group(0)
    sch = sub_schema(schema, k if key is None else key)
    if r.eat("/>"):
        return k, None
    r.expect(">")
    if v.nested == "native" and r.at("<") and not r.at("</") and not r.at("<!"):
        items: list[tuple[str, Any]] = []
        while not r.at("</"):
            items.append(_xml_element(r, v, sch, len(items) if types_of(sch) & {"array"} else None))
        value: Any = [x for _, x in items] if all(n == "item" for n, _ in items) and "object" not in types_of(sch) \
            else dict(items)
    elif v.strings == "cdata" and r.at("<![CDATA["):
        value = _token_value(v, read_string(r, "cdata"), {"type": "string"} if not types_of(sch) & {"object", "array"}
                             else sch)
    elif v.nested == "native" and r.at("</") and types_of(sch) & {"object", "array"}:
        value = [] if "array" in types_of(sch) else {}
    else:
        text = read_string(r, v.strings if v.strings != "cdata" else "raw", "</" if v.strings != "entity" else "<")
        value = _token_value(v, text, sch)
    r.expect(f"</{k}>")
    return k, value


def _yaml(r: Reader, v: Values, schema: dict[str, Any], ind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    first = True
    while first or (r.at("\n" + ind) and re.match(IDENT + ":", r.s[r.i + 1 + len(ind):])):
        r.expect("" if first and not ind else "\n" + ind)
        first = False
        k = r.need(IDENT).group(0)
        r.expect(":")
        sch = sub_schema(schema, k)
        out[k] = _yaml_value(r, v, sch, ind)
    return out


def _yaml_value(r: Reader, v: Values, sch: dict[str, Any], ind: str) -> Any:
    deeper = ind + "  "
    if v.nested == "native" and r.at("\n" + deeper + "-"):
        items: list[Any] = []
        while r.at("\n" + deeper + "-"):
            r.i += len(deeper) + 2
            items.append(_yaml_value(r, v, sub_schema(sch, len(items)), deeper))
        return items
    if v.nested == "native" and r.at("\n" + deeper) and re.match(IDENT + ":", r.s[r.i + 1 + len(deeper):]):
        return _yaml(r, v, sch, deeper)
    if v.null == "" and (r.done or r.at("\n")):
        return None
    r.expect(" ")
    return v.value(r, sch)


def _positional(r: Reader, v: Values, schema: dict[str, Any], sexp: bool) -> dict[str, Any]:
    """Values in schema order, then ``k=v`` (``:k v`` in an s-expression) for the rest."""
    keys = list((schema.get("properties") or {}).keys())
    sep = " " if sexp else ", "
    kw = sa.Obj("", "", "colon", " ", " ") if sexp else sa.Obj("", "", "ident", "=", ", ")
    out: dict[str, Any] = {}
    first = True
    while True:
        at = Reader(r.s, r.i + (0 if first else len(sep)))
        if not first and not r.at(sep):
            return out
        if v.key_ahead(Reader(at.s, at.i), kw):
            r.i = at.i
            out.update(v.obj(r, kw, schema, wrapped=False))
            return out
        if first and (r.at(")") or r.done):
            return out
        r.i = at.i
        if len(out) >= len(keys):
            raise Unreadable("more positional values than parameters")
        k = keys[len(out)]
        out[k] = v.value(r, sub_schema(schema, k))
        first = False


# ---------------------------------------------------------------- calls
def _id(r: Reader, spelling: str) -> str:
    a, b = sa.ID_SPELLINGS[spelling]
    return r.need(re.escape(a) + r"([A-Za-z0-9_\-]+)" + re.escape(b)).group(1)


def read_call(r: Reader, fmt: sa.Format, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """One call (name, id, arguments) from ``r``'s position, without its envelope."""
    p, opts = fmt.placement, fmt.name.split(".")[1:]
    idk, ido = ([*fmt.id.split("."), ""])[:2]
    ml = fmt.multiline
    call: dict[str, Any] = {"id": None}
    if idk == "prefix":
        call["id"] = _id(r, ido)
        r.expect(" ")

    def name() -> str:
        n = r.need(IDENT).group(0)
        if idk == "after_name":
            if ido == "bracket":
                r.expect(" ")
            call["id"] = _id(r, ido)
        return n

    def args(n: str) -> dict[str, Any]:
        return read_args(r, fmt, schema_of(tools, n))

    if p == "json":
        nk, ak = opts
        r.expect("{")
        if ido == "first":
            r.expect('"id": ')
            call["id"] = read_string(r, "json")
            r.expect(", ")
        r.expect(f'"{nk}": ')
        call["name"] = read_string(r, "json")
        if ido == "after":
            r.expect(', "id": ')
            call["id"] = read_string(r, "json")
        if fmt.encoding == "json_flat":
            call["arguments"] = {}
            while r.eat(", "):
                k = read_string(r, "json")
                r.expect(": ")
                if k == "id" and ido == "last" and r.at('"'):
                    value = r.json()
                    if r.at("}"):
                        call["id"] = value
                        break
                    call["arguments"][k] = value
                    continue
                call["arguments"][k] = r.json()
        else:
            r.expect(f', "{ak}": ')
            if fmt.encoding in ("json", "json_string"):
                call["arguments"] = args(call["name"])
            else:
                inner = Reader(read_string(r, "json"))
                call["arguments"] = read_args(inner, fmt, schema_of(tools, call["name"]))
                if not inner.done:
                    raise Unreadable(f"text after the arguments: {inner.s[inner.i:][:40]!r}")
            if ido == "last":
                r.expect(', "id": ')
                call["id"] = read_string(r, "json")
        r.expect("}")
    elif p == "tag":
        r.expect({"function": "<function=", "tool": '<tool name="', "element": "<"}[opts[0]])
        call["name"] = r.need(IDENT).group(0)
        if opts[0] == "tool":
            r.expect('"')
        if idk == "after_name":
            call["id"] = r.need(r' id="([^"]+)"').group(1)
        r.expect(">" + ("\n" if ml else ""))
        call["arguments"] = args(call["name"])
        r.expect(("\n" if ml else "") + {"function": "</function>", "tool": "</tool>"}.get(opts[0], f"</{call['name']}>"))
    elif p == "header":
        a, b = sa.HEADERS[opts[0]]
        r.expect(a)
        call["name"] = name()
        r.expect(b + "\n")
        call["arguments"] = args(call["name"])
    elif p in ("keyword", "label"):
        if p == "keyword":
            r.expect(sa.KEYWORDS[opts[0]] + " ")
        call["name"] = name()
        r.expect((":" if p == "label" else "") + ("\n" if ml else " "))
        call["arguments"] = args(call["name"])
    elif p == "sexp":
        r.expect("(")
        call["name"] = name()
        r.expect(" ")
        call["arguments"] = args(call["name"])
        r.expect(")")
    elif p == "url":
        r.expect(opts[0] + "://")
        call["name"] = r.need(IDENT).group(0)
        if idk == "after_name":
            call["id"] = r.need(r"/([A-Za-z0-9_\-]+)").group(1)
        r.expect("?")
        call["arguments"] = args(call["name"])
    elif p == "call":
        call["name"] = name()
        r.expect("(")
        call["arguments"] = args(call["name"])
        r.expect(")")
    if idk == "after_args":
        r.expect("\n" if ml and p != "tag" else " ")
        call["id"] = _id(r, ido)
    return call


def _calls(r: Reader, fmt: sa.Format, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Every call from ``r``'s position to the end of the text, in the format's envelope."""
    kind, *opt = fmt.envelope.split(".")
    calls: list[dict[str, Any]] = []
    if kind in ("each", "fence1"):
        o, c, nl = sa.EACH[opt[0]] if kind == "each" else ("```" + opt[0], "```", True)
        o, c = (o + "\n", "\n" + c) if nl else (o, c)
        while True:
            r.expect(o)
            calls.append(read_call(r, fmt, tools))
            r.expect(c)
            if r.done:
                return calls
            r.expect("\n")
    if kind == "bare":
        while True:
            calls.append(read_call(r, fmt, tools))
            if r.done:
                return calls
            r.expect("\n")
    o, c = sa.SECTION[opt[0]] if kind == "section" else ("```" + opt[0], "```")
    sep = sa.SEPS[opt[1]] if kind == "section" else "\n"
    r.expect(o + "\n")
    while True:
        calls.append(read_call(r, fmt, tools))
        if r.eat("\n" + c):
            break
        r.expect(sep)
    if not r.done:
        raise Unreadable(f"text after the calls: {r.s[r.i:][:40]!r}")
    return calls


def decode(fmt: sa.Format, text: str, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Reasoning, content and calls of one generated text (cut as the conformance harness cuts it)."""
    r_open, r_close, how = sa.REASONING[fmt.reasoning]
    reasoning = ""
    if how:   # the generation prompt opened the block: the text starts inside it
        reasoning, sep, text = text.partition(r_close.rstrip("\n") if how == "omit" else r_close)
        if not sep:
            raise Unreadable("the reasoning block is not closed")
        text = text.lstrip("\n") if how == "omit" else text
    elif r_open and text.startswith(r_open):
        reasoning, sep, text = text[len(r_open):].partition(r_close)
        if not sep:
            raise Unreadable("the reasoning block is not closed")
    # the calls start at the first line from which the whole rest reads as calls
    starts = [0] + [m.end() for m in re.finditer("\n", text)]
    for start in starts:
        r = Reader(text, start)
        try:
            calls = _calls(r, fmt, tools)
        except (Unreadable, IndexError, ValueError):
            continue
        content = text[:start]
        if start and not content.endswith("\n"):
            continue
        content = content[:-1] if content.endswith("\n") else content
        return {"reasoning_content": reasoning.strip(), "content": content,
                "tool_calls": [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in calls]}
    return {"reasoning_content": reasoning.strip(), "content": text, "tool_calls": []}
