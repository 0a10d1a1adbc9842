"""GBNF for one request: what a llama.cpp-style server feeds its grammar sampler.

``build_gbnf(plan)`` writes the grammar and ``triggers(plan)`` the lazy-grammar triggers:

* ``tool_choice`` auto (no ``response_format``): a *lazy* grammar whose root is the tool
  calls from their opening marker on; the server constrains output from the first
  trigger (the opener's first marker piece as a word, or a regex) and the text before it
  is free. After the calls, free text that does not open another call may follow
  (some templates write content there).
* ``tool_choice`` required or a named function: the whole turn - the reasoning block the
  prompt leaves open or allows, then at least one call (only the named function) and nothing
  else. ``parallel_tool_calls=False`` allows exactly one call.
* ``response_format`` json_object / json_schema: the answer is JSON following the schema
  (bare, fenced in ```` ```json ````, or inside the content markers), or tool calls.

Markers are matched as the parser matches them (``autoparser.markers``): whitespace-split
pieces with bounded whitespace (``ws``) between and before them, digit runs flexible,
``\\x03`` a bounded wildcard, ``\\x04`` a tool name. Free text up to a marker uses the builder's ``string_until``
automaton. Arguments follow each tool's JSON schema: JSON in JSON formats, the tagged
structure (raw string values up to the closing marker) in tagged ones, Python reprs and
argument literals through :mod:`autoparser.grammar.pyvalue`, ``key: value`` lines through
:mod:`autoparser.grammar.lines`. Objects that declare
``properties`` and say nothing about ``additionalProperties`` get no other keys (as
llama.cpp's json-schema-to-grammar); an object with no ``properties`` takes any keys.
``args_as_string`` arguments are a JSON string holding the schema's JSON, escaped (:mod:`.escaped`).
JSON call objects take their known members in any order (those the name prefix spells first),
plus up to two others unless a call is forced; a forced call object holds the members the template
writes in every call (``"jsonrpc": "2.0"``: the analysis keeps their keys, their values are short
scalars). A forced call is the whole answer: before the calls an empty content wrapper at most,
after them only what the IR has there besides free text (a reasoning block written after the
calls, a section or envelope end, an end of turn the server did not cut).

llguidance (our validator) lexes greedily and backs off at most one byte, and it turns
every rule made only of terminals into one lexeme. So: alternatives that share a prefix
(per-tool calls, JSON call objects, optional tagged arguments) stay inline rather than in
named rules, and a marker that competes with free text (a call opener after the calls,
an optional reasoning start before content) is spelled one character class at a time.
The language is unchanged; llama.cpp's sampler is unaffected either way.
"""

from __future__ import annotations

import itertools
import re
import sys
from dataclasses import dataclass, field
from typing import Any

from .. import ir
from .. import markers as mk
from ..analysis.model import LINE_ARGS, ToolFormat
from ..plan import Opener, RequestPlan
from ..values.codecs import Codec
from ..values.refs import inline_refs
from .attrjson import escaped_copy
from .escaped import codec_copy, frame
from .gbnf import ANY_CHAR, GbnfBuilder, char_class, literal, sanitize_name
from .layout import hole_ws, layout_call, name_index
from .lines import line_args_rule, ordered
from .pieces import DIGITS_MAX, WILD, WS_MAX, piece_expr
from .pyvalue import LiteralConverter, literal_args_rule, python_value_rule
from .schema import (
    _Converter,
    _group,
    json_rule,
    json_string_expr,
    schema_value_rule,
    space_rule,
    strict_objects,
)

if sys.version_info >= (3, 11):
    import re._constants as sre_c
    import re._parser as sre_parse
else:  # Python 3.10
    import sre_constants as sre_c
    import sre_parse

WS_SPELLED = f"[ \\t\\n\\r]{{0,{WS_MAX}}}"   # the same inline: not a lexeme of its own for llguidance
ID_MAX = 64            # a call id written between markers
MAX_EXTRA_MEMBERS = 2  # other members of a JSON call object ("type": "function")
CONSTANT = "constant:"  # the role of a constant member of a JSON call object ("jsonrpc": "2.0")
CONSTANT_MAX = 64      # characters of a constant member's string value
ID_CHARS = "[^ \\t\\r\\n<>\\x5B\\x5D{}\"'|,=()`]"        # a call id between markers
WORD_CHARS = "[^ \\t\\r\\n<>\\x5B\\x5D{}\"'|,:=()`]"     # an id with no closing marker (tagged_frame._NAME)


# ---------------------------------------------------------------- public API
def build_gbnf(plan: RequestPlan) -> str | None:
    """The request's grammar, or None when neither tools nor a response_format apply."""
    g = ir.message_grammar(plan)
    goal = _Goal.of(g)
    if not goal.names and not goal.answer:
        return None
    return _Grammar(g, goal).build()


def triggers(plan: RequestPlan) -> list[dict[str, str]]:
    """Where a lazy grammar starts: ``[{"type": "word"|"pattern", "value": ...}]``; [] when not lazy
    (the IR's :attr:`ir.Calls.trigger`)."""
    g = ir.message_grammar(plan)
    calls = g.tool_calls
    if calls is None or not _Goal.of(g).lazy:
        return []
    return [{"type": calls.trigger.type, "value": calls.trigger.value}]


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


