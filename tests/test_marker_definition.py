"""markers/definition.py: the one definition of a marker, and its two narrower kinds.

The analysis reads markers of any characters from the template's own text; only the
token-shaped ones are listed as the parser's markers (the pieces a decoder must keep), and the
special-token looks judge a marker without a tokenizer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autoparser import ChatTemplate
from autoparser.decisions.row import control_looking_parts
from autoparser.decisions.tokens import special_looking_parts
from autoparser.markers import definition as dm
from autoparser.plan import stray_closers

TEMPLATES = Path(__file__).resolve().parent.parent / "templates"


def _template(name: str) -> ChatTemplate:
    return ChatTemplate.from_file(TEMPLATES / f"{name}.jinja")


@pytest.mark.parametrize(("name", "literal_marker"), [
    ("symbol_calls", "✦CALL✦"), ("react_labels", "Action:"), ("at_call_lines", "@@call"),
    ("fence_info_calls", "```tool"),
])
def test_template_literal_markers_are_read_but_not_listed(name: str, literal_marker: str) -> None:
    t = _template(name)
    assert literal_marker in dm.Vocabulary.of_template(t.renderer.literals).pieces
    assert t.analysis.tools.call_start.strip() == literal_marker      # the analysis reads it as the call start
    assert not dm.token_shaped(literal_marker)
    assert literal_marker not in t.analysis.markers()                 # a tokenizer sees ordinary text


@pytest.mark.parametrize("path", sorted(TEMPLATES.glob("*.jinja")), ids=lambda p: p.stem)
def test_listed_markers_are_token_shaped(path: Path) -> None:
    listed = ChatTemplate.from_file(path).analysis.markers()
    assert all(dm.token_shaped(m) and not any(c.isspace() for c in m) for m in listed), listed


def test_listed_markers_of_a_bracket_format() -> None:
    assert _template("mistral_args").analysis.markers() == (
        "[THINK]", "[/THINK]", "[TOOL_CALLS]", "[CALL_ID]", "[ARGS]")


@pytest.mark.parametrize(("marker", "token", "control"), [
    ("<|im_end|>", ("<|im_end|>",), ("<|im_end|>",)),
    ("<think>", ("<think>",), ()),                                          # a word tag: maybe an added token
    ("[TOOL_CALLS]", ("[TOOL_CALLS]",), ("[TOOL_CALLS]",)),
    ("<|tool_call>call:", ("<|tool_call>",), ("<|tool_call>",)),
    ('<｜DSML｜invoke name="x">', (), ('<｜DSML｜invoke name="x">',)),      # a fullwidth bar in a tag with spaces
    ("✦CALL✦", (), ()),
])
def test_special_token_looks(marker: str, token: tuple[str, ...], control: tuple[str, ...]) -> None:
    assert special_looking_parts(marker) == token
    assert control_looking_parts(marker) == control


def test_boundaries() -> None:
    assert dm.unclosed("text<tool_ca") == 4
    assert dm.unclosed("[TOOL_CALLS] x") == -1
    assert dm.unclosed("[[assistant]]\n[[tool_ca") == len("[[assistant]]\n")   # a doubled opener opens one marker
    assert dm.unopened_close("ol_call>{}<x>") == 7
    assert dm.unopened_close("x<y>") == -1
    assert dm.next_open("call_1<|message|>", 1) == 6
    assert dm.next_open("call_1") == len("call_1")


def test_word_closers_and_trailing_shapes() -> None:
    assert dm.word_closer("[TOOL_CALLS]") == "[/TOOL_CALLS]"
    assert dm.word_closer("<tools>\n") == "</tools>"
    assert dm.word_closer("<|tool|>") is None and dm.word_closer("✦CALL✦") is None
    assert stray_closers(_template("mistral_array").analysis.tools) == ("[/TOOL_CALLS]",)
    m = dm.trailing_shape("assistant: <think>")
    assert m is not None and m.group() == "<think>"
    assert dm.trailing_shape("<think> x") is None


@pytest.mark.parametrize(("closer", "opener"), [
    ("</think>", "<think>"), ("[/THINK]", "[THINK]"), ("⟪/think⟫", "⟪think⟫"), ("<channel|>", "<|channel>"),
    ("<|END_THINKING|>", "<|START_THINKING|>"),
])
def test_opener_of_inverts_closing_candidates(closer: str, opener: str) -> None:
    assert dm.opener_of(closer) == opener
    assert closer in dm.closing_candidates(opener)


def test_opener_of_a_non_closer() -> None:
    assert dm.opener_of("<think>") is None
    assert dm.opener_of("Action:") is None


_HISTORY_SPLIT = """{%- for m in messages -%}
{%- if m.role == 'assistant' -%}
{%- set c = m.content.split('CLOSER')[-1] if 'CLOSER' in m.content else m.content -%}
«assistant»{{ c }}«end»
{%- else -%}«{{ m.role }}»{{ m.content }}«end»
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}«assistant»{%- endif -%}"""

_DECLARED = """{%- if enable_thinking -%}«system»Think first, inside OPENER ... CLOSER, then answer.«end»{%- endif -%}
{%- for m in messages -%}«{{ m.role }}»{{ m.content }}«end»{%- endfor -%}
{%- if add_generation_prompt -%}«assistant»{%- endif -%}"""


@pytest.mark.parametrize(("opener", "closer"), [("<think>", "</think>"), ("[THINK]", "[/THINK]"),
                                                ("⟪think⟫", "⟪/think⟫")])
def test_unrendered_reasoning_markers_of_any_shape(opener: str, closer: str) -> None:
    """Reasoning markers no render shows, read from a closer cut out of history or from a pair the
    thinking-on instructions write: any pair the definition matches, not only word tags."""
    split = ChatTemplate.from_string(_HISTORY_SPLIT.replace("CLOSER", closer))
    declared = ChatTemplate.from_string(_DECLARED.replace("CLOSER", closer).replace("OPENER", opener))
    for t in (split, declared):
        r = t.analysis.reasoning
        assert (r.mode, r.start, r.end) == ("tagged", opener, closer)
    msg = split.apply([{"role": "user", "content": "hi"}]).parse(f"{opener}hmm{closer}Hi")
    assert (msg.reasoning_content, msg.content) == ("hmm", "Hi")
