"""The sandboxed Jinja environment chat templates render in.

It reproduces Hugging Face transformers' environment (``trim_blocks``,
``lstrip_blocks``, ``loopcontrols``, ``{% generation %}``, ``tojson`` without
HTML escaping, ``raise_exception``, ``strftime_now``, ``dict``, a ``namespace``
that refuses ``_``-prefixed names) inside jinja2's sandbox, and adds what
transformers lacks. Every added check is a no-op on the values real templates
build, so output stays identical:

* **time**: a deadline checked on every attribute or item access, call,
  operator, filter and loop step (``for`` loops iterate through
  :meth:`ChatSandbox.loop_iter`, emitted by :class:`LimitedCodeGenerator`);
* **size**: no string longer than ``limits.max_output`` and no container whose
  printed form could exceed it (its *weight*, see :func:`weight`) is ever
  built. Checks sit where values are made: ``~`` (``visit_Concat``), ``+ * ** %``
  (``intercepted_binops``), list/tuple/dict literals, block and macro buffers,
  filters (each wrapped), method calls (``call``), ``str.format`` and ``range``.
  Arguments that amplify (a width, a count, a separator) are checked before
  the operation allocates anything;
* **work**: the characters and items built in one render are summed and capped
  at ``limits.max_work``, which bounds memory held across many statements;
* **llama.cpp compatibility**: containers the template builds itself may be
  mutated (``ns.items.append(x)``), while the caller's inputs stay immutable.

Recursion is bounded by Python's recursion limit; callers turn ``RecursionError``
into :class:`~autoparser.errors.TemplateLimitError`.
"""

from __future__ import annotations

import contextvars
import functools
import itertools
import json
import os
import re
import time
from collections import ChainMap
from collections.abc import Callable, ItemsView, Iterator, KeysView, Mapping, ValuesView
from dataclasses import dataclass
from datetime import datetime, timezone
from string import Formatter
from types import BuiltinMethodType, MethodType
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame, optimizeconst
from jinja2.ext import Extension, loopcontrols
from jinja2.optimizer import Optimizer
from jinja2.parser import Parser
from jinja2.runtime import Context, LoopContext, Undefined, markup_join
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
    SecurityError,
    modifies_known_mutable,
)
from jinja2.utils import Namespace, pass_environment, pass_eval_context
from markupsafe import Markup

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


_DEFAULT_LIMITS = RenderLimits()
_MAX_DEPTH = 256                    # nesting depth of a container the template prints
_MAX_INT_BITS = 100_000             # size of an integer `*` or `**` may build
_MAX_STRIPTAGS_WORK = 200_000_000   # markupsafe's striptags is quadratic in the number of tags


@dataclass
class _RenderState:
    deadline: float
    limits: RenderLimits
    inputs: Mapping[int, int]       # id -> weight of every container the caller passed
    work: int = 0


_STATE: contextvars.ContextVar[_RenderState | None] = contextvars.ContextVar("autoparser_render", default=None)


def _limit_error(message: str) -> TemplateLimitError:
    return TemplateLimitError(message, phase="render")


def _timeout(state: _RenderState) -> TemplateLimitError:
    return _limit_error(f"render exceeded {state.limits.timeout_s:g} s")


def _check_deadline() -> None:
    state = _STATE.get()
    if state is not None and time.monotonic() > state.deadline:
        raise _timeout(state)


def _limits(state: _RenderState | None) -> RenderLimits:
    return state.limits if state is not None else _DEFAULT_LIMITS


def _cap() -> int:
    return _limits(_STATE.get()).max_output


def _refuse_size(size: int, cap: int, what: str) -> None:
    if size > cap:
        raise _limit_error(f"{what} would be {size} characters or items long (limit {cap})")


def _charge(state: _RenderState | None, n: int) -> None:
    """Count ``n`` characters or items built towards the render's work budget."""
    if state is None:
        return
    state.work += n
    if state.work > state.limits.max_work:
        raise _limit_error(f"render built more than {state.limits.max_work} characters in total")


# -- weights ----------------------------------------------------------------------------------------------

_SEQUENCES = (list, tuple, set, frozenset, KeysView, ValuesView)
_CONTAINERS = (list, tuple, dict, set, frozenset, Namespace)
_PRINTABLE_CONTAINERS = (*_CONTAINERS, KeysView, ValuesView, ItemsView)


def _namespace_attrs(ns: Namespace) -> dict[str, Any]:
    return object.__getattribute__(ns, "_Namespace__attrs")  # type: ignore[no-any-return]


def _children(x: Any) -> Iterator[Any] | None:
    """The children of a container the weight walk descends into, or None for a leaf."""
    t = type(x)
    if t is list or t is tuple or t is set or t is frozenset:
        return iter(x)
    if t is dict:
        return itertools.chain.from_iterable(x.items())
    if isinstance(x, Namespace):
        return itertools.chain.from_iterable(_namespace_attrs(x).items())
    if isinstance(x, (str, int, float, Undefined)) or x is None:
        return None
    if isinstance(x, _SEQUENCES):
        return iter(x)
    if isinstance(x, Mapping):
        return itertools.chain.from_iterable(x.items())
    if isinstance(x, ItemsView):
        return itertools.chain.from_iterable(x)
    return None


def _leaf_weight(x: Any) -> int:
    t = type(x)
    if t is int:
        return x.bit_length() // 3 + 2
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
            _refuse_size(len(x), cap, what)
        return len(x)
    state = _STATE.get()
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
                _check_deadline()
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
                    total += _leaf_weight(child) + pad
                else:
                    total += 2 + pad
                    if depth >= _MAX_DEPTH:
                        raise _limit_error(f"{what} nests deeper than {_MAX_DEPTH} levels")
                    stack.append((sub, depth + 1))
                    break
            if total > limit:
                break
        else:
            stack.pop()
        if total > limit:
            _refuse_size(int(total), int(limit), what)
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
            return _leaf_weight(x)
        if depth > 200:
            raise _limit_error("input nests deeper than 200 levels")
        out[id(x)] = w
        return w

    for value in context.values():
        walk(value, 0)
    return out


