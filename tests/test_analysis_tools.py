"""Tool-call analysis (analysis/tools.py) on the fixtures and on real templates.

Expectations come from templates/README.md (the Output column), not from the analysis.
Fields are compared with surrounding whitespace stripped and inner whitespace collapsed;
a key ``"a+b"`` compares the concatenation of two fields, where the split between them is
a representation choice (``<tool_call>`` + ``\\n<function=`` or all in ``call_start``).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import synth
import turns

from autoparser import ChatTemplate
from autoparser.analysis.layout.encode import encode_call
from autoparser.analysis.model import ToolFormat
from autoparser.markers import NAME_WILDCARD
from autoparser.values.codecs import Codec

SHARED = turns.shared_dir()
USER = [{"role": "user", "content": "What is the weather in Paris?"}]
CALL_ID = "call00001"
CALL_ARGS = {"location": "Paris", "days": 3}   # the one call a layout's expectation writes out


norm = turns.norm_marker
template = turns.load
fixture = turns.fixture_analysis
real = turns.real_analysis


def layout_call(t: ToolFormat) -> str:
    """The call ``get_weather(location="Paris", days=3)`` with id :data:`CALL_ID` as a call layout writes
    it, from the per-call marker to the call's end (the id appears only where the format writes one)."""
    assert t.layout is not None, f"style {t.style!r} has no call layout"
    return t.call_start + encode_call(t.layout, "get_weather", CALL_ID, CALL_ARGS) + t.call_end


def raw(t: ToolFormat, key: str) -> Any:
    """A dotted field of a ToolFormat (``json.name_path``); ``a+b`` joins two string fields; ``call``
    is :func:`layout_call`."""
    if key == "call":
        return layout_call(t)
    if "+" in key:
        return "".join(raw(t, k) for k in key.split("+"))
    value: Any = t
    for part in key.split("."):
        value = getattr(value, part) if value is not None else None
    return value


def get(t: ToolFormat, key: str) -> Any:
    """A field as compared: strings normalised, lists as tuples."""
    value = raw(t, key)
    if isinstance(value, str):
        return norm(value)
    return tuple(value) if isinstance(value, list) else value


def check(t: ToolFormat, expected: dict[str, Any]) -> None:
    got = {k: get(t, k) for k in expected}
    assert got == expected


HERMES = {"style": "json", "section_start": "", "section_end": "", "call_start": "<tool_call>",
          "call_end": "</tool_call>", "json.name_path": ("name",), "json.args_path": ("arguments",),
          "id_position": "none", "python_literals": False}
JSON_ARRAY = {"style": "json", "call_start": "", "call_end": "", "separator": ",",
              "json.name_path": ("name",), "json.args_path": ("arguments",)}
# formats read as call layouts (issue 21): the one call written out, README's Output column filled in
QWEN_CODER = {"style": "layout", "section_start": "",
              "call": "<tool_call> <function=get_weather> <parameter=location> Paris </parameter> "
                      "<parameter=days> 3 </parameter> </function> </tool_call>"}
GLM = {"style": "layout", "call": "<tool_call>get_weather <arg_key>location</arg_key> <arg_value>Paris</arg_value> "
                                  "<arg_key>days</arg_key> <arg_value>3</arg_value> </tool_call>"}
MINIMAX = {"style": "layout", "section_start": "<minimax:tool_call>", "section_end": "</minimax:tool_call>",
           "call": '<invoke name="get_weather"> <parameter name="location">Paris</parameter> '
                   '<parameter name="days">3</parameter> </invoke>'}
KIMI = {"style": "layout", "section_start": "<|tool_calls_section_begin|>", "section_end": "<|tool_calls_section_end|>",
        "call": '<|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"location": "Paris", "days": 3}'
                "<|tool_call_end|>"}

