"""The probe turns a call's layout is learned from (:mod:`.learn`), normalised: names and ids replaced
by sentinels, each turn cut after the generation prompt."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RenderArgs = Callable[[dict[str, Any]], "str | None"]


@dataclass(frozen=True)
class Renders:
    """The normalised probe turns (None: the template refused that render)."""

    one: str
    two: str | None
    zero: str | None
    two_args: str | None
    reversed_args: str | None
    typed: str | None
    values: str | None
    base: int
    render: RenderArgs | None = None     # renders a call with these arguments (the probe tools declared)
    column_texts: dict[str, str] = field(default_factory=dict)   # columns: each probe value's text alone


__all__ = ["RenderArgs", "Renders"]
