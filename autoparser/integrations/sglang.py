"""SGLang tool-call and reasoning detectors backed by autoparser (SGLang 0.5.23).

Enable with ``sglang serve --model-path M --tool-call-parser autoparser --reasoning-parser
autoparser``; the ``sglang.srt.plugins`` entry point (``autoparser.integrations.sglang_plugin:register``)
inserts both classes into SGLang's live registries (``FunctionCallParser.ToolCallParserEnum`` and
``ReasoningParser.DetectorMap``) in every SGLang process. This is the only autoparser module that
imports SGLang.

How the pair splits the work (SGLang runs the reasoning detector first, then hands the rest of
the text to the tool detector):

* :class:`AutoparserReasoningDetector` derives from SGLang's ``ResponseTemplateReasoningDetector``
  for one reason: it is the detector kind SGLang gives the rendered prompt (``prefix``), so the
  reasoning state (open at the start, switched off) is read from the prompt itself, as
  ``ChatTemplate.parser_for(prompt)`` does. None of the response-template machinery is used:
  the constructor and every method it would reach are its own. It parses with tools switched
  off; once the parser gives content the reasoning is over and, when a tool detector follows,
  the raw text after the reasoning end marker goes to it unchanged. With no tool detector
  active it gives autoparser's content itself.
* :class:`AutoparserDetector` (a plain ``BaseFormatDetector``) parses everything after the
  reasoning (``parser_for(..., start="content")``) with the request's tools and streams argument
  fragments as the autoparser runtime commits them. It keeps ``prev_tool_call_arr`` /
  ``streamed_args_for_tool`` empty, so SGLang's end-of-stream ``_check_for_unstreamed_tool_args``
  adds nothing; ``finish`` flushes held-back text and closes a call cut by ``max_tokens``.
* ``tool_choice="required"``, a named tool, or strict tools: ``get_structural_tag`` returns the
  request's GBNF (in xgrammar's dialect) as a structural tag of one ``grammar`` element, so the
  model keeps its own call format, which is parsed like ``auto``.

SGLang makes its own call ids (``call_<uuid>``); autoparser's native ids do not reach the client.
"""

from __future__ import annotations

from typing import Any, Literal

from sglang.srt.function_call.base_format_detector import BaseFormatDetector
from sglang.srt.function_call.core_types import StreamingParseResult, StructureInfo, ToolCallItem
from sglang.srt.parser.reasoning_parser import StreamingParseResult as ReasoningResult
from sglang.srt.parser.response_template import ResponseTemplateReasoningDetector

from ..template import ChatTemplate, Request, StreamParser
from .common import (
    ReasoningMarkers,
    gbnf_for_xgrammar,
    reasoning_markers,
    reasoning_split,
    require_verified,
    template_from_tokenizer,
)

__all__ = ["AutoparserDetector", "AutoparserReasoningDetector", "tool_dicts", "tool_items"]

NAME = "autoparser"
# SGLang asks ``has_tool_call(text)`` without the tools: calls to any name are read once tools exist
ANY_TOOL = {"type": "function", "function": {"name": "tool", "parameters": {"type": "object"}}}


def tool_dicts(tools: Any) -> list[dict[str, Any]] | None:
    """SGLang's ``Tool`` objects (or dicts) as the OpenAI dicts autoparser takes."""
    out = []
    for t in tools or []:
        if hasattr(t, "model_dump"):
            t = t.model_dump(exclude_none=True)
        if isinstance(t, dict):
            out.append(t)
    return out or None


def _tool_choice(choice: Any) -> Any:
    """SGLang's tool_choice as autoparser takes it: "auto", "none", "required" or a named-function dict."""
    if choice is None or isinstance(choice, str):
        return choice or "auto"
    if hasattr(choice, "model_dump"):
        choice = choice.model_dump(exclude_none=True)
    return choice if isinstance(choice, dict) else "auto"


def tool_items(deltas: list[dict[str, Any]]) -> tuple[str, list[ToolCallItem]]:
    """autoparser's OpenAI deltas as SGLang's (normal text, ``ToolCallItem``s).

    An item with a ``name`` opens call ``tool_index`` (its arguments may follow in the same
    item); items without one carry argument fragments of that call.
    """
    content = "".join(d.get("content") or "" for d in deltas)
    items: list[ToolCallItem] = []
    for d in deltas:
        for tc in d.get("tool_calls") or []:
            fn = tc.get("function") or {}
            name, args = fn.get("name") or None, fn.get("arguments") or ""
            last = items[-1] if items else None
            if last is not None and last.tool_index == tc["index"] and not name:
                last.parameters += args
                continue
            if name is None and not args:
                continue
            items.append(ToolCallItem(tool_index=tc["index"], name=name, parameters=args))
    return content, items