# fixture -> expected tool format fields (README's Output column)
FIXTURE_TOOLS: dict[str, dict[str, Any]] = {
    "hermes_json": HERMES,
    "qwen3_think_json": HERMES,
    "forced_open_think": HERMES,
    "python_dict_args": {**HERMES, "call_start": "<seed:tool_call>", "call_end": "</seed:tool_call>",
                         "python_literals": True},
    "llama3_json": {**HERMES, "call_start": "", "call_end": "", "json.args_path": ("parameters",)},
    "mistral_array": {**JSON_ARRAY, "section_start": "[TOOL_CALLS][", "section_end": "]",
                      "json.id_path": ("id",), "json.id_after_args": True, "id_position": "json"},
    "command_r_action": {**JSON_ARRAY, "section_start": "<|START_ACTION|>[", "section_end": "]<|END_ACTION|>",
                         "json.name_path": ("tool_name",), "json.args_path": ("parameters",),
                         "json.id_path": ("tool_call_id",), "id_position": "json"},
    "name_as_key": {"style": "json", "section_start": "<|tools_prefix|>[", "section_end": "]<|tools_suffix|>",
                    "separator": ",", "json.name_is_key": True},
    "granite_list": {**JSON_ARRAY, "section_start": "<tool_call>[", "section_end": "]"},
    "content_wrapped": {**JSON_ARRAY, "section_start": "<|tool_call|>[", "section_end": "]"},
    "delimiter_reasoning": {**JSON_ARRAY, "section_start": "<tool_calls>[", "section_end": "]</tool_calls>"},
    "xml_params": {**QWEN_CODER, "id_position": "none"},
    "call_id_tagged": {"style": "layout", "call": '<tool_call id="call00001"> <function=get_weather> <parameter=location> Paris </parameter> <parameter=days> 3 </parameter> </function> </tool_call>'},
    "arg_key_value": GLM,
    "minimax_invoke": MINIMAX,
    "mistral_args": {"style": "layout", "section_start": "", "call": '[TOOL_CALLS]get_weather[CALL_ID]call00001[ARGS]{"location": "Paris", "days": 3}'},
    "deepseek_unicode": {"style": "layout", "section_start": "<｜tool▁calls▁begin｜>", "section_end": "<｜tool▁calls▁end｜>", "call": '<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather ```json {"location": "Paris", "days": 3} ```<｜tool▁call▁end｜>'},
    "kimi_sections": KIMI,
    # strings written bare: the literal reader, which reads them bare or quoted (models quote them)
    "pythonic_bare": {"style": "tagged", "args": "literal", "section_start": "", "separator": ",",
                      "literal.open": "(", "literal.close": ")", "literal.kv_sep": "="},
    "yaml_args": {"style": "tagged", "args": "yaml", "section_start": "", "call_start+name_prefix": '<tool_use name="',
                  "name_suffix": '">', "call_close+call_end": "</tool_use>", "tagged.prefix": "",
                  "tagged.key_suffix": ":", "tagged.strings_json": False},
    "kwargs_pairs": {"style": "layout", "section_start": "", "call": '<|invoke|>get_weather location="Paris"; days=3<|/invoke|>'},
    "attr_json": {"style": "layout", "section_start": "", "call": '<invoke tool="get_weather" arguments="{&#34;location&#34;: &#34;Paris&#34;, &#34;days&#34;: 3}"/>'},
    "channels": {"style": "layout", "separator": "<|start|>assistant", "call": '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"location": "Paris", "days": 3}<|call|>'},
    # reasoning delimiters read off the renders (issue 21); their calls are Hermes JSON in tags
    "label_blank_line": HERMES, "label_pair_prefill": HERMES, "double_angle_think": HERMES,
    "colon_fence_think": HERMES,
    # formats the corpus does not contain (templates/README.md)
    "react_labels": {"style": "layout", "section_start": "", "call": 'Action: get_weather Action Input: {"location": "Paris", "days": 3}'},
    "symbol_calls": {"style": "layout", "call": '✦CALL✦ get_weather ✦ARGS✦ {"location": "Paris", "days": 3} ✦END✦'},
    "at_call_lines": {"style": "layout", "call": '@@call get_weather {"location": "Paris", "days": 3}'},
    "markdown_tool_sections": {"style": "layout", "call": '### Tool: get_weather ```json {"location": "Paris", "days": 3} ```'},
    "fence_info_calls": {"style": "layout", "call": '```tool get_weather {"location": "Paris", "days": 3} ```'},
    "indexed_calls": {"style": "layout", "section_start": "<|calls:1|>", "section_end": "<|/calls|>", "separator": "", "call": '<|call:1|>get_weather {"location": "Paris", "days": 3}<|/call|>'},
    "answer_wraps_calls": {**HERMES, "call_start": "<call>", "call_end": "</call>"},   # inside the answer's block
    "reasoning_after_calls": {**HERMES, "call_start": "<tool>", "call_end": "</tool>", "json.name_path": ("tool",),
                              "json.args_path": ("input",)},
    "self_closing_call": {"style": "layout", "call": '<call name="get_weather" args=\'{"location": "Paris", "days": 3}\'/>'},
    "dotted_names": {"style": "layout", "call": '<|invoke|>tools.get_weather#0 {"location": "Paris", "days": 3}<|/invoke|>'},
    "tag_is_name": {"style": "layout", "section_start": "<calls>", "section_end": "</calls>", "call": '<get_weather>{"location": "Paris", "days": 3}</get_weather>'},
    "action_json_fence": {**HERMES, "call_start": "```json", "call_end": "```", "json.name_path": ("action",),
                          "json.args_path": ("action_input",)},
    # the turn is one JSON object: its calls' member is the section, spelled as rendered
    "json_turn": {"style": "json", "section_start": '"tool_calls": [', "section_end": "]", "call_start": "",
                  "call_end": "", "separator": ",", "json.name_path": ("name",), "json.args_path": ("arguments",)},
    # hand-written encodings the corpus lacks (issue 21)
    "edn_vector": {"style": "layout", "section_start": "<calls>[", "section_end": "]</calls>",
                   "call": '{:tool "get_weather" :id "call00001" :args {:location "Paris" :days 3}}'},
    "hcl_blocks": {"style": "layout", "call": 'tool "get_weather" "call00001" { location = "Paris" days = 3 }'},
    "ini_sections": {"style": "layout", "section_start": "<calls>", "section_end": "</calls>",
                     "call": "[get_weather] id = call00001 location = Paris days = 3"},
    "csv_rows": {"style": "layout", "call": "@call get_weather #call00001 location,days Paris,3"},
    # the call's id and name written again on each argument's row
    "call_rows": {"style": "layout", "section_start": "[[calls]]",
                  "call": 'call00001|get_weather|location|"Paris" call00001|get_weather|days|3'},
    "jsonrpc_batch": {"style": "json", "json.name_path": ("method",), "json.args_path": ("params",),
                      "json.id_path": ("id",), "id_position": "json"},
    "lua_call_sugar": {"style": "layout", "call": '<tool_call>get_weather{location = "Paris", days = 3}</tool_call>'},
    "nix_attrs": {"style": "layout", "call": 'call get_weather { location = "Paris"; days = 3; }'},
    "yaml_block_args": {"style": "layout", "section_start": "<actions>",
                        "call": '### call get_weather (call00001) location: "Paris" days: 3'},
    "xml_child_args": {"style": "layout", "call": '<invoke tool="get_weather"> <location>Paris</location> <days>3</days> </invoke>'},
    "xml_attr_args": {"style": "layout", "call": '<invoke tool="get_weather" id="call00001" location="Paris" days="3"/>'},
    "query_paths": {"style": "layout", "call": "<|request|>#call00001 /tools/get_weather?location=Paris&days=3<|/request|>"},
    "query_string_calls": {"style": "layout", "call": "<|call|>get_weather?location=Paris&days=3#call00001<|/call|>"},
    # the name after the arguments; values JSON-quoted in tags (tojson(indent=2)); AsciiDoc listing blocks
    "name_after_args": {"style": "layout", "call": '<call><arguments>{"location": "Paris", "days": 3}</arguments>'
                                                   '<name>get_weather</name></call>'},
    "quoted_params": {"style": "tagged", "section_start": "", "call_start+name_prefix": '<function name="',
                      "name_suffix": '">', "call_close+call_end": "</function>", "tagged.prefix": '<param name="',
                      "tagged.key_suffix": '">', "tagged.strings_json": True},
    "asciidoc_blocks": {"style": "layout", "call": '[tool,get_weather] ---- {"location": "Paris", "days": 3} ----'},
    "xmlrpc_calls": {"style": "layout",
                     "call": "<methodCall><methodName>get_weather</methodName><params><param><value><struct>"
                             "<member><name>location</name><value><string>Paris</string></value></member>"
                             "<member><name>days</name><value><int>3</int></value></member>"
                             "</struct></value></param></params></methodCall>"},
}
NO_TOOLS = ("chatml_plain", "gemma_plain")
WITH_IDS = ("call_id_tagged", "mistral_args", "mistral_array",            # render the given call id
            "edn_vector", "hcl_blocks", "ini_sections", "jsonrpc_batch", "xml_attr_args", "csv_rows",
            "call_rows", "yaml_block_args", "query_paths", "query_string_calls")
