"""Per-request decisions PRE.1-PRE.6 (autoparser.decisions), and seed 000's truth table.

PRE.1 goes through both tokenizer sources (a model folder with a ``tokenizers``
tokenizer built here, and a tiny GGUF written with ``gguf``). PRE.2-PRE.6 use the
fixtures in ``templates/``, small inline templates, and the real templates in
``../shared/templates`` (skipped when that folder is absent). The last section
compares the derived row with every value seed 000's table states.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import turns
from test_sources import build_tokenizer, write_gguf

from autoparser import ChatTemplate
from autoparser.cli import main
from autoparser.decisions.kwargs import (
    ReasoningMarkers,
    candidate_values,
    discover_reasoning_kwargs,
    prompt_state,
    reasoning_variables,
    template_variables,
)
from autoparser.decisions.row import DecisionRow, control_looking_parts, decide

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "templates"
SHARED = (turns.shared_dir() or ROOT.parent / "shared") / "templates"   # AUTOPARSER_SHARED may hide it

corpus = pytest.mark.corpus
needs_shared = pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/templates is absent")

USER = [{"role": "user", "content": "What is the weather in Paris?"}]
TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}
AFTER_TOOL = [*USER, {"role": "assistant", "content": "", "tool_calls": [CALL]},
              {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "18C, sunny"}]

RUNTIME_PRE6 = ("runtime: with reasoning off the engine still extracts reasoning, and strip_leading_reasoning "
                "only drops a whole <think>...</think> block, not a lone leading start marker "
                "(ReasoningPlan.extract / rstray in runtime/engine.py)")


def fixture(name: str) -> ChatTemplate:
    return ChatTemplate.from_file(FIXTURES / f"{name}.jinja")


def shared(name: str) -> ChatTemplate:
    path = SHARED / f"{name}.jinja"
    if not path.is_file():
        pytest.skip(f"{path.name} is not in ../shared/templates")
    return ChatTemplate.from_file(path)


def chatml(gp_tail: str, extra: str = "") -> str:
    """A small ChatML + <think> + Hermes-JSON template whose generation prompt ends with ``gp_tail``."""
    return (extra + "{% for m in messages %}{% if m.role == 'assistant' %}<|im_start|>assistant\n"
            "{% if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}"
            "{{ m.content or '' }}{% for c in m.tool_calls or [] %}<tool_call>\n"
            "{{ {'name': c.function.name, 'arguments': c.function.arguments} | tojson }}\n</tool_call>"
            "{% endfor %}<|im_end|>\n{% else %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
            "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n" + gp_tail + "{% endif %}")


def stream(req: Any, chunks: list[str]) -> Any:
    parser = req.stream()
    for chunk in chunks:
        parser.feed(chunk)
    parser.finish()
    return parser.message


# =========================================================================== PRE.1 through tokenizer sources

KIMI_SPECIALS = ["<|im_end|>", "<|im_user|>", "<|im_assistant|>", "<|im_system|>", "<|im_middle|>",
                 "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                 "<|tool_call_argument_begin|>", "<|tool_call_end|>"]
KIMI_TOOL_TOKENS = ("<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                    "<|tool_call_argument_begin|>", "<|tool_call_end|>")
MISTRAL_CONTROL = ["<s>", "</s>", "[INST]", "[/INST]", "[TOOL_CALLS]", "[AVAILABLE_TOOLS]", "[/AVAILABLE_TOOLS]",
                   "[TOOL_RESULTS]", "[/TOOL_RESULTS]"]
CHATML_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]


def model_dir(root: Path, name: str, template: str, specials: list[str], added: list[str] = (),
              eos: str = "") -> tuple[Path, Any]:
    """A model folder: tokenizer.json (built here), tokenizer_config.json, chat_template.jinja."""
    tok = build_tokenizer(specials, list(added))
    folder = root / name
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": eos or specials[-1]}))
    (folder / "chat_template.jinja").write_text(template, encoding="utf-8")
    return folder, tok


def gguf_file(path: Path, template: str, tok: Any, eos: str) -> Path:
    """The same vocabulary as a GGUF: special added -> CONTROL (3), plain added -> USER_DEFINED (4)."""
    by_id = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    added = tok.get_added_tokens_decoder()
    types = [(3 if added[i].special else 4) if i in added else 1 for i in range(len(by_id))]
    return write_gguf(path, templates=template, tokens=[by_id[i] for i in range(len(by_id))], types=types,
                      eos=tok.token_to_id(eos))


def both_sources(tmp_path: Path, fixture_name: str, specials: list[str], added: list[str] = (),
                 eos: str = "") -> tuple[ChatTemplate, ChatTemplate, Any]:
    source = (FIXTURES / f"{fixture_name}.jinja").read_text(encoding="utf-8")
    folder, tok = model_dir(tmp_path, fixture_name, source, specials, added, eos)
    pretrained = ChatTemplate.from_pretrained(folder)
    gguf = ChatTemplate.from_gguf(gguf_file(tmp_path / f"{fixture_name}.gguf", source, tok, eos or specials[-1]))
    return pretrained, gguf, tok


def pre1(row: DecisionRow) -> tuple[Any, ...]:
    return row.skip_special_tokens, row.special_tokens_source, row.preserved_tokens, row.special_by_part


def test_pre1_kimi_sections_special_tokens_through_both_sources(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    pretrained, gguf, _ = both_sources(tmp_path, "kimi_sections", KIMI_SPECIALS, ["<think>", "</think>"])
    for tmpl in (pretrained, gguf):
        assert tmpl.special_tokens is not None
        row = decide(tmpl)
        assert row.special_tokens_source == "tokenizer"
        assert row.skip_special_tokens is False and row.skip_special_tokens_applied is False
        assert set(KIMI_TOOL_TOKENS) <= set(row.preserved_tokens)
        assert "<think>" not in row.preserved_tokens       # added with special=False: decoding keeps it
        assert "<|im_end|>" not in row.preserved_tokens    # end of turn: the parser does not need it
        assert dict(row.special_by_part)["tools"] is False
    assert pre1(decide(pretrained)) == pre1(decide(gguf))


def test_pre1_marker_not_in_vocabulary_keeps_default(tmp_path: Path) -> None:
    """[TOOL_CALLS] looks special (heuristic: False) but is plain text in this vocabulary: True."""
    pytest.importorskip("gguf")
    pretrained, gguf, _ = both_sources(tmp_path, "mistral_array", ["<s>", "</s>"])
    for tmpl in (pretrained, gguf):
        row = decide(tmpl)
        assert (row.skip_special_tokens, row.special_tokens_source, row.preserved_tokens) == (True, "tokenizer", ())
    assert decide(fixture("mistral_array")).skip_special_tokens_applied is False   # heuristic


def test_pre1_control_token_in_vocabulary(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    pretrained, gguf, _ = both_sources(tmp_path, "mistral_array", MISTRAL_CONTROL, eos="</s>")
    for tmpl in (pretrained, gguf):
        row = decide(tmpl)
        assert (row.skip_special_tokens, row.preserved_tokens) == (False, ("[TOOL_CALLS]",))


def test_pre1_plain_markers_with_tokenizer(tmp_path: Path) -> None:
    """Hermes <tool_call> not in the vocabulary: nothing to preserve, even though <|im_end|> is special."""
    pytest.importorskip("gguf")
    pretrained, gguf, _ = both_sources(tmp_path, "hermes_json", CHATML_SPECIALS, eos="<|im_end|>")
    for tmpl in (pretrained, gguf):
        assert pre1(decide(tmpl))[:3] == (True, "tokenizer", ())
        assert tmpl.apply(USER, tools=TOOLS).skip_special_tokens is True


@pytest.mark.parametrize("special", [False, True])
def test_pre1_hermes_tool_call_added_both_ways(tmp_path: Path, special: bool) -> None:
    """Hermes/Qwen3-Coder add <tool_call> with special=False: skipping special tokens is safe (True).
    Added as a special token it would be stripped, so PRE.1 says False and preserves it."""
    pytest.importorskip("gguf")
    tool_tokens = ["<tool_call>", "</tool_call>"]
    specials = CHATML_SPECIALS + tool_tokens if special else CHATML_SPECIALS
    pretrained, gguf, tok = both_sources(tmp_path, "hermes_json", specials, [] if special else tool_tokens,
                                         eos="<|im_end|>")
    for tmpl in (pretrained, gguf):
        row = decide(tmpl)
        assert row.special_tokens_source == "tokenizer"
        assert row.skip_special_tokens is (not special)
        assert row.preserved_tokens == (tuple(tool_tokens) if special else ())
        req = tmpl.apply(USER, tools=TOOLS)
        output = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
        decoded = tok.decode(tok.encode(output).ids, skip_special_tokens=req.skip_special_tokens)
        assert [c.name for c in req.parse(decoded).tool_calls] == ["get_weather"]


def test_pre1_decoding_with_the_decision_keeps_the_tool_call(tmp_path: Path) -> None:
    """End to end: encode a model output, decode with req.skip_special_tokens, parse the call back."""
    folder, tok = model_dir(tmp_path, "kimi", (FIXTURES / "kimi_sections.jinja").read_text(), KIMI_SPECIALS,
                            ["<think>", "</think>"])
    req = ChatTemplate.from_pretrained(folder).apply(USER, tools=TOOLS)
    assert req.skip_special_tokens is False
    output = ("<think>Look it up.</think><|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0"
              '<|tool_call_argument_begin|>{"city": "Paris"}<|tool_call_end|><|tool_calls_section_end|>')
    ids = tok.encode(output).ids
    kept = req.parse(tok.decode(ids, skip_special_tokens=req.skip_special_tokens))
    assert [(c.name, json.loads(c.arguments)) for c in kept.tool_calls] == [("get_weather", {"city": "Paris"})]
    stripped = req.parse(tok.decode(ids, skip_special_tokens=True))
    assert stripped.tool_calls == []                      # the failure PRE.1 prevents


def test_pre1_request_needs_only_active_parts(tmp_path: Path) -> None:
    """No tools and reasoning off: the tool tokens need not survive decoding."""
    folder, _ = model_dir(tmp_path, "kimi", (FIXTURES / "kimi_sections.jinja").read_text(), KIMI_SPECIALS)
    tmpl = ChatTemplate.from_pretrained(folder)
    assert tmpl.apply(USER, tools=TOOLS).skip_special_tokens is False
    assert tmpl.apply(USER).skip_special_tokens is True
    assert tmpl.apply(USER, tools=TOOLS, tool_choice="none").skip_special_tokens is True


def test_pre1_without_tokenizer_is_unknown_with_heuristic() -> None:
    row = decide(fixture("kimi_sections"))
    assert (row.skip_special_tokens, row.special_tokens_source) == (None, "heuristic")
    assert row.skip_special_tokens_applied is False
    assert "no tokenizer" in row.special_tokens_reason
    plain = decide(fixture("hermes_json"))
    assert (plain.skip_special_tokens, plain.skip_special_tokens_applied) == (None, True)
    assert plain.preserved_tokens == ("<tool_call>", "</tool_call>")   # kept for the grammar either way


@pytest.mark.parametrize("marker, parts", [
    ("<|tool_calls_section_begin|>", ("<|tool_calls_section_begin|>",)),
    ("<｜tool▁calls▁begin｜>", ("<｜tool▁calls▁begin｜>",)),
    ("<｜DSML｜tool_calls>", ("<｜DSML｜tool_calls>",)),
    ("<|tool_call>call:", ("<|tool_call>",)),
    ("}<tool_call|>", ("<tool_call|>",)),
    ("[TOOL_CALLS][", ("[TOOL_CALLS]",)),
    ("<think>", ()),
    ("<tool_call>\n", ()),
    ("<minimax:tool_call>", ()),
    ("functools[", ()),
])
def test_control_looking_parts(marker: str, parts: tuple[str, ...]) -> None:
    assert control_looking_parts(marker) == parts


# =========================================================================== PRE.2 reasoning gates


def test_pre2_fixture_enable_thinking() -> None:
    tmpl = fixture("qwen3_think_json")
    assert "enable_thinking" in template_variables(tmpl.source)
    assert "enable_thinking" in reasoning_variables(tmpl.source)
    row = decide(tmpl)
    assert row.reasoning_off_kwargs == (("enable_thinking", False),)
    assert ("enable_thinking", True) in row.reasoning_on_kwargs
    assert (row.prompt_state, row.reasoning_off, row.extract_reasoning) == ("plain", False, True)


def test_pre2_request_with_off_kwargs_has_no_reasoning_extraction() -> None:
    tmpl = fixture("qwen3_think_json")
    off = tmpl.apply(USER, chat_template_kwargs={"enable_thinking": False}).decisions
    assert (off.prompt_state, off.reasoning_off, off.extract_reasoning) == ("closed", True, False)
    on = tmpl.apply(USER, chat_template_kwargs={"enable_thinking": True}).decisions
    assert (on.reasoning_off, on.extract_reasoning) == (False, True)
    assert tmpl.apply(USER, reasoning_format="none").decisions.extract_reasoning is False


def test_pre2_template_without_switch() -> None:
    for name in ("hermes_json", "forced_open_think", "name_as_key"):
        row = decide(fixture(name))
        assert row.reasoning_off_kwargs == (), name
    # name_as_key reads enable_thinking, but it only changes the developer prompt
    assert "enable_thinking" in reasoning_variables(fixture("name_as_key").source)


@pytest.mark.parametrize("gp_tail, off", [
    ("{% if thinking_mode == 'chat' %}<think>\n\n</think>\n\n{% else %}<think>\n{% endif %}",
     [("thinking_mode", "chat")]),
    ("{% if force_nonempty_content is defined and force_nonempty_content %}<think></think>"
     "{% elif enable_thinking is false %}<think></think>{% else %}<think>\n{% endif %}",
     [("enable_thinking", False), ("force_nonempty_content", True)]),
    ("{% if reasoning_effort == 'none' %}<think>\n\n</think>\n\n{% endif %}", [("reasoning_effort", "none")]),
    ("{% if thinking is defined and thinking is false %}{% else %}<think>\n{% endif %}", [("thinking", False)]),
])
def test_pre2_discovers_switches_by_rendering(gp_tail: str, off: list[tuple[str, Any]]) -> None:
    row = decide(ChatTemplate.from_string(chatml(gp_tail)))
    assert sorted(row.reasoning_off_kwargs, key=str) == sorted(off, key=str)


def test_pre2_candidate_values_come_from_the_ast() -> None:
    source = ("{% if mode == 'chat' or mode in ['fast', 'slow'] %}x{% endif %}"
              "{{ reasoning_effort | default('medium') }}")
    assert candidate_values(source, "mode") == (True, False, "chat", "fast", "slow")
    values = candidate_values(source, "reasoning_effort")
    assert values[:3] == (True, False, "medium") and "none" in values and "high" in values


def test_pre2_variables_exclude_message_fields() -> None:
    source = ("{% set reasoning_content = m %}{{ reasoning_content }}{{ thinking_text }}{{ enable_thinking }}"
              "{{ force_nonempty_content }}{{ messages }}")
    assert reasoning_variables(source) == ("enable_thinking", "force_nonempty_content")


def test_prompt_state_classification() -> None:
    think = ReasoningMarkers(start="<think>\n", end="\n</think>\n\n")
    assert prompt_state("<|im_start|>assistant\n<think>\n", think) == "open"
    assert prompt_state("<|im_start|>assistant\n<think>\n\n</think>\n\n", think) == "closed"
    assert prompt_state("<｜Assistant｜></think>", ReasoningMarkers("<｜Assistant｜><think>", "</think>")) == "closed"
    assert prompt_state("\n\n<think>", ReasoningMarkers("<｜Assistant｜><think>", "</think>")) == "open"
    assert prompt_state("<|im_start|>assistant\n", think) == "plain"
    k3 = ReasoningMarkers("<|open|>think<|sep|>", "<|close|>think<|sep|>", "<|open|>response<|sep|>")
    assert prompt_state('<|open|>message role="assistant"<|sep|><|open|>response<|sep|>', k3) == "closed"
    # no analysed markers: a trailing think-like tag
    assert prompt_state("<｜Assistant｜><think>\n", ReasoningMarkers(), "...</think>...") == "open"
    assert prompt_state("<|start|>assistant", ReasoningMarkers(), "") == "plain"


@corpus
@needs_shared
@pytest.mark.parametrize("name, off, on", [
    ("deepseek-ai-DeepSeek-V4", {"thinking": False, "enable_thinking": False}, {"thinking": True}),
    ("deepseek-ai-DeepSeek-V3.2", {"thinking": False, "enable_thinking": False}, {"thinking": True}),
    ("google-gemma-4-31B-it", {"enable_thinking": False}, {"enable_thinking": True}),
    ("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", {"enable_thinking": False}, {"enable_thinking": True}),
    ("Kimi-K3", {"thinking": False}, {"thinking": True}),
    ("Qwen-Qwen3-0.6B", {"enable_thinking": False}, {"enable_thinking": True}),
    ("openai-gpt-oss-120b", {}, {}),
])
def test_pre2_shared_templates(name: str, off: dict[str, Any], on: dict[str, Any]) -> None:
    tmpl = shared(name)
    kw = discover_reasoning_kwargs(tmpl.renderer, ReasoningMarkers.from_analysis(tmpl.analysis))
    assert kw.off_kwargs() == off
    for k, v in on.items():
        assert (k, v) in kw.on
    if name == "openai-gpt-oss-120b":   # read, but no effort level closes reasoning
        assert kw.variables == ("reasoning_effort",)


# =========================================================================== PRE.3 prompt-opened reasoning


def test_pre3_prompt_opens_reasoning_and_parser_starts_in_it() -> None:
    req = fixture("forced_open_think").apply(USER, tools=TOOLS)
    assert req.decisions.prompt_opens_reasoning is True
    msg = req.parse("Paris, so the tool.\n</think>\n\nLet me check.")
    assert (msg.reasoning_content, msg.content) == ("Paris, so the tool.", "Let me check.")
    assert stream(req, ["Paris, so", " the tool.\n</th", "ink>\n\nLet me check."]).content == "Let me check."


RESEEDS = chatml("<think>\n")
NO_RESEED = chatml("{% if messages[-1].role != 'tool' %}<think>\n{% endif %}")


def test_pre3_template_that_reseeds_after_tool() -> None:
    tmpl = ChatTemplate.from_string(RESEEDS)
    assert decide(tmpl).reseeds_reasoning_after_tool is True
    req = tmpl.apply(AFTER_TOOL, tools=TOOLS)
    assert (req.decisions.prompt_opens_reasoning, req.decisions.reseeds_reasoning_after_tool) == (True, True)
    msg = req.parse("It is sunny.\n</think>\n\nParis: 18C and sunny.")
    assert (msg.reasoning_content, msg.content) == ("It is sunny.", "Paris: 18C and sunny.")


def test_pre3_template_that_does_not_reseed_after_tool() -> None:
    tmpl = ChatTemplate.from_string(NO_RESEED)
    row = decide(tmpl)
    assert (row.prompt_opens_reasoning, row.reseeds_reasoning_after_tool) == (True, False)
    req = tmpl.apply(AFTER_TOOL, tools=TOOLS)
    assert req.decisions.prompt_opens_reasoning is False
    msg = req.parse("Paris: 18C and sunny.")
    assert (msg.reasoning_content, msg.content) == (None, "Paris: 18C and sunny.")


def test_pre3_not_applicable_without_prefill() -> None:
    assert decide(fixture("qwen3_think_json")).reseeds_reasoning_after_tool is None
    assert decide(fixture("hermes_json")).reseeds_reasoning_after_tool is None


@corpus
@needs_shared
def test_pre3_deepseek_v4_reseeds_after_tool() -> None:
    tmpl = shared("deepseek-ai-DeepSeek-V4")
    assert decide(tmpl).reseeds_reasoning_after_tool is True
    req = tmpl.apply(AFTER_TOOL, tools=TOOLS, chat_template_kwargs={"thinking": True})
    assert req.decisions.prompt_opens_reasoning is True
    msg = req.parse("The tool says sunny.</think>Paris is sunny, 18C.")
    assert (msg.reasoning_content, msg.content) == ("The tool says sunny.", "Paris is sunny, 18C.")
    assert "</think>" not in (stream(req, ["The tool says", " sunny.</thi", "nk>Paris is sunny, 18C."]).content or "")


@corpus
@needs_shared
def test_pre3_kimi_k2_thinking_never_prefills() -> None:
    tmpl = shared("Kimi-K2-Thinking")
    row = decide(tmpl)
    assert (row.prompt_opens_reasoning, row.reseeds_reasoning_after_tool) == (False, None)
    msg = tmpl.apply(AFTER_TOOL, tools=TOOLS).parse("Paris is sunny, 18C.")
    assert (msg.reasoning_content, msg.content) == (None, "Paris is sunny, 18C.")


# =========================================================================== PRE.4 tool_choice required / named


def test_pre4_forced_call() -> None:
    tmpl = fixture("qwen3_think_json")
    assert decide(tmpl).tool_choice_forced is False
    req = tmpl.apply(USER, tools=TOOLS, tool_choice="required").decisions
    assert (req.tool_choice_forced, req.forced_call_style, req.forced_call_start) == (True, "json", "<tool_call>\n")
    assert req.reasoning_before_forced_call == "allowed"
    named = tmpl.apply(USER, tools=TOOLS, tool_choice={"type": "function", "function": {"name": "get_weather"}})
    assert named.decisions.tool_choice_forced is True
    off = tmpl.apply(USER, tools=TOOLS, tool_choice="required", chat_template_kwargs={"enable_thinking": False})
    assert off.decisions.reasoning_before_forced_call == "none"


def test_pre4_prefilled_reasoning_comes_before_the_call() -> None:
    row = fixture("forced_open_think").apply(USER, tools=TOOLS, tool_choice="required").decisions
    assert row.reasoning_before_forced_call == "required"


def test_pre4_bare_json_and_no_reasoning() -> None:
    row = fixture("llama3_json").apply(USER, tools=TOOLS, tool_choice="required").decisions
    assert (row.forced_call_style, row.forced_call_start, row.reasoning_before_forced_call) == ("json", "", "none")
    assert decide(fixture("chatml_plain")).forced_call_style == "none"


# =========================================================================== PRE.5 end of turn


def test_pre5_stop_markers_and_ignore_eos() -> None:
    tmpl = ChatTemplate.from_file(FIXTURES / "qwen3_think_json.jinja", eos_token="<|endoftext|>")
    req = tmpl.apply(USER)
    assert req.decisions.stop == ("<|im_end|>", "<|endoftext|>")
    assert req.stop_for(ignore_eos=False) == req.decisions.stop
    assert req.stop_for() == req.decisions.stop
    assert req.stop_for(ignore_eos=True) == ()
    assert req.parse("Hello.<|im_end|>").content == "Hello."


@pytest.mark.parametrize("name, stop", [
    ("llama3_json", ("<|eot_id|>",)),
    ("gemma_plain", ("<end_of_turn>",)),
    ("command_r_action", ("<|END_OF_TURN_TOKEN|>",)),
    ("hermes_json", ("<|im_end|>",)),
    ("channels", ("<|return|>",)),
])
def test_pre5_fixture_stop_markers(name: str, stop: tuple[str, ...]) -> None:
    assert decide(fixture(name)).stop == stop


def test_pre5_eom_found_by_rendering_builtin_tools() -> None:
    """Llama 3.1 ends a tool-call turn with <|eom_id|> when builtin_tools is passed."""
    source = ("{% for m in messages %}<|start_header_id|>{{ m.role }}<|end_header_id|>\n\n"
              "{% if m.tool_calls %}{% set c = m.tool_calls[0].function %}"
              "{% if builtin_tools is defined and c.name in builtin_tools %}<|python_tag|>{{ c.name }}.call("
              "{% for k, v in c.arguments.items() %}{{ k }}=\"{{ v }}\"{% endfor %}){% else %}"
              "{\"name\": \"{{ c.name }}\", \"parameters\": {{ c.arguments | tojson }}}{% endif %}"
              "{% if builtin_tools is defined %}<|eom_id|>{% else %}<|eot_id|>{% endif %}"
              "{% else %}{{ m.content }}<|eot_id|>{% endif %}{% endfor %}"
              "{% if add_generation_prompt %}<|start_header_id|>assistant<|end_header_id|>\n\n{% endif %}")
    assert decide(ChatTemplate.from_string(source)).stop == ("<|eot_id|>", "<|eom_id|>")


def test_pre5_stop_never_holds_syntax_markers() -> None:
    for path in sorted(FIXTURES.glob("*.jinja")):
        tmpl = ChatTemplate.from_file(path)
        row = decide(tmpl)
        syntax = {m for m in tmpl.analysis.markers() if m not in tmpl.analysis.end_of_turn}
        assert not set(row.stop) & syntax, path.name


@corpus
@needs_shared
def test_pre5_llama31_eom() -> None:
    assert decide(shared("meta-llama-Llama-3.1-8B-Instruct")).stop == ("<|eot_id|>", "<|eom_id|>")


@corpus
@needs_shared
def test_pre5_kimi_k3_stop_leaves_out_syntax_markers() -> None:
    tmpl = shared("Kimi-K3")
    assert decide(tmpl).stop == ("<|end_of_msg|>",)


@corpus
@needs_shared
def test_pre5_core_request_stop_has_no_syntax_markers() -> None:
    req = shared("Kimi-K3").apply(USER)
    assert not {"<|sep|>", "<|close|>"} & set(req.stop)


# =========================================================================== PRE.6 stray reasoning start


def test_pre6_decision() -> None:
    tmpl = fixture("qwen3_think_json")
    assert decide(tmpl).strip_leading_reasoning_start is True            # the template can switch it off
    off = tmpl.apply(USER, chat_template_kwargs={"enable_thinking": False}).decisions
    assert (off.strip_leading_reasoning_start, off.leading_reasoning_start) == (True, "<think>")
    assert tmpl.apply(USER).decisions.strip_leading_reasoning_start is False
    forced = tmpl.apply(USER, tools=TOOLS, tool_choice="required", chat_template_kwargs={"enable_thinking": False})
    assert forced.decisions.strip_leading_reasoning_start is False
    assert decide(fixture("hermes_json")).strip_leading_reasoning_start is False


def test_pre6_empty_block_is_dropped() -> None:
    req = fixture("qwen3_think_json").apply(USER, chat_template_kwargs={"enable_thinking": False})
    assert req.parse("<think>\n\n</think>\n\nParis is sunny.").content == "Paris is sunny."
    msg = stream(req, ["<thi", "nk>\n\n</th", "ink>\n\nParis is sunny."])
    assert (msg.reasoning_content, msg.content) == (None, "Paris is sunny.")


def test_pre6_lone_leading_start_is_stripped() -> None:
    req = fixture("qwen3_think_json").apply(USER, chat_template_kwargs={"enable_thinking": False})
    msg = req.parse("<think>Paris is sunny.")
    assert (msg.reasoning_content, msg.content) == (None, "Paris is sunny.")


def test_pre6_lone_leading_start_split_across_chunks() -> None:
    req = fixture("qwen3_think_json").apply(USER, chat_template_kwargs={"enable_thinking": False})
    msg = stream(req, ["<thi", "nk>Paris", " is sunny."])
    assert (msg.reasoning_content, msg.content) == (None, "Paris is sunny.")


def test_pre6_only_the_leading_marker() -> None:
    """A <think> later in the answer is text, with reasoning off."""
    req = fixture("qwen3_think_json").apply(USER, chat_template_kwargs={"enable_thinking": False})
    assert req.parse("Use a <think> tag.").content == "Use a <think> tag."


@corpus
@needs_shared
def test_pre6_nemotron_disabled_leading_think() -> None:
    req = shared("NVIDIA-Nemotron-3-Nano-30B-A3B-BF16").apply(USER, chat_template_kwargs={"enable_thinking": False})
    assert req.decisions.strip_leading_reasoning_start is True
    for chunks in (["<think>answer"], ["<thi", "nk>ans", "wer"]):
        msg = stream(req, chunks)
        assert (msg.reasoning_content, msg.content) == (None, "answer")


@corpus
@needs_shared
def test_pre6_deepseek_v4_default_off() -> None:
    req = shared("deepseek-ai-DeepSeek-V4").apply(USER)
    assert req.decisions.reasoning_off is True
    assert req.parse("<think>Paris is sunny.").content == "Paris is sunny."


# =========================================================================== the CLI


def test_cli_single_template(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decisions", str(FIXTURES / "qwen3_think_json.jinja")]) == 0
    out = capsys.readouterr().out
    assert "kwargs that switch reasoning off [PRE.2]" in out and "enable_thinking=false" in out
    for label in ("PRE.1", "PRE.3", "PRE.4", "PRE.5", "PRE.6"):    # each decision named, its label beside
        line = next(line for line in out.splitlines() if f"[{label}]" in line)
        assert len(line.split("[")[0].strip(" │┃")) > 10, line


def test_cli_json_request(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decisions", str(FIXTURES / "qwen3_think_json.jinja"), "--json",
                 "--kwargs", '{"enable_thinking": false}']) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["reasoning_off"] is True and data["reasoning_off_kwargs"] == {"enable_thinking": False}
    assert data["stop"] == ["<|im_end|>", "</s>"]


def test_cli_folder_markdown(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decisions", str(FIXTURES), "--markdown"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("| template | skip special tokens when decoding [PRE.1]")
    assert len(lines) == 2 + len(list(FIXTURES.glob("*.jinja")))
    assert any(line.startswith("| kimi_sections.jinja | false (no tokenizer") for line in lines)


def test_cli_tokenizer_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("gguf")
    source = (FIXTURES / "kimi_sections.jinja").read_text()
    _, tok = model_dir(tmp_path, "kimi", source, KIMI_SPECIALS, eos="<|im_end|>")
    gguf = gguf_file(tmp_path / "kimi.gguf", source, tok, "<|im_end|>")
    for tokenizer in (tmp_path / "kimi", gguf):
        assert main(["decisions", str(FIXTURES / "kimi_sections.jinja"), "--tokenizer", str(tokenizer),
                     "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert (data["skip_special_tokens"], data["special_tokens_source"]) == (False, "tokenizer")
        assert data["stop"] == ["<|im_end|>"]          # EOS from the tokenizer, not the CLI's </s>


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["decisions", str(tmp_path / "absent.jinja")]) == 2
    (tmp_path / "empty").mkdir()
    assert main(["decisions", str(tmp_path / "empty")]) == 2
    assert main(["decisions", str(FIXTURES / "hermes_json.jinja"), "--tokenizer", str(tmp_path / "nope")]) == 2
    capsys.readouterr()


# =========================================================================== seed 000's truth table

YES, NO = False, True      # "needs special tokens: YES" means skip_special_tokens must be False


@dataclass(frozen=True)
class SeedRow:
    """What seed 000 states for one parser, and the shared template that stands for it."""

    parser: str
    template: str
    pre1: bool | None = None                 # skip_special_tokens stated (None: "?" with no lean)
    pre1_hedged: bool = False                # "? ... likely YES"
    pre1_parts: tuple[str, ...] = ()         # compare these marker groups only (a reasoning-only parser)
    pre2: tuple[tuple[str, Any], ...] | None = None     # the gate's kwargs (None: not stated)
    pre3_after_tool_on: bool | None = None   # True "NEEDS ON", False "OFF when last_is_tool"
    pre4_reasoning_off: bool = False         # "OFF on tool_choice=required/named"
    pre6: bool = False                       # "YES when PRE.2 disables reasoning"
    disagree: dict[str, str] = field(default_factory=dict)   # PRE.n -> why the derived value differs


SEED_000 = [
    SeedRow("harmony/gpt_oss", "openai-gpt-oss-120b", pre1=YES),
    SeedRow("gemma4", "google-gemma-4-31B-it", pre1=YES, pre2=(("enable_thinking", False),)),
    SeedRow("kimi_k25 (K2-Thinking template)", "Kimi-K2-Thinking", pre1=YES, pre1_hedged=True,
            pre2=(("thinking", False),), pre3_after_tool_on=False, disagree={
                "PRE.2": "the K2-Thinking template reads no thinking variable (it always lets the model think; "
                         "no K2.5 template is in ../shared/templates); Kimi-K3 below does read `thinking`"}),
    SeedRow("kimi_k25 (K3 template)", "Kimi-K3", pre1=YES, pre1_hedged=True, pre2=(("thinking", False),),
            pre3_after_tool_on=False, disagree={
                "PRE.3": "the K3 template opens <|open|>think<|sep|> after a tool result too, so by this "
                         "template the parser must start in reasoning; SGLang's observed K2.5 behaviour is a "
                         "model trait the template does not show"}),
    SeedRow("deepseek_v3", "vllm-tool_chat_template_deepseekv3", pre1=YES, pre1_hedged=True),
    SeedRow("deepseek_v3_2", "deepseek-ai-DeepSeek-V3.2", pre1=YES, pre1_hedged=True,
            pre2=(("thinking", False), ("thinking_mode", "chat")), pre3_after_tool_on=True, disagree={
                "PRE.2": "thinking_mode is a DeepSeek V4 formatter convention, not a template variable; the "
                         "template switches on thinking and enable_thinking (both found)"}),
    SeedRow("deepseek_v4", "deepseek-ai-DeepSeek-V4", pre1=YES, pre1_hedged=True,
            pre2=(("thinking", False), ("thinking_mode", "chat")), pre3_after_tool_on=True, disagree={
                "PRE.2": "thinking_mode is a formatter convention (resolve_thinking_mode), not read by the "
                         "template; thinking=false and enable_thinking=false are found"}),
    SeedRow("deepseek_r1", "llama-cpp-deepseek-r1", pre1=NO, pre1_parts=("reasoning",),
            pre2=(("thinking", False),), disagree={
                "PRE.2": "no R1 template reads a thinking variable; the prompt always opens <think>\\n, so "
                         "reasoning cannot be switched off through the template"}),
    SeedRow("nemotron_v3 (Nemotron 3 Nano)", "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",
            pre2=(("enable_thinking", False), ("force_nonempty_content", True)), pre6=True, disagree={
                "PRE.2": "the template reads enable_thinking only; force_nonempty_content is a vLLM-side "
                         "request option this template does not read"}),
    SeedRow("nemotron_nano (Nano v2)", "NVIDIA-Nemotron-Nano-v2", pre2=(("enable_thinking", False),), pre6=True,
            disagree={"PRE.2": "Nano v2 reads no kwargs: thinking is switched by /think and /no_think in the "
                               "system message, and the prompt always opens <think>",
                      "PRE.6": "no kwarg switches reasoning off, so there is nothing to strip after"}),
    SeedRow("nemotron_deci (Super 49B v1.5)", "nvidia-Llama-3_3-Nemotron-Super-49B-v1_5",
            pre2=(("enable_thinking", False),), disagree={
                "PRE.2": "the template reads no thinking variable (/no_think in the system message)"}),
    SeedRow("llama3_json", "meta-llama-Llama-3.1-8B-Instruct", pre1=YES, pre1_hedged=True, disagree={
        "PRE.1": "with custom tools Llama 3.1 writes bare JSON; <|python_tag|> appears only for builtin_tools "
                 "and is not a marker the parser needs, and stripping it leaves the JSON call intact"}),
    SeedRow("hermes", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", pre1=NO),
    SeedRow("qwen3_coder", "Qwen3-Coder", pre1=NO),
    SeedRow("pythonic", "vllm-tool_chat_template_llama3.2_pythonic", pre1=NO),
    SeedRow("mistral", "mistralai-Mistral-Nemo-Instruct-2407", pre1=NO, disagree={
        "PRE.1": "[TOOL_CALLS] is a control token in Mistral tokenizers (v3+), and vLLM's Mistral tool parser "
                 "sets skip_special_tokens=False for it; without a tokenizer the heuristic says False"}),
    SeedRow("phi4", "microsoft-Phi-4-mini-instruct", pre1=NO),
    SeedRow("minimax_m2 / minimax_append_think", "MiniMax-M2", pre1=NO, pre4_reasoning_off=True, disagree={
        "PRE.4": "the MiniMax-M2 prompt opens <think>\\n, so under a forced call the model is inside reasoning: "
                 "autoparser keeps the reasoning parser and lets the grammar close the block before the call "
                 "(reasoning_before_forced_call='required') instead of turning reasoning parsing off"}),
    SeedRow("glm47", "GLM-4.7-Flash", pre1=NO),
    SeedRow("jamba", "hfjs-ai21labs-AI21-Jamba-Large-1.6", pre1=NO),
    SeedRow("qwen", "Qwen-Qwen3-0.6B", pre1=NO, pre1_parts=("reasoning",)),
]


def _checks() -> list[Any]:
    out = []
    for seed in SEED_000:
        for pre, stated in (("PRE.1", seed.pre1 is not None), ("PRE.2", seed.pre2 is not None),
                            ("PRE.3", seed.pre3_after_tool_on is not None), ("PRE.4", seed.pre4_reasoning_off),
                            ("PRE.6", seed.pre6)):
            if not stated:
                continue
            marks = [pytest.mark.xfail(reason=seed.disagree[pre], strict=True)] if pre in seed.disagree else []
            out.append(pytest.param(seed, pre, id=f"{seed.parser}-{pre}", marks=marks))
    return out


@corpus
@needs_shared
@pytest.mark.parametrize("seed, pre", _checks())
def test_seed_000_truth_table(seed: SeedRow, pre: str) -> None:
    tmpl = shared(seed.template)
    row = decide(tmpl)
    if pre == "PRE.1":
        parts = dict(row.special_by_part)
        got = all(parts.get(p, True) for p in seed.pre1_parts) if seed.pre1_parts \
            else row.skip_special_tokens_applied
        assert got is seed.pre1, f"{seed.template}: skip_special_tokens={got}, preserved={row.preserved_tokens}"
    elif pre == "PRE.2":
        assert seed.pre2 is not None
        missing = [kv for kv in seed.pre2 if kv not in row.reasoning_off_kwargs]
        assert not missing, f"{seed.template}: derived {row.reasoning_off_kwargs}, missing {missing}"
    elif pre == "PRE.3":
        after_tool_on = row.reseeds_reasoning_after_tool is True
        assert after_tool_on is seed.pre3_after_tool_on, f"{seed.template}: {row.reseeds_reasoning_after_tool}"
    elif pre == "PRE.4":
        forced = tmpl.apply(USER, tools=TOOLS, tool_choice="required").decisions
        assert forced.reasoning_before_forced_call == "none", forced.reasoning_before_forced_call
    elif pre == "PRE.6":
        off = dict(row.reasoning_off_kwargs)
        assert off, f"{seed.template}: no kwargs switch reasoning off"
        req = tmpl.apply(USER, chat_template_kwargs=off)
        assert req.decisions.strip_leading_reasoning_start is True
        forced = tmpl.apply(USER, tools=TOOLS, tool_choice="required", chat_template_kwargs=off)
        assert forced.decisions.strip_leading_reasoning_start is False


@corpus
@needs_shared
def test_seed_000_every_family_has_a_template() -> None:
    missing = [s.template for s in SEED_000 if not (SHARED / f"{s.template}.jinja").is_file()]
    assert not missing
