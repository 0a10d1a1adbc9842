"""A strict per-request parser: a parsimonious PEG built from the analysis, plus a tree mapper.

``build_peg(plan)`` writes the grammar for one request (its tools, ``tool_choice``,
``parallel_tool_calls``, reasoning state and ``response_format`` are known then) as
parsimonious source text, and ``PegParser.parse(text)`` maps the parse tree to the same
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
the engine does (raw JSON text passed through, tagged values typed by the tool's schema with
``calls.typed_value``, literals through ``literal_to_json``), so for valid output
``req.parse_strict(text).to_dict() == req.parse(text).to_dict()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import regex
from parsimonious.exceptions import IncompleteParseError
from parsimonious.exceptions import ParseError as GrammarError
from parsimonious.grammar import Grammar
from parsimonious.nodes import Node, NodeVisitor

from .. import ir
from .. import markers as mk
from ..analysis.model import LINE_ARGS
from ..errors import ParseError
from ..markers import definition as dm
from ..runtime.lineargs import args_end_source, body_source, layout, quote_chars, split_entries
from ..runtime.message import Message, ToolCall
from ..values.codecs import Codec
from ..values.coerce import coerce, raw_string
from ..values.decode import args_text, item_value, typed_value
from ..values.entities import unescape
from ..values.literal import literal_to_json
from ..values.pyliteral import python_to_json
from ..values.yamlargs import KEY, key_line_source, value_json
from .peg_layout import LayoutRules, LayoutValue, Wrapped, add_json_rules, layout_call
from .peg_rules import _JSON_RULES, _PYTHON_JSON, _alts, _closing, _lit, _rule_name, _Rules, _rx, _seq

if TYPE_CHECKING:
    from ..analysis.model import JsonLayout, LiteralArgs, ToolFormat
    from ..plan import RequestPlan

WS = " \t\r\n"
_ID_WORD = r"[^\s<>\[\]{}\"'|,:=()`]+"     # an id with no closing marker (calls._NAME)


# ---------------------------------------------------------------- what the request decides
@dataclass(frozen=True)
class _Context:
    """The per-request facts the mapper needs besides the tree."""

    plan: RequestPlan
    template: str
    tools: ToolFormat | None
    prefill_reasoning: str = ""
    prefill_open: bool = False
    prefill_content: str = ""
    response_schema: dict[str, Any] | None = None
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    dropped: str = ""    # regex: markers the engine drops wherever they appear in free text
    layout: LayoutRules | None = None    # a layout format's value rules (grammar/peg_layout.py)


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


# ---------------------------------------------------------------- the parser and its mapper
@dataclass(frozen=True, eq=False)
class PegParser:
    """A request's strict parser: ``text`` is the grammar source, ``parse`` maps to a ``Message``."""

    text: str
    grammar: Grammar = field(repr=False)
    context: _Context = field(repr=False)

    def parse(self, text: str) -> Message:
        """Parse a complete output; raise ``ParseError`` at the farthest point the grammar reached."""
        try:
            tree = self.grammar.parse(text)
        except IncompleteParseError as e:
            raise ParseError("text after the end of the message", text=text, pos=e.pos,
                             template=self.context.template) from None
        except GrammarError as e:
            rule = e.expr.name if e.expr is not None and e.expr.name else "message"
            raise ParseError(f"expected {rule}", text=text, pos=max(e.pos, 0),
                             template=self.context.template) from None
        msg = _Mapper(self.context).visit(tree)
        assert isinstance(msg, Message)
        return msg

    def __str__(self) -> str:
        return self.text


@dataclass
class _Segment:
    key: str            # "content" or "reasoning_content"
    text: str
    start: int
    stray: bool = False  # a reasoning block's text kept as content (reasoning is off)


@dataclass
class _Name:
    name: str
    call_id: str = ""


@dataclass
class _Id:
    value: str


@dataclass
class _Header:
    text: str


@dataclass
class _Args:
    text: str
    literal: bool = False     # converted from a literal: typed by the schema once the name is known


@dataclass
class _LKey:
    key: str


