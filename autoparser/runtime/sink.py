"""What a call reader writes to: the engine's side of the call readers' contract.

:mod:`.calls` reads one tool call at a time and reports what it finds through this
protocol; :class:`~autoparser.runtime.engine.Engine` implements it. Keeping the
contract here lets the readers and the engine depend on it instead of on each other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import regex

from ..plan import RequestPlan
from .message import Message


class CallSink(Protocol):
    """The engine as the call readers see it."""

    plan: RequestPlan                 # the request the output answers
    buf: str                          # all output received so far
    pos: int                          # where the engine has consumed up to
    msg: Message                      # the message being built

    @property
    def section_end(self) -> regex.Pattern[str] | None:
        """The compiled end marker of a call section (None when the format has none)."""

    def call_header(self, name: str, call_id: str) -> int:
        """A call's name (and id) is known: announce it; returns the call's index."""

    def call_args(self, index: int, fragment: str) -> None:
        """A piece of call ``index``'s JSON arguments."""

    def has_args(self, index: int) -> bool:
        """Whether any argument text of call ``index`` was sent."""

    def emit_content(self, text: str, raw: bool = False) -> None:
        """Text that turned out to be content after all."""

    def warn(self, text: str, malformed: bool = True) -> None:
        """Flag a repair on the message."""

    def schema(self, name: str) -> Mapping[str, Any]:
        """The parameters schema of tool ``name`` ({} when unknown)."""
