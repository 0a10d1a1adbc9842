"""The public API: ``ChatTemplate`` (analysed once) and ``Request`` (one prompt and its parser)."""

from __future__ import annotations

import copy
import json
import secrets
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

from . import sources
from .analysis import analyze
from .analysis.model import Analysis
from .errors import AutoparserError
from .render import Renderer, RenderLimits
from .render.compat import render_compat
from .runtime import markers as mk
from .runtime.engine import Engine, EngineSpec
from .runtime.message import Message

ReasoningFormatOption = Literal["auto", "none", "deepseek", "deepseek-legacy"]


class ChatTemplate:
    """A chat template plus its analysis. Build with ``from_file``, ``from_string``,
    ``from_pretrained`` or ``from_gguf``; the analysis runs once and is cached."""

    def __init__(self, source: str, *, name: str = "<template>", bos_token: str = "", eos_token: str = "",
                 special_tokens: frozenset[str] | None = None, limits: RenderLimits | None = None) -> None:
        self.renderer = Renderer(source, name=name, bos_token=bos_token, eos_token=eos_token, limits=limits)
        self.special_tokens = special_tokens

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_string(cls, source: str, *, name: str = "<string>", bos_token: str = "", eos_token: str = "",
                    **kw: Any) -> ChatTemplate:
        return cls(source, name=name, bos_token=bos_token, eos_token=eos_token, **kw)

    @classmethod
    def from_file(cls, path: str | Path, *, bos_token: str | None = None, eos_token: str | None = None,
                  template_name: str | None = None, **kw: Any) -> ChatTemplate:
        """A ``.jinja`` file, a model folder, a ``tokenizer_config.json`` or a ``.gguf``."""
        src = sources.load_path(path, template_name=template_name, bos_token=bos_token, eos_token=eos_token)
        return cls._from_source(src, **kw)

    @classmethod
    def from_pretrained(cls, path: str | Path, *, template_name: str | None = None, **kw: Any) -> ChatTemplate:
        return cls._from_source(sources.load_pretrained(path, template_name=template_name), **kw)

    @classmethod
    def from_gguf(cls, path: str | Path, *, template_name: str | None = None, **kw: Any) -> ChatTemplate:
        return cls._from_source(sources.load_gguf(path, template_name=template_name), **kw)

    @classmethod
    def _from_source(cls, src: sources.TemplateSource, **kw: Any) -> ChatTemplate:
        return cls(src.source, name=src.name, bos_token=src.bos_token, eos_token=src.eos_token,
                   special_tokens=src.special_tokens, **kw)

    # ------------------------------------------------------------ properties
    @property
    def source(self) -> str:
        return self.renderer.source

    @property
    def name(self) -> str:
        return self.renderer.name

    @cached_property
    def analysis(self) -> Analysis:
        return analyze(self.renderer)

    def render(self, messages: list[dict[str, Any]], **kw: Any) -> str:
        """Render directly (no analysis), as ``apply_chat_template(tokenize=False)``."""
        return self.renderer.render(messages, **kw)

    def apply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
              add_generation_prompt: bool = True, continue_final_message: bool = False,
              chat_template_kwargs: dict[str, Any] | None = None, tool_choice: Any = "auto",
              parallel_tool_calls: bool = True, reasoning_format: ReasoningFormatOption = "auto",
              response_format: dict[str, Any] | None = None) -> Request:
        """Render the prompt and build the parser for this request."""
        return Request(self, messages, tools=tools, add_generation_prompt=add_generation_prompt,
                       continue_final_message=continue_final_message,
                       chat_template_kwargs=chat_template_kwargs or {}, tool_choice=tool_choice,
                       parallel_tool_calls=parallel_tool_calls, reasoning_format=reasoning_format,
                       response_format=response_format)

    def response_template(self) -> dict[str, Any]:
        """The transformers ``response_template`` for this template (``autoparser.export``); raises ``ExportError``."""
        from .export.response_template import response_template

        return response_template(self.analysis, eos_token=self.renderer.eos_token)

    def __repr__(self) -> str:
        return f"ChatTemplate({self.name!r})"


