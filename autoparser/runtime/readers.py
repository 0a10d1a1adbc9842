"""The call reader for a tool format: one per call, by the format's style."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .calls import CallReader
from .jsoncall import JsonCallReader
from .layout import LayoutCallReader
from .tagged import TaggedCallReader

if TYPE_CHECKING:
    from ..analysis.model import ToolFormat
    from .sink import CallSink as Engine

__all__ = ["make_call_reader"]


def make_call_reader(engine: Engine, fmt: ToolFormat) -> CallReader:
    """A reader of one call written in ``fmt``: JSON call objects, a call layout, or the tagged reader
    (the styles a layout does not describe)."""
    if fmt.style == "json":
        return JsonCallReader(engine, fmt)
    if fmt.style == "layout":
        return LayoutCallReader(engine, fmt)
    return TaggedCallReader(engine, fmt)
