"""The vLLM plugin (``autoparser.integrations.vllm``) driven through vLLM's own serving code.

Each case builds a byte-level tokenizer with the template's markers as added tokens (no
weights, no network), asks vLLM's ``ParserManager.get_parser`` for the ``autoparser`` pair,
and runs a model output rendered by the template (``autoparser.selftest``'s scenarios)
through ``parser.parse`` (non-stream) and ``ChatStreamProcessor.step`` (stream: token by
token, in random chunks and whole). The result must equal ``Request.parse`` on the same
output with the same prompt; streaming must send arguments as they are generated, keep
one id per call and add nothing at the end (``get_remaining_unstreamed_args``).

Needs vLLM (``.ci/vllm.sh`` installs it into a cached virtualenv) and ../shared/templates;
skipped otherwise.
"""

from __future__ import annotations

import json
import random
import re
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import turns

pytest.importorskip("vllm", reason="vLLM not installed (.ci/vllm.sh runs these tests in a venv that has it)")
pytest.importorskip("transformers", reason="transformers not installed")

from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast
from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
from vllm.entrypoints.openai.chat_completion.stream_processor import ChatStreamProcessor
from vllm.parser.parser_manager import ParserManager

from autoparser import ChatTemplate
from autoparser.integrations import common, vllm_plugin
from autoparser.integrations.vllm import AutoparserReasoningParser, AutoparserToolParser
from autoparser.selftest import HISTORIES, PROBE_TOOLS, SCENARIOS, Scenario, _Runner, _strip_end_of_turn

SHARED = turns.shared_dir()
needs_shared = pytest.mark.skipif(SHARED is None or not (SHARED / "templates").is_dir(),
                                reason="shared template corpus not found (../shared/templates)")

TEMPLATES = ["NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja", "Qwen-Qwen3-0.6B.jinja", "Qwen3-Coder.jinja",
             "deepseek-ai-DeepSeek-V3.1.jinja", "Kimi-K2-Thinking.jinja", "GLM-4.6.jinja", "MiniMax-M2.jinja",
             "Mistral-Small-3.2-24B-Instruct-2506.jinja"]
BOS, EOS = "<s>", "</s>"
MARKER = re.compile(r"<\|[^|<>\s]{1,48}\|>|<｜[^｜]{1,48}｜>|</?[A-Za-z_][\w:.-]{0,30}>|\[/?[A-Z_]{3,30}\]"
                    r"|<[a-z_]+=|</[a-z_]+>")
QWEN3 = "Qwen-Qwen3-0.6B.jinja"


# ------------------------------------------------------------------ fixtures
def _path(name: str) -> Path:
    assert SHARED is not None
    return SHARED / "templates" / name


@cache
def template(name: str) -> ChatTemplate:
    return ChatTemplate.from_file(_path(name), bos_token=BOS, eos_token=EOS)



@cache
def tokenizer(name: str) -> Any:
    """Byte-level BPE with no merges; the template's marker-like strings are added tokens."""
    src = _path(name).read_text(encoding="utf-8")
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    tk = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(sorted(alphabet))}, merges=[]))
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tk.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=BOS, eos_token=EOS)
    tok.add_tokens(sorted(set(MARKER.findall(src)) | {BOS, EOS}))
    tok.chat_template = src
    return tok


@cache
def parser_cls(name: str) -> Any:
    vllm_plugin.register()
    return ParserManager.get_parser(tool_parser_name="autoparser", reasoning_parser_name="autoparser",
                                    enable_auto_tools=True, tokenizer=tokenizer(name))


@cache
def cases(name: str) -> list[tuple[Scenario, list[dict[str, Any]], dict[str, Any], str]]:
    """(scenario, history, chat_template_kwargs, generated text) for each scenario the template renders."""
    runner = _Runner(template(name), stream=False)
    out = []
    for sc in SCENARIOS:
        if runner.cannot_render(sc):
            continue
        for kwargs in runner.kwarg_options(sc):
            found = None
            for history in HISTORIES:
                text, _, variant = runner.expected_text(sc, history, kwargs)
                if text is not None and variant is not None:
                    found = (history, text)
                    break
            if found is not None:
                history, text = found
                text = _strip_end_of_turn(text, runner.end_of_turn(history, kwargs), EOS)
                out.append((sc, history, kwargs, text))
                break
    return out


