"""The verified analysis (issue 17): the self-test as part of the analysis, used at run time."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
import turns

from autoparser import ChatTemplate

FIXTURES = Path(__file__).resolve().parent.parent / "templates"
USER = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]


def test_capabilities_of_a_fixture() -> None:
    v = ChatTemplate.from_file(FIXTURES / "qwen3_think_json.jinja").verification
    status = {c.name: c.status for c in v.capabilities}
    assert status == {"content": "verified", "reasoning": "verified", "one call": "verified",
                      "parallel calls": "verified", "content before a call": "verified",
                      "reasoning before a call": "verified"}
    assert not v.failed and v.to_dict()["capabilities"][0]["scenario"] == "content"
    plain = ChatTemplate.from_file(FIXTURES / "chatml_plain.jinja").verification
    assert plain.get("one call") is not None and plain.get("one call").status == "n/a"


def test_verified_templates_add_no_warning() -> None:
    req = ChatTemplate.from_file(FIXTURES / "hermes_json.jinja").apply(USER, tools=TOOLS)
    assert req.warnings == []
    assert req.parse("Hello.").warnings == []


def test_check_and_verification_read_one_record() -> None:
    tmpl = ChatTemplate.from_file(FIXTURES / "hermes_json.jinja")
    assert [c.scenario for c in tmpl.verification.capabilities] == [s.name for s in tmpl.self_test.scenarios]


@pytest.mark.corpus
class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_failed_tool_verification_warns_every_message_and_logs_once() -> None:
    shared = turns.shared_dir()
    # a vLLM pythonic template revision that prints a stray character after every value ("Parisr")
    path = shared / "templates" / "vllm-tool_chat_template_llama3.2_pythonic.rev-f67ce05d.jinja" if shared else None
    if path is None or not path.is_file():
        pytest.skip("the misprinting pythonic template revision is not in ../shared/templates")
    tmpl = ChatTemplate.from_file(path)
    log, seen = logging.getLogger("autoparser"), _Records()
    level, disabled = log.level, log.disabled
    log.addHandler(seen)
    log.setLevel(logging.WARNING)
    log.disabled = False
    try:
        req = tmpl.apply(USER, tools=TOOLS)
        again = tmpl.apply(USER, tools=TOOLS)
    finally:
        log.removeHandler(seen)
        log.setLevel(level)
        log.disabled = disabled
    assert req.warnings and "tool calls failed autoparser's self-test" in req.warnings[0]
    assert again.warnings == req.warnings
    assert sum("self-test" in r.getMessage() for r in seen.records) == 1      # once per template
    msg = req.parse("[get_weather(city='Paris')]")
    assert req.warnings[0] in msg.warnings
    stream = req.stream()
    stream.feed("hello")
    stream.finish()
    assert req.warnings[0] in stream.message.warnings
    assert tmpl.verification.tool_calls_failed
    assert tmpl.apply(USER).warnings == []       # no tools: nothing to warn about
