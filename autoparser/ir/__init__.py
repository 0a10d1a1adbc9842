"""The grammar IR: one description of a request's output, read by the engine, the PEG and the GBNF."""

from .build import message_grammar, stop_markers
from .nodes import (
    Answer,
    Begins,
    Calls,
    Choice,
    End,
    Envelope,
    Grammar,
    Inline,
    Lit,
    Marker,
    Node,
    Pattern,
    Presence,
    Ref,
    Repeat,
    Seq,
    Stop,
    Text,
    Tolerated,
    Turn,
    opt,
)
from .trigger import Trigger

__all__ = ["Answer", "Begins", "Calls", "Choice", "End", "Envelope", "Grammar", "Inline", "Lit", "Marker", "Node", "Pattern",
           "Presence", "Ref", "Repeat", "Seq", "Stop", "Text", "Tolerated", "Trigger", "Turn", "message_grammar", "opt",
           "stop_markers"]