class Request:
    """One rendered prompt with the parser (and grammar) that fit it."""

    def __init__(self, template: ChatTemplate, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                 add_generation_prompt: bool, continue_final_message: bool, chat_template_kwargs: dict[str, Any],
                 tool_choice: Any, parallel_tool_calls: bool, reasoning_format: str,
                 response_format: dict[str, Any] | None) -> None:
        if continue_final_message and add_generation_prompt and messages and \
                messages[-1].get("role") == "assistant":
            add_generation_prompt = False
        self.template = template
        self.analysis = template.analysis
        self.messages = copy.deepcopy(messages)
        self.tools = copy.deepcopy(tools) if tools else None
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.reasoning_format = reasoning_format
        self.response_format = response_format
        self.chat_template_kwargs = chat_template_kwargs
        self.continue_final_message = continue_final_message
        self.prompt = self._render(add_generation_prompt)
        self.spec = self._spec()

    # ------------------------------------------------------------ prompt
    def _render(self, add_generation_prompt: bool) -> str:
        kw = dict(self.chat_template_kwargs)
        text = render_compat(self.template.renderer, polyfill_messages(self.messages, self.analysis), tools=self.tools,
                                             add_generation_prompt=add_generation_prompt, **kw)
        if self.continue_final_message and self.messages:
            final = self.messages[-1]
            last = final.get("content") or next(
                (final[k] for k in ("reasoning_content", "thinking", "reasoning") if final.get(k)), None)
            if isinstance(last, str) and last.strip():
                # as transformers: cut the rendering right after the final message's text
                cut = text.rfind(last.strip())
                if cut >= 0:
                    text = text[: cut + len(last.strip())]
                    if last != last.rstrip() and text.endswith(last.strip()):
                        text += last[len(last.rstrip()):]
        return text

    # ------------------------------------------------------------ parser spec
    @property
    def tools_active(self) -> bool:
        return bool(self.tools) and self.tool_choice != "none" and self.analysis.tools.style != "none"

    def _reasoning_state(self) -> tuple[bool, bool, str]:
        """(prompt leaves reasoning open, reasoning switched off, prefilled text)."""
        r = self.analysis.reasoning
        if r.mode == "none":
            return False, False, ""
        tail = self.prompt[-4000:]
        start, end = r.start.strip(), r.end.strip()
        header = self.analysis.assistant_header
        if end and header and "".join(tail.split()).endswith("".join((header + end).split())):
            return False, True, ""   # the assistant turn opens with a closed reasoning block: thinking is off
        if start:
            i = tail.rfind(start)
            if i >= 0:
                after = tail[i + len(start):]
                if not after.strip():
                    return True, False, tail[i:]
                if end and after.strip() == end:
                    return False, True, ""
                if end and end not in after and self.continue_final_message:
                    return True, False, tail[i:]
            return False, False, ""
        # delimiter style: reasoning comes first unless an end marker already closed it
        if end and tail.rstrip().endswith(end):
            return False, True, ""
        off = bool(r.off_kwargs) and all(self.chat_template_kwargs.get(k) == v for k, v in r.off_kwargs.items())
        return (not off), off, ""

    def _spec(self) -> EngineSpec:
        a = self.analysis
        open_, off, prefix = self._reasoning_state()
        if self.continue_final_message and self.messages and a.reasoning.mode != "none":
            final = self.messages[-1]
            if final.get("role") == "assistant" and not final.get("content") and any(
                    final.get(k) for k in ("reasoning_content", "thinking", "reasoning")):
                open_, off = True, False   # the model goes on with the reasoning it started
        extract = self.reasoning_format != "none" and a.reasoning.mode != "none" and not off
        tools = a.tools if self.tools_active else None
        schemas = {}
        for t in self.tools or []:
            fn = t.get("function", t) if isinstance(t, dict) else {}
            if isinstance(fn, dict) and fn.get("name"):
                schemas[fn["name"]] = fn.get("parameters") or {}
        eos = self.template.renderer.eos_token
        stop = tuple(dict.fromkeys([*a.end_of_turn, *([eos] if eos else [])]))
        recognised = stop + ((a.assistant_header,) if a.assistant_header else ())
        content_start, content_end = a.content.start, a.content.end
        if self.response_format and not content_start:
            content_start, content_end = "```json", "```"   # a fenced JSON answer: the fence is a marker
        return EngineSpec(
            reasoning_start=a.reasoning.start, reasoning_end=a.reasoning.end, extract_reasoning=extract,
            start_in_reasoning=open_, reasoning_prefix=prefix,
            strip_leading_reasoning=off and self.reasoning_format != "none",
            content_start=content_start, content_end=content_end, stop_markers=recognised, tools=tools,
            content_markers=a.content.in_tool_turns,
            tool_schemas=schemas, json_trigger=self._json_trigger(tools, schemas), tool_names=tuple(schemas),
            tentative_reasoning=a.reasoning.mode == "delimiter" and not self.continue_final_message,
            id_prefix=f"call_{secrets.token_hex(4)}_")

    def _json_trigger(self, tools: Any, schemas: dict[str, dict]) -> str:
        if tools is None or tools.style != "json" or tools.call_start or tools.section_start:
            return ""
        if tools.json is not None and tools.json.name_is_key:
            import regex

            names = "|".join(regex.escape(n) for n in schemas) or r"[^\"]+"
            return r"\{\s*\"(?:" + names + r")\"\s*:"
        return mk.pattern(tools.name_prefix)

    # ------------------------------------------------------------ parsing
    def parse(self, text: str, partial: bool = False) -> Message:
        """Parse a complete model output (or, with ``partial``, a prefix of one). Never raises on output."""
        engine = self._engine()
        engine.feed(text)
        if partial:
            engine.finish_partial()
        else:
            engine.finish()
        return engine.msg

    def stream(self) -> StreamParser:
        return StreamParser(self._engine())

    def _engine(self) -> Engine:
        engine = Engine(self.spec)
        if self.continue_final_message and self.messages and self.messages[-1].get("role") == "assistant":
            final = self.messages[-1]
            reasoning = next((final[k] for k in ("reasoning_content", "thinking", "reasoning")
                              if isinstance(final.get(k), str) and final.get(k)), "")
            prefilled = final.get("content")
            if reasoning and self.spec.extract_reasoning:
                engine.prefill_reasoning(reasoning, still_open=self.spec.start_in_reasoning)
            if isinstance(prefilled, str) and prefilled:
                engine.prefill_content(prefilled)
        return engine

    # ------------------------------------------------------------ grammar and decisions
    @cached_property
    def gbnf(self) -> str | None:
        try:
            from .grammar.request import build_gbnf
        except ImportError:
            return None
        return build_gbnf(self)

    @cached_property
    def grammar_triggers(self) -> list[dict[str, str]]:
        try:
            from .grammar.request import triggers
        except ImportError:
            return []
        return triggers(self)

    @property
    def preserved_tokens(self) -> tuple[str, ...]:
        """Markers the sampler must keep whole (PRE.1); token-level when a tokenizer is known."""
        return self.decisions.preserved_tokens

    @property
    def stop(self) -> tuple[str, ...]:
        """End-of-turn strings a server should stop generating at (PRE.5)."""
        return self.decisions.stop

    # --- decisions (autoparser.decisions) ---
    @cached_property
    def decisions(self) -> DecisionRow:  # noqa: F821 - autoparser.decisions.row, imported on use
        """PRE.1-PRE.6 for this request (``autoparser.decisions.row.decide``)."""
        from .decisions.row import decide

        return decide(self.template, self)

    @property
    def skip_special_tokens(self) -> bool:
        """PRE.1: decode with this ``skip_special_tokens`` (the tokenizer's answer, else the heuristic's)."""
        return self.decisions.skip_special_tokens_applied

    def stop_for(self, ignore_eos: bool = False) -> tuple[str, ...]:
        """PRE.5: stop strings for the server; none when ``ignore_eos`` asks to run past end of turn."""
        return () if ignore_eos else self.decisions.stop
    # --- end decisions ---

    # --- peg (autoparser.grammar.peg) ---
    @cached_property
    def peg(self) -> PegParser:  # noqa: F821 - autoparser.grammar.peg, imported on use
        """The strict PEG parser for this request (``PegParser.text`` is its grammar), built on first use."""
        from .grammar.peg import build_peg

        return build_peg(self)

    def parse_strict(self, text: str) -> Message:
        """Parse a complete output that must match the format exactly.

        Returns the message ``parse`` would give; raises ``ParseError`` (with the position)
        where ``parse`` would degrade to content instead.
        """
        return self.peg.parse(text)
    # --- end peg ---


