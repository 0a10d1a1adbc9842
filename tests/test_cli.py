"""The command line (`autoparser analyze|parse|grammar|check|debug`) and the template self-test.

Commands run in-process through ``autoparser.cli.main`` on the fixture templates.
"""

from __future__ import annotations

import importlib.util
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from autoparser import merge_deltas
from autoparser.analysis.model import Analysis
from autoparser.cli import COMMANDS, main
from autoparser.cli._checks import EXPECT_SUFFIX, expected_dict
from autoparser.cli._common import load_template
from autoparser.selftest import PROBE_TOOLS, SCENARIOS, self_test

ROOT = Path(__file__).resolve().parent.parent
TEMPLATES = ROOT / "templates"
HERMES = TEMPLATES / "hermes_json.jinja"
XML = TEMPLATES / "xml_params.jinja"
QWEN3 = TEMPLATES / "qwen3_think_json.jinja"
PASSING = [HERMES, XML, QWEN3]    # fixtures whose self-test passes today

WEATHER_TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]}}}]
HERMES_OUTPUT = ('Let me look.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n'
                 '</tool_call>\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome"}}\n</tool_call>')
XML_OUTPUT = ("I'll check.\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
              "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>")
QWEN3_OUTPUT = "<think>\nThe user wants the capital.\n</think>\n\nParis is the capital of France."

# reasoning rendered straight before the answer, with nothing between: no format can be read
UNDETECTED_REASONING = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n"
    "{% if m.reasoning_content %}{{ m.reasoning_content }}{% endif %}{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
BROKEN = "{% for m in messages %}{{ m.content }}\n{% if m.role %}\n{% endfor %}"


def run(capsys: pytest.CaptureFixture[str], *argv: Any, stdin: str | None = None,
        monkeypatch: pytest.MonkeyPatch | None = None) -> tuple[int, str, str]:
    if stdin is not None:
        assert monkeypatch is not None
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def write_tools(tmp_path: Path, tools: list[dict[str, Any]] = WEATHER_TOOLS) -> Path:
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(tools), encoding="utf-8")
    return path