def _reasoning_format() -> Literal["auto", "none"]:
    """"auto" when autoparser's reasoning detector runs before the tool detector, else "none":
    reasoning markup another parser (or none) left in the text stays content, never dropped."""
    try:
        from sglang.srt.runtime_context import get_serving

        configured = get_serving().reasoning_parser
    except (ImportError, ValueError, AttributeError):   # not in a server: assume both are ours
        return "auto"
    return "auto" if configured == NAME else "none"


class AutoparserDetector(BaseFormatDetector):  # type: ignore[misc, unused-ignore]
    """Tool calls (and the content around them) after the reasoning, streamed as they commit."""

    def __init__(self, tokenizer: Any = None) -> None:
        super().__init__()
        self.template: ChatTemplate = template_from_tokenizer(tokenizer, tools=True)
        require_verified(self.template)   # a template whose calls are misread is refused
        self._request: Request | None = None
        self._stream: StreamParser | None = None
        self.incomplete_tool_call_indices: set[int] = set()

    def request_for(self, tools: Any) -> Request:
        """This output's parser, built once from the request's tools."""
        if self._request is None:
            self._request = self.template.parser_for("", tools=tool_dicts(tools), start="content",
                                                     reasoning_format=_reasoning_format())
        return self._request

    # ------------------------------------------------------------ whole text
    def has_tool_call(self, text: str) -> bool:
        """True when the text holds a call, or reads as other content than it is (SGLang then
        takes ``detect_and_parse``'s normal text)."""
        req = self._request or self.template.parser_for("", tools=[ANY_TOOL], start="content")
        msg = req.parse(text)
        return bool(msg.tool_calls) or (msg.content or "").strip() != text.strip()

    def detect_and_parse(self, text: str, tools: Any) -> StreamingParseResult:
        msg = self.request_for(tools).parse(text)
        calls = [ToolCallItem(tool_index=i, name=c.name, parameters=c.arguments)
                 for i, c in enumerate(msg.tool_calls)]
        return StreamingParseResult(normal_text=msg.content or "", calls=calls)

    # ------------------------------------------------------------ streaming
    def parse_streaming_increment(self, new_text: str, tools: Any) -> StreamingParseResult:
        if self._stream is None:
            self._stream = self.request_for(tools).stream()
        if not new_text:
            return StreamingParseResult()
        content, items = tool_items(self._stream.feed(new_text))
        return StreamingParseResult(normal_text=content, calls=items)

    def finish(self, tools: Any) -> StreamingParseResult:
        if self._stream is None:
            return StreamingParseResult()
        content, items = tool_items(self._stream.finish())
        return StreamingParseResult(normal_text=content, calls=items)

    # ------------------------------------------------------------ constrained decoding
    def get_structural_tag(self, tools: Any = None, tool_choice: Any = "auto", thinking_mode: bool = False,
                           parallel_tool_calls: bool = True, **_: Any) -> Any:
        """required / named / strict: the request's GBNF as an xgrammar structural tag (native format)."""
        from xgrammar import StructuralTag

        listed = tool_dicts(tools)
        if not listed:
            return None
        forced = self.template.parser_for("", tools=listed, tool_choice=_tool_choice(tool_choice),
                                          parallel_tool_calls=parallel_tool_calls is not False, start="content")
        gbnf = forced.gbnf
        if not gbnf:
            return None
        return StructuralTag.model_validate(
            {"type": "structural_tag", "format": {"type": "grammar", "grammar": gbnf_for_xgrammar(gbnf)}})

    def structure_info(self) -> Any:
        def info(name: str) -> StructureInfo:
            raise NotImplementedError("autoparser constrains calls with get_structural_tag")
        return info


