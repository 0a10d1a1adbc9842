"""Hand-written decoders for the formats of ``tests/synth_novel.py`` (test code, not autoparser).

``decode(novel, text, tools)`` reads one generated assistant output back into
``{"reasoning_content", "content", "tool_calls": [{"id", "name", "arguments"}]}``, strictly, each form
by its own reader; untyped tokens are typed by the tool's JSON schema. ``Unreadable`` on anything else.
"""

from __future__ import annotations

import html
import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import synth_novel as sn
from synth_axes import Obj
from synth_values import (
    IDENT,
    Reader,
    Unreadable,
    Values,
    nquote,
    read_nstring,
    read_string,
    schema_of,
    sub_schema,
    typed,
    types_of,
)

ID = r"[A-Za-z0-9_\-]+"




class NValues(Values):
    """Values in a synth_novel ``Style``; ``stop`` ends an unquoted value."""

    def __init__(self, st: sn.Style, stop: str = "") -> None:
        super().__init__(st.strings, st.true, st.false, st.null, "native" if st.obj else "json", st.obj, st.arr,
                         st.json_via_codec)
        self.st, self.quote, self.stop = st, nquote(st.strings), stop

    def string(self, r: Reader) -> str:
        return read_nstring(r, self.strings, self.stop)

    def value(self, r: Reader, schema: dict[str, Any]) -> Any:
        pre, post = self.st.json_wrap
        if pre and r.eat(pre):
            v = r.json()
            r.expect(post)
            return v
        o, a = self.o, self.a
        if o is not None and a is not None and (r.at(o.open) or r.at(a[0])):
            # (the same brackets for both: an empty one is the schema's type, an object unless it says array)
            is_obj = o.open != a[0] or self.key_ahead(Reader(r.s, r.i + len(o.open)), o) or \
                (r.at(o.open + o.close) and "array" not in types_of(schema))
            return self.obj(r, o, schema) if is_obj and r.at(o.open) else self.arr(r, schema)
        if o is None and not self.json_via_codec and (r.at("{") or r.at("[")):
            return r.json()
        if self.quote and r.at(self.quote):
            s = self.string(r)
            if post and r.eat(post):
                return json.loads(s)
            if self.json_via_codec and types_of(schema) & {"object", "array"} and s[:1] in "{[":
                return json.loads(s)
            return s
        if self.quote is None or self.strings in ("logfmt", "csv_min"):
            tok = self.string(r)
            if types_of(schema) & {"object", "array"} and tok[:1] in "{[":
                return json.loads(tok)
            return typed(tok, schema, self.true, self.false, self.null, True)
        return typed(r.need(self.st.bare).group(0), schema, self.true, self.false, self.null, False)


# ---------------------------------------------------------------- typed value trees
def _xmlrpc(r: Reader) -> Any:
    r.expect("<value>")
    if r.eat("<nil/>"):
        v: Any = None
    elif r.eat("<boolean>"):
        v = r.need("[01]").group(0) == "1"
        r.expect("</boolean>")
    elif r.eat("<int>"):
        v = int(r.until("</int>"))
        r.expect("</int>")
    elif r.eat("<double>"):
        v = float(r.until("</double>"))
        r.expect("</double>")
    elif r.eat("<string>"):
        v = html.unescape(r.until("</string>"))
        r.expect("</string>")
    elif r.eat("<struct>"):
        v = {}
        while r.eat("<member><name>"):
            k = r.until("</name>")
            r.expect("</name>")
            v[k] = _xmlrpc(r)
            r.expect("</member>")
        r.expect("</struct>")
    else:
        r.expect("<array><data>")
        v = []
        while r.at("<value>"):
            v.append(_xmlrpc(r))
        r.expect("</data></array>")
    r.expect("</value>")
    return v


def _tagged(r: Reader) -> Any:
    if r.eat("<null/>"):
        return None
    for tag, conv in (("bool", lambda s: s == "true"), ("int", int), ("float", float), ("str", html.unescape)):
        if r.eat(f"<{tag}>"):
            v = conv(r.until(f"</{tag}>"))
            r.expect(f"</{tag}>")
            return v
    if r.eat("<map>"):
        m: dict[str, Any] = {}
        while r.eat('<entry key="'):
            k = r.until('">')
            r.expect('">')
            m[k] = _tagged(r)
            r.expect("</entry>")
        r.expect("</map>")
        return m
    r.expect("<list>")
    out = []
    while not r.eat("</list>"):
        out.append(_tagged(r))
    return out


