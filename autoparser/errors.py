"""The autoparser exception tree.

    AutoparserError
     +-- TemplateError (also ValueError)      the template cannot be loaded or rendered
     |    +-- TemplateSecurityError           the sandbox refused an operation
     |    +-- TemplateLimitError              time or output-size limit exceeded
     +-- AnalysisError                        the analysis could not read the template
     +-- SchemaError (also ValueError)        a tool's JSON schema cannot be used (a $ref that is not
     |                                        local, a wrong keyword type, a schema too deep or too large)
     +-- ParseError (also ValueError)         model output could not be parsed (strict use only)
     +-- ExportError                          the format cannot be written in an export target's language

Model output never raises from ``Request.parse`` or the stream parser: malformed
text degrades to content with a flag. ``ParseError`` is raised only by the
strict helpers (``Request.parse_strict``) and carries the position.
"""

from __future__ import annotations


class AutoparserError(Exception):
    """Root of every error autoparser raises on purpose."""


class TemplateError(AutoparserError, ValueError):
    """A template failed to load or render; names the template, phase and line."""

    def __init__(self, message: str, *, template: str = "<template>", phase: str = "render",
                 lineno: int | None = None, source_line: str | None = None) -> None:
        self.message = message
        self.template = template
        self.phase = phase
        self.lineno = lineno
        self.source_line = source_line
        where = f"{template}" + (f", line {lineno}" if lineno else "")
        text = f"{where} ({phase}): {message}"
        if source_line:
            text += f"\n    {source_line.strip()}"
        super().__init__(text)


class TemplateSecurityError(TemplateError):
    """The sandbox refused an attribute, call or operation."""


class TemplateLimitError(TemplateError):
    """A render ran past its time or output-size limit."""


class AnalysisError(AutoparserError):
    """The differential analysis failed for a reason other than rendering."""

    def __init__(self, message: str, *, template: str = "<template>", phase: str = "analysis") -> None:
        self.template = template
        self.phase = phase
        super().__init__(f"{template} ({phase}): {message}")


class SchemaError(AutoparserError, ValueError):
    """A tool's (or response format's) JSON schema cannot be used: a ``$ref`` that is not local
    or does not resolve, a keyword of the wrong type, a pattern too large to run safely, a schema
    too deep or too large. Local references (``#/$defs/X``, ``#/definitions/X``) are resolved;
    nothing is ever retrieved. ``tool`` names the tool (None: the response format), ``keyword``
    the keyword at fault and ``path`` where it sits in the schema."""

    def __init__(self, message: str, *, ref: str | None = None, tool: str | None = None, keyword: str = "",
                 path: str = "") -> None:
        self.ref = ref
        self.tool = tool
        self.keyword = keyword
        self.path = path
        super().__init__(message)


class ParseError(AutoparserError, ValueError):
    """Model output did not match the expected format (strict parsing only)."""

    def __init__(self, message: str, *, text: str = "", pos: int = 0, template: str = "<template>") -> None:
        self.text = text
        self.pos = pos
        self.template = template
        line = text.count("\n", 0, pos) + 1
        column = pos - (text.rfind("\n", 0, pos) + 1) + 1
        self.line, self.column = line, column
        window = text[max(0, pos - 20): pos + 20]
        super().__init__(f"{template} (parse): {message} at line {line}, column {column}: {window!r}")


class ExportError(AutoparserError):
    """The template's format cannot be exported (e.g. as a transformers ``response_template``).

    ``reason`` is a stable key (``autoparser.export.response_template.REASONS``); the
    message names the template and what the target language cannot express.
    """

    def __init__(self, message: str, *, template: str = "<template>", reason: str = "",
                 target: str = "export") -> None:
        self.message = message
        self.template = template
        self.reason = reason
        self.target = target        # "export" (response_template), "structural tag"
        super().__init__(f"{template} ({target}): {message}")
