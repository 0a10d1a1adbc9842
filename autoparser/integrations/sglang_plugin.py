"""SGLang general plugin: registers autoparser's detectors as ``autoparser``.

Entry point (pyproject.toml): ``[project.entry-points."sglang.srt.plugins"]
autoparser = "autoparser.integrations.sglang_plugin:register"``. SGLang calls it in every
process before parsing its arguments (``sglang.srt.plugins.load_plugins``); it inserts the
two classes into SGLang's live registries, which ``--tool-call-parser`` and
``--reasoning-parser`` read. Idempotent; no template is read until a request needs one.
"""

from __future__ import annotations

NAME = "autoparser"


def register() -> None:
    """Register ``autoparser`` as an SGLang tool-call parser and reasoning parser."""
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser

    from .sglang import AutoparserDetector, AutoparserReasoningDetector

    FunctionCallParser.ToolCallParserEnum[NAME] = AutoparserDetector
    ReasoningParser.DetectorMap[NAME] = AutoparserReasoningDetector
