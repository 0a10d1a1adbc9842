"""The strict parser's run: parsimonious parses a complete output with a request's PEG
(:func:`autoparser.grammar.peg.build_peg`), and the mapper turns the tree into the same
``Message`` the streaming engine returns for valid output.

The mapper reads argument values as the engine does (raw JSON text passed through, tagged values
typed by the tool's schema with ``values.decode.typed_value``, literals through ``literal_to_json``,
``key: value`` lines through the engine's line reader), and checks a ``response_format`` answer
against its schema (:func:`_conforms`, a small JSON Schema check).
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

from .. import markers as mk
from ..errors import ParseError
from ..markers import definition as dm
from ..runtime.lineargs import layout, split_entries
from ..runtime.message import Message, ToolCall
from ..values.codecs import Codec
from ..values.coerce import coerce, raw_string
from ..values.decode import args_text, item_value, typed_value
from ..values.entities import unescape
from ..values.keypaths import PathStack
from ..values.literal import literal_to_json
from ..values.pyliteral import python_to_json
from ..values.spelling import Values
from ..values.yamlargs import value_json
from .peg_layout import LayoutRules, LayoutValue, Wrapped

if TYPE_CHECKING:
    from ..analysis.model import ToolFormat
    from ..plan import RequestPlan

WS = " \t\r\n"


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
class _LPathKey:
    key: str


@dataclass
class _LValue:
    key: str | None      # None: the key before it (the next of a header row's keys)
    value: Any
    retype: Callable[[Any], Any] | None = None   # key None: the value decoded again, typed by its key's schema
    values: Values | None = None                 # the spelling (items with path keys: their path)


def _item_arguments(items: list[Any], props: Any) -> str:
    """A layout's items as the reader writes them: ``{"key": value, ...}``; a value without a key of
    its own takes the key before it, or the next of the keys written before the values (a header
    row), and is typed by that key's schema."""
    if any(isinstance(p, _LPathKey) for p in items):
        return path_arguments(items, props)
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


def path_arguments(items: list[Any], props: Any) -> str:
    """Items some of whose keys are paths, nested as the reader nests them (the same
    :class:`~autoparser.values.keypaths.PathStack`), each value typed by its path's schema."""
    first = next((p.values for p in items if isinstance(p, _LValue) and p.values is not None), None)
    path = first.path if first is not None else None
    if path is None:
        return "{}"
    stack = PathStack(path, props if isinstance(props, dict) else {})
    out: list[str] = []
    pending = ""
    for p in items:
        if isinstance(p, _LPathKey):
            pending = p.key
        elif isinstance(p, _LValue):
            text, prop = stack.key(p.key if p.key is not None else pending)
            value = p.retype(prop) if p.key is None and p.retype is not None and prop is not None else p.value
            out += [text, json.dumps(value, ensure_ascii=False)]
    out.append(stack.end())
    return json.dumps(json.loads("".join(out)), ensure_ascii=False)


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
            if name in lay.path_keys:
                return _LPathKey(node.text.strip())
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
        items = [p for p in parts if isinstance(p, (_LKey, _LPathKey, _LValue))]
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
                           lambda prop: item_value(text, lv.how, lv.values, prop), lv.values)
        return _LValue(lv.key, item_value(text, lv.how, lv.values, lv.prop), values=lv.values)

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
                else typed_value(raw, prop, ta.strings_json)
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


__all__ = ["PegParser"]
