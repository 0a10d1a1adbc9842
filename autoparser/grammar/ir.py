"""The grammar IR: one description of what a request's output may be, printed as PEG and GBNF.

:func:`message_grammar` builds it once per request from the :class:`~autoparser.plan.RequestPlan`;
:mod:`.peg` prints it as parsimonious rules (the strict parser), :mod:`.request` prints it as
GBNF (the sampler's grammar). Both printers read the same nodes, so the structure of a turn
(which blocks may or must come, in which order, what ends free text, what follows the calls)
is written down once. The nodes are small and frozen:

* :class:`Lit` exact text; :class:`Marker` a rendered marker, matched whitespace-tolerant
  (:func:`autoparser.markers.pattern`), named by its role;
* :class:`Text` free text up to (not including) one of its ``ends`` (regex sources), with
  ``until`` the literal a GBNF free-text automaton runs to (the end the grammar continues with);
* :class:`Seq`, :class:`Choice`, :class:`Repeat` (``min``/``max``), :class:`Ref` to a named rule;
* :class:`Turn` the end-of-turn markers that may separate parts (a server stops at them: a
  sampler's grammar leaves them out); :class:`End` the end of the output;
* :class:`Tolerated` what the parser accepts but a sampler never generates, :class:`Inline`
  what may be generated but is read as part of the surrounding text;
* leaves a printer expands on its own: :class:`Answer` (a JSON value of a schema, the
  ``response_format`` answer) and :class:`Calls` (the call section of the request's tools: its
  call layouts and argument encodings).

Rule names are the mapper's hooks (``reasoning_text``, ``content_text``, ``tool_calls``...),
so they are part of the contract between this module and the printers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .. import markers as mk
from ..plan import PerPlan, ReasoningPlan, RequestPlan, ToolPlan


@dataclass(frozen=True)
class Lit:
    text: str


@dataclass(frozen=True)
class Marker:
    """A rendered marker (``"\\n</think>\\n\\n"``); whitespace around and inside it is optional."""

    role: str
    text: str

    @property
    def pattern(self) -> str:
        return mk.pattern(self.text)


@dataclass(frozen=True)
class Text:
    """Free text up to one of ``ends`` (regex sources, tried at each position) or the end of output.

    ``avoid`` is a regex the text may not contain (tentative reasoning stops before a call);
    ``until`` is the literal a GBNF printer runs free text up to ("" when it has none).
    """

    role: str
    ends: tuple[str, ...] = ()
    avoid: str = ""
    until: str = ""
    or_end: bool = True      # the end of the output also ends it


@dataclass(frozen=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Choice:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class Repeat:
    item: Node
    min: int = 0
    max: int | None = None


@dataclass(frozen=True)
class Ref:
    name: str


@dataclass(frozen=True)
class Turn:
    """Any number of end-of-turn markers (``stop`` rule); "" in a sampler's grammar."""

    lazy_before: str = ""    # regex: as few as leave this next (the calls' opener)


@dataclass(frozen=True)
class Tolerated:
    """Accepted when parsing, never generated: a sampler's grammar leaves it out (an echoed
    header, a reasoning block the request switched off)."""

    item: Node


@dataclass(frozen=True)
class Inline:
    """Generated, but read as part of the text around it when parsing (reasoning kept inline
    with ``reasoning_format="none"``, a delimiter block the prompt did not open)."""

    item: Node


@dataclass(frozen=True)
class End:
    """The end of the output (whitespace before it allowed)."""


@dataclass(frozen=True)
class Answer:
    """The ``response_format`` answer: a JSON value of ``schema`` (any JSON when None)."""

    schema: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Calls:
    """The calls of ``tools`` (only ``tools.allowed``), with their section and separators."""

    tools: ToolPlan


Node: TypeAlias = Lit | Marker | Text | Seq | Choice | Repeat | Ref | Turn | Tolerated | Inline | End | Answer | Calls
Presence = Literal["required", "optional", "none"]


def opt(node: Node) -> Repeat:
    return Repeat(node, 0, 1)


@dataclass(frozen=True)
class Grammar:
    """Named rules, ``message`` first; ``facts`` are the few choices printers ask about directly."""

    rules: Mapping[str, Node]
    stops: tuple[str, ...] = ()             # end-of-turn markers, longest first (``stop`` rule)
    reasoning: Presence = "none"             # how the reasoning block may appear
    calls: Presence = "none"                 # how the calls may appear
    plan: RequestPlan = field(default_factory=RequestPlan, repr=False)

    def __getitem__(self, name: str) -> Node:
        return self.rules[name]

    def get(self, name: str) -> Node | None:
        return self.rules.get(name)


# ---------------------------------------------------------------- building
class _Builder:
    def __init__(self, plan: RequestPlan) -> None:
        self.plan = plan
        self.rules: dict[str, Node] = {}

    def add(self, name: str, node: Node) -> Ref:
        self.rules.setdefault(name, node)
        return Ref(name)

    def marker(self, role: str, text: str) -> Ref | None:
        return self.add(role, Marker(role, text)) if mk.pattern(text) else None


