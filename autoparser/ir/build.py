"""The grammar IR of one request: what its output may be, read by the engine, the PEG and the GBNF.

:func:`message_grammar` builds it once per request from the :class:`~autoparser.plan.RequestPlan`;
:mod:`autoparser.grammar.peg` prints it as parsimonious rules (the strict parser),
:mod:`autoparser.grammar.request` prints it as GBNF (the sampler's grammar) and
:mod:`autoparser.runtime.engine` compiles its state machine's patterns from it. So the structure
of a turn (which blocks may or must come, in which order, what ends free text, where the calls
open and what follows them) is written down once. The node types are in :mod:`.nodes`; what
ends free answer text, with what only the tolerant engine reads, is :mod:`.stops`.

Rule names are the mapper's hooks (``reasoning_text``, ``content_text``, ``tool_calls``...),
so they are part of the contract between this module and its readers.
"""

from __future__ import annotations

from .. import markers as mk
from ..plan import PerPlan, ReasoningPlan, RequestPlan, ToolPlan
from .nodes import (
    Answer,
    Begins,
    Calls,
    Choice,
    End,
    Envelope,
    Grammar,
    Inline,
    Marker,
    Node,
    Presence,
    Ref,
    Seq,
    Stop,
    Text,
    Tolerated,
    Turn,
    opt,
)
from .stops import answer_start_rest, call_marker, content_stops, split_header


# ---------------------------------------------------------------- building
class _Builder:
    def __init__(self, plan: RequestPlan) -> None:
        self.plan = plan
        self.rules: dict[str, Node] = {}

    def add(self, name: str, node: Node) -> Ref:
        self.rules.setdefault(name, node)
        return Ref(name)

    def marker(self, role: str, text: str) -> Ref | None:
        node = Marker(role, text)
        return self.add(role, node) if node.pattern else None


def _message_grammar(plan: RequestPlan) -> Grammar:
    """The IR of one request's output: ``message = header? reasoning? content (calls content)? end``.

    Turn markers (end of turn, the assistant header) may separate the parts. The reasoning
    block is required when the prompt opened it, optional when the model may open it; a call
    section is required under ``tool_choice`` required or named, optional otherwise, and free
    text may follow it (some templates render content there). Where the prompt wrote a call's
    start (:attr:`RequestPlan.prompt_opened`), the output may instead begin inside that call
    (``tool_calls_opened``), and an answer may begin with the rest of its start marker.
    """
    b = _Builder(plan)
    r, tp, pre = plan.reasoning, plan.tools, plan.prefill
    calls_tp = tp if tp is not None and tp.allowed else None
    stops = stop_markers(plan, calls_tp)
    turn: Node | None = Turn() if stops else None
    parts: list[Node] = []
    if plan.assistant_header.strip() and not r.open_at_start and not pre.content:
        header = b.marker("assistant_header", plan.assistant_header)
        if header is not None:
            parts.append(Tolerated(opt(header)))
    opener = calls_tp.opener.pattern if calls_tp is not None else ""
    presence: Presence = "none"
    if not pre.content:
        presence, block = _reasoning(b, r, opener, (plan.content.start, *plan.content.markers))
        if block is not None:
            parts.append(block)
            if turn is not None and presence != "none":
                parts.append(turn)
    free = content_stops(plan)
    content = _content(b, plan, calls_tp, free, stops)
    first = _opened_content(b, plan, content)
    calls: Presence = "none"
    if calls_tp is None:
        parts.append(first)
    else:
        b.add("tool_calls", Calls(calls_tp))
        between: Node | None = Turn(lazy_before=opener) if stops and opener else None
        # free text may follow the calls, after turn markers too (an answer rendered after the calls'
        # end of turn and a new assistant header)
        after: tuple[Node, ...] = () if plan.answer.json else (Turn(), content) if stops else (content,)
        seq = Seq(tuple(n for n in (between, Ref("tool_calls"), *after) if n is not None))
        calls = "required" if calls_tp.forced else "optional"
        answer = (first, seq if calls == "required" else opt(seq))
        if plan.prompt_opened:
            # the prompt wrote a call's start: the output begins with the call's name, or is an answer
            opened = b.add("tool_calls_opened", Calls(calls_tp, opened=True))
            parts.append(Choice((Seq((opened, *after)), Seq(answer))))
        else:
            parts.extend(answer)
    if presence == "optional" and r.extract:
        # a block written after the answer or the calls (a closing rationale) is read there too
        parts.append(Tolerated(opt(Ref("reasoning"))))
    parts.append(b.add("end", Seq((Turn(), End())) if stops else End()))
    _engine_rules(b, plan)
    env = plan.analysis.envelope
    if env is not None:
        b.add("envelope", Envelope(env.reasoning_key, env.content_key, env.calls_key, env.call))
    rules = {"message": Seq(tuple(parts)), **b.rules}
    return Grammar(rules=rules, stops=stops, reasoning=presence, calls=calls, content_stops=free,
                   server_stops=plan.stops, begins=_begins(plan))


