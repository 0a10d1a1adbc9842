"""A strict per-request parser: a parsimonious PEG built from the analysis, plus a tree mapper.

``build_peg(plan)`` writes the grammar for one request (its tools, ``tool_choice``,
``parallel_tool_calls``, reasoning state and ``response_format`` are known then) as
parsimonious source text, and ``PegParser.parse(text)`` (:mod:`.peg_mapper`) maps the parse tree to the same
``Message`` the streaming engine (``Request.parse``) returns for valid output. Unlike the
engine it accepts only the canonical shape::

    message = assistant_header? reasoning? content (tool_calls content)? end

(turn markers such as ``<|im_end|>`` may separate the parts and end the message) and raises
``autoparser.errors.ParseError`` at the farthest position parsimonious reached for anything
else: an unclosed call, an unknown tool name, a second call when ``parallel_tool_calls`` is
off, an answer that is not the ``response_format`` JSON.

Markers are regex terminals built from ``markers.pattern`` (whitespace-tolerant exactly as
the engine matches them), free text is a lazy regex up to the marker that ends it, and JSON,
Python and argument literals are recursive PEG rules. The mapper reads argument values as
the engine does, so for valid output
``req.parse_strict(text).to_dict() == req.parse(text).to_dict()``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import regex
from parsimonious.grammar import Grammar

from .. import ir
from .. import markers as mk
from ..analysis.model import LINE_ARGS
from ..runtime.lineargs import args_end_source, body_source, layout, quote_chars
from ..values.yamlargs import KEY, key_line_source
from .peg_layout import LayoutRules, add_json_rules, layout_call
from .peg_mapper import PegParser, _Context
from .peg_rules import _JSON_RULES, _PYTHON_JSON, _alts, _closing, _lit, _rule_name, _Rules, _rx, _seq

if TYPE_CHECKING:
    from ..analysis.model import JsonLayout, LiteralArgs, ToolFormat
    from ..plan import RequestPlan

_ID_WORD = r"[^\s<>\[\]{}\"'|,:=()`]+"     # an id with no closing marker (tagged_frame._NAME)


# ---------------------------------------------------------------- the grammar
def build_peg(plan: RequestPlan) -> PegParser:
    """The strict grammar and mapper for one request: the request's IR printed as PEG."""
    g = ir.message_grammar(plan)
    tp, calls = plan.tools, g.tool_calls
    tools = calls.tools.format if calls is not None else None
    b = _Rules()
    _Printer(b, g).rule("message")
    add_json_rules(b, python=False)
    if g.stops:
        b.add("stop", _rx(r"\s*(?:" + "|".join(mk.pattern(m) for m in g.stops) + ")"))
    if any("json_" in body for body in b.rules.values()):
        python = tools is not None and (tools.python_literals or tools.args == "python")
        for name, body in _JSON_RULES.items():
            b.add(name, _PYTHON_JSON.get(name, body) if python else body)
    b.add("ws", _rx(r"\s*"))
    text = b.text()
    pre, schema = plan.prefill, plan.answer.schema
    ctx = _Context(plan=plan, template=plan.template, tools=tools, prefill_reasoning=pre.reasoning,
                   prefill_open=pre.reasoning_open, prefill_content=pre.content,
                   response_schema=dict(schema) if schema is not None else None,
                   schemas={n: dict(tp.schema(n)) for n in tp.names} if tp is not None else {},
                   dropped="|".join(s.node.pattern for s in g.content_stops if s.node.role == "dropped"),
                   layout=b.layout)
    return PegParser(text=text, grammar=Grammar(text), context=ctx)


