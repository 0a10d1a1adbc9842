"""BOS, EOS and the markers that end a turn (issue 23.7).

The command line takes ``--bos``/``--eos``; for a bare ``.jinja`` file it reads them from a
``tokenizer_config.json`` beside it, and otherwise says on stderr which strings it assumed. A
marker the template writes after tool calls only (Llama 3.1's ``<|eom_id|>``, when
``builtin_tools`` is set) ends the turn: it is a stop string (PRE.5) and the parser drops it
instead of returning it as content.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import turns

from autoparser import ChatTemplate
from autoparser.cli import main

FIXTURES = Path(__file__).resolve().parents[1] / "templates"
USER = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"location": {"type": "string"}}}}}]
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"location": "Paris"}}\n</tool_call>'
# Hermes, with Llama 3.1's rule: after tool calls, <|eom|> instead of <|im_end|> when builtin_tools is set
EOM = (FIXTURES / "hermes_json.jinja").read_text().replace(
    "        {%- endfor -%}\n        {{- '<|im_end|>\\n' -}}",
    "        {%- endfor -%}\n        {{- ('<|eom|>' if message.tool_calls and builtin_tools is defined "
    "else '<|im_end|>') ~ '\\n' -}}")


def test_the_eom_template_is_what_the_test_means() -> None:
    assert "<|eom|>" in EOM


def test_a_marker_written_after_tool_calls_ends_the_turn() -> None:
    req = ChatTemplate.from_string(EOM, eos_token="<|im_end|>").apply(USER, tools=TOOLS)
    assert "<|eom|>" in req.stop and "<|eom|>" in req.plan.stops
    for text in (CALL + "<|eom|>", CALL + "\n<|eom|>"):
        msg = req.parse(text)
        assert msg.content is None and [c.name for c in msg.tool_calls] == ["get_weather"], msg.to_dict()
        stream = req.stream()
        for ch in text:
            stream.feed(ch)
        stream.finish()
        assert stream.message.to_dict() == msg.to_dict()


SHARED = turns.shared_dir()
LLAMA = SHARED / "templates" / "meta-llama-Llama-3.1-8B-Instruct.jinja" if SHARED else None


@pytest.mark.corpus
@pytest.mark.skipif(LLAMA is None or not LLAMA.is_file(), reason="Llama 3.1's template is not in ../shared")
def test_llama_eom_id() -> None:
    assert LLAMA is not None
    tmpl = ChatTemplate.from_file(LLAMA, bos_token="<|begin_of_text|>", eos_token="<|eot_id|>")
    req = tmpl.apply(USER, tools=TOOLS)
    for text in ('{"name": "get_weather", "parameters": {"location": "Paris"}}<|eom_id|>',
                 '<|python_tag|>{"name": "get_weather", "parameters": {"location": "Paris"}}<|eom_id|>'):
        msg = req.parse(text)
        assert msg.content is None and [c.name for c in msg.tool_calls] == ["get_weather"], msg.to_dict()
    assert "</s>" not in req.stop


def _stop(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[list[str], str]:
    assert main(["decisions", *argv, "--json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["stop"], captured.err


def test_cli_bos_eos(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bare = tmp_path / "bare" / "chat.jinja"
    bare.parent.mkdir()
    shutil.copy(FIXTURES / "hermes_json.jinja", bare)
    stop, err = _stop(capsys, str(bare))
    assert stop == ["<|im_end|>", "</s>"]
    assert "BOS '<s>' and EOS '</s>'" in err and "assumed" in err and "--bos/--eos" in err
    stop, err = _stop(capsys, str(bare), "--bos", "", "--eos", "<|endoftext|>")
    assert stop == ["<|im_end|>", "<|endoftext|>"] and err == ""      # both given: nothing assumed
    model = tmp_path / "model" / "chat_template.jinja"
    model.parent.mkdir()
    shutil.copy(FIXTURES / "hermes_json.jinja", model)
    (model.parent / "tokenizer_config.json").write_text(json.dumps(
        {"bos_token": None, "eos_token": {"content": "<|im_end|>", "special": True}}))
    stop, err = _stop(capsys, str(model))
    assert stop == ["<|im_end|>"]
    assert "EOS '<|im_end|>'" in err and "tokenizer_config.json beside it" in err
    stop, _ = _stop(capsys, str(model), "--eos", "<|endoftext|>")     # --eos wins over the config
    assert stop == ["<|im_end|>", "<|endoftext|>"]
