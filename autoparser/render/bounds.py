"""Size bounds checked before an amplifying operation allocates anything.

``%`` and ``str.format`` (widths, precisions, repeated keys), ``replace``,
``join``, ``center``/``ljust``/``zfill``, ``expandtabs``, ``translate`` and
``striptags`` can build far more than they are given. Each check here estimates
the result from the arguments and raises :class:`~autoparser.errors.TemplateLimitError`
past the size limit, so the operation never runs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import jinja2
from jinja2.sandbox import SandboxedEscapeFormatter, SandboxedFormatter

from .limits import MAX_STRIPTAGS_WORK, cap, limit_error, refuse_size
from .weight import weight

_PERCENT_SPEC = re.compile(r"%(?:\(([^)]*)\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?[hlL]?(.)", re.S)
_SPEC_NUMBER = re.compile(r"\d+")


def number_bound(num: str, limit: int, what: str) -> int:
    """The number a format spec spells, refused when it has more than 12 digits."""
    if len(num) > 12:
        refuse_size(10**12, limit, what)
    return int(num)


def percent_bound(fmt: str, args: Any, limit: int) -> None:
    """Refuse ``fmt % args`` when its result could exceed ``limit`` (widths, precisions, repeated keys)."""
    total = len(fmt)
    mapping = isinstance(args, Mapping)
    star = max((abs(a) for a in (args if isinstance(args, tuple) else (args,)) if isinstance(a, int)), default=0)
    keyed = False
    for key, width, prec, _conv in _PERCENT_SPEC.findall(fmt):
        for num in (width, prec):
            total += star if num == "*" else number_bound(num, limit, "formatted string") if num else 0
        if key and mapping:
            keyed = True
            total += weight(args.get(key), limit, what="format argument")
        total += 32
        refuse_size(total, limit, "formatted string")
    if not keyed:
        total += weight(args, limit, what="format argument")
    refuse_size(total, limit, "formatted string")


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
            weight(value, cap(), what="format argument")
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        limit = cap()
        for num in _SPEC_NUMBER.findall(format_spec):
            refuse_size(number_bound(num, limit, "format width"), limit, "format width")
        refuse_size(self._size + weight(value, limit, what="format argument"), limit, "formatted string")
        out = super().format_field(value, format_spec)
        self._size += len(out)
        refuse_size(self._size, limit, "formatted string")
        return out


class LimitedEscapeFormatter(LimitedFormatter, SandboxedEscapeFormatter):
    """:class:`LimitedFormatter` for ``Markup.format`` (escapes its arguments)."""


def arg(args: tuple[Any, ...], kwargs: dict[str, Any], i: int, name: str, default: Any = None) -> Any:
    """Argument ``i`` of a call, passed by position or as ``name``."""
    return args[i] if len(args) > i else kwargs.get(name, default)


def replace_bound(s: Any, old: Any, new: Any, count: Any, limit: int) -> None:
    """Refuse ``s.replace(old, new, count)`` when its result could exceed ``limit``."""
    if not (isinstance(s, str) and isinstance(old, str) and isinstance(new, str)) or len(new) <= len(old):
        return
    hits = len(s) + 1 if old == "" else s.count(old)
    if isinstance(count, int) and count >= 0:
        hits = min(hits, count)
    refuse_size(len(s) + hits * (len(new) - len(old)), limit, "replace result")


def striptags_bound(s: Any) -> None:
    """Refuse ``striptags`` where markupsafe's quadratic work would be too slow."""
    if isinstance(s, str) and len(s) * s.count("<") > MAX_STRIPTAGS_WORK:
        raise limit_error(f"striptags over {s.count('<')} tags in {len(s)} characters is too slow")


def join_items(sep: str, items: Any, limit: int, what: str = "join result") -> list[Any]:
    """Materialize ``items`` and refuse a join whose result could exceed ``limit``."""
    seq = list(items)
    total = len(sep) * max(len(seq) - 1, 0)
    refuse_size(total, limit, what)
    weight(seq, limit - total, per_item=0, what=what)
    return seq


def check_str_call(owner: str, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                   limit: int) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """Refuse a str method call that would build more than ``limit`` characters."""
    if name in ("center", "ljust", "rjust", "zfill"):
        width = arg(args, kwargs, 0, "width", 0)
        if isinstance(width, int):
            refuse_size(width, limit, f"str.{name} result")
    elif name == "expandtabs":
        size = arg(args, kwargs, 0, "tabsize", 8)
        if isinstance(size, int):
            refuse_size(len(owner) + owner.count("\t") * max(size, 0), limit, "str.expandtabs result")
    elif name == "replace":
        replace_bound(owner, arg(args, kwargs, 0, "old"), arg(args, kwargs, 1, "new"),
                      arg(args, kwargs, 2, "count", -1), limit)
    elif name == "join" and args:
        args = (join_items(owner, args[0], limit, "str.join result"), *args[1:])
    elif name == "translate" and args and isinstance(args[0], Mapping):
        longest = max((len(v) for v in args[0].values() if isinstance(v, str)), default=1)
        refuse_size(len(owner) * max(longest, 1), limit, "str.translate result")
    elif name == "striptags":
        striptags_bound(owner)
    return args, kwargs
