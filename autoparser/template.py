"""The public API: ``ChatTemplate`` (analysed once) and ``Request`` (one prompt and its parser)."""

from __future__ import annotations

import copy
import json
import logging
import secrets
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

from . import sources
from .analysis import analyze
from .analysis.model import Analysis
from .analysis.verdict import Acceptance, Verdict, accepted_from_env, parse_accept, verdict
from .errors import AutoparserError, ExportError
from .plan import ReasoningFormatOption, RequestOptions, RequestPlan, StartOption, check_options, make_plan
from .render import Renderer, RenderLimits
from .render.compat import render_compat
from .runtime.engine import Engine
from .runtime.envelope import EnvelopeEngine
from .runtime.message import Message
from .runtime.whole import WholeParse
from .selftest import SelfTestResult, Verification, self_test, verification

logger = logging.getLogger("autoparser")
_warned: set[tuple[str, bool]] = set()   # (digest, tools) of templates whose failed verification was logged

if TYPE_CHECKING:
    from .decisions.row import DecisionRow
    from .grammar.peg_mapper import PegParser
    from .probes.envelopes import Envelopes


class ChatTemplate:
    """A chat template plus its analysis. Build with ``from_file``, ``from_string``,
    ``from_pretrained`` or ``from_gguf``; the analysis runs once and is cached."""

    def __init__(self, source: str, *, name: str = "<template>", bos_token: str = "", eos_token: str = "",
                 special_tokens: frozenset[str] | None = None, limits: RenderLimits | None = None,
                 accept: Iterable[str] | None = None) -> None:
        self.renderer = Renderer(source, name=name, bos_token=bos_token, eos_token=eos_token, limits=limits)
        self.special_tokens = special_tokens
        # known limitations the project accepts (``TEMPLATE:CAPABILITY``; default: $AUTOPARSER_ACCEPT)
        self.accepted: tuple[Acceptance, ...] = parse_accept(accept) if accept is not None else accepted_from_env()
        self._envelopes: dict[str, Envelopes | str] = {}   # structural-tag call envelopes, by tools and kwargs

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
        analysis = analyze(self.renderer)
        # ``analysis.verification`` self-tests this template on first use (the first template given
        # to an analysis shared by digest is kept: they all render alike)
        analysis.verification_slot.give(lambda: verification(self.self_test))
        return analysis

    @property
    def verification(self) -> Verification | None:
        """``analysis.verification`` (an alias): per capability verified, failed (with the reason and
        the scenario) or n/a; None only inside the self-test, while it runs."""
        return self.analysis.verification

    @cached_property
    def self_test(self) -> SelfTestResult:
        """Known assistant turns rendered through the template and parsed back (``autoparser.selftest``):
        the run ``analysis.verification`` is folded from (``autoparser debug`` shows its texts)."""
        return self_test(self)

    @property
    def verdict(self) -> Verdict:
        """The verification with this template's accepted limitations applied (``autoparser.analysis.verdict``):
        what ``autoparser check`` fails on, what a server plugin refuses and what ``req.warnings`` says."""
        return verdict(self.analysis.verification, self.name, self.accepted)

    def _verdict_warning(self, tools: bool) -> str:
        """A warning for requests the template's unaccepted self-test failures concern ("" if none),
        logged once per template."""
        try:
            v = self.verdict
        except Exception as e:   # the self-test never raises by design; a bug in it must not stop requests
            warning = (f"{self.name}: autoparser's self-test raised {type(e).__name__}: {e}; "
                       "parsed calls are unverified") if tools else ""
        else:
            failed = v.applies(tools)
            if not failed:
                return ""
            misread = [c for c in failed if c.calls_misread]
            first = (misread or failed)[0]
            what = "tool calls failed" if misread else f"{first.name} failed"
            consequence = "parsed calls may be wrong" if misread else "parsed text may be in the wrong field"
            warning = f"{self.name}: {what} autoparser's self-test ({first.name}: {first.reason}); {consequence}"
            if len(failed) > 1:
                warning += f" (also: {', '.join(c.name for c in failed if c is not first)})"
        if warning and (self.analysis.digest, tools) not in _warned:
            _warned.add((self.analysis.digest, tools))
            logger.warning(warning)
        return warning

    def _turn_ends(self) -> tuple[str, ...]:
        """Every marker that ends a turn (PRE.5's stop strings: the analysis's end of turn, those the
        template writes after tool calls, such as ``<|eom_id|>``, and EOS), found once per template."""
        from .decisions.row import stop_markers

        try:
            return stop_markers(self)
        except AutoparserError:      # a template the probes cannot render: the analysis's alone
            return ()

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

    def parser_for(self, prompt: str, *, tools: list[dict[str, Any]] | None = None, tool_choice: Any = "auto",
                   parallel_tool_calls: bool = True, reasoning_format: ReasoningFormatOption = "auto",
                   response_format: dict[str, Any] | None = None,
                   chat_template_kwargs: dict[str, Any] | None = None, start: StartOption = "auto") -> Request:
        """The parser for output whose prompt was rendered elsewhere (a server's own renderer).

        ``prompt`` is the rendered prompt text (decoded with special tokens kept); it is not
        rendered again. ``start`` fixes where the output begins: ``"auto"`` reads it from the
        prompt's end (as ``apply`` does), ``"reasoning"`` inside an open reasoning block,
        ``"content"`` after reasoning (the reasoning phase was handled elsewhere).
        """
        return Request(self, [], tools=tools, add_generation_prompt=True, continue_final_message=False,
                       chat_template_kwargs=chat_template_kwargs or {}, tool_choice=tool_choice,
                       parallel_tool_calls=parallel_tool_calls, reasoning_format=reasoning_format,
                       response_format=response_format, prompt=prompt, start=start)

    def response_template(self) -> dict[str, Any]:
        """The transformers ``response_template`` for this template (``autoparser.export``); raises ``ExportError``."""
        from .export.response_template import response_template
        from .selftest import ALL_ARGUMENTS, HISTORIES, TURN_SCENARIOS, _Runner

        runner = _Runner(self, stream=False)
        samples = {}
        wanted = [ALL_ARGUMENTS] if self.analysis.tools.style != "none" else []
        if self.analysis.reasoning.mode != "none":
            wanted += [sc for sc in TURN_SCENARIOS if sc.name in ("reasoning", "reasoning_tool")]
        for sc in wanted:
            for history in HISTORIES:
                text, _, variant = runner.expected_text(sc, history, runner.kwarg_options(sc)[0])
                if text is not None and (variant is sc.message or sc is not ALL_ARGUMENTS):
                    samples[sc.name] = text
                    break
        return response_template(self.analysis, eos_token=self.renderer.eos_token,
                                 argument_sample=samples.get(ALL_ARGUMENTS.name, ""),
                                 reasoning_sample=samples.get("reasoning", ""),
                                 reasoning_call_sample=samples.get("reasoning_tool", ""))

    def __repr__(self) -> str:
        return f"ChatTemplate({self.name!r})"


