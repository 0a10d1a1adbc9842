"""What a request's GBNF admits around forced calls (``tool_choice`` required or a named function):
before them, white space, an empty content wrapper or one that holds the calls, a reasoning block
the call's opener ends, or an empty block's closer; a turn envelope's members before and after
them; after them only what the IR has there besides free text (a reasoning block written after
the calls, a section or envelope end, an end of turn the server did not cut)."""

from __future__ import annotations

from .. import ir
from .gbnf import char_class, literal
from .request_calls import _Calls
from .request_rules import WS_SPELLED, _join
from .schema import json_rule, json_string_expr


class _ForcedCalls(_Calls):
    """A forced request's calls and what may come right before and after them."""

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


def _holds_calls(node: ir.Node) -> bool:
    """Whether an IR node of the message is, or holds, the call section."""
    if isinstance(node, ir.Ref):
        return node.name in ("tool_calls", "tool_calls_opened")
    if isinstance(node, (ir.Seq, ir.Choice)):
        return any(_holds_calls(n) for n in node.items)
    if isinstance(node, (ir.Repeat, ir.Tolerated, ir.Inline)):
        return _holds_calls(node.item)
    return False


__all__ = ["_ForcedCalls"]
