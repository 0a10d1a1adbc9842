"""Reasoning analysis (analysis/reasoning.py) on the fixtures and on real templates.

Expectations come from templates/README.md (what each family writes), never from the
analysis itself. Markers are compared with surrounding whitespace stripped (and runs of
inner whitespace collapsed), since the runtime treats whitespace around markers as optional.
"""

from __future__ import annotations

import pytest
import synth
import turns

SHARED = turns.shared_dir()
USER = [{"role": "user", "content": "What is the weather in Paris?"}]


norm = turns.norm_marker
template = turns.load
fixture = turns.fixture_template
real = turns.real_analysis


# fixture -> (mode, start, end, prefilled) as templates/README.md describes the output
REASONING: dict[str, tuple[str, str, str, bool]] = {
    "qwen3_think_json": ("tagged", "<think>", "</think>", False),
    "forced_open_think": ("tagged", "<think>", "</think>", True),
    "delimiter_reasoning": ("delimiter", "", "[BEGIN FINAL RESPONSE]", False),
    "arg_key_value": ("tagged", "<think>", "</think>", False),
    "call_id_tagged": ("tagged", "<reasoning>", "</reasoning>", False),
    "content_wrapped": ("tagged", "<think>", "</think>", False),
    "command_r_action": ("tagged", "<|START_THINKING|>", "<|END_THINKING|>", False),
    "deepseek_unicode": ("tagged", "<think>", "</think>", False),
    "kimi_sections": ("tagged", "<think>", "</think>", False),
    "minimax_invoke": ("tagged", "<think>", "</think>", False),
    "mistral_args": ("tagged", "[THINK]", "[/THINK]", False),
    "name_as_key": ("tagged", "<|inner_prefix|>", "<|inner_suffix|>", False),
    "python_dict_args": ("tagged", "<seed:think>", "</seed:think>", False),
    "react_labels": ("tagged", "Thought:", "Answer:", False),     # ended by the answer's label line
    "symbol_calls": ("tagged", "⟪think⟫", "⟪/think⟫", False),
    "at_call_lines": ("tagged", "<reasoning>", "</reasoning>", False),
    "markdown_tool_sections": ("tagged", "### Reasoning", "### Answer", False),
    "fence_info_calls": ("tagged", "<thought>", "</thought>", False),
    "indexed_calls": ("tagged", "<|begin_reasoning|>", "<|end_reasoning|>", False),
    "answer_wraps_calls": ("tagged", "<think>", "</think>", False),
    "reasoning_after_calls": ("tagged", "<rationale>", "</rationale>", False),   # written after the calls
    "self_closing_call": ("tagged", "<think>", "</think>", False),
    "dotted_names": ("tagged", "[[think]]", "[[/think]]", False),
    "tag_is_name": ("tagged", "<think>", "</think>", False),
    "action_json_fence": ("tagged", "<scratchpad>", "</scratchpad>", False),
    "yaml_args": ("tagged", "<reflect>", "</reflect>", False),
    "kwargs_pairs": ("tagged", "<scratchpad>", "</scratchpad>", False),
    "attr_json": ("tagged", "<thought>", "</thought>", False),
    # delimiters read off the renders (issue 21): a label ended by a blank line, a label pair the prompt
    # opens, doubled angle brackets, a fence whose closer is a prefix of its opener
    "label_blank_line": ("tagged", "Thought:", "", False),
    "label_pair_prefill": ("tagged", "Reasoning:", "Answer:", True),
    "double_angle_think": ("tagged", "<<thinking>>", "<</thinking>>", False),
    "colon_fence_think": ("tagged", ":::thinking", ":::", False),
    # issue 21's hand-written encodings (templates/README.md)
    "edn_vector": ("tagged", ":::thinking", ":::", False),
    "hcl_blocks": ("tagged", "<think>", "</think>", True),       # the prompt opens the block
    "ini_sections": ("tagged", "<!-- thinking:", "-->", False),
    "query_paths": ("tagged", "<think>", "</think>", False),
    "query_string_calls": ("tagged", "<<thinking>>", "<</thinking>>", False),
    "csv_rows": ("tagged", "[reasoning]", "[/reasoning]", False),
    "call_rows": ("tagged", "<think>", "</think>", False),
    "yaml_block_args": ("tagged", "<reflect>", "</reflect>", False),
    "jsonrpc_batch": ("tagged", "<|begin_of_thought|>", "<|end_of_thought|>", False),
    "lua_call_sugar": ("tagged", "<think>", "</think>", False),
    "xml_attr_args": ("tagged", "<scratch>", "</scratch>", False),
    "xmlrpc_calls": ("tagged", "[REASONING]", "[/REASONING]", False),
    "xml_child_args": ("tagged", "<reflect>", "</reflect>", False),
    "quoted_params": ("tagged", "<think>", "</think>", False),
    "asciidoc_blocks": ("tagged", "[thinking] ____", "____", False),   # an opener of two lines
}
NO_REASONING = ("chatml_plain", "hermes_json", "xml_params", "mistral_array", "llama3_json", "granite_list",
                "gemma_plain", "pythonic_bare", "nix_attrs", "name_after_args")
