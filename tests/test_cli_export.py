"""``autoparser export response-template``: printing, writing into tokenizer_config.json, refusals."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import turns

from autoparser.cli import main
from autoparser.cli.export import set_key

QWEN = turns.FIXTURES / "qwen3_think_json.jinja"


def _config(tmp_path: Path, extra: str = "") -> Path:
    src = json.dumps(QWEN.read_text(encoding="utf-8"))
    text = ('{\n  "add_bos_token": false,\n  "chat_template": ' + src + ',\n  "eos_token": "<|im_end|>",'
            + extra + '\n  "model_max_length": 131072,\n  "name": "caf\\u00e9 \u00e9"\n}\n')
    path = tmp_path / "tokenizer_config.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_prints_the_template(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "response-template", str(QWEN)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["version"] == 1 and set(out["fields"]) == {"thinking", "tool_calls", "content"}


def test_into_appends_and_keeps_the_rest(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path)
    before = config.read_text(encoding="utf-8")
    assert main(["export", "response-template", str(tmp_path), "--into", str(tmp_path)]) == 0
    after = config.read_text(encoding="utf-8")
    data = json.loads(after)
    assert list(data)[-1] == "response_template" and list(data)[:-1] == list(json.loads(before))
    cut = before.rindex('"name"')
    head = before[: before.index("\n}", cut)]
    assert after.startswith(head + ",\n  \"response_template\": {\n    \"version\": 1")   # untouched bytes, same indent
    assert after.endswith("\n}\n")
    # a second export replaces the key in place: same bytes
    assert main(["export", "response-template", str(tmp_path), "--into", str(config)]) == 0
    assert config.read_text(encoding="utf-8") == after


def test_into_replaces_in_place(tmp_path: Path) -> None:
    config = _config(tmp_path, '\n  "response_template": {"old": true},')
    before = config.read_text(encoding="utf-8")
    assert main(["export", "response-template", str(tmp_path), "--into", str(tmp_path)]) == 0
    after = config.read_text(encoding="utf-8")
    keys = list(json.loads(after))
    assert keys == list(json.loads(before))                       # same key order
    assert after.startswith(before[: before.index('{"old"')])     # bytes before the value unchanged
    assert after.endswith(before[before.index('{"old": true}') + len('{"old": true}'):])
    assert json.loads(after)["response_template"]["version"] == 1


def test_set_key_one_line_and_empty() -> None:
    assert json.loads(set_key('{"a": 1}', "k", {"x": [1]})) == {"a": 1, "k": {"x": [1]}}
    assert set_key('{"a": 1}', "k", 2) == '{"a": 1, "k": 2}'
    assert json.loads(set_key("{}", "k", 2)) == {"k": 2}


def test_refused_format_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "response-template", str(turns.FIXTURES / "name_as_key.jinja")]) == 1
    assert "JSON key" in capsys.readouterr().err


def test_missing_config_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["export", "response-template", str(QWEN), "--into", str(tmp_path)]) == 2
    assert "tokenizer_config.json" in capsys.readouterr().err


def test_bad_json_exits_2(tmp_path: Path) -> None:
    (tmp_path / "tokenizer_config.json").write_text("[1, 2]", encoding="utf-8")
    assert main(["export", "response-template", str(QWEN), "--into", str(tmp_path)]) == 2
