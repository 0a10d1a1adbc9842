"""Hand-written decoders for the formats of ``tests/synth_axes.py`` (test code, not autoparser).

``decode(fmt, text, tools)`` reads one assistant output, as the conformance harness cuts it out of a
rendering (starting inside the reasoning block when the generation prompt opened one), back into
``{"reasoning_content", "content", "tool_calls": [{"id", "name", "arguments"}]}``. It knows the
format's axes and reads every part strictly (literal by literal, each value with its codec, untyped
tokens typed by the tool's JSON schema), so a format it reads back exactly is decodable: the values
can be recovered from the text. It raises ``Unreadable`` on anything it does not expect. The value
readers are in ``tests/synth_values.py``.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

import synth_axes as sa
from synth_values import (
    IDENT,
    Reader,
    Unreadable,
    Values,
    quote_char,
    read_string,
    schema_of,
    sub_schema,
    types_of,
)

__all__ = ["Unreadable", "decode", "quote_char", "read_call", "terminators"]


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


def values_of(fmt: sa.Format) -> Values:
    """The value reader of ``fmt``'s spellings."""
    e = fmt.enc
    return Values(fmt.strings, *sa.BOOLEANS[fmt.booleans], sa.NULLS[fmt.null], fmt.nested, e.obj, e.arr,
                  e.json_via_codec, terminators(fmt) if fmt.strings in ("csv_min", "csv_all") else None)


# ---------------------------------------------------------------- arguments
def read_args(r: Reader, fmt: sa.Format, schema: dict[str, Any]) -> dict[str, Any]:
    """The argument object of one call, written in ``fmt``'s encoding, from ``r``'s position."""
    v, enc, e = values_of(fmt), fmt.encoding, fmt.enc
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
