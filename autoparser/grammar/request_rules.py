"""What a request's GBNF is built from (:mod:`autoparser.grammar.request`): the request's goal as
the grammar uses it (:class:`_Goal`), and the rules every part takes: markers matched piece by
piece or spelled one character class at a time, free text through a marker, the IR's envelope
nodes, the JSON answer and a tool's arguments as JSON values."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .. import ir
from .. import markers as mk
from ..analysis.model import ToolFormat
from ..plan import Opener
from ..values.codecs import Codec
from ..values.refs import inline_refs
from .escaped import codec_copy, frame
from .gbnf import GbnfBuilder, char_class, literal, sanitize_name
from .layout import hole_ws
from .pieces import DIGITS_MAX, WILD, WS_MAX, piece_expr
from .pyvalue import python_value_rule
from .schema import _Converter, json_rule, strict_objects

WS_SPELLED = f"[ \\t\\n\\r]{{0,{WS_MAX}}}"   # the same inline: not a lexeme of its own for llguidance


# ---------------------------------------------------------------- what the request asks for
@dataclass(frozen=True)
class _Goal:
    """The IR's call section and answer as the grammar uses them: schemas default to any object."""

    names: tuple[str, ...] = ()               # functions a call may use (empty: no calls)
    schemas: dict[str, Any] = field(default_factory=dict)
    forced: bool = False                      # at least one call
    parallel: bool = True
    answer: bool = False                      # response_format: the answer is JSON
    answer_schema: Any = None
    opened: bool = False                      # the prompt wrote the first call's start

    @property
    def lazy(self) -> bool:
        """Whether a server applies the grammar from its trigger on; not when the prompt already
        wrote a call's start (no trigger would show up in the output: constrain from its start)."""
        return bool(self.names) and not self.forced and not self.answer and not self.opened

    @staticmethod
    def of(g: ir.Grammar) -> _Goal:
        calls, ans = g.tool_calls, g.get("answer")
        tp = calls.tools if calls is not None else None
        names = tp.allowed if tp is not None else ()
        # local $refs resolved; a $ref that is not local raises SchemaError here, not in the sampler
        schemas = {n: inline_refs(dict(tp.schema(n))) or {"type": "object"} for n in names} if tp is not None else {}
        answer = isinstance(ans, ir.Answer)
        schema = dict(ans.schema) if isinstance(ans, ir.Answer) and ans.schema else {"type": "object"}
        return _Goal(names=names, schemas=schemas, forced=tp is not None and tp.forced and bool(names),
                     parallel=tp.parallel if tp is not None else True, answer=answer,
                     answer_schema=schema if answer else None,
                     opened=isinstance(g.get("tool_calls_opened"), ir.Calls))


# ---------------------------------------------------------------- the grammar
def _join(*parts: str) -> str:
    return " ".join(p for p in parts if p)