REFUSE_STRING_ARGS = ("xml_params", "call_id_tagged", "arg_key_value", "minimax_invoke", "yaml_args", "kwargs_pairs",
                      "edn_vector", "hcl_blocks", "ini_sections", "lua_call_sugar", "nix_attrs", "xml_attr_args",
                      "xmlrpc_calls", "csv_rows", "call_rows",
                      "xml_child_args", "yaml_block_args", "query_paths", "query_string_calls", "quoted_params")
SINGLE_CALL = ("llama3_json",)


# synthesized fixtures: what their axes decide (tests/synth.py)
for _path in turns.fixture_templates():
    _combo = synth.combo_of_fixture(_path.read_text(encoding="utf-8"))
    if _combo is not None:
        FIXTURE_TOOLS[_path.stem] = synth.expected_tools(_combo)
        if _combo.args in ("params", "yaml"):     # iterate over the arguments: a string cannot be rendered
            REFUSE_STRING_ARGS = (*REFUSE_STRING_ARGS, _path.stem)


def test_every_fixture_has_an_expectation() -> None:
    assert {p.stem for p in turns.fixture_templates()} == set(FIXTURE_TOOLS) | set(NO_TOOLS)


@pytest.mark.parametrize("name", sorted(FIXTURE_TOOLS))
def test_fixture_tool_format(name: str) -> None:
    check(fixture(name).tools, FIXTURE_TOOLS[name])


