"""The verified analysis: does the parser read back what the template renders, per capability?

``analysis.verification`` is a :class:`Verification`, one frozen :class:`Capability` per
capability (content, reasoning, one call, parallel calls, content or reasoning before a call,
and each argument type: strings with quotes, unicode and newlines, numbers, booleans, null,
nested objects, arrays): ``verified``, ``failed`` (with the reason and the scenario that
showed it) or ``n/a`` (the template cannot express it).

Verifying means rendering known turns through the template and parsing them back with the
request API, which sits above the analysis. So the analysis holds only a slot
(:class:`VerificationSlot`), and the API layer gives it the function that fills it
(``ChatTemplate.analysis`` gives ``autoparser.selftest``'s run on itself). The slot runs that
function on first use and keeps the record; analyses are cached per template digest, so the
record is too. The slot pickles and copies (deeply) as its record alone, without the function
or the template behind it. Nothing here imports from above :mod:`autoparser.analysis`.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["ARGUMENT_CAPABILITIES", "Capability", "CapabilityStatus", "Verification", "VerificationSlot",
           "verifying"]

CapabilityStatus = Literal["verified", "failed", "n/a"]

#: the argument-type capabilities, each shown by one call whose arguments hold that type
ARGUMENT_CAPABILITIES: tuple[str, ...] = (
    "string arguments", "number arguments", "boolean arguments", "null arguments", "nested object arguments",
    "array arguments")


@dataclass(frozen=True)
class Capability:
    """One capability of the analysis, as the self-test found it."""

    name: str                         # "one call", "string arguments", ...
    status: CapabilityStatus
    scenario: str                     # the self-test scenario that shows it ("tool", "args_strings", ...)
    reason: str = ""                  # why it failed, or why it does not apply
    calls: bool = False               # it is about tool calls ...
    calls_misread: bool = False       # ... and (failed) the calls themselves were read wrong

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "scenario": self.scenario, "reason": self.reason,
                "calls": self.calls, "calls_misread": self.calls_misread}


@dataclass(frozen=True)
class Verification:
    """The self-test as part of the analysis: which capabilities were read back right."""

    capabilities: tuple[Capability, ...] = ()

    def get(self, name: str) -> Capability | None:
        """The capability called ``name``, or shown by the scenario ``name``."""
        return next((c for c in self.capabilities if c.name == name or c.scenario == name), None)

    @property
    def ok(self) -> bool:
        """No capability failed (``n/a`` ones do not count against the template)."""
        return not self.failed

    @property
    def failed(self) -> tuple[Capability, ...]:
        return tuple(c for c in self.capabilities if c.status == "failed")

    @property
    def tool_calls_failed(self) -> tuple[Capability, ...]:
        """Failed capabilities whose calls were read wrong: the parser may return wrong calls.
        (A call scenario whose calls were right but whose text was misread is not one.)"""
        return tuple(c for c in self.failed if c.calls_misread)

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "capabilities": [c.to_dict() for c in self.capabilities]}


_VERIFYING: contextvars.ContextVar[bool] = contextvars.ContextVar("autoparser_verifying", default=False)


@contextlib.contextmanager
def verifying() -> Iterator[None]:
    """While a self-test runs, every slot reads None (its requests get no warning, start no verification)."""
    token = _VERIFYING.set(True)
    try:
        yield
    finally:
        _VERIFYING.reset(token)


class VerificationSlot:
    """A lazily filled :class:`Verification`: the layer above gives the function that computes it.

    ``get`` runs it once (under a lock; another thread waits) and keeps the record. Inside a
    self-test (:func:`verifying`: that function, or a self-test run directly) ``get`` gives None,
    so the self-test's own requests are alike whatever was verified before. An exception propagates and nothing is kept,
    so a later ``get`` tries again.
    """

    def __init__(self, value: Verification | None = None) -> None:
        self._value = value
        self._compute: Callable[[], Verification] | None = None
        self._lock = threading.Lock()

    def give(self, compute: Callable[[], Verification]) -> None:
        """Set the function that computes the record; the first one given is kept (every template
        sharing an analysis renders alike). Once the record is computed the function is dropped."""
        with self._lock:
            if self._value is None and self._compute is None:
                self._compute = compute

    @property
    def computed(self) -> bool:
        return self._value is not None

    def get(self) -> Verification | None:
        """The record, computed on first use; None with nothing to compute it, or while it runs."""
        if _VERIFYING.get():
            return None
        if self._value is not None:
            return self._value
        with self._lock:
            if self._value is not None or self._compute is None:
                return self._value
            with verifying():
                self._value = self._compute()
            self._compute = None     # the record is kept; the template behind it is let go
            return self._value

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle and deep-copy the record only (no function, no template, no lock)."""
        return (VerificationSlot, (self._value,))

    def __repr__(self) -> str:
        return f"VerificationSlot({'computed' if self.computed else 'pending'})"
