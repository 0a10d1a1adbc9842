"""The call guard: every parsed call checked against the request's tools before a server runs it.

A call whose name is not one of the request's tools, or whose arguments are not a JSON object
that follows the tool's ``parameters`` schema, keeps its text but is marked:
``ToolCall.invalid`` holds the reason and the message gets a warning. Objects that declare
``properties`` take no other keys unless ``additionalProperties`` allows them (as the GBNF).

Schemas are compiled once per request plan (plans with the same tools share them, ``PerPlan``)
into small validation closures (:mod:`autoparser.values.validate`: no code is generated or
evaluated, nothing is retrieved). ``apply()`` has already refused every schema that could make a
check unsafe (:mod:`autoparser.values.schemas`); the pattern searches of one message's calls share
one time budget (:class:`~autoparser.values.patterns.Deadline`), and a value that cannot be checked
in it marks the call instead of holding the parse.

The request's own rules are checked here too: a call to a function other than the one a named
``tool_choice`` asks for, and every call after the first when ``parallel_tool_calls`` is false, are
marked; a message with no call when ``tool_choice`` requires one gets a warning
(:func:`request_warnings`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, cast

from ..plan import PerPlan, RequestPlan, named_tool
from ..values.argfit import ArgsFit
from ..values.patterns import Deadline
from ..values.validate import Check, compile_schema, schema_check
from .message import ToolCall


class CallGuard:
    """The checks of one request plan's tools (built once per plan, shared by its parses and by later
    plans with the same output key: it holds the tools' names and schemas, not the plan)."""

    def __init__(self, plan: RequestPlan) -> None:
        tp = plan.tools
        self.names = frozenset(tp.names) if tp is not None else frozenset()
        self._schemas = tp.schemas if tp is not None else {}
        self._checks: dict[str, Check] = {}
        self._fits: dict[str, ArgsFit | None] = {}

    def _check_for(self, name: str) -> Check:
        check = self._checks.get(name)
        if check is None:
            schema = self._schemas.get(name) or {}
            try:
                check = schema_check(schema)
            except (ValueError, TypeError, RecursionError) as e:   # a schema apply() did not see
                why = f": the tool's schema cannot be checked ({type(e).__name__})"
                check = _refuse(why)
            self._checks[name] = check
        return check

    def fit_for(self, name: str) -> ArgsFit | None:
        """What tool ``name``'s schema says about arguments written in another shape (None when the
        tool is not declared or its schema reshapes nothing)."""
        known = self._fits.get(name, _UNSET)
        if known is not _UNSET:
            return cast("ArgsFit | None", known)
        fit: ArgsFit | None = None
        if name in self.names:
            check = self._check_for(name)
            fit = ArgsFit(self._schemas.get(name) or {}, lambda value: check(value, Deadline()) is None)
            fit = fit if fit.active else None
        self._fits[name] = fit
        return fit

    def reason(self, name: str, arguments: str, value: Any = None, deadline: Deadline | None = None) -> str | None:
        """Why the call may not be run, or None when it fits the request's tools; ``value`` is
        ``arguments`` decoded already (None: decoded here); ``deadline`` bounds the pattern searches
        (shared by the calls of one message; default: a fresh one)."""
        if self.names and name not in self.names:
            return f"function {name!r} is not one of the request's tools"
        if value is not None:
            args = value
        else:
            try:
                args = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                return "arguments are not valid JSON"
            except RecursionError:
                return "arguments are nested too deeply to check"
        if not isinstance(args, dict):
            return "arguments are not a JSON object"
        if not self.names:
            return None
        try:
            reason = (self._checks.get(name) or self._check_for(name))(args, deadline or Deadline())
        except RecursionError:
            return "arguments are nested too deeply to check"
        return "arguments" + reason if reason else None


_UNSET: Any = object()


def _refuse(why: str) -> Check:
    return lambda v, d: why


#: The plan's guard, built on first use (shared by plans with the same output key).
guard_for: PerPlan[CallGuard] = PerPlan(CallGuard, shared=True)


def choice_reason(plan: RequestPlan, index: int, call: ToolCall) -> str | None:
    """Why call ``index`` breaks the request's ``tool_choice`` or ``parallel_tool_calls``, or None."""
    tp = plan.tools
    if tp is None:
        return None
    wanted = named_tool(plan.options.tool_choice)
    if wanted is not None and call.name != wanted:
        return f"tool_choice asks for function {wanted!r}, not {call.name!r}"
    if index > 0 and not tp.parallel:
        return f"parallel_tool_calls is false: call {index} follows the first"
    return None


def request_warnings(plan: RequestPlan, calls: Sequence[ToolCall]) -> list[str]:
    """Warnings for the message as a whole: no call although ``tool_choice`` requires one."""
    tp = plan.tools
    if tp is None or not tp.forced or calls:
        return []
    choice = plan.options.tool_choice
    asked = f"function {named_tool(choice)!r}" if named_tool(choice) else "a call (tool_choice 'required')"
    return [f"the output holds no tool call, but the request asks for {asked}"]


def check_calls(plan: RequestPlan, calls: Sequence[ToolCall], values: Callable[[int], Any],
                guard: CallGuard | None = None) -> list[str]:
    """Mark every call that may not be run (``ToolCall.invalid``) and return the message's warnings:
    one per marked call, and :func:`request_warnings`. ``values(i)`` is call ``i``'s arguments
    decoded already, or None; ``guard`` is the plan's (:data:`guard_for`; looked up when not given).
    The pattern searches of all the calls share one :class:`Deadline`."""
    guard = guard or guard_for(plan)
    deadline = Deadline()
    out = []
    for i, call in enumerate(calls):
        call.invalid = choice_reason(plan, i, call) or guard.reason(call.name, call.arguments, values(i), deadline)
        if call.invalid:
            out.append(f"tool call {i} ({call.name}) does not fit the request's tools: {call.invalid}")
    return out + request_warnings(plan, calls)


__all__ = ["CallGuard", "check_calls", "choice_reason", "compile_schema", "guard_for", "request_warnings"]