@pytest.mark.parametrize("name", NO_TOOLS)
def test_fixture_without_tools(name: str) -> None:
    a = fixture(name)
    assert a.tools.style == "none"
    assert not a.capabilities.tools and not a.capabilities.tool_calls
    assert a.handler == ""


@pytest.mark.parametrize("name", sorted(FIXTURE_TOOLS))
def test_fixture_tool_capabilities(name: str) -> None:
    """Capabilities read from rendering agree with what README says each fixture does."""
    c = fixture(name).capabilities
    assert (c.tools, c.tool_calls, c.object_arguments) == (True, True, True)
    assert c.parallel_tool_calls == (name not in SINGLE_CALL)
    assert c.tool_call_id == (name in WITH_IDS)
    assert c.string_arguments == (name not in REFUSE_STRING_ARGS)


def test_kimi_sections_name_suffix() -> None:
    """functions.N:I<|tool_call_argument_begin|>A: the index is glued to the name, then the args marker."""
    t = fixture("kimi_sections").tools
    assert norm(t.name_suffix).endswith("<|tool_call_argument_begin|>")
    assert t.name_suffix.startswith(":")


def test_name_as_key_layout() -> None:
    j = fixture("name_as_key").tools.json
    assert j is not None and j.name_is_key and not j.id_path


def _ordered(text: str, pieces: list[str]) -> list[str]:
    """The pieces not found in order in ``text`` (whitespace ignored on both sides; a name wildcard
    in a piece, the name written again, matches a name)."""
    flat = "".join(text.split())
    at, missing = 0, []
    for piece in ("".join(p.split()) for p in pieces):
        if not piece:
            continue
        pattern = re.compile(r"[\w.\-]+".join(re.escape(part) for part in piece.split(NAME_WILDCARD)))
        found = pattern.search(flat, at)
        if found is None:
            missing.append(piece)
        else:
            at = found.end()
    return missing


@pytest.mark.parametrize("name", sorted(FIXTURE_TOOLS))
def test_fixture_markers_appear_in_order(name: str) -> None:
    """The analysed markers, read in order, walk through a rendered one-call turn."""
    tmpl = template(turns.FIXTURES / f"{name}.jinja")
    t = tmpl.analysis.tools
    call = turns.call(1, "get_weather", {"location": "Paris, France"})
    text = tmpl.render([*USER, {"role": "assistant", "content": "", "tool_calls": [call]}], tools=turns.TOOLS)
    text = text[len(tmpl.render(USER, tools=turns.TOOLS)):]
    ident = [t.id_prefix, CALL_ID, t.id_suffix]
    head = [*(ident if t.id_position == "before_name" else []),
            t.name_prefix, "get_weather", t.name_suffix, *(ident if t.id_position == "after_name" else [])]
    if t.tagged is not None:
        args = [t.tagged.prefix, "location", t.tagged.key_suffix, "Paris, France", t.tagged.value_end]
    else:
        value = "Paris, France"
        items = t.layout.args.items if t.layout is not None else None
        if value not in text and items is not None and items.values is not None:   # (percent-encoded)
            value = Codec.from_spec(items.values.string.codec).encode(value)
        args = ["location", value]
    kinds = [p.kind for p in t.layout.pieces] if t.layout is not None else []
    if "args" in kinds and kinds.index("args") < kinds.index("name"):   # the name after the arguments
        head, args = args, ["get_weather"]
    seq = [t.section_start, t.call_start, *head, *args, t.call_close, t.call_end, t.section_end]
    assert _ordered(text, seq) == [], text


