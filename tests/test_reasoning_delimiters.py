"""Reasoning delimiters read off the renders, whatever they look like (issue 21, point 5).

Small ChatML templates, written here as strings, wrap ``reasoning_content`` in one delimiter kind
each: doubled angle brackets, a ``:::`` fence whose closer is a prefix of its opener, a barred
pair, ``[[think]]``, a ``Thought: `` label ended by a blank line or by a line break, a
``Reasoning:`` / ``Answer:`` label pair, words (``BEGIN REASONING``), symbols. Each kind comes in
three variants: the block only in history, a generation prompt that opens it, and an
``enable_thinking`` toggle whose off prompt holds an empty block. For each the analysis finds the
delimiters as rendered, and every scenario the template renders (tests/turns.py, as the
conformance checker cuts it out) parses back, streams to the same message in any chunking, reads
the same with the strict PEG, and (tool calls) is accepted by the request's GBNF.

Then what a label means at run time: a plain-text delimiter (a label) is a marker only where the
output or a line begins, so prose with ``Thought:`` mid-sentence is prose; a closer of whitespace
alone ends the block at the first blank line (the template renders a blank line inside reasoning
as it renders the closer, so the first one is taken).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import turns
from gbnf_check import accepts

from autoparser import ChatTemplate

# kind -> (opener as rendered, closer as rendered, opener and closer as compared: stripped)
KINDS: dict[str, tuple[str, str, str, str]] = {
    "double_angle": ("<<thinking>>\n", "\n<</thinking>>\n\n", "<<thinking>>", "<</thinking>>"),
    "colon_fence": (":::thinking\n", "\n:::\n\n", ":::thinking", ":::"),
    "barred_slash": ("<|reasoning|>", "<|/reasoning|>", "<|reasoning|>", "<|/reasoning|>"),
    "double_bracket": ("[[think]]", "[[/think]]", "[[think]]", "[[/think]]"),
    "label_blank_line": ("Thought: ", "\n\n", "Thought:", ""),
    "label_line": ("Thought: ", "\n", "Thought:", ""),
    "label_pair": ("Reasoning:\n", "\nAnswer:\n", "Reasoning:", "Answer:"),
    "words": ("BEGIN REASONING\n", "\nEND REASONING\n", "BEGIN REASONING", "END REASONING"),
    "symbols": ("💭 ", "\n\n", "💭", ""),
}
VARIANTS = ("history", "prompt", "toggle")


def source(kind: str, variant: str) -> str:
    """A ChatML template with Hermes-style calls whose reasoning is wrapped in ``kind``'s delimiters.

    ``prompt``: the generation prompt opens the block, and the last reply after the last user turn
    always has it (empty without reasoning), so the prompt stays a prefix of the rendered turn;
    ``toggle``: ``enable_thinking=false`` puts an empty block in the generation prompt and the last
    reply always has the block."""
    opener, closer = (json.dumps(s, ensure_ascii=False) for s in KINDS[kind][:2])
    always = "or (loop.last and loop.index0 > ns.last_user)" if variant != "history" else ""
    gp = {"history": "",
          "prompt": "{{- " + opener + " -}}",
          "toggle": "{%- if enable_thinking is defined and not enable_thinking -%}{{- " + opener + " ~ " + closer
                    + " -}}{%- endif -%}"}[variant]
    return (
        "{%- set ns = namespace(last_user=-1) -%}"
        "{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}"
        "{%- endfor -%}"
        "{%- if tools -%}{{- '<|im_start|>system\\nTools: ' ~ (tools | tojson) ~ '<|im_end|>\\n' -}}{%- endif -%}"
        "{%- for message in messages -%}"
        "{{- '<|im_start|>' ~ message.role ~ '\\n' -}}"
        "{%- if message.role == 'assistant' -%}"
        "{%- if message.reasoning_content " + always + " -%}"
        "{{- " + opener + " ~ (message.reasoning_content or '') ~ " + closer + " -}}{%- endif -%}"
        "{{- message.content or '' -}}"
        "{%- for tc in message.tool_calls or [] -%}"
        "{%- if message.content or not loop.first -%}{{- '\\n' -}}{%- endif -%}"
        "{{- '<tool_call>\\n{\"name\": ' ~ (tc.function.name | tojson) ~ ', \"arguments\": ' ~ "
        "(tc.function.arguments if tc.function.arguments is string else tc.function.arguments | tojson) ~ "
        "'}\\n</tool_call>' -}}"
        "{%- endfor -%}"
        "{%- else -%}{{- message.content -}}{%- endif -%}"
        "{{- '<|im_end|>\\n' -}}"
        "{%- endfor -%}"
        "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}" + gp + "{%- endif -%}")


@functools.cache
def template_path(kind: str, variant: str, folder: Path) -> Path:
    path = folder / f"{kind}-{variant}.jinja"
    path.write_text(source(kind, variant), encoding="utf-8")
    return path


@functools.cache
def load(path: Path) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("delimiters")


COMBOS = [(k, v) for k in KINDS for v in VARIANTS]


# ------------------------------------------------------------------ analysis
@pytest.mark.parametrize(("kind", "variant"), COMBOS)
def test_delimiters_found(kind: str, variant: str, folder: Path) -> None:
    """The opener and closer are the text the template writes around the reasoning, as rendered."""
    a = load(template_path(kind, variant, folder)).analysis
    _, closer, start, end = KINDS[kind]
    r = a.reasoning
    assert (r.mode, turns.norm_marker(r.start), turns.norm_marker(r.end)) == ("tagged", start, end)
    if not end:   # a closer of whitespace alone is kept as rendered
        assert r.end == closer
    assert r.prefilled == (variant == "prompt")
    assert r.off_kwargs == ({"enable_thinking": False} if variant == "toggle" else {})
    assert a.verification is not None and a.verification.ok, a.verification.failed


# ------------------------------------------------------------------ round trips
def _cases(kind: str, variant: str, folder: Path) -> list[turns.Case]:
    return turns.build_cases(template_path(kind, variant, folder))


def _streamed(req: Any, text: str, size: int) -> dict[str, Any]:
    s = req.stream()
    for i in range(0, len(text), size):
        s.feed(text[i:i + size])
    s.finish()
    return s.message.to_dict()


def _normal(msg: dict[str, Any]) -> dict[str, Any]:
    return {"content": turns.norm(msg["content"]), "reasoning": turns.norm(msg["reasoning_content"]),
            "calls": [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg.get("tool_calls") or []]}


@pytest.mark.parametrize(("kind", "variant"), COMBOS)
def test_round_trip(kind: str, variant: str, folder: Path) -> None:
    """Every scenario parses back whole, streamed in any chunking, strictly, and under the GBNF."""
    cases = _cases(kind, variant, folder)
    names = {c.scenario for c in cases}
    assert {"content", "reasoning", "tool", "parallel", "reasoning_tool"} <= names
    tmpl = load(template_path(kind, variant, folder))
    for case in cases:
        req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
        got = req.parse(case.text).to_dict()
        why = turns.compare(case.expected, got, case.text)
        assert why is None, f"{case.scenario}: {why}\n  text: {case.text!r}\n  got:  {got}"
        for size in (1, 2, 3, 7):
            assert _streamed(req, case.text, size) == got, f"{case.scenario}: stream in {size}s != parse"
        assert _normal(req.parse_strict(case.text).to_dict()) == _normal(got), case.scenario
        if case.expected.get("tool_calls"):
            forced = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None,
                                tool_choice="required")
            assert forced.gbnf is not None
            if (case.expected.get("content") or "").strip():
                # required means the call comes first (issue 23): text before it is refused
                assert not accepts(forced.gbnf, case.text), f"{case.scenario}: gbnf accepts text before a forced call"
            else:
                assert accepts(forced.gbnf, case.text), f"{case.scenario}: gbnf rejects"


# ------------------------------------------------------------------ what a label means
USER = [{"role": "user", "content": "Hi"}]


def _request(kind: str, variant: str, folder: Path, **kwargs: Any) -> Any:
    return load(template_path(kind, variant, folder)).apply(USER, **kwargs)


def _both(req: Any, text: str) -> dict[str, Any]:
    """The parsed message; the stream (one character at a time) must give the same."""
    got = req.parse(text).to_dict()
    assert _streamed(req, text, 1) == got
    return {"reasoning": got["reasoning_content"], "content": got["content"]}


@pytest.mark.parametrize("kind", ["label_blank_line", "label_pair", "label_line"])
def test_label_mid_sentence_is_prose(kind: str, folder: Path) -> None:
    """A label is a marker only where the output or a line begins."""
    opener = KINDS[kind][2]
    text = f"I had a {opener} nothing more. And a second {opener} too."
    assert _both(_request(kind, "history", folder), text) == {"reasoning": None, "content": text}


def test_label_at_the_start_opens_reasoning(folder: Path) -> None:
    req = _request("label_blank_line", "history", folder)
    assert _both(req, "Thought: first line\nsecond line\n\nThe answer.") == \
        {"reasoning": "first line\nsecond line", "content": "The answer."}
    # a little indentation is still the start of the line
    assert _both(req, "  Thought: x\n\nA.") == {"reasoning": "x", "content": "A."}


def test_blank_line_closer_ends_at_the_first_blank_line(folder: Path) -> None:
    """The first blank line (spaces in it or not) ends the block; later ones are the answer's."""
    req = _request("label_blank_line", "history", folder)
    assert _both(req, "Thought: a\nb\n  \nc\n\nd") == {"reasoning": "a\nb", "content": "c\n\nd"}
    # the closer split across chunks
    s = req.stream()
    deltas = s.feed("Thought: a\n") + s.feed("\nc") + s.finish()
    assert s.message.reasoning_content == "a" and s.message.content == "c"
    assert not any(d.get("reasoning_content", "").strip() == "c" for d in deltas)