class _Grammar:
    """Builds one request's rules on a :class:`GbnfBuilder`."""

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

    # --- assembly -------------------------------------------------------------------

    def build(self) -> str:
        p, b = self.plan, self.b
        if p.lazy:
            body = _join(self.calls(first=None), self.tail())
        else:
            prelude = self.reasoning(forced=p.forced and not p.answer)
            if p.answer:
                answer = self.answer()
                if p.names:
                    calls = _join(self.ws, self.calls(first=None), self.tail())
                    body = _join(prelude, calls if p.forced else f"( {answer} | {calls} )")
                else:
                    body = _join(prelude, answer)
            else:
                # a forced call (required, a named function): the calls come first, after the reasoning
                # where the template reasons; no free text before them (a sampler could write text up to
                # max_tokens and never call). Otherwise (the prompt opened a call) content may lead
                calls = self.forced_calls() if p.forced else self.calls(first=self.content())
                if self.opened:
                    # not lazy (no trigger shows up): an answer with no call is a branch of its own,
                    # led by the rest of the answer's start where it has one (``all``); the tail reads it
                    answer_only = "" if p.forced else f" | {self.opened_answer()}"
                    calls = f"( {self.calls(first=None, opened=True)} | {calls}{answer_only} )"
                body = _join(prelude, calls, self.tail())
        b.define(b.reserve("root"), body)
        return b.render("root")

    def forced_calls(self) -> str:
        """The calls of a forced request, with nothing before them but white space and, where the
        answer's wrapper may hold the calls (``<answer><call>``, ``<answer><tool_calls>``), that wrapper's
        start; a turn envelope's members before its calls are JSON strings. The first marker is
        spelled: it competes with the optional reasoning opener (``<|START_ACTION|>`` and
        ``<|START_THINKING|>``), which llguidance's greedy lexer would not back off from."""
        if self.ir.envelope is not None:
            return self.calls(first=self.envelope_lead())
        return _join(WS_SPELLED, self.empty_content(), self.calls(first=None, spell_start=True))

    def empty_content(self) -> str:
        """Before forced calls, the IR's content with no text: a wrapper's start, then maybe its end
        and the end-of-turn markers the IR lets come between the content and the calls
        (``<|open|>response<|sep|><|close|>response<|sep|>``), or a start alone where the answer's
        wrapper holds the calls (``<answer><call>``); "" when the content has no wrapper."""
        content = self.ir.get("content")
        forms: list[str] = []
        for alt in (content.items if isinstance(content, ir.Choice) else ()):
            alt = self.resolve(alt)
            if not isinstance(alt, ir.Seq):
                continue
            items = [self.resolve(n) for n in alt.items]
            if not items or not isinstance(items[0], ir.Marker) or not items[0].text.strip():
                continue
            end = next((self.resolve(n.item) for n in items[1:] if isinstance(n, ir.Repeat)), None)
            close = ""
            if isinstance(end, ir.Marker) and end.text.strip():
                close = f"( {WS_SPELLED} {self.spelled(end.text)} {self.turn_before_calls()} )?"
            forms.append(_join(self.spelled(items[0].text), close, WS_SPELLED))
        return f"( {' | '.join(forms)} )?" if forms else ""

    def turn_before_calls(self) -> str:
        """End-of-turn markers the IR lets come right before the call section (spelled), or ""."""
        message = self.ir["message"]
        assert isinstance(message, ir.Seq)
        turn = any(isinstance(part, ir.Seq) and part.items and isinstance(part.items[0], ir.Turn)
                   and _holds_calls(part) for part in message.items)
        if not turn or not self.stops:
            return ""
        return f"( {WS_SPELLED} ( {self.spelled_stops()} ) )?"

    def spelled_stops(self) -> str:
        """The end-of-turn markers (the server's stops) as alternatives, one character class at a time."""
        return " | ".join(" ".join(char_class([c]) for c in s) for s in self.stops)

    def envelope_lead(self) -> str:
        """A turn envelope up to its calls: ``{``, the reasoning and reply members (JSON strings),
        then the calls' key through its first marker piece (``op.exact``)."""
        env = self.ir.envelope
        assert env is not None
        keys = self.envelope_keys()
        member = self.envelope_member()
        members = f"( ( {member} ) {self.ws} \",\" {self.ws} ){{0,{len(keys)}}}" if keys else ""
        return self.b.rule("envelope-lead", _join('"{"', self.ws, members, literal(self.op.exact)))

    def envelope_keys(self) -> list[str]:
        env = self.ir.envelope
        assert env is not None
        return [k for k in (env.reasoning_key, env.content_key) if k]

    def envelope_member(self) -> str:
        """One reasoning or reply member of a turn envelope: its key, a JSON string or null."""
        string = json_rule(self.b, "string")
        return " | ".join(f"{json_string_expr(k)} {self.ws} \":\" {self.ws} ( {string} | \"null\" )"
                          for k in self.envelope_keys())

    def envelope_tail(self) -> str:
        """A forced turn envelope after its calls: its other members, then its closing brace."""
        keys = self.envelope_keys()
        members = f"( {self.ws} \",\" {self.ws} ( {self.envelope_member()} ) ){{0,{len(keys)}}}" if keys else ""
        return self.b.rule("envelope-tail", _join(members, self.ws, '"}"'))

    def opened_answer(self) -> str:
        """After a call start the prompt wrote, what leads an answer: the rest of the answer's start
        (the IR's ``answer_start_rest``), else nothing more than white space."""
        rest = self.ir.get("answer_start_rest")
        if isinstance(rest, ir.Pattern) and rest.text.strip():
            return _join(self.ws, self.spelled(rest.text))
        return self.ws

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

    # --- reasoning, content, answer ---------------------------------------------------

    def reasoning(self, forced: bool = False) -> str:
        """The reasoning block as the IR's message has it: required when the prompt left it
        open, optional when the model may open it, left out when tolerated only (switched off).
        ``forced`` (the calls come next): a block the call's opener ends, where the template writes
        no closer before its calls (``Thought: R`` then ``Action:``), is one too."""
        message = self.ir["message"]
        assert isinstance(message, ir.Seq)
        for part in message.items:
            node = part.item if isinstance(part, ir.Inline) else part
            if isinstance(part, ir.Tolerated):
                continue
            ref = node.item if isinstance(node, ir.Repeat) else node
            if isinstance(ref, ir.Ref) and ref.name == "reasoning":
                block = self.b.rule("reasoning", self.node(self.ir["reasoning"]))
                before_call = self.reasoning_before_call() if forced else ""
                if before_call:
                    block = f"( {block} | {before_call} )"
                if forced and (empty := self.empty_block()):
                    block = f"( {block} | {empty} )"
                return f"( {block} )?" if isinstance(node, ir.Repeat) else block
        return ""

    def empty_block(self) -> str:
        """The reasoning's closer alone, where the IR reads it as an empty block the model may write
        without its opener (a template that renders ``</mm:think>`` before a turn with no reasoning),
        else "". Only before forced calls: there nothing else may come before the calls, while
        elsewhere free content holds it."""
        node, end = self.ir.get("reasoning"), self.ir.get("reasoning_end")
        if not (isinstance(node, ir.Choice) and isinstance(end, ir.Marker) and end.text.strip()
                and any(isinstance(n, ir.Tolerated) for n in node.items)):
            return ""
        return _join(WS_SPELLED, self.spelled(end.text.strip()))

    def reasoning_before_call(self) -> str:
        """The reasoning block's opener and its text up to the call's opener, when that opener ends the
        block (the IR's reasoning text ends at it), else ""."""
        text, start = self.ir.get("reasoning_text"), self.ir.get("reasoning_start")
        if not (isinstance(text, ir.Text) and isinstance(start, ir.Marker) and self.op.exact
                and self.op.pattern and self.op.pattern in text.ends):
            return ""
        return self.b.rule("reasoning-before-call", _join(WS_SPELLED, self.spelled(start.text),
                                                          self.b.until(self.op.exact)))

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

    def content(self) -> str:
        """Free content before a forced call, through the calls' first marker piece."""
        if self.op.role:
            return self.b.rule("content", self.b.string_until(self.op.exact))
        if self.t.style == "json":
            return self.b.rule("content", self.b.until("{"))   # marker-less JSON: text with no "{"
        if self.t.args == "literal" and self.t.literal is not None:
            # marker-less calls (get_weather(...)): text with no opener, the name ends it
            return self.b.rule("content", self.b.until(self.t.literal.open))
        after = self.t.name_suffix.strip()
        if self.t.style == "layout" and after:
            # marker-less layout calls (get_weather(...)): text with no literal that follows a name
            return self.b.rule("content", self.b.until(after))
        return self.ws

    def tail(self) -> str:
        """What may follow the calls: text that opens no other call (or whitespace); for a forced
        call (required, a named function) white space only: the calls are the whole answer, and
        free text after them lets a sampler run on to ``max_tokens`` after its call.

        A section end with no section start (``<|tool_response>``) is part of it, and an end of
        turn the server did not cut.
        """
        t, op = self.t, self.op
        free = not self.plan.forced
        if free and op.role == "section_start" and not self.split_stop(t.section_end)[0].strip() \
                and t.call_start.strip():
            # the section has no end to require: the tail must not open another call either
            return self.b.rule("tail", self.b.until(mk.tokens(t.call_start)[0]))
        if free and op.role:
            return self.b.rule("tail", self.b.until(op.exact))
        if not free:
            return self.forced_tail()
        stops = " | ".join(literal(s) for s in self.stops)
        after = f"( ( {stops} ) {self.ws} )?" if stops else ""   # an end of turn the server did not cut
        if t.section_end.strip() and not t.section_start.strip():
            return _join(f"( {self.lead('section-end', t.section_end)} )?", self.ws, after)
        return _join(self.ws, after)

    def forced_tail(self) -> str:
        """After a forced request's calls: what the template writes there and no free text. A turn
        envelope's other members and closing brace; a section end with no section start; a reasoning
        block the IR reads after the calls, but for layouts (a closing rationale: ``</tool>\n<rationale>R</rationale>``);
        then white space and an end of turn the server did not cut. Markers spelled one character
        class at a time: they compete with the next call's opener (``<|return|>`` and ``<|start|>``)."""
        t = self.t
        parts: list[str] = []
        if self.ir.envelope is not None:
            parts.append(self.envelope_tail())
        elif t.section_end.strip() and not t.section_start.strip():
            parts.append(f"( {WS_SPELLED} {self.spelled(t.section_end)} )?")
        if self.reasoning_after_calls() and self.t.style != "layout":
            # not after a layout's calls: a last value that runs to what follows the calls would take
            # the block in (the sampler finds such texts; the layout reader does not split them off)
            block = self.b.rule("reasoning", self.node(self.ir["reasoning"]))
            parts.append(f"( {block} )?")
        # an end of turn the server did not cut
        after = f"( {WS_SPELLED} ( {self.spelled_stops()} ) )? {WS_SPELLED}" if self.stops else WS_SPELLED
        return _join(*parts, after)

    def reasoning_after_calls(self) -> bool:
        """Whether the IR's message reads a reasoning block after its call section."""
        message = self.ir["message"]
        assert isinstance(message, ir.Seq)
        seen = False
        for part in message.items:
            node = part.item if isinstance(part, (ir.Inline, ir.Tolerated)) else part
            node = node.item if isinstance(node, ir.Repeat) else node
            if not seen:
                seen = _holds_calls(node)
            elif isinstance(node, ir.Ref) and node.name == "reasoning":
                return True
        return False

    def answer(self) -> str:
        """The JSON answer for response_format as the IR has it: bare, or in the content markers
        (a ```` ```json ```` fence when the template has none)."""
        content = self.ir.get("content")
        node = content if content is not None else self.ir["answer"]
        return self.b.rule("answer", _join(self.node(node, spell_first=False), self.ws))

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

    # --- calls -----------------------------------------------------------------------

    def calls(self, first: str | None, opened: bool = False, spell_start: bool = False) -> str:
        """The calls from their opener; with `first`, from free content through ``op.exact``; ``opened``:
        from inside the first call, whose start the prompt wrote (its names spelled: free text competes);
        ``spell_start``: the section start spelled (it competes with an optional reasoning block)."""
        t, b, op = self.t, self.b, self.op
        rest = self.opener_rest()
        # inline alternatives: a named rule made only of terminals becomes one llguidance lexeme,
        # which would hide a shorter competing lexeme (see _ordered)
        body = b.rule("call-body", " | ".join(f"( {self.call_body(n)} )" for n in self.plan.names))
        per_call = ""
        if op.role in ("name_prefix", "call_name"):
            per_call = op.marker
        elif t.call_start.strip():
            per_call = t.call_start
        # outside a section the free tail competes with the next call: spell its markers out
        # (inside one the section end, a literal, competes: keep literals there)
        loose = op.role != "section_start" or not self.split_stop(t.section_end)[0].strip()
        opener = (self.spelled(per_call) if loose else self.marker("call-start", per_call)) if per_call else ""
        ws = self.ws_to_body()
        one = b.rule("call", _join(opener, ws, body) if opener else body)
        head = one
        if first is None and not opened and self.plan.lazy and not op.role and t.style == "layout" and \
                t.layout is not None and name_index(t.layout) > 0:
            # no marker opens the calls: the trigger is the name, so the first call is read from there
            at = name_index(t.layout)
            head = b.rule("first-call", " | ".join(f"( {self.call_body(n, from_piece=at)} )" for n in self.plan.names))
        if opened:
            names = b.rule("opened-call-body", " | ".join(f"( {self.call_body(n, spell=True)} )"
                                                          for n in self.plan.names))
            lead = self.marker("name-prefix", t.name_prefix) if op.role == "call_name" else ""
            head = b.rule("opened-call", _join(lead, ws, names) if lead else names)
        elif spell_start and op.role != "section_start" and self.opener_extended(per_call):
            # a forced request's first call, whose spelled opener begins an optional reasoning or answer
            # start too: its names spelled as well (``to=self<|message|>`` and ``to=search_docs``)
            names = b.rule("first-call-body", " | ".join(f"( {self.call_body(n, spell=True)} )"
                                                         for n in self.plan.names))
            head = b.rule("first-call", _join(opener, ws, names) if opener else names)
        elif first is not None and op.role != "section_start":
            if not op.role and t.style == "layout":
                # after free content, names spelled one character class at a time: a name literal
                # would be one llguidance lexeme that outruns, then hides, content going on
                spelled = b.rule("first-call-body", " | ".join(f"( {self.call_body(n, spell=True)} )"
                                                               for n in self.plan.names))
                head = b.rule("first-call", _join(first, spelled))
            else:
                head = b.rule("first-call", _join(first, rest, ws, body) if op.role else _join(first, one))
        more = ""
        # ``key: value`` lines that no marker of the call closes: what follows the last value on its
        # line is the separator or the section end, white space before them starts with a line break
        open_lines = t.args in LINE_ARGS and not self.after_lines()
        if self.plan.parallel:
            sep = _join(self.ws, self.spelled(t.separator)) if loose and t.separator.strip() \
                else self.lead("call-separator", t.separator)
            item = _join(sep, self.ws, one)
            if t.style == "layout" and t.layout is not None and t.layout.pieces[-1].kind == "args" and \
                    (t.layout.args.kind == "items" or t.layout.args.codec):
                # the call's last value may run on: the white space before the next call one character
                # at a time (a ``ws`` lexeme would outrun the value's own spaces in llguidance)
                wsc = b.recursive_rule("ws-chars", lambda r: f"| [ \\t\\n\\r] {r}", key=("ws-chars",))
                item = _join(wsc, self.spelled(t.separator), wsc, one) if t.separator.strip() else _join(wsc, one)
            if open_lines:
                glued = self.spelled(t.separator) if t.separator.strip() and not t.separator[0].isspace() else ""
                marker = self.marker("call-separator", t.separator)
                brk = self.line_break_ws() if self.break_before(t.separator) else ""
                item = _join(glued, self.ws, one) if glued else _join(brk, marker, self.ws if marker else "", one)
            more = b.recursive_rule("more-calls", lambda r: f"| {item} {r}", key=("more-calls", item))
        seq = _join(head, more)
        if op.role != "section_start":
            return seq
        if first is not None:
            start = _join(first, rest)
        else:
            start = self.spelled(t.section_start) if spell_start else self.marker("section-start", t.section_start)
        close = self.lead("section-end", self.split_stop(t.section_end)[0])
        if open_lines and close:
            end = self.split_stop(t.section_end)[0]
            close = _join(self.line_break_ws() if self.break_before(end) else "", self.marker("section-end", end))
        return b.rule("tool-calls", _join(start, self.ws, seq, close))

    def opener_extended(self, opener: str) -> bool:
        """Whether a marker that may come instead of the first call (the reasoning or the content
        start) begins with the call's opener `opener` and goes on after it."""
        head = opener.strip()
        if not head:
            return False
        others = (self.ir.get("reasoning_start"), self.ir.get("content_start"))
        return any(isinstance(m, ir.Marker) and m.text.strip().startswith(head) and len(m.text.strip()) > len(head)
                   for m in others)

    def opener_rest(self) -> str:
        """The opener after ``op.exact`` (what follows free content in required mode)."""
        op = self.op
        if op.role == "call_name" or not op.role:
            return ""
        tokens = mk.tokens(op.marker)
        rest = [tokens[0][len(op.exact):], *tokens[1:]] if tokens[0].startswith(op.exact) else tokens[1:]
        head, *tail = rest or [""]
        if not head:
            return self.lead("opener-rest", " ".join(tail))
        # what follows the literal head inside its piece is glued to it (no whitespace before); spelled,
        # as it competes with free text and the reasoning opener (`` to=self<|message|>``)
        return _join(self.spelled(head), self.lead("opener-rest", " ".join(tail)))

    def call_body(self, tool: str, spell: bool = False, from_piece: int = 0) -> str:
        """One call of `tool` after its per-call opener (starting with no whitespace), inline; ``spell``:
        its name one character class at a time; ``from_piece``: a layout's call from that piece on."""
        t = self.t
        close = _join(self.lead_closing("call-close", t.call_close), self.lead_closing("call-end", t.call_end))
        if t.style == "layout" and t.layout is not None:
            # the opener printed the layout's first literal (the name prefix), or the call starts at its name
            start = 1 if self.op.role in ("name_prefix", "call_name") and t.layout.pieces[0].kind == "lit" else 0
            return _join(layout_call(self, tool, max(start, from_piece), spell), close)
        if t.args in LINE_ARGS or t.args == "json_attr":
            close = self.after_lines()     # text that runs to the close: no free white space before it
        if t.style == "json" and t.json is not None:
            return _join(self.json_call(tool), close)
        parts = []
        if t.id_position == "before_name":
            parts += [self.id_part(), self.ws]
        if self.op.role not in ("name_prefix", "call_name") and t.name_prefix.strip():
            parts += [self.marker("name-prefix", t.name_prefix), self.ws]
        name = " ".join(char_class([c]) for c in tool) if spell and not t.name_in_id else self.name_expr(tool)
        parts += [name, self.lead("name-suffix", t.name_suffix)]
        if t.id_position == "after_name":
            parts += [self.ws, self.id_part()]
        parts.append(self.tagged_args(tool))
        if t.id_position == "after_args":
            parts += [self.ws, self.id_part()]
        parts.append(close)
        return _join(*parts)

    def after_lines(self) -> str:
        """The call's closing markers after ``key: value`` lines. Only a line break may come before
        the first one: a raw value's own spaces are its text (llguidance, lexing greedily, would
        read them as the white space before the marker and fail at the next word)."""
        t = self.t
        nl = self.line_break_ws()
        parts: list[str] = []
        for role, m in (("call-close", t.call_close), ("call-end", t.call_end)):
            req_part, opt_part = self.split_stop(m)
            if req_part.strip():
                parts.append(_join((nl if self.break_before(m) else "") if not parts else self.ws,
                                   self.marker(role, req_part)))
            if opt_part.strip():
                parts.append(f"( {self.lead(role + '-stop', opt_part)} )?")
        return _join(*parts)

    def break_before(self, m: str) -> bool:
        """Whether the template writes a line break between the last ``key: value`` line and
        marker ``m`` (which follows it, or follows a blank call close)."""
        t = self.t
        lead = m[: len(m) - len(m.lstrip())]
        return "\n" in lead or (not t.call_close.strip() and "\n" in t.call_close)

    def line_break_ws(self) -> str:
        """The line break before what follows ``key: value`` lines (no more white space: llguidance
        would read the indentation of a literal block's next line as white space before the marker)."""
        return self.b.rule("line-break-ws", '"\\n"')

    def lead_closing(self, role: str, m: str) -> str:
        """A closing marker; end-of-turn markers it ends with are optional (the server stops there)."""
        req_part, opt_part = self.split_stop(m)
        out = self.lead(role, req_part)
        if opt_part.strip():
            out = _join(out, f"( {self.lead(role + '-stop', opt_part)} )?")
        return out

    def name_expr(self, tool: str) -> str:
        t = self.t
        if t.name_in_id:
            try:
                return _regex_gbnf(t.name_in_id, (tool,))
            except ValueError:
                pass
        return literal(tool)

    def id_part(self) -> str:
        """``id_prefix ID id_suffix``: the id text is bounded and ends at the suffix's first piece."""
        t = self.t
        prefix = self.marker("id-prefix", t.id_prefix)
        pieces = mk.tokens(t.id_suffix)
        if not pieces:
            ident = self.b.rule("call-id", f"{WORD_CHARS}{{1,{ID_MAX}}}")
            return _join(prefix, self.ws if prefix else "", ident)
        ident = self.b.rule("call-id", f"{ID_CHARS}{{1,{ID_MAX}}} {piece_expr(pieces[0])}")
        rest = self.lead("id-suffix-rest", " ".join(pieces[1:]))
        return _join(prefix, self.ws if prefix else "", ident, rest)

    # --- JSON calls ------------------------------------------------------------------

    def json_call(self, tool: str) -> str:
        """The call object of `tool` in the JSON layout (members in any order, a few others)."""
        layout = self.t.json
        assert layout is not None
        space = space_rule(self.b)
        if layout.name_is_key:
            return _join('"{"', space, self.key_expr(tool), space, '":"', space, self.args_value(tool), space, '"}"')
        roles: dict[str, tuple[str, ...]] = {"name": tuple(layout.name_path), "args": tuple(layout.args_path)}
        if layout.id_path:
            roles["id"] = tuple(layout.id_path)
        if self.plan.forced:
            # the members the template writes in every call besides these (``"jsonrpc": "2.0"``): where
            # no other member may come, they are members of their own
            roles.update({f"{CONSTANT}{k}": (k,) for k in layout.constants if (k,) not in roles.values()})
        return self.json_object(tool, roles, 0)

    def key_expr(self, key: str) -> str:
        if self.t.python_literals:
            return _group([json_string_expr(key), literal("'" + key.replace("\\", "\\\\").replace("'", "\\'") + "'")])
        return json_string_expr(key)

    def role_value(self, tool: str, role: str) -> str:
        if role == "name":
            return self.key_expr(tool)
        if role == "id":
            string = LiteralConverter(self.b, {}).string() if self.t.python_literals else json_rule(self.b, "string")
            return f"( {string} | {json_rule(self.b, 'integer')} )"
        if role.startswith(CONSTANT):
            return self.constant_value(role[len(CONSTANT):])
        args = self.args_value(tool)
        if self.t.json is not None and self.t.json.args_as_string:
            return f"( {self.args_string(tool)} | {args} )"
        return args

    def json_object(self, tool: str, roles: dict[str, tuple[str, ...]], depth: int) -> str:
        """An object holding the members at `depth` of the role paths (inline): those the call's name
        prefix spells (``{"name": ``, ``{"tool_call_id": ``) first, in its order, as the parser finds
        a call by that prefix; the others in any order. Up to MAX_EXTRA_MEMBERS other members may
        follow each known one (``"type": "function"``), and come first only where the name prefix
        says nothing of the order; none in a forced call."""
        space = space_rule(self.b)
        members: dict[str, str] = {}
        for role, path in roles.items():
            key = path[depth]
            if len(path) == depth + 1:
                members[key] = self.role_value(tool, role)
            elif key not in members:
                inner = {r: p for r, p in roles.items() if len(p) > depth + 1 and p[depth] == key}
                members[key] = self.json_object(tool, inner, depth + 1)
        kvs = [_join(self.key_expr(k), space, '":"', space, v, space) for k, v in members.items()]
        if "name" in roles and len(roles["name"]) == depth + 1:
            # the name member is the same in every order: one rule (it starts with its own key)
            i = list(members).index(roles["name"][depth])
            kvs[i] = self.b.rule(f"{sanitize_name(tool)}-name", kvs[i])
        spelled = [k for k in re.findall(r'"((?:[^"\\]|\\.)*)"\s*:', self.t.name_prefix) if k in members]
        first = [kvs[list(members).index(k)] for k in dict.fromkeys(spelled)]
        rest = [kv for kv in kvs if kv not in first]
        after = before = ""
        if not self.plan.forced:
            # a forced call has no other members: one with any JSON value lets a sampler wander off
            # (a random model writes a string until max_tokens and never ends the call)
            extra = self.extra_member(list(members))
            after = self.b.rule("more-members", f'( "," {space} {extra} ){{0,{MAX_EXTRA_MEMBERS}}}')
            if not first:
                before = self.b.rule("lead-members", f'( {extra} "," {space} ){{0,{MAX_EXTRA_MEMBERS}}}')
        orders = [f' "," {space} '.join(_join(kv, after) for kv in (*first, *perm))
                  for perm in itertools.permutations(rest)]
        return _join('"{"', space, before, _group(orders), '"}"')

    def constant_value(self, key: str) -> str:
        """The value of constant member `key` as the template writes it (``"2.0"``); where the
        analysis holds no value for it (read from a stored analysis, or Python literals): a scalar,
        a string of at most CONSTANT_MAX characters (bounded: a sampler cannot run on inside it)."""
        layout = self.t.json
        if layout is not None and not self.t.python_literals and key in layout.constants:
            i = layout.constants.index(key)
            if i < len(layout.constant_values) and layout.constant_values[i]:
                return literal(layout.constant_values[i])
        quotes = "\"'" if self.t.python_literals else '"'
        words = ("true", "false", "null", *(("True", "False", "None") if self.t.python_literals else ()))
        controls = [chr(i) for i in range(0x20)]
        strings = [f"{literal(q)} {char_class([q, chr(92), *controls], negate=True)}{{0,{CONSTANT_MAX}}} {literal(q)}"
                   for q in quotes]
        return self.b.rule("constant-value", " | ".join([*strings, json_rule(self.b, "number"),
                                                         *(literal(w) for w in words)]))

    def extra_member(self, keys: list[str]) -> str:
        """A member whose key is none of `keys`, with any value."""
        space = space_rule(self.b)
        if self.t.python_literals:
            conv = LiteralConverter(self.b, {})
            key, value = conv.any_key(), conv.any_value()
        else:
            key = _Converter(self.b, {}, True).key_excluding(keys, "other-key")
            value = json_rule(self.b, "value")
        return self.b.rule("other-member", _join(key, space, '":"', space, value, space))

    # --- tagged arguments ----------------------------------------------------------------

    def tagged_args(self, tool: str) -> str:
        """The arguments after a tagged call's name: JSON, Python, a literal or per-key tags."""
        t = self.t
        name = sanitize_name(tool)
        schema = strict_objects(self.plan.schemas[tool])
        if t.args == "tagged" and t.tagged is not None:
            return self.key_tags(tool, schema)
        if t.args in LINE_ARGS and t.tagged is not None:
            ta = t.tagged
            rule = line_args_rule(self.b, schema, f"{name}-args", prefix=ta.prefix, key_suffix=ta.key_suffix,
                                  quoted=ta.strings_json, end=self.line_end(), separator=ta.separator)
            # pairs on one line begin after the name's marker, or after white space (``NAME key=value``)
            # (at least one white space character: the name would run on into the key)
            ws1 = self.b.rule("ws1", f"[ \\t\\n\\r]{{1,{WS_MAX}}}")
            return _join(ws1, rule) if not ta.prefix and not t.name_suffix.strip() else rule
        if t.args == "json_attr":
            return _join(self.ws, self.attr_json(tool))
        if t.args == "literal" and t.literal is not None:
            lit = t.literal
            rule = literal_args_rule(self.b, schema, f"{name}-args", open_=lit.open, close=lit.close,
                                     sep=lit.kv_sep, quotes=tuple(lit.quotes), bare_strings=lit.bare_strings)
            return _join(self.ws, rule)
        if t.args_as_string:     # a JSON string holding the arguments
            return _join(self.ws, f"( {self.args_string(tool)} | {self.args_value(tool)} )")
        return _join(self.ws, self.args_value(tool))

    def attr_json(self, tool: str) -> str:
        """JSON arguments written with character references inside an attribute value: the tool's
        schema, escaped (:mod:`autoparser.grammar.attrjson`)."""
        schema = strict_objects(self.plan.schemas[tool])
        src = GbnfBuilder()
        root = src.reserve("args")
        src.define(root, " | ".join(_Converter(src, schema, True).alts(schema, root)))
        return escaped_copy(self.b, src, root, f"{sanitize_name(tool)}-attr")

    def line_end(self) -> str:
        """What may follow the last ``key: value`` line's value on that line: the first piece of
        the marker the template writes right after it ("" when a line break comes first)."""
        t = self.t
        for m in (t.call_close, t.call_end):
            if m.strip():
                return "" if m[0].isspace() else mk.tokens(m)[0]
        if t.separator.strip() and not t.separator[0].isspace():
            return " ".join(mk.tokens(t.separator) + mk.tokens(t.call_start + t.name_prefix))
        if t.section_end.strip() and not t.section_end[0].isspace():
            return mk.tokens(t.section_end)[0]
        return ""

    def key_tags(self, tool: str, schema: dict[str, Any]) -> str:
        """Per-key tagged arguments in declared order (optional ones may be left out)."""
        t = self.t
        ta = t.tagged
        assert ta is not None
        name = sanitize_name(tool)

        def value_end(key: str) -> tuple[str, str]:
            """(the value's closing piece, the rest of its end marker) for ``key`` (``</KEY>``)."""
            end = mk.tokens(ta.value_end.replace(mk.NAME_WILDCARD, key))
            rest = self.lead(f"value-end-rest-{key}" if mk.NAME_WILDCARD in ta.value_end else "value-end-rest",
                             " ".join(end[1:])) if len(end) > 1 else ""
            return (end[0] if end else ""), rest

        closing, end_rest = value_end("")
        prefix = self.lead("arg-prefix", ta.prefix)
        key_suffix = self.lead("arg-key-suffix", ta.key_suffix)
        raw = not ta.strings_json and bool(closing)
        # the line break the call reader strips around a raw value (the template's ``>\nV\n</parameter>``)
        edges = ('"\\n"?' if ta.key_suffix.endswith("\n") else "", '"\\n"?' if ta.value_end.startswith("\n") else "")
        raw_props = schema.get("properties")
        props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        slots: list[tuple[str, bool]] = []
        keys = [*props, *(k for k in required if k not in props)]
        for key in keys:
            prop = props.get(key, {})
            closing, end_rest = value_end(key)
            if _structured(prop) and closing:
                # objects and lists: JSON, or the Python repr a template prints with |string
                value = _join(self.ws, python_value_rule(self.b, prop, f"{name}-{key}-value", root=schema),
                              self.ws, literal(closing))
            else:
                value = schema_value_rule(self.b, prop, f"{name}-{key}-value", raw, closing=closing, pad=self.ws,
                                          raw_edges=edges, root=schema)
            slots.append((_join(prefix, self.ws, literal(key), key_suffix, value, end_rest), key in required))
        if not props and schema.get("additionalProperties", True) is not False:
            # free-form arguments: any key, any raw value
            closing, end_rest = value_end("")
            key_text = self.through("arg-key-suffix", ta.key_suffix) if ta.key_suffix.strip() else self.ws
            value = schema_value_rule(self.b, {}, "any-value", raw, closing=closing, pad=self.ws)
            item = self.b.rule("any-arg", _join(prefix, key_text, value, end_rest))
            return self.b.recursive_rule("any-args", lambda r: f"| {item} {r}")
        sep = self.lead("arg-separator", ta.separator)
        layouts = [ordered(slots, sep)]
        by_key = [slot for _key, slot in sorted(zip(keys, slots, strict=False), key=lambda ks: ks[0].lower())]
        if by_key != slots:   # templates that print arguments with |dictsort
            layouts.append(ordered(by_key, sep))
        return layouts[0] if len(layouts) == 1 else "( " + " | ".join(layouts) + " )"