def all_cases() -> list[Any]:
    if SHARED is None:
        return []
    return [pytest.param(name, i, id=f"{name.removesuffix('.jinja')}-{case[0].name}")
            for name in TEMPLATES if _path(name).is_file() for i, case in enumerate(cases(name))]


# ------------------------------------------------------------------ driving vLLM
class Run:
    """One scenario: the reference parse and vLLM's objects for it."""

    def __init__(self, name: str, history: list[dict[str, Any]], kwargs: dict[str, Any], text: str,
                 tools: list[dict[str, Any]] | None, **body: Any) -> None:
        self.name, self.text = name, text
        self.tok = tokenizer(name)
        self.pcls = parser_cls(name)
        self.kwargs = kwargs
        self.req = template(name).apply(history, tools=tools, chat_template_kwargs=kwargs or None)
        self.reference = self.req.parse(text).to_dict()
        self.prompt_ids = self.tok.encode(self.req.prompt, add_special_tokens=False)
        self.ids = self.tok.encode(text, add_special_tokens=False)
        self.body = {"model": "m", "messages": history, "chat_template_kwargs": kwargs or None, **body}
        if tools:
            self.body["tools"] = tools

    def parser(self, stream: bool) -> tuple[Any, Any]:
        request = ChatCompletionRequest(**self.body, stream=stream)
        p = self.pcls(self.tok, request.tools, chat_template_kwargs=self.kwargs or {}, model_config=None)
        p.set_prompt_token_ids(self.prompt_ids)
        request = p.adjust_request(request) or request
        return p, request

    def parse(self) -> dict[str, Any]:
        p, request = self.parser(stream=False)
        reasoning, content, calls = p.parse(self.text, request, enable_auto_tools=True,
                                            model_output_token_ids=self.ids)
        return {"content": content, "reasoning_content": reasoning,
                "tool_calls": [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
                               for c in calls or []]}

    def stream(self, chunks: list[list[int]], finish: str = "stop") -> tuple[dict[str, Any], list[Any]]:
        p, request = self.parser(stream=True)
        proc = ChatStreamProcessor(request, p, enable_auto_tools=True, parser_cls=self.pcls)
        steps, done, prev = [], [], ""
        for i, chunk in enumerate(chunks):
            done.extend(chunk)
            text = self.tok.decode(done, skip_special_tokens=False)
            last = i + 1 == len(chunks)
            if text.endswith("\ufffd") and not last:
                continue
            delta_text, prev = text[len(prev):], text
            steps.append(proc.step(delta_text, chunk, finish if last else None, self.prompt_ids))
        return merge(steps), steps


def merge(steps: list[Any]) -> dict[str, Any]:
    content, reasoning, calls = "", "", {}
    for step in steps:
        d = step.delta
        if d is None:
            continue
        assert not hasattr(d, "reasoning_content") or getattr(d, "reasoning_content", None) is None
        content += d.content or ""
        reasoning += d.reasoning or ""
        for tc in d.tool_calls or []:
            c = calls.setdefault(tc.index, {"id": None, "ids": 0, "function": {"name": "", "arguments": ""}})
            if tc.id:
                c["id"] = tc.id
                c["ids"] += 1
            if tc.function:
                c["function"]["name"] += tc.function.name or ""
                c["function"]["arguments"] += tc.function.arguments or ""
    return {"content": content or None, "reasoning_content": reasoning or None,
            "tool_calls": [calls[k] for k in sorted(calls)]}


def same(got: dict[str, Any], want: dict[str, Any], text: str) -> None:
    """``got`` (from vLLM) carries what ``want`` (``Request.parse``) does."""
    for key in ("reasoning_content", "content"):
        assert (got.get(key) or "").strip() == (want.get(key) or "").strip(), key
    have, need = got.get("tool_calls") or [], want.get("tool_calls") or []
    assert [c["function"]["name"] for c in have] == [c["function"]["name"] for c in need]
    for h, w in zip(have, need, strict=True):
        assert json.loads(h["function"]["arguments"]) == json.loads(w["function"]["arguments"])
        assert h["function"]["arguments"] == w["function"]["arguments"]   # not a byte more (no end-of-stream re-send)
        if w["id"] in text:
            assert h["id"] == w["id"]   # a native id is kept


