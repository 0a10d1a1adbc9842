"""Last-resort, template-specific adjustments. Each one names its template family and has a test.

Empty for now: every family so far is read by the general analysis.
"""

from __future__ import annotations

from ..render import Renderer
from .model import Analysis


def apply_special(analysis: Analysis, renderer: Renderer) -> Analysis:
    return analysis
