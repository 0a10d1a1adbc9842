"""The sandboxed Jinja environment chat templates render in, and its policy.

:func:`make_environment` reproduces Hugging Face transformers' environment
(``trim_blocks``, ``lstrip_blocks``, ``loopcontrols``, ``{% generation %}``,
``tojson`` without HTML escaping, ``raise_exception``, ``strftime_now``, ``dict``,
a ``namespace`` that refuses ``_``-prefixed names) inside jinja2's immutable
sandbox, and adds what transformers lacks. Every added check is a no-op on the
values real templates build, so output stays identical:

* **time**: a deadline checked on every attribute or item access, call,
  operator, filter and loop step (``for`` loops iterate through
  :func:`~autoparser.render.runtime.loop_iter`, emitted by
  :class:`~autoparser.render.compiler.LimitedCodeGenerator`);
* **size**: no string longer than ``limits.max_output`` and no container whose
  printed form could exceed it (its *weight*, see :mod:`~autoparser.render.weight`)
  is ever built. Checks sit where values are made: ``~``, ``+ * ** %``
  (``intercepted_binops``), list/tuple/dict literals, block and macro buffers,
  filters (each wrapped), method calls (:meth:`ChatSandbox.call`), ``str.format``
  and ``range``. Arguments that amplify (a width, a count, a separator) are
  checked before the operation allocates anything (:mod:`~autoparser.render.bounds`);
* **work**: the characters and items built in one render are summed and capped
  at ``limits.max_work``, which bounds memory held across many statements;
* **llama.cpp compatibility**: containers the template builds itself may be
  mutated (``ns.items.append(x)``), while the caller's inputs stay immutable.

Recursion is bounded by Python's recursion limit; callers turn ``RecursionError``
into :class:`~autoparser.errors.TemplateLimitError`.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from string import Formatter
from types import BuiltinMethodType, MethodType
from typing import Any, cast

import jinja2
from jinja2.ext import loopcontrols
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment, modifies_known_mutable
from markupsafe import Markup

from . import runtime
from .bounds import LimitedEscapeFormatter, LimitedFormatter, check_str_call, percent_bound
from .compiler import JOIN, LOOP_ITER, LimitedCodeGenerator
from .filters import guarded_filters
from .globals import GLOBALS, GenerationTag, TemplateNamespace
from .limits import MAX_INT_BITS, STATE, charge, limit_error, limits_of, refuse_size, timeout
from .weight import check_built, weight

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


class ChatSandbox(ImmutableSandboxedEnvironment):
    """Immutable sandbox whose limits are read from the current render state."""

    code_generator_class = LimitedCodeGenerator
    intercepted_binops = frozenset(["+", "*", "**", "%"])
    concat = staticmethod(runtime.limited_concat)

    # hooks the generated code calls (see autoparser.render.compiler)
    new_buffer = staticmethod(runtime.new_buffer)
    limited_slice = staticmethod(runtime.limited_slice)
    limited_literal = staticmethod(runtime.limited_literal)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        """jinja's sandbox rule; a mutating method is allowed on containers the template built."""
        if not SandboxedEnvironment.is_safe_attribute(self, obj, attr, value):
            return False
        if attr in _MUTATING_NAMES and modifies_known_mutable(obj, attr):
            state = STATE.get()
            # the caller's inputs are immutable; containers the template built are not
            return state is not None and id(obj) not in state.inputs
        return True

    def getattr(self, obj: Any, attribute: str) -> Any:
        """jinja's sandboxed ``obj.attribute`` with the deadline check and a direct path for plain values."""
        state = STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise timeout(state)
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
        """jinja's sandboxed ``obj[argument]`` with the deadline check and a direct path for plain values."""
        state = STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise timeout(state)
        owner = type(obj)
        if owner is dict or owner is list or owner is tuple or owner is str:
            try:
                return obj[argument]
            except (TypeError, LookupError):
                pass  # jinja's fallbacks (an attribute of that name, else undefined)
        return super().getitem(obj, argument)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """jinja's sandboxed ``str.format``/``format_map``, through :class:`~autoparser.render.bounds.LimitedFormatter`."""
        if not isinstance(value, (MethodType, BuiltinMethodType)) or value.__name__ not in ("format", "format_map"):
            return None
        f_self = value.__self__
        if not isinstance(f_self, str):
            return None
        str_type = type(f_self)
        is_format_map = value.__name__ == "format_map"
        formatter: Formatter
        if isinstance(f_self, Markup):
            formatter = LimitedEscapeFormatter(self, escape=f_self.escape)
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
            return cast(str, check_built(rv, STATE.get(), "str.format result"))

        return functools.update_wrapper(wrapper, value)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """jinja's sandboxed call with the deadline, amplification and result-size checks."""
        state = STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise timeout(state)
        owner = __obj.__self__ if isinstance(__obj, (BuiltinMethodType, MethodType)) else None
        limit = limits_of(state).max_output
        if isinstance(owner, str):
            args, kwargs = check_str_call(owner, __obj.__name__, args, kwargs, limit)
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
                weight(owner, limit, what=f"{type(owner).__name__}.{__obj.__name__} result")
                charge(state, 1)
        return check_built(rv, state, "call result")

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        """``+ * ** %``, refused before they build a value past the size limit."""
        state = STATE.get()
        if state is not None and time.monotonic() > state.deadline:
            raise timeout(state)
        limit = limits_of(state).max_output
        if operator == "+":
            if isinstance(left, (str, list, tuple)) and isinstance(right, (str, list, tuple)):
                if isinstance(left, str) and isinstance(right, str):
                    refuse_size(len(left) + len(right), limit, "+ result")
                else:
                    size = weight(left, limit, what="+ operand")
                    size += size if right is left else weight(right, limit, what="+ operand")
                    refuse_size(size, limit, "+ result")
                rv: Any = left + right  # type: ignore[operator] # like types, else Python's TypeError
                charge(state, len(rv))
                return rv
        elif operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(n, int) and n > 0:
                    refuse_size(len(seq) * n, limit, "* result")
                    refuse_size(weight(seq, limit, what="* operand") * n, limit, "* result")
                    rv = left * right
                    charge(state, len(rv))
                    return rv
            if type(left) is int and type(right) is int and left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise limit_error(f"integer product of {left.bit_length() + right.bit_length()} bits is too large")
        elif operator == "**":
            if isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0 \
                    and abs(left).bit_length() * right > MAX_INT_BITS:
                raise limit_error(f"{abs(left).bit_length()}-bit integer to the power {right} is too large")
        elif operator == "%" and isinstance(left, str):
            percent_bound(left, right, limit)
            return check_built(left % right, state, "% result")
        return self.binop_table[operator](left, right)


def make_environment() -> ChatSandbox:
    """A fresh environment configured as transformers configures its own, with our limits."""
    # optimized=False: jinja's constant folding walks every expression again for each one enclosing it
    # and costs more compile time (a sixth of it) than it saves over the few dozen renders a template gets
    env = ChatSandbox(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, GenerationTag],
                      finalize=runtime.finalize, optimized=False)
    env.filters.update(guarded_filters())
    env.filters[LOOP_ITER] = runtime.loop_iter  # the rewritten tree's own filters (see compiler)
    env.filters[JOIN] = runtime.limited_join
    env.globals.update(GLOBALS)
    return env