def _holds_calls(node: ir.Node) -> bool:
    """Whether an IR node of the message is, or holds, the call section."""
    if isinstance(node, ir.Ref):
        return node.name in ("tool_calls", "tool_calls_opened")
    if isinstance(node, (ir.Seq, ir.Choice)):
        return any(_holds_calls(n) for n in node.items)
    if isinstance(node, (ir.Repeat, ir.Tolerated, ir.Inline)):
        return _holds_calls(node.item)
    return False


def _structured(schema: Any) -> bool:
    """An object or array schema (possibly nullable), by its type or keywords."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    if not kinds:
        return bool({"properties", "items", "prefixItems"} & set(schema))
    return bool(kinds & {"object", "array"}) and kinds <= {"object", "array", "null"}


# ---------------------------------------------------------------- name_in_id
_CATEGORY_CHARS = {
    sre_c.CATEGORY_DIGIT: "0123456789",
    sre_c.CATEGORY_SPACE: " \t\n\r\f\v",
    sre_c.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
}


def _regex_gbnf(pattern: str, names: tuple[str, ...]) -> str:
    """GBNF for a small regex (``name_in_id``) with its ``name`` group replaced by `names`.

    Literals, classes, groups, alternation and repetition (unbounded ones capped) are
    converted; anchors are dropped; anything else raises ValueError.
    """
    tree = sre_parse.parse(pattern)
    name_group = tree.state.groupdict.get("name")

    def klass(items: list[tuple[Any, Any]]) -> str:
        chars: set[str] = set()
        negate = False
        for op, av in items:
            if op is sre_c.NEGATE:
                negate = True
            elif op is sre_c.LITERAL:
                chars.add(chr(av))
            elif op is sre_c.RANGE and av[1] - av[0] < 4096:
                chars.update(chr(c) for c in range(av[0], av[1] + 1))
            elif op is sre_c.CATEGORY and av in _CATEGORY_CHARS:
                chars.update(_CATEGORY_CHARS[av])
            else:
                raise ValueError(f"unsupported class item {op}")
        return char_class(chars, negate=negate)

    def seq(items: Any) -> str:
        return " ".join(filter(None, (node(op, av) for op, av in items)))

    def node(op: Any, av: Any) -> str:
        if op is sre_c.LITERAL:
            return literal(chr(av))
        if op is sre_c.NOT_LITERAL:
            return char_class([chr(av)], negate=True)
        if op is sre_c.ANY:
            return ANY_CHAR
        if op is sre_c.IN:
            return klass(av)
        if op is sre_c.CATEGORY:
            return klass([(op, av)])
        if op is sre_c.AT:
            return ""
        if op is sre_c.SUBPATTERN:
            group, _add, _del, sub = av
            if group is not None and group == name_group:
                return _group([literal(n) for n in names])
            inner = seq(sub)
            return f"( {inner} )" if inner else ""
        if op is sre_c.BRANCH:
            alts = [seq(s) or '""' for s in av[1]]
            return "( " + " | ".join(alts) + " )"
        if op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            inner = seq(sub)
            if not inner:
                return ""
            hi = lo + ID_MAX if hi is sre_c.MAXREPEAT or hi > lo + ID_MAX else hi
            if (lo, hi) == (0, 1):
                return f"( {inner} )?"
            return f"( {inner} ){{{lo},{hi}}}"
        raise ValueError(f"unsupported regex construct {op}")

    out = seq(tree)
    if not out:
        raise ValueError("empty pattern")
    return f"( {out} )"


__all__ = ["build_gbnf", "strict_objects", "triggers"]
