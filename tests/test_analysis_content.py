"""Content analysis (analysis/content.py): answer wrappers, end-of-turn markers, the assistant header.

Expectations come from templates/README.md. Markers are compared with surrounding
whitespace stripped.
"""

from __future__ import annotations

import pytest
import synth
import turns

SHARED = turns.shared_dir()
USER = [{"role": "user", "content": "What is the weather in Paris?"}]


norm = turns.norm_marker
template = turns.load
fixture = turns.fixture_analysis
real = turns.real_analysis


# fixture -> (content start, content end): only these wrap the answer
WRAPPED = {
    "content_wrapped": ("<response>", "</response>"),
    "command_r_action": ("<|START_RESPONSE|>", "<|END_RESPONSE|>"),
    "answer_wraps_calls": ("<answer>", "</answer>"),
    "react_labels": ("Answer:", ""),          # a label line: the turn's end does not pair with it
    "label_pair_prefill": ("Answer:", ""),    # the last reply always has the block with thinking on
}
# fixture -> end-of-turn markers written after the answer (README's Output column)
END_OF_TURN: dict[str, tuple[str, ...]] = {
    "chatml_plain": ("<|im_end|>",),
    "hermes_json": ("<|im_end|>",),
    "qwen3_think_json": ("<|im_end|>",),
    "forced_open_think": ("<|im_end|>",),
    "xml_params": ("<|im_end|>",),
    "call_id_tagged": ("<|im_end|>",),
    "arg_key_value": (),                      # no end marker: the next role tag follows
    "mistral_array": ("</s>",),               # eos
    "mistral_args": ("</s>",),
    "llama3_json": ("<|eot_id|>",),
    "deepseek_unicode": ("<｜end▁of▁sentence｜>",),
    "command_r_action": ("<|END_OF_TURN_TOKEN|>",),
    "kimi_sections": ("<|im_end|>",),
    "name_as_key": ("<|assistant_end|>",),
    "python_dict_args": ("<seed:eos>",),
    "granite_list": ("<|end_of_text|>",),
    "content_wrapped": ("<|end_of_text|>",),
    "delimiter_reasoning": ("<|end|>",),
    "gemma_plain": ("<end_of_turn>",),
    "channels": ("<|return|>",),
    "pythonic_bare": ("<|end|>",),
    "minimax_invoke": ("[e~[",),              # the template's own text, not a <...> shape
    # fixtures in formats the corpus does not contain: markers that are only the template's text
    "react_labels": ("<|im_end|>",),
    "symbol_calls": ("«end»",),
    "at_call_lines": ("<|end|>",),
    "markdown_tool_sections": ("<|eot|>",),
    "fence_info_calls": ("<|/turn>",),
    "indexed_calls": ("<|im_end|>",),
    "answer_wraps_calls": ("<end_of_turn>",),
    "reasoning_after_calls": ("<|end|>",),
    "self_closing_call": ("<|im_end|>",),
    "dotted_names": ("[[/]]",),
    "tag_is_name": ("<|im_end|>",),
    "action_json_fence": ("<|end|>",),
    "json_turn": ("<|im_end|>",),             # after the turn's JSON object
    "yaml_args": ("<|end|>",),
    "kwargs_pairs": ("<|/turn|>",),
    "attr_json": ("<|end|>",),
    "label_blank_line": ("<|im_end|>",),
    "label_pair_prefill": ("<|im_end|>",),
    "double_angle_think": ("<|im_end|>",),
    "colon_fence_think": ("<|im_end|>",),
    "edn_vector": ("<end_of_turn>",),
    "hcl_blocks": ("<|end|>",),
    "ini_sections": ("<|/assistant|>",),
    "query_paths": ("<|/assistant|>",),
    "query_string_calls": ("<|end|>",),
    "csv_rows": ("### end",),
    "yaml_block_args": (),
    "call_rows": ("[[/assistant]]",),
    "jsonrpc_batch": ("<end_of_turn>",),
    "lua_call_sugar": ("<|end|>",),
    "nix_attrs": ("</turn>",),
    "xml_attr_args": ("<|im_end|>",),
    "xmlrpc_calls": ("[[/assistant]]",),
    "xml_child_args": ("[/assistant]",),
    "name_after_args": ("[/]",),
    "quoted_params": ("<|im_end|>",),
    "asciidoc_blocks": ("<|end|>",),
}
# fixture -> the header that opens an assistant turn ("" when the generation prompt is empty)
HEADER = {
    "chatml_plain": "<|im_start|>assistant",
    "qwen3_think_json": "<|im_start|>assistant",
    "forced_open_think": "<|im_start|>assistant",   # without the prefilled <think>
    "arg_key_value": "<|assistant|>",
    "mistral_array": "",
    "mistral_args": "",
    "llama3_json": "<|start_header_id|>assistant<|end_header_id|>",
    "deepseek_unicode": "<｜Assistant｜>",
    "command_r_action": "<|START_OF_TURN_TOKEN|><|CHATBOT_TOKEN|>",
    "kimi_sections": "<|im_assistant|>assistant<|im_middle|>",
    "name_as_key": "<|assistant_start|>",
    "gemma_plain": "<start_of_turn>model",
    "channels": "<|start|>assistant",
    "pythonic_bare": "<|role|>assistant",
    "minimax_invoke": "]~b]ai",
    "react_labels": "<|im_start|>assistant",
    "symbol_calls": "«assistant»",
    "at_call_lines": "<|assistant|>",
    "markdown_tool_sections": "### Assistant",
    "fence_info_calls": "<|turn>assistant",
    "indexed_calls": "<|im_start|>assistant",
    "answer_wraps_calls": "<start_of_turn>assistant",
    "reasoning_after_calls": "<|assistant|>",
    "self_closing_call": "<|im_start|>assistant",
    "dotted_names": "[[assistant]]",
    "tag_is_name": "<|im_start|>assistant",
    "action_json_fence": "<|assistant|>",
    "json_turn": "<|im_start|>assistant",
    "yaml_args": "<|start|>assistant",
    "kwargs_pairs": "<|turn|>assistant",
    "attr_json": "<|assistant|>",
    "label_blank_line": "<|im_start|>assistant",
    "label_pair_prefill": "<|im_start|>assistant",
    "double_angle_think": "<|im_start|>assistant",
    "colon_fence_think": "<|im_start|>assistant",
    "edn_vector": "<start_of_turn>model",
    "hcl_blocks": "<|assistant|>",
    "ini_sections": "<|assistant|>",
    "query_paths": "<|assistant|>",
    "query_string_calls": "<|assistant|>",
    "csv_rows": "### assistant",
    "yaml_block_args": "",
    "call_rows": "[[assistant]]",
    "jsonrpc_batch": "<start_of_turn>assistant",
    "lua_call_sugar": "<|start|>assistant",
    "nix_attrs": '<turn role="assistant">',
    "xml_attr_args": "<|im_start|>assistant",
    "xmlrpc_calls": "[[assistant]]",
    "name_after_args": "[assistant]",
    "quoted_params": "<|im_start|>assistant",
    "asciidoc_blocks": "",   # "== assistant": an AsciiDoc section title, prose to the analysis
    "xml_child_args": "[assistant]",
}


