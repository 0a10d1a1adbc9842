"""vLLM tool and reasoning parsers backed by autoparser (vLLM >= 0.33).

Enable with ``vllm serve MODEL --enable-auto-tool-choice --tool-call-parser autoparser
--reasoning-parser autoparser``; the ``vllm.general_plugins`` entry point
(``autoparser.integrations.vllm_plugin:register``) registers both names in every vLLM
process. This is the only autoparser module that imports vLLM.

How the pair splits the work (vLLM composes them in a ``DelegatingParser``):

* :class:`AutoparserReasoningParser` gets the rendered prompt
  (``set_prompt_token_ids``), builds ``ChatTemplate.parser_for(prompt)`` with tools
  switched off and parses the reasoning phase. Once the parser gives content, the
  reasoning is over: the raw text after the reasoning end marker is handed to the
  tool phase unchanged (``has_engine_confirmed_reasoning_end``).
* :class:`AutoparserToolParser` parses everything after the reasoning
  (``parser_for(..., start="content")``) with the request's tools and streams
  argument fragments as the autoparser runtime commits them. It keeps
  ``prev_tool_call_arr``/``streamed_args_for_tool`` empty, so vLLM's end-of-stream
  ``get_remaining_unstreamed_args`` adds nothing; ``finish_streaming`` (vLLM calls it
  because ``engine_based_streaming`` is set) flushes held-back text and closes a call
  cut by ``max_tokens``.
* ``tool_choice="required"`` and a named tool keep the model's own format
  (``supports_required_and_named = False``): ``adjust_request`` sets the request's GBNF
  (``Request.gbnf`` in xgrammar's dialect) as vLLM's structured output, which vLLM
  applies after the reasoning, and the output is parsed like ``auto``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import cached_property
from typing import Any

from vllm.entrypoints.generate.base.protocol import (
    DeltaFunctionCall,
    DeltaMessage,
    DeltaToolCall,
    ExtractedToolCallInformation,
    FunctionCall,
    ToolCall,
)
from vllm.reasoning.abs_reasoning_parsers import ReasoningParser
from vllm.sampling_params import StructuredOutputsParams
from vllm.tool_parsers.abstract_tool_parser import ToolParser

from ..template import ChatTemplate, Request, StreamParser
from .common import (
    ReasoningMarkers,
    ends_within,
    find_end,
    gbnf_for_xgrammar,
    reasoning_expected,
    reasoning_markers,
    reasoning_split,
    require_verified,
    starts_in_reasoning,
    template_from_tokenizer,
)

__all__ = ["AutoparserReasoningParser", "AutoparserToolParser", "to_delta_message"]

NAME = "autoparser"


def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return str(tokenizer.decode(list(ids), skip_special_tokens=False))


def _keep_special_tokens(template: ChatTemplate, request: Any) -> Any:
    """Markers are often special tokens: the detokenizer must keep them (vLLM PR #25281)."""
    a = template.analysis
    if a.reasoning.mode != "none" or a.tools.style != "none":
        if hasattr(request, "skip_special_tokens"):
            request.skip_special_tokens = False
        if hasattr(request, "spaces_between_special_tokens"):
            request.spaces_between_special_tokens = False
    return request


def to_delta_message(deltas: list[dict[str, Any]]) -> DeltaMessage | None:
    """autoparser's OpenAI deltas as one vLLM ``DeltaMessage`` (``reasoning``, not ``reasoning_content``)."""
    if not deltas:
        return None
    content = "".join(d.get("content") or "" for d in deltas)
    reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
    calls: list[DeltaToolCall] = []
    for d in deltas:
        for tc in d.get("tool_calls") or []:
            fn = tc.get("function") or {}
            name, args = fn.get("name"), fn.get("arguments")
            last = calls[-1] if calls else None
            if last is not None and last.index == tc["index"] and not tc.get("id") and not name \
                    and last.function is not None:
                last.function.arguments = (last.function.arguments or "") + (args or "")
                continue
            calls.append(DeltaToolCall(
                index=tc["index"], id=tc.get("id") or None, type="function" if tc.get("id") else None,
                function=DeltaFunctionCall(name=name or None, arguments=args if args is not None else None)))
    if not (content or reasoning or calls):
        return None
    return DeltaMessage(content=content or None, reasoning=reasoning or None, tool_calls=calls)


class AutoparserReasoningParser(ReasoningParser):  # type: ignore[misc, unused-ignore]
    """The reasoning phase: reasoning deltas until the template's reasoning ends."""

    engine_based_streaming = True

    def __init__(self, tokenizer: Any, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, *args, **kwargs)
        self.template_kwargs: dict[str, Any] = dict(kwargs.get("chat_template_kwargs") or {})
        self.template = template_from_tokenizer(tokenizer)
        self._request: Request | None = None
        self._stream: StreamParser | None = None
        self._raw: list[str] = []
        self._reasoning: list[str] = []
        self._ended = False
        self._end_cache: tuple[tuple[int, ...], bool] | None = None

    # ------------------------------------------------------------ markers
    @cached_property
    def markers(self) -> ReasoningMarkers:
        return reasoning_markers(self.template, self.model_tokenizer)

    @property
    def reasoning_start_str(self) -> str | None:
        return self.markers.start or None

    @property
    def reasoning_end_str(self) -> str | None:
        return self.markers.end or None

    # ------------------------------------------------------------ prompt
    def _for_prompt(self, prompt: str) -> Request:
        return self.template.parser_for(prompt, chat_template_kwargs=self.template_kwargs)

    def set_prompt_token_ids(self, prompt_token_ids: Sequence[int]) -> None:
        self._request = self._for_prompt(_decode(self.model_tokenizer, prompt_token_ids))
        self._stream = None

    def adjust_initial_state_from_prompt(self, prompt_token_ids: Sequence[int]) -> None:
        if self._request is None:
            self.set_prompt_token_ids(prompt_token_ids)

    @property
    def request(self) -> Request:
        """This output's parser (reasoning only: tools are the tool phase's)."""
        if self._request is None:
            self._request = self._for_prompt("")
        return self._request

    def is_reasoning_end(self, input_ids: Sequence[int]) -> bool:
        """On the prompt: True when no reasoning can follow (none in the template, or switched off)."""
        if not self.markers.present:
            return True
        key = tuple(input_ids)
        if self._end_cache is not None and self._end_cache[0] == key:
            return self._end_cache[1]
        ended = not reasoning_expected(self._for_prompt(_decode(self.model_tokenizer, key)))
        self._end_cache = (key, ended)
        return ended

    def is_reasoning_end_streaming(self, input_ids: Sequence[int], delta_ids: Iterable[int]) -> bool:
        return ends_within(input_ids, len(list(delta_ids)), self.markers.end_ids)

    def extract_content_ids(self, input_ids: list[int]) -> list[int]:
        end = find_end(input_ids, self.markers.end_ids)
        if end is not None:
            return list(input_ids[end:])
        return list(input_ids) if self._ended else []

    def count_reasoning_tokens(self, token_ids: Sequence[int]) -> int:
        ids = list(token_ids)
        end = find_end(ids, self.markers.end_ids)
        if end is None:
            return len(ids) if self._request is not None and starts_in_reasoning(self._request) else 0
        n = end - len(self.markers.end_ids)
        start = self.markers.start_ids
        if start and ids[:len(start)] == list(start):
            n -= len(start)
        return max(n, 0)

    def adjust_request(self, request: Any) -> Any:
        return _keep_special_tokens(self.template, request)

    # ------------------------------------------------------------ parsing
    def extract_reasoning(self, model_output: str, request: Any) -> tuple[str | None, str | None]:
        if not self.markers.present:
            return None, model_output
        msg = self.request.parse(model_output)
        reasoning = msg.reasoning_content or None
        if not msg.content and not msg.tool_calls:
            return reasoning, None
        rest = model_output[reasoning_split(model_output, reasoning, self.markers):].lstrip()
        return reasoning, rest or None

    def extract_reasoning_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                    previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                    delta_token_ids: Sequence[int]) -> DeltaMessage | None:
        if self._ended:
            return DeltaMessage(content=delta_text) if delta_text else None
        if self._stream is None:
            self._stream = self.request.stream()
        self._raw.append(delta_text)
        return self._step(self._stream.feed(delta_text), final=False)

    def _step(self, deltas: list[dict[str, Any]], final: bool) -> DeltaMessage | None:
        reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
        content = "".join(d.get("content") or "" for d in deltas)
        self._reasoning.append(reasoning)
        if content and not final:
            # the reasoning is over: the tool phase gets the raw rest of the output
            self._ended = True
            raw = "".join(self._raw)
            content = raw[reasoning_split(raw, "".join(self._reasoning), self.markers):].lstrip()
        if not (reasoning or content):
            return None
        return DeltaMessage(reasoning=reasoning or None, content=content or None)

    def has_engine_confirmed_reasoning_end(self) -> bool:
        return self._ended

    def finish_streaming(self) -> DeltaMessage | None:
        """End of stream inside the reasoning phase (or the transition, which has nothing left)."""
        if self._ended or self._stream is None:
            return None
        deltas = self._stream.finish()
        return self._step(deltas, final=True)


