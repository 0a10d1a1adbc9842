"""Rendering with llama.cpp's fallbacks where transformers' own convention fails.

transformers always passes ``tools`` (``None`` when there are none). Some
templates iterate ``tools`` unconditionally and fail on ``None``; llama.cpp and
minja leave ``tools`` undefined instead, which such templates render. Some older
templates read the tools as ``functions`` (the OpenAI API's name for them before
``tools``) and the date as ``datetime`` (firefunction-v2); llama.cpp passes both
(the tools as indented JSON, the date as ``%b %d %Y %H:%M:%S GMT``). minja prints
a lazy sequence with ``tojson`` as a list (``tools | map(attribute='function') |
tojson``, llama.cpp's DeepSeek-R1 template), where transformers raises. We render
as transformers does and fall back to llama.cpp's conventions only when that fails.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from jinja2 import meta

from ..errors import TemplateError
from .filters import LAZY_AS_LIST
from .globals import strftime_now
from .renderer import Renderer
from .sandbox import make_environment


def render_compat(renderer: Renderer, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                  add_generation_prompt: bool = False, **kwargs: Any) -> str:
    try:
        return renderer.render(messages, tools=tools, add_generation_prompt=add_generation_prompt, **kwargs)
    except TemplateError as e:
        extra = _llamacpp_variables(renderer, tools, kwargs)
        lazy = "not JSON serializable" in e.message
        if not (extra or lazy or tools is None):
            raise
    token = LAZY_AS_LIST.set(True)
    try:
        if extra or lazy:
            try:
                return renderer.render(messages, tools=tools, add_generation_prompt=add_generation_prompt,
                                       **kwargs, **extra)
            except TemplateError:
                if tools is not None:
                    raise
        return renderer.render(messages, tools=_OMIT, add_generation_prompt=add_generation_prompt, **kwargs, **extra)
    finally:
        LAZY_AS_LIST.reset(token)


def try_render_compat(renderer: Renderer, messages: list[dict[str, Any]], **kw: Any) -> str | None:
    try:
        return render_compat(renderer, messages, **kw)
    except TemplateError:
        return None


@functools.lru_cache(maxsize=256)
def _reads(source: str) -> frozenset[str]:
    """The variables the template reads from its context."""
    try:
        return frozenset(meta.find_undeclared_variables(make_environment().parse(source)))
    except Exception:   # the renderer reports a template that does not parse
        return frozenset()


_LLAMACPP_NAMES = frozenset({"functions", "datetime"})


def _llamacpp_variables(renderer: Renderer, tools: list[dict[str, Any]] | None,
                        given: dict[str, Any]) -> dict[str, Any]:
    """``functions`` and ``datetime`` as llama.cpp passes them, for a template that reads them
    and a caller that did not pass them."""
    # which variables a template reads takes a second parse and code generation: only for a
    # template that names one of these at all
    reads = _reads(renderer.source) if renderer.names & _LLAMACPP_NAMES else frozenset()
    out: dict[str, Any] = {}
    if "functions" in reads and "functions" not in given:
        out["functions"] = json.dumps(tools, indent=2, ensure_ascii=False) if tools else ""
    if "datetime" in reads and "datetime" not in given:
        out["datetime"] = strftime_now("%b %d %Y %H:%M:%S GMT")
    return out


class _Omit(list[Any]):
    """Marker value: leave ``tools`` undefined in the render context."""

    omit = True


_OMIT: Any = _Omit()
