"""Issue 21's format axes: templates drawn at random from independent decisions of a template author.

``tests/synth.py`` combines six axes exhaustively; this module adds the decisions issue 21 lists and
draws seeded combinations of them (``draw(n, seed)``; ``DRAWN`` is the fixed draw of ``N_DRAWN``).
Every combination is a whole template (roles, system prompt with the tools, tool results, generation
prompt) whose calls can be read back: ``tests/synth_read.py`` decodes each rendering to exactly the
arguments given (``tests/test_synth_axes.py``). Axes (``AXES``):

* ``roles``: the turn syntax (ChatML, Llama 3 headers, Gemma, ``[|role|]``, ``<|role|>``, ``<turn role=>``);
* ``envelope``: ``each.P`` one marker pair per call, ``section.P.S`` one section around all calls
  joined by separator S, ``bare`` calls on their own lines after the content, ``fence1.I`` one fenced
  block per call (info string I), ``fences.I`` one fenced block around all calls;
* ``name``: where the function name goes: ``json.N.A`` in a JSON object under key N with the arguments
  under A (a non-JSON encoding becomes a JSON string there), ``tag.function`` ``<function=NAME>``,
  ``tag.tool`` ``<tool name="NAME">``, ``tag.element`` ``<NAME>``, ``header.h2`` ``## NAME``,
  ``header.h3`` ``### Tool: NAME``, ``header.eq`` ``=== NAME ===``, ``keyword.K`` ``call NAME ...``
  (K: call, CALL, dollar ``$``, use), ``label`` ``NAME: ...``, ``sexp`` ``(NAME ...)``,
  ``url.S`` ``S://NAME?...``, ``call`` ``NAME(...)``;
* ``id``: ``none``; ``prefix.S`` before the call (``[ID] ``, ``#ID ``, ``id=ID ``); ``json.first`` /
  ``json.after`` / ``json.last`` a JSON key; ``after_name.S`` right after the name; ``after_args.S``
  after the arguments (S spells it: bracket ``[ID]``, hash ``#ID``, eq ``id=ID``, paren ``(id: ID)``);
* ``encoding``: how the arguments are written (``ENCODINGS``: JSON, JSON string, JSON flattened beside
  the name, ``k=v&k=v``, shell flags, CSV with a header or positional, INI, EDN, plist, Lua, Ruby (both
  hash syntaxes), Nix, HCL, TOML inline table, XML attributes, XML children, YAML lines, Python kwargs,
  positional in schema order);
* ``strings``, ``booleans``, ``null``: the value codec and spellings (``STRINGS``, ``BOOLEANS``, ``NULLS``),
  each limited to what its encoding can read back;
* ``nested``: objects and arrays as JSON (passed through the string codec where strings are not
  self-delimiting: shell, CSV, query, XML) or ``native`` in the encoding's own syntax. Per encoding:
  JSON always for json / json_string / json_flat, shell (in shell quotes), CSV (CSV-quoted), INI,
  XML attributes (entity-escaped); native always for EDN ``{:k v}`` ``[a b]``, plist ``(:k v)``
  ``(a b)``, Lua ``{k = v}`` ``{a, b}``, Ruby ``{k: v}`` / ``{"k" => v}`` ``[a, b]``, Nix
  ``{ k = v; }`` ``[ a b ]``, TOML inline tables, positional_sexp (plist); either for query
  (``a[b][0]=v`` brackets), HCL (``{ k = v }``), XML children (child elements, ``<item>`` per array
  item), YAML (block mappings and ``- `` sequences), kwargs and positional (Python literals);
* ``reasoning``: none, ``<think>``, ``<think>`` opened by the generation prompt, ``<<thinking>>``,
  ``<<thinking>>`` opened by the prompt (history always writes the block), ``:::thinking``, a
  ``Thought:`` label ended by a blank line, ``[THINK]`` opened by the prompt;
* ``string_args``: arguments given as a JSON string are written verbatim or refused
  (``raise_exception``); JSON encodings always write them verbatim.

Positional encodings (``positional``, ``positional_sexp``, ``csv_pos``) do not write the argument
names, so the conformance harness counts their call scenarios n/a. Nothing here imports autoparser.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, fields

# ---------------------------------------------------------------- axes
ROLES = {
    "chatml": ("<|im_start|>{role}\n", "<|im_end|>\n"),
    "llama3": ("<|start_header_id|>{role}<|end_header_id|>\n\n", "<|eot_id|>"),
    "gemma": ("<start_of_turn>{role}\n", "<end_of_turn>\n"),
    "bracket": ("[|{role}|]\n", "[|end|]\n"),
    "phi": ("<|{role}|>\n", "<|end|>\n"),
    "xmlturn": ('<turn role="{role}">\n', "</turn>\n"),
}
#: name: (opener, closer, how: "" in history only, "omit" opened by the prompt and written in history
#: only with reasoning, "always" opened by the prompt and always written in history)
REASONING = {
    "none": ("", "", ""),
    "think": ("<think>\n", "\n</think>\n\n", ""),
    "think_prompt": ("<think>\n", "\n</think>\n\n", "omit"),
    "angle": ("<<thinking>>\n", "\n<</thinking>>\n", ""),
    "angle_prompt": ("<<thinking>>\n", "\n<</thinking>>\n", "always"),
    "colon": (":::thinking\n", "\n:::\n", ""),
    "label": ("Thought: ", "\n\n", ""),
    "bracket_prompt": ("[THINK]", "[/THINK]", "always"),
}
#: per-call marker pairs: (opener, closer, newline inside)
EACH = {"xml": ("<tool_call>", "</tool_call>", True), "brackets": ("[CALL]", "[/CALL]", False),
        "angle": ("<<call>>", "<</call>>", True), "white": ("⟦call⟧", "⟦/call⟧", False),
        "pipes": ("<|tool|>", "<|/tool|>", True)}
SECTION = {"xml": ("<tool_calls>", "</tool_calls>"), "brackets": ("[CALLS]", "[/CALLS]"),
           "pipes": ("<|calls|>", "<|/calls|>"), "words": ("BEGIN CALLS", "END CALLS")}
SEPS = {"nl": "\n", "blank": "\n\n", "comma": ", ", "semi": ";\n"}
FENCES = ("tool_call", "tool", "call")
ENVELOPES = tuple([f"each.{p}" for p in EACH] + [f"section.{p}.{s}" for p in SECTION for s in SEPS]
                  + ["bare"] + [f"fence1.{i}" for i in FENCES] + [f"fences.{i}" for i in FENCES])

NAME_KEYS = ("name", "function", "tool", "action")
ARG_KEYS = ("arguments", "parameters", "args", "input")
NAMES = tuple([f"json.{n}.{a}" for n in NAME_KEYS for a in ARG_KEYS]
              + ["tag.function", "tag.tool", "tag.element", "header.h2", "header.h3", "header.eq",
                 "keyword.call", "keyword.CALL", "keyword.dollar", "keyword.use", "label", "sexp",
                 "url.tool", "url.call", "call"])
PLACEMENTS = ("json", "tag", "header", "keyword", "label", "sexp", "url", "call")
KEYWORDS = {"call": "call", "CALL": "CALL", "dollar": "$", "use": "use"}
HEADERS = {"h2": ("## ", ""), "h3": ("### Tool: ", ""), "eq": ("=== ", " ===")}
ID_SPELLINGS = {"bracket": ("[", "]"), "hash": ("#", ""), "eq": ("id=", ""), "paren": ("(id: ", ")")}
IDS = tuple(["none"] + [f"prefix.{s}" for s in ("bracket", "hash", "eq")] + ["json.first", "json.after", "json.last"]
            + [f"after_name.{s}" for s in ("bracket", "hash")] + [f"after_args.{s}" for s in ID_SPELLINGS])

STRINGS = ("json", "python_single", "ruby_single", "single_doubled", "shell", "percent", "percent_plus",
           "entity", "raw", "cdata", "csv_min", "csv_all", "nix", "hcl")
BOOLEANS = {"json": ("true", "false"), "py": ("True", "False"), "onoff": ("on", "off"),
            "yesno": ("yes", "no"), "scheme": ("#t", "#f")}
NULLS = {"null": "null", "nil": "nil", "None": "None", "tilde": "~", "empty": ""}
REASONINGS = tuple(REASONING)


@dataclass(frozen=True)
class Obj:
    """An object literal: ``open`` pairs ``close``; a pair is KEY KV VALUE END, pairs joined by ``sep``.

    ``key``: ``ident`` (bare), ``json`` (JSON-quoted), ``str`` (the encoding's string codec),
    ``colon`` (``:k``), ``dash`` (``--k``)."""

    open: str
    close: str
    key: str
    kv: str
    sep: str
    end: str = ""


@dataclass(frozen=True)
class Enc:
    """An argument encoding. ``top`` writes the argument object (None: a writer of its own);
    ``obj``/``arr`` write nested values natively (None: JSON only)."""

    top: Obj | None
    obj: Obj | None
    arr: tuple[str, str, str] | None
    strings: tuple[str, ...]
    bools: tuple[str, ...]
    nulls: tuple[str, ...]
    nested: tuple[str, ...]
    multiline: bool = False
    json_via_codec: bool = False   # nested JSON goes through the string codec
    placements: tuple[str, ...] = ("json", "tag", "header", "keyword", "label")


_JSON = Obj("{", "}", "json", ": ", ", ")
_PY = ("python_single", "json")
_ALL_BOOLS = ("json", "py", "onoff", "yesno")
ENCODINGS: dict[str, Enc] = {
    "json": Enc(_JSON, _JSON, ("[", "]", ", "), ("json",), ("json",), ("null",), ("json",),
                placements=("json", "tag", "header", "keyword", "label", "sexp", "call")),
    "json_string": Enc(_JSON, _JSON, ("[", "]", ", "), ("json",), ("json",), ("null",), ("json",),
                       placements=("json", "tag", "header", "keyword", "label", "call")),
    "json_flat": Enc(_JSON, _JSON, ("[", "]", ", "), ("json",), ("json",), ("null",), ("json",), placements=("json",)),
    "query": Enc(Obj("", "", "ident", "=", "&"), None, None, ("percent", "percent_plus"), _ALL_BOOLS,
                 ("null", "None", "nil"), ("json", "native"), json_via_codec=True,
                 placements=("json", "tag", "header", "keyword", "label", "url")),
    "shell": Enc(Obj("", "", "dash", " ", " "), None, None, ("shell",), ("json", "yesno", "onoff"),
                 ("null", "None", "nil"), ("json",), json_via_codec=True),
    "csv_header": Enc(None, None, None, ("csv_min", "csv_all"), ("json", "py", "yesno"), ("empty", "null", "None"),
                      ("json",), multiline=True, json_via_codec=True),
    "csv_pos": Enc(None, None, None, ("csv_min", "csv_all"), ("json", "py", "yesno"), ("null", "None"),
                   ("json",), json_via_codec=True),
    "ini": Enc(Obj("", "", "ident", " = ", "\n"), None, None, ("json", "single_doubled", "python_single"),
               _ALL_BOOLS, ("null", "None", "empty", "nil"), ("json",), multiline=True),
    "edn": Enc(Obj("{", "}", "colon", " ", " "), Obj("{", "}", "colon", " ", " "), ("[", "]", " "), ("json",),
               ("json",), ("nil",), ("native",), placements=("json", "tag", "header", "keyword", "label", "sexp")),
    "plist": Enc(Obj("(", ")", "colon", " ", " "), Obj("(", ")", "colon", " ", " "), ("(", ")", " "), ("json",),
                 ("scheme", "json"), ("nil",), ("native",),
                 placements=("json", "tag", "header", "keyword", "label", "sexp")),
    "lua": Enc(Obj("{", "}", "ident", " = ", ", "), Obj("{", "}", "ident", " = ", ", "), ("{", "}", ", "),
               ("json", "python_single"), ("json",), ("nil",), ("native",),
               placements=("json", "tag", "header", "keyword", "label", "sexp", "call")),
    "ruby_sym": Enc(Obj("{", "}", "ident", ": ", ", "), Obj("{", "}", "ident", ": ", ", "), ("[", "]", ", "),
                    ("json", "ruby_single"), ("json",), ("nil",), ("native",),
                    placements=("json", "tag", "header", "keyword", "label", "sexp", "call")),
    "ruby_rocket": Enc(Obj("{", "}", "str", " => ", ", "), Obj("{", "}", "str", " => ", ", "), ("[", "]", ", "),
                       ("json", "ruby_single"), ("json",), ("nil",), ("native",),
                       placements=("json", "tag", "header", "keyword", "label", "sexp", "call")),
    "nix": Enc(Obj("{ ", " }", "ident", " = ", " ", ";"), Obj("{ ", " }", "ident", " = ", " ", ";"),
               ("[ ", " ]", " "), ("nix",), ("json",), ("null",), ("native",),
               placements=("json", "tag", "header", "keyword", "label", "sexp")),
    "hcl": Enc(Obj("", "", "ident", " = ", "\n"), Obj("{ ", " }", "ident", " = ", ", "), ("[", "]", ", "),
               ("hcl",), ("json",), ("null",), ("native", "json"), multiline=True),
    "toml": Enc(Obj("{", "}", "ident", " = ", ", "), Obj("{", "}", "ident", " = ", ", "), ("[", "]", ", "),
                ("json",), ("json",), ("nil", "null"), ("native",),
                placements=("json", "tag", "header", "keyword", "label", "sexp")),
    "xml_attrs": Enc(None, None, None, ("entity",), _ALL_BOOLS, ("null", "None", "nil"), ("json",),
                     json_via_codec=True),
    "xml_children": Enc(None, None, None, ("entity", "raw", "cdata"), _ALL_BOOLS, ("null", "None", "nil", "empty"),
                        ("json", "native"), multiline=True, json_via_codec=True),
    "yaml": Enc(Obj("", "", "ident", ": ", "\n"), None, None, ("json",), ("json", "yesno", "onoff", "py"),
                ("null", "tilde", "empty"), ("json", "native"), multiline=True),
    "kwargs": Enc(Obj("", "", "ident", "=", ", "), Obj("{", "}", "str", ": ", ", "), ("[", "]", ", "), _PY,
                  ("py",), ("None",), ("native", "json"),
                  placements=("json", "tag", "header", "keyword", "label", "call")),
    "positional": Enc(None, Obj("{", "}", "str", ": ", ", "), ("[", "]", ", "), _PY, ("py",), ("None",),
                      ("native", "json"), placements=("tag", "header", "keyword", "label", "call")),
    "positional_sexp": Enc(None, Obj("(", ")", "colon", " ", " "), ("(", ")", " "), ("json",), ("scheme", "json"),
                           ("nil",), ("native",), placements=("sexp",)),
}
AXES: dict[str, tuple[str, ...]] = {
    "roles": tuple(ROLES), "envelope": ENVELOPES, "name": NAMES, "id": IDS, "encoding": tuple(ENCODINGS),
    "strings": STRINGS, "booleans": tuple(BOOLEANS), "null": tuple(NULLS), "nested": ("json", "native"),
    "reasoning": REASONINGS, "string_args": ("verbatim", "refuse"),
}
N_DRAWN = 520
SEED = 21


@dataclass(frozen=True)
class Format:
    roles: str
    envelope: str
    name: str
    id: str
    encoding: str
    strings: str
    booleans: str
    null: str
    nested: str
    reasoning: str
    string_args: str

    @property
    def key(self) -> str:
        """The combination as one string (``Axes:`` line of a written template)."""
        return "-".join(getattr(self, f.name) for f in fields(self))

    @classmethod
    def parse(cls, key: str) -> Format:
        return cls(*key.split("-"))

    @property
    def enc(self) -> Enc:
        return ENCODINGS[self.encoding]

    @property
    def placement(self) -> str:
        return self.name.split(".")[0]

    @property
    def multiline(self) -> bool:
        return self.enc.multiline and self.placement != "json"


def coherent(f: Format) -> str | None:
    """Why the combination is not a template an author would write (None: it is)."""
    e = f.enc
    if f.placement not in e.placements:
        return f"{f.encoding} cannot sit in a {f.placement} placement"
    if f.strings not in e.strings or f.booleans not in e.bools or f.null not in e.nulls or f.nested not in e.nested:
        return "a value spelling the encoding cannot read back"
    if f.id.startswith("json.") and f.placement != "json":
        return "a JSON id key needs the name in JSON"
    if f.id.startswith("after_name") and f.placement == "json":
        return "after the name in JSON is json.after"
    if f.roles == "phi" and f.envelope == "each.pipes":
        return "the call marker <|tool|> would be the tool role's turn opener"
    env = f.envelope.split(".")
    if f.multiline and f.placement in ("keyword", "label") and env[0] not in ("each", "fence1"):
        return "lines of arguments after a keyword or label need a closer per call"
    if env[0] == "section" and env[2] in ("comma", "semi") and (f.multiline or f.placement == "header"):
        return "calls written over lines need a line separator"
    if (env[0] == "section" and env[2] in ("comma", "semi") and f.encoding in ("positional", "csv_pos")
            and f.placement in ("keyword", "label", "header")):
        return "values in a row would run on into the next call"
    if f.encoding in ("json", "json_string") and f.string_args != "verbatim":
        return "a JSON slot writes string arguments verbatim"
    if f.encoding in ("json_flat", "positional", "positional_sexp", "csv_pos") and f.string_args != "refuse":
        return "no slot for a JSON string"
    return None


def _pick(rng: random.Random, values: tuple[str, ...]) -> str:
    return values[rng.randrange(len(values))]


def _grouped(rng: random.Random, values: tuple[str, ...]) -> str:
    """A value drawn group first (the part before the first dot), so that no group outweighs others."""
    group = _pick(rng, tuple(dict.fromkeys(v.split(".")[0] for v in values)))
    return _pick(rng, tuple(v for v in values if v.split(".")[0] == group))


def draw_one(rng: random.Random) -> Format:
    """One coherent combination: the encoding first, then a placement and values that fit it."""
    while True:
        encoding = _pick(rng, tuple(ENCODINGS))
        e = ENCODINGS[encoding]
        name = _grouped(rng, tuple(n for n in NAMES if n.split(".")[0] in e.placements))
        if encoding == "query" and rng.random() < 0.4:   # the one encoding a URL placement takes
            name = _pick(rng, ("url.tool", "url.call"))
        placement = name.split(".")[0]
        ids = tuple(i for i in IDS if not (i.startswith("json.") and placement != "json")
                    and not (placement == "json" and i.startswith("after_name")))
        string_args = ("verbatim" if encoding in ("json", "json_string") else
                       "refuse" if encoding in ("json_flat", "positional", "positional_sexp", "csv_pos") else
                       _pick(rng, ("verbatim", "refuse")))
        f = Format(_pick(rng, tuple(ROLES)), _grouped(rng, ENVELOPES), name, _grouped(rng, ids), encoding,
                   _pick(rng, e.strings), _pick(rng, e.bools), _pick(rng, e.nulls), _pick(rng, e.nested),
                   _pick(rng, REASONINGS), string_args)
        if coherent(f) is None:
            return f


def draw(n: int = N_DRAWN, seed: int = SEED) -> list[Format]:
    """``n`` distinct coherent combinations drawn with ``seed`` (the same list every time)."""
    rng = random.Random(seed)
    out: dict[str, Format] = {}
    while len(out) < n:
        f = draw_one(rng)
        out.setdefault(f.key, f)
    return list(out.values())


DRAWN: list[Format] = draw()


# ---------------------------------------------------------------- writing the template
def lit(s: str) -> str:
    """A Jinja string literal."""
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'").replace("\n", "\\n") + "'"


def str_expr(codec: str, x: str) -> str:
    """A Jinja expression writing string ``x`` with a codec."""
    return {
        "json": f"({x} | tojson)",
        "python_single": "(\"'\" ~ (" + x + " | replace('\\\\', '\\\\\\\\') | replace(\"'\", \"\\\\'\") "
                         "| replace('\\n', '\\\\n') | replace('\\r', '\\\\r') | replace('\\t', '\\\\t')) ~ \"'\")",
        "ruby_single": "(\"'\" ~ (" + x + " | replace('\\\\', '\\\\\\\\') | replace(\"'\", \"\\\\'\")) ~ \"'\")",
        "single_doubled": "(\"'\" ~ (" + x + " | replace(\"'\", \"''\")) ~ \"'\")",
        "shell": "(\"'\" ~ (" + x + " | replace(\"'\", \"'\\\\''\")) ~ \"'\")",
        "percent": f"({x} | urlencode)",
        "percent_plus": f"({x} | urlencode | replace('%20', '+'))",
        "entity": f"({x} | e)",
        "raw": x,
        "cdata": "('<![CDATA[' ~ (" + x + " | replace(']]>', ']]]]><![CDATA[>')) ~ ']]>')",
        "csv_min": f"(('\"' ~ ({x} | replace('\"', '\"\"')) ~ '\"') if ({x} == '' or ',' in {x} or '\"' in {x} "
                   f"or '\\n' in {x} or '\\r' in {x}) else {x})",
        "csv_all": f"('\"' ~ ({x} | replace('\"', '\"\"')) ~ '\"')",
        "nix": f"({x} | tojson | replace('${{', '\\\\${{'))",
        "hcl": f"({x} | tojson | replace('${{', '$${{') | replace('%{{', '%%{{'))",
    }[codec]


def key_expr(o: Obj, codec: str, k: str) -> str:
    return {"ident": k, "json": f"({k} | tojson)", "str": str_expr(codec, k),
            "colon": f"(':' ~ {k})", "dash": f"('--' ~ {k})"}[o.key]


def _macros(f: Format) -> str:
    """``scalar(v)``, ``val(v)`` (any value) and ``body(name, a)`` (the arguments) of one format."""
    e = f.enc
    t, fl = BOOLEANS[f.booleans]
    nul = NULLS[f.null]
    out = ["{%- macro scalar(v) -%}",
           "{%- if v is none -%}{{- " + lit(nul) + " -}}",
           "{%- elif v is boolean -%}{{- " + lit(t) + " if v else " + lit(fl) + " -}}",
           "{%- elif v is number -%}{{- v | tojson -}}",
           "{%- else -%}{{- " + str_expr(f.strings, "(v | string)") + " -}}{%- endif -%}",
           "{%- endmacro -%}"]
    # nested values
    out.append("{%- macro val(v) -%}")
    out.append("{%- if v is mapping or (v is iterable and v is not string) -%}")
    if f.nested == "json" or (e.obj is None and f.encoding not in ("query", "xml_children", "yaml")):
        out.append("{{- " + (str_expr(f.strings, "(v | tojson)") if e.json_via_codec else "(v | tojson)") + " -}}")
    elif e.obj is not None:
        o, (ao, ac, asep) = e.obj, e.arr or ("[", "]", ", ")
        out += ["{%- if v is mapping -%}{{- " + lit(o.open) + " -}}",
                "{%- for k, x in v.items() -%}{%- if not loop.first -%}{{- " + lit(o.sep) + " -}}{%- endif -%}",
                "{{- " + key_expr(o, f.strings, "k") + " ~ " + lit(o.kv) + " ~ val(x) ~ " + lit(o.end) + " -}}",
                "{%- endfor -%}{{- " + lit(o.close) + " -}}",
                "{%- else -%}{{- " + lit(ao) + " -}}",
                "{%- for x in v -%}{%- if not loop.first -%}{{- " + lit(asep) + " -}}{%- endif -%}{{- val(x) -}}"
                "{%- endfor -%}{{- " + lit(ac) + " -}}{%- endif -%}"]
    else:   # query brackets, XML children and YAML blocks are written by body()
        out.append("{{- " + (str_expr(f.strings, "(v | tojson)") if e.json_via_codec else "(v | tojson)") + " -}}")
    out += ["{%- else -%}{{- scalar(v) -}}{%- endif -%}", "{%- endmacro -%}"]
    out += _body_macro(f)
    return "\n".join(out)


def _is_container(x: str) -> str:
    return f"({x} is mapping or ({x} is iterable and {x} is not string))"


def _body_macro(f: Format) -> list[str]:
    """``body(name, a)``: the argument object ``a`` of tool ``name`` in the encoding (one string)."""
    e, enc = f.enc, f.encoding
    out = ["{%- macro body(name, a) -%}"]
    if enc == "query" and f.nested == "native":
        out = ["{%- macro q(p, v) -%}",
               "{%- if v is mapping and v -%}{%- for k, x in v.items() -%}{%- if not loop.first -%}{{- '&' -}}"
               "{%- endif -%}{{- q(p ~ '[' ~ k ~ ']', x) -}}{%- endfor -%}",
               "{%- elif v is iterable and v is not string and v is not mapping and v -%}"
               "{%- for x in v -%}{%- if not loop.first -%}{{- '&' -}}{%- endif -%}"
               "{{- q(p ~ '[' ~ loop.index0 ~ ']', x) -}}{%- endfor -%}",
               "{%- else -%}{{- p ~ '=' ~ val(v) -}}{%- endif -%}",
               "{%- endmacro -%}", *out,
               "{%- for k, x in a.items() -%}{%- if not loop.first -%}{{- '&' -}}{%- endif -%}{{- q(k, x) -}}"
               "{%- endfor -%}"]
    elif enc in ("csv_header", "csv_pos"):
        if enc == "csv_header":
            out.append("{{- a.keys() | join(',') ~ '\\n' -}}"
                       "{%- for k, x in a.items() -%}{%- if not loop.first -%}{{- ',' -}}{%- endif -%}"
                       "{{- val(x) -}}{%- endfor -%}")
        else:
            out += [*_schema_keys(), "{%- set ns.n = 0 -%}{%- for k in ns.keys -%}{%- if k in a -%}{%- set ns.n = loop.index -%}{%- endif -%}" "{%- endfor -%}", "{%- for k in ns.keys[:ns.n] -%}{%- if not loop.first -%}{{- ',' -}}{%- endif -%}" "{%- if k in a -%}{{- val(a[k]) -}}{%- endif -%}{%- endfor -%}"]
    elif enc == "xml_attrs":
        out.append("{{- '<args' -}}{%- for k, x in a.items() -%}{{- ' ' ~ k ~ '=\"' ~ val(x) ~ '\"' -}}{%- endfor -%}"
                   "{{- '/>' -}}")
    elif enc == "xml_children":
        if f.nested == "native":
            out = ["{%- macro el(k, v) -%}",
                   "{%- if v is none and " + lit(f.null) + " == 'empty' -%}{{- '<' ~ k ~ '/>' -}}",
                   "{%- elif v is mapping -%}{{- '<' ~ k ~ '>' -}}{%- for kk, x in v.items() -%}{{- el(kk, x) -}}"
                   "{%- endfor -%}{{- '</' ~ k ~ '>' -}}",
                   "{%- elif v is iterable and v is not string -%}{{- '<' ~ k ~ '>' -}}{%- for x in v -%}"
                   "{{- el('item', x) -}}{%- endfor -%}{{- '</' ~ k ~ '>' -}}",
                   "{%- else -%}{{- '<' ~ k ~ '>' ~ scalar(v) ~ '</' ~ k ~ '>' -}}{%- endif -%}",
                   "{%- endmacro -%}", *out,
                   "{%- for k, x in a.items() -%}{%- if not loop.first -%}{{- '\\n' -}}{%- endif -%}{{- el(k, x) -}}"
                   "{%- endfor -%}"]
        else:
            out.append("{%- for k, x in a.items() -%}{%- if not loop.first -%}{{- '\\n' -}}{%- endif -%}"
                       "{%- if x is none and " + lit(f.null) + " == 'empty' -%}{{- '<' ~ k ~ '/>' -}}"
                       "{%- else -%}{{- '<' ~ k ~ '>' ~ val(x) ~ '</' ~ k ~ '>' -}}{%- endif -%}{%- endfor -%}")
    elif enc == "yaml" and f.nested == "native":
        out = ["{%- macro block(v, ind) -%}",
               "{%- if v is mapping -%}{%- for k, x in v.items() -%}{{- '\\n' ~ ind ~ k ~ ':' -}}"
               "{%- if " + _is_container("x") + " and x | length -%}{{- block(x, ind ~ '  ') -}}"
               "{%- elif x is none and " + lit(f.null) + " == 'empty' -%}"
               "{%- else -%}{{- ' ' ~ val(x) -}}{%- endif -%}{%- endfor -%}",
               "{%- else -%}{%- for x in v -%}{{- '\\n' ~ ind ~ '-' -}}"
               "{%- if " + _is_container("x") + " and x | length -%}{{- block(x, ind ~ '  ') -}}"
               "{%- else -%}{{- ' ' ~ val(x) -}}{%- endif -%}{%- endfor -%}{%- endif -%}",
               "{%- endmacro -%}", *out,
               "{%- for k, x in a.items() -%}{%- if not loop.first -%}{{- '\\n' -}}{%- endif -%}{{- k ~ ':' -}}"
               "{%- if " + _is_container("x") + " and x | length -%}{{- block(x, '  ') -}}"
               "{%- elif x is none and " + lit(f.null) + " == 'empty' -%}"
               "{%- else -%}{{- ' ' ~ val(x) -}}{%- endif -%}{%- endfor -%}"]
    elif enc in ("positional", "positional_sexp"):
        sep, kw = (" ", "':' ~ k ~ ' '") if enc == "positional_sexp" else (", ", "k ~ '='")
        out += [*_schema_keys(), "{%- for k in ns.keys -%}{%- if k not in a -%}{%- set ns.gap = true -%}{%- elif not ns.gap -%}" "{%- if not ns.first -%}{{- " + lit(sep) + " -}}{%- endif -%}{%- set ns.first = false -%}" "{%- set ns.done = ns.done + [k] -%}{{- val(a[k]) -}}{%- endif -%}{%- endfor -%}", "{%- for k, x in a.items() if k not in ns.done -%}" "{%- if not ns.first -%}{{- " + lit(sep) + " -}}{%- endif -%}{%- set ns.first = false -%}" "{{- " + kw + " ~ val(x) -}}{%- endfor -%}"]
    else:
        o = e.top
        assert o is not None
        inner = enc == "plist" and f.placement == "sexp"
        if o.open and not inner:
            out.append("{{- " + lit(o.open) + " -}}")
        if enc == "json_flat":
            pass   # the call writes the pairs beside the name
        null_empty = f.null == "empty"
        out.append("{%- for k, x in a.items() -%}{%- if not loop.first -%}{{- " + lit(o.sep) + " -}}{%- endif -%}")
        kv = lit(o.kv)
        if null_empty:
            out.append("{%- if x is none -%}{{- " + key_expr(o, f.strings, "k") + " ~ " + lit(o.kv.rstrip()) + " -}}"
                       "{%- else -%}{{- " + key_expr(o, f.strings, "k") + " ~ " + kv + " ~ val(x) ~ " + lit(o.end)
                       + " -}}{%- endif -%}")
        else:
            out.append("{{- " + key_expr(o, f.strings, "k") + " ~ " + kv + " ~ val(x) ~ " + lit(o.end) + " -}}")
        out.append("{%- endfor -%}")
        if o.close and not inner:
            out.append("{{- " + lit(o.close) + " -}}")
    out.append("{%- endmacro -%}")
    return out


def _schema_keys() -> list[str]:
    """Jinja setting ``ns.keys``: the parameter names of tool ``name`` in schema order."""
    return ["{%- set ns = namespace(keys=[], n=0, gap=false, first=true, done=[]) -%}",
            "{%- for t in tools or [] -%}{%- set tf = t.function if t.function is defined else t -%}"
            "{%- if tf.name == name and tf.parameters is defined and tf.parameters.properties is defined -%}"
            "{%- set ns.keys = tf.parameters.properties.keys() | list -%}{%- endif -%}{%- endfor -%}"]


def _id(spelling: str) -> str:
    a, b = ID_SPELLINGS[spelling]
    return lit(a) + " ~ id ~ " + lit(b)


def _call_macro(f: Format) -> str:
    """``call(tc)``: one call without its envelope."""
    p, opts = f.placement, f.name.split(".")[1:]
    idk, ido = ([*f.id.split("."), ""])[:2]
    ml = f.multiline
    body = "body(fn.name, args)"
    if f.encoding == "json_string":
        body = "(body(fn.name, args) | tojson)"
    s = ["{%- macro call(tc) -%}",
         "{%- set fn = tc.function if tc.function is defined else tc -%}",
         "{%- set id = tc.id if tc.id is defined and tc.id else '' -%}",
         "{%- set args = fn.arguments if fn.arguments is defined and fn.arguments is not none else {} -%}"]
    if f.encoding in ("json", "json_string"):
        s.append("{%- set b = (args if args is string else " + body + ") -%}")
        if f.encoding == "json_string":
            s[-1] = "{%- set b = ((args if args is string else body(fn.name, args)) | tojson) -%}"
    elif f.string_args == "refuse":
        s.append("{%- if args is string -%}{{- raise_exception('arguments must be an object, not a JSON string') -}}"
                 "{%- endif -%}{%- set b = " + body + " -%}")
    else:
        s.append("{%- set b = (args if args is string else " + body + ") -%}")
    if idk == "prefix":
        s.append("{%- if id -%}{{- " + _id(ido) + " ~ ' ' -}}{%- endif -%}")
    after_name = ("{%- if id -%}{{- " + (lit(" ") + " ~ " if ido == "bracket" else "") + _id(ido) + " -}}{%- endif -%}"
                  if idk == "after_name" else "")
    if p == "json":
        nk, ak = opts
        idpair = "{%- if id -%}{{- '\"id\": ' ~ (id | tojson) ~ ', ' -}}{%- endif -%}"
        s.append("{{- '{' -}}" + (idpair if ido == "first" else ""))
        s.append("{{- " + lit(f'"{nk}": ') + " ~ (fn.name | tojson) -}}")
        if ido == "after":
            s.append("{%- if id -%}{{- ', \"id\": ' ~ (id | tojson) -}}{%- endif -%}")
        if f.encoding == "json_flat":
            s.append("{%- for k, x in args.items() -%}{{- ', ' ~ (k | tojson) ~ ': ' ~ (x | tojson) -}}{%- endfor -%}")
        elif f.encoding in ("json", "json_string"):
            s.append("{{- " + lit(f', "{ak}": ') + " ~ b -}}")
        else:
            s.append("{{- " + lit(f', "{ak}": ') + " ~ (b | tojson) -}}")
        if ido == "last":
            s.append("{%- if id -%}{{- ', \"id\": ' ~ (id | tojson) -}}{%- endif -%}")
        s.append("{{- '}' -}}")
    elif p == "tag":
        nl = lit("\n") if ml else "''"
        if opts[0] == "function":
            s.append("{{- '<function=' ~ fn.name -}}")
        elif opts[0] == "tool":
            s.append("{{- '<tool name=\"' ~ fn.name ~ '\"' -}}")
        else:
            s.append("{{- '<' ~ fn.name -}}")
        if idk == "after_name":
            s.append("{%- if id -%}{{- ' id=\"' ~ id ~ '\"' -}}{%- endif -%}")
        close = "'</function>'" if opts[0] == "function" else "'</tool>'" if opts[0] == "tool" else "'</' ~ fn.name ~ '>'"
        s.append("{{- '>' ~ " + nl + " ~ b ~ " + nl + " ~ " + close + " -}}")
    elif p == "header":
        a, b = HEADERS[opts[0]]
        s.append("{{- " + lit(a) + " ~ fn.name -}}" + after_name + "{{- " + lit(b + "\n") + " ~ b -}}")
    elif p == "keyword":
        s.append("{{- " + lit(KEYWORDS[opts[0]] + " ") + " ~ fn.name -}}" + after_name
                 + "{{- " + lit("\n" if ml else " ") + " ~ b -}}")
    elif p == "label":
        s.append("{{- fn.name -}}" + after_name + "{{- ':' ~ " + lit("\n" if ml else " ") + " ~ b -}}")
    elif p == "sexp":
        s.append("{{- '(' ~ fn.name -}}" + after_name + "{{- ' ' ~ b ~ ')' -}}")
    elif p == "url":
        s.append("{{- " + lit(opts[0] + "://") + " ~ fn.name -}}"
                 + ("{%- if id -%}{{- '/' ~ id -}}{%- endif -%}" if idk == "after_name" else "") + "{{- '?' ~ b -}}")
    elif p == "call":
        s.append("{{- fn.name -}}" + after_name + "{{- '(' ~ b ~ ')' -}}")
    if idk == "after_args":
        s.append("{%- if id -%}{{- " + lit("\n" if ml and p != "tag" else " ") + " ~ " + _id(ido) + " -}}{%- endif -%}")
    s.append("{%- endmacro -%}")
    return "\n".join(s)


def render(f: Format) -> str:
    """The template source of one combination."""
    turn_open, turn_close = ROLES[f.roles]
    r_open, r_close, r_how = REASONING[f.reasoning]

    def open_(role: str) -> str:
        before, after = turn_open.split("{role}")
        return lit(before) + " ~ " + role + " ~ " + lit(after)

    if f.reasoning == "none":
        reasoning = ""
    elif r_how == "always":
        reasoning = "{{- " + lit(r_open) + " ~ (message.reasoning_content or '') ~ " + lit(r_close) + " -}}"
    else:
        reasoning = ("{%- if message.reasoning_content -%}{{- " + lit(r_open) + " ~ message.reasoning_content ~ "
                     + lit(r_close) + " -}}{%- endif -%}")
    kind, *opt = f.envelope.split(".")
    if kind in ("each", "fence1"):
        o, c, nl = EACH[opt[0]] if kind == "each" else ("```" + opt[0], "```", True)
        o, c = (o + "\n", "\n" + c) if nl else (o, c)
        calls = ("{%- for tc in message.tool_calls or [] -%}"
                 "{%- if content or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
                 "{{- " + lit(o) + " ~ call(tc) ~ " + lit(c) + " -}}{%- endfor -%}")
    elif kind == "bare":
        calls = ("{%- for tc in message.tool_calls or [] -%}"
                 "{%- if content or not loop.first -%}{{- '\\n' -}}{%- endif -%}{{- call(tc) -}}{%- endfor -%}")
    else:
        o, c = SECTION[opt[0]] if kind == "section" else ("```" + opt[0], "```")
        sep = SEPS[opt[1]] if kind == "section" else "\n"
        calls = ("{%- if message.tool_calls -%}{%- if content -%}{{- '\\n' -}}{%- endif -%}"
                 "{{- " + lit(o + "\n") + " -}}"
                 "{%- for tc in message.tool_calls -%}{%- if not loop.first -%}{{- " + lit(sep) + " -}}{%- endif -%}"
                 "{{- call(tc) -}}{%- endfor -%}{{- " + lit("\n" + c) + " -}}{%- endif -%}")
    prompt_open = "{{- " + lit(r_open) + " -}}" if r_how else ""
    text = ("{%- macro text(c) -%}{%- if c is none or c is undefined -%}{%- elif c is string -%}{{- c -}}"
            "{%- elif c is mapping -%}{{- c | tojson -}}{%- else -%}{%- for p in c -%}"
            "{{- p.text if p.text is defined else '' -}}{%- endfor -%}{%- endif -%}{%- endmacro -%}")
    tools_line = ("{%- if tools -%}{{- " + open_("'system'") + " ~ 'You may call these tools:\\n' -}}"
                  "{%- for t in tools -%}{{- ((t.function if t.function is defined else t) | tojson) ~ '\\n' -}}"
                  "{%- endfor -%}{{- " + lit("Write each call as the examples in this conversation show.") + " ~ "
                  + lit(turn_close) + " -}}{%- endif -%}")
    return "\n".join([
        "{#- synthesized (tests/synth_axes.py). Axes: " + f.key + " -#}",
        text, _macros(f), _call_macro(f),
        tools_line,
        "{%- for message in messages -%}",
        "{%- if message.role == 'assistant' -%}",
        "{%- set content = text(message.content) -%}",
        "{{- " + open_("'assistant'") + " -}}" + reasoning + "{{- content -}}" + calls + "{{- " + lit(turn_close) + " -}}",
        "{%- elif message.role == 'tool' -%}",
        "{{- " + open_("'tool'") + " ~ text(message.content) ~ " + lit(turn_close) + " -}}",
        "{%- else -%}",
        "{{- " + open_("message.role") + " ~ text(message.content) ~ " + lit(turn_close) + " -}}",
        "{%- endif -%}{%- endfor -%}",
        "{%- if add_generation_prompt -%}{{- " + open_("'assistant'") + " -}}" + prompt_open + "{%- endif -%}",
        "",
    ])


def format_of(source: str) -> Format | None:
    """The axes a written template names in its first line (``Axes: ...``), or None."""
    head = source.split("\n", 1)[0]
    return Format.parse(head.split("Axes: ", 1)[1].split(" ", 1)[0]) if "Axes: " in head else None
