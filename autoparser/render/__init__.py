"""Rendering: the sandboxed, bounded, transformers-compatible Jinja environment."""

from .environment import RenderLimits, make_environment
from .renderer import Renderer, plain_data

__all__ = ["RenderLimits", "Renderer", "make_environment", "plain_data"]