class _Printer:
    """Prints IR nodes as parsimonious expressions; named IR rules become PEG rules."""

    def __init__(self, b: _Rules, g: ir.Grammar) -> None:
        self.b, self.g = b, g

    def rule(self, name: str) -> str:
        if name in self.b.rules:
            return name
        node = self.g[name]
        if isinstance(node, (ir.Marker, ir.Pattern, ir.Text, ir.Calls, ir.Answer)):
            return self.expr(node)     # a terminal or leaf rule named after its role
        self.b.add(name, "")           # placeholder: keeps the rule ahead of the rules it uses
        self.b.rules[name] = self.expr(node, top=True)
        return name

    def expr(self, node: ir.Node, top: bool = False, in_seq: bool = False) -> str:
        """``node`` as a PEG expression; parenthesized unless it stands alone or in a sequence."""
        b = self.b
        if isinstance(node, ir.Ref):
            return self.rule(node.name)
        if isinstance(node, ir.Lit):
            return _lit(node.text)
        if isinstance(node, (ir.Marker, ir.Pattern)):
            return b.add(node.role, _rx(r"\s*" + node.pattern))
        if isinstance(node, ir.Text):
            body = r"(?s:.*?)" if not node.avoid else r"(?s:(?:(?!" + node.avoid + ").)*?)"
            ends = [*node.ends, r"\s*\Z"] if node.or_end else list(node.ends)
            return b.add(node.role, _rx(body + "(?=" + "|".join(ends) + ")"))
        if isinstance(node, ir.Seq):
            out = _seq(*(self.expr(n, in_seq=True) for n in node.items))
            return out if top or in_seq or len(node.items) < 2 else f"({out})"
        if isinstance(node, ir.Choice):
            out = " / ".join(self.expr(n, in_seq=True) for n in node.items)
            return out if top else f"({out})"
        if isinstance(node, ir.Repeat):
            inner = self.expr(node.item)
            suffix = {(0, 1): "?", (0, None): "*", (1, None): "+"}[(node.min, node.max)]
            return inner + suffix
        if isinstance(node, ir.Turn):
            if not self.g.stops:
                return ""
            if node.lazy_before:
                stops = "|".join(mk.pattern(m) for m in self.g.stops)
                return b.add("turn_markers", _rx(r"(?:\s*(?:" + stops + r"))*?(?=\s*" + node.lazy_before + ")"))
            return "stop*"
        if isinstance(node, ir.Tolerated):
            return self.expr(node.item, top, in_seq)
        if isinstance(node, ir.Inline):
            return ""     # read as part of the free text around it
        if isinstance(node, ir.End):
            b.add("end_of_text", _rx(r"\Z"))
            return "ws end_of_text"
        if isinstance(node, ir.Answer):
            return b.add("answer", "ws json_value")
        if isinstance(node, ir.Calls):
            return _tool_calls(b, node, self.g)
        raise TypeError(f"no PEG for {node!r}")


def _tool_calls(b: _Rules, node: ir.Calls, g: ir.Grammar) -> str:
    """``tool_calls``: the section, its calls and their separators; ``tool_calls_opened`` when the
    prompt wrote the first call's start (its first call is ``call_opened``, the call without it)."""
    name = "tool_calls_opened" if node.opened else "tool_calls"
    if name in b.rules:
        return name
    tp = node.tools
    t = tp.format
    b.add(name, "")     # placeholder: keeps the rule ahead of its markers
    sep = b.marker("call_separator", t.separator) if t.separator.strip() else ""
    first = "call_opened" if node.opened else "call"
    if not tp.parallel:
        calls = first
    else:
        calls = f"{first} ({sep} call)*" if sep else "call+" if first == "call" else f"{first} call*"
    if t.section_start.strip():
        start = b.marker("section_start", t.section_start)
        b.rules[name] = _seq(start, calls, _closing(b, g, "section_end", t.section_end))
    else:     # a section end with no start is a turn marker (``ir.stop_markers``)
        b.rules[name] = calls
    if t.style == "json" and t.json is not None:
        start, rest = _json_call(b, g, t, t.json, tp.allowed)
    elif t.style == "layout" and t.layout is not None:
        b.layout = LayoutRules()
        start, rest = layout_call(b, g, tp, b.layout)
    else:
        start, rest = _tagged_call(b, g, t, tp.allowed)
    b.add("call", _seq(start, rest))
    if node.opened:
        b.add("call_opened", rest)
    return name


def _markers(b: _Rules, t: ToolFormat, *roles: str) -> dict[str, str]:
    return {r: (b.marker(r, getattr(t, r)) if getattr(t, r).strip() else "") for r in roles}


def _json_call(b: _Rules, g: ir.Grammar, t: ToolFormat, layout: JsonLayout, names: tuple[str, ...]
               ) -> tuple[str, str]:
    """A call written as one JSON object (name, arguments and id as members): (its start, the rest)."""
    start = b.marker("call_start", t.call_start) if t.call_start.strip() else ""
    rest = _seq("ws call_object", _closing(b, g, "call_end", t.call_end))
    python = t.python_literals
    quoted = [_lit(json.dumps(n, ensure_ascii=False)) for n in sorted(names, key=len, reverse=True)]
    if python:
        quoted += [_lit("'" + n + "'") for n in sorted(names, key=len, reverse=True)]
    b.add("call_name", " / ".join(quoted))
    if layout.name_is_key:
        b.add("call_object", '"{" ws call_name ws ":" ws args_json ws "}"')
        b.add("args_json", "json_object / json_string")
        return start, rest
    roles = {"name": tuple(layout.name_path), "args": tuple(layout.args_path)}
    if layout.id_path:
        roles["id"] = tuple(layout.id_path)
    _json_object(b, "call", roles, python)
    b.add("args_json", "json_object / json_string")     # a string holds the arguments as JSON text
    if "id" in roles:
        b.add("call_id", "json_string / json_number")
    return start, rest