def chunked(ids: list[int], rng: random.Random) -> list[list[int]]:
    out, i = [], 0
    while i < len(ids):
        n = rng.randint(1, 7)
        out.append(ids[i:i + n])
        i += n
    return out


def run_for(name: str, index: int) -> Run:
    sc, history, kwargs, text = cases(name)[index]
    return Run(name, history, kwargs, text, PROBE_TOOLS if sc.tools else None)


# ------------------------------------------------------------------ tests
@needs_shared
def test_every_template_has_cases() -> None:
    for name in TEMPLATES:
        names = {c[0].name for c in cases(name)}
        assert "tool" in names, (name, names)
    assert {c[0].name for c in cases(QWEN3)} >= {"reasoning", "reasoning_tool"}


@needs_shared
@pytest.mark.parametrize(("name", "index"), all_cases())
def test_parse_matches_request_parse(name: str, index: int) -> None:
    run = run_for(name, index)
    same(run.parse(), run.reference, run.text)


@needs_shared
@pytest.mark.parametrize(("name", "index"), all_cases())
def test_stream_matches_request_parse(name: str, index: int) -> None:
    run = run_for(name, index)
    rng = random.Random(f"{name}:{index}")
    for chunks in ([[t] for t in run.ids], chunked(run.ids, rng), chunked(run.ids, rng), [run.ids]):
        got, steps = run.stream(chunks)
        same(got, run.reference, run.text)
        for call in got.get("tool_calls") or []:
            assert call["ids"] == 1, "one id per call, on its first delta"
        want = "tool_calls" if run.reference.get("tool_calls") else "stop"
        assert steps[-1].finish_reason == want


@needs_shared
@pytest.mark.parametrize("name", TEMPLATES)
def test_arguments_stream_as_generated(name: str) -> None:
    """Token by token, argument text arrives before the last step (nothing is withheld to the end)."""
    index = next(i for i, c in enumerate(cases(name)) if c[0].name == "tool")
    run = run_for(name, index)
    _, steps = run.stream([[t] for t in run.ids])
    early = merge(steps[:-1])
    assert early["tool_calls"], "the call is announced before the end"
    full = run.reference["tool_calls"][0]["function"]["arguments"]
    sent = early["tool_calls"][0]["function"]["arguments"]
    assert full.startswith(sent) and len(sent) >= len(full) // 2, (sent, full)


@needs_shared
@pytest.mark.parametrize("name", TEMPLATES)
def test_truncated_call_is_closed(name: str) -> None:
    """Output cut by max_tokens inside a call: the call is kept with valid JSON, as Request.parse does."""
    index = next(i for i, c in enumerate(cases(name)) if c[0].name == "tool")
    _sc, history, kwargs, text = cases(name)[index]
    cut = text.index("Paris") + 3
    run = Run(name, history, kwargs, text[:cut], PROBE_TOOLS)
    got, steps = run.stream([[t] for t in run.ids], finish="length")
    same(got, run.reference, run.text)
    assert steps[-1].finish_reason == "length"
    assert json.loads(got["tool_calls"][0]["function"]["arguments"]) == {"city": "Par"}


@needs_shared
def test_thinking_off_skips_reasoning_phase() -> None:
    tok = tokenizer(QWEN3)
    hist = [{"role": "user", "content": "Hi"}]
    off = template(QWEN3).apply(hist, chat_template_kwargs={"enable_thinking": False}).prompt
    on = template(QWEN3).apply(hist).prompt
    rp = AutoparserReasoningParser(tok, chat_template_kwargs={"enable_thinking": False})
    assert rp.is_reasoning_end(tok.encode(off, add_special_tokens=False))
    assert not AutoparserReasoningParser(tok).is_reasoning_end(tok.encode(on, add_special_tokens=False))
    run = Run(QWEN3, hist, {"enable_thinking": False}, "Hello there.", None)
    got, _ = run.stream([[t] for t in run.ids])
    assert got["content"] == "Hello there." and got["reasoning_content"] is None


