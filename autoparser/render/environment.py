"""The sandboxed Jinja environment chat templates render in.

It reproduces Hugging Face transformers' environment (``trim_blocks``,
``lstrip_blocks``, ``loopcontrols``, ``{% generation %}``, ``tojson`` without
HTML escaping, ``raise_exception``, ``strftime_now``) inside jinja2's sandbox,
and adds what transformers lacks:

* a time budget, checked on every attribute access, call and loop step;
* an output budget, checked while the template output is generated and on
  string/list multiplication;
* llama.cpp compatibility: containers the template builds itself may be
  mutated (``ns.items.append(x)``), while the caller's inputs stay immutable.
"""

from __future__ import annotations

import contextvars
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment, modifies_known_mutable

from ..errors import TemplateLimitError


@dataclass(frozen=True)
class RenderLimits:
    """Bounds for one render. Defaults suit every real template seen so far."""

    timeout_s: float = 2.0          # wall-clock seconds per render
    max_output: int = 2_000_000     # characters of output (and of any single string built)
    max_range: int = 100_000        # largest range() a template may ask for


@dataclass
class _RenderState:
    deadline: float
    limits: RenderLimits
    input_ids: frozenset[int]


_STATE: contextvars.ContextVar[_RenderState | None] = contextvars.ContextVar("autoparser_render", default=None)


def _check_deadline() -> None:
    state = _STATE.get()
    if state is not None and time.monotonic() > state.deadline:
        raise TemplateLimitError(f"render exceeded {state.limits.timeout_s:g} s", phase="render")


def tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
           separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    """transformers' ``tojson``: no HTML escaping, keys kept in order."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _now() -> datetime:
    """The clock ``strftime_now`` reads; ``SOURCE_DATE_EPOCH`` pins it for reproducible prompts."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH")
    if pinned and pinned.strip().lstrip("-").isdigit():
        return datetime.fromtimestamp(int(pinned), tz=timezone.utc).replace(tzinfo=None)
    return datetime.now()


def strftime_now(fmt: str) -> str:
    return _now().strftime(fmt)


class GenerationTag(Extension):
    """transformers' ``{% generation %}...{% endgeneration %}``: renders its body unchanged."""

    tags = {"generation"}  # noqa: RUF012 - jinja's Extension API

    def parse(self, parser: Any) -> list[nodes.Node]:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


class ChatSandbox(ImmutableSandboxedEnvironment):
    """Immutable sandbox whose limits are read from the current render state."""

    intercepted_binops = frozenset(["*", "**"])

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        _check_deadline()
        if not SandboxedEnvironment.is_safe_attribute(self, obj, attr, value):
            return False
        if modifies_known_mutable(obj, attr):
            state = _STATE.get()
            # the caller's inputs are immutable; containers the template built are not
            return state is not None and id(obj) not in state.input_ids
        return True

    def getattr(self, obj: Any, attribute: str) -> Any:
        _check_deadline()
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        _check_deadline()
        return super().getitem(obj, argument)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        _check_deadline()
        return super().call(__context, __obj, *args, **kwargs)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        _check_deadline()
        state = _STATE.get()
        cap = state.limits.max_output if state else RenderLimits().max_output
        if operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and len(seq) * n > cap:
                    raise TemplateLimitError(f"multiplication would build {len(seq) * n} items (limit {cap})")
        if operator == "**" and isinstance(right, int) and abs(right) > 64:
            raise TemplateLimitError(f"exponent {right} too large")
        return super().call_binop(context, operator, left, right)


def _safe_range(*args: int) -> Iterator[int]:
    state = _STATE.get()
    limit = state.limits.max_range if state else RenderLimits().max_range
    rng = range(*args)
    if len(rng) > limit:
        raise TemplateLimitError(f"range of {len(rng)} items exceeds the limit of {limit}")
    for i in rng:
        _check_deadline()
        yield i


class _TemplateDict:
    """transformers' ``dict`` global: ``dict(...)`` and ``dict.fromkeys`` only."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any) -> dict:
        return dict.fromkeys(*args)


def make_environment() -> ChatSandbox:
    """A fresh environment configured as transformers configures its own."""
    env = ChatSandbox(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, GenerationTag])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["range"] = _safe_range
    env.globals["dict"] = _TemplateDict()
    return env


def render_limited(template: jinja2.Template, context: dict[str, Any], limits: RenderLimits,
                   input_ids: frozenset[int]) -> str:
    """Render ``template`` under ``limits``; raises TemplateLimitError past them."""
    token = _STATE.set(_RenderState(time.monotonic() + limits.timeout_s, limits, input_ids))
    try:
        parts: list[str] = []
        size = 0
        for chunk in template.generate(**context):
            size += len(chunk)
            if size > limits.max_output:
                raise TemplateLimitError(f"output exceeds {limits.max_output} characters")
            parts.append(chunk)
            _check_deadline()
        return "".join(parts)
    finally:
        _STATE.reset(token)
