"""The strict parser of a turn envelope (:class:`~autoparser.ir.Envelope`): the request IR's
envelope printed as PEG.

The turn is one JSON object whose members are the reasoning and the reply (JSON strings, or
null) and the calls (an array of JSON call objects); turn markers may follow it. Any other
member, text around the object or a call the request does not allow (an unknown tool, a second
call with ``parallel_tool_calls`` off, none under ``tool_choice`` required) raises
:class:`~autoparser.errors.ParseError`. A text the grammar accepts is mapped by the envelope's
reader (:class:`~autoparser.runtime.envelope.EnvelopeEngine`), so for valid output
``parse_strict(text) == parse(text)``.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from parsimonious.exceptions import IncompleteParseError
from parsimonious.exceptions import ParseError as GrammarError
from parsimonious.grammar import Grammar

from .. import ir
from .. import markers as mk
from ..errors import ParseError
from ..runtime.envelope import EnvelopeEngine
from ..runtime.message import Message
from .peg_mapper import PegParser, _Context
from .peg_rules import _JSON_RULES, _lit, _rx

if TYPE_CHECKING:
    from ..plan import RequestPlan


class EnvelopePegParser(PegParser):
    """The strict parser of a turn envelope: its grammar checks the object, the envelope's reader
    maps it."""

    def parse(self, text: str) -> Message:
        return parse_envelope(self, text)


def _key(key: str) -> str:
    """The member's key as a parsimonious literal of its JSON spelling."""
    return _lit(json.dumps(key, ensure_ascii=False))


def envelope_rules(env: ir.Envelope, stops: tuple[str, ...], names: tuple[str, ...] | None) -> dict[str, str]:
    """The envelope's PEG rules, ``message`` first (the JSON value rules are added by the caller).
    ``names``: the functions a call may name (None: any); a call object whose name is one level
    deep has its name member checked by the grammar (an unknown name fails at the name)."""
    members = []
    rules: dict[str, str] = {"message": 'ws "{" ws (member (ws "," ws member)*)? ws end'}
    for name, key in (("reasoning_member", env.reasoning_key), ("content_member", env.content_key)):
        if key:
            rules[name] = f'{_key(key)} ws ":" ws (json_string / "null")'
            members.append(name)
    if env.calls_key:
        rules["calls_member"] = f'{_key(env.calls_key)} ws ":" ws tool_calls'
        rules["tool_calls"] = '"[" ws (call (ws "," ws call)*)? ws "]"'
        layout = env.layout
        if layout is not None and len(layout.name_path) == 1 and not layout.name_is_key and names is not None:
            name_key = _key(layout.name_path[0])
            rules["call"] = '"{" ws call_member (ws "," ws call_member)* ws "}"'
            rules["call_member"] = f"({name_key} ws \":\" ws call_name) / (!{name_key} json_member)"
            rules["call_name"] = " / ".join(_lit(json.dumps(n, ensure_ascii=False)) for n in names) \
                if names else '!""'
        else:
            rules["call"] = "json_object"
            rules["call_name"] = "json_string"   # checked once the object is read
        members.append("calls_member")
    rules["member"] = " / ".join(members)
    rules["end"] = '"}" stop* ws' if stops else '"}" ws'
    if stops:
        rules["stop"] = _rx(r"\s*(?:" + "|".join(mk.pattern(m) for m in stops) + ")")
    return rules


def build_envelope_peg(plan: RequestPlan) -> PegParser:
    """The strict parser of a request whose turn is an envelope (:attr:`ir.Grammar.envelope`)."""
    g = ir.message_grammar(plan)
    env = g.envelope
    if env is None:
        raise ValueError("the request's output is no turn envelope")
    tp = plan.tools
    rules = envelope_rules(env, g.stops, tp.allowed if tp is not None else ())
    rules.update(_JSON_RULES)
    rules["ws"] = _rx(r"\s*")
    text = "\n".join(f"{name} = {body}" for name, body in rules.items()) + "\n"
    ctx = _Context(plan=plan, template=plan.template, tools=None)
    return EnvelopePegParser(text=text, grammar=Grammar(text), context=ctx)


def parse_envelope(parser: PegParser, text: str) -> Message:
    """Check ``text`` against the envelope's grammar and the request's calls; the reader's message."""
    ctx = parser.context
    try:
        parser.grammar.parse(text)
    except IncompleteParseError as e:
        raise ParseError("text after the end of the message", text=text, pos=e.pos, template=ctx.template) from None
    except GrammarError as e:
        rule = e.expr.name if e.expr is not None and e.expr.name else "message"
        raise ParseError(f"expected {rule}", text=text, pos=max(e.pos, 0), template=ctx.template) from None
    msg = EnvelopeEngine(ctx.plan).parse_whole(text)
    tp = ctx.plan.tools
    calls = msg.tool_calls
    why, pos = "", 0
    unknown = [c.name for c in calls if tp is not None and c.name not in tp.allowed]
    if calls and (tp is None or not tp.allowed):
        why = "the request allows no tool call"
    elif tp is not None and tp.forced and not calls:
        why = "the request requires a tool call"
    elif tp is not None and not tp.parallel and len(calls) > 1:
        why = "the request allows one tool call"
    elif unknown:
        why, pos = f"unknown tool {unknown[0]!r}", max(text.find(json.dumps(unknown[0], ensure_ascii=False)), 0)
    elif msg.malformed or msg.truncated:
        why = "; ".join(msg.warnings) or "the turn is not well-formed"
    if why:
        raise ParseError(why, text=text, pos=pos, template=ctx.template)
    return msg


__all__ = ["EnvelopePegParser", "build_envelope_peg", "envelope_rules", "parse_envelope"]
