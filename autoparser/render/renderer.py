"""Render a chat template the way transformers does, bounded and sandboxed."""

from __future__ import annotations

import copy
import functools
import hashlib
import json
from typing import Any

import jinja2
from jinja2.sandbox import SecurityError

from ..errors import TemplateError, TemplateLimitError, TemplateSecurityError
from .environment import RenderLimits, make_environment, render_limited

REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")


@functools.lru_cache(maxsize=256)
def _compile(source: str) -> jinja2.Template:
    return make_environment().from_string(source)


def plain_data(x: Any) -> Any:
    """Deep-copy ``x`` into plain JSON-like types (as transformers' ``_plain_template_data``)."""
    if isinstance(x, dict):
        return {str(k): plain_data(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain_data(v) for v in x]
    if x is None or isinstance(x, (str, int, float, bool)):
        return x
    if hasattr(x, "to_dict"):
        return plain_data(x.to_dict())
    return f"<{type(x).__name__}>"


def alias_reasoning(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Give every message with a reasoning field both ``thinking`` and ``reasoning_content``."""
    out = []
    for m in messages:
        if isinstance(m, dict):
            value = next((m[f] for f in REASONING_FIELDS if m.get(f) is not None), None)
            if value is not None:
                m = dict(m)
                m.setdefault("thinking", value)
                m.setdefault("reasoning_content", value)
        out.append(m)
    return out


def _container_ids(x: Any, acc: set[int]) -> None:
    if isinstance(x, (dict, list)):
        acc.add(id(x))
        for v in (x.values() if isinstance(x, dict) else x):
            _container_ids(v, acc)


def _template_line(exc: BaseException) -> int | None:
    lineno = getattr(exc, "lineno", None)
    if lineno:
        return lineno
    tb = exc.__traceback__
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == "<template>":
            found = tb.tb_lineno
        tb = tb.tb_next
    if found is not None:
        return found
    return None


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
            self.template = _compile(source)
        except jinja2.TemplateSyntaxError as e:
            raise TemplateError(e.message or str(e), template=name, phase="compile", lineno=e.lineno,
                                source_line=self._line(e.lineno)) from None
        except RecursionError:
            raise TemplateLimitError("template nests too deeply to compile", template=name, phase="compile") from None

    def _line(self, lineno: int | None) -> str | None:
        if not lineno:
            return None
        lines = self.source.splitlines()
        return lines[lineno - 1] if 0 < lineno <= len(lines) else None

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool = False, **kwargs: Any) -> str:
        """Render like ``tokenizer.apply_chat_template(..., tokenize=False)``."""
        context: dict[str, Any] = {k: plain_data(v) for k, v in kwargs.items()}
        context["messages"] = alias_reasoning(plain_data(messages))
        if tools is not None:
            context["tools"] = plain_data(tools)
        context["add_generation_prompt"] = add_generation_prompt
        context.setdefault("bos_token", self.bos_token)
        context.setdefault("eos_token", self.eos_token)
        ids: set[int] = set()
        for v in context.values():
            _container_ids(v, ids)
        try:
            return render_limited(self.template, context, self.limits, frozenset(ids))
        except TemplateError as e:
            if e.template == "<template>":
                e.template = self.name
                e.args = (str(e).replace("<template>", self.name, 1),)
            raise
        except SecurityError as e:
            line = _template_line(e)
            raise TemplateSecurityError(str(e), template=self.name, lineno=line,
                                        source_line=self._line(line)) from None
        except jinja2.TemplateError as e:
            line = _template_line(e)
            raise TemplateError(getattr(e, "message", None) or str(e), template=self.name, lineno=line,
                                source_line=self._line(line)) from None
        except RecursionError:
            raise TemplateLimitError("recursion too deep", template=self.name) from None
        except MemoryError:
            raise TemplateLimitError("out of memory", template=self.name) from None
        except Exception as e:  # any Python error a template can provoke (TypeError, KeyError, ...)
            line = _template_line(e)
            raise TemplateError(f"{type(e).__name__}: {e}", template=self.name, lineno=line,
                                source_line=self._line(line)) from None

    def try_render(self, messages: list[dict[str, Any]], **kw: Any) -> str | None:
        """Render, or None when the template refuses (probes read a refusal as 'unsupported')."""
        try:
            return self.render(messages, **kw)
        except TemplateError:
            return None


def deep_copy(x: Any) -> Any:
    return copy.deepcopy(x)
