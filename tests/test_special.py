"""analysis/special.py: every special entry on the templates it names, and nowhere else.

LFM2 / LFM2.5 templates list tools under "List of tools:" but never render an assistant
tool call, so the analysis cannot see the format; the "lfm2-pythonic" entry supplies it.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
import turns

from autoparser import ChatTemplate
from autoparser.analysis.special import SPECIALS

SHARED = turns.shared_dir()
LFM2_PYTHONIC = ("LFM2-8B-A1B.jinja", "LFM2.5-Instruct.jinja")
# every special entry -> the corpus templates it is for (a new entry needs a line here and tests)
NAMED = {"lfm2-pythonic": LFM2_PYTHONIC,
         "llama3-python-tag": ("meta-llama-Llama-3.2-3B-Instruct.jinja", "meta-llama-Llama-3.1-8B-Instruct.jinja"),
         "llama4-python-block": ("vllm-tool_chat_template_llama4_pythonic.jinja",),
         "harmony": ("openai-gpt-oss-120b.jinja",),
         "xlam": ("vllm-tool_chat_template_xlam_llama.jinja", "vllm-tool_chat_template_xlam_qwen.jinja"),
         "hunyuan-a13b": ("vllm-tool_chat_template_hunyuan_a13b.jinja",)}
TEXT = '<|tool_call_start|>[get_time(city="Paris"), toggle(enabled=True)]<|tool_call_end|>'
TOOLS = [
    {"type": "function", "function": {"name": "get_time", "description": "Local time in a city.", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
    {"type": "function", "function": {"name": "toggle", "description": "Switch a feature.", "parameters": {
        "type": "object", "properties": {"enabled": {"type": "boolean"}}, "required": ["enabled"]}}},
]
USER = [{"role": "user", "content": "What time is it in Paris? Then turn it on."}]

# A ChatML template that lists tools but renders no call, without "List of tools:".
PLAIN = """{%- if tools -%}<|im_start|>system
Tools: {{ tools | tojson }}<|im_end|>
{% endif -%}{%- for m in messages -%}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor -%}{%- if add_generation_prompt -%}<|im_start|>assistant
{% endif -%}"""


@functools.cache
def template(path: Path) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def shared(name: str) -> ChatTemplate:
    if SHARED is None:
        pytest.skip("shared template corpus not found (set AUTOPARSER_SHARED)")
    path = SHARED / "templates" / name
    if not path.is_file():
        pytest.skip(f"{name} not in the shared corpus")
    return template(path)


def test_every_special_is_named_here() -> None:
    assert {s.name for s in SPECIALS} == set(NAMED)
    for s in SPECIALS:
        assert s.why and ((s.tools is not None and s.tools.style != "none") or s.markers or s.reasoning_fields)


@pytest.mark.parametrize(("entry", "name"), [(e, n) for e, names in NAMED.items() if e != "lfm2-pythonic"
                                             for n in names])
def test_marker_entries_apply(entry: str, name: str) -> None:
    a = shared(name).analysis
    assert any(n.startswith(f"special: {entry}") for n in a.notes)
    marker_entry = next(s for s in SPECIALS if s.name == entry)
    assert set(marker_entry.markers) <= set(a.content.in_tool_turns)
    for field, value in marker_entry.tool_fields:
        assert getattr(a.tools, field) == value
    for field, value in marker_entry.reasoning_fields:
        assert getattr(a.reasoning, field) == value
    for field, value in marker_entry.content_fields:
        assert getattr(a.content, field) == value


def test_entries_that_apply_add_up() -> None:
    """xLAM's Llama template is also a Llama 3 template: both entries add their facts."""
    a = shared("vllm-tool_chat_template_xlam_llama.jinja").analysis
    assert [n.split(":")[1].strip() for n in a.notes if n.startswith("special:")] == ["xlam", "llama3-python-tag"]
    assert {"[TOOL_CALLS]", "<tool_call>", "</tool_call>", "<|python_tag|>"} <= set(a.content.in_tool_turns)


@pytest.mark.parametrize("name", LFM2_PYTHONIC)
def test_lfm2_templates_get_the_handler(name: str) -> None:
    t = shared(name)
    assert "List of tools:" in t.source
    a = t.analysis
    assert a.handler == "lfm2-pythonic"
    assert a.tools.args == "literal" and a.tools.literal is not None
    assert (a.tools.literal.open, a.tools.literal.kv_sep) == ("(", "=")
    assert any(n.startswith("special: lfm2-pythonic") for n in a.notes)
    assert a.capabilities.tools   # the tool list itself is rendered


@pytest.mark.parametrize("name", LFM2_PYTHONIC)
def test_lfm2_parses_two_typed_calls(name: str) -> None:
    req = shared(name).apply(USER, tools=TOOLS)
    msg = req.parse(TEXT).to_dict()
    assert not (msg.get("content") or "").strip()
    calls = [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in msg["tool_calls"]]
    assert calls == [("get_time", {"city": "Paris"}), ("toggle", {"enabled": True})]
    assert calls[1][1]["enabled"] is True    # a Python True, not the string "True"
    assert len({c["id"] for c in msg["tool_calls"]}) == 2


@pytest.mark.parametrize("name", LFM2_PYTHONIC)
def test_lfm2_content_before_calls(name: str) -> None:
    req = shared(name).apply(USER, tools=TOOLS)
    msg = req.parse('Checking.<|tool_call_start|>[get_time(city="Paris")]<|tool_call_end|>').to_dict()
    assert msg["content"] == "Checking."
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_time"]


@pytest.mark.parametrize("name", LFM2_PYTHONIC)
def test_lfm2_without_tools_keeps_text(name: str) -> None:
    """No tools in the request: the call text is the model's answer, not a call."""
    msg = shared(name).apply(USER).parse(TEXT).to_dict()
    assert "tool_calls" not in msg   # no calls: no field (OpenAI shape)
    assert msg["content"] == TEXT


def test_lfm2_rendering_its_own_calls_needs_no_special() -> None:
    """LFM2.5-8B-A1B also says "List of tools:" but renders calls, so the general analysis reads it."""
    t = shared("LFM2.5-8B-A1B.jinja")
    assert "List of tools:" in t.source
    assert t.analysis.handler == ""
    assert t.analysis.tools.style != "none"


def test_older_lfm2_revision_without_the_phrase() -> None:
    """An LFM2 revision without "List of tools:" does not get the handler."""
    t = shared("LFM2-8B-A1B.hist-566059a2.jinja")
    assert "List of tools:" not in t.source
    assert t.analysis.handler == ""


def test_plain_template_never_special() -> None:
    t = ChatTemplate.from_string(PLAIN, bos_token=turns.BOS, eos_token=turns.EOS)
    assert t.analysis.tools.style == "none"
    assert t.analysis.handler == ""
    assert "tool_calls" not in t.apply(USER, tools=TOOLS).parse(TEXT).to_dict()


def test_phrase_alone_is_what_triggers() -> None:
    """The same plain template with the phrase in its tool list gets the LFM2 entry."""
    source = PLAIN.replace("Tools: ", "List of tools: ")
    t = ChatTemplate.from_string(source, bos_token=turns.BOS, eos_token=turns.EOS)
    assert t.analysis.handler == "lfm2-pythonic"


@pytest.mark.parametrize("path", turns.fixture_templates(), ids=lambda p: p.stem)
def test_fixtures_never_special(path: Path) -> None:
    assert "List of tools:" not in path.read_text(encoding="utf-8")
    assert template(path).analysis.handler == ""
