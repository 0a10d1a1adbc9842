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

The builder is one class in layers, a module each: :mod:`.request_rules` (the goal, markers,
envelope nodes, values), :mod:`.request_json` (JSON call objects) and :mod:`.request_args` (a
framed call's arguments), :mod:`.request_calls` (the section and its calls), :mod:`.request_forced`
(what comes around forced calls), and here the whole turn (:class:`_Grammar`).
"""

from __future__ import annotations

from .. import ir
from .. import markers as mk
from ..plan import RequestPlan
from ..plan.openers import opening_id
from .gbnf import literal
from .request_forced import _ForcedCalls
from .request_rules import _Goal, _join
from .schema import strict_objects


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


# ---------------------------------------------------------------- the grammar
class _Grammar(_ForcedCalls):
    """Builds one request's rules on a :class:`GbnfBuilder`: the whole turn."""

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

    def opened_answer(self) -> str:
        """After a call start the prompt wrote, what leads an answer: the rest of the answer's start
        (the IR's ``answer_start_rest``), else nothing more than white space."""
        rest = self.ir.get("answer_start_rest")
        if isinstance(rest, ir.Pattern) and rest.text.strip():
            return _join(self.ws, self.spelled(rest.text))
        return self.ws

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
        opens_with_id = t.layout is not None and bool(opening_id(t.layout)) and not t.call_start.strip()
        if free and op.role and not (opens_with_id and not self.split_stop(t.section_end)[0].strip()):
            return self.b.rule("tail", self.b.until(op.exact))
        # (calls that open with their id in a section nothing ends: text after them would be read as
        # more calls where it starts like one; the calls end the answer)
        if not free:
            return self.forced_tail()
        stops = " | ".join(literal(s) for s in self.stops)
        after = f"( ( {stops} ) {self.ws} )?" if stops else ""   # an end of turn the server did not cut
        if t.section_end.strip() and not t.section_start.strip():
            return _join(f"( {self.lead('section-end', t.section_end)} )?", self.ws, after)
        return _join(self.ws, after)

    def answer(self) -> str:
        """The JSON answer for response_format as the IR has it: bare, or in the content markers
        (a ```` ```json ```` fence when the template has none)."""
        content = self.ir.get("content")
        node = content if content is not None else self.ir["answer"]
        return self.b.rule("answer", _join(self.node(node, spell_first=False), self.ws))


__all__ = ["build_gbnf", "strict_objects", "triggers"]