class _RequestRules:
    """Builds one request's rules on a :class:`GbnfBuilder`: markers, envelope nodes, values."""

    def __init__(self, g: ir.Grammar, goal: _Goal) -> None:
        calls = g.tool_calls
        assert calls is not None or goal.answer
        self.ir = g
        self._answer_value: str | None = None
        self.plan = goal
        # the call section as the IR has it: its format and where the calls open
        self.t: ToolFormat = calls.tools.format if calls is not None else ToolFormat()
        self.op = calls.tools.opener if calls is not None else Opener()
        self.b = GbnfBuilder()
        self.ws = self.b.rule("ws", f"[ \\t\\n\\r]{{0,{WS_MAX}}}")
        self.stops = [s.strip() for s in g.server_stops if s and s.strip()]
        # the prompt wrote the first call's start: output may begin inside that call
        self.opened = isinstance(g.get("tool_calls_opened"), ir.Calls)

    # --- markers --------------------------------------------------------------------

    def marker(self, role: str, m: str) -> str:
        """Rule for marker `m`: its pieces with bounded whitespace between ("" when blank)."""
        pieces = mk.tokens(m)
        if not pieces:
            return ""
        return self.b.rule(role, f" {self.ws} ".join(piece_expr(p) for p in pieces))

    def spelled(self, m: str) -> str:
        """Marker `m` inline, one character class per character (pieces joined by ``ws``).

        For a marker that starts an optional branch next to free text: llguidance lexes a
        literal greedily and cannot back off to the free text after a near miss
        (``<|tool_response>`` after a call looks like ``<|tool_call>`` for 7 bytes);
        single characters keep both branches alive. The language is the same.
        """
        def spell(piece: str) -> str:   # a digit run is any index, as in piece_expr
            return " ".join(f"[0-9]{{1,{DIGITS_MAX}}}" if run.isdigit() else
                            " ".join(WILD.get(c) or char_class([c]) for c in run)
                            for run in re.split(r"(\d+)", piece) if run)
        return f" {self.ws} ".join(spell(p) for p in mk.tokens(m))

    def lead(self, role: str, m: str) -> str:
        """``ws MARKER`` (whitespace before a marker is the marker's), or "" when blank."""
        rule = self.marker(role, m)
        return _join(self.ws, rule) if rule else ""

    def through(self, role: str, m: str) -> str:
        """Free text up to and including marker `m` (its first piece ends the text; a piece with a
        digit run or a wildcard ends it at its literal head: ``<|calls:`` of ``<|calls:2|>``)."""
        pieces = mk.tokens(m)
        if not pieces:   # a closer of whitespace alone (a blank line ending a label's reasoning)
            return self.b.string_until(m)
        first = pieces[0]
        varying = re.search(r"\d|[\x03\x04\x05]", first)
        glued = ""
        if varying is not None and varying.start() > 0:
            first, glued = first[:varying.start()], first[varying.start():]
            glued = self.b.rule(f"{role}-tail", piece_expr(glued))
        rest = self.marker(f"{role}-rest", " ".join(pieces[1:])) if len(pieces) > 1 else ""
        return _join(self.b.string_until(first), glued, _join(self.ws, rest) if rest else "")

    def split_stop(self, m: str) -> tuple[str, str]:
        """(a closing marker without the end-of-turn markers it ends with, those markers): the
        server stops at an end-of-turn marker, so the grammar cannot require it (:meth:`ir.Grammar.closing`)."""
        return self.ir.closing(m)

    def resolve(self, node: ir.Node) -> ir.Node:
        """A reference's rule, any other node itself."""
        return self.ir[node.name] if isinstance(node, ir.Ref) else node

    def node(self, node: ir.Node, spell_first: bool = True) -> str:
        """GBNF for an IR node of the message envelope: markers, free text through the marker
        that ends it, alternatives (tolerated ones left out: a sampler does not generate them)."""
        node = self.resolve(node)
        if isinstance(node, ir.Choice):
            alts = [self.node(n, spell_first) for n in node.items if not isinstance(n, ir.Tolerated)]
            return alts[0] if len(alts) == 1 else "( " + " | ".join(alts) + " )"
        if isinstance(node, ir.Seq):
            items = [self.resolve(n) for n in node.items]
            out: list[str] = []
            for i, item in enumerate(items):
                if isinstance(item, ir.Text) and i + 1 < len(items) and isinstance(items[i + 1], ir.Marker):
                    continue     # printed with the marker that ends it
                if isinstance(item, ir.Marker) and i > 0 and isinstance(items[i - 1], ir.Text):
                    out.append(self.through(item.role.replace("_", "-"), item.text))
                elif isinstance(item, ir.Marker) and i == 0 and spell_first:
                    # opens an optional branch next to free text: spelled, so llguidance keeps both alive,
                    # and so is the whitespace before it (the ``ws`` rule is one lexeme, which would outrun
                    # free text that begins with spaces, such as a run of spaces before the calls)
                    out.append(_join(WS_SPELLED, self.spelled(item.text)))
                elif isinstance(item, ir.Answer):
                    out.append(_join(self.ws, self.answer_value()))
                else:
                    out.append(self.node(item, spell_first))
            return _join(*out)
        if isinstance(node, ir.Answer):
            return _join(self.ws, self.answer_value())
        if isinstance(node, ir.Marker):
            return self.lead(node.role.replace("_", "-"), node.text)
        raise TypeError(f"no GBNF for {node!r} in the envelope")

    # --- values ------------------------------------------------------------------------

    def answer_value(self) -> str:
        """The answer's JSON value rule (one, however often the answer is spelled)."""
        if self._answer_value is None:
            self._answer_value = self.json_value(self.plan.answer_schema, "answer-json")
        return self._answer_value

    def json_value(self, schema: Any, name: str) -> str:
        """Bare JSON value of `schema` (strict objects)."""
        schema = strict_objects(schema)
        conv = _Converter(self.b, schema, True)
        final = self.b.reserve(name)
        return self.b.define(final, " | ".join(conv.alts(schema, final)))

    def args_value(self, tool: str) -> str:
        """A tool's arguments as JSON or a Python repr, per its schema."""
        schema = self.plan.schemas[tool]
        name = f"{sanitize_name(tool)}-args"
        if self.t.python_literals or self.t.args == "python":
            return python_value_rule(self.b, strict_objects(schema), name)
        return self.json_value(schema, name)

    def ws_to_body(self) -> str:
        """White space between a call's opener and its body: spaces and tabs only before a layout
        that begins with its name or id (the reader skips those before a hole, :func:`layout.hole_ws`)."""
        layout = self.t.layout
        if self.t.style == "layout" and layout is not None and layout.pieces and layout.pieces[0].kind in ("name", "id"):
            return hole_ws(self.b)
        return self.ws

    def args_string(self, tool: str) -> str:
        """A JSON string holding the arguments: the schema's JSON written with the string's escapes
        (:mod:`.escaped`), as the reader decodes the string and then reads its JSON."""
        if self.t.python_literals or self.t.args == "python":
            return json_rule(self.b, "string")
        name = f"{sanitize_name(tool)}-args"
        src = GbnfBuilder()
        schema = strict_objects(self.plan.schemas[tool])
        root = src.define(src.reserve(name), " | ".join(_Converter(src, schema, True).alts(schema, name)))
        codec = Codec.from_spec("json")
        copied = codec_copy(self.b, src, root, codec, f"{name}-string")
        if copied is None:
            return json_rule(self.b, "string")
        opener, closer = frame(codec)
        return _join(literal(opener), copied, literal(closer))


__all__ = ["WS_SPELLED", "_Goal", "_RequestRules", "_join"]