@dataclass
class _LValue:
    key: str | None      # None: the key before it (the next of a header row's keys)
    value: Any
    retype: Callable[[Any], Any] | None = None   # key None: the value decoded again, typed by its key's schema


def _item_arguments(items: list[Any], props: Any) -> str:
    """A layout's items as the reader writes them: ``{"key": value, ...}``; a value without a key of
    its own takes the key before it, or the next of the keys written before the values (a header
    row), and is typed by that key's schema."""
    out: dict[str, Any] = {}
    keys: list[str] = []
    key = ""
    for p in items:
        if isinstance(p, _LKey):
            keys.append(p.key)
        elif p.key is not None:
            out[p.key] = p.value
        else:
            key = keys.pop(0) if keys else key
            prop = props.get(key) if isinstance(props, dict) else None
            out[key] = p.retype(prop) if p.retype is not None and prop is not None else p.value
    return json.dumps(out, ensure_ascii=False)


class _Verbatim(str):
    """A tagged value read from a CDATA section: its newlines belong to it, not to the markers."""


_CDATA = "<![CDATA["


@dataclass
class _Arg:
    key: str
    raw: str


@dataclass
class _Lines:
    text: str
    node: Node


@dataclass
class _Call:
    name: str
    arguments: str
    call_id: str


class _Sink:
    """The engine's text emission: segments trimmed at markers, inner whitespace kept."""

    def __init__(self) -> None:
        self.msg = Message()
        self.pending = ""
        self.segment_start = True
        self.inline = ""     # the prompt's open block (reasoning_format "none"), put back before the first text

    def text(self, key: str, text: str, raw: bool = False) -> None:
        if not text:
            return
        if self.inline and key == "content":
            if not text.strip(WS):
                self.inline += text
                return
            prefix, self.inline = self.inline, ""
            self.text(key, prefix, raw=True)
        if raw:
            out, self.pending, self.segment_start = self.pending + text, "", False
        else:
            if self.segment_start:
                text = text.lstrip(WS)
                if not text:
                    return
                self.segment_start = False
            body = text.rstrip(WS)
            if not body:
                self.pending += text
                return
            out, self.pending = self.pending + body, text[len(body):]
        setattr(self.msg, key, (getattr(self.msg, key) or "") + out)

    def boundary(self) -> None:
        self.pending, self.segment_start = "", True


def _flatten(values: Any) -> list[Any]:
    out: list[Any] = []
    for v in values:
        if isinstance(v, list):
            out.extend(_flatten(v))
        elif v is not None:
            out.append(v)
    return out


