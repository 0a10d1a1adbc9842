"""The SGLang plugin (``autoparser.integrations.sglang``) driven through SGLang's own serving code.

Each template gets a model folder built at test time (a byte-level tokenizer whose vocabulary
holds the template's markers, the template as its chat template, a tiny config; no weights, no
network). SGLang's ``ServerArgs`` with ``--tool-call-parser autoparser --reasoning-parser
autoparser`` is published, and an ``OpenAIServingChat`` renders each request with SGLang's own
chat-template path (``_convert_to_internal_request``). The model output, rendered by the template
(``autoparser.selftest``'s scenarios), is then served back by a stand-in tokenizer manager:
whole for the non-streamed response (``_handle_non_streaming_request``), and token by token, in
random chunks and whole for the SSE stream (``_generate_chat_stream``). The message must equal
``Request.parse`` on the same output (ids aside: SGLang makes its own). ``FunctionCallParser``
and ``ReasoningParser`` are also driven directly.

Needs SGLang (``.ci/sglang.sh`` installs it into a cached virtualenv) and ../shared/templates;
skipped otherwise.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import random
import re
import sys
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import turns
from tokenizers import Tokenizer, decoders, models, pre_tokenizers

from autoparser import ChatTemplate
from autoparser.selftest import HISTORIES, PROBE_TOOLS, SCENARIOS, Scenario, _Runner, _strip_end_of_turn

if importlib.util.find_spec("sglang") is None:
    pytest.skip("SGLang not installed (.ci/sglang.sh runs these tests in a venv that has it)", allow_module_level=True)
pytest.importorskip("transformers", reason="transformers not installed")
from transformers import AutoConfig, PreTrainedTokenizerFast


def _torchvision_without_kernels() -> None:
    """The PyPI torchvision wheel is built for CUDA torch; on CPU torch its kernels do not load and
    its import fails registering fake kernels for them ("operator torchvision::nms does not exist").
    SGLang imports torchvision for image preprocessing only; declaring the operators lets it import."""
    import torch

    lib = None
    for _ in range(64):
        try:
            import torchvision  # noqa: F401
            return
        except RuntimeError as e:
            m = re.search(r"operator torchvision::(\w+) does not exist", str(e))
            if m is None:
                raise
            for key in [k for k in sys.modules if k == "torchvision" or k.startswith("torchvision.")]:
                del sys.modules[key]
            lib = lib or torch.library.Library("torchvision", "DEF")
            lib.define(f"{m.group(1)}(Tensor[] args) -> Tensor")
        except ImportError:
            return


with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _torchvision_without_kernels()
    from sglang.srt import runtime_context
    from sglang.srt.configs.model_config import ModelConfig
    from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
    from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat
    from sglang.srt.function_call.function_call_parser import FunctionCallParser
    from sglang.srt.parser.reasoning_parser import ReasoningParser
    from sglang.srt.parser.template_manager import TemplateManager
    from sglang.srt.server_args import ServerArgs

from autoparser.integrations import sglang_plugin  # noqa: E402
from autoparser.integrations.sglang import AutoparserDetector, AutoparserReasoningDetector  # noqa: E402

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


# ------------------------------------------------------------------ SGLang's serving code
class TokenizerManager:
    """What ``OpenAIServingChat`` asks of SGLang's tokenizer manager; generation replays ``items``."""

    def __init__(self, server_args: Any, tok: Any) -> None:
        self.server_args = server_args
        self.tokenizer = tok
        self.model_config = ModelConfig.from_server_args(server_args)
        self.served_model_name = "m"
        self.items: list[dict[str, Any]] = []

    def config_value(self, name: str) -> Any:
        return getattr(self.server_args, name)

    async def generate_request(self, adapted: Any, raw: Any) -> Any:
        for item in self.items:
            yield item

    def create_abort_task(self, adapted: Any) -> None:
        return None


_serving: dict[str, tuple[Any, TokenizerManager]] = {}
_folders: dict[str, Path] = {}