def copy_fixture(src: Path, dest: Path) -> Path:
    """Copy a fixture and its expectation file into ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(src, dest / src.name)
    expected = src.with_name(src.stem + EXPECT_SUFFIX)
    shutil.copy(expected, dest / expected.name)
    return dest / src.name


def strip_ids(message: dict[str, Any]) -> dict[str, Any]:
    """Generated call ids are random per request; compare everything else."""
    out = json.loads(json.dumps(message))
    for call in out.get("tool_calls") or []:
        assert call.pop("id")
    return out


# ------------------------------------------------------------------ command table
def test_commands_registered_and_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert list(COMMANDS)[:5] == ["analyze", "parse", "grammar", "check", "debug"]
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in COMMANDS:
        assert name in out


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(capsys, "frobnicate")[0] == 2
    assert run(capsys, "analyze")[0] == 2
    code, _, err = run(capsys, "analyze", tmp_path / "missing.jinja")
    assert code == 2 and "no such file" in err
    bad = tmp_path / "tools.json"
    bad.write_text("[not json", encoding="utf-8")
    code, _, err = run(capsys, "parse", HERMES, "--tools", bad)
    assert code == 2 and "not valid JSON" in err


def test_compile_error_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    broken = tmp_path / "broken.jinja"
    broken.write_text(BROKEN, encoding="utf-8")
    code, _, err = run(capsys, "analyze", broken, "--json")
    assert code == 1 and "broken.jinja" in err and "compile" in err


def test_python_dash_m(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "autoparser", "analyze", str(HERMES), "--json"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["tools"]["style"] == "json"


# ------------------------------------------------------------------ analyze
def test_analyze_json_names_markers(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", HERMES, "--json")
    assert code == 0
    data = json.loads(out)
    assert data == load_template(HERMES).analysis.to_dict()
    assert data["tools"]["style"] == "json"
    assert data["tools"]["call_start"].strip() == "<tool_call>"
    assert data["tools"]["call_end"].strip() == "</tool_call>"
    assert "<|im_end|>" in data["end_of_turn"]

    code, out, _ = run(capsys, "analyze", XML, "--json")
    tools = json.loads(out)["tools"]
    assert tools["style"] == "layout" and tools["layout"]["args"]["kind"] == "items"
    assert tools["name_prefix"].strip() == "<function="
    assert [p["kind"] for p in tools["layout"]["pieces"]] == ["lit", "name", "lit", "args", "lit"]
    assert tools["layout"]["args"]["items"]["item_pre"].strip() == "<parameter="

    code, out, _ = run(capsys, "analyze", QWEN3, "--json")
    reasoning = json.loads(out)["reasoning"]
    assert reasoning["mode"] == "tagged"
    assert (reasoning["start"].strip(), reasoning["end"].strip()) == ("<think>", "</think>")
    assert reasoning["off_kwargs"] == {"enable_thinking": False}


def test_analyze_rich_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", QWEN3)
    assert code == 0
    for text in ("qwen3_think_json.jinja", "Capabilities", "reasoning", "tagged", '"<think>\\n"',
                 "tool calls", '"<tool_call>\\n"', "enable_thinking=false", "<|im_end|>"):
        assert text in out, text


LABEL_PARAMS = TEMPLATES / "synth_label_params.jinja"     # a call layout: `Action: NAME` then parameter items


def test_analyze_shows_a_layout_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "analyze", LABEL_PARAMS)
    assert code == 0
    assert load_template(LABEL_PARAMS).analysis.tools.style == "layout"
    for text in ("tool calls", "layout", 'NAME "\\nArguments: \\n" ARGS "\\n</tool_call>"',
                 'items: each "<parameter=" KEY ">" VALUE "</parameter>\\n"', "raw text", "a JSON number",
                 '"true" / "false"', "<parameter= </parameter>"):
        assert text in out, text
    for repr_text in ("CallLayout(", "Piece(", "Items(", "Values(", "Slot(", "arguments: json"):
        assert repr_text not in out, repr_text


def test_debug_json_has_the_layout_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "debug", LABEL_PARAMS, "--json")
    assert code == 0
    layout = json.loads(out)["layout"]
    assert layout["call"] == '" " NAME "\\nArguments: \\n" ARGS "\\n</tool_call>"'
    assert layout["arguments"].startswith('items: each "<parameter=" KEY')
    assert layout["null"] == '"null"'


# ------------------------------------------------------------------ parse
def test_parse_hermes_two_calls(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                tmp_path: Path) -> None:
    code, out, err = run(capsys, "parse", HERMES, "--tools", write_tools(tmp_path), stdin=HERMES_OUTPUT,
                         monkeypatch=monkeypatch)
    assert code == 0, err
    msg = json.loads(out)
    assert msg["content"] == "Let me look."
    assert msg["reasoning_content"] is None
    assert [c["function"]["name"] for c in msg["tool_calls"]] == ["get_weather", "get_weather"]
    assert [json.loads(c["function"]["arguments"]) for c in msg["tool_calls"]] == [
        {"city": "Paris", "days": 3}, {"city": "Rome"}]


def test_parse_xml_params_typed_by_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    output = tmp_path / "out.txt"
    output.write_text(XML_OUTPUT, encoding="utf-8")
    code, out, _ = run(capsys, "parse", XML, "--tools", write_tools(tmp_path), "--input", output)
    assert code == 0
    msg = json.loads(out)
    assert msg["content"] == "I'll check."
    (call,) = msg["tool_calls"]
    assert call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris", "days": 3}


def test_parse_reasoning_and_thinking_toggle(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = run(capsys, "parse", QWEN3, stdin=QWEN3_OUTPUT, monkeypatch=monkeypatch)
    assert code == 0
    msg = json.loads(out)
    assert msg["reasoning_content"] == "The user wants the capital."
    assert msg["content"] == "Paris is the capital of France."
    # thinking off: the prompt already closed the block; `--prompt` shows it on stderr
    code, out, err = run(capsys, "parse", QWEN3, "--kwargs", '{"enable_thinking": false}', "--prompt",
                         stdin="Paris.", monkeypatch=monkeypatch)
    assert code == 0
    assert err.rstrip("\n").endswith("<think>\n\n</think>")
    assert json.loads(out)["content"] == "Paris."


@pytest.mark.parametrize(("template", "output", "chunk"), [
    (HERMES, HERMES_OUTPUT, "1"), (HERMES, HERMES_OUTPUT, "7"), (XML, XML_OUTPUT, "3"), (QWEN3, QWEN3_OUTPUT, "2")])
def test_parse_stream_merges_to_parse(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                      tmp_path: Path, template: Path, output: str, chunk: str) -> None:
    tools = write_tools(tmp_path)
    code, whole, _ = run(capsys, "parse", template, "--tools", tools, stdin=output, monkeypatch=monkeypatch)
    assert code == 0
    code, lines, _ = run(capsys, "parse", template, "--tools", tools, "--stream", "--chunk-size", chunk,
                         stdin=output, monkeypatch=monkeypatch)
    assert code == 0
    deltas = [json.loads(line) for line in lines.splitlines()]
    assert len(deltas) > 2   # really streamed, not one final delta
    assert all(isinstance(d, dict) and d for d in deltas)
    assert strip_ids(merge_deltas(deltas)) == strip_ids(json.loads(whole))


def test_parse_json_carries_what_the_parser_knows(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tools = write_tools(tmp_path)
    cut = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
    code, out, err = run(capsys, "parse", HERMES, "--tools", tools, "--json", stdin=cut, monkeypatch=monkeypatch)
    assert code == 0      # without --strict: the report says it, the exit code does not
    data = json.loads(out)
    assert list(data) == ["message", "finish_reason", "truncated", "malformed", "warnings", "asides", "tool_calls"]
    assert data["finish_reason"] == "truncated" and data["truncated"] and data["warnings"]
    assert data["tool_calls"][0]["truncated"] and data["tool_calls"][0]["invalid"] is None
    assert data["message"]["tool_calls"][0]["function"]["name"] == "get_weather"
    assert run(capsys, "parse", HERMES, "--tools", tools, "--json", "--strict", stdin=cut, monkeypatch=monkeypatch)[0] == 1
    unknown = '<tool_call>\n{"name": "delete_files", "arguments": {}}\n</tool_call>'
    code, out, err = run(capsys, "parse", HERMES, "--tools", tools, "--json", "--strict", stdin=unknown, monkeypatch=monkeypatch)
    assert code == 1 and "call 0 invalid" in err
    assert json.loads(out)["tool_calls"][0]["invalid"] == "function 'delete_files' is not one of the request's tools"
    code, out, _ = run(capsys, "parse", HERMES, "--tools", tools, "--strict", stdin=HERMES_OUTPUT, monkeypatch=monkeypatch)
    assert code == 0 and "finish_reason" not in json.loads(out)      # the OpenAI message alone by default


def test_parse_stream_ends_with_the_finish_reason(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    tools = write_tools(tmp_path)
    code, out, _ = run(capsys, "parse", HERMES, "--tools", tools, "--stream", stdin=HERMES_OUTPUT, monkeypatch=monkeypatch)
    last = json.loads(out.splitlines()[-1])
    assert code == 0 and last["finish_reason"] == "tool_calls" and last["warnings"] == []
    assert [c["invalid"] for c in last["tool_calls"]] == [None, None]
    code, out, _ = run(capsys, "parse", HERMES, "--tools", tools, "--stream", "--strict",
                       stdin=HERMES_OUTPUT[: HERMES_OUTPUT.index("Rome") + 2], monkeypatch=monkeypatch)
    assert code == 1 and json.loads(out.splitlines()[-1])["finish_reason"] == "truncated"


# ------------------------------------------------------------------ grammar
def test_grammar_prints_gbnf_or_says_why(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tools = write_tools(tmp_path)
    req = load_template(HERMES).apply([{"role": "user", "content": "Hello"}], tools=WEATHER_TOOLS,
                                      tool_choice="required")
    code, out, err = run(capsys, "grammar", HERMES, "--tools", tools, "--tool-choice", "required")
    assert req.gbnf is not None and code == 0 and out.strip() == req.gbnf.strip()
    code, _, err = run(capsys, "grammar", HERMES, "--tools", tools, "--tool-choice", "no_such_tool")
    assert code == 2 and "names no tool" in err
    assert run(capsys, "grammar", HERMES)[0] == 2   # --tools is required


# ------------------------------------------------------------------ self-test
def test_self_test_passes_known_turns() -> None:
    result = self_test(load_template(QWEN3))
    assert [s.name for s in result.scenarios] == [s.name for s in SCENARIOS]
    assert result.ok and result.counts() == {"pass": len(SCENARIOS), "fail": 0, "n/a": 0}
    tool = result.get("parallel")
    assert tool is not None and tool.text.count("<tool_call>") == 2
    assert "<|im_end|>" not in tool.text    # the end of turn is cut, as a server stops there
    assert [c["function"]["name"] for c in tool.got["tool_calls"]] == ["get_weather", "search_docs"]


def test_self_test_marks_unrenderable_scenarios_na() -> None:
    result = self_test(load_template(HERMES))
    statuses = {s.name: s.status for s in result.scenarios}
    assert statuses["reasoning"] == "n/a" and statuses["reasoning_tool"] == "n/a"
    assert statuses["tool"] == statuses["parallel"] == statuses["content_tool"] == "pass"
    plain = self_test(load_template(TEMPLATES / "chatml_plain.jinja"))
    assert {s.name: s.status for s in plain.scenarios}["tool"] == "n/a"
    assert plain.get("content").status == "pass"


def test_self_test_reports_parse_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    from autoparser.runtime.message import Message
    from autoparser.template import Request

    monkeypatch.setattr(Request, "parse", lambda self, text, partial=False: Message(content=text))
    result = self_test(load_template(HERMES), stream=False)
    assert not result.ok
    tool = result.get("tool")
    assert tool.status == "fail" and tool.why.startswith("content '<tool_call>")
    assert result.get("content").status == "pass"


# ------------------------------------------------------------------ check
def test_check_passes_with_stored_expectations(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", *PASSING, "--format", "json", "--no-progress")
    assert code == 0, out
    data = json.loads(out)
    assert data["summary"]["templates"] == 3 and data["summary"]["with_problems"] == 0
    assert {t["expectation"] for t in data["templates"]} == {"match"}
    assert {t["status"] for t in data["templates"]} == {"detected"}
    assert err == ""


def test_check_templates_folder(capsys: pytest.CaptureFixture[str]) -> None:
    """The project's CI gate: every fixture is covered, matches its expectation and is detected.

    Self-test failures are real parser gaps; the exit status must say whether there are any."""
    code, out, _ = run(capsys, "check", TEMPLATES, "--format", "json", "--no-progress", "--require-expect")
    data = json.loads(out)
    fixtures = sorted(p.name for p in TEMPLATES.glob("*.jinja"))
    assert sorted(Path(t["display"]).name for t in data["templates"]) == fixtures
    kinds = {p["kind"] for t in data["templates"] for p in t["problems"]}
    assert kinds <= {"selftest"}, [t["problems"] for t in data["templates"] if t["problems"]]
    assert {t["expectation"] for t in data["templates"]} == {"match"}
    assert code == (1 if kinds else 0)
    s = data["summary"]
    assert s["detected"] + s["plain"] + s["undetected"] + s["failing"] + s["error"] == len(fixtures)
    assert s["undetected"] == s["error"] == 0
    assert s["plain"] == 2   # chatml_plain, gemma_plain: nothing to detect


def test_check_fails_on_drift_and_update_fixes_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    template = copy_fixture(HERMES, tmp_path)
    expected = tmp_path / f"hermes_json{EXPECT_SUFFIX}"
    assert run(capsys, "check", template, "--no-progress")[0] == 0
    data = json.loads(expected.read_text(encoding="utf-8"))
    data["tools"]["call_start"] = "<function_call>\n"
    expected.write_text(json.dumps(data), encoding="utf-8")

    code, out, _ = run(capsys, "check", template, "--no-progress", "--format", "json")
    assert code == 1
    (result,) = json.loads(out)["templates"]
    assert result["status"] == "failing" and result["expectation"] == "drift"
    (problem,) = result["problems"]
    assert problem["kind"] == "drift" and "tools.call_start" in problem["message"]

    code, out, _ = run(capsys, "check", template, "--no-progress")   # text report names the template
    assert code == 1 and "hermes_json.jinja" in out and "drift" in out

    assert run(capsys, "check", template, "--no-progress", "--update")[0] == 0
    assert json.loads(expected.read_text(encoding="utf-8")) == expected_dict(load_template(HERMES).analysis)
    assert run(capsys, "check", template, "--no-progress")[0] == 0


def test_check_expectation_from_an_older_schema(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A field the stored expectation lacks reads as its default: not drift unless the value differs."""
    template = copy_fixture(HERMES, tmp_path)
    expected = tmp_path / f"hermes_json{EXPECT_SUFFIX}"
    data = json.loads(expected.read_text(encoding="utf-8"))
    assert data["handler"] == "" and data["generation_prompt"]
    del data["handler"]
    expected.write_text(json.dumps(data), encoding="utf-8")
    assert run(capsys, "check", template, "--no-progress")[0] == 0
    del data["generation_prompt"]
    expected.write_text(json.dumps(data), encoding="utf-8")
    code, out, _ = run(capsys, "check", template, "--no-progress", "--format", "json")
    assert code == 1
    assert "generation_prompt" in json.loads(out)["templates"][0]["problems"][0]["message"]


