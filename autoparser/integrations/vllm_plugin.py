"""vLLM general plugin: registers autoparser's parsers as ``autoparser``, lazily.

Entry point (pyproject.toml): ``[project.entry-points."vllm.general_plugins"]
autoparser = "autoparser.integrations.vllm_plugin:register"``. vLLM calls it in
every process; it only records module paths (idempotent), so neither autoparser's
analysis nor vLLM's parser stack is imported until a parser is asked for.
"""

from __future__ import annotations

NAME = "autoparser"
MODULE = "autoparser.integrations.vllm"


def register() -> None:
    """Register ``autoparser`` with vLLM's tool and reasoning parser managers."""
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    ToolParserManager.register_lazy_module(NAME, MODULE, "AutoparserToolParser")
    ReasoningParserManager.register_lazy_module(NAME, MODULE, "AutoparserReasoningParser")