class _Mapper(NodeVisitor):
    """Parse tree -> ``Message``, mirroring how the engine turns text into a message."""

    unwrapped_exceptions = (ParseError,)
    # rules whose value is their text: their subtrees (JSON, literals) are not walked
    text_rules = frozenset({"answer", "args_json", "args_literal", "args_lines", "args_attr", "call_id", "call_name", "arg_key",
                            "arg_value", "content_text", "reasoning_text"})

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx

    def visit(self, node: Node) -> Any:
        name = node.expr_name
        lay = self.ctx.layout
        if lay is not None and name:
            if name in lay.values:
                return self.visit_layout_value(node, lay.values[name])
            if name in lay.keys:
                return _LKey(node.text.strip())
            if name in lay.wrapped:
                return self.visit_layout_wrapped(node, lay.wrapped[name])
            if name == "call_name_again":
                return None
            if name.startswith("call_name_"):
                return self.visit_call_name(node, [])
            if name.startswith("call_header_"):
                return self.visit_call_header(node, [self.visit(n) for n in node.children])
        if name in self.text_rules:
            return getattr(self, "visit_" + name)(node, [])
        if name.endswith("_other"):
            return None      # a JSON call's other members (``"type": "function"``) carry nothing
        return super().visit(node)

    def error(self, node: Node, message: str) -> ParseError:
        return ParseError(message, text=node.full_text, pos=node.start, template=self.ctx.template)

    # -------------------------------------------------------------- structure
    def generic_visit(self, node: Node, visited_children: list[Any]) -> list[Any]:
        """Anonymous sequences, options and repetitions: their children's values, in order."""
        return _flatten(visited_children)

    def _drop(self, node: Node, visited_children: list[Any]) -> None:
        return None

    visit_reasoning = visit_content = visit_tool_calls = visit_call_id_part = visit_args_tagged = generic_visit
    visit_tool_calls_opened = visit_opened_content = generic_visit
    visit_ws = visit_end = visit_end_of_text = visit_stop = visit_assistant_header = _drop
    visit_reasoning_start = visit_reasoning_end = visit_content_start = visit_content_end = _drop
    visit_preamble_start = visit_preamble_end = _drop
    visit_section_start = visit_section_end = visit_call_start = visit_call_end = visit_call_separator = _drop
    visit_name_prefix = visit_name_suffix = visit_call_close = visit_id_prefix = visit_id_suffix = _drop
    visit_arg_prefix = visit_key_suffix = visit_value_end = visit_arg_separator = visit_turn_markers = _drop

    def visit_message(self, node: Node, visited_children: list[Any]) -> Message:
        ctx, sink = self.ctx, _Sink()
        r = ctx.plan.reasoning
        if r.open_at_start and not r.extract:
            sink.inline = r.inline_prefix
        if ctx.prefill_reasoning:
            sink.text("reasoning_content", ctx.prefill_reasoning, raw=True)
            sink.segment_start = not ctx.prefill_open
        if ctx.prefill_content:
            sink.text("content", ctx.prefill_content, raw=True)
        stray = False
        for i, event in enumerate(_flatten(visited_children)):
            # the dropped close of a stray block (reasoning off) keeps the text on either side apart
            if (i > 0 or not isinstance(event, _Segment) or event.start > 0) and \
                    not (stray and isinstance(event, _Segment) and event.key == "content"):
                sink.boundary()
            stray = isinstance(event, _Segment) and event.stray
            if isinstance(event, _Segment):
                sink.text(event.key, event.text)
            elif isinstance(event, _Call):
                sink.inline = ""
                index = len(sink.msg.tool_calls)
                sink.msg.tool_calls.append(ToolCall(name=event.name, arguments=event.arguments,
                                                    id=event.call_id or f"{ctx.plan.id_prefix}{index}"))
        if sink.inline:
            prefix, sink.inline = sink.inline, ""
            sink.text("content", prefix, raw=True)
        return sink.msg

    # -------------------------------------------------------------- text
    def visit_reasoning_text(self, node: Node, visited_children: list[Any]) -> _Segment:
        if self.ctx.plan.reasoning.extract:
            return _Segment("reasoning_content", node.text, node.start)
        return _Segment("content", node.text, node.start, stray=True)   # a stray block, reasoning off

    def visit_content_text(self, node: Node, visited_children: list[Any]) -> _Segment:
        # markers recognised anywhere in free text beyond the preamble's own pair (analysis/special.py
        # facts such as <|python_tag|>) are dropped, as the engine drops them (the IR's "dropped" stops)
        if self.ctx.dropped:
            text = mk.compile_source(self.ctx.dropped).sub("", node.text)
            return _Segment("content", text, node.start)
        return _Segment("content", node.text, node.start)

    def visit_answer(self, node: Node, visited_children: list[Any]) -> _Segment:
        try:
            value = json.loads(node.text)
        except ValueError as e:
            raise self.error(node, f"the answer is not JSON ({e})") from None
        if self.ctx.response_schema is not None and not _conforms(value, self.ctx.response_schema):
            raise self.error(node, "the answer does not match the response_format schema")
        return _Segment("content", node.text, node.start)

    # -------------------------------------------------------------- calls
    def visit_call_name(self, node: Node, visited_children: list[Any]) -> _Name:
        t = self.ctx.tools
        text = node.text.strip()
        if t is not None and t.style == "json":
            return _Name(str(json.loads(python_to_json(text))))
        if t is not None and t.name_in_id:
            m = regex.match(t.name_in_id, text)
            if m:
                return _Name(m.group("name"), call_id=text)
        return _Name(text)

    def visit_call_id(self, node: Node, visited_children: list[Any]) -> _Id:
        raw = node.text.strip()
        t = self.ctx.tools
        if t is not None and t.style == "json":
            try:
                return _Id(str(json.loads(python_to_json(raw))))
            except ValueError:
                return _Id(raw.strip("\"'"))
        return _Id(raw)

    def visit_args_json(self, node: Node, visited_children: list[Any]) -> _Args:
        t = self.ctx.tools
        raw = node.text
        python = (t is not None and (t.python_literals or t.args == "python")) or \
            (self.ctx.layout is not None and self.ctx.layout.python)
        if python or raw[:1] in "\"'":
            return _Args(args_text(raw, python))
        return _Args(raw)

    def visit_args_literal(self, node: Node, visited_children: list[Any]) -> _Args:
        lit = self.ctx.tools.literal if self.ctx.tools is not None else None
        assert lit is not None
        try:
            text = literal_to_json(node.text, lit.quotes, lit.kv_sep)
        except (ValueError, IndexError) as e:
            raise self.error(node, f"arguments literal did not parse ({e})") from None
        return _Args(text, literal=True)

    def visit_args_attr(self, node: Node, visited_children: list[Any]) -> _Args:
        text = unescape(node.text)
        try:
            json.loads(text)
        except ValueError as e:
            raise self.error(node, f"the arguments are not JSON ({e})") from None
        return _Args(text)

    def visit_args_lines(self, node: Node, visited_children: list[Any]) -> _Lines:
        return _Lines(node.text, node)

    def visit_arg_key(self, node: Node, visited_children: list[Any]) -> str:
        return node.text

    def visit_arg_value(self, node: Node, visited_children: list[Any]) -> str:
        text = node.text
        if text.startswith(_CDATA):     # <![CDATA[...]]>: the value taken literally (as the engine)
            end = text.find("]]>", len(_CDATA))
            if end >= 0:
                return _Verbatim(text[len(_CDATA):end] + text[end + 3:])
        return text

    def visit_arg(self, node: Node, visited_children: list[Any]) -> _Arg:
        key, raw = _flatten(visited_children)
        key = key.strip()
        if not key or len(key) > 256:
            raise self.error(node, "empty or overlong argument key")
        return _Arg(key, raw)

    def visit_call(self, node: Node, visited_children: list[Any]) -> _Call:
        parts = _flatten(visited_children)
        names = [p for p in parts if isinstance(p, _Name)]
        if len(names) != 1:
            raise self.error(node, "a call needs exactly one name")
        name = names[0].name
        call_id = names[0].call_id
        t = self.ctx.tools
        if t is not None and t.id_from_header and not call_id:
            header = next((p.text for p in parts if isinstance(p, _Header)), "").lstrip(WS)
            cut = dm.next_open(header, 1)
            call_id = header[:cut].strip()
        ids = [p.value for p in parts if isinstance(p, _Id)]
        if ids and not call_id:
            call_id = ids[-1]
        args = [p for p in parts if isinstance(p, _Args)]
        pairs = [p for p in parts if isinstance(p, _Arg)]
        lines = [p for p in parts if isinstance(p, _Lines)]
        items = [p for p in parts if isinstance(p, (_LKey, _LValue))]
        if items:
            arguments = _item_arguments(items, (self.ctx.schemas.get(name) or {}).get("properties"))
        elif lines:
            arguments = self._line_arguments(name, lines[-1])
        elif pairs:
            arguments = self._tagged_arguments(name, pairs)
        elif args and args[-1].literal and self.ctx.schemas.get(name):
            arguments = json.dumps(coerce(json.loads(args[-1].text), self.ctx.schemas[name]), ensure_ascii=False)
        elif args:
            arguments = args[-1].text
        else:
            arguments = "{}"
        return _Call(name, arguments, call_id)

    visit_call_opened = visit_call     # a call whose start the prompt wrote

    def visit_layout_value(self, node: Node, lv: LayoutValue) -> _LValue:
        """An item value of a layout, decoded as the reader decodes it (:func:`values.decode.item_value`)."""
        text = node.text.lstrip(" \t") if lv.how == "raw" else node.text.strip()
        if lv.key is None:
            return _LValue(None, item_value(text, lv.how, lv.values, lv.prop),
                           lambda prop: item_value(text, lv.how, lv.values, prop))
        return _LValue(lv.key, item_value(text, lv.how, lv.values, lv.prop))

    def visit_layout_wrapped(self, node: Node, w: Wrapped) -> Any:
        """Text written with a string codec: JSON arguments, or items read from the decoded text."""
        text = Codec.from_spec(w.codec).decode(node.text.strip())
        if w.kind != "items":
            return _Args(args_text(text, w.kind == "python") if text.strip() else "{}")
        assert w.grammar is not None
        try:
            tree = w.grammar.parse(text)
        except (GrammarError, IncompleteParseError) as e:
            raise self.error(node, f"the arguments' items did not parse ({type(e).__name__})") from None
        return _flatten([self.visit(tree)]) or [_Args("{}")]

    def visit_call_header(self, node: Node, visited_children: list[Any]) -> list[Any]:
        return [_Header(node.text), *_flatten(visited_children)]

    def _line_arguments(self, name: str, lines: _Lines) -> str:
        """``key: value`` lines as the engine's reader gives them (:mod:`autoparser.runtime.lineargs`)."""
        t = self.ctx.tools
        assert t is not None
        schema = self.ctx.schemas.get(name) or {}
        entries = split_entries(lines.text, t, schema)
        if entries is None:
            raise self.error(lines.node, "the arguments are not key: value lines")
        props = schema.get("properties") or {}
        quoted = t.tagged is not None and t.tagged.strings_json
        kv = layout(t)[0]
        out = [f"{json.dumps(key, ensure_ascii=False)}: {value_json(text, props.get(key) or {}, quoted, kv)}"
               for key, text in entries]
        return "{" + ", ".join(out) + "}"

    def _tagged_arguments(self, name: str, pairs: list[_Arg]) -> str:
        """``{"k": v, ...}`` as the engine writes it: values typed by the tool's schema."""
        ta = self.ctx.tools.tagged if self.ctx.tools is not None else None
        assert ta is not None
        props = (self.ctx.schemas.get(name) or {}).get("properties") or {}
        out = []
        for pair in pairs:
            raw = pair.raw
            if ta.key_suffix.endswith("\n") and raw.startswith("\n") and not isinstance(raw, _Verbatim):
                raw = raw[1:]
            if ta.value_end.startswith("\n") and raw.endswith("\n") and not isinstance(raw, _Verbatim):
                raw = raw[:-1]
            found = props.get(pair.key)
            prop: dict[str, Any] = found if isinstance(found, dict) else {}
            value = json.dumps(raw, ensure_ascii=False) if raw_string(prop, ta.strings_json) \
                else typed_value(raw, prop)
            out.append(f"{json.dumps(pair.key, ensure_ascii=False)}: {value}")
        return "{" + ", ".join(out) + "}"


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict), "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str), "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


def _conforms(value: Any, schema: Any) -> bool:
    """A small JSON Schema check: type, enum, const, properties, required, items, any/one/allOf."""
    if not isinstance(schema, dict):
        return True
    if "const" in schema and value != schema["const"]:
        return False
    if "enum" in schema and value not in schema["enum"]:
        return False
    options = schema.get("anyOf", schema.get("oneOf"))
    if isinstance(options, list) and not any(_conforms(value, s) for s in options):
        return False
    if not all(_conforms(value, s) for s in schema.get("allOf", [])):
        return False
    types = schema.get("type")
    wanted = [types] if isinstance(types, str) else list(types or [])
    if wanted and not any(_TYPES.get(t, lambda v: True)(value) for t in wanted):
        return False
    if isinstance(value, dict):
        props = schema.get("properties") or {}
        if any(k not in value for k in schema.get("required", [])):
            return False
        extra = schema.get("additionalProperties", True)
        for k, v in value.items():
            if k in props:
                if not _conforms(v, props[k]):
                    return False
            elif extra is False or (isinstance(extra, dict) and not _conforms(v, extra)):
                return False
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return all(_conforms(v, schema["items"]) for v in value)
    return True


__all__ = ["PegParser", "build_peg"]