# synthesized fixtures: what their axes decide (tests/synth.py)
SYNTH = {p.stem: c for p in turns.fixture_templates()
         if (c := synth.combo_of_fixture(p.read_text(encoding="utf-8"))) is not None}
for _stem, _combo in SYNTH.items():
    END_OF_TURN[_stem] = synth.expected_end_of_turn(_combo)
    HEADER[_stem] = synth.expected_header(_combo)


def test_every_fixture_has_an_expectation() -> None:
    assert {p.stem for p in turns.fixture_templates()} == set(END_OF_TURN)


@pytest.mark.parametrize("name", sorted(END_OF_TURN))
def test_fixture_content_wrapper(name: str) -> None:
    c = fixture(name).content
    if name == "channels":   # the final channel's header opens the answer; <|return|> ends the turn
        assert (norm(c.start), norm(c.end)) == ("<|channel|>final<|message|>", "")
    else:
        assert (norm(c.start), norm(c.end)) == WRAPPED.get(name, ("", ""))


@pytest.mark.parametrize("name", sorted(END_OF_TURN))
def test_fixture_end_of_turn(name: str) -> None:
    assert tuple(norm(m) for m in fixture(name).end_of_turn) == END_OF_TURN[name]


@pytest.mark.parametrize("name", sorted(HEADER))
def test_fixture_assistant_header(name: str) -> None:
    a = fixture(name)
    assert norm(a.assistant_header) == HEADER[name]
    assert a.generation_prompt.strip().startswith(HEADER[name])