def _message_grammar(plan: RequestPlan) -> Grammar:
    """The IR of one request's output: ``message = header? reasoning? content (calls content)? end``.

    Turn markers (end of turn, the assistant header) may separate the parts. The reasoning
    block is required when the prompt opened it, optional when the model may open it; a call
    section is required under ``tool_choice`` required or named, optional otherwise, and free
    text may follow it (Gemma 4 and LFM2 render content there).
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
    content = _content(b, plan, calls_tp, stops)
    parts.append(content)
    calls: Presence = "none"
    if calls_tp is not None:
        b.add("tool_calls", Calls(calls_tp))
        between: Node | None = Turn(lazy_before=opener) if stops and opener else None
        after: Node | None = None if plan.answer.json else content
        seq = Seq(tuple(n for n in (between, Ref("tool_calls"), after) if n is not None))
        calls = "required" if calls_tp.forced else "optional"
        parts.append(seq if calls == "required" else opt(seq))
    parts.append(b.add("end", Seq((Turn(), End())) if stops else End()))
    rules = {"message": Seq(tuple(parts)), **b.rules}
    return Grammar(rules=rules, stops=stops, reasoning=presence, calls=calls, plan=plan)


#: The IR of a request, built once per plan: the PEG and the GBNF printers share it.
message_grammar: PerPlan[Grammar] = PerPlan(_message_grammar)


def stop_markers(plan: RequestPlan, calls: ToolPlan | None) -> tuple[str, ...]:
    """Markers that end a turn, longest first: end of turn, EOS, the assistant header, and a
    section end with no section start (Gemma 4's ``<|tool_response>``)."""
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
    start, end = mk.pattern(r.start), mk.pattern(r.end)
    if not end or not r.end.strip():
        return "none", None
    stops = [opener] if opener else []
    if r.unopened:   # as the engine: a call, the opener or an answer wrapper before the close ends the hold
        stops += [mk.pattern(m) for m in (r.start, *answer_markers) if m.strip()]
    avoid = "|".join(stops) if (r.tentative or r.unopened) and stops else ""
    text = b.add("reasoning_text", Text("reasoning_text", ends=(end,), avoid=avoid,
                                        until=mk.tokens(r.end)[0], or_end=False))
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
    # a bare close stands for an empty block (MiniMax-M3 renders "</mm:think>" + content), and where the
    # model may skip the opener any text before a close is reasoning: read, not generated
    skipped: Node = Seq((text, close)) if r.unopened else close
    b.add("reasoning", Choice((Seq((opening, text, close)), Tolerated(skipped))))
    if r.extract:
        return "optional", opt(Ref("reasoning"))
    if r.strip_stray:
        return "optional", Tolerated(opt(Ref("reasoning")))
    return "none", Inline(opt(Ref("reasoning")))


def _content(b: _Builder, plan: RequestPlan, calls: ToolPlan | None, stops: tuple[str, ...]) -> Node:
    """``content``: free text up to the calls or a turn marker (or a JSON answer), maybe wrapped."""
    r, c = plan.reasoning, plan.content
    opener = calls.opener.pattern if calls is not None else ""
    ends = [mk.pattern(s) for s in stops]
    if opener:
        ends.insert(0, opener)
    start_src, end_src = mk.pattern(r.start), mk.pattern(r.end)
    if r.extract and start_src:
        ends.append(start_src)          # reasoning comes first or not at all
    if end_src and (r.extract or (r.strip_stray and start_src)):
        ends.append(end_src)            # nor does a stray close
    start = b.marker("content_start", c.start) if c.start.strip() else None
    close = b.marker("content_end", c.end) if c.end.strip() else None
    # an answer before calls may have its own wrapper (harmony's commentary preamble)
    extra = [m for m in c.markers if m.strip()]
    p_start = b.marker("preamble_start", extra[0]) if extra else None
    p_close = b.marker("preamble_end", extra[1]) if len(extra) > 1 else None
    if p_close is not None:
        ends.insert(0, mk.pattern(extra[1]))
    if plan.answer.json:
        answer = b.add("answer", Answer(plan.answer.schema))
        if start is not None:
            wrapped = Seq(tuple(n for n in (start, answer, close) if n is not None))
            node: Node = b.add("content", Choice((wrapped, answer)))
        else:
            node = answer
        return opt(node) if calls is not None else node
    if close is not None:
        ends.insert(0, mk.pattern(c.end))
    until = calls.opener.exact if calls is not None else ""
    text = b.add("content_text", Text("content_text", ends=tuple(ends), until=until))
    wrapped_forms = [Seq(tuple(n for n in (s, text, opt(e) if e is not None else None) if n is not None))
                     for s, e in ((start, close), (p_start, p_close)) if s is not None]
    if not wrapped_forms:
        return text
    return b.add("content", Choice((*wrapped_forms, text)))


__all__ = ["Answer", "Calls", "Choice", "End", "Grammar", "Inline", "Lit", "Marker", "Node", "Ref", "Repeat", "Seq",
           "Text", "Tolerated", "Turn", "message_grammar", "stop_markers"]
