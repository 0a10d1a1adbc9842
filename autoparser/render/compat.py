"""Rendering with llama.cpp's fallback where transformers' own convention fails.

transformers always passes ``tools`` (``None`` when there are none). Some
templates iterate ``tools`` unconditionally and fail on ``None``; llama.cpp and
minja leave ``tools`` undefined instead, which such templates render. We render
as transformers does and fall back to an undefined ``tools`` only when that fails.
"""

from __future__ import annotations

from typing import Any

from ..errors import TemplateError
from .renderer import Renderer


def render_compat(renderer: Renderer, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                  add_generation_prompt: bool = False, **kwargs: Any) -> str:
    try:
        return renderer.render(messages, tools=tools, add_generation_prompt=add_generation_prompt, **kwargs)
    except TemplateError:
        if tools is not None:
            raise
        return renderer.render(messages, tools=_OMIT, add_generation_prompt=add_generation_prompt, **kwargs)


def try_render_compat(renderer: Renderer, messages: list[dict[str, Any]], **kw: Any) -> str | None:
    try:
        return render_compat(renderer, messages, **kw)
    except TemplateError:
        return None


class _Omit(list[Any]):
    """Marker value: leave ``tools`` undefined in the render context."""

    omit = True


_OMIT: Any = _Omit()