# fixture -> the key of the turn's JSON object that holds the reasoning (no marker frames it)
IN_ENVELOPE = {"json_turn": "thought"}
# fixture -> the kwargs that switch thinking off (README: "Toggle: enable_thinking=false ...")
TOGGLES = {"qwen3_think_json": {"enable_thinking": False}, "arg_key_value": {"enable_thinking": False},
           "label_pair_prefill": {"enable_thinking": False}, "double_angle_think": {"enable_thinking": False},
           "lua_call_sugar": {"enable_thinking": False}}


# synthesized fixtures: what their axes decide (tests/synth.py)
for _path in turns.fixture_templates():
    _combo = synth.combo_of_fixture(_path.read_text(encoding="utf-8"))
    if _combo is not None:
        _mode, _start, _end, _pre = synth.expected_reasoning(_combo)
        if _mode == "none":
            NO_REASONING = (*NO_REASONING, _path.stem)
        else:
            REASONING[_path.stem] = (_mode, _start, _end, _pre)


def test_every_fixture_has_an_expectation() -> None:
    """A new fixture must be added to this module's tables."""
    covered = set(REASONING) | set(NO_REASONING) | {"channels"} | set(IN_ENVELOPE)
    assert {p.stem for p in turns.fixture_templates()} == covered


@pytest.mark.parametrize("name", sorted(REASONING))
def test_fixture_reasoning_markers(name: str) -> None:
    mode, start, end, prefilled = REASONING[name]
    r = fixture(name).analysis.reasoning
    assert (r.mode, norm(r.start), norm(r.end), r.prefilled) == (mode, start, end, prefilled)
    assert fixture(name).analysis.capabilities.reasoning


@pytest.mark.parametrize("name", sorted(IN_ENVELOPE))
def test_fixture_reasoning_in_envelope(name: str) -> None:
    a = fixture(name).analysis
    assert a.envelope is not None and a.envelope.reasoning_key == IN_ENVELOPE[name]
    assert a.reasoning.mode == "none" and a.capabilities.reasoning


@pytest.mark.parametrize("name", NO_REASONING)
def test_fixture_without_reasoning(name: str) -> None:
    a = fixture(name).analysis
    assert a.reasoning.mode == "none"
    assert (a.reasoning.start, a.reasoning.end) == ("", "")
    assert not a.capabilities.reasoning
    assert not a.capabilities.thinking_toggle


@pytest.mark.parametrize("name", sorted(REASONING))
def test_fixture_toggle(name: str) -> None:
    """Only the fixtures whose generation prompt changes with enable_thinking have a toggle."""
    a = fixture(name).analysis
    off = TOGGLES.get(name, {})
    assert a.reasoning.off_kwargs == off
    assert a.capabilities.thinking_toggle == bool(off)
    if off:
        assert a.reasoning.on_kwargs == {k: not v for k, v in off.items()}


@pytest.mark.parametrize("name", sorted(set(TOGGLES) - {"label_pair_prefill"}))
def test_toggle_off_closes_an_empty_block(name: str) -> None:
    """With the off kwargs the rendered prompt ends with the analysed markers around nothing."""
    t, r = fixture(name), fixture(name).analysis.reasoning
    start, end = r.start.strip(), r.end.strip()
    off = t.render(USER, add_generation_prompt=True, **r.off_kwargs).split(USER[0]["content"])[-1]
    on = t.render(USER, add_generation_prompt=True, **r.on_kwargs).split(USER[0]["content"])[-1]
    i = off.rfind(start)
    assert i >= 0 and off[i + len(start):].strip() == end
    assert end not in on


def test_toggle_off_leaves_the_block_unopened() -> None:
    """label_pair_prefill: thinking on opens the block in the prompt, off leaves the prompt at the header."""
    t, r = fixture("label_pair_prefill"), fixture("label_pair_prefill").analysis.reasoning
    assert t.apply(USER, chat_template_kwargs=r.on_kwargs).prompt.endswith("<|im_start|>assistant\nReasoning:\n")
    assert t.apply(USER, chat_template_kwargs=r.off_kwargs).prompt.endswith("<|im_start|>assistant\n")