def polyfill_messages(messages: list[dict[str, Any]], analysis: Analysis) -> list[dict[str, Any]]:
    """Adapt messages to what the template can render (as minja/llama.cpp do).

    Arguments given as a JSON string become a dict when the template only renders
    dicts; ``content: None`` next to tool calls becomes ``""`` when the template
    refuses None. Messages are never changed in place.
    """
    caps = analysis.capabilities
    needs_objects = caps.object_arguments and not caps.string_arguments
    needs_text = caps.tool_calls and not caps.null_content
    if not (needs_objects or needs_text):
        return messages
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("tool_calls"):
            m = dict(m)
            if needs_text and m.get("content") is None:
                m["content"] = ""
            if needs_objects:
                calls = []
                for c in m["tool_calls"]:
                    fn = c.get("function") if isinstance(c, dict) else None
                    if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                        try:
                            args = json.loads(fn["arguments"] or "{}")
                        except ValueError:
                            args = None
                        if isinstance(args, dict):
                            c = {**c, "function": {**fn, "arguments": args}}
                    calls.append(c)
                m["tool_calls"] = calls
        out.append(m)
    return out


class StreamParser:
    """Feed model output as it arrives; get OpenAI ``delta`` dicts back. Linear in the output length."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def feed(self, chunk: str) -> list[dict[str, Any]]:
        return self._engine.feed(chunk)

    def finish(self) -> list[dict[str, Any]]:
        return self._engine.finish()

    @property
    def message(self) -> Message:
        """The message so far."""
        return self._engine.sync()

    @property
    def finish_reason(self) -> str:
        return self._engine.sync().finish_reason


__all__ = ["AutoparserError", "ChatTemplate", "Request", "StreamParser"]