def serving(name: str, root: Path) -> tuple[Any, TokenizerManager]:
    """An ``OpenAIServingChat`` for a model folder built from the template, with the plugin's parsers."""
    sglang_plugin.register()
    if name not in _folders:
        folder = root / re.sub(r"\W", "_", name)
        folder.mkdir(parents=True, exist_ok=True)
        tok = tokenizer(name)
        tok.save_pretrained(folder)
        AutoConfig.for_model("qwen3", hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                             num_key_value_heads=1, head_dim=32, intermediate_size=64, vocab_size=len(tok),
                             architectures=["Qwen3ForCausalLM"]).save_pretrained(folder)
        _folders[name] = folder
    folder = _folders[name]
    args = ServerArgs(model_path=str(folder), tool_call_parser="autoparser", reasoning_parser="autoparser",
                      device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runtime_context.publish(args, role="tokenizer")   # last publish wins: one template at a time
        if name not in _serving:
            manager = TokenizerManager(args, tokenizer(name))
            templates = TemplateManager()
            templates._run_template_detection(tokenizer(name).chat_template, tokenizer(name))
            _serving[name] = (OpenAIServingChat(manager, templates), manager)
    return _serving[name]


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sglang-models")


class Run:
    """One scenario: the reference parse and SGLang's response for it."""

    def __init__(self, name: str, root: Path, history: list[dict[str, Any]], kwargs: dict[str, Any], text: str,
                 tools: list[dict[str, Any]] | None, **body: Any) -> None:
        self.name, self.text = name, text
        self.tok = tokenizer(name)
        self.chat, self.manager = serving(name, root)
        self.req = template(name).apply(history, tools=tools, chat_template_kwargs=kwargs or None)
        self.reference = self.req.parse(text).to_dict()
        self.ids = self.tok.encode(text, add_special_tokens=False)
        self.body = {"model": "m", "messages": history, "chat_template_kwargs": kwargs or None, **body}
        if tools:
            self.body["tools"] = tools

    def request(self, stream: bool) -> tuple[Any, Any]:
        request = ChatCompletionRequest(**self.body, stream=stream)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            adapted, request = self.chat._convert_to_internal_request(request)
        return adapted, request

    def _item(self, text: str, n: int, finish: str | None) -> dict[str, Any]:
        meta = {"id": "chatcmpl-test", "prompt_tokens": 1, "completion_tokens": n, "weight_version": "default",
                "finish_reason": {"type": finish, "matched": None} if finish else None}
        return {"text": text, "meta_info": meta, "output_ids": []}

    def parse(self, finish: str = "stop") -> tuple[dict[str, Any], str]:
        adapted, request = self.request(stream=False)
        self.manager.items = [self._item(self.text, len(self.ids), finish)]
        response = asyncio.run(self.chat._handle_non_streaming_request(adapted, request, None))
        choice = response.choices[0]
        msg = choice.message
        return {"content": msg.content or None, "reasoning_content": msg.reasoning_content,
                "tool_calls": [{"id": c.id, "function": {"name": c.function.name, "arguments": c.function.arguments}}
                               for c in msg.tool_calls or []]}, choice.finish_reason

    def stream(self, chunks: list[list[int]], finish: str = "stop") -> tuple[dict[str, Any], list[dict[str, Any]]]:
        adapted, request = self.request(stream=True)
        items, done = [], []
        for i, chunk in enumerate(chunks):
            done.extend(chunk)
            last = i + 1 == len(chunks)
            text = self.tok.decode(done, skip_special_tokens=False)
            if text.endswith("\ufffd") and not last:
                continue
            items.append(self._item(text, len(done), finish if last else None))
        self.manager.items = items

        async def collect() -> list[str]:
            return [c async for c in self.chat._generate_chat_stream(adapted, request, None)]

        events = []
        for sse in asyncio.run(collect()):
            assert sse.startswith("data: ")
            body = sse[len("data: "):].strip()
            if body != "[DONE]":
                events.append(json.loads(body))
        return merge(events), events


def merge(events: list[dict[str, Any]]) -> dict[str, Any]:
    content, reasoning, calls = "", "", {}
    for event in events:
        assert "error" not in event, event
        for choice in event.get("choices") or []:
            d = choice.get("delta") or {}
            content += d.get("content") or ""
            reasoning += d.get("reasoning_content") or ""
            for tc in d.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], {"id": None, "ids": 0, "function": {"name": "", "arguments": ""}})
                if tc.get("id"):
                    c["id"] = tc["id"]
                    c["ids"] += 1
                fn = tc.get("function") or {}
                c["function"]["name"] += fn.get("name") or ""
                c["function"]["arguments"] += fn.get("arguments") or ""
    return {"content": content or None, "reasoning_content": reasoning or None,
            "tool_calls": [calls[k] for k in sorted(calls)]}