class Request:
    """One rendered prompt with the parser (and grammar) that fit it: a prompt and its plan."""

    def __init__(self, template: ChatTemplate, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None,
                 add_generation_prompt: bool, continue_final_message: bool, chat_template_kwargs: dict[str, Any],
                 tool_choice: Any, parallel_tool_calls: bool, reasoning_format: str,
                 response_format: dict[str, Any] | None, prompt: str | None = None,
                 start: StartOption = "auto") -> None:
        # client data first: nothing below reads an option or a tool schema this refuses
        check_options(tools=tools, tool_choice=tool_choice, parallel_tool_calls=parallel_tool_calls,
                      reasoning_format=reasoning_format, response_format=response_format)
        if continue_final_message and add_generation_prompt and messages and \
                messages[-1].get("role") == "assistant":
            add_generation_prompt = False
        self.template = template
        self.analysis = template.analysis
        options = RequestOptions(
            messages=tuple(copy.deepcopy(messages)), tools=tuple(copy.deepcopy(tools)) if tools else None,
            add_generation_prompt=add_generation_prompt, continue_final_message=continue_final_message,
            chat_template_kwargs=MappingProxyType(dict(chat_template_kwargs)), tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls is not False, reasoning_format=reasoning_format,
            response_format=response_format)
        self.prompt = self._render(options) if prompt is None else prompt
        self.plan: RequestPlan = make_plan(self.analysis, options, prompt=self.prompt,
                                           eos_token=template.renderer.eos_token, turn_ends=template._turn_ends(),
                                           id_prefix=f"call_{secrets.token_hex(4)}_", start=start)
        warning = template._verdict_warning(tools=self.plan.tools is not None)
        self.warnings: list[str] = [warning] if warning else []   # given to every parsed message

    # ------------------------------------------------------------ the request as given
    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.plan.options.messages)

    @property
    def tools(self) -> list[dict[str, Any]] | None:
        tools = self.plan.options.tools
        return list(tools) if tools is not None else None

    @property
    def tool_choice(self) -> Any:
        return self.plan.options.tool_choice

    @property
    def parallel_tool_calls(self) -> bool:
        return self.plan.options.parallel_tool_calls

    @property
    def reasoning_format(self) -> str:
        return self.plan.options.reasoning_format

    @property
    def response_format(self) -> dict[str, Any] | None:
        rf = self.plan.options.response_format
        return dict(rf) if rf is not None else None

    @property
    def chat_template_kwargs(self) -> dict[str, Any]:
        return dict(self.plan.options.chat_template_kwargs)

    @property
    def continue_final_message(self) -> bool:
        return self.plan.options.continue_final_message

    @property
    def tools_active(self) -> bool:
        """Calls can occur in this request's output."""
        return self.plan.tools is not None

    # ------------------------------------------------------------ prompt
    def _render(self, options: RequestOptions) -> str:
        messages = list(options.messages)
        text = render_compat(self.template.renderer, polyfill_messages(messages, self.analysis),
                             tools=list(options.tools) if options.tools else None,
                             add_generation_prompt=options.add_generation_prompt,
                             **dict(options.chat_template_kwargs))
        if options.continue_final_message and options.messages:
            final = options.messages[-1]
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

    # ------------------------------------------------------------ parsing
    def parse(self, text: str, partial: bool = False) -> Message:
        """Parse a complete model output (or, with ``partial``, a prefix of one). Never raises on output."""
        if not partial:
            # the well-formed route in one pass, else the engine's (a turn envelope: its own reader)
            whole = self._whole
            msg = whole.parse(text, self.warnings) if whole is not None else None
            return msg if msg is not None else self._engine().parse_whole(text)
        engine = self._engine()
        engine.feed(text)
        engine.finish_partial()
        return engine.msg

    @cached_property
    def _whole(self) -> WholeParse | None:
        return WholeParse(self.plan) if self.analysis.envelope is None else None

    def stream(self) -> StreamParser:
        return StreamParser(self._engine())

    def _engine(self) -> Engine:
        engine = Engine(self.plan) if self.analysis.envelope is None else EnvelopeEngine(self.plan)
        engine.msg.warnings.extend(self.warnings)
        return engine

    # ------------------------------------------------------------ grammar and decisions
    @cached_property
    def gbnf(self) -> str | None:
        try:
            from .grammar.request import build_gbnf
        except ImportError:
            return None
        return build_gbnf(self.plan)

    @cached_property
    def grammar_triggers(self) -> list[dict[str, str]]:
        try:
            from .grammar.request import triggers
        except ImportError:
            return []
        return triggers(self.plan)

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
    def decisions(self) -> DecisionRow:
        """PRE.1-PRE.6 for this request (``autoparser.decisions.row.decide``)."""
        from .decisions.row import decide

        return decide(self.template, self.plan)

    @property
    def skip_special_tokens(self) -> bool:
        """PRE.1: decode with this ``skip_special_tokens`` (the tokenizer's answer, else the heuristic's)."""
        return self.decisions.skip_special_tokens_applied

    def stop_for(self, ignore_eos: bool = False) -> tuple[str, ...]:
        """PRE.5: stop strings for the server; none when ``ignore_eos`` asks to run past end of turn."""
        return () if ignore_eos else self.decisions.stop
    # --- end decisions ---

    def structural_tag(self, reasoning: Literal["auto", "enabled", "disabled"] = "auto") -> dict[str, Any]:
        """An xgrammar structural tag for this request (``response_format`` for vLLM and SGLang).

        Envelopes are spelled exactly as the template renders them; raises ``ExportError`` for
        formats whose arguments are not a JSON object or whose calls cannot be cut out exactly.
        """
        from .grammar.structural_tag import check_arguments, structural_tag
        from .probes.envelopes import call_envelopes
        from .probes.prober import Prober

        check_arguments(self.plan)     # the arguments first: the envelope is cut only for JSON objects
        tp = self.plan.tools
        assert tp is not None
        t = tp.format
        kwargs = dict(self.plan.options.chat_template_kwargs)
        key = json.dumps([tp.allowed, kwargs], sort_keys=True, default=str)
        env = self.template._envelopes.get(key)
        if env is None:     # rendered once per template, tool set and kwargs, not once per request
            args: dict[str, str] | None = None
            text = "{}"
            if t.style == "layout" and t.layout is not None and t.layout.args.kind == "items":
                # items write nothing for no arguments: the envelope is cut around one, as the layout writes it
                from .analysis.layout.encode import encode_args

                args = {"query": "zqxvaluezqx"}
                text = encode_args(t.layout, args)
            env = self.template._envelopes[key] = call_envelopes(Prober(self.template.renderer, kwargs), tp.allowed,
                                                                 t.section_start, t.section_end, args, text)
        if isinstance(env, str):
            raise ExportError(env, template=self.template.name, target="structural tag")
        return structural_tag(self.plan, env, reasoning)

    # --- peg (autoparser.grammar.peg) ---
    @cached_property
    def peg(self) -> PegParser:
        """The strict PEG parser for this request (``PegParser.text`` is its grammar), built on first use."""
        from .grammar.envelope import build_envelope_peg
        from .grammar.peg import build_peg

        # a turn envelope (one JSON object) is printed as one
        return build_peg(self.plan) if self.analysis.envelope is None else build_envelope_peg(self.plan)

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