#: The IR of a request, built once per plan: the engine, the PEG and the GBNF printers share it.
#: Weakly keyed by the plan (plans hash by identity) and holding nothing that refers to it, so that
#: later plans with the same output key share it too.
message_grammar: PerPlan[Grammar] = PerPlan(_message_grammar, shared=True)


def _engine_rules(b: _Builder, plan: RequestPlan) -> None:
    """Rules only the tolerant engine reads (``message`` does not reach them): the reasoning
    markers it also finds where the grammar has no block (a reopened block, a close with no open),
    the marker that opens calls in this format even when the request declares no tools (it ends a
    reasoning block never closed), the header and end of a message to another recipient."""
    r, c = plan.reasoning, plan.content
    if r.start.strip():
        b.marker("reasoning_start", r.start)
    if r.end.strip():
        b.marker("reasoning_end", r.end)
    calls = call_marker(plan)
    if calls is not None:
        b.add("call_marker", calls)
    _, header = split_header(c.aside_start)
    if header.strip():
        b.marker("aside_header", header)
    if c.aside_end.strip():
        b.marker("aside_end", c.aside_end)


def _begins(plan: RequestPlan) -> Begins:
    """Where the output begins: ``reasoning`` (the prompt opened the block), ``tentative``
    (reasoning only if its end marker comes) or ``content``."""
    r = plan.reasoning
    if r.open_at_start and r.extract:
        return "tentative" if r.tentative else "reasoning"
    return "tentative" if r.unopened else "content"


# the strict parser's content ends, in the order it prints them (the order does not change a lookahead)
_RANK = {"content_end": 0, "preamble_end": 1, "calls_opener": 2, "stop": 3, "section_end": 3,
         "reasoning_start": 4, "reasoning_end": 5}
_TURN = 3


def _strict_ends(free: tuple[Stop, ...], stops: tuple[str, ...]) -> tuple[str, ...]:
    """Where the strict parser's free content ends: the ``strict`` content stops (turn markers once
    each, as the ``stop`` rule orders them)."""
    groups: list[list[str]] = [[] for _ in range(6)]
    turn: dict[str, str] = {}
    for s in free:
        if not s.strict:
            continue
        group = _RANK[s.node.role]
        if group == _TURN:
            turn.setdefault(s.node.text if isinstance(s.node, Marker) else s.node.source, s.node.pattern)
        else:
            groups[group].append(s.node.pattern)
    groups[_TURN] = [turn[m] for m in sorted(turn, key=lambda m: stops.index(m) if m in stops else len(stops))]
    return tuple(src for group in groups for src in group)


def stop_markers(plan: RequestPlan, calls: ToolPlan | None) -> tuple[str, ...]:
    """Markers that end a turn, longest first: end of turn, EOS, the assistant header, and a
    section end with no section start (``<|tool_response>``)."""
    markers = list(plan.recognised)
    t = calls.format if calls is not None else None
    if t is not None and t.section_end.strip() and not t.section_start.strip():
        markers.append(t.section_end)
    ordered = sorted(dict.fromkeys(markers), key=len, reverse=True)
    return tuple(m for m in ordered if mk.pattern(m))