def _tool_dicts(tools: Any) -> list[dict[str, Any]] | None:
    out = []
    for t in tools or []:
        if hasattr(t, "model_dump"):
            t = t.model_dump(exclude_none=True)
        if isinstance(t, dict):
            out.append(t)
    return out or None


def _tool_choice(choice: Any) -> Any:
    """vLLM's tool_choice as autoparser takes it: "auto", "none", "required" or a named-function dict."""
    if choice is None or isinstance(choice, str):
        return choice or "auto"
    if hasattr(choice, "model_dump"):
        choice = choice.model_dump(exclude_none=True)
    return choice if isinstance(choice, dict) else "auto"


class AutoparserToolParser(ToolParser):  # type: ignore[misc, unused-ignore]
    """The tool phase: content and tool calls after the reasoning, streamed as they commit."""

    engine_based_streaming = True
    supports_required_and_named = False  # required / named: our grammar, the model's own format
    skip_reasoning_parsing = False       # vLLM sets it when no reasoning parser is configured

    def __init__(self, tokenizer: Any, tools: Any = None, *args: Any, **kwargs: Any) -> None:
        super().__init__(tokenizer, tools)
        self.template = template_from_tokenizer(tokenizer, tools=bool(tools))
        require_verified(self.template)   # refused when its verdict is not clean (accepted: $AUTOPARSER_ACCEPT)
        self._request: Request | None = None
        self._stream: StreamParser | None = None

    def request_for(self, request: Any) -> Request:
        """This output's parser, built once from the vLLM request (tools, tool_choice, kwargs)."""
        if self._request is None:
            tools = _tool_dicts(getattr(request, "tools", None)) or _tool_dicts(self.tools)
            choice = "none" if getattr(request, "tool_choice", None) == "none" else "auto"
            parallel = getattr(request, "parallel_tool_calls", None)
            self._request = self.template.parser_for(
                "", tools=tools, tool_choice=choice, parallel_tool_calls=parallel is not False,
                chat_template_kwargs=dict(getattr(request, "chat_template_kwargs", None) or {}),
                reasoning_format="none" if self.skip_reasoning_parsing else "auto", start="content")
        return self._request

    def adjust_request(self, request: Any) -> Any:
        """Keep special tokens; for required / named tool_choice, constrain to the native call format."""
        request = _keep_special_tokens(self.template, request)
        choice = _tool_choice(getattr(request, "tool_choice", None))
        tools = _tool_dicts(getattr(request, "tools", None))
        if not tools or not (choice == "required" or isinstance(choice, dict)):
            return request
        parallel = getattr(request, "parallel_tool_calls", None)
        forced = self.template.parser_for(
            "", tools=tools, tool_choice=choice, parallel_tool_calls=parallel is not False,
            chat_template_kwargs=dict(getattr(request, "chat_template_kwargs", None) or {}), start="content")
        gbnf = forced.gbnf
        if not gbnf:
            return request
        request.structured_outputs = StructuredOutputsParams(grammar=gbnf_for_xgrammar(gbnf))
        if hasattr(request, "response_format"):
            request.response_format = None
        if hasattr(request, "text") and not hasattr(request, "response_format"):
            request.text = None      # Responses API: the grammar replaces a text format
        return request

    def extract_tool_calls(self, model_output: str, request: Any) -> ExtractedToolCallInformation:
        msg = self.request_for(request).parse(model_output)
        calls = [ToolCall(id=c.id, type="function", function=FunctionCall(id=c.id, name=c.name, arguments=c.arguments))
                 if c.id else ToolCall(type="function", function=FunctionCall(name=c.name, arguments=c.arguments))
                 for c in msg.tool_calls]
        return ExtractedToolCallInformation(tools_called=bool(calls), tool_calls=calls, content=msg.content)

    def extract_tool_calls_streaming(self, previous_text: str, current_text: str, delta_text: str,
                                     previous_token_ids: Sequence[int], current_token_ids: Sequence[int],
                                     delta_token_ids: Sequence[int], request: Any) -> DeltaMessage | None:
        if self._stream is None:
            self._stream = self.request_for(request).stream()
        return to_delta_message(self._stream.feed(delta_text)) if delta_text else None

    def finish_streaming(self) -> DeltaMessage | None:
        if self._stream is None:
            return None
        return to_delta_message(self._stream.finish())