def test_content_wrapped_wraps_only_the_answer() -> None:
    """The wrapper is what encloses the answer text in a rendered plain turn."""
    t = template(turns.FIXTURES / "content_wrapped.jinja")
    c = t.analysis.content
    full = t.render([*USER, {"role": "assistant", "content": "ANSWER"}])
    assert c.start.strip() + "ANSWER" + c.end.strip() in full


def test_system_role_capability() -> None:
    """gemma_plain raises on a system message; the ChatML fixture renders it."""
    assert not fixture("gemma_plain").capabilities.system_role
    assert fixture("chatml_plain").capabilities.system_role


@pytest.mark.parametrize("name", ["mistral_array", "mistral_args"])
def test_empty_generation_prompt(name: str) -> None:
    """README: the Mistral fixtures have no assistant header at all."""
    assert fixture(name).generation_prompt == ""


# ------------------------------------------------------------------ real templates
def test_real_qwen3() -> None:
    a = real("Qwen-Qwen3-0.6B")
    assert (a.content.start, a.content.end) == ("", "")
    assert a.end_of_turn == ("<|im_end|>",)
    assert norm(a.assistant_header) == "<|im_start|>assistant"


def test_real_qwen3_coder() -> None:
    assert real("Qwen3-Coder").end_of_turn == ("<|im_end|>",)


def test_real_glm_4_6() -> None:
    a = real("GLM-4.6")
    assert a.end_of_turn == ()
    assert norm(a.assistant_header) == "<|assistant|>"


def test_real_hermes_2_pro() -> None:
    assert real("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use").end_of_turn == ("<|im_end|>",)


def test_real_mistral_nemo() -> None:
    a = real("mistralai-Mistral-Nemo-Instruct-2407")
    assert a.end_of_turn == ("</s>",)
    assert a.generation_prompt == ""


def test_real_llama_3_1() -> None:
    a = real("meta-llama-Llama-3.1-8B-Instruct")
    assert a.end_of_turn == ("<|eot_id|>",)
    assert norm(a.assistant_header) == "<|start_header_id|>assistant<|end_header_id|>"


def test_real_deepseek_v3_1() -> None:
    a = real("deepseek-ai-DeepSeek-V3.1")
    assert a.end_of_turn == ("<｜end▁of▁sentence｜>",)
    assert norm(a.assistant_header) == "<｜Assistant｜>"


def test_real_minimax_m2() -> None:
    """Its role header and turn end are the template's own text, not a <...> shape."""
    a = real("MiniMax-M2")
    assert tuple(norm(m) for m in a.end_of_turn) == ("[e~[",)
    assert norm(a.assistant_header) == "]~b]ai"


def test_real_kimi_k2_instruct() -> None:
    a = real("Kimi-K2-Instruct")
    assert a.end_of_turn == ("<|im_end|>",)
    assert norm(a.assistant_header) == "<|im_assistant|>assistant<|im_middle|>"


def test_real_gemma_4() -> None:
    a = real("google-gemma-4-31B-it")
    assert a.end_of_turn == ("<turn|>",)
    assert norm(a.assistant_header) == "<|turn>model"


def test_real_lfm2_5_8b() -> None:
    assert real("LFM2.5-8B-A1B").end_of_turn == ("<|im_end|>",)


def test_real_command_r7b() -> None:
    """Command-R7b wraps answers; the template re-opens a chatbot turn after every turn it renders."""
    a = real("CohereForAI-c4ai-command-r7b-12-2024-tool_use")
    assert (norm(a.content.start), norm(a.content.end)) == ("<|START_RESPONSE|>", "<|END_RESPONSE|>")
    assert a.end_of_turn[0] == "<|END_OF_TURN_TOKEN|>"