def _check_built(value: Any, state: _RenderState | None, what: str) -> Any:
    """Refuse a freshly built string or container past the size limit; charge it to the work budget."""
    limits = state.limits if state is not None else _DEFAULT_LIMITS
    if isinstance(value, str):
        n = len(value)
    elif isinstance(value, _CONTAINERS):
        if state is not None and id(value) in state.inputs:
            return value
        n = len(_namespace_attrs(value)) if isinstance(value, Namespace) else len(value)
        weight(value, limits.max_output, what=what)
    else:
        return value
    if n > limits.max_output:
        _refuse_size(n, limits.max_output, what)
    if state is not None:
        state.work += n
        if state.work > limits.max_work:
            _charge(state, 0)
    return value


# -- transformers' globals and filters ----------------------------------------------------------------------

def tojson(x: Any, ensure_ascii: bool = False, indent: int | str | None = None,
           separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    """transformers' ``tojson``: no HTML escaping, keys kept in order."""
    cap = _cap()
    step = indent if isinstance(indent, int) else len(indent) if isinstance(indent, str) else 0
    _refuse_size(step, cap, "tojson indent")
    sep = sum(len(s) for s in separators if isinstance(s, str)) if isinstance(separators, (tuple, list)) else 2
    weight(x, cap, per_item=2 + sep + (indent is not None), indent=max(step, 0), what="tojson input")
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


class TemplateDict:
    """transformers' ``dict`` global: ``dict(...)`` and ``dict.fromkeys`` only."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


class TemplateNamespace(Namespace):
    """transformers' ``namespace``: refuses ``_``-prefixed names; here also bounded in size."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # jinja's signature trick: namespace(self=1)
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            TemplateNamespace._check_name(name)
        Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        TemplateNamespace._check_name(name)
        Namespace.__setitem__(self, name, value)
        if value is not None and not isinstance(value, (str, int, float)):
            weight(self, _cap(), what="namespace")

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(
                f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}. "
                "Please rename the attribute.")


def _safe_range(*args: int) -> range:
    """jinja's ``safe_range`` with our limit; loops over it check the deadline in ``loop_iter``."""
    limit = _limits(_STATE.get()).max_range
    rng = range(*args)
    if len(rng) > limit:
        raise _limit_error(f"range of {len(rng)} items exceeds the limit of {limit}")
    return rng


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # jinja's parameter names
    if n * max > 100_000:
        raise _limit_error(f"lipsum of {n} paragraphs of up to {max} words is too large")
    return jinja2.utils.generate_lorem_ipsum(n=n, html=html, min=min, max=max)


class GenerationTag(Extension):
    """transformers' ``{% generation %}...{% endgeneration %}``: a call block that returns its body."""

    tags = {"generation"}  # noqa: RUF012 - jinja's Extension API

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @pass_eval_context
    def _generation_support(self, context: Any, caller: Any) -> str:
        return caller()  # type: ignore[no-any-return]


# -- amplification checks -----------------------------------------------------------------------------------

_PERCENT_SPEC = re.compile(r"%(?:\(([^)]*)\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.S)
_SPEC_NUMBER = re.compile(r"\d+")


def _number_bound(num: str, cap: int, what: str) -> int:
    if len(num) > 12:
        _refuse_size(10**12, cap, what)
    return int(num)


def _percent_bound(fmt: str, args: Any, cap: int) -> None:
    """Refuse ``fmt % args`` when its result could exceed ``cap`` (widths, precisions, repeated keys)."""
    total = len(fmt)
    mapping = isinstance(args, Mapping)
    star = max((abs(a) for a in (args if isinstance(args, tuple) else (args,)) if isinstance(a, int)), default=0)
    keyed = False
    for key, width, prec, _conv in _PERCENT_SPEC.findall(fmt):
        for num in (width, prec):
            total += star if num == "*" else _number_bound(num, cap, "formatted string") if num else 0
        if key and mapping:
            keyed = True
            total += weight(args.get(key), cap, what="format argument")
        total += 32
        _refuse_size(total, cap, "formatted string")
    if not keyed:
        total += weight(args, cap, what="format argument")
    _refuse_size(total, cap, "formatted string")


class LimitedFormatter(SandboxedFormatter):
    """jinja's sandboxed ``str.format`` with bounded field widths and result size."""

    def __init__(self, env: jinja2.Environment, **kwargs: Any) -> None:
        super().__init__(env, **kwargs)
        self._size = 0

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self._size = len(format_string)
        return super().vformat(format_string, args, kwargs)

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion:
            weight(value, _cap(), what="format argument")
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        cap = _cap()
        for num in _SPEC_NUMBER.findall(format_spec):
            _refuse_size(_number_bound(num, cap, "format width"), cap, "format width")
        _refuse_size(self._size + weight(value, cap, what="format argument"), cap, "formatted string")
        out = super().format_field(value, format_spec)
        self._size += len(out)
        _refuse_size(self._size, cap, "formatted string")
        return out


class _LimitedEscapeFormatter(LimitedFormatter, SandboxedEscapeFormatter):
    pass


def _arg(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    return args[i] if len(args) > i else kwargs.get(name, default)


def _replace_bound(s: Any, old: Any, new: Any, count: Any, cap: int) -> None:
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str)) or len(new) <= len(old):
        return
    hits = len(s) + 1 if old == "" else s.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    _refuse_size(len(s) + hits * (len(new) - len(old)), cap, "replace result")


def _striptags_bound(s: Any) -> None:
    if isinstance(s, str) and len(s) * s.count("<") > _MAX_STRIPTAGS_WORK:
        raise _limit_error(f"striptags over {s.count('<')} tags in {len(s)} characters is too slow")