def finish_reason(events: list[dict[str, Any]]) -> str | None:
    reasons = [c.get("finish_reason") for e in events for c in e.get("choices") or [] if c.get("finish_reason")]
    assert len(reasons) == 1, reasons
    return reasons[0]


def same(got: dict[str, Any], want: dict[str, Any]) -> None:
    """``got`` (from SGLang) carries what ``want`` (``Request.parse``) does; ids are SGLang's own."""
    for key in ("reasoning_content", "content"):
        assert (got.get(key) or "").strip() == (want.get(key) or "").strip(), key
    have, need = got.get("tool_calls") or [], want.get("tool_calls") or []
    assert [c["function"]["name"] for c in have] == [c["function"]["name"] for c in need]
    for h, w in zip(have, need, strict=True):
        assert json.loads(h["function"]["arguments"]) == json.loads(w["function"]["arguments"])
        assert h["function"]["arguments"] == w["function"]["arguments"]   # not a byte more (no end-of-stream re-send)
        assert h["id"]


def chunked(ids: list[int], rng: random.Random) -> list[list[int]]:
    out, i = [], 0
    while i < len(ids):
        n = rng.randint(1, 7)
        out.append(ids[i:i + n])
        i += n
    return out


def run_for(name: str, index: int, root: Path, **body: Any) -> Run:
    sc, history, kwargs, text = cases(name)[index]
    return Run(name, root, history, kwargs, text, PROBE_TOOLS if sc.tools else None, **body)


def tool_case(name: str, scenario: str = "tool") -> int:
    return next(i for i, c in enumerate(cases(name)) if c[0].name == scenario)


# ------------------------------------------------------------------ tests
@needs_shared
def test_every_template_has_cases() -> None:
    for name in TEMPLATES:
        names = {c[0].name for c in cases(name)}
        assert "tool" in names, (name, names)
    assert {c[0].name for c in cases(QWEN3)} >= {"reasoning", "reasoning_tool"}


@needs_shared
@pytest.mark.parametrize(("name", "index"), all_cases())
def test_parse_matches_request_parse(name: str, index: int, models_dir: Path) -> None:
    run = run_for(name, index, models_dir)
    got, reason = run.parse()
    same(got, run.reference)
    assert reason == ("tool_calls" if run.reference.get("tool_calls") else "stop")


@needs_shared
@pytest.mark.parametrize(("name", "index"), all_cases())
def test_stream_matches_request_parse(name: str, index: int, models_dir: Path) -> None:
    run = run_for(name, index, models_dir)
    rng = random.Random(f"{name}:{index}")
    for chunks in ([[t] for t in run.ids], chunked(run.ids, rng), [run.ids]):
        got, events = run.stream(chunks)
        same(got, run.reference)
        for call in got["tool_calls"]:
            assert call["ids"] == 1, "one id per call, on its first delta"
        assert finish_reason(events) == ("tool_calls" if run.reference.get("tool_calls") else "stop")


@needs_shared
@pytest.mark.parametrize("name", TEMPLATES)
def test_arguments_stream_as_generated(name: str, models_dir: Path) -> None:
    """Token by token, argument text arrives before the last chunk (nothing is withheld to the end)."""
    run = run_for(name, tool_case(name), models_dir)
    _, events = run.stream([[t] for t in run.ids])
    last = max(i for i, e in enumerate(events) for c in e.get("choices") or [] if c.get("finish_reason"))
    early = merge(events[:last - 1])
    assert early["tool_calls"], "the call is announced before the end"
    full = run.reference["tool_calls"][0]["function"]["arguments"]
    sent = early["tool_calls"][0]["function"]["arguments"]
    assert full.startswith(sent) and len(sent) >= len(full) // 2, (sent, full)