def _proto(r: Reader) -> Any:
    if r.eat("null_value: NULL_VALUE"):
        return None
    if r.eat("bool_value: "):
        return r.need("true|false").group(0) == "true"
    if r.eat("number_value: "):
        return r.json()
    if r.eat("string_value: "):
        return read_string(r, "json")
    if r.eat("struct_value { "):
        m: dict[str, Any] = {}
        while r.eat("fields { key: "):
            k = read_string(r, "json")
            r.expect(" value { ")
            m[k] = _proto(r)
            r.expect(" } } ")
        r.expect("}")
        return m
    r.expect("list_value { ")
    out = []
    while r.eat("values { "):
        out.append(_proto(r))
        r.expect(" } ")
    r.expect("}")
    return out


def _java(r: Reader) -> Any:
    if r.eat("nullValue = true"):
        return None
    if r.eat("boolValue = "):
        return r.need("true|false").group(0) == "true"
    if r.eat("intValue = ") or r.eat("doubleValue = "):
        return r.json()
    if r.eat("stringValue = "):
        return read_string(r, "json")
    r.expect("json = ")
    return json.loads(read_string(r, "json"))


def _nodes(r: Reader, v: NValues, schema: dict[str, Any], ind: str, semi: bool) -> dict[str, Any]:
    """KDL / nginx child nodes at indentation ``ind``: ``k v``, ``k v1 v2``, ``k {...}``."""
    out: dict[str, Any] = {}
    while r.at("\n" + ind) and re.match(IDENT, r.s[r.i + 1 + len(ind):]):
        r.i += 1 + len(ind)
        k = r.need(IDENT).group(0)
        sch = sub_schema(schema, k)
        if r.eat(" {"):
            out[k] = _nodes(r, v, sch, ind + "    ", semi)
            r.expect("\n" + ind + "}")
            continue
        items = []
        while r.eat(" "):
            items.append(v.value(r, sub_schema(sch, len(items)) if "array" in types_of(sch) else sch))
        if "array" not in types_of(sch) and len(items) != 1:
            raise Unreadable(f"{k}: {len(items)} values")
        out[k] = items if "array" in types_of(sch) else items[0]
        r.expect(";" if semi else "")
    return out


