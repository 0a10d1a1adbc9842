"""Readers run as named phases: one method per phase, each saying where to go on."""

from __future__ import annotations

from collections.abc import Callable


class Phases:
    """``step`` runs ``self._<phase>(buf, pos, final)`` until one returns a status other than
    ``"next"`` (a phase that returns ``"next"`` has set the phase to go on with)."""

    phase: str

    def step(self, buf: str, pos: int, final: bool) -> tuple[str, int]:
        """("more", pos) to wait for text, ("done" | "bad", pos) where the reader stopped."""
        while True:
            handler: Callable[[str, int, bool], tuple[str, int]] = getattr(self, "_" + self.phase)
            status, pos = handler(buf, pos, final)
            if status != "next":
                return status, pos


__all__ = ["Phases"]