@needs_shared
@pytest.mark.parametrize("name", TEMPLATES)
def test_truncated_call_is_closed(name: str, models_dir: Path) -> None:
    """Output cut by max_tokens inside a call: the call is kept with valid JSON, as Request.parse does."""
    _sc, history, kwargs, text = cases(name)[tool_case(name)]
    cut = text.index("Paris") + 3
    run = Run(name, models_dir, history, kwargs, text[:cut], PROBE_TOOLS)
    got, events = run.stream([[t] for t in run.ids], finish="length")
    same(got, run.reference)
    assert finish_reason(events) == "length"
    assert json.loads(got["tool_calls"][0]["function"]["arguments"]) == {"city": "Par"}
    got, reason = run.parse(finish="length")
    same(got, run.reference)
    assert reason == "length"


@needs_shared
def test_thinking_off(models_dir: Path) -> None:
    hist = [{"role": "user", "content": "Hi"}]
    run = Run(QWEN3, models_dir, hist, {"enable_thinking": False}, "Hello there.", None)
    got, _ = run.stream([[t] for t in run.ids])
    assert got["content"] == "Hello there." and got["reasoning_content"] is None
    assert run.parse()[0]["content"] == "Hello there."


@needs_shared
def test_unclosed_reasoning_stays_reasoning(models_dir: Path) -> None:
    run = Run(QWEN3, models_dir, [{"role": "user", "content": "Hi"}], {}, "<think>\nStill thinking about", None)
    got, events = run.stream([[t] for t in run.ids], finish="length")
    assert got["reasoning_content"] == "Still thinking about" and got["content"] is None
    assert finish_reason(events) == "length"
    same(run.parse(finish="length")[0], run.reference)


NAMED = {"type": "function", "function": {"name": "get_weather"}}


@needs_shared
@pytest.mark.parametrize("name", TEMPLATES)
@pytest.mark.parametrize("choice", ["required", "named"])
def test_forced_tool_choice_keeps_native_format(name: str, choice: str, models_dir: Path) -> None:
    """required / named: our grammar (native format) as SGLang's structural tag, parsed like auto."""
    from xgrammar.testing import _is_grammar_accept_string

    run = run_for(name, tool_case(name), models_dir, tool_choice="required" if choice == "required" else NAMED)
    adapted, _request = run.request(stream=False)
    tag = json.loads(adapted.sampling_params["structural_tag"])
    grammar = tag["format"]["grammar"]
    # the server applies the grammar once the reasoning has ended: the text after it is the grammar's
    assert any(_is_grammar_accept_string(grammar, t) for t in turns.grammar_inputs(template(name).analysis.reasoning.end, run.text))
    assert not _is_grammar_accept_string(grammar, "Just some text.")
    got, reason = run.parse()
    same(got, run.reference)
    assert reason == "tool_calls"
    got, events = run.stream([[t] for t in run.ids])
    same(got, run.reference)
    assert finish_reason(events) == "tool_calls"


@needs_shared
def test_auto_tool_choice_is_not_constrained(models_dir: Path) -> None:
    run = Run(QWEN3, models_dir, [{"role": "user", "content": "Weather?"}], {}, "", PROBE_TOOLS)
    adapted, request = run.request(stream=False)
    assert adapted.sampling_params.get("structural_tag") is None
    assert request.skip_special_tokens is False
    assert request._response_parser_prefix.endswith("<|im_start|>assistant\n")   # the prompt reaches us


@needs_shared
def test_tool_choice_none_leaves_markup_as_content(models_dir: Path) -> None:
    """SGLang renders tool_choice="none" without tools (Hermes 3's template then fails: Qwen3 here)."""
    _sc, history, kwargs, text = cases(QWEN3)[tool_case(QWEN3)]
    run = Run(QWEN3, models_dir, history, kwargs, text, PROBE_TOOLS, tool_choice="none")
    got, _ = run.stream([[t] for t in run.ids])
    assert not got["tool_calls"] and "get_weather" in (got["content"] or "")
    got, _ = run.parse()
    assert not got["tool_calls"] and "get_weather" in (got["content"] or "")