def _json_object(b: _Rules, base: str, roles: dict[str, tuple[str, ...]], python: bool,
                 depth: int = 0) -> str:
    """``<base>_object``: the call's known members in any order, and other members.

    A nested path (``function.name``) gets its own object rule; a member whose key is
    known but whose value does not fit (an unknown tool name) matches nothing.
    """
    members: dict[str, str] = {}
    for role, path in roles.items():
        key = path[depth]
        if len(path) == depth + 1:
            members[key] = {"name": "call_name", "args": "args_json", "id": "call_id"}[role]
        elif key not in members:
            inner = {r: p for r, p in roles.items() if len(p) > depth + 1 and p[depth] == key}
            members[key] = _json_object(b, f"{base}_{_rule_name(key)}", inner, python, depth + 1)
    fields: list[str] = []
    keys: list[str] = []
    for key, value in members.items():
        spelled = [_lit(json.dumps(key, ensure_ascii=False))] + ([_lit(f"'{key}'")] if python else [])
        keys += spelled
        member = {"call_name": "name_member", "args_json": "args_member", "call_id": "id_member"}.get(
            value, value.removesuffix("_object") + "_member")
        b.add(member, _seq(_alts(spelled), 'ws ":" ws', value))
        fields.append(member)
    b.add(f"{base}_object", f'"{{" ws {base}_field (ws "," ws {base}_field)* ws "}}"')
    b.add(f"{base}_field", " / ".join([*fields, f"{base}_other"]))
    b.add(f"{base}_other", f"!({' / '.join(keys)}) json_member")
    return f"{base}_object"


def _tagged_call(b: _Rules, g: ir.Grammar, t: ToolFormat, names: tuple[str, ...]) -> tuple[str, str]:
    """A call whose name sits between markers, then JSON, literal or per-key arguments: (its start, the rest)."""
    m = _markers(b, t, "call_start", "name_prefix", "name_suffix")
    m["call_close"], m["call_end"] = _closing(b, g, "call_close", t.call_close), _closing(b, g, "call_end", t.call_end)
    ordered = sorted(names, key=len, reverse=True)
    if t.name_in_id:
        b.add("call_name", _rx(_name_in_id_source(t.name_in_id, ordered)))
    else:
        b.add("call_name", " / ".join(_lit(n) for n in ordered))
    id_part = ""
    if t.id_position in ("before_name", "after_name", "after_args"):
        prefix = b.marker("id_prefix", t.id_prefix) if t.id_prefix.strip() else ""
        suffix_src = mk.pattern(t.id_suffix)
        if suffix_src:
            b.add("call_id", _rx(r"[^\n]*?(?=\s*" + suffix_src + ")"))
            b.marker("id_suffix", t.id_suffix)
        else:
            b.add("call_id", _rx(_ID_WORD))
        b.add("call_id_part", _seq(prefix, "call_id", "id_suffix" if suffix_src else ""))
        # an id right after the call marker (``<tool_call id="ID">``) is part of it; others may be left out
        id_part = "call_id_part" if t.id_position == "before_name" and suffix_src else "call_id_part?"
    b.add("call_header", _seq(m["name_prefix"], "ws call_name", m["name_suffix"]))
    args = _args(b, t, g.server_stops)
    return m["call_start"], _seq(id_part if t.id_position == "before_name" else "", "call_header",
                                 id_part if t.id_position == "after_name" else "", args,
                                 id_part if t.id_position == "after_args" else "", m["call_close"], m["call_end"])


def _name_in_id_source(pattern: str, names: list[str]) -> str:
    """``name_in_id`` with its ``name`` group restricted to the allowed names (unanchored)."""
    alts = "|".join(regex.escape(n) for n in names)
    i = pattern.find("(?P<name>")
    if i < 0:
        return "(?:" + alts + ")"
    depth, j = 0, i
    while j < len(pattern):
        c = pattern[j]
        if c == "\\":
            j += 2
            continue
        if c == "[":
            j = pattern.index("]", j + 2)
        elif c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                break
        j += 1
    src = pattern[:i] + "(?P<name>" + alts + ")" + pattern[j + 1:]
    return src.removeprefix("^").removesuffix("$")


