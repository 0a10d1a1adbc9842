"""Exporters: an analysis written in another tool's declarative language.

``response_template``: transformers' ``response_template`` (also read by vLLM's and
SGLang's ``hf``/``response_template`` parsers).
"""

from __future__ import annotations

from .response_template import REASONS, response_template

__all__ = ["REASONS", "response_template"]