@needs_shared
@pytest.mark.parametrize("name", TEMPLATES)
def test_function_call_parser_directly(name: str) -> None:
    """SGLang's FunctionCallParser with the detector: whole text and token by token."""
    from sglang.srt.entrypoints.openai.protocol import Tool

    sglang_plugin.register()
    run_index = tool_case(name, "parallel") if any(c[0].name == "parallel" for c in cases(name)) else tool_case(name)
    _sc, history, kwargs, text = cases(name)[run_index]
    req = template(name).apply(history, tools=PROBE_TOOLS, chat_template_kwargs=kwargs or None)
    want = req.parse(text).to_dict()
    tools = [Tool.model_validate(t) for t in PROBE_TOOLS]
    tok = tokenizer(name)
    rp = ReasoningParser("autoparser", stream_reasoning=True, tokenizer=tok, tool_call_parser_active=True,
                         prefix=req.prompt)
    reasoning, rest = rp.parse_non_stream(text)
    parser = FunctionCallParser(tools, "autoparser", tokenizer=tok)
    normal, calls = parser.parse_non_stream(rest or "")
    assert (reasoning or "").strip() == (want["reasoning_content"] or "").strip()
    assert normal.strip() == (want["content"] or "").strip()
    assert [(c.tool_index, c.name, c.parameters) for c in calls] == \
        [(i, c["function"]["name"], c["function"]["arguments"]) for i, c in enumerate(want.get("tool_calls") or [])]
    rp = ReasoningParser("autoparser", stream_reasoning=True, tokenizer=tok, tool_call_parser_active=True,
                         prefix=req.prompt)
    parser = FunctionCallParser(tools, "autoparser", tokenizer=tok)
    streamed: dict[int, list[str]] = {}
    content = ""
    ids = tok.encode(text, add_special_tokens=False)
    prev = ""
    for i in range(len(ids)):
        now = tok.decode(ids[:i + 1], skip_special_tokens=False)
        delta, prev = now[len(prev):], now
        _r, normal_delta = rp.parse_stream_chunk(delta)
        if i + 1 == len(ids):
            _r2, end = rp.parse_stream_end()
            normal_delta = (normal_delta or "") + (end or "")
        text_part, items = parser.parse_stream_chunk(normal_delta or "")
        if i + 1 == len(ids):
            end_text, end_items = parser.parse_stream_end()
            text_part, items = text_part + end_text, [*items, *end_items]
        content += text_part
        for item in items:
            parts = streamed.setdefault(item.tool_index, ["", ""])
            parts[0] += item.name or ""
            parts[1] += item.parameters
    assert content.strip() == (want["content"] or "").strip()
    assert [tuple(streamed[k]) for k in sorted(streamed)] == \
        [(c["function"]["name"], c["function"]["arguments"]) for c in want["tool_calls"]]
    assert not parser.detector.prev_tool_call_arr   # SGLang's end-of-stream re-send finds nothing


def test_plugin_registration_is_idempotent() -> None:
    from sglang.srt.server_args import _reasoning_parser_choices, _tool_call_parser_choices

    sglang_plugin.register()
    sglang_plugin.register()
    assert FunctionCallParser.ToolCallParserEnum["autoparser"] is AutoparserDetector
    assert ReasoningParser.DetectorMap["autoparser"] is AutoparserReasoningDetector
    assert "autoparser" in _tool_call_parser_choices() and "autoparser" in _reasoning_parser_choices()


def test_entry_point_declared() -> None:
    from importlib.metadata import entry_points

    eps = {ep.name: ep.value for ep in entry_points(group="sglang.srt.plugins")}
    if "autoparser" not in eps:
        pytest.skip("autoparser is not installed as a distribution here (pip install -e .)")
    assert eps["autoparser"] == "autoparser.integrations.sglang_plugin:register"


def test_sglang_loads_the_plugin() -> None:
    """SGLang's own loader runs the entry point (as ``sglang serve`` does before parsing arguments)."""
    from importlib.metadata import entry_points

    if "autoparser" not in {ep.name for ep in entry_points(group="sglang.srt.plugins")}:
        pytest.skip("autoparser is not installed as a distribution here (pip install -e .)")
    import sglang.srt.plugins as plugins

    loaded = plugins.load_plugins_by_group(plugins.GENERAL_PLUGINS_GROUP)
    assert "autoparser" in loaded
    loaded["autoparser"][0]()
    assert FunctionCallParser.ToolCallParserEnum["autoparser"] is AutoparserDetector


def test_tokenizer_without_template_is_refused() -> None:
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE(vocab={"a": 0}, merges=[])))
    sglang_plugin.register()
    with pytest.raises(ValueError, match="chat template"):
        FunctionCallParser([], "autoparser", tokenizer=tok)