def _apache(r: Reader, v: NValues, schema: dict[str, Any], ind: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    while r.at("\n" + ind) and re.match(r"<?" + IDENT, r.s[r.i + 1 + len(ind):]):
        r.i += 1 + len(ind)
        if r.eat("<"):
            k = r.need(IDENT).group(0)
            r.expect(">")
            out[k] = _apache(r, v, sub_schema(schema, k), ind + "    ")
            r.expect(f"\n{ind}</{k}>")
            continue
        k = r.need(IDENT).group(0)
        sch = sub_schema(schema, k)
        items = []
        while r.eat(" "):
            items.append(v.value(r, sub_schema(sch, len(items)) if "array" in types_of(sch) else sch))
        out[k] = items if "array" in types_of(sch) else items[0]
    return out


def _fortran(r: Reader, v: NValues, schema: dict[str, Any]) -> dict[str, Any]:
    """``k=v, o%k=v, a=v1, v2`` up to `` /``; a missing value is null."""
    out: dict[str, Any] = {}
    path_re = IDENT + r"(?:%" + IDENT + r")*="
    first = True
    while first or (r.at(", ") and re.match(path_re, r.s[r.i + 2:])):
        if not first:
            r.i += 2
        first = False
        m = r.match(path_re)
        if m is None:
            return out
        path = m.group(0)[:-1].split("%")
        sch = schema
        for p in path:
            sch = sub_schema(sch, p)
        items = []
        while not (r.at(" /") or (r.at(", ") and re.match(path_re, r.s[r.i + 2:]))):
            if items:
                r.expect(", ")
            if r.at("'"):
                items.append(read_string(r, "single_doubled"))
            else:
                tok = r.need(r"[^,\s/]*").group(0)
                items.append(typed(tok, sub_schema(sch, 0) if "array" in types_of(sch) else sch,
                                   ".true.", ".false.", "", False))
        node = out
        for p in path[:-1]:
            node = node.setdefault(p, {})
        node[path[-1]] = items if "array" in types_of(sch) else items[0] if items else None
    return out


def _put(out: dict[str, Any], path: list[str], value: Any) -> None:
    node: Any = out
    for step, nxt in itertools.pairwise(path):
        key: Any = int(step) if isinstance(node, list) else step
        if isinstance(node, list):
            while len(node) <= key:
                node.append([] if nxt.isdigit() else {})
        elif key not in node:
            node[key] = [] if nxt.isdigit() else {}
        node = node[key]
    if isinstance(node, list):
        node.append(value)
    else:
        node[path[-1]] = value


# ---------------------------------------------------------------- one call per form
def _read_call(n: sn.Novel, r: Reader, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    f, ids = n.spec, n.ids == "on"
    st = f.style
    call: dict[str, Any] = {"id": None, "name": None, "arguments": {}}

    def name() -> str:
        call["name"] = r.need(IDENT).group(0)
        return str(call["name"])

    def schema() -> dict[str, Any]:
        return schema_of(tools, call["name"])

    def obj(o: Obj, wrapped: bool = True, stop: str = "") -> dict[str, Any]:
        v = NValues(st, stop)
        if not wrapped and not v.key_ahead(Reader(r.s, r.i), o):
            return {}
        return v.obj(r, o, schema(), wrapped)

    def id_(prefix: str, pattern: str = ID, suffix: str = "") -> None:
        if ids:
            r.expect(prefix)
            call["id"] = r.need(pattern).group(0)
            r.expect(suffix)

    def pairs_until(start: str, kv: str, end: str, stop: str, more: Callable[[], bool] | None = None) -> None:
        """Pairs ``start k kv v end`` while ``start`` (and ``more``) follow."""
        v = NValues(st, stop)
        while r.at(start) and (more is None or more()):
            r.i += len(start)
            k = r.need(IDENT).group(0)
            r.expect(kv)
            call["arguments"][k] = v.value(r, sub_schema(schema(), k))
            r.expect(end)

    form = n.form
    if form in ("jsonrpc", "http"):
        if form == "jsonrpc":
            r.expect('{"jsonrpc": "2.0", "method": ')
            call["name"] = read_string(r, "json")
            r.expect(', "params": ')
            call["arguments"] = r.json()
            if ids:
                r.expect(', "id": ')
                call["id"] = read_string(r, "json")
            r.expect("}")
        else:
            r.expect("POST /tools/")
            name()
            r.expect(" HTTP/1.1")
            id_("\nX-Call-Id: ")
            r.expect("\nContent-Type: application/json\n\n")
            call["arguments"] = r.json()
    elif form == "bbcode":
        r.expect("[call=")
        name()
        r.expect("]")
        id_("[id]", ID, "[/id]")
        pairs_until("[arg=", "]", "[/arg]", r"\[")
        r.expect("[/call]")
    elif form == "ini_section":
        r.expect("[")
        name()
        r.expect("]")
        id_("\nid = ")
        pairs_until("\n", " = ", "", r"\n", lambda: bool(re.match(IDENT + " = ", r.s[r.i + 1:])))
    elif form == "prolog":
        r.expect("call(")
        if ids:
            call["id"] = read_string(r, "python_single")
            r.expect(", ")
        name()
        r.expect(", ")
        call["arguments"] = obj(Obj("[", "]", "ident", "=", ", "))
        r.expect(")")
    elif form in ("go_struct", "rust_struct", "decorator"):
        r.expect("@" if form == "decorator" else "")
        name()
        call["arguments"] = obj(Obj(" { ", " }", "ident", ": ", ", ") if form == "rust_struct" else sn._JSON5)
    elif form == "md_table":
        r.expect("**")
        name()
        r.expect("**")
        id_(" (id: ", ID, ")")
        r.expect("\n| argument | value |\n|---|---|")
        pairs_until("\n| ", " | ", " |", r" \|")
    elif form == "md_bullets":
        r.expect("### ")
        name()
        id_(" — ")
        pairs_until("\n- **", "**: ", "", r"\n")
    elif form == "xmlrpc":
        r.expect("<methodCall><methodName>")
        name()
        r.expect("</methodName><params><param>")
        call["arguments"] = _xmlrpc(r)
        r.expect("</param></params></methodCall>")
    elif form == "yaml_seq":
        r.expect("\n  - tool: ")
        name()
        id_("\n    id: ")
        r.expect("\n    with:")
        if not r.eat(" {}"):
            pairs_until("\n      ", ": ", "", "")
    elif form == "pipe_line":
        name()
        pairs_until("|", "=", "", r"\||\n", lambda: not r.at("|#"))
        id_("|#")
    elif form == "typed_tags":
        r.expect('<call name="')
        name()
        r.expect('"')
        id_(' id="', ID, '"')
        r.expect(">")
        while r.eat('<arg name="'):
            k = r.need(IDENT).group(0)
            r.expect('">')
            call["arguments"][k] = _tagged(r)
            r.expect("</arg>")
        r.expect("</call>")
    elif form == "wiki":
        r.expect("{{")
        name()
        pairs_until("|", "=", "", r"\||\}\}")
        r.expect("}}")
    elif form == "fortran":
        r.expect("&")
        name()
        r.expect(" ")
        call["arguments"] = _fortran(r, NValues(st), schema())
        r.expect(" /")
    elif form in ("kdl", "nginx"):
        name()
        if ids:
            r.expect(" id=")
            call["id"] = read_string(r, "json")
        r.expect(" {")
        call["arguments"] = _nodes(r, NValues(st), schema(), "    ", form == "nginx")
        r.expect("\n}")
    elif form == "logfmt":
        r.expect("tool=")
        name()
        id_(" id=")
        pairs_until(" ", "=", "", r"\s")
    elif form == "tcl":
        name()
        pairs_until(" -", " ", "", "")
    elif form == "apache":
        r.expect("<Call ")
        name()
        id_(" ")
        r.expect(">")
        call["arguments"] = _apache(r, NValues(st), schema(), "    ")
        r.expect("\n</Call>")
    elif form == "graphql":
        r.expect("\n  ")
        if ids:
            call["id"] = r.need(ID).group(0)
            r.expect(": ")
        name()
        r.expect("(")
        call["arguments"] = obj(Obj("", "", "ident", ": ", ", "), wrapped=False)
        r.expect(")")
    elif form == "sql":
        r.expect("CALL ")
        name()
        r.expect("(")
        call["arguments"] = obj(Obj("", "", "ident", " => ", ", "), wrapped=False)
        r.expect(");")
    elif form == "email":
        r.expect("Tool: ")
        name()
        id_("\nCall-Id: ")
        pairs_until("\nArg-", ": ", "", r"\n(?!\t)")
    elif form == "properties":
        r.expect("call.")
        name()
        r.expect("=")
        call["id"] = r.need(ID).group(0) if ids else None
        v = NValues(st, r"\n")
        while r.at("\n" + call["name"] + "."):
            r.i += len(call["name"]) + 2
            path = r.need(r"[A-Za-z0-9_.]+(?==)").group(0).split(".")
            r.expect("=")
            sch = schema()
            for p in path:
                sch = sub_schema(sch, int(p) if p.isdigit() else p)
            _put(call["arguments"], path, v.value(r, sch))
    elif form in ("php", "elixir"):
        name()
        r.expect("(")
        call["arguments"] = (obj(Obj("[", "]", "str", " => ", ", ")) if form == "php"
                             else obj(Obj("", "", "ident", ": ", ", "), wrapped=False))
        r.expect(")")
    elif form == "js_call":
        r.expect("await tools.")
        name()
        r.expect("(")
        call["arguments"] = obj(sn._JSON5)
        r.expect(");")
        id_(" // ")
    elif form == "erlang":
        r.expect("{call, ")
        if ids:
            call["id"] = read_nstring(r, "erlang")
            r.expect(", ")
        name()
        r.expect(", ")
        call["arguments"] = obj(Obj("[{", "}]", "ident", ", ", "}, {"))
        r.expect("}.")
    elif form == "dot":
        name()
        r.expect(" ")
        call["arguments"] = obj(Obj("[", "]", "ident", "=", ", "))
        r.expect(";")
    elif form == "protobuf":
        r.expect("name: ")
        call["name"] = read_string(r, "json")
        if ids:
            r.expect("\nid: ")
            call["id"] = read_string(r, "json")
        r.expect("\narguments {")
        while r.eat("\n  fields { key: "):
            k = read_string(r, "json")
            r.expect(" value { ")
            call["arguments"][k] = _proto(r)
            r.expect(" } }")
        r.expect("\n}")
    elif form in ("json_pairs", "json_name_value"):
        first, idk, argk = ('{"call": ', ', "ref": ', ', "args": [') if form == "json_pairs" else \
            ('{"tool": ', ', "call_id": ', ', "parameters": [')
        r.expect(first)
        call["name"] = read_string(r, "json")
        if ids:
            r.expect(idk)
            call["id"] = read_string(r, "json")
        r.expect(argk)
        while not r.eat("]}"):
            if call["arguments"]:
                r.expect(", ")
            r.expect("[" if form == "json_pairs" else '{"name": ')
            k = read_string(r, "json")
            r.expect(", " if form == "json_pairs" else ', "value": ')
            call["arguments"][k] = r.json()
            r.expect("]" if form == "json_pairs" else "}")
    elif form == "latex":
        r.expect("\\call")
        id_("[", ID, "]")
        r.expect("{")
        name()
        r.expect("}{")
        first = True
        while not r.eat("}"):
            r.expect("" if first else ", ")
            first = False
            k = r.need(IDENT).group(0)
            r.expect("=")
            call["arguments"][k] = NValues(st).value(r, sub_schema(schema(), k))
    elif form == "css":
        name()
        id_("#")
        r.expect(" {")
        pairs_until("\n  --", ": ", ";", "")
        r.expect("\n}")
    elif form == "java":
        r.expect('@Call(name = "')
        name()
        r.expect('"')
        id_(', id = "', ID, '"')
        r.expect(", args = {")
        while not r.eat("})"):
            if call["arguments"]:
                r.expect(", ")
            r.expect('@Arg(key = "')
            k = r.need(IDENT).group(0)
            r.expect('", ')
            call["arguments"][k] = _java(r)
            r.expect(")")
    elif form == "alist":
        r.expect("(call ")
        name()
        if ids:
            r.expect(" :id ")
            call["id"] = read_string(r, "json")
        r.expect(" ")
        call["arguments"] = obj(Obj("((", "))", "ident", " . ", ") ("))
        r.expect(")")
    elif form == "urlpath":
        r.expect("GET /tools/")
        name()
        pairs_until("/", "/", "", "")
        id_("?call_id=")
    elif form == "toml_tables":
        r.expect("[[tool_calls]]\nname = ")
        call["name"] = read_string(r, "json")
        if ids:
            r.expect("\nid = ")
            call["id"] = read_string(r, "json")
        r.expect("\n[tool_calls.arguments]")
        pairs_until("\n", " = ", "", "", lambda: bool(re.match(IDENT + " = ", r.s[r.i + 1:])))
    elif form == "param_elements":
        r.expect('<object tool="')
        name()
        r.expect('"')
        id_(' id="', ID, '"')
        r.expect(">")
        pairs_until('<param name="', '" value="', '"/>', '["<]')
        r.expect("</object>")
    elif form == "org":
        r.expect("* CALL ")
        name()
        r.expect("\n:PROPERTIES:")
        id_("\n:CALL_ID: ")
        pairs_until("\n:", ": ", "", r"\n", lambda: not r.at("\n:END:"))
        r.expect("\n:END:")
    elif form == "haskell_bind":
        id_("", ID, " <- ")
        r.expect("callTool ")
        call["name"] = read_string(r, "json")
        r.expect(" Args {")
        v, first = NValues(st), True
        while r.at(" " if first else ", ") and not r.at(" }"):
            r.i += 1 if first else 2
            k = r.need(IDENT).group(0)
            r.expect(" = ")
            call["arguments"][k] = v.value(r, sub_schema(schema(), k))
            first = False
        r.expect(" }")
    elif form == "asm_call":
        id_("", ID, ":\n    ")
        r.expect("CALL ")
        name()
        pairs_until(", ", "=", "", "")
    elif form == "lua_table":
        id_("--[[", ID, "]] ")
        r.expect("tools.")
        name()
        call["arguments"] = obj(sn._LUA)
    elif form == "tsv":
        r.expect("TOOL\t")
        name()
        pairs_until("\t", "=", "", r"\t|\n", lambda: not r.at("\tid="))
        id_("\tid=")
    elif form == "powershell":
        r.expect("Invoke-Tool ")
        name()
        pairs_until(" -", " ", "", "", lambda: not r.at(" #"))
        id_(" #")
    else:
        raise Unreadable(f"no reader for {form}")
    return call


def _csv_table(n: sn.Novel, r: Reader, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """One row per argument: ``call,tool,argument,value`` (a call with no argument: empty fields)."""
    r.expect("call,tool,argument,value")
    calls: list[dict[str, Any]] = []
    v = NValues(n.spec.style, r"[,\n]")
    while r.eat("\n"):
        cid = r.need(ID).group(0)
        r.expect(",")
        name = r.need(IDENT).group(0)
        r.expect(",")
        if not calls or calls[-1]["_row"] != cid:
            calls.append({"_row": cid, "id": cid if n.ids == "on" else None, "name": name, "arguments": {}})
        k = r.need(f"(?:{IDENT})?").group(0)
        r.expect(",")
        if k:
            calls[-1]["arguments"][k] = v.value(r, sub_schema(schema_of(tools, name), k))
    for c in calls:
        del c["_row"]
    return calls


def _calls(n: sn.Novel, r: Reader, tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Every call from ``r``'s position to the end, in the format's container."""
    f = n.spec
    if n.form == "csv_table":
        calls = _csv_table(n, r, tools)
    elif f.own is not None:
        r.expect(f.own)
        calls = []
        while True:
            calls.append(_read_call(n, r, tools))
            if n.form == "toml_tables" and r.eat("\n\n"):
                continue
            if n.form in ("yaml_seq", "graphql") and r.at("\n  ") and not r.at("\n  }"):
                continue
            break
        r.expect("\n}" if n.form == "graphql" else "")
    else:
        before, each, between, after = sn.CONTAINERS[n.container]
        r.need(re.escape(before).replace(re.escape("{n}"), r"\d+"))
        calls = []
        while True:
            r.need(re.escape(each).replace(re.escape("{i}"), r"\d+"))
            calls.append(_read_call(n, r, tools))
            if after and r.eat(after):
                break
            if not after and r.done:
                break
            r.expect(between)
    if not r.done:
        raise Unreadable(f"text after the calls: {r.s[r.i:][:40]!r}")
    return calls


def decode(n: sn.Novel, text: str, tools: list[dict[str, Any]] | None) -> dict[str, Any]:
    """Reasoning, content and calls of one generated text (cut as the conformance harness cuts it)."""
    r_open, r_close = sn.REASONING[n.reasoning]
    reasoning = ""
    if r_open and text.startswith(r_open):
        reasoning, sep, text = text[len(r_open):].partition(r_close)
        if not sep:
            raise Unreadable("the reasoning block is not closed")
    for start in [0] + [m.end() for m in re.finditer("\n", text)]:
        try:
            calls = _calls(n, Reader(text, start), tools)
        except (Unreadable, IndexError, ValueError):
            continue
        content = text[:start]
        content = content[:-1] if content.endswith("\n") else content
        return {"reasoning_content": reasoning.strip(), "content": content,
                "tool_calls": [{"id": c["id"], "name": c["name"], "arguments": c["arguments"]} for c in calls]}
    return {"reasoning_content": reasoning.strip(), "content": text, "tool_calls": []}