def _args(b: _Rules, t: ToolFormat, stops: tuple[str, ...]) -> str:
    """The arguments of a tagged call: per-key tags, ``key: value`` lines, a literal, or a JSON object."""
    if t.args in LINE_ARGS:
        # the block up to what ends it, as the engine's reader finds it; the mapper splits it the same way
        end = args_end_source(t, stops)
        kv, sep = layout(t)
        b.add("args_lines", _rx("(?:" + key_line_source(KEY, kv, sep) + body_source(quote_chars(t)) + ")?(?="
                                + (end + "|" if end else "")
                                + r"\s*\Z)"))
        return "args_lines"
    if t.args == "tagged" and t.tagged is not None:
        ta = t.tagged
        prefix = b.marker("arg_prefix", ta.prefix) if ta.prefix.strip() else ""
        key_end = mk.pattern(ta.key_suffix)
        value_end = mk.pattern(ta.value_end) or "|".join(
            s for s in (mk.pattern(ta.prefix), mk.pattern(t.call_close), mk.pattern(t.call_end)) if s)
        # an argument prefix that also begins the call's close (``<`` and ``</invoke>``): the close wins
        close = "!call_close" if "call_close" in b.rules else ""
        b.add("arg", _seq(close, prefix, "arg_key", "key_suffix" if key_end else "", "arg_value",
                          "value_end" if mk.pattern(ta.value_end) else ""))
        b.add("arg_key", _rx(r"[^\n]+?(?=\s*" + key_end + ")") if key_end else _rx(_ID_WORD))
        if key_end:
            b.marker("key_suffix", ta.key_suffix)
        b.add("arg_value", _rx(r"(?s:.*?)(?=" + value_end + ")"))
        b.marker("value_end", ta.value_end)
        sep = b.marker("arg_separator", ta.separator) if ta.separator.strip() else ""
        b.add("args_tagged", f"(arg ({sep} arg)*)?" if sep else "arg*")
        return "args_tagged"
    if t.args == "json_attr":
        # JSON written with character references inside an attribute: no raw quote or "<" in it
        close = mk.pattern(t.call_close) or mk.pattern(t.call_end)
        b.add("args_attr", _rx(r'\{[^"<]*?\}' + (r"(?=\s*" + close + ")" if close else "")))
        return "ws args_attr"
    if t.args == "literal" and t.literal is not None:
        _literal_rules(b, t.literal)
        return "ws args_literal"
    b.add("args_json", "json_object / json_array" + (" / json_string" if t.args_as_string else ""))
    return "ws args_json"


def _literal_rules(b: _Rules, lit: LiteralArgs) -> None:
    """PEG rules for a non-JSON argument literal (``{k:<|"|>v<|"|>}``, ``(k='v')``, ``(k=bare text)``).

    The rules only find the literal's extent, as the engine's ``LiteralEnd`` does (brackets
    paired, quoted text opaque); the mapper reads it with the engine's ``literal_to_json``.
    """
    b.add("args_literal", f"{_lit(lit.open)} lit_body* {_lit(lit.close)}")
    b.add("lit_body", "lit_string / lit_group / lit_text / lit_quote")
    b.add("lit_group", '("(" lit_body* ")") / ("{" lit_body* "}") / ("[" lit_body* "]")')
    strings = []
    for q in sorted(lit.quotes, key=len, reverse=True):
        e = regex.escape(q)
        if q in ("'", '"'):
            strings.append(_rx(f"{e}(?:[^{e}\\\\]|\\\\.)*{e}"))
        else:
            strings.append(_rx(f"{e}(?s:.*?){e}"))
    b.add("lit_string", " / ".join(strings))
    b.add("lit_quote", " / ".join(_lit(q) for q in sorted(lit.quotes, key=len, reverse=True)))  # one never closed
    starts = "".join(dict.fromkeys(q[0] for q in lit.quotes))
    b.add("lit_text", _rx(f"(?:(?!{'|'.join(regex.escape(q) for q in lit.quotes)})[^(){{}}\\[\\]])+"
                          if starts else r"[^(){}\[\]]+"))


__all__ = ["build_peg"]
