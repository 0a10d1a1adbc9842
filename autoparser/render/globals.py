"""transformers' template globals and its ``{% generation %}`` tag, bounded.

``raise_exception``, ``strftime_now``, ``dict`` and a ``namespace`` that refuses
``_``-prefixed names, as transformers defines them; jinja's ``range`` and
``lipsum`` with our limits.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError
from jinja2.ext import Extension
from jinja2.parser import Parser
from jinja2.utils import Namespace, pass_eval_context

from .limits import STATE, cap, limit_error, limits_of
from .weight import weight


def raise_exception(message: str) -> None:
    """transformers' ``raise_exception``: fail the render with ``message``."""
    raise jinja2.exceptions.TemplateError(message)


def _now() -> datetime:
    """The clock ``strftime_now`` reads; ``SOURCE_DATE_EPOCH`` pins it for reproducible prompts."""
    pinned = os.environ.get("SOURCE_DATE_EPOCH")
    if pinned and pinned.strip().lstrip("-").isdigit():
        return datetime.fromtimestamp(int(pinned), tz=timezone.utc).replace(tzinfo=None)
    return datetime.now()


def strftime_now(fmt: str) -> str:
    """transformers' ``strftime_now``: the current local time, formatted."""
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
            weight(self, cap(), what="namespace")

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(
                f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}. "
                "Please rename the attribute.")


def _safe_range(*args: int) -> range:
    """jinja's ``safe_range`` with our limit; loops over it check the deadline as every loop does."""
    limit = limits_of(STATE.get()).max_range
    rng = range(*args)
    if len(rng) > limit:
        raise limit_error(f"range of {len(rng)} items exceeds the limit of {limit}")
    return rng


def _lipsum(n: int = 5, html: bool = True, min: int = 20, max: int = 100) -> str:  # jinja's parameter names
    """jinja's ``lipsum``, refused past 100,000 words."""
    if n * max > 100_000:
        raise limit_error(f"lipsum of {n} paragraphs of up to {max} words is too large")
    return jinja2.utils.generate_lorem_ipsum(n=n, html=html, min=min, max=max)


class GenerationTag(Extension):
    """transformers' ``{% generation %}...{% endgeneration %}``: a call block that returns its body."""

    tags = {"generation"}  # noqa: RUF012 - jinja's Extension API

    def parse(self, parser: Parser) -> nodes.Node:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @pass_eval_context
    def _generation_support(self, context: Any, caller: Any) -> str:
        return caller()  # type: ignore[no-any-return]


GLOBALS: dict[str, Any] = {
    "raise_exception": raise_exception,
    "strftime_now": strftime_now,
    "range": _safe_range,
    "dict": TemplateDict(),
    "namespace": TemplateNamespace,
    "lipsum": _lipsum,
}
