"""Render limits and the budget of the render in progress.

:class:`RenderLimits` bounds one render. A compiled template runs under many
renders, so every check reads the render in progress (its deadline, limits and
the work spent so far) from a context variable, :data:`STATE`, which
:func:`~autoparser.render.runtime.render_limited` sets. Outside a render the
checks apply the default limits and no deadline.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Mapping
from dataclasses import dataclass

from ..errors import TemplateLimitError


@dataclass(frozen=True)
class RenderLimits:
    """Bounds for one render. Defaults suit every real template seen so far."""

    timeout_s: float = 2.0          # wall-clock seconds per render
    max_output: int = 2_000_000     # characters of output, and of any single string or container built
    max_range: int = 100_000        # largest range() a template may ask for (jinja's own MAX_RANGE)

    @property
    def max_work(self) -> int:
        """Characters and items one render may build in total (32 outputs' worth)."""
        return 32 * self.max_output


DEFAULT_LIMITS = RenderLimits()
MAX_DEPTH = 256                     # nesting depth of a container the template prints
MAX_INT_BITS = 100_000              # size of an integer `*` or `**` may build
MAX_STRIPTAGS_WORK = 200_000_000    # markupsafe's striptags is quadratic in the number of tags


@dataclass
class RenderState:
    """The render in progress: its deadline, limits, the caller's containers and the work spent."""

    deadline: float
    limits: RenderLimits
    inputs: Mapping[int, int]       # id -> weight of every container the caller passed
    work: int = 0


STATE: contextvars.ContextVar[RenderState | None] = contextvars.ContextVar("autoparser_render", default=None)


def limit_error(message: str) -> TemplateLimitError:
    """The error a limit raises (the renderer adds the template's name and line)."""
    return TemplateLimitError(message, phase="render")


def timeout(state: RenderState) -> TemplateLimitError:
    """The error of a render past its deadline."""
    return limit_error(f"render exceeded {state.limits.timeout_s:g} s")


def check_deadline() -> None:
    """Raise when the render in progress is past its deadline."""
    state = STATE.get()
    if state is not None and time.monotonic() > state.deadline:
        raise timeout(state)


def limits_of(state: RenderState | None) -> RenderLimits:
    """The limits of ``state``, or the defaults outside a render."""
    return state.limits if state is not None else DEFAULT_LIMITS


def cap() -> int:
    """The size limit of the render in progress."""
    return limits_of(STATE.get()).max_output


def refuse_size(size: int, limit: int, what: str) -> None:
    """Raise when ``what`` would be ``size`` characters or items long, past ``limit``."""
    if size > limit:
        raise limit_error(f"{what} would be {size} characters or items long (limit {limit})")


def charge(state: RenderState | None, n: int) -> None:
    """Count ``n`` characters or items built towards the render's work budget."""
    if state is None:
        return
    state.work += n
    if state.work > state.limits.max_work:
        raise limit_error(f"render built more than {state.limits.max_work} characters in total")
