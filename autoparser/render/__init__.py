"""Rendering: the sandboxed, bounded, transformers-compatible Jinja environment."""

from .limits import RenderLimits
from .renderer import Renderer, plain_data
from .sandbox import make_environment

__all__ = ["RenderLimits", "Renderer", "make_environment", "plain_data"]
