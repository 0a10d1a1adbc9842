"""Render a chat template the way transformers does, bounded and sandboxed."""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import json
import warnings
from collections.abc import Mapping
from types import TracebackType
from typing import Any

import jinja2
from jinja2.exceptions import SecurityError
from jinja2.utils import internal_code

from ..errors import TemplateError, TemplateLimitError, TemplateSecurityError
from .limits import RenderLimits
from .literals import TemplateText, template_text
from .runtime import render_limited
from .sandbox import make_environment
from .weight import input_weights

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
_TEMPLATE_FILENAME = "<template>"  # jinja names the frames of templates compiled from strings so


@functools.lru_cache(maxsize=256)
def _compile(source: str) -> tuple[jinja2.Template, TemplateText]:
    """The compiled template, the text it writes itself and the names it mentions, from one parse."""
    with warnings.catch_warnings():
        # jinja decodes string literals with the unicode-escape codec, which warns about escapes
        # Python does not know ('\#') and keeps them as written, as transformers does; under a
        # warnings filter set to "error" jinja would turn that warning into a TemplateSyntaxError
        warnings.filterwarnings("ignore", message=r"invalid .*escape sequence", category=DeprecationWarning)
        env = make_environment()
        tree = env.parse(source)
        text = template_text(tree)    # before compiling: the limits rewrite the tree
        return env.from_string(tree), text


def clear_caches() -> None:
    """Forget every compiled template, so the next analysis of any template starts cold (benchmarks)."""
    _compile.cache_clear()


def plain_data(x: Any) -> Any:
    """Rebuild ``x`` from plain JSON-like types, as transformers' ``_plain_template_data`` does.

    Scalars lose their subclasses (enums become their value), mappings become
    dicts, lists stay lists and tuples tuples, dataclasses and pydantic models
    become dicts, numpy scalars their Python value; anything else becomes the
    placeholder ``"<TypeName>"``.
    """
    t = type(x)
    if x is None or t is str or t is int or t is float or t is bool:
        return x
    if t is dict:  # str keys and values are kept as they are, without a call each
        return {k if type(k) is str else plain_data(k): v if type(v) is str else plain_data(v)
                for k, v in x.items()}
    if t is list:
        return [v if type(v) is str else plain_data(v) for v in x]
    if isinstance(x, str):
        return str.__str__(x)
    if isinstance(x, int):
        return int.__int__(x)
    if isinstance(x, float):
        return float.__float__(x)
    if isinstance(x, Mapping):
        return {plain_data(k): plain_data(v) for k, v in x.items()}
    if isinstance(x, list):
        return [plain_data(v) for v in x]
    if isinstance(x, tuple):
        return tuple(plain_data(v) for v in x)
    if type(x).__module__ == "numpy" and callable(getattr(x, "item", None)) and getattr(x, "ndim", None) == 0:
        return plain_data(x.item())
    if dataclasses.is_dataclass(x) and not isinstance(x, type):
        return {f.name: plain_data(getattr(x, f.name)) for f in dataclasses.fields(x)}
    if callable(getattr(x, "model_dump", None)):
        return plain_data(x.model_dump())
    return f"<{type(x).__name__}>"


def alias_reasoning(messages: list[Any]) -> list[Any]:
    """Give every message with a reasoning field ``thinking`` and ``reasoning_content`` (as transformers).

    ``thinking`` is added only when absent; ``reasoning_content`` always takes
    the first non-null of ``reasoning_content``, ``thinking``, ``reasoning``.
    """
    out = []
    for m in messages:
        if isinstance(m, dict):
            value = next((m[f] for f in REASONING_FIELDS if m.get(f) is not None), None)
            if value is not None:
                m = {"thinking": value, **m, "reasoning_content": value}
        out.append(m)
    return out


def _template_line(exc: BaseException) -> int | None:
    """The template line an error was raised at (the innermost template frame of its traceback).

    A frame of generated template code maps its Python line to the template line
    as jinja's traceback rewriting would (skipping jinja's internal frames); a
    frame jinja already rewrote names it.
    """
    lineno = getattr(exc, "lineno", None)
    if isinstance(lineno, int) and lineno > 0:
        return lineno
    tb: TracebackType | None = exc.__traceback__
    found = None
    while tb is not None:
        template = tb.tb_frame.f_globals.get("__jinja_template__")
        if tb.tb_frame.f_code in internal_code:
            pass  # jinja's rewriting skips its internal frames (such as a missing filter's stub)
        elif template is not None:
            found = template.get_corresponding_lineno(tb.tb_lineno)
        elif tb.tb_frame.f_code.co_filename == _TEMPLATE_FILENAME:
            found = tb.tb_lineno
        tb = tb.tb_next
    return found