def test_qwen3_think_json_raw_markers() -> None:
    """The rendered markers keep their newlines: <think>⏎R⏎</think>⏎⏎C."""
    r = fixture("qwen3_think_json").analysis.reasoning
    assert (r.start, r.end) == ("<think>\n", "\n</think>\n\n")
    assert r.scope == "always"


def test_forced_open_think_prompt_opens_the_block() -> None:
    """The generation prompt ends with the opener the model continues from."""
    a = fixture("forced_open_think").analysis
    assert a.generation_prompt.rstrip().endswith(a.reasoning.start.strip())
    prompt = fixture("forced_open_think").apply(USER).prompt
    assert prompt.endswith("<|im_start|>assistant\n<think>\n")


def test_delimiter_reasoning_has_no_start() -> None:
    a = fixture("delimiter_reasoning").analysis
    assert a.reasoning.mode == "delimiter"
    assert a.reasoning.start == ""
    assert "[BEGIN FINAL RESPONSE]" in a.reasoning.end


def test_command_r_action_reasoning_scope() -> None:
    """The fixture renders reasoning in any turn (README), so the scope is not tools-only."""
    t = fixture("command_r_action")
    turn = {"role": "assistant", "content": "ANSWER", "reasoning_content": "THOUGHTS"}
    assert "<|START_THINKING|>THOUGHTS<|END_THINKING|>" in t.render([*USER, turn])
    assert t.analysis.reasoning.scope == "always"


def test_channels_reasoning_segment() -> None:
    """Harmony: <|channel|>analysis<|message|>R<|end|>, then the next segment's <|start|>assistant."""
    r = fixture("channels").analysis.reasoning
    assert r.mode == "tagged"
    assert norm(r.start) == "<|channel|>analysis<|message|>"
    assert norm(r.end).startswith("<|end|>")
    assert not r.prefilled and not r.off_kwargs


# ------------------------------------------------------------------ real templates
def test_real_qwen3() -> None:
    r = real("Qwen-Qwen3-0.6B").reasoning
    assert (r.mode, norm(r.start), norm(r.end), r.prefilled) == ("tagged", "<think>", "</think>", False)
    assert r.off_kwargs == {"enable_thinking": False}


def test_real_qwen3_coder() -> None:
    assert real("Qwen3-Coder").reasoning.mode == "none"


def test_real_glm_4_6() -> None:
    r = real("GLM-4.6").reasoning
    assert (r.mode, norm(r.start), norm(r.end)) == ("tagged", "<think>", "</think>")
    assert r.off_kwargs == {"enable_thinking": False}


def test_real_hermes_2_pro() -> None:
    assert real("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use").reasoning.mode == "none"


def test_real_mistral_nemo() -> None:
    assert real("mistralai-Mistral-Nemo-Instruct-2407").reasoning.mode == "none"


def test_real_llama_3_1() -> None:
    assert real("meta-llama-Llama-3.1-8B-Instruct").reasoning.mode == "none"


def test_real_deepseek_v3_1() -> None:
    """Thinking on: the generation prompt ends with <think>; thinking off: <think></think>."""
    r = real("deepseek-ai-DeepSeek-V3.1").reasoning
    assert (r.mode, norm(r.start), norm(r.end), r.prefilled) == ("tagged", "<think>", "</think>", True)
    assert r.off_kwargs == {"enable_thinking": False}


def test_real_minimax_m2() -> None:
    r = real("MiniMax-M2").reasoning
    assert (r.mode, norm(r.start), norm(r.end), r.prefilled) == ("tagged", "<think>", "</think>", True)


def test_real_kimi_k2_instruct() -> None:
    assert real("Kimi-K2-Instruct").reasoning.mode == "none"


def test_real_gemma_4() -> None:
    """Gemma 4 renders its thought channel only in turns with tool calls."""
    r = real("google-gemma-4-31B-it").reasoning
    assert (r.mode, norm(r.start), norm(r.end)) == ("tagged", "<|channel>thought", "<channel|>")
    assert r.scope == "tools_only"
    assert r.off_kwargs == {"enable_thinking": False}


def test_real_lfm2_5_8b() -> None:
    r = real("LFM2.5-8B-A1B").reasoning
    assert (r.mode, norm(r.start), norm(r.end)) == ("tagged", "<think>", "</think>")


def test_real_command_r7b() -> None:
    """Command-R7b writes <|START_THINKING|> only in tool-call turns."""
    r = real("CohereForAI-c4ai-command-r7b-12-2024-tool_use").reasoning
    assert (r.mode, norm(r.start), norm(r.end)) == ("tagged", "<|START_THINKING|>", "<|END_THINKING|>")
    assert r.scope == "tools_only"