class AutoparserReasoningDetector(ResponseTemplateReasoningDetector):  # type: ignore[misc, unused-ignore]
    """The reasoning phase: reasoning until the template's reasoning ends, read from the prompt."""

    response_template = None
    thinks_internally = False
    strict_arguments = False

    def __init__(self, stream_reasoning: bool = True, tokenizer: Any = None, prefix: str = "",
                 force_nonempty_content: bool = False, tool_call_parser_active: bool = False,
                 **_: Any) -> None:
        # ResponseTemplateReasoningDetector.__init__ loads a response_template: not called
        self.template: ChatTemplate = template_from_tokenizer(tokenizer)
        self.markers: ReasoningMarkers = reasoning_markers(self.template)
        self.think_start_token = self.markers.start
        self.think_end_token = self.markers.end
        self.think_start_self_label = ""
        self.think_excluded_tokens = None
        self.stream_reasoning = stream_reasoning
        self._force_nonempty_content = force_nonempty_content
        self._tools_follow = tool_call_parser_active
        self._prefix = prefix or ""
        self._request: Request | None = None
        self._stream: StreamParser | None = None
        self._raw: list[str] = []
        self._reasoning: list[str] = []
        self._ended = False
        self.answer_started = False     # SGLang reads it: no answer frame ends tool parsing early

    @property
    def request(self) -> Request:
        """This output's parser (reasoning only: tools are the tool detector's)."""
        if self._request is None:
            self._request = self.template.parser_for(self._prefix)
        return self._request

    # ------------------------------------------------------------ what SGLang asks of the kind
    def starts_message(self, prefix: str) -> bool:
        return False

    def answer_opener(self, prefix: str) -> str:
        return ""

    def answer_rest_structural_tag(self, prefix: str) -> dict[str, Any] | None:
        return None

    def json_answer_structural_tag(self, json_schema: Any, **_: Any) -> dict[str, Any] | None:
        return None

    def json_output_started(self, text: str) -> bool:
        return not self.markers.present or bool(self.markers.end and self.markers.end in text)

    # ------------------------------------------------------------ whole text
    def detect_and_parse(self, text: str) -> ReasoningResult:
        if not self.markers.present:
            return ReasoningResult(normal_text=text)
        msg = self.request.parse(text)
        reasoning = msg.reasoning_content or ""
        if not self._tools_follow:
            return self._nonempty(ReasoningResult(normal_text=msg.content or "", reasoning_text=reasoning))
        if not msg.content and not msg.tool_calls:
            return self._nonempty(ReasoningResult(reasoning_text=reasoning))
        rest = text[reasoning_split(text, reasoning, self.markers):].lstrip()
        return ReasoningResult(normal_text=rest, reasoning_text=reasoning)

    def _nonempty(self, result: ReasoningResult) -> ReasoningResult:
        """``force_nonempty_content``: reasoning with no answer is given as the answer."""
        if self._force_nonempty_content and not result.normal_text:
            result.normal_text, result.reasoning_text = result.reasoning_text, ""
        return result

    # ------------------------------------------------------------ streaming
    def parse_streaming_increment(self, new_text: str) -> ReasoningResult:
        if self._ended and self._tools_follow:
            return ReasoningResult(normal_text=new_text)
        if not self.markers.present:
            return ReasoningResult(normal_text=new_text)
        if self._stream is None:
            self._stream = self.request.stream()
        self._raw.append(new_text)
        return self._step(self._stream.feed(new_text))

    def finish(self) -> ReasoningResult:
        """End of stream: what the parser held back."""
        if (self._ended and self._tools_follow) or self._stream is None:
            return ReasoningResult()
        result = self._step(self._stream.finish())
        if self._force_nonempty_content and not self._ended and not result.normal_text:
            result.normal_text, result.reasoning_text = "".join(self._reasoning), ""
        return result

    def _step(self, deltas: list[dict[str, Any]]) -> ReasoningResult:
        reasoning = "".join(d.get("reasoning_content") or "" for d in deltas)
        content = "".join(d.get("content") or "" for d in deltas)
        if not self._ended:
            self._reasoning.append(reasoning)
        if content and not self._ended:
            self._ended = True
            if self._tools_follow:   # the tool detector gets the raw rest of the output
                raw = "".join(self._raw)
                content = raw[reasoning_split(raw, "".join(self._reasoning), self.markers):].lstrip()
        if not self.stream_reasoning and not self._ended:
            return ReasoningResult()   # reasoning is given whole, when it ends
        if not self.stream_reasoning and reasoning == "" and self._reasoning and content:
            reasoning = "".join(self._reasoning)
        return ReasoningResult(normal_text=content, reasoning_text=reasoning)