@needs_shared
def test_unclosed_reasoning_stays_reasoning() -> None:
    run = Run(QWEN3, [{"role": "user", "content": "Hi"}], {}, "<think>\nStill thinking about", None)
    got, _ = run.stream([[t] for t in run.ids], finish="length")
    assert got["reasoning_content"] == "Still thinking about" and got["content"] is None
    same(run.parse(), run.reference, run.text)


@needs_shared
def test_reasoning_end_on_token_ids() -> None:
    tok = tokenizer(QWEN3)
    rp = AutoparserReasoningParser(tok)
    assert (rp.reasoning_start_str, rp.reasoning_end_str) == ("<think>", "</think>")
    end = tok.convert_tokens_to_ids("</think>")
    assert rp.markers.end_ids == (end,)
    ids = tok.encode("<think>\nhm\n</think>\n\nok", add_special_tokens=False)
    at = ids.index(end)
    assert rp.is_reasoning_end_streaming(ids[:at + 1], [end])
    assert not rp.is_reasoning_end_streaming(ids[:at], ids[at - 1:at])
    assert not rp.is_reasoning_end_streaming(ids, ids[-1:])   # ended earlier, not in this delta
    assert rp.extract_content_ids(ids) == ids[at + 1:]
    assert rp.count_reasoning_tokens(ids) == at - 1


NAMED = {"type": "function", "function": {"name": "get_weather"}}


@needs_shared
@pytest.mark.parametrize("name", TEMPLATES)
@pytest.mark.parametrize("choice", ["required", "named"])
def test_forced_tool_choice_keeps_native_format(name: str, choice: str) -> None:
    """required / named: our grammar (native format) as vLLM's structured output, parsed like auto."""
    from vllm.sampling_params import SamplingParams
    from vllm.v1.structured_output.backend_xgrammar import validate_xgrammar_grammar
    from xgrammar.testing import _is_grammar_accept_string

    index = next(i for i, c in enumerate(cases(name)) if c[0].name == "tool")
    _sc, history, kwargs, text = cases(name)[index]
    run = Run(name, history, kwargs, text, PROBE_TOOLS, tool_choice="required" if choice == "required" else NAMED)
    _p, request = run.parser(stream=False)
    assert not AutoparserToolParser.supports_required_and_named
    assert request.skip_special_tokens is False
    grammar = request.structured_outputs.grammar
    assert grammar and request.structured_outputs.json is None
    validate_xgrammar_grammar(SamplingParams(structured_outputs=request.structured_outputs))
    # the server applies the grammar once the reasoning has ended: the text after it is the grammar's
    assert any(_is_grammar_accept_string(grammar, t) for t in turns.grammar_inputs(template(name).analysis.reasoning.end, text))
    assert not _is_grammar_accept_string(grammar, "Just some text.")
    same(run.parse(), run.reference, run.text)
    got, steps = run.stream([[t] for t in run.ids])
    same(got, run.reference, run.text)
    assert steps[-1].finish_reason == ("tool_calls" if choice == "required" else "stop")   # as OpenAI


@needs_shared
def test_named_tool_choice_grammar_rejects_other_tools() -> None:
    from xgrammar.testing import _is_grammar_accept_string

    name = QWEN3
    index = next(i for i, c in enumerate(cases(name)) if c[0].name == "parallel")
    _sc, history, kwargs, text = cases(name)[index]
    for choice, accepted in (("required", True), (NAMED, False)):
        run = Run(name, history, kwargs, text, PROBE_TOOLS, tool_choice=choice)
        _p, request = run.parser(stream=False)
        assert _is_grammar_accept_string(request.structured_outputs.grammar, text.rstrip()) is accepted
    run = Run(name, history, kwargs, text, PROBE_TOOLS, tool_choice="required", parallel_tool_calls=False)
    _p, request = run.parser(stream=False)
    assert not _is_grammar_accept_string(request.structured_outputs.grammar, text.rstrip())


@needs_shared
def test_auto_tool_choice_is_not_constrained() -> None:
    run = Run(QWEN3, [{"role": "user", "content": "Weather?"}], {}, "", PROBE_TOOLS)
    _p, request = run.parser(stream=False)
    assert request.skip_special_tokens is False and request.structured_outputs is None


