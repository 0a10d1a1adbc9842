"""Call formats along axes no issue lists: the stand-in for the hidden "axes no issue lists" set.

Issue 21 names the encodings, placements, codecs and delimiters its mechanism must learn; a template
author who never read it writes other things. This module invents such formats, each a whole template
(turns, tools in the system prompt, tool results, generation prompt), drawn with a seed
(``draw(n, seed)``, ``DRAWN`` the fixed draw of ``N_DRAWN``). Axes (``AXES``):

* ``form``: the call itself (``FORMS``): JSON-RPC, BBCode ``[call=f][arg=k]v[/arg][/call]``, INI
  sections ``[f]``, Prolog terms, Go and Rust struct literals, a markdown table or bullet list of
  arguments, ``@f{...}`` (JSON5), XML-RPC, a YAML sequence of calls, ``f|k=v|k=v``, values typed by
  tags (``<int>7</int>``), a wiki template ``{{f|k=v}}``, a Fortran namelist, a KDL node, logfmt, a
  Tcl command, nginx and Apache config blocks, a GraphQL mutation (the id as an alias), an SQL
  ``CALL``, an HTTP request, mail-style headers, Java properties, PHP arrays, Elixir keywords, a
  JavaScript call, an Erlang term, Graphviz attributes, protobuf text of a ``Struct``, JSON pairs,
  JSON name/value lists, a LaTeX macro, a CSS rule, a Java annotation, a Lisp alist, a URL path, TOML
  arrays of tables, one CSV table of all arguments, ``<param name= value=/>`` elements, an org-mode
  property drawer, a Haskell binding ``call_1 <- callTool "f" Args { k = v }``, an assembler line
  ``call_1:⏎    CALL f, k=v``, a Lua table call ``--[[call_1]] tools.f{k = v}``, tab-separated ``f⇥k=v⇥id=…``,
  a PowerShell command ``Invoke-Tool f -k "v" #call_1`` (backtick escapes, ``$true``, ``@{k = v}``).
  Each form fixes its name and id placement, argument syntax and value codec;
* ``roles``: turn syntaxes (``<<role>>``, ``#[role]``, ``[[role]]``, ``|role|``, ChatML, Gemma);
* ``container``: how the calls of one turn are grouped: lines, a numbered list, ``BEGIN_TOOL_CALLS``
  / ``END_TOOL_CALLS``, ``<calls n="2">``, YAML-style ``---`` documents, a 🔧 per call, a rule
  line with no closer (forms with a container of their own ignore it);
* ``reasoning``: none, ``/* thinking */``, ``<!-- thought -->``, ``<|begin_of_thought|>``,
  ``[REASONING]``, ``%%% reasoning %%%``, a markdown quote ``> `` ended by a blank line;
* ``ids``: whether the form's id slot is written (forms without one ignore it).

``tests/synth_novel_read.py`` decodes every form. Nothing here imports autoparser.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields

import synth_axes as sa
from synth_axes import Obj, lit

ROLES = {
    "angle_role": ("<<{role}>>\n", "<<end>>\n"),
    "sharp": ("#[{role}]\n", "#[/]\n"),
    "dbl": ("[[{role}]]\n", "[[/{role}]]\n"),
    "pipe": ("|{role}|\n", "|/|\n"),
    "chatml": ("<|im_start|>{role}\n", "<|im_end|>\n"),
    "gemma": ("<start_of_turn>{role}\n", "<end_of_turn>\n"),
}
REASONING = {   # name: (opener, closer)
    "none": ("", ""),
    "slash": ("/* thinking\n", "\n*/\n"),
    "html_comment": ("<!-- thought\n", "\n-->\n"),
    "bot": ("<|begin_of_thought|>\n\n", "\n\n<|end_of_thought|>\n\n"),
    "reasoning_tag": ("[REASONING]", "[/REASONING]\n"),
    "percent": ("%%% reasoning\n", "\n%%%\n"),
    "blockquote": ("> ", "\n\n"),
}
CONTAINERS = {   # name: (before the calls ({n}: how many), before each call ({i}: its number), between, after)
    "lines": ("", "", "\n", ""),
    "numbered": ("", "{i}. ", "\n", ""),
    "begin_end": ("BEGIN_TOOL_CALLS\n", "", "\n", "\nEND_TOOL_CALLS"),
    "count": ('<calls n="{n}">\n', "", "\n", "\n</calls>"),
    "dashes": ("---\n", "", "\n---\n", "\n..."),
    "emoji": ("", "🔧 ", "\n", ""),
    "hr": ("━━━ tool calls ━━━\n", "", "\n", ""),
}


@dataclass(frozen=True)
class Style:
    """How values are written: a string codec, spellings, nested values natively or as JSON."""

    strings: str
    true: str = "true"
    false: str = "false"
    null: str = "null"
    obj: Obj | None = None
    arr: tuple[str, str, str] | None = None
    json_via_codec: bool = False
    json_wrap: tuple[str, str] = ("", "")
    bare: str = r"[A-Za-z0-9_#.+\-~]*"   # unquoted tokens (for the reader)


@dataclass(frozen=True)
class Form:
    """One call format: ``body`` is the Jinja of ``call(tc)`` (``fn``, ``id``, ``args`` are set)."""

    style: Style
    body: str
    has_id: bool
    multiline: bool
    own: str | None = None  # a container of its own: the text before the calls (None: the container axis)
    verbatim: bool = False  # arguments given as a JSON string are written as they are
    macros: str = ""


def J(*parts: str) -> str:
    return "{{- " + " ~ ".join(parts) + " -}}"


def IFID(s: str) -> str:
    return "{%- if id -%}" + s + "{%- endif -%}"


def EACH(body: str, sep: str = "") -> str:
    s = "{%- if not loop.first -%}" + J(lit(sep)) + "{%- endif -%}" if sep else ""
    return "{%- for k, x in args.items() -%}" + s + body + "{%- endfor -%}"


def repl(x: str, pairs: list[tuple[str, str]]) -> str:
    return "(" + x + "".join(f" | replace({lit(a)}, {lit(b)})" for a, b in pairs) + ")"


_BS = [("\\", "\\\\"), ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")]


def str_expr(codec: str, x: str) -> str:
    """A Jinja expression writing string ``x`` (codecs of synth_axes plus these)."""
    if codec.startswith("bs:"):   # backslash escapes, plus the characters after the colon
        return repl(x, _BS + [(c, "\\" + c) for c in codec[3:]])
    extra = {
        "tcl": lambda: "('\"' ~ " + repl(x, [("\\", "\\\\"), ('"', '\\"'), ("$", "\\$"), ("[", "\\["), ("]", "\\]"),
                                             ("\n", "\\n"), ("\r", "\\r"), ("\t", "\\t")]) + " ~ '\"')",
        "css": lambda: "('\"' ~ " + repl(x, [("\\", "\\\\"), ('"', '\\"'), ("\n", "\\a "), ("\r", "\\d ")]) + " ~ '\"')",
        "elixir": lambda: repl(f"({x} | tojson)", [("#{", "\\#{")]),
        "wiki": lambda: repl(x, [("&", "&amp;"), ("|", "&#124;"), ("{", "&#123;"), ("}", "&#125;")]),
        "erlang": lambda: f"('<<' ~ ({x} | tojson) ~ '>>')",
        "latex": lambda: "('{' ~ " + repl(x, [("\\", "\\\\"), ("{", "\\{"), ("}", "\\}")]) + " ~ '}')",
        "email": lambda: repl(x, [("\n", "\n\t")]),
        "rust": lambda: f"(({x} | tojson) ~ '.to_string()')",
        "logfmt": lambda: (f"(({x} | tojson) if ({x} == '' or ' ' in {x} or '=' in {x} or '\"' in {x} or '\\\\' in {x} "
                           f"or '\\n' in {x} or '\\r' in {x} or '\\t' in {x}) else {x})"),
        "percent_path": lambda: f"({x} | urlencode | replace('/', '%2F'))",
        "prop": lambda: ("((('\\\\' ~ " + repl(x, _BS) + ") if " + x + ".startswith(' ') else " + repl(x, _BS) + "))"),
        "backtick": lambda: "('\"' ~ " + repl(x, [("`", "``"), ('"', '`"'), ("$", "`$"), ("\n", "`n"), ("\r", "`r"),
                                                   ("\t", "`t")]) + " ~ '\"')",
    }
    return extra[codec]() if codec in extra else sa.str_expr(codec, x)


def value_macros(st: Style) -> str:
    """``scalar(v)`` and ``val(v)`` writing values in style ``st``."""
    out = ["{%- macro scalar(v) -%}",
           "{%- if v is none -%}" + J(lit(st.null)),
           "{%- elif v is boolean -%}" + J(lit(st.true) + " if v else " + lit(st.false)),
           "{%- elif v is number -%}" + J("v | tojson"),
           "{%- else -%}" + J(str_expr(st.strings, "(v | string)")) + "{%- endif -%}",
           "{%- endmacro -%}",
           "{%- macro val(v) -%}",
           "{%- if v is mapping or (v is iterable and v is not string) -%}"]
    if st.obj is not None and st.arr is not None:
        o, (ao, ac, asep) = st.obj, st.arr
        out += ["{%- if v is mapping -%}" + J(lit(o.open)),
                "{%- for k, x in v.items() -%}{%- if not loop.first -%}" + J(lit(o.sep)) + "{%- endif -%}",
                J(_key(o, st, "k"), lit(o.kv), "val(x)", lit(o.end)) + "{%- endfor -%}" + J(lit(o.close)),
                "{%- else -%}" + J(lit(ao)),
                "{%- for x in v -%}{%- if not loop.first -%}" + J(lit(asep)) + "{%- endif -%}" + J("val(x)")
                + "{%- endfor -%}" + J(lit(ac)) + "{%- endif -%}"]
    else:
        js = str_expr(st.strings, "(v | tojson)") if st.json_via_codec else "(v | tojson)"
        out.append(J(lit(st.json_wrap[0]), js, lit(st.json_wrap[1])))
    out += ["{%- else -%}" + J("scalar(v)") + "{%- endif -%}", "{%- endmacro -%}"]
    return "\n".join(out)


def _key(o: Obj, st: Style, k: str) -> str:
    return {"ident": k, "json": f"({k} | tojson)", "str": str_expr(st.strings, k),
            "colon": f"(':' ~ {k})", "dash": f"('--' ~ {k})"}[o.key]


def pairs(o: Obj, st: Style) -> str:
    """The arguments as an object in syntax ``o``."""
    return (J(lit(o.open)) + EACH(J(_key(o, st, "k"), lit(o.kv), "val(x)", lit(o.end)), o.sep) + J(lit(o.close)))


# ---------------------------------------------------------------- the forms
_JS = Style("json")
_JSON5 = Obj("{", "}", "ident", ": ", ", ")
_LUA = Obj("{", "}", "ident", " = ", ", ")
_XMLRPC = """{%- macro xv(v) -%}{{- '<value>' -}}
{%- if v is none -%}{{- '<nil/>' -}}
{%- elif v is boolean -%}{{- '<boolean>' ~ ('1' if v else '0') ~ '</boolean>' -}}
{%- elif v is integer -%}{{- '<int>' ~ v ~ '</int>' -}}
{%- elif v is number -%}{{- '<double>' ~ (v | tojson) ~ '</double>' -}}
{%- elif v is string -%}{{- '<string>' ~ (v | e) ~ '</string>' -}}
{%- elif v is mapping -%}{{- '<struct>' -}}{%- for k, x in v.items() -%}{{- '<member><name>' ~ k ~ '</name>' ~ xv(x)
 ~ '</member>' -}}{%- endfor -%}{{- '</struct>' -}}
{%- else -%}{{- '<array><data>' -}}{%- for x in v -%}{{- xv(x) -}}{%- endfor -%}{{- '</data></array>' -}}
{%- endif -%}{{- '</value>' -}}{%- endmacro -%}"""
_TYPED = """{%- macro tv(v) -%}
{%- if v is none -%}{{- '<null/>' -}}
{%- elif v is boolean -%}{{- '<bool>' ~ ('true' if v else 'false') ~ '</bool>' -}}
{%- elif v is integer -%}{{- '<int>' ~ v ~ '</int>' -}}
{%- elif v is number -%}{{- '<float>' ~ (v | tojson) ~ '</float>' -}}
{%- elif v is string -%}{{- '<str>' ~ (v | e) ~ '</str>' -}}
{%- elif v is mapping -%}{{- '<map>' -}}{%- for k, x in v.items() -%}{{- '<entry key="' ~ k ~ '">' ~ tv(x) ~ '</entry>' -}}
{%- endfor -%}{{- '</map>' -}}
{%- else -%}{{- '<list>' -}}{%- for x in v -%}{{- tv(x) -}}{%- endfor -%}{{- '</list>' -}}{%- endif -%}
{%- endmacro -%}"""
_FORTRAN = """{%- macro fpairs(p, v) -%}{%- for k, x in v.items() -%}{%- if not loop.first -%}{{- ', ' -}}{%- endif -%}
{%- if x is mapping and x -%}{{- fpairs(p ~ k ~ '%', x) -}}
{%- elif x is iterable and x is not string and x is not mapping -%}{{- p ~ k ~ '=' -}}
{%- for y in x -%}{%- if not loop.first -%}{{- ', ' -}}{%- endif -%}{{- val(y) -}}{%- endfor -%}
{%- else -%}{{- p ~ k ~ '=' ~ val(x) -}}{%- endif -%}{%- endfor -%}{%- endmacro -%}"""
_KDL = """{%- macro knode(k, v, ind) -%}{{- '\\n' ~ ind ~ k -}}
{%- if v is mapping -%}{{- ' {' -}}{%- for kk, x in v.items() -%}{{- knode(kk, x, ind ~ '    ') -}}{%- endfor -%}
{{- '\\n' ~ ind ~ '}' -}}
{%- elif v is iterable and v is not string -%}{%- for x in v -%}{{- ' ' ~ val(x) -}}{%- endfor -%}
{%- else -%}{{- ' ' ~ val(v) -}}{%- endif -%}{{- END -}}{%- endmacro -%}"""
_APACHE = """{%- macro anode(k, v, ind) -%}
{%- if v is mapping -%}{{- '\\n' ~ ind ~ '<' ~ k ~ '>' -}}{%- for kk, x in v.items() -%}{{- anode(kk, x, ind ~ '    ') -}}
{%- endfor -%}{{- '\\n' ~ ind ~ '</' ~ k ~ '>' -}}
{%- elif v is iterable and v is not string -%}{{- '\\n' ~ ind ~ k -}}{%- for x in v -%}{{- ' ' ~ val(x) -}}{%- endfor -%}
{%- else -%}{{- '\\n' ~ ind ~ k ~ ' ' ~ val(v) -}}{%- endif -%}{%- endmacro -%}"""
_PROTO = """{%- macro pv(v) -%}
{%- if v is none -%}{{- 'null_value: NULL_VALUE' -}}
{%- elif v is boolean -%}{{- 'bool_value: ' ~ ('true' if v else 'false') -}}
{%- elif v is number -%}{{- 'number_value: ' ~ (v | tojson) -}}
{%- elif v is string -%}{{- 'string_value: ' ~ (v | tojson) -}}
{%- elif v is mapping -%}{{- 'struct_value { ' -}}{%- for k, x in v.items() -%}
{{- 'fields { key: ' ~ (k | tojson) ~ ' value { ' ~ pv(x) ~ ' } } ' -}}{%- endfor -%}{{- '}' -}}
{%- else -%}{{- 'list_value { ' -}}{%- for x in v -%}{{- 'values { ' ~ pv(x) ~ ' } ' -}}{%- endfor -%}{{- '}' -}}
{%- endif -%}{%- endmacro -%}"""
_JAVA = """{%- macro jv(v) -%}
{%- if v is none -%}{{- 'nullValue = true' -}}
{%- elif v is boolean -%}{{- 'boolValue = ' ~ ('true' if v else 'false') -}}
{%- elif v is integer -%}{{- 'intValue = ' ~ v -}}
{%- elif v is number -%}{{- 'doubleValue = ' ~ (v | tojson) -}}
{%- elif v is string -%}{{- 'stringValue = ' ~ (v | tojson) -}}
{%- else -%}{{- 'json = ' ~ (v | tojson | tojson) -}}{%- endif -%}{%- endmacro -%}"""
_PROPS = """{%- macro pp(p, v) -%}
{%- if v is mapping -%}{%- for k, x in v.items() -%}{{- pp(p ~ '.' ~ k, x) -}}{%- endfor -%}
{%- elif v is iterable and v is not string -%}{%- for x in v -%}{{- pp(p ~ '.' ~ loop.index0, x) -}}{%- endfor -%}
{%- else -%}{{- '\\n' ~ p ~ '=' ~ scalar(v) -}}{%- endif -%}{%- endmacro -%}"""

FORMS: dict[str, Form] = {
    "jsonrpc": Form(_JS, J(lit('{"jsonrpc": "2.0", "method": '), "(fn.name | tojson)", lit(', "params": '),
                           "(args if args is string else args | tojson)")
                    + IFID(J(lit(', "id": '), "(id | tojson)")) + J(lit("}")), True, False, verbatim=True),
    "bbcode": Form(Style("bs:[]", json_via_codec=True), J(lit("[call="), "fn.name", lit("]"))
                   + IFID(J(lit("[id]"), "id", lit("[/id]"))) + EACH(J(lit("[arg="), "k", lit("]"), "val(x)", lit("[/arg]")))
                   + J(lit("[/call]")), True, False),
    "ini_section": Form(Style("bs:", json_via_codec=True), J(lit("["), "fn.name", lit("]")) + IFID(J(lit("\nid = "), "id"))
                        + EACH(J(lit("\n"), "k", lit(" = "), "val(x)")), True, True),
    "prolog": Form(Style("python_single", obj=Obj("_{", "}", "ident", ": ", ", "), arr=("[", "]", ", ")),
                   J(lit("call(")) + IFID(J(str_expr("python_single", "id"), lit(", "))) + J("fn.name", lit(", "))
                   + pairs(Obj("[", "]", "ident", "=", ", "), Style("python_single")) + J(lit(")")), True, False),
    "go_struct": Form(Style("json", null="nil", obj=Obj("map[string]any{", "}", "json", ": ", ", "), arr=("[]any{", "}", ", ")),
                      J("fn.name") + pairs(_JSON5, _JS), False, False),
    "rust_struct": Form(Style("rust", null="None", json_wrap=("json!(", ")")),
                        J("fn.name") + pairs(Obj(" { ", " }", "ident", ": ", ", "), _JS), False, False),
    "md_table": Form(Style("bs:|", json_via_codec=True), J(lit("**"), "fn.name", lit("**"))
                     + IFID(J(lit(" (id: "), "id", lit(")"))) + J(lit("\n| argument | value |\n|---|---|"))
                     + EACH(J(lit("\n| "), "k", lit(" | "), "val(x)", lit(" |"))), True, True),
    "md_bullets": Form(Style("bs:", json_via_codec=True), J(lit("### "), "fn.name") + IFID(J(lit(" — "), "id"))
                       + EACH(J(lit("\n- **"), "k", lit("**: "), "val(x)")), True, True),
    "decorator": Form(Style("python_single", obj=_JSON5, arr=("[", "]", ", ")), J(lit("@"), "fn.name")
                      + pairs(_JSON5, _JS), False, False),
    "xmlrpc": Form(_JS, J(lit("<methodCall><methodName>"), "fn.name", lit("</methodName><params><param>"), "xv(args)",
                          lit("</param></params></methodCall>")), False, False, macros=_XMLRPC),
    "yaml_seq": Form(_JS, J(lit("\n  - tool: "), "fn.name") + IFID(J(lit("\n    id: "), "id")) + J(lit("\n    with:"))
                     + "{%- if not args -%}" + J(lit(" {}")) + "{%- endif -%}"
                     + EACH(J(lit("\n      "), "k", lit(": "), "val(x)")), True, True, own="tool_calls:"),
    "pipe_line": Form(Style("bs:|", json_via_codec=True), J("fn.name") + EACH(J(lit("|"), "k", lit("="), "val(x)"))
                      + IFID(J(lit("|#"), "id")), True, False),
    "typed_tags": Form(_JS, J(lit('<call name="'), "fn.name", lit('"')) + IFID(J(lit(' id="'), "id", lit('"'))) + J(lit(">"))
                       + EACH(J(lit('<arg name="'), "k", lit('">'), "tv(x)", lit("</arg>"))) + J(lit("</call>")),
                       True, False, macros=_TYPED),
    "wiki": Form(Style("wiki", json_via_codec=True), J(lit("{{"), "fn.name") + EACH(J(lit("|"), "k", lit("="), "val(x)"))
                 + J(lit("}}")), False, False),
    "fortran": Form(Style("single_doubled", ".true.", ".false.", ""), J(lit("&"), "fn.name", lit(" "), "fpairs('', args)",
                                                                          lit(" /")), False, False, macros=_FORTRAN),
    "kdl": Form(Style("json", "#true", "#false", "#null"), J("fn.name") + IFID(J(lit(" id="), "(id | tojson)"))
                + J(lit(" {")) + EACH(J("knode(k, x, '    ')")) + J(lit("\n}")), True, True,
                macros=_KDL.replace("{{- END -}}", "")),
    "logfmt": Form(Style("logfmt", json_via_codec=True), J(lit("tool="), "fn.name") + IFID(J(lit(" id="), "id"))
                   + EACH(J(lit(" "), "k", lit("="), "val(x)")), True, False),
    "tcl": Form(Style("tcl", json_via_codec=True), J("fn.name") + EACH(J(lit(" -"), "k", lit(" "), "val(x)")), False, False),
    "nginx": Form(Style("json", "on", "off", "none"), J("fn.name", lit(" {")) + EACH(J("knode(k, x, '    ')"))
                  + J(lit("\n}")), False, True, macros=_KDL.replace("{{- END -}}", "{%- if v is not mapping -%}{{- ';' -}}"
                                                                   "{%- endif -%}")),
    "apache": Form(Style("json", "On", "Off", "None"), J(lit("<Call "), "fn.name") + IFID(J(lit(" "), "id")) + J(lit(">"))
                   + EACH(J("anode(k, x, '    ')")) + J(lit("\n</Call>")), True, True, macros=_APACHE),
    "graphql": Form(Style("json", obj=_JSON5, arr=("[", "]", ", ")), J(lit("\n  ")) + IFID(J("id", lit(": ")))
                    + J("fn.name", lit("(")) + pairs(Obj("", "", "ident", ": ", ", "), _JS) + J(lit(")")), True, True,
                    own="mutation {"),
    "sql": Form(Style("single_doubled", "TRUE", "FALSE", "NULL", json_via_codec=True, json_wrap=("", "::jsonb")),
                J(lit("CALL "), "fn.name", lit("(")) + pairs(Obj("", "", "ident", " => ", ", "), _JS) + J(lit(");")),
                False, False),
    "http": Form(_JS, J(lit("POST /tools/"), "fn.name", lit(" HTTP/1.1")) + IFID(J(lit("\nX-Call-Id: "), "id"))
                 + J(lit("\nContent-Type: application/json\n\n"), "(args if args is string else args | tojson)"),
                 True, True, verbatim=True),
    "email": Form(Style("email", json_via_codec=True), J(lit("Tool: "), "fn.name") + IFID(J(lit("\nCall-Id: "), "id"))
                  + EACH(J(lit("\nArg-"), "k", lit(": "), "val(x)")), True, True),
    "properties": Form(Style("prop", json_via_codec=True), J(lit("call."), "fn.name", lit("="), "id", "pp(fn.name, args)"), True, True,
                       macros=_PROPS),
    "php": Form(Style("ruby_single", obj=Obj("[", "]", "str", " => ", ", "), arr=("[", "]", ", ")),
                J("fn.name", lit("(")) + pairs(Obj("[", "]", "str", " => ", ", "), Style("ruby_single")) + J(lit(")")),
                False, False),
    "elixir": Form(Style("elixir", null="nil", obj=Obj("%{", "}", "str", " => ", ", "), arr=("[", "]", ", ")),
                   J("fn.name", lit("(")) + pairs(Obj("", "", "ident", ": ", ", "), _JS) + J(lit(")")), False, False),
    "js_call": Form(Style("python_single", obj=_JSON5, arr=("[", "]", ", ")), J(lit("await tools."), "fn.name", lit("("))
                    + pairs(_JSON5, _JS) + J(lit(");")) + IFID(J(lit(" // "), "id")), True, False),
    "erlang": Form(Style("erlang", null="undefined", obj=Obj("#{", "}", "str", " => ", ", "), arr=("[", "]", ", ")),
                   J(lit("{call, ")) + IFID(J(lit("<<"), "(id | tojson)", lit(">>, "))) + J("fn.name", lit(", "))
                   + pairs(Obj("[{", "}]", "ident", ", ", "}, {"), _JS) + J(lit("}.")), True, False),
    "dot": Form(Style("json", json_via_codec=True), J("fn.name", lit(" ")) + pairs(Obj("[", "]", "ident", "=", ", "), _JS)
                + J(lit(";")), False, False),
    "protobuf": Form(_JS, J(lit("name: "), "(fn.name | tojson)") + IFID(J(lit("\nid: "), "(id | tojson)"))
                     + J(lit("\narguments {")) + EACH(J(lit("\n  fields { key: "), "(k | tojson)", lit(" value { "), "pv(x)",
                                                        lit(" } }"))) + J(lit("\n}")), True, True, macros=_PROTO),
    "json_pairs": Form(_JS, J(lit('{"call": '), "(fn.name | tojson)") + IFID(J(lit(', "ref": '), "(id | tojson)"))
                       + J(lit(', "args": [')) + EACH(J(lit("["), "(k | tojson)", lit(", "), "(x | tojson)", lit("]")), ", ")
                       + J(lit("]}")), True, False),
    "json_name_value": Form(_JS, J(lit('{"tool": '), "(fn.name | tojson)") + IFID(J(lit(', "call_id": '), "(id | tojson)"))
                            + J(lit(', "parameters": [')) + EACH(J(lit('{"name": '), "(k | tojson)", lit(', "value": '),
                                                                   "(x | tojson)", lit("}")), ", ") + J(lit("]}")),
                            True, False),
    "latex": Form(Style("latex", json_via_codec=True), J(lit("\\call")) + IFID(J(lit("["), "id", lit("]")))
                  + J(lit("{"), "fn.name", lit("}{")) + EACH(J("k", lit("="), "val(x)"), ", ") + J(lit("}")), True, False),
    "css": Form(Style("css", null="initial"), J("fn.name") + IFID(J(lit("#"), "id")) + J(lit(" {"))
                + EACH(J(lit("\n  --"), "k", lit(": "), "val(x)", lit(";"))) + J(lit("\n}")), True, True),
    "java": Form(_JS, J(lit('@Call(name = "'), "fn.name", lit('"')) + IFID(J(lit(', id = "'), "id", lit('"')))
                 + J(lit(", args = {")) + EACH(J(lit('@Arg(key = "'), "k", lit('", '), "jv(x)", lit(")")), ", ")
                 + J(lit("})")), True, False, macros=_JAVA),
    "alist": Form(Style("json", "t", ":false", ":null", obj=Obj("((", "))", "ident", " . ", ") ("), arr=("[", "]", " "),
                        bare=r"[A-Za-z0-9_#.+\-~:]*"),
                  J(lit("(call "), "fn.name") + IFID(J(lit(" :id "), "(id | tojson)")) + J(lit(" "))
                  + pairs(Obj("((", "))", "ident", " . ", ") ("), _JS) + J(lit(")")), True, False),
    "urlpath": Form(Style("percent_path", json_via_codec=True), J(lit("GET /tools/"), "fn.name")
                    + EACH(J(lit("/"), "k", lit("/"), "val(x)")) + IFID(J(lit("?call_id="), "id")), True, False),
    "toml_tables": Form(Style("json", obj=Obj("{", "}", "ident", " = ", ", "), arr=("[", "]", ", ")),
                        "{%- if not loop.first -%}" + J(lit("\n\n")) + "{%- endif -%}"
                        + J(lit("[[tool_calls]]\nname = "), "(fn.name | tojson)") + IFID(J(lit("\nid = "), "(id | tojson)"))
                        + J(lit("\n[tool_calls.arguments]")) + EACH(J(lit("\n"), "k", lit(" = "), "val(x)")), True, True,
                        own=""),
    "csv_table": Form(Style("csv_min", null="", json_via_codec=True),
                      "{%- set cid = id or loop.index | string -%}{%- if not args -%}" + J(lit("\n"), "cid", lit(","),
                                                                                              "fn.name", lit(",,")) + "{%- endif -%}"
                      + EACH(J(lit("\n"), "cid", lit(","), "fn.name", lit(","), "k", lit(","), "val(x)")), True, True,
                      own="call,tool,argument,value"),
    "param_elements": Form(Style("entity", json_via_codec=True), J(lit('<object tool="'), "fn.name", lit('"'))
                           + IFID(J(lit(' id="'), "id", lit('"'))) + J(lit(">"))
                           + EACH(J(lit('<param name="'), "k", lit('" value="'), "val(x)", lit('"/>'))) + J(lit("</object>")),
                           True, False),
    "org": Form(Style("bs:", json_via_codec=True), J(lit("* CALL "), "fn.name", lit("\n:PROPERTIES:"))
                + IFID(J(lit("\n:CALL_ID: "), "id")) + EACH(J(lit("\n:"), "k", lit(": "), "val(x)")) + J(lit("\n:END:")),
                True, True),
    # (the id opens the call as a word of its own: a binding, an assembler label)
    "haskell_bind": Form(Style("json", "True", "False", "Nothing", json_wrap=("[aesonQQ|", "|]")),
                         IFID(J("id", lit(" <- "))) + J(lit("callTool "), "(fn.name | tojson)", lit(" Args {"))
                         + EACH(J(lit(" "), "k", lit(" = "), "val(x)"), ",") + J(lit(" }")), True, False),
    "asm_call": Form(Style("python_single", "yes", "no", "NUL"), IFID(J("id", lit(":\n    "))) + J(lit("CALL "), "fn.name")
                     + EACH(J(lit(", "), "k", lit("="), "val(x)")), True, True),
    "lua_table": Form(Style("json", null="nil", obj=_LUA, arr=("{", "}", ", ")), IFID(J(lit("--[["), "id", lit("]] ")))
                      + J(lit("tools."), "fn.name") + pairs(_LUA, _JS), True, False),
    "tsv": Form(Style("bs:", json_via_codec=True), J(lit("TOOL\t"), "fn.name") + EACH(J(lit("\t"), "k", lit("="), "val(x)"))
                + IFID(J(lit("\tid="), "id")), True, False),
    "powershell": Form(Style("backtick", "$true", "$false", "$null", obj=Obj("@{", "}", "ident", " = ", "; "),
                             arr=("@(", ")", ", "), bare=r"[A-Za-z0-9_#.+\-~$]*"),
                       J(lit("Invoke-Tool "), "fn.name") + EACH(J(lit(" -"), "k", lit(" "), "val(x)")) + IFID(J(lit(" #"), "id")),
                       True, False),
}
AXES: dict[str, tuple[str, ...]] = {"form": tuple(FORMS), "roles": tuple(ROLES), "container": tuple(CONTAINERS),
                                    "reasoning": tuple(REASONING), "ids": ("on", "off")}
N_DRAWN = 48
SEED = 21


@dataclass(frozen=True)
class Novel:
    form: str
    roles: str
    container: str
    reasoning: str
    ids: str

    @property
    def key(self) -> str:
        return "-".join(getattr(self, f.name) for f in fields(self))

    @classmethod
    def parse(cls, key: str) -> Novel:
        return cls(*key.split("-"))

    @property
    def spec(self) -> Form:
        return FORMS[self.form]


def coherent(n: Novel) -> str | None:
    f = n.spec
    if f.own is not None and n.container != "lines":
        return "the form groups its calls itself"
    if f.multiline and n.container in ("numbered", "emoji"):
        return "a call over several lines in a one-line list item"
    if not f.has_id and n.ids == "on":
        return "the form has no id slot"
    return None


def draw(n: int = N_DRAWN, seed: int = SEED) -> list[Novel]:
    """``n`` distinct formats: every form once (shuffled) before any form twice."""
    rng = random.Random(seed)
    out: dict[str, Novel] = {}
    order: list[str] = []
    while len(out) < n:
        if not order:
            order = list(FORMS)
            rng.shuffle(order)
        form = order.pop()
        for _ in range(100):
            spec = FORMS[form]
            nv = Novel(form, rng.choice(tuple(ROLES)), "lines" if spec.own is not None else rng.choice(tuple(CONTAINERS)),
                       rng.choice(tuple(REASONING)), rng.choice(("on", "off")) if spec.has_id else "off")
            if coherent(nv) is None and nv.key not in out:
                out[nv.key] = nv
                break
    return list(out.values())


DRAWN: list[Novel] = draw()


def _call_macro(n: Novel) -> str:
    f = n.spec
    head = ["{%- macro call(tc, loop) -%}",
            "{%- set fn = tc.function if tc.function is defined else tc -%}",
            "{%- set id = tc.id if tc.id is defined and tc.id else '' -%}" if n.ids == "on" else "{%- set id = '' -%}",
            "{%- set args = fn.arguments if fn.arguments is defined and fn.arguments is not none else {} -%}"]
    if not f.verbatim:
        head.append("{%- if args is string -%}" + J("raise_exception('arguments must be an object, not a JSON string')")
                    + "{%- endif -%}")
    return "\n".join([*head, f.body, "{%- endmacro -%}"])


def render(n: Novel) -> str:
    """The template source of one novel format."""
    f = n.spec
    turn_open, turn_close = ROLES[n.roles]
    r_open, r_close = REASONING[n.reasoning]

    def open_(role: str) -> str:
        before, after = turn_open.split("{role}")
        return lit(before) + " ~ " + role + " ~ " + lit(after)

    def close_(role: str) -> str:
        if "{role}" not in turn_close:
            return lit(turn_close)
        before, after = turn_close.split("{role}")
        return lit(before) + " ~ " + role + " ~ " + lit(after)

    reasoning = ("{%- if message.reasoning_content -%}" + J(lit(r_open), "message.reasoning_content", lit(r_close))
                 + "{%- endif -%}") if n.reasoning != "none" else ""
    if f.own is not None:
        calls = ("{%- if message.tool_calls -%}{%- if content -%}" + J(lit("\n")) + "{%- endif -%}" + J(lit(f.own))
                 + "{%- for tc in message.tool_calls -%}" + J("call(tc, loop)") + "{%- endfor -%}"
                 + (J(lit("\n}")) if n.form == "graphql" else "") + "{%- endif -%}")
    else:
        before, each, between, after = CONTAINERS[n.container]
        calls = ("{%- if message.tool_calls -%}{%- if content -%}" + J(lit("\n")) + "{%- endif -%}"
                 + J(lit(before).replace("{n}", "' ~ (message.tool_calls | length) ~ '"))
                 + "{%- for tc in message.tool_calls -%}{%- if not loop.first -%}" + J(lit(between)) + "{%- endif -%}"
                 + J(lit(each).replace("{i}", "' ~ loop.index ~ '"), "call(tc, loop)")
                 + "{%- endfor -%}" + J(lit(after)) + "{%- endif -%}")
    text = ("{%- macro text(c) -%}{%- if c is none or c is undefined -%}{%- elif c is string -%}{{- c -}}"
            "{%- elif c is mapping -%}{{- c | tojson -}}{%- else -%}{%- for p in c -%}"
            "{{- p.text if p.text is defined else '' -}}{%- endfor -%}{%- endif -%}{%- endmacro -%}")
    tools_line = ("{%- if tools -%}" + J(open_("'system'"), lit("Tools you can call:\n"))
                  + "{%- for t in tools -%}" + J("((t.function if t.function is defined else t) | tojson)", lit("\n"))
                  + "{%- endfor -%}" + J(lit("Call them the way the conversation shows."), close_("'system'"))
                  + "{%- endif -%}")
    return "\n".join([
        "{#- synthesized (tests/synth_novel.py). Axes: " + n.key + " -#}",
        text, value_macros(f.style), f.macros, _call_macro(n),
        tools_line,
        "{%- for message in messages -%}",
        "{%- if message.role == 'assistant' -%}",
        "{%- set content = text(message.content) -%}",
        J(open_("'assistant'")) + reasoning + J("content") + calls + J(close_("'assistant'")),
        "{%- elif message.role == 'tool' -%}",
        J(open_("'tool'"), "text(message.content)", close_("'tool'")),
        "{%- else -%}",
        J(open_("message.role"), "text(message.content)", close_("message.role")),
        "{%- endif -%}{%- endfor -%}",
        "{%- if add_generation_prompt -%}" + J(open_("'assistant'")) + "{%- endif -%}",
        "",
    ])


def novel_of(source: str) -> Novel | None:
    head = source.split("\n", 1)[0]
    return Novel.parse(head.split("Axes: ", 1)[1].split(" ", 1)[0]) if "Axes: " in head else None
