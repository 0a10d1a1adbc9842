"""What compiled templates meet at render time: bounded buffers, timed loops, checked values.

:mod:`~autoparser.render.compiler` makes the generated code call the hooks here
as filters: :func:`loop_iter` around every ``for`` iterable and :func:`limited_join`
for ``~``; through the environment: :func:`limited_literal` for list, tuple and
dict literals, :func:`limited_slice` for slices, and :class:`Buffer` for the
output of macros, call and set blocks. :func:`render_limited` runs a template under
:class:`~autoparser.render.limits.RenderLimits`.
"""

from __future__ import annotations

import time
from collections import ChainMap
from collections.abc import Generator, Iterable, Iterator, Mapping
from typing import Any, cast

import jinja2
from jinja2.nodes import EvalContext
from jinja2.runtime import Context, markup_join
from jinja2.utils import pass_context, pass_eval_context

from .limits import (
    STATE,
    RenderLimits,
    RenderState,
    cap,
    charge,
    limit_error,
    limits_of,
    refuse_size,
    timeout,
)
from .weight import PRINTABLE_CONTAINERS, check_built, input_weights, weight


class Buffer(list[str]):
    """The output buffer of a macro, call or set block: refuses to grow past the size limit."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def append(self, s: str) -> None:
        self.size += len(s)
        refuse_size(self.size, cap(), "block output")
        list.append(self, s)

    def extend(self, items: Iterable[str]) -> None:
        items = tuple(items)
        self.size += sum(map(len, items))
        refuse_size(self.size, cap(), "block output")
        list.extend(self, items)


def new_buffer() -> Buffer:
    """A fresh block buffer (jinja's is a plain list)."""
    return Buffer()


class TimedIterable:
    """A loop's iterable that checks the render deadline on every step."""

    __slots__ = ("_source", "_state")

    def __init__(self, source: Any, state: RenderState) -> None:
        self._source = source
        self._state = state

    def __len__(self) -> int:
        return len(self._source)

    def __iter__(self) -> Iterator[Any]:
        return self._steps(iter(self._source))

    def _steps(self, it: Iterator[Any]) -> Iterator[Any]:
        state = self._state
        deadline = state.deadline
        for item in it:
            if time.monotonic() > deadline:
                raise timeout(state)
            yield item


@pass_context  # never folded at compile time: loops over constants check the deadline too
def loop_iter(context: Context, iterable: Any) -> Any:
    """A ``for`` loop's iterable, checking the deadline now and on every step."""
    state = STATE.get()
    if state is None:
        return iterable
    if time.monotonic() > state.deadline:
        raise timeout(state)
    return TimedIterable(iterable, state)


COMPILING = "autoparser_compiling"
"""An attribute :class:`~autoparser.render.compiler.LimitedCodeGenerator` sets on its evaluation context."""


@pass_eval_context
def limited_join(eval_ctx: EvalContext, *seq: Any, markup: bool = False) -> str:
    """``a ~ b ~ c``: refuses before allocating a result past the size limit.

    Joins as jinja's ``Concat`` does: with ``markup_join`` when ``markup`` (the
    compiling frame autoescapes), else with ``str``; folded at compile time, always
    with ``str``, as ``Concat.as_const`` does.
    """
    state = STATE.get()
    limit = limits_of(state).max_output
    total = 0
    for x in seq:
        if type(x) is str:
            total += len(x)
        elif type(x) is int:
            total += x.bit_length() // 3 + 2
        elif isinstance(x, (float, bool)) or x is None:
            total += 24
        else:
            total += weight(x, limit, what="operand of ~")
    refuse_size(total, limit, "~ result")
    if markup and not getattr(eval_ctx, COMPILING, False):
        rv = markup_join(seq)
    else:
        rv = "".join(map(str, seq))
    return cast(str, check_built(rv, state, "~ result"))


def limited_slice(value: Any) -> Any:
    """``x[a:b]``: a slice is a copy, charged and bounded like anything built."""
    return check_built(value, STATE.get(), "slice")


def limited_literal(value: Any) -> Any:
    """A list, tuple or dict literal whose items are not all constants."""
    state = STATE.get()
    items = value.values() if isinstance(value, dict) else value
    if len(value) > 8 or any(not isinstance(v, (str, int, float)) for v in items):
        return check_built(value, state, "literal")
    charge(state, len(value) + sum(len(v) for v in items if isinstance(v, str)))
    return value


def limited_concat(seq: Iterable[str]) -> str:
    """``environment.concat``: joins buffers (lists of strings) within the size limit."""
    state = STATE.get()
    parts = seq if isinstance(seq, list) else list(seq)
    size = parts.size if isinstance(parts, Buffer) else sum(map(len, parts))
    refuse_size(size, limits_of(state).max_output, "block output")
    charge(state, size)
    return "".join(parts)


def finalize(value: Any) -> Any:
    """``{{ value }}`` output: refuse a container whose printed form would exceed the size limit."""
    if type(value) is not str and isinstance(value, PRINTABLE_CONTAINERS):
        state = STATE.get()
        if state is None or id(value) not in state.inputs:
            weight(value, limits_of(state).max_output, what="output value")
    return value


def render_limited(template: jinja2.Template, context: dict[str, Any], limits: RenderLimits,
                   inputs: Mapping[int, int] | frozenset[int] | None = None) -> str:
    """Render ``template`` under ``limits``; raises TemplateLimitError past them.

    ``inputs`` maps the id of every container the caller passed to its weight
    (see :func:`~autoparser.render.weight.input_weights`); those stay immutable.
    Computed when omitted.
    """
    if inputs is None:
        inputs = input_weights(context)
    elif not isinstance(inputs, Mapping):
        inputs = dict.fromkeys(inputs, limits.max_output)
    state = RenderState(time.monotonic() + limits.timeout_s, limits, inputs)
    token = STATE.set(state)
    try:
        parts: list[str] = []
        size = 0
        # what template.generate() runs, minus its traceback rewriting (a compile() per template frame):
        # errors keep the frames of the generated code, which Renderer maps to template lines
        chunks = cast(Generator[str, None, None], template.root_render_func(_new_context(template, context)))
        for chunk in chunks:
            size += len(chunk)
            if size > limits.max_output:
                # raised at the template's yield, so the traceback names the template line
                chunks.throw(limit_error(f"output exceeds {limits.max_output} characters"))
            parts.append(chunk)
            if time.monotonic() > state.deadline:
                chunks.throw(timeout(state))
        return "".join(parts)
    except jinja2.TemplateSyntaxError:
        template.environment.handle_exception()  # jinja attaches the source to these, as generate() would
        raise  # handle_exception raises; not reached
    finally:
        STATE.reset(token)


def _new_context(template: jinja2.Template, context: dict[str, Any]) -> Context:
    """``template.new_context(context)`` with the globals flattened as ``dict(template.globals)`` would."""
    globals_ = template.globals
    if isinstance(globals_, ChainMap):
        flat: dict[str, Any] = {}
        for mapping in reversed(globals_.maps):  # later maps first, earlier ones override: ChainMap's reading
            flat.update(mapping)
        globals_ = flat
    return jinja2.runtime.new_context(template.environment, template.name, template.blocks, context,
                                      False, globals_, None)