def _join_items(sep: str, items: Any, cap: int, what: str = "join result") -> list[Any]:
    """Materialize ``items`` and refuse a join whose result could exceed ``cap``."""
    items = list(items)
    total = len(sep) * max(len(items) - 1, 0)
    _refuse_size(total, cap, what)
    weight(items, cap - total, per_item=0, what=what)
    return items


def _check_str_call(owner: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                    cap: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse a str method call that would build more than ``cap`` characters."""
    if name in ("center", "ljust", "rjust", "zfill"):
        width = _arg(args, kwargs, 0, "width", 0)
        if isinstance(width, int):
            _refuse_size(width, cap, f"str.{name} result")
    elif name == "expandtabs":
        size = _arg(args, kwargs, 0, "tabsize", 8)
        if isinstance(size, int):
            _refuse_size(len(owner) + owner.count("\t") * max(size, 0), cap, "str.expandtabs result")
    elif name == "replace":
        _replace_bound(owner, _arg(args, kwargs, 0, "old"), _arg(args, kwargs, 1, "new"),
                       _arg(args, kwargs, 2, "count", -1), cap)
    elif name == "join" and args:
        args = (_join_items(owner, args[0], cap, "str.join result"), *args[1:])
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        _refuse_size(len(owner) * max(longest, 1), cap, "str.translate result")
    elif name == "striptags":
        _striptags_bound(owner)
    return args, kwargs


_GROWING_METHODS = frozenset({"append", "extend", "insert", "update", "setdefault", "add",
                              "symmetric_difference_update"})
_MUTATING_NAMES = frozenset().union(*(names for _, names in jinja2.sandbox._mutable_spec))
_DICT_ATTRIBUTES = frozenset(dir(dict))
# owners whose public attributes jinja's sandbox always allows (is_internal_attribute is only the `__` test)
_PLAIN_OWNERS = frozenset({str, list, tuple, LoopContext, TemplateNamespace})
# attributes the full getattr path must see: mutators (inputs are immutable) and str.format (wrapped)
_CHECKED_ATTRIBUTES = _MUTATING_NAMES | {"format", "format_map"}
_PLAIN_CALL_OWNERS = frozenset({str, list, dict, tuple})
_LOOKUP_METHODS = frozenset({"get", "pop", "index", "count", "find", "rfind", "startswith", "endswith",
                             "keys", "values", "items"})


# -- filters ------------------------------------------------------------------------------------------------

# filters that turn their first argument into a string (a container's printed form)
_STRINGIFYING = frozenset({
    "capitalize", "center", "e", "escape", "forceescape", "format", "indent", "lower", "pprint", "replace",
    "safe", "string", "striptags", "title", "trim", "truncate", "upper", "urlencode", "urlize", "wordcount",
    "wordwrap", "xmlattr",
})
_PRECHECKED = _STRINGIFYING | {"join", "batch", "slice"}


def _filter_precheck(name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                     limits: RenderLimits) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse a filter call that could build more than the size limit; ``args`` exclude the pass-arg."""
    cap = limits.max_output
    value = args[0] if args else None
    text: str | None = None
    if name in _STRINGIFYING:
        if not isinstance(value, str):
            weight(value, cap, what=f"input of |{name}")
        text = value if isinstance(value, str) else str(value)
    if name == "join":
        sep = str(_arg(args, kwargs, 1, "d", ""))
        args = (_join_items(sep, value, cap, "|join result"), *args[1:])
    elif name == "center":
        width = _arg(args, kwargs, 1, "width", 80)
        if isinstance(width, int):
            _refuse_size(width, cap, "|center result")
    elif name == "indent" and text is not None:
        width = _arg(args, kwargs, 1, "width", 4)
        step = width if isinstance(width, int) else len(width) if isinstance(width, str) else 0
        _refuse_size(len(text) + (text.count("\n") + 1) * max(step, 0), cap, "|indent result")
    elif name == "wordwrap" and text is not None:
        _refuse_size(len(text) * 10, cap, "|wordwrap input")  # textwrap runs in Python, unchecked
        wrap = _arg(args, kwargs, 3, "wrapstring") or "\n"
        width = _arg(args, kwargs, 1, "width", 79)
        if isinstance(wrap, str) and len(wrap) > 1 and isinstance(width, int):
            # two consecutive wrapped lines hold more than `width` characters between them
            lines = 2 * len(text) // max(width, 1) + text.count("\n") + 2
            _refuse_size(len(text) + lines * len(wrap), cap, "|wordwrap result")
    elif name == "replace":
        _replace_bound(text, _arg(args, kwargs, 1, "old"), _arg(args, kwargs, 2, "new"),
                       _arg(args, kwargs, 3, "count"), cap)
    elif name == "format" and text is not None:
        _percent_bound(text, kwargs or tuple(args[1:]), cap)
    elif name in ("batch", "slice"):
        count = _arg(args, kwargs, 1, "linecount" if name == "batch" else "slices")
        fill = _arg(args, kwargs, 2, "fill_with")
        if isinstance(count, int) and count > limits.max_range:
            raise _limit_error(f"|{name}({count}) exceeds the limit of {limits.max_range}")
        if isinstance(count, int) and fill is not None:
            _refuse_size(count * max(weight(fill, cap), 1), cap, f"|{name} fill")
    elif name == "striptags":
        _striptags_bound(text)
    elif name == "urlize" and text is not None:
        _refuse_size(len(text) * 8, cap, "|urlize input")
    return args, kwargs


@pass_environment
def _limited_sum(environment: ChatSandbox, iterable: Any, attribute: Any = None, start: Any = 0) -> Any:
    """``|sum``; sums of lists and tuples run as a loop that checks the deadline and the size limit."""
    if attribute is not None:
        iterable = map(jinja2.filters.make_attrgetter(environment, attribute), iterable)
    if not isinstance(start, (list, tuple)):
        return sum(iterable, start)  # numbers; strings raise TypeError as in transformers
    acc = start
    for item in iterable:
        acc = environment.call_binop(None, "+", acc, item)
    return acc


def _guard_filter(name: str, func: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap a filter with the deadline, amplification and result-size checks."""
    skip = 1 if getattr(func, "jinja_pass_arg", None) is not None else 0
    precheck = name in _PRECHECKED

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        state = _STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise _timeout(state)
        if precheck:
            rest, kwargs = _filter_precheck(name, args[skip:], kwargs, _limits(state))
            args = (*args[:skip], *rest)
        return _check_built(func(*args, **kwargs), state, f"|{name} result")

    return guarded


@functools.cache
def _guarded_filters() -> dict[str, Callable[..., Any]]:
    table = dict(jinja2.filters.FILTERS)
    table["tojson"] = tojson
    table["sum"] = _limited_sum
    return {name: _guard_filter(name, f) for name, f in table.items()}


# -- code generation ----------------------------------------------------------------------------------------

class _FoldOnce(Optimizer):
    """jinja's constant folder, run once per expression subtree and evaluation context.

    jinja's code generator folds each nested expression again as it descends
    (quadratic in the nesting depth). The folder rewrites a subtree in place, so
    a second visit under the same context returns the same result: remember it.
    """

    def __init__(self, environment: jinja2.Environment) -> None:
        super().__init__(environment)
        self._done: dict[int, tuple[nodes.Node, Any, Any, nodes.Node]] = {}

    def visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
        ctx = args[0] if args else None
        autoescape = getattr(ctx, "autoescape", None)
        seen = self._done.get(id(node))
        if seen is not None and seen[0] is node and seen[1] is ctx and seen[2] == autoescape and not kwargs:
            return seen[3]
        rv = super().visit(node, *args, **kwargs)
        self._done[id(node)] = (node, ctx, autoescape, rv)  # holding `node` keeps its id unique
        return rv

    def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> nodes.Node:
        """jinja's ``Optimizer.generic_visit`` (fold the children in place, then the node), leaner:
        unchanged fields are not reassigned, a constant is kept rather than rebuilt equal, and no
        fold is tried on a node whose ``as_const`` is ``Expr``'s, which always raises ``Impossible``."""
        if type(node) is nodes.Const and node.environment is self.environment:
            return node
        attrs = node.__dict__
        for field in node.fields:
            old = attrs.get(field)
            if isinstance(old, list):
                new_values: list[Any] = []
                changed = False
                for value in old:
                    if isinstance(value, nodes.Node):
                        new = self.visit(value, *args, **kwargs)
                        if new is None or not isinstance(new, nodes.Node):
                            changed = True
                            if new is not None:
                                new_values.extend(new)
                            continue
                        changed = changed or new is not value
                        value = new
                    new_values.append(value)
                if changed:
                    old[:] = new_values
            elif isinstance(old, nodes.Node):
                new = self.visit(old, *args, **kwargs)
                if new is None:
                    delattr(node, field)
                elif new is not old:
                    setattr(node, field, new)
        if isinstance(node, nodes.Expr) and type(node).as_const is not _EXPR_AS_CONST:
            try:
                return nodes.Const.from_untrusted(node.as_const(args[0] if args else None),
                                                  lineno=node.lineno, environment=self.environment)
            except nodes.Impossible:
                pass
        return node


_EXPR_AS_CONST = nodes.Expr.as_const
_OPTIMIZECONST_CODE = optimizeconst(lambda self, node, frame: None).__code__


def _fold_first(visit: Callable[..., None]) -> Callable[..., None]:
    """jinja's ``optimizeconst`` wrapper, comparing by identity before comparing structurally."""

    def folding_visit(self: LimitedCodeGenerator, node: nodes.Expr, frame: Frame, **kwargs: Any) -> None:
        if self.optimizer is not None and not frame.eval_ctx.volatile:
            new_node = self.optimizer.visit(node, frame.eval_ctx)
            if new_node is not node and new_node != node:  # jinja: `new_node != node`, a field-by-field walk
                return self.visit(new_node, frame)  # type: ignore[no-any-return]
        return visit(self, node, frame, **kwargs)

    return functools.update_wrapper(folding_visit, visit)


def _child_nodes(node: nodes.Node) -> list[nodes.Node]:
    """``list(node.iter_child_nodes())`` without jinja's two generators per node (fields live in ``__dict__``)."""
    out: list[nodes.Node] = []
    attrs = node.__dict__
    for name in node.fields:
        item = attrs.get(name)
        if item is None:
            continue
        if isinstance(item, list):
            out.extend([n for n in item if isinstance(n, nodes.Node)])
        elif isinstance(item, nodes.Node):
            out.append(item)
    return out


_FIND_TYPES = (nodes.Extends, nodes.Block, nodes.ImportedName)
# what a node class is to the walks jinja makes: visitors dispatch on the class name, find_all on isinstance
_IS_NAME, _IS_BLOCK, _VISITS_AS_NAME, _VISITS_AS_BLOCK, _IS_FOR, _FOUND = 1, 2, 4, 8, 16, 32
_KINDS: dict[type, int] = {}


def _kind(cls: type) -> int:
    kind = _KINDS.get(cls)
    if kind is None:
        kind = (_IS_NAME * issubclass(cls, nodes.Name) | _IS_BLOCK * issubclass(cls, nodes.Block)
                | _VISITS_AS_NAME * (cls.__name__ == "Name") | _VISITS_AS_BLOCK * (cls.__name__ == "Block")
                | _IS_FOR * issubclass(cls, nodes.For) | _FOUND * issubclass(cls, _FIND_TYPES))
        _KINDS[cls] = kind
    return kind


_NO_FACTS: tuple[str | None, bool, nodes.Name | None] = (None, False, None)


class _TreeFacts:
    """What jinja's code generator learns by walking the tree again and again, from one walk.

    * ``found``: the Extends, Block and ImportedName nodes in jinja's ``find_all`` order;
    * ``loops``: per ``For`` node, what jinja's ``visit_For`` gets from ``find_undeclared`` and
      two ``find_all`` walks of the loop: whether the first ``loop`` name in its body (not
      looking into blocks) reads it, whether a scoped block is inside, the first ``loop`` store;
    * ``kids``: every node's child nodes (the tree is walked before anything rewrites it).
    """

    def __init__(self, root: nodes.Node, kids: dict[int, tuple[nodes.Node, list[nodes.Node]]] | None = None) -> None:
        self.kids: dict[int, tuple[nodes.Node, list[nodes.Node]]] = kids if kids is not None else {}
        self.loops: dict[int, tuple[nodes.For, bool, bool, nodes.Name | None]] = {}
        self.found: dict[type, list[nodes.Node]] = {t: [] for t in _FIND_TYPES}
        # per node: (ctx of the first `loop` name, outside blocks; a scoped block inside; the first `loop` store)
        facts: dict[int, tuple[str | None, bool, nodes.Name | None]] = {}
        stack: list[tuple[nodes.Node, list[nodes.Node] | None]] = [(root, None)]
        while stack:
            node, kids = stack[-1]
            if kids is None:  # first visit, in pre-order
                kids = self.children(node)
                if _kind(type(node)) & _FOUND and node is not root:
                    for t in _FIND_TYPES:
                        if isinstance(node, t):
                            self.found[t].append(node)
                if kids:
                    stack[-1] = (node, kids)
                    stack.extend([(k, None) for k in reversed(kids)])
                    continue
            stack.pop()  # children done: post-order
            first: str | None = None
            scoped = False
            store: nodes.Name | None = None
            for kid in kids:
                k_first, k_scoped, k_store = facts[id(kid)]
                if first is None:
                    first = k_first
                scoped = scoped or k_scoped
                if store is None:
                    store = k_store
            kind = _kind(type(node))
            if kind:
                if kind & _VISITS_AS_NAME:
                    first = node.ctx if node.name == "loop" else None
                elif kind & _VISITS_AS_BLOCK:
                    first = None  # jinja's undeclared-name search does not enter blocks
                if kind & _IS_BLOCK and node.scoped:
                    scoped = True
                if kind & _IS_NAME and store is None and node.name == "loop" and node.ctx == "store":
                    store = node
                if kind & _IS_FOR:  # neither a name nor a block: its facts are its children's
                    body_first = next((f for f in (facts[id(b)][0] for b in node.body) if f is not None), None)
                    self.loops[id(node)] = (node, body_first == "load", scoped, store)
            facts[id(node)] = _NO_FACTS if first is None and not scoped and store is None else (first, scoped, store)

    def children(self, node: nodes.Node) -> list[nodes.Node]:
        hit = self.kids.get(id(node))
        if hit is not None and hit[0] is node:
            return hit[1]
        kids = self.kids[id(node)] = (node, _child_nodes(node))
        return kids[1]


class _ChatParser(Parser):
    """jinja's parser; its final walk of the tree (setting each node's environment) also lists
    every node's children, which the code generator's one walk (:class:`_TreeFacts`) reuses."""

    def parse(self) -> nodes.Template:
        result = nodes.Template(self.subparse(), lineno=1)
        kids: dict[int, tuple[nodes.Node, list[nodes.Node]]] = {}
        todo: list[nodes.Node] = [result]
        while todo:  # Node.set_environment, without its generators
            node = todo.pop()
            node.environment = self.environment
            children = _child_nodes(node)
            kids[id(node)] = (node, children)
            todo.extend(children)
        self.environment._parsed = (result, kids)  # type: ignore[attr-defined] # read once by the generator
        return result


class LimitedCodeGenerator(CodeGenerator):
    """jinja's code generator with the size and time checks of :class:`ChatSandbox` wired in.

    Generates exactly jinja's code apart from those checks, faster: visitors are
    looked up once per node type, constants folded once per subtree
    (:class:`_FoldOnce`), and what jinja finds by walking the tree (blocks,
    dependencies, each loop's use of ``loop``) comes from one walk
    (:class:`_TreeFacts`) instead of several per template and three per loop.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.optimizer is not None:
            self.optimizer = _FoldOnce(self.environment)
        self._visitors: dict[type, Callable[..., Any]] = {}
        self._tree: _TreeFacts | None = None

    def visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> Any:
        f = self._visitors.get(type(node))
        if f is None:
            f = getattr(self, f"visit_{type(node).__name__}", None) or self.generic_visit
            self._visitors[type(node)] = f
        return f(node, *args, **kwargs)

    def buffer(self, frame: Frame) -> None:
        frame.buffer = self.temporary_identifier()
        self.writeline(f"{frame.buffer} = environment.new_buffer()")

    @_fold_first
    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        if frame.eval_ctx.volatile:
            markup = "context.eval_ctx.volatile"  # as jinja's own visit_Concat decides
        else:
            markup = "True" if frame.eval_ctx.autoescape else "False"
        self.write("environment.limited_join((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write(f"), {markup})")

    def _checked(self, visit: Callable[[Any, Frame], None], node: Any, frame: Frame) -> None:
        self.write("environment.limited_literal(")
        visit(node, frame)
        self.write(")")

    def visit_List(self, node: nodes.List, frame: Frame) -> None:
        self._checked(super().visit_List, node, frame)

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:
        self._checked(super().visit_Dict, node, frame)

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:
        if node.ctx == "load":
            self._checked(super().visit_Tuple, node, frame)
        else:
            super().visit_Tuple(node, frame)

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if isinstance(node.arg, nodes.Slice):  # jinja slices directly, bypassing environment.getitem
            self.write("environment.limited_slice(")
            _jinja_getitem(self, node, frame)
            self.write(")")
        else:
            _jinja_getitem(self, node, frame)

    # -- whole-template walks -------------------------------------------------------------------------------

    def visit_Template(self, node: nodes.Template, frame: Frame | None = None) -> None:
        """jinja's, with its three ``find``/``find_all`` walks of the tree answered by one."""
        parsed = getattr(self.environment, "_parsed", None)
        kids = None
        if parsed is not None and parsed[0] is node:  # this tree, untouched since the parser walked it
            kids = parsed[1]
            self.environment._parsed = None  # type: ignore[attr-defined]
        self._tree = tree = _TreeFacts(node, kids)

        def find_all(node_type: Any) -> Iterator[Any]:
            hit = tree.found.get(node_type)
            return iter(hit) if hit is not None else nodes.Node.find_all(node, node_type)

        node.find_all = find_all  # type: ignore[method-assign] # this node only, for this call
        try:
            super().visit_Template(node, frame)
        finally:
            del node.find_all

    def pull_dependencies(self, body: Any) -> None:
        """jinja's: bind every filter and test the code uses (found without a recursive visitor)."""
        filters: set[str] = set()
        tests: set[str] = set()
        children = self._tree.children if self._tree is not None else _child_nodes
        stack = list(body)[::-1]
        while stack:
            node = stack.pop()
            kind = type(node).__name__  # jinja's DependencyFinderVisitor dispatches on the class name
            if kind == "Block":
                continue  # blocks pull their own
            if kind == "Filter":
                filters.add(node.name)
            elif kind == "Test":
                tests.add(node.name)
            stack.extend(reversed(children(node)))
        for id_map, names, dependency in ((self.filters, filters, "filters"), (self.tests, tests, "tests")):
            for name in sorted(names):
                if name not in id_map:
                    id_map[name] = self.temporary_identifier()
                # checked at runtime too: a dependency inside a block may be skipped at compile time
                self.writeline("try:")
                self.indent()
                self.writeline(f"{id_map[name]} = environment.{dependency}[{name!r}]")
                self.outdent()
                self.writeline("except KeyError:")
                self.indent()
                self.writeline("@internalcode")
                self.writeline(f"def {id_map[name]}(*unused):")
                self.indent()
                self.writeline(f'raise TemplateRuntimeError("No {dependency[:-1]} named {name!r} found.")')
                self.outdent()
                self.outdent()

    # -- loops ----------------------------------------------------------------------------------------------

    def visit_For(self, node: nodes.For, frame: Frame) -> None:
        """jinja 3.1's ``visit_For``, iterating through ``environment.loop_iter`` (the deadline check)."""
        hit = self._tree.loops.get(id(node)) if self._tree is not None else None
        if hit is None or hit[0] is not node:
            hit = _TreeFacts(node).loops[id(node)]
        _, reads_loop, scoped_block, loop_store = hit

        loop_frame = frame.inner()
        loop_frame.loop_frame = True
        test_frame = frame.inner()
        else_frame = frame.inner()

        # an extended loop (a LoopContext) when recursive, when the body reads `loop`, or holds a scoped block
        extended_loop = node.recursive or reads_loop or scoped_block

        loop_ref = None
        if extended_loop:
            loop_ref = loop_frame.symbols.declare_parameter("loop")

        loop_frame.symbols.analyze_node(node, for_branch="body")
        if node.else_:
            else_frame.symbols.analyze_node(node, for_branch="else")

        if node.test:
            loop_filter_func = self.temporary_identifier()
            test_frame.symbols.analyze_node(node, for_branch="test")
            self.writeline(f"{self.func(loop_filter_func)}(fiter):", node.test)
            self.indent()
            self.enter_frame(test_frame)
            self.writeline(self.choose_async("async for ", "for "))
            self.visit(node.target, loop_frame)
            self.write(" in ")
            self.write(self.choose_async("auto_aiter(fiter)", "fiter"))
            self.write(":")
            self.indent()
            self.writeline("if ", node.test)
            self.visit(node.test, test_frame)
            self.write(":")
            self.indent()
            self.writeline("yield ")
            self.visit(node.target, loop_frame)
            self.outdent(3)
            self.leave_frame(test_frame, with_python_scope=True)

        if node.recursive:
            self.writeline(f"{self.func('loop')}(reciter, loop_render_func, depth=0):", node)
            self.indent()
            self.buffer(loop_frame)
            else_frame.buffer = loop_frame.buffer  # the else frame shares the buffer

        if extended_loop:
            self.writeline(f"{loop_ref} = missing")

        if loop_store is not None:
            self.fail("Can't assign to special loop variable in for-loop target", loop_store.lineno)

        if node.else_:
            iteration_indicator = self.temporary_identifier()
            self.writeline(f"{iteration_indicator} = 1")

        self.writeline(self.choose_async("async for ", "for "), node)
        self.visit(node.target, loop_frame)
        if extended_loop:
            self.write(f", {loop_ref} in {self.choose_async('Async')}LoopContext(")
        else:
            self.write(" in ")

        if node.test:
            self.write(f"{loop_filter_func}(")
        if node.recursive:
            self.write("reciter")
        else:
            if self.environment.is_async and not extended_loop:
                self.write("auto_aiter(")
            self._loop_iterable(node, frame)
            if self.environment.is_async and not extended_loop:
                self.write(")")
        if node.test:
            self.write(")")

        if node.recursive:
            self.write(", undefined, loop_render_func, depth):")
        else:
            self.write(", undefined):" if extended_loop else ":")

        self.indent()
        self.enter_frame(loop_frame)

        self.writeline("_loop_vars = {}")
        self.blockvisit(node.body, loop_frame)
        if node.else_:
            self.writeline(f"{iteration_indicator} = 0")
        self.outdent()
        self.leave_frame(loop_frame, with_python_scope=node.recursive and not node.else_)

        if node.else_:
            self.writeline(f"if {iteration_indicator}:")
            self.indent()
            self.enter_frame(else_frame)
            self.blockvisit(node.else_, else_frame)
            self.leave_frame(else_frame)
            self.outdent()

        # a recursive loop returns its buffer, then starts the iteration
        if node.recursive:
            self.return_buffer_contents(loop_frame)
            self.outdent()
            self.start_write(frame, node)
            self.write(f"{self.choose_async('await ')}loop(")
            if self.environment.is_async:
                self.write("auto_aiter(")
            self._loop_iterable(node, frame)
            if self.environment.is_async:
                self.write(")")
            self.write(", loop)")
            self.end_write(frame)

        # at the end of the iteration, clear any assignments made in the loop from the top level
        if self._assign_stack:
            self._assign_stack[-1].difference_update(loop_frame.symbols.stores)

    def _loop_iterable(self, node: nodes.For, frame: Frame) -> None:
        self.write("environment.loop_iter(")
        self.visit(node.iter, frame)
        self.write(")")


# jinja's own folding visitors (visit_Getattr, the operators, ...), with the cheaper comparison
_jinja_getitem = _fold_first(CodeGenerator.visit_Getitem.__wrapped__)  # type: ignore[attr-defined]
for _name, _visit in vars(CodeGenerator).items():
    if _name.startswith("visit_") and _name not in vars(LimitedCodeGenerator) \
            and getattr(_visit, "__code__", None) is _OPTIMIZECONST_CODE:
        setattr(LimitedCodeGenerator, _name, _fold_first(_visit.__wrapped__))


class _Buffer(list):  # type: ignore[type-arg]
    """The output buffer of a macro, call or set block: refuses to grow past the size limit."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        super().__init__()
        self.size = 0

    def append(self, s: str) -> None:
        self.size += len(s)
        _refuse_size(self.size, _cap(), "block output")
        list.append(self, s)

    def extend(self, items: Any) -> None:
        items = tuple(items)
        self.size += sum(map(len, items))
        _refuse_size(self.size, _cap(), "block output")
        list.extend(self, items)


class _TimedIterable:
    """A loop's iterable that checks the render deadline on every step."""

    __slots__ = ("_source", "_state")

    def __init__(self, source: Any, state: _RenderState) -> None:
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
                raise _timeout(state)
            yield item


# -- the environment ----------------------------------------------------------------------------------------

def _limited_concat(seq: Any) -> str:
    """``environment.concat``: joins buffers (lists of strings) within the size limit."""
    state = _STATE.get()
    if not isinstance(seq, list):
        seq = list(seq)
    size = seq.size if isinstance(seq, _Buffer) else sum(map(len, seq))
    _refuse_size(size, _limits(state).max_output, "block output")
    _charge(state, size)
    return "".join(seq)


class ChatSandbox(ImmutableSandboxedEnvironment):
    """Immutable sandbox whose limits are read from the current render state."""

    code_generator_class = LimitedCodeGenerator
    intercepted_binops = frozenset(["+", "*", "**", "%"])
    concat = staticmethod(_limited_concat)  # type: ignore[assignment]

    _parsed: tuple[nodes.Template, dict[int, tuple[nodes.Node, list[nodes.Node]]]] | None = None

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        return _ChatParser(self, source, name, filename).parse()

    # -- hooks the generated code calls --------------------------------------------------------------------

    @staticmethod
    def new_buffer() -> _Buffer:
        return _Buffer()

    @staticmethod
    def loop_iter(iterable: Any) -> Any:
        state = _STATE.get()
        if state is None:
            return iterable
        if time.monotonic() > state.deadline:
            raise _timeout(state)
        return _TimedIterable(iterable, state)

    @staticmethod
    def limited_join(seq: tuple[Any, ...], markup: bool) -> str:
        """``a ~ b ~ c``: refuses before allocating a result past the size limit."""
        state = _STATE.get()
        cap = _limits(state).max_output
        total = 0
        for x in seq:
            if type(x) is str:
                total += len(x)
            elif type(x) is int:
                total += x.bit_length() // 3 + 2
            elif isinstance(x, (float, bool)) or x is None:
                total += 24
            else:
                total += weight(x, cap, what="operand of ~")
        _refuse_size(total, cap, "~ result")
        rv = markup_join(seq) if markup else "".join(map(str, seq))
        return _check_built(rv, state, "~ result")  # type: ignore[no-any-return]

    @staticmethod
    def limited_slice(value: Any) -> Any:
        """``x[a:b]``: a slice is a copy, charged and bounded like anything built."""
        return _check_built(value, _STATE.get(), "slice")

    @staticmethod
    def limited_literal(value: Any) -> Any:
        """A list, tuple or dict literal whose items are not all constants."""
        state = _STATE.get()
        items = value.values() if isinstance(value, dict) else value
        if len(value) > 8 or any(not isinstance(v, (str, int, float)) for v in items):
            return _check_built(value, state, "literal")
        _charge(state, len(value) + sum(len(v) for v in items if isinstance(v, str)))
        return value

    # -- sandbox policy -------------------------------------------------------------------------------------

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if not SandboxedEnvironment.is_safe_attribute(self, obj, attr, value):
            return False
        if attr in _MUTATING_NAMES and modifies_known_mutable(obj, attr):
            state = _STATE.get()
            # the caller's inputs are immutable; containers the template built are not
            return state is not None and id(obj) not in state.inputs
        return True

    def getattr(self, obj: Any, attribute: str) -> Any:
        state = _STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise _timeout(state)
        owner = type(obj)
        if owner is dict and type(attribute) is str and attribute not in _DICT_ATTRIBUTES:
            # what jinja's getattr does for a plain dict and a name dict lacks, without the detour
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        if owner in _PLAIN_OWNERS and type(attribute) is str and not attribute.startswith("_") \
                and attribute not in _CHECKED_ATTRIBUTES:
            # jinja's sandbox finds every such attribute of these owners safe (none is internal)
            try:
                value = getattr(obj, attribute)
            except AttributeError:
                pass
            else:
                if not isinstance(value, (MethodType, BuiltinMethodType)) \
                        or value.__name__ not in ("format", "format_map"):
                    return value
        return super().getattr(obj, attribute)

    def getitem(self, obj: Any, argument: Any) -> Any:
        state = _STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise _timeout(state)
        owner = type(obj)
        if owner is dict or owner is list or owner is tuple or owner is str:
            try:
                return obj[argument]
            except (TypeError, LookupError):
                pass  # jinja's fallbacks (an attribute of that name, else undefined)
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """jinja's sandboxed ``str.format``/``format_map``, through :class:`LimitedFormatter`."""
        if not isinstance(value, (MethodType, BuiltinMethodType)) or value.__name__ not in ("format", "format_map"):
            return None
        f_self = value.__self__
        if not isinstance(f_self, str):
            return None
        str_type = type(f_self)
        is_format_map = value.__name__ == "format_map"
        formatter: Formatter
        if isinstance(f_self, Markup):
            formatter = _LimitedEscapeFormatter(self, escape=f_self.escape)
        else:
            formatter = LimitedFormatter(self)

        def wrapper(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs:
                    raise TypeError("format_map() takes no keyword arguments")
                if len(args) != 1:
                    raise TypeError(f"format_map() takes exactly one argument ({len(args)} given)")
                kwargs = args[0]
                args = ()
            rv = str_type(formatter.vformat(f_self, args, kwargs))
            return _check_built(rv, _STATE.get(), "str.format result")  # type: ignore[no-any-return]

        return functools.update_wrapper(wrapper, value)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        state = _STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise _timeout(state)
        owner = __obj.__self__ if isinstance(__obj, (BuiltinMethodType, MethodType)) else None
        cap = _limits(state).max_output
        if isinstance(owner, str):
            args, kwargs = _check_str_call(owner, __obj.__name__, args, kwargs, cap)
        if type(__obj) is BuiltinMethodType and type(owner) in _PLAIN_CALL_OWNERS:
            # what jinja's sandboxed call does for a builtin method of a plain value (always a safe callable,
            # taking no context): drop jinja's private keywords, call, and read StopIteration as undefined
            kwargs.pop("_block_vars", None)
            kwargs.pop("_loop_vars", None)
            try:
                rv = __obj(*args, **kwargs)
            except StopIteration:
                rv = __context.environment.undefined(
                    "value was undefined because a callable raised a StopIteration exception")
        else:
            rv = super().call(__context, __obj, *args, **kwargs)
        if owner is not None:
            if __obj.__name__ in _LOOKUP_METHODS:
                return rv  # an existing object; nothing was built
            if isinstance(owner, (list, dict, set)) and __obj.__name__ in _GROWING_METHODS:
                weight(owner, cap, what=f"{type(owner).__name__}.{__obj.__name__} result")
                _charge(state, 1)
        return _check_built(rv, state, "call result")

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        state = _STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise _timeout(state)
        cap = _limits(state).max_output
        if operator == "+":
            if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                if isinstance(left, str) and isinstance(right, str):
                    _refuse_size(len(left) + len(right), cap, "+ result")
                else:
                    size = weight(left, cap, what="+ operand")
                    size += size if right is left else weight(right, cap, what="+ operand")
                    _refuse_size(size, cap, "+ result")
                rv = left + right
                _charge(state, len(rv))
                return rv
        elif operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and n > 0:
                    _refuse_size(len(seq) * n, cap, "* result")
                    _refuse_size(weight(seq, cap, what="* operand") * n, cap, "* result")
                    rv = left * right
                    _charge(state, len(rv))
                    return rv
            if type(left) is int and type(right) is int and left.bit_length() + right.bit_length() > _MAX_INT_BITS:
                raise _limit_error(f"integer product of {left.bit_length() + right.bit_length()} bits is too large")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0 \
                    and abs(left).bit_length() * right > _MAX_INT_BITS:
                raise _limit_error(f"{abs(left).bit_length()}-bit integer to the power {right} is too large")
        elif operator == "%" and isinstance(left, str):
            _percent_bound(left, right, cap)
            return _check_built(left % right, state, "% result")
        return self.binop_table[operator](left, right)


def _finalize(value: Any) -> Any:
    """``{{ value }}`` output: refuse a container whose printed form would exceed the size limit."""
    if type(value) is not str and isinstance(value, _PRINTABLE_CONTAINERS):
        state = _STATE.get()
        if state is None or id(value) not in state.inputs:
            weight(value, _limits(state).max_output, what="output value")
    return value


def make_environment() -> ChatSandbox:
    """A fresh environment configured as transformers configures its own, with our limits."""
    env = ChatSandbox(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, GenerationTag],
                      finalize=_finalize)
    env.filters.update(_guarded_filters())
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["range"] = _safe_range
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    env.globals["lipsum"] = _lipsum
    return env


def render_limited(template: jinja2.Template, context: dict[str, Any], limits: RenderLimits,
                   inputs: Mapping[int, int] | frozenset[int] | None = None) -> str:
    """Render ``template`` under ``limits``; raises TemplateLimitError past them.

    ``inputs`` maps the id of every container the caller passed to its weight
    (see :func:`input_weights`); those stay immutable. Computed when omitted.
    """
    if inputs is None:
        inputs = input_weights(context)
    elif not isinstance(inputs, Mapping):
        inputs = dict.fromkeys(inputs, limits.max_output)
    state = _RenderState(time.monotonic() + limits.timeout_s, limits, inputs)
    token = _STATE.set(state)
    try:
        parts: list[str] = []
        size = 0
        # what template.generate() runs, minus its traceback rewriting (a compile() per template frame):
        # errors keep the frames of the generated code, which Renderer maps to template lines
        chunks = template.root_render_func(_new_context(template, context))
        for chunk in chunks:
            size += len(chunk)
            if size > limits.max_output:
                # raised at the template's yield, so the traceback names the template line
                chunks.throw(_limit_error(f"output exceeds {limits.max_output} characters"))
            parts.append(chunk)
            if time.monotonic() > state.deadline:
                chunks.throw(_timeout(state))
        return "".join(parts)
    except jinja2.TemplateSyntaxError:
        template.environment.handle_exception()  # jinja attaches the source to these, as generate() would
        raise  # handle_exception raises; not reached
    finally:
        _STATE.reset(token)


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
