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

if TYPE_CHECKING:
    from ..plan import RequestPlan
    from .peg import PegParser


def _key(key: str) -> str:
    """The member's key as a parsimonious literal of its JSON spelling."""
    return json.dumps(json.dumps(key, ensure_ascii=False), ensure_ascii=False)


def envelope_rules(env: ir.Envelope, stops: tuple[str, ...]) -> dict[str, str]:
    """The envelope's PEG rules (the JSON value rules are added by the caller)."""
    from .peg import _rx

    members = []
    rules: dict[str, str] = {}
    for name, key in (("reasoning_member", env.reasoning_key), ("content_member", env.content_key)):
        if key:
            rules[name] = f'{_key(key)} ws ":" ws (json_string / "null")'
            members.append(name)
    if env.calls_key:
        rules["calls_member"] = f'{_key(env.calls_key)} ws ":" ws "[" ws (json_object (ws "," ws json_object)*)? ws "]"'
        members.append("calls_member")
    rules["message"] = 'ws "{" ws (member (ws "," ws member)*)? ws "}" ' + ("stop* ws" if stops else "ws")
    rules["member"] = " / ".join(members)
    if stops:
        rules["stop"] = _rx(r"\s*(?:" + "|".join(mk.pattern(m) for m in stops) + ")")
    return rules


def build_envelope_peg(plan: RequestPlan, env: ir.Envelope) -> PegParser:
    from .peg import _JSON_RULES, EnvelopePegParser, _Context, _rx

    g = ir.message_grammar(plan)
    rules = envelope_rules(env, g.stops)
    rules.update(_JSON_RULES)
    rules["ws"] = _rx(r"\s*")
    order = ["message", *(n for n in rules if n != "message")]   # parsimonious starts at the first rule
    text = "\n".join(f"{name} = {rules[name]}" for name in order) + "\n"
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
    engine = EnvelopeEngine(ctx.plan)
    msg = engine.parse_whole(text)
    tp = ctx.plan.tools
    calls = msg.tool_calls
    why = ""
    if calls and (tp is None or not tp.allowed):
        why = "the request allows no tool call"
    elif tp is not None and tp.forced and not calls:
        why = "the request requires a tool call"
    elif tp is not None and not tp.parallel and len(calls) > 1:
        why = "the request allows one tool call"
    elif tp is not None and any(c.name not in tp.allowed for c in calls):
        why = f"unknown tool {next(c.name for c in calls if c.name not in tp.allowed)!r}"
    elif msg.malformed or msg.truncated:
        why = "; ".join(msg.warnings) or "the turn is not well-formed"
    if why:
        raise ParseError(why, text=text, pos=0, template=ctx.template)
    return msg


__all__ = ["build_envelope_peg", "envelope_rules", "parse_envelope"]