def test_blank_line_is_no_stray_closer(folder: Path) -> None:
    """With the block opened by the prompt and closed, or never opened, a blank line in the answer stays."""
    req = _request("label_blank_line", "prompt", folder)
    assert _both(req, "r\n\nPara one.\n\nPara two.") == {"reasoning": "r", "content": "Para one.\n\nPara two."}
    req = _request("label_blank_line", "history", folder)
    assert _both(req, "Para one.\n\nPara two.") == {"reasoning": None, "content": "Para one.\n\nPara two."}


def test_line_break_closer_keeps_reasoning_to_one_line(folder: Path) -> None:
    req = _request("label_line", "history", folder)
    assert _both(req, "Thought: one line\nThe answer.\nMore.") == \
        {"reasoning": "one line", "content": "The answer.\nMore."}


def test_label_closer_only_at_a_line_start(folder: Path) -> None:
    """``Answer:`` closes the block on its own line, not inside a sentence of the reasoning."""
    req = _request("label_pair", "prompt", folder)
    assert _both(req, "The Answer: is 4, I think.\nAnswer:\n4") == \
        {"reasoning": "The Answer: is 4, I think.", "content": "4"}


def test_answer_label_only_at_a_line_start() -> None:
    """The answer's own label (``Answer:``, the content wrapper of a label pair) is dropped only where a
    line begins: mid-sentence it is prose."""
    req = turns.fixture_template("label_pair_prefill").apply(USER, chat_template_kwargs={"enable_thinking": False})
    assert _both(req, "The Answer: is 42.") == {"reasoning": None, "content": "The Answer: is 42."}
    assert _both(req, "Answer:\nThe Answer: is 42.") == {"reasoning": None, "content": "The Answer: is 42."}