class Renderer:
    """A compiled template plus its special tokens; ``render`` never leaks state between calls."""

    def __init__(self, source: str, *, name: str = "<template>", bos_token: str = "", eos_token: str = "",
                 limits: RenderLimits | None = None) -> None:
        self.source = source
        self.name = name
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.limits = limits or RenderLimits()
        self.digest = hashlib.sha256(
            json.dumps([source, bos_token, eos_token]).encode("utf-8", "surrogatepass")).hexdigest()
        try:
            self.template, text = _compile(source)
        except jinja2.TemplateSyntaxError as e:
            raise TemplateError(e.message or str(e), template=name, phase="compile", lineno=e.lineno,
                                source_line=self._line(e.lineno)) from None
        except (RecursionError, SyntaxError) as e:  # SyntaxError: Python's "too many statically nested blocks"
            raise TemplateLimitError(f"template nests too deeply to compile ({type(e).__name__}: {e})",
                                     template=name, phase="compile") from None
        except Exception as e:  # anything else compiling a template can raise
            raise self._error(e, "compile") from None
        self.literals: tuple[str, ...] = text.literals
        # every variable name the template mentions: a render context variable not named here is
        # never read, so renders that differ only in such variables are the same rendering
        self.names: frozenset[str] = text.names

    @functools.cached_property
    def _lines(self) -> list[str]:
        return self.source.splitlines()

    def _line(self, lineno: int | None) -> str | None:
        if not lineno:
            return None
        lines = self._lines
        return lines[lineno - 1] if 0 < lineno <= len(lines) else None

    def _error(self, exc: BaseException, phase: str = "render") -> TemplateError:
        """Our error for ``exc``, naming this template, the phase and the template line."""
        line = _template_line(exc)
        if isinstance(exc, TemplateError):
            cls: type[TemplateError] = type(exc)
            message = exc.message
            line = exc.lineno or line
        elif isinstance(exc, SecurityError):
            cls, message = TemplateSecurityError, str(exc)
        elif isinstance(exc, RecursionError):
            cls, message = TemplateLimitError, "recursion too deep (macro or loop recursion)"
        elif isinstance(exc, MemoryError):
            cls, message = TemplateLimitError, "out of memory"
        elif isinstance(exc, jinja2.TemplateError):
            cls, message = TemplateError, getattr(exc, "message", None) or str(exc)
        else:  # any Python error a template can provoke (TypeError, KeyError, ...)
            cls, message = TemplateError, f"{type(exc).__name__}: {exc}"
        return cls(message, template=self.name, phase=phase, lineno=line, source_line=self._line(line))

    def context(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
                add_generation_prompt: bool = False, **kwargs: Any) -> dict[str, Any]:
        """The variables a render sees, exactly as transformers' ``apply_chat_template`` builds them."""
        context: dict[str, Any] = {"bos_token": self.bos_token, "eos_token": self.eos_token}
        context.update({k: plain_data(v) for k, v in kwargs.items()})
        context["messages"] = alias_reasoning(plain_data(messages))
        if not getattr(tools, "omit", False):   # render.compat: leave tools undefined (llama.cpp's way)
            context["tools"] = plain_data(tools)
        context["documents"] = plain_data(kwargs.get("documents"))
        context["add_generation_prompt"] = add_generation_prompt
        return context

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool = False, **kwargs: Any) -> str:
        """Render like ``tokenizer.apply_chat_template(..., tokenize=False)``."""
        context = self.context(messages, tools, add_generation_prompt, **kwargs)
        try:
            return render_limited(self.template, context, self.limits, input_weights(context))
        except Exception as e:  # every failure, RecursionError and MemoryError included, becomes a TemplateError
            raise self._error(e) from None

    def try_render(self, messages: list[dict[str, Any]], **kw: Any) -> str | None:
        """Render, or None when the template refuses (probes read a refusal as 'unsupported')."""
        try:
            return self.render(messages, **kw)
        except TemplateError:
            return None


def deep_copy(x: Any) -> Any:
    return copy.deepcopy(x)
