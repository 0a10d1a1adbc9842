"""The IR's node types and the :class:`Grammar` that holds one request's rules.

* :class:`Lit` exact text; :class:`Marker` a rendered marker, matched whitespace-tolerant
  (:func:`autoparser.markers.pattern`), named by its role; :class:`Pattern` a regex terminal
  (a call opener with its lookahead);
* :class:`Text` free text up to (not including) one of its ``ends`` (regex sources), with
  ``until`` the literal a GBNF free-text automaton runs to (the end the grammar continues with);
* :class:`Seq`, :class:`Choice`, :class:`Repeat` (``min``/``max``), :class:`Ref` to a named rule;
* :class:`Turn` the end-of-turn markers that may separate parts (a server stops at them: a
  sampler's grammar leaves them out); :class:`End` the end of the output;
* :class:`Tolerated` what the parser accepts but a sampler never generates, :class:`Inline`
  what may be generated but is read as part of the surrounding text;
* leaves a consumer expands on its own: :class:`Answer` (a JSON value of a schema, the
  ``response_format`` answer) and :class:`Calls` (the call section of the request's tools: its
  call layouts and argument encodings, where the calls open, the lazy grammar's trigger);
* :class:`Stop` one place where free answer text ends, as the tolerant engine reads it: the
  marker, the engine's regex for it and whether the strict parser's text ends there too.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from .. import markers as mk
from ..analysis.model import JsonLayout
from ..plan import ToolPlan
from .trigger import Trigger, trigger


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
        if self.role in ("reasoning_start", "reasoning_end"):   # a label only where a line begins; a blank line
            return mk.block_pattern(self.text, opener=self.role == "reasoning_start")
        return mk.pattern(self.text)


@dataclass(frozen=True)
class Pattern:
    """A regex terminal (``source``) with a role: where calls open (a marker and the lookahead that
    keeps prose from opening them, or a marker-less start such as ``{"name":``)."""

    role: str
    source: str
    text: str = ""    # the literal it matches, when it stands for one (what a GBNF spells out)

    @property
    def pattern(self) -> str:
        return self.source


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
    """The calls of ``tools`` (only ``tools.allowed``), with their section and separators.

    ``opened``: the prompt already wrote the first call's start (a bare ``>>>``), so the
    first call begins with what follows it (its name).
    """

    tools: ToolPlan
    opened: bool = False

    @functools.cached_property
    def trigger(self) -> Trigger:
        """Where the calls begin for a lazy grammar (made when first asked for)."""
        return trigger(self.tools)


@dataclass(frozen=True)
class Envelope:
    """The whole turn is one JSON object (:class:`~autoparser.analysis.model.EnvelopeFormat`): the
    members under ``reasoning_key`` and ``content_key`` are JSON strings, the one under ``calls_key``
    the array the ``tool_calls`` rule's calls are written in. The engine walks it, the PEG prints
    it as an object of those members; the GBNF constrains its calls only (the ``tool_calls`` rule,
    whose section is the member's key through the array's brackets), the reply and reasoning
    members before them are free text to it."""

    reasoning_key: str = ""
    content_key: str = ""
    calls_key: str = ""
    layout: JsonLayout | None = None


Node: TypeAlias = Lit | Marker | Pattern | Text | Seq | Choice | Repeat | Ref | Turn | Tolerated | Inline | End \
    | Answer | Calls | Envelope
Presence = Literal["required", "optional", "none"]
Begins = Literal["reasoning", "tentative", "content"]


@dataclass(frozen=True)
class Stop:
    """Where free answer text ends, as the tolerant engine reads it.

    ``kind`` is what the engine does there (its match group: ``rstart`` opens reasoning, ``t...``
    opens calls, ``cwrap...`` and ``stop...`` are dropped wrappers and turn markers, ``rend`` a
    close with no open...); ``node`` the marker or pattern; ``source`` the engine's regex for it
    (with the tolerance the engine adds: an optional label, ``\\A`` for what only begins the
    output, a word end); ``strict``: the strict parser's free text ends there too (else it reads
    the marker as text).
    """

    kind: str
    node: Marker | Pattern
    source: str
    strict: bool = False


def opt(node: Node) -> Repeat:
    return Repeat(node, 0, 1)


@dataclass(frozen=True)
class Grammar:
    """Named rules, ``message`` first, and the facts every consumer reads the same way.

    Rules that ``message`` does not reach are read by the tolerant engine only (``call_marker``,
    ``aside_header``, ``aside_end``). No field refers to the plan: a per-plan cache of grammars
    does not keep plans alive.
    """

    rules: Mapping[str, Node]
    stops: tuple[str, ...] = ()             # end-of-turn markers, longest first (``stop`` rule)
    reasoning: Presence = "none"             # how the reasoning block may appear
    calls: Presence = "none"                 # how the calls may appear
    content_stops: tuple[Stop, ...] = ()     # what ends free answer text, in the engine's order
    server_stops: tuple[str, ...] = ()       # end of turn and EOS: a server stops there
    begins: Begins = "content"               # where the output begins

    def __getitem__(self, name: str) -> Node:
        return self.rules[name]

    def get(self, name: str) -> Node | None:
        return self.rules.get(name)

    def closing(self, marker: str) -> tuple[str, str]:
        """(a closing marker without the end-of-turn markers it ends with, those markers).

        A server stops at an end of turn, so output may end before them: a grammar cannot require them.
        """
        stops = [s.strip() for s in self.server_stops if s.strip()]
        head = marker.rstrip()
        while True:
            stop = next((s for s in stops if head.endswith(s)), None)
            if stop is None:
                return head, marker[len(head):]
            head = head[: len(head) - len(stop)].rstrip()

    @property
    def envelope(self) -> Envelope | None:
        """The turn's JSON envelope (None for a turn framed by markers)."""
        node = self.rules.get("envelope")
        return node if isinstance(node, Envelope) else None

    @property
    def tool_calls(self) -> Calls | None:
        """The call section (None when this request has no calls)."""
        node = self.rules.get("tool_calls")
        return node if isinstance(node, Calls) else None


__all__ = ["Answer", "Begins", "Calls", "Choice", "End", "Envelope", "Grammar", "Inline", "Lit", "Marker", "Node", "Pattern",
           "Presence", "Ref", "Repeat", "Seq", "Stop", "Text", "Tolerated", "Trigger", "Turn", "opt"]
