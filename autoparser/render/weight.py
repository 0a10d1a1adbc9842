"""Weights: an upper estimate of a value's printed size, checked before anything prints it.

A template can build a small structure whose printed form is huge (``[s, s, s]``
shares one string three times; nesting multiplies). :func:`weight` walks a value
without printing it and refuses it past a size; :func:`check_built` applies it to
every freshly built string or container and charges the work budget.
"""

from __future__ import annotations

import itertools
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any

from jinja2.runtime import Undefined
from jinja2.utils import Namespace

from .limits import (
    DEFAULT_LIMITS,
    MAX_DEPTH,
    STATE,
    RenderState,
    charge,
    check_deadline,
    limit_error,
    refuse_size,
)

SEQUENCES = (list, tuple, set, frozenset, KeysView, ValuesView)
CONTAINERS = (list, tuple, dict, set, frozenset, Namespace)
PRINTABLE_CONTAINERS = (*CONTAINERS, KeysView, ValuesView, ItemsView)


def namespace_attrs(ns: Namespace) -> dict[str, Any]:
    """The attributes a jinja ``namespace`` holds."""
    attrs: dict[str, Any] = object.__getattribute__(ns, "_Namespace__attrs")
    return attrs


def _children(x: Any) -> Iterator[Any] | None:
    """The children of a container the weight walk descends into, or None for a leaf."""
    t = type(x)
    if t is list or t is tuple or t is set or t is frozenset:
        items: Iterator[Any] = iter(x)
        return items
    if t is dict:
        return itertools.chain.from_iterable(x.items())
    if isinstance(x, Namespace):
        return itertools.chain.from_iterable(namespace_attrs(x).items())
    if isinstance(x, (str, int, float, Undefined)) or x is None:
        return None
    if isinstance(x, SEQUENCES):
        return iter(x)
    if isinstance(x, Mapping):
        return itertools.chain.from_iterable(x.items())
    if isinstance(x, ItemsView):
        return itertools.chain.from_iterable(x)
    return None


def leaf_weight(x: Any) -> int:
    """The weight of a scalar (an upper estimate of its printed length)."""
    t = type(x)
    if t is int:
        bits: int = x.bit_length()
        return bits // 3 + 2
    if t is float or t is bool or x is None:
        return 24
    if isinstance(x, str):
        return len(x)
    if isinstance(x, Undefined):
        return 0
    return 64


def weight(x: Any, cap: int | None = None, *, per_item: int = 2, indent: int = 0, what: str = "value") -> int:
    """An upper estimate of ``len(str(x))``; raises TemplateLimitError past ``cap``.

    Shared references count once per occurrence, as printing expands them, so
    ``[s, s, s]`` weighs three times ``s``. Caller inputs use their precomputed
    weight. ``per_item`` and ``indent`` (per nesting level) model separators and
    JSON indentation. Strings count their length: escaping may multiply that by
    a small constant, which the size check on the printed result catches.
    """
    if type(x) is str:
        if cap is not None and len(x) > cap:
            refuse_size(len(x), cap, what)
        return len(x)
    state = STATE.get()
    inputs = state.inputs if state is not None else {}
    limit = cap if cap is not None else float("inf")
    total = 0
    steps = 0
    stack: list[tuple[Iterator[Any], int]] = [(iter((x,)), 0)]
    while stack:
        it, depth = stack[-1]
        pad = per_item + indent * depth
        for child in it:
            steps += 1
            if steps & 0x3FFF == 0:
                check_deadline()
            t = type(child)
            if t is str:
                total += len(child) + pad
            elif t is int:
                total += child.bit_length() // 3 + 2 + pad
            elif t is float or t is bool or child is None:
                total += 24 + pad
            elif id(child) in inputs:
                total += inputs[id(child)] + pad
            else:
                sub = _children(child)
                if sub is None:
                    total += leaf_weight(child) + pad
                else:
                    total += 2 + pad
                    if depth >= MAX_DEPTH:
                        raise limit_error(f"{what} nests deeper than {MAX_DEPTH} levels")
                    stack.append((sub, depth + 1))
                    break
            if total > limit:
                break
        else:
            stack.pop()
        if total > limit:
            refuse_size(int(total), int(limit), what)
    return total


def input_weights(context: Mapping[str, Any]) -> dict[int, int]:
    """The weight of every list, tuple and dict reachable from ``context`` (plain data), by id."""
    out: dict[int, int] = {}

    def walk(x: Any, depth: int) -> int:
        t = type(x)
        if t is str:
            return len(x)
        if t is dict:
            w = 2
            for k, v in x.items():
                w += 4 + (len(k) if type(k) is str else walk(k, depth + 1)) \
                    + (len(v) if type(v) is str else walk(v, depth + 1))
        elif t is list or t is tuple:
            w = 2
            for v in x:
                w += 2 + (len(v) if type(v) is str else walk(v, depth + 1))
        else:
            return leaf_weight(x)
        if depth > 200:
            raise limit_error("input nests deeper than 200 levels")
        out[id(x)] = w
        return w

    for value in context.values():
        walk(value, 0)
    return out


def check_built(value: Any, state: RenderState | None, what: str) -> Any:
    """Refuse a freshly built string or container past the size limit; charge it to the work budget."""
    limits = state.limits if state is not None else DEFAULT_LIMITS
    if isinstance(value, str):
        n = len(value)
    elif isinstance(value, CONTAINERS):
        if state is not None and id(value) in state.inputs:
            return value
        n = len(namespace_attrs(value)) if isinstance(value, Namespace) else len(value)
        weight(value, limits.max_output, what=what)
    else:
        return value
    if n > limits.max_output:
        refuse_size(n, limits.max_output, what)
    if state is not None:
        state.work += n
        if state.work > limits.max_work:
            charge(state, 0)
    return value