def test_closer_that_prefixes_its_opener(folder: Path) -> None:
    """``:::`` closes ``:::thinking``: at the start of the output the longer opener wins."""
    req = _request("colon_fence", "history", folder)
    assert _both(req, ":::thinking\nhmm\n:::\n\nDone.") == {"reasoning": "hmm", "content": "Done."}


@pytest.mark.parametrize("kind", ["label_blank_line", "double_angle", "label_pair"])
def test_toggle_off(kind: str, folder: Path) -> None:
    """Thinking off: the prompt closed an empty block, so the output is the answer; a block the model
    opens anyway has its delimiters dropped and its text kept as the answer (PRE.6)."""
    req = _request(kind, "toggle", folder, chat_template_kwargs={"enable_thinking": False})
    assert req.plan.reasoning.off and not req.plan.reasoning.open_at_start
    assert _both(req, "Just the answer.") == {"reasoning": None, "content": "Just the answer."}
    opener, closer = KINDS[kind][:2]
    got = _both(req, opener + "stray" + closer + "Answer.")
    assert got["reasoning"] is None and "stray" in got["content"] and "Answer." in got["content"]


@pytest.mark.parametrize("kind", ["label_blank_line", "double_angle", "label_pair", "colon_fence"])
def test_prompt_opened_block(kind: str, folder: Path) -> None:
    """The prompt opened the block: the output starts inside it; an opener written again is dropped."""
    req = _request(kind, "prompt", folder)
    assert req.plan.reasoning.open_at_start
    closer = KINDS[kind][1]
    assert _both(req, "inside" + closer + "After.") == {"reasoning": "inside", "content": "After."}
    assert _both(req, KINDS[kind][0] + "inside" + closer + "After.") == {"reasoning": "inside", "content": "After."}