def test_check_expect_dir(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    expect = tmp_path / "expect"
    code, out, _ = run(capsys, "check", HERMES, "--expect", expect, "--update", "--no-progress", "--format", "json")
    assert code == 0 and json.loads(out)["templates"][0]["expectation"] == "created"
    assert (expect / f"hermes_json{EXPECT_SUFFIX}").is_file()
    code, out, _ = run(capsys, "check", HERMES, XML, "--expect", expect, "--no-progress", "--format", "json")
    assert code == 0   # a missing expectation is reported, not failed...
    assert [t["expectation"] for t in json.loads(out)["templates"]] == ["match", "missing"]
    code, out, _ = run(capsys, "check", HERMES, XML, "--expect", expect, "--no-progress", "--format", "json",
                       "--require-expect")
    assert code == 1   # ...unless expectations are required
    assert json.loads(out)["templates"][1]["problems"][0]["kind"] == "expectation"


def test_check_undetected_and_render_failure(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "hidden_reasoning.jinja").write_text(UNDETECTED_REASONING, encoding="utf-8")
    (tmp_path / "broken.jinja").write_text(BROKEN, encoding="utf-8")
    code, out, _ = run(capsys, "check", tmp_path, "--no-progress", "--format", "json", "--no-expect")
    assert code == 1
    by_name = {Path(t["display"]).name: t for t in json.loads(out)["templates"]}
    hidden = by_name["hidden_reasoning.jinja"]
    assert hidden["status"] == "undetected"
    assert any(p["kind"] == "undetected" and "reasoning" in p["message"] for p in hidden["problems"])
    broken = by_name["broken.jinja"]
    assert broken["status"] == "error" and broken["problems"][0]["kind"] == "render"
    assert broken["problems"][0]["line"] == 3
    summary = json.loads(out)["summary"]
    assert (summary["undetected"], summary["error"], summary["templates"]) == (1, 1, 2)


def test_check_self_test_failure_fails(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import autoparser.analysis
    from autoparser.runtime.message import Message
    from autoparser.template import Request

    monkeypatch.setattr(Request, "parse", lambda self, text, partial=False: Message(content=text))
    autoparser.analysis.clear_cache()   # the verification is cached with the analysis: compute it afresh
    try:
        code, out, _ = run(capsys, "check", HERMES, "--no-progress", "--format", "json", "--jobs", "1")
    finally:
        autoparser.analysis.clear_cache()   # and keep no verification made with the broken parser
    assert code == 1
    (result,) = json.loads(out)["templates"]
    assert result["status"] == "failing" and result["selftest"]["tool"] == "fail"
    assert all(p["kind"] == "selftest" for p in result["problems"])


def test_check_github_and_markdown(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    template = copy_fixture(HERMES, tmp_path / "t")
    expected = template.with_name(f"hermes_json{EXPECT_SUFFIX}")
    data = json.loads(expected.read_text(encoding="utf-8"))
    data["end_of_turn"] = ["<|eot|>"]
    expected.write_text(json.dumps(data), encoding="utf-8")
    broken = tmp_path / "t" / "broken.jinja"
    broken.write_text(BROKEN, encoding="utf-8")
    step_summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(step_summary))

    code, out, _ = run(capsys, "check", tmp_path / "t", "--no-progress", "--format", "github")
    assert code == 1
    errors = [line for line in out.splitlines() if line.startswith("::error ")]
    assert len(errors) == 2
    assert f"::error file={broken},line=3,title=autoparser check%3A render::compile: " in errors[0]
    assert errors[1].startswith(f"::error file={template},title=autoparser check%3A drift::analysis drifted")
    assert "end_of_turn" in errors[1]
    assert out.splitlines()[-1].startswith("autoparser check: 2 templates")
    assert "| templates | detected |" in step_summary.read_text(encoding="utf-8")

    code, out, _ = run(capsys, "check", tmp_path / "t", "--no-progress", "--format", "markdown")
    assert code == 1
    assert out.startswith("## autoparser check")
    assert "| 2 | 0 | 0 | 0 | 1 | 1 |" in out
    assert "`" + str(broken) + "` | error" in out


def test_check_text_progress_and_summary(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "check", *PASSING, "--verbose")
    assert code == 0
    assert "Summary" in out and "hermes_json.jinja" in out and "all passed" in out
    assert "3/3" in err    # the progress bar (stderr) counts the templates


# ------------------------------------------------------------------ sources
def test_sources_model_folder_config_and_gguf(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    source = QWEN3.read_text(encoding="utf-8")
    folder = tmp_path / "Qwen-Tiny"
    folder.mkdir()
    config = {"eos_token": "<|im_end|>", "chat_template": [
        {"name": "default", "template": (TEMPLATES / "chatml_plain.jinja").read_text(encoding="utf-8")},
        {"name": "tool_use", "template": source}]}
    (folder / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")

    code, out, _ = run(capsys, "analyze", folder, "--json")
    assert code == 0 and json.loads(out)["tools"]["style"] == "none"
    code, out, _ = run(capsys, "analyze", folder, "--template-name", "tool_use", "--json")
    assert code == 0 and json.loads(out)["template"] == "Qwen-Tiny:tool_use"
    assert json.loads(out)["reasoning"]["mode"] == "tagged"
    code, out, _ = run(capsys, "analyze", folder / "tokenizer_config.json", "--template-name", "tool_use", "--json")
    assert code == 0 and json.loads(out)["tools"]["style"] == "json"
    code, _, err = run(capsys, "analyze", folder, "--template-name", "nope")
    assert code == 2 and "unknown template name" in err

    # check covers every named template of a folder, one expectation file each
    code, out, _ = run(capsys, "check", folder, "--no-progress", "--format", "json", "--expect", tmp_path / "exp",
                       "--update")
    assert code == 0
    assert [t["display"] for t in json.loads(out)["templates"]] == [f"{folder}:default", f"{folder}:tool_use"]
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == [
        "Qwen-Tiny.default.expected.json", "Qwen-Tiny.tool_use.expected.json"]

    gguf = pytest.importorskip("gguf")
    path = tmp_path / "tiny.gguf"
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_chat_template(source)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    code, out, _ = run(capsys, "analyze", path, "--json")
    assert code == 0 and json.loads(out)["reasoning"]["start"].strip() == "<think>"
    code, out, _ = run(capsys, "check", path, "--no-progress", "--no-expect", "--format", "json")
    assert code == 0 and json.loads(out)["templates"][0]["status"] == "detected"


# ------------------------------------------------------------------ debug
def test_debug_json_sections(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "debug", QWEN3, "--json")
    assert code == 0
    data = json.loads(out)
    assert list(data) == ["template", "source", "capabilities", "comparisons", "analysis", "markers", "layout",
                          "undetected", "grammar", "sample"]
    assert data["layout"] is None                      # JSON calls: no call layout
    assert data["capabilities"]["reasoning"] and data["capabilities"]["thinking_toggle"]
    comparisons = {c["name"]: c for c in data["comparisons"]}
    reasoning = comparisons["reasoning"]
    assert reasoning["rendered"] and reasoning["a_only"] == ""
    assert "R_REASON_PART" in reasoning["b_only"]
    assert reasoning["prefix"] + reasoning["b_only"] + reasoning["suffix"] == reasoning["b"]
    assert "<tool_call>" in comparisons["tool call"]["b_only"]
    assert comparisons["second call"]["b_only"].count("<tool_call>") == 1
    assert comparisons["generation prompt"]["b_only"] == data["analysis"]["generation_prompt"]
    assert comparisons["thinking toggle"]["b_only"].strip().startswith("<think>")
    assert data["markers"] == list(load_template(QWEN3).analysis.markers())
    assert data["undetected"] == []
    grammar = data["grammar"]
    assert grammar["tools"] == ["get_weather", "search_docs", "lookup"]
    assert grammar["gbnf"] is not None and grammar["messages"] == []
    assert grammar["peg"] == load_template(QWEN3).apply([{"role": "user", "content": "What is the weather in Paris?"}],
                                                        tools=PROBE_TOOLS).peg.text
    assert data["sample"]["ok"] and data["sample"]["counts"]["pass"] == len(SCENARIOS)


def test_debug_rich_sections(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "debug", XML)
    assert code == 0
    for heading in ("differential comparisons", "markers and modes", "grammars", "sample parse",
                    "second argument", "<parameter=", "self-test", "req.parse(text).to_dict()"):
        assert heading in out, heading


def test_grammar_says_the_true_reason_when_there_is_none(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    tools = write_tools(tmp_path)
    code, out, err = run(capsys, "grammar", TEMPLATES / "chatml_plain.jinja", "--tools", tools)
    assert code == 1 and out == ""
    assert "the template has no tool-call format" in err and "not available" not in err
    code, out, err = run(capsys, "grammar", HERMES, "--tools", tools, "--tool-choice", "none")
    assert code == 1 and "tool_choice 'none'" in err


def test_debug_prints_the_peg(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "debug", HERMES)
    assert code == 0 and "PEG" in out and "message" in out and "no PEG grammar" not in out


@pytest.mark.parametrize("path", [TEMPLATES / "pythonic_bare.jinja", TEMPLATES / "channels.jinja",
                                  TEMPLATES / "arg_key_value.jinja"])
def test_analyze_and_debug_speak_plain_words(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    for command in ("analyze", "debug"):
        code, out, _ = run(capsys, command, path)
        assert code == 0
        for raw in ("\\u0003", "\\u0004", "\\u0005", "LiteralArgs(", "TaggedArgs(", "JsonLayout(", "=False", "=True"):
            assert raw not in out, (command, raw)


# ------------------------------------------------------------------ snapshots
def test_expectation_snapshots_are_current() -> None:
    spec = importlib.util.spec_from_file_location("update_expectations", ROOT / "tools" / "update_expectations.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--check"]) == 0
    for path in TEMPLATES.glob("*.jinja"):
        stored = json.loads(path.with_name(path.stem + EXPECT_SUFFIX).read_text(encoding="utf-8"))
        assert "digest" not in stored and "template" not in stored
        assert expected_dict(Analysis.from_dict(stored)) == stored   # round-trips through from_dict