# ------------------------------------------------------------------ real templates
def test_real_qwen3() -> None:
    check(real("Qwen-Qwen3-0.6B").tools, HERMES)


def test_real_qwen3_coder() -> None:
    check(real("Qwen3-Coder").tools, QWEN_CODER)


def test_real_glm_4_6() -> None:
    check(real("GLM-4.6").tools, GLM)


def test_real_hermes_2_pro() -> None:
    check(real("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use").tools, HERMES)


def test_real_mistral_nemo() -> None:
    check(real("mistralai-Mistral-Nemo-Instruct-2407").tools,
          {**JSON_ARRAY, "section_start": "[TOOL_CALLS][", "section_end": "]", "json.id_path": ("id",),
           "json.id_after_args": True, "id_position": "json"})


def test_real_llama_3_1() -> None:
    a = real("meta-llama-Llama-3.1-8B-Instruct")
    check(a.tools, {**HERMES, "call_start": "", "call_end": "", "json.args_path": ("parameters",)})
    assert not a.capabilities.parallel_tool_calls


def test_real_deepseek_v3_1() -> None:
    check(real("deepseek-ai-DeepSeek-V3.1").tools,
          {"style": "layout", "section_start": "<｜tool▁calls▁begin｜>", "section_end": "<｜tool▁calls▁end｜>",
           "call": '<｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"location": "Paris", "days": 3}<｜tool▁call▁end｜>'})


def test_real_minimax_m2() -> None:
    check(real("MiniMax-M2").tools, MINIMAX)


def test_real_kimi_k2_instruct() -> None:
    check(real("Kimi-K2-Instruct").tools, KIMI)


def test_real_gemma_4() -> None:
    """Gemma 4: <|tool_call>call:N{k:<|"|>v<|"|>}<tool_call|>."""
    t = real("google-gemma-4-31B-it").tools
    check(t, {"style": "tagged", "args": "literal", "call_start+name_prefix": "<|tool_call>call:",
              "literal.open": "{", "literal.close": "}", "literal.kv_sep": ":",
              "call_close+call_end": "<tool_call|>"})
    assert t.literal is not None and '<|"|>' in t.literal.quotes


def test_real_lfm2_5_8b() -> None:
    """LFM2.5-8B-A1B renders its own pythonic calls: no special handler needed."""
    a = real("LFM2.5-8B-A1B")
    check(a.tools, {"style": "tagged", "args": "literal", "section_start": "<|tool_call_start|>[",
                    "section_end": "]<|tool_call_end|>", "separator": ",", "literal.open": "(",
                    "literal.close": ")", "literal.kv_sep": "="})
    assert a.handler == ""


def test_real_command_r7b() -> None:
    check(real("CohereForAI-c4ai-command-r7b-12-2024-tool_use").tools,
          {**JSON_ARRAY, "section_start": "<|START_ACTION|>[", "section_end": "]<|END_ACTION|>",
           "json.name_path": ("tool_name",), "json.args_path": ("parameters",),
           "json.id_path": ("tool_call_id",), "id_position": "json"})


# ------------------------------------------------------------------ templates that list tools but render no call
def _listing(tools_first: bool) -> ChatTemplate:
    """ChatML turns plus a tool list (before or after the conversation); assistant calls are never rendered."""
    listing = "{% if tools %}Tools: {{ tools | tojson }}\n{% endif %}"
    turns_ = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    prompt = "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    source = (listing + turns_ if tools_first else turns_ + listing) + prompt
    return ChatTemplate.from_string(source, bos_token=turns.BOS, eos_token=turns.EOS)


def test_tool_list_without_calls_has_no_tool_format() -> None:
    a = _listing(tools_first=True).analysis
    assert a.capabilities.tools
    assert a.tools.style == "none"


def test_tool_list_is_not_a_rendered_call() -> None:
    assert not _listing(tools_first=True).analysis.capabilities.tool_calls


def test_tool_list_after_the_conversation() -> None:
    a = _listing(tools_first=False).analysis
    assert a.tools.style == "none"
