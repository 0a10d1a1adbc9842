"""jinja's filters plus transformers' ``tojson``, each wrapped with the render limits.

Every filter checks the deadline, refuses arguments that would amplify past the
size limit before it runs (:func:`filter_precheck`) and has its result checked
and charged like anything else a template builds.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import pass_environment

from .bounds import arg, join_items, percent_bound, replace_bound, striptags_bound
from .limits import STATE, RenderLimits, cap, limit_error, limits_of, refuse_size, timeout
from .weight import check_built, weight

# set by render.compat's llama.cpp fallback: ``tojson`` prints a lazy sequence as a list, as minja does
LAZY_AS_LIST: contextvars.ContextVar[bool] = contextvars.ContextVar("autoparser_lazy_as_list", default=False)


def tojson(x: Any, ensure_ascii: bool = False, indent: int | str | None = None,
           separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    """transformers' ``tojson``: no HTML escaping, keys kept in order. Under :data:`LAZY_AS_LIST` (the
    llama.cpp fallback of :mod:`.compat`) a lazy sequence (``tools | map(attribute='function')``) is
    printed as a list, as minja does; transformers refuses it."""
    limit = cap()
    if isinstance(x, Iterator) and LAZY_AS_LIST.get():
        x = list(itertools.islice(x, limit + 1))
        refuse_size(len(x), limit, "tojson input")
    step = indent if isinstance(indent, int) else len(indent) if isinstance(indent, str) else 0
    refuse_size(step, limit, "tojson indent")
    sep = sum(len(s) for s in separators if isinstance(s, str)) if isinstance(separators, (tuple, list)) else 2
    weight(x, limit, per_item=2 + sep + (indent is not None), indent=max(step, 0), what="tojson input")
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


@pass_environment
def _limited_sum(environment: SandboxedEnvironment, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    """``|sum``; sums of lists and tuples run as a loop that checks the deadline and the size limit."""
    if attribute is not None:
        iterable = map(jinja2.filters.make_attrgetter(environment, attribute), iterable)
    if not isinstance(start, (list, tuple)):
        return sum(iterable, start)  # numbers; strings raise TypeError as in transformers
    acc = start
    for item in iterable:
        acc = environment.call_binop(None, "+", acc, item)  # type: ignore[arg-type] # no context needed
    return acc


# filters that turn their first argument into a string (a container's printed form)
_STRINGIFYING = frozenset({
    "capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower", "pprint", "replace",
    "safe", "string", "striptags", "title", "trim", "truncate", "upper", "urlencode", "urlize", "wordcount",
    "wordwrap", "xmlattr",
})
_PRECHECKED = _STRINGIFYING | {"join", "batch", "slice"}


def filter_precheck(name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                    limits: RenderLimits) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse a filter call that could build more than the size limit; ``args`` exclude the pass-arg."""
    limit = limits.max_output
    value = args[0] if args else None
    text: str | None = None
    if name in _STRINGIFYING:
        if not isinstance(value, str):
            weight(value, limit, what=f"input of |{name}")
        text = value if isinstance(value, str) else str(value)
    if name == "join":
        sep = str(arg(args, kwargs, 1, "d", ""))
        args = (join_items(sep, value, limit, "|join result"), *args[1:])
    elif name == "center":
        width = arg(args, kwargs, 1, "width", 80)
        if isinstance(width, int):
            refuse_size(width, limit, "|center result")
    elif name == "indent" and text is not None:
        width = arg(args, kwargs, 1, "width", 4)
        step = width if isinstance(width, int) else len(width) if isinstance(width, str) else 0
        refuse_size(len(text) + (text.count("\n") + 1) * max(step, 0), limit, "|indent result")
    elif name == "wordwrap" and text is not None:
        refuse_size(len(text) * 10, limit, "|wordwrap input")  # textwrap runs in Python, unchecked
        wrap = arg(args, kwargs, 3, "wrapstring") or "\n"
        width = arg(args, kwargs, 1, "width", 79)
        if isinstance(wrap, str) and len(wrap) > 1 and isinstance(width, int):
            # two consecutive wrapped lines hold more than `width` characters between them
            lines = 2 * len(text) // max(width, 1) + text.count("\n") + 2
            refuse_size(len(text) + lines * len(wrap), limit, "|wordwrap result")
    elif name == "replace":
        replace_bound(text, arg(args, kwargs, 1, "old"), arg(args, kwargs, 2, "new"),
                      arg(args, kwargs, 3, "count"), limit)
    elif name == "format" and text is not None:
        percent_bound(text, kwargs or tuple(args[1:]), limit)
    elif name in ("batch", "slice"):
        count = arg(args, kwargs, 1, "linecount" if name == "batch" else "slices")
        fill = arg(args, kwargs, 2, "fill_with")
        if isinstance(count, int) and count > limits.max_range:
            raise limit_error(f"|{name}({count}) exceeds the limit of {limits.max_range}")
        if isinstance(count, int) and fill is not None:
            refuse_size(count * max(weight(fill, limit), 1), limit, f"|{name} fill")
    elif name == "striptags":
        striptags_bound(text)
    elif name == "urlize" and text is not None:
        refuse_size(len(text) * 8, limit, "|urlize input")
    return args, kwargs


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a filter with the deadline, amplification and result-size checks."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    precheck = name in _PRECHECKED

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        state = STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise timeout(state)
        if precheck:
            rest, kwargs = filter_precheck(name, args[skip:], kwargs, limits_of(state))
            args = (*args[:skip], *rest)
        return check_built(func(*args, **kwargs), state, f"|{name} result")

    return guarded


@functools.cache
def guarded_filters() -> dict[str, Callable[..., Any]]:
    """jinja's filters, ``tojson`` and a bounded ``sum``, every one guarded (built once)."""
    table = dict(jinja2.filters.FILTERS)
    table["tojson"] = tojson
    table["sum"] = _limited_sum
    return {name: _guard_filter(name, f) for name, f in table.items()}
