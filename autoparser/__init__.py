"""autoparser: derive reasoning, content and tool-call parsers from a model's Jinja chat template.

>>> from autoparser import ChatTemplate
>>> tmpl = ChatTemplate.from_file("t.jinja", bos_token="<s>", eos_token="</s>")
>>> req = tmpl.apply(messages, tools=tools)
>>> req.parse(model_output).to_dict()
"""

from ._version import __version__
from .errors import (
    AnalysisError,
    AutoparserError,
    ExportError,
    ParseError,
    SchemaError,
    TemplateError,
    TemplateLimitError,
    TemplateSecurityError,
)
from .runtime.message import Message, ToolCall, merge_deltas
from .template import ChatTemplate, Request, StreamParser

__all__ = [
    "AnalysisError",
    "AutoparserError",
    "ChatTemplate",
    "ExportError",
    "Message",
    "ParseError",
    "Request",
    "SchemaError",
    "StreamParser",
    "TemplateError",
    "TemplateLimitError",
    "TemplateSecurityError",
    "ToolCall",
    "__version__",
    "merge_deltas",
]


def __dir__() -> list[str]:
    return list(__all__)