def _reasoning(b: _Builder, r: ReasoningPlan, opener: str, answer_markers: tuple[str, ...] = ()
               ) -> tuple[Presence, Node | None]:
    """``reasoning``: required when the prompt opened the block, else optional; and how it is read.

    Extracted, it is its own part of the message. With reasoning switched off the engine drops
    the markers of a block the model opens anyway (PRE.6) and keeps its text as content: the
    parser tolerates it, a sampler does not generate it. Kept inline (``reasoning_format``
    "none", or a delimiter-only block the prompt did not open) it may be generated and is read
    as content. Delimiter-only reasoning is tentative: reasoning only if its end comes before
    the calls.
    """
    start, end = Marker("reasoning_start", r.start).pattern, Marker("reasoning_end", r.end).pattern
    if not end:
        return "none", None
    stops = [opener] if opener else []
    if r.unopened:   # as the engine: a call, the opener or an answer wrapper before the close ends the hold
        stops += [s for s in (start, *(mk.pattern(m) for m in answer_markers if m.strip())) if s]
    avoid = "|".join(stops) if (r.tentative or r.unopened) and stops else ""
    # a block closed by the answer's own opener (``Thought: R\nAnswer: ``): a call's opener ends it too
    answer_start = answer_markers[0].strip() if answer_markers else ""
    by_call = bool(opener) and bool(answer_start) and r.end.strip().endswith(answer_start)
    text = b.add("reasoning_text", Text("reasoning_text", ends=(end, opener) if by_call else (end,), avoid=avoid,
                                        until=(mk.tokens(r.end) or [r.end])[0], or_end=False))
    close = b.marker("reasoning_end", r.end)
    assert close is not None
    if r.open_at_start:
        # a delimiter-only format may skip its reasoning; a prefilled tag must be closed
        b.add("reasoning", Seq((text, close)))
        presence: Presence = "required" if start else "optional"
        block: Node = Ref("reasoning") if presence == "required" else opt(Ref("reasoning"))
        return (presence, block) if r.extract else ("none", Inline(block))
    if r.off and not r.strip_stray:
        return "none", None
    if not start:
        b.add("reasoning", Seq((text, close)))
        return "none", Inline(opt(Ref("reasoning")))
    opening = b.marker("reasoning_start", r.start)
    assert opening is not None
    # a bare close stands for an empty block (a template that renders "</mm:think>" + content), and where the
    # model may skip the opener any text before a close is reasoning: read, not generated
    skipped: tuple[Node, ...] = (Tolerated(Seq((text, close)) if r.unopened else close),) if r.end.strip() else ()
    before_call = (Tolerated(Seq((opening, text))),) if by_call else ()
    b.add("reasoning", Choice((Seq((opening, text, close)), *before_call, *skipped)))
    if r.extract:
        return "optional", opt(Ref("reasoning"))
    if r.strip_stray:
        return "optional", Tolerated(opt(Ref("reasoning")))
    return "none", Inline(opt(Ref("reasoning")))


def _opened_content(b: _Builder, plan: RequestPlan, content: Node) -> Node:
    """The answer at the start of the output: after a call start the prompt wrote (``>>>``), the rest of
    an answer start that begins with it (``all``) may come first; else ``content``."""
    rest = answer_start_rest(plan) if not plan.answer.json else None
    if rest is None:
        return content
    marker = b.add(rest.role, rest)
    return b.add("opened_content", Choice((Seq((marker, Ref("content_text"))), content)))


def _content(b: _Builder, plan: RequestPlan, calls: ToolPlan | None, free: tuple[Stop, ...],
             stops: tuple[str, ...]) -> Node:
    """``content``: free text up to its strict stops (the calls, a turn marker, a reasoning marker:
    reasoning comes first or not at all, nor does a stray close) or a JSON answer, maybe wrapped."""
    c = plan.content
    start = b.marker("content_start", c.start) if c.start.strip() else None
    close = b.marker("content_end", c.end) if c.end.strip() else None
    # an answer before calls may have its own wrapper (a channel format's commentary preamble)
    extra = [m for m in c.markers if m.strip()]
    p_start = b.marker("preamble_start", extra[0]) if extra else None
    p_close = b.marker("preamble_end", extra[1]) if len(extra) > 1 else None
    if plan.answer.json:
        answer = b.add("answer", Answer(plan.answer.schema))
        if start is not None:
            wrapped = Seq(tuple(n for n in (start, answer, close) if n is not None))
            node: Node = b.add("content", Choice((wrapped, answer)))
        else:
            node = answer
        return opt(node) if calls is not None else node
    until = calls.opener.exact if calls is not None else ""
    text = b.add("content_text", Text("content_text", ends=_strict_ends(free, stops), until=until))
    wrapped_forms = [Seq(tuple(n for n in (s, text, opt(e) if e is not None else None) if n is not None))
                     for s, e in ((start, close), (p_start, p_close)) if s is not None]
    if not wrapped_forms:
        return text
    return b.add("content", Choice((*wrapped_forms, text)))


__all__ = ["message_grammar", "stop_markers"]
