"""``ChatTemplate.parser_for``: parsing output whose prompt a server rendered itself, and the
server-neutral helpers of ``autoparser.integrations.common`` (no server needed)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autoparser import ChatTemplate, TemplateError
from autoparser.integrations import common

ROOT = Path(__file__).resolve().parents[1]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"location": {"type": "string"}}, "required": ["location"]}}}]
OUTPUT = ('<think>\nLet me check.\n</think>\n\nSure.\n<tool_call>\n{"name": "get_weather", '
          '"arguments": {"location": "Paris"}}\n</tool_call>')
HI = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def qwen() -> ChatTemplate:
    return ChatTemplate.from_file(ROOT / "templates" / "qwen3_think_json.jinja", bos_token="<s>", eos_token="</s>")


def test_parser_for_equals_apply(qwen: ChatTemplate) -> None:
    applied = qwen.apply(HI, tools=TOOLS)
    req = qwen.parser_for(applied.prompt, tools=TOOLS)
    assert req.prompt == applied.prompt
    want = applied.parse(OUTPUT).to_dict()
    got = req.parse(OUTPUT).to_dict()
    for c in (want.get("tool_calls") or []) + (got.get("tool_calls") or []):
        c["id"] = ""
    assert got == want
    assert got["reasoning_content"] == "Let me check." and got["tool_calls"][0]["function"]["name"] == "get_weather"


def test_parser_for_does_not_render(qwen: ChatTemplate) -> None:
    """The prompt is taken as given: any text works, nothing is rendered again."""
    req = qwen.parser_for("a prompt some server wrote", tools=TOOLS)
    assert req.prompt == "a prompt some server wrote"
    assert req.messages == []
    assert req.parse(OUTPUT).tool_calls[0].arguments == '{"location": "Paris"}'
    assert req.gbnf and req.stop and req.parse_strict(OUTPUT).tool_calls   # grammar and decisions work too


def test_prompt_that_switched_thinking_off(qwen: ChatTemplate) -> None:
    off = qwen.apply(HI, chat_template_kwargs={"enable_thinking": False}).prompt
    msg = qwen.parser_for(off).parse("<think>\n\n</think>\n\nHello.")
    assert (msg.reasoning_content, msg.content) == (None, "Hello.")


def test_start_reasoning_and_content(qwen: ChatTemplate) -> None:
    msg = qwen.parser_for("", start="reasoning").parse("still thinking\n</think>\n\nDone.")
    assert (msg.reasoning_content, msg.content) == ("still thinking", "Done.")
    msg = qwen.parser_for("", start="content", tools=TOOLS).parse(
        'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>')
    assert msg.content == "Sure." and msg.tool_calls[0].name == "get_weather"
    # reasoning_format="none" with a block the prompt opened: the opener goes back in front
    msg = qwen.parser_for("", start="reasoning", reasoning_format="none").parse("hmm\n</think>\n\nOK")
    assert msg.reasoning_content is None and msg.content is not None and msg.content.startswith("<think>")


def test_stream_from_parser_for(qwen: ChatTemplate) -> None:
    req = qwen.parser_for(qwen.apply(HI, tools=TOOLS).prompt, tools=TOOLS)
    s = req.stream()
    deltas = [d for i in range(0, len(OUTPUT), 3) for d in s.feed(OUTPUT[i:i + 3])] + s.finish()
    assert any("reasoning_content" in d for d in deltas) and s.finish_reason == "tool_calls"


# ------------------------------------------------------------------ integrations.common
def test_reasoning_split() -> None:
    m = common.ReasoningMarkers("<think>", "</think>")
    raw = "<think>\nabc\n</think>\n\nHi </think> there"
    assert raw[common.reasoning_split(raw, "abc", m):] == "\n\nHi </think> there"
    assert raw[common.reasoning_split(raw, None, m):] == raw          # text before the end marker: no block
    empty = "<think>\n\n</think>\n\nHi"
    assert empty[common.reasoning_split(empty, "", m):] == "\n\nHi"
    opened = "abc</think>rest"                                        # the prompt opened the block
    assert opened[common.reasoning_split(opened, "abc", m):] == "rest"
    assert common.reasoning_split("plain", None, common.ReasoningMarkers()) == 0


def test_token_id_helpers() -> None:
    assert common.ends_within([1, 2, 3, 4], 1, [3, 4])
    assert common.ends_within([1, 2, 3, 4], 2, [2, 3])
    assert not common.ends_within([1, 2, 3, 4], 1, [2, 3])
    assert not common.ends_within([1, 2], 1, [])
    assert common.find_end([5, 1, 2, 6, 1, 2, 7], [1, 2]) == 6
    assert common.find_end([5, 6], [1]) is None


class _Tok:
    def __init__(self, chat_template: object, name_or_path: str = "") -> None:
        self.chat_template = chat_template
        self.name_or_path = name_or_path
        self.bos_token, self.eos_token = "<s>", None

    def get_vocab(self) -> dict[str, int]:
        return {"<think>": 7, "a": 1, "b": 2}

    def encode(self, text: str, add_special_tokens: bool = False) -> list[int]:
        return [ord(c) for c in text]


def test_template_from_tokenizer(tmp_path: Path) -> None:
    src = (ROOT / "templates" / "qwen3_think_json.jinja").read_text(encoding="utf-8")
    a = common.template_from_tokenizer(_Tok(src))
    assert a is common.template_from_tokenizer(_Tok(src)) and a.renderer.bos_token == "<s>"
    named = _Tok({"default": "{{ 'd' }}", "tool_use": "{{ 't' }}"})
    assert common.tokenizer_template_source(named) == "{{ 'd' }}"
    assert common.tokenizer_template_source(named, tools=True) == "{{ 't' }}"
    (tmp_path / "chat_template.jinja").write_text("{{ 'file' }}", encoding="utf-8")
    assert common.tokenizer_template_source(_Tok(None, str(tmp_path))) == "{{ 'file' }}"
    with pytest.raises(TemplateError, match="chat template"):
        common.template_from_tokenizer(_Tok(None))
    assert common.marker_token_ids(_Tok(None), " <think>\n") == (7,)
    assert common.marker_token_ids(_Tok(None), "</x>") == tuple(ord(c) for c in "</x>")


def test_template_cache_is_bounded() -> None:
    first = common.cached_template("{{ 'first' }}")
    for i in range(common.CACHE_SIZE + 1):
        common.cached_template(f"{{{{ {i} }}}}")
    assert common.cached_template("{{ 'first' }}") is not first


def test_core_never_imports_vllm() -> None:
    """Only ``autoparser.integrations.vllm`` may import vLLM (checked in a fresh interpreter)."""
    import subprocess
    import sys

    code = ("import sys, autoparser, autoparser.cli, autoparser.integrations.common, "
            "autoparser.integrations.vllm_plugin; assert 'vllm' not in sys.modules, 'vllm imported'")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]


def test_gbnf_for_xgrammar() -> None:
    g = 'root ::= a b\na ::= | "x" | | [|] "<|im|>"\nb ::= ( "y" | ) c |\nc ::= "z" # a | comment\n'
    assert common.gbnf_for_xgrammar(g) == (
        'root ::= a b\na ::= "" | "x" | "" | [|] "<|im|>"\nb ::= ( "y" | "" ) c | ""\nc ::= "z" # a | comment\n')
    assert common.gbnf_for_xgrammar('r ::= "a" |\n  "b"\n') == 'r ::= "a" |\n  "b"\n'
    assert common.gbnf_for_xgrammar('r ::= "a\\"|" | "b"') == 'r ::= "a\\"|" | "b"'