# the generation prompt opens the block and history drops the reasoning (cut at the closer the source names)
DROPPED = ("{%- for message in messages -%}{{- '<|im_start|>' ~ message.role ~ '\\n' -}}"
           "{%- if message.role == 'assistant' -%}{%- set c = message.content -%}"
           "{%- if '<</thinking>>' in c -%}{%- set c = c.split('<</thinking>>')[-1] -%}{%- endif -%}{{- c -}}"
           "{%- else -%}{{- message.content -}}{%- endif -%}{{- '<|im_end|>\\n' -}}{%- endfor -%}"
           "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n<<thinking>>\\n' -}}{%- endif -%}")


def test_prompt_opens_a_block_history_drops() -> None:
    """An opener no marker definition names, written only by the generation prompt: its closer is the
    one the source names (``<</thinking>>``)."""
    t = ChatTemplate.from_string(DROPPED, bos_token=turns.BOS, eos_token=turns.EOS)
    r = t.analysis.reasoning
    assert (r.mode, r.start, r.end, r.prefilled) == ("tagged", "<<thinking>>\n", "<</thinking>>", True)
    req = t.apply(USER)
    assert _both(req, "hmm\n<</thinking>>\n\nAnswer.") == {"reasoning": "hmm", "content": "Answer."}


def test_block_pattern() -> None:
    """The one definition of how a reasoning delimiter is matched (``markers.block_pattern``)."""
    import regex

    from autoparser import markers as mk

    def found(marker: str, opener: bool, text: str) -> list[str]:
        return [m.group() for m in regex.finditer(mk.block_pattern(marker, opener), text)]

    assert found("Thought: ", True, "Thought: a\nx Thought: b\n  Thought: c") == ["Thought:", "Thought:"]
    assert found("Thought: ", True, "[/X]Thought: a <b> Thought: b") == ["Thought:", "Thought:"]   # after a marker
    assert found("\nAnswer:\n", False, "the Answer: is\nAnswer:\n") == ["Answer:"]
    assert found(" Answer: ", False, "the Answer: is") == ["Answer:"]      # written mid-line: anywhere
    assert found("<think>", True, "a <think> b") == ["<think>"]            # token-shaped: anywhere
    assert found("\n\n", False, "a\nb\n \nc\n\n\nd") == ["\n \n", "\n\n"]
    assert found("\n", False, "a\nb") == ["\n"]
    assert mk.block_pattern("\n\n", opener=True) == "" and mk.block_pattern("  ", opener=False) == ""