@needs_shared
def test_tool_choice_none_leaves_markup_as_content() -> None:
    name = "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"
    index = next(i for i, c in enumerate(cases(name)) if c[0].name == "tool")
    _sc, history, kwargs, text = cases(name)[index]
    run = Run(name, history, kwargs, text, PROBE_TOOLS, tool_choice="none")
    got, _ = run.stream([[t] for t in run.ids])
    assert not got.get("tool_calls") and "get_weather" in (got["content"] or "")


def test_plugin_registration_is_lazy_and_idempotent() -> None:
    from vllm.reasoning import ReasoningParserManager
    from vllm.tool_parsers import ToolParserManager

    vllm_plugin.register()
    vllm_plugin.register()
    assert ToolParserManager.lazy_parsers["autoparser"] == ("autoparser.integrations.vllm", "AutoparserToolParser")
    assert ReasoningParserManager.lazy_parsers["autoparser"] == ("autoparser.integrations.vllm",
                                                                 "AutoparserReasoningParser")
    assert ToolParserManager.get_tool_parser("autoparser") is AutoparserToolParser
    assert ReasoningParserManager.get_reasoning_parser("autoparser") is AutoparserReasoningParser


def test_entry_point_declared() -> None:
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="vllm.general_plugins")}
    if "autoparser" not in eps:
        pytest.skip("autoparser is not installed as a distribution here (pip install -e .)")
    assert eps["autoparser"] == "autoparser.integrations.vllm_plugin:register"


def test_tokenizer_without_template_is_refused() -> None:
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE(vocab={"a": 0}, merges=[])))
    vllm_plugin.register()
    with pytest.raises(TypeError, match="chat template"):
        ParserManager.get_parser(tool_parser_name="autoparser", reasoning_parser_name="autoparser",
                                 enable_auto_tools=True, tokenizer=tok)


@needs_shared
def test_template_cache_is_per_digest() -> None:
    a = common.cached_template("{{ messages }}", bos_token="<s>", eos_token="</s>")
    assert common.cached_template("{{ messages }}", bos_token="<s>", eos_token="</s>") is a
    assert common.cached_template("{{ messages }}", bos_token="<s>", eos_token="<e>") is not a
    assert common.template_from_tokenizer(tokenizer(QWEN3)) is common.template_from_tokenizer(tokenizer(QWEN3))


@needs_shared
def test_responses_api_request() -> None:
    """The Responses API drives the same parser with a ``ResponsesRequest`` (flat function tools)."""
    from vllm.entrypoints.openai.responses.protocol import ResponsesRequest

    index = next(i for i, c in enumerate(cases(QWEN3)) if c[0].name == "reasoning_tool")
    _sc, history, kwargs, text = cases(QWEN3)[index]
    run = Run(QWEN3, history, kwargs, text, PROBE_TOOLS)
    tools = [{"type": "function", "name": t["function"]["name"], "parameters": t["function"]["parameters"]}
             for t in PROBE_TOOLS]
    request = ResponsesRequest(model="m", input="What is the weather in Paris?", tools=tools)
    p = run.pcls(run.tok, request.tools, model_config=None)
    p.set_prompt_token_ids(run.prompt_ids)
    request = p.adjust_request(request) or request
    reasoning, content, calls = p.parse(text, request, enable_auto_tools=True, model_output_token_ids=run.ids)
    got = {"reasoning_content": reasoning, "content": content,
           "tool_calls": [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}} for c in calls]}
    same(got, run.reference, text)
    p = run.pcls(run.tok, request.tools, model_config=None)
    steps = [p.parse_delta(delta_text=run.tok.decode([t], skip_special_tokens=False), delta_token_ids=[t],
                           request=request, prompt_token_ids=run.prompt_ids, finished=i + 1 == len(run.ids))
             for i, t in enumerate(run.ids)]
    same(merge([type("Step", (), {"delta": d})() for d in steps]), run.reference, text)
    forced = ResponsesRequest(model="m", input="x", tools=tools, tool_choice="required")
    forced = run.pcls(run.tok, forced.tools, model_config=None).adjust_request(forced)
    assert forced.structured_outputs is not None and forced.structured_outputs.grammar
