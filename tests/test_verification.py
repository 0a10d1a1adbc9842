"""The verified analysis (issue 17): ``tmpl.analysis.verification``, the self-test as part of the
analysis (cached with it, frozen records per capability), and its use at run time."""

from __future__ import annotations

import copy
import logging
import pickle
from pathlib import Path

import pytest
import turns

import autoparser.template as template_mod
from autoparser import ChatTemplate
from autoparser.analysis.model import Analysis
from autoparser.analysis.verification import ARGUMENT_CAPABILITIES, Capability, Verification, VerificationSlot
from autoparser.selftest import PROBE_TOOLS, SCENARIOS

FIXTURES = Path(__file__).resolve().parent.parent / "templates"
SHARED = turns.shared_dir()
USER = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
BASE = {"content": "verified", "reasoning": "verified", "one call": "verified", "parallel calls": "verified",
        "content before a call": "verified", "reasoning before a call": "verified"}


def _fixture(name: str) -> ChatTemplate:
    return ChatTemplate.from_file(FIXTURES / f"{name}.jinja", bos_token=turns.BOS, eos_token=turns.EOS)


def _corpus(name: str) -> ChatTemplate:
    path = SHARED / "templates" / name if SHARED else None
    if path is None or not path.is_file():
        pytest.skip(f"{name} is not in ../shared/templates")
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


# ------------------------------------------------------------------ the record
def test_capabilities_of_a_fixture() -> None:
    tmpl = _fixture("qwen3_think_json")
    v = tmpl.analysis.verification
    assert isinstance(v, Verification) and tmpl.verification is v       # the alias reads the same record
    assert {c.name: c.status for c in v.capabilities} == BASE | {c: "verified" for c in ARGUMENT_CAPABILITIES}
    assert v.ok and not v.failed and not v.tool_calls_failed
    one = v.get("one call")
    assert one is not None and one.scenario == "tool" and one.calls and not one.calls_misread
    assert v.get("args_strings") is v.get("string arguments")                      # by scenario or by name
    assert v.to_dict()["capabilities"][0] == {"name": "content", "status": "verified", "scenario": "content",
                                              "reason": "", "calls": False, "calls_misread": False}
    with pytest.raises(AttributeError):
        one.status = "failed"  # type: ignore[misc]   # frozen


def test_not_applicable_with_a_reason() -> None:
    v = _fixture("chatml_plain").analysis.verification
    assert v is not None
    for name in ("one call", "parallel calls", *ARGUMENT_CAPABILITIES):
        cap = v.get(name)
        assert cap is not None and cap.status == "n/a" and cap.reason == "template does not render tool calls"
    hermes = _fixture("hermes_json").analysis.verification
    assert hermes is not None and hermes.get("reasoning").status == "n/a"   # type: ignore[union-attr]


def test_every_fixture_verifies() -> None:
    for path in turns.fixture_templates():
        v = ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS).analysis.verification
        assert v is not None and v.ok, (path.name, [(c.name, c.reason) for c in v.failed])


def test_check_and_verification_read_one_record() -> None:
    tmpl = _fixture("hermes_json")
    v = tmpl.analysis.verification
    assert v is not None
    assert [c.scenario for c in v.capabilities] == [s.name for s in tmpl.self_test.scenarios] \
        == [s.name for s in SCENARIOS]
    status = {"pass": "verified", "fail": "failed", "n/a": "n/a"}
    assert [c.status for c in v.capabilities] == [status[s.status] for s in tmpl.self_test.scenarios]


# ------------------------------------------------------------------ cached with the analysis
def test_cached_with_the_analysis() -> None:
    first = _fixture("qwen3_think_json").analysis.verification
    again = _fixture("qwen3_think_json").analysis.verification         # another template, same digest
    renamed = ChatTemplate.from_string((FIXTURES / "qwen3_think_json.jinja").read_text(encoding="utf-8"),
                                       name="renamed", bos_token=turns.BOS, eos_token=turns.EOS)
    assert again is first and renamed.analysis.template == "renamed" and renamed.analysis.verification is first


def test_not_part_of_the_analysis_data() -> None:
    a = _fixture("hermes_json").analysis
    assert a.verification is not None
    assert "verification" not in a.to_dict() and "_verification" not in a.to_dict()
    read = Analysis.from_dict(a.to_dict())
    assert read == a and read.verification is None          # nothing to verify it with


def test_pickles_and_copies_without_the_template() -> None:
    verified = _fixture("xml_params").analysis
    record = verified.verification
    for twin in (pickle.loads(pickle.dumps(verified)), copy.deepcopy(verified)):
        assert twin == verified and twin.verification == record
    # not verified yet: its slot holds the self-test of a template (a closure, which cannot pickle);
    # the copy keeps neither, so it is not verified
    pending = ChatTemplate.from_string((FIXTURES / "hermes_json.jinja").read_text(encoding="utf-8") + "{# x #}",
                                       name="pending").analysis
    assert not pending.verification_slot.computed
    for twin in (pickle.loads(pickle.dumps(pending)), copy.deepcopy(pending)):
        assert twin == pending and twin.verification is None
    assert pending.verification is not None                 # the original still verifies


def test_slot_runs_once_and_lets_errors_through() -> None:
    calls: list[int] = []
    slot = VerificationSlot()
    assert slot.get() is None                                # nothing to compute it with

    def broken() -> Verification:
        calls.append(1)
        raise RuntimeError("bug")
    slot.give(broken)
    with pytest.raises(RuntimeError):
        slot.get()
    record = Verification((Capability("content", "verified", "content"),))

    def fine() -> Verification:
        calls.append(2)
        assert slot.get() is None                            # nested: it is being computed
        return record
    slot.give(fine)                                          # the first function given is kept ...
    with pytest.raises(RuntimeError):
        slot.get()                                           # ... and tried again: nothing was kept
    slot = VerificationSlot()
    slot.give(fine)
    assert slot.get() is record and slot.get() is record and calls == [1, 1, 2]


# ------------------------------------------------------------------ used at run time
def test_verified_templates_add_no_warning() -> None:
    req = _fixture("hermes_json").apply(USER, tools=TOOLS)
    assert req.warnings == []
    assert req.parse("Hello.").warnings == []


@pytest.mark.corpus
def test_failed_tool_verification_warns_every_message_and_logs_once() -> None:
    # a vLLM pythonic template revision that prints a stray character after every value ("Parisr")
    name = "vllm-tool_chat_template_llama3.2_pythonic.rev-f67ce05d.jinja"
    tmpl = _corpus(name)
    v = tmpl.analysis.verification
    assert v is not None and v.tool_calls_failed
    template_mod._warned.discard((tmpl.analysis.digest, True))
    log, seen = logging.getLogger("autoparser"), _Records()
    level, disabled = log.level, log.disabled
    log.addHandler(seen)
    log.setLevel(logging.WARNING)
    log.disabled = False
    try:
        req = tmpl.apply(USER, tools=TOOLS)
        again = _corpus(name).apply(USER, tools=TOOLS)      # another template object, the same template
    finally:
        log.removeHandler(seen)
        log.setLevel(level)
        log.disabled = disabled
    assert req.warnings and "tool calls failed autoparser's self-test" in req.warnings[0]
    assert v.tool_calls_failed[0].reason in req.warnings[0]
    assert len(again.warnings) == 1
    assert sum("self-test" in r.getMessage() for r in seen.records) == 1      # once per template
    msg = req.parse("[get_weather(city='Paris')]")
    assert req.warnings[0] in msg.warnings
    stream = req.stream()
    stream.feed("hello")
    stream.finish()
    assert req.warnings[0] in stream.message.warnings
    assert tmpl.apply(USER).warnings == []       # no tools: nothing to warn about


@pytest.mark.corpus
def test_an_argument_type_that_fails() -> None:
    tmpl = _corpus("MiniMax-M3.jinja")
    v = tmpl.analysis.verification     # template markup inside nested values
    assert v is not None
    nested = v.get("nested object arguments")
    assert nested is not None and nested.status == "failed" and nested.scenario == "args_objects"
    assert nested.calls_misread and "arguments" in nested.reason
    assert v.get("string arguments").status == "verified"     # type: ignore[union-attr]
    assert nested in v.tool_calls_failed
    row = tmpl.self_test.get("args_objects")
    assert row is not None and row.status == "fail" and row.flagged     # the call guard marks it too


@pytest.mark.corpus
def test_a_value_the_template_cannot_express_is_not_applicable() -> None:
    v = _corpus("vllm-tool_chat_template_llama4_pythonic.jinja").analysis.verification   # since="None"
    assert v is not None
    null = v.get("null arguments")
    assert null is not None and null.status == "n/a" and "as the string 'None'" in null.reason


@pytest.mark.corpus
def test_misread_text_next_to_right_calls_is_not_a_tool_failure() -> None:
    tmpl = _corpus("openai-gpt-oss-120b.jinja")
    v = tmpl.analysis.verification
    assert v is not None
    cap = v.get("content before a call")
    assert cap is not None and cap.status == "failed" and cap.reason.startswith("reasoning")
    assert not cap.calls_misread and not v.tool_calls_failed
    # one verdict (issue 23): the failure `autoparser check` reports is in req.warnings too, unless accepted
    (warning,) = tmpl.apply(USER, tools=PROBE_TOOLS).warnings
    assert "content before a call failed" in warning and "tool calls failed" not in warning
    assert tmpl.apply(USER).warnings == []          # no tools: a call scenario does not concern the request
    accepted = ChatTemplate.from_file(SHARED / "templates" / "openai-gpt-oss-120b.jinja",   # type: ignore[operator]
                                      accept=["openai-gpt-oss-120b.jinja:content_tool"])
    assert accepted.apply(USER, tools=PROBE_TOOLS).warnings == []


# ------------------------------------------------------------------ servers refuse what the self-test misread
@pytest.mark.corpus
def test_server_adapters_refuse_a_template_whose_calls_are_misread(monkeypatch: pytest.MonkeyPatch) -> None:
    from autoparser.errors import TemplateError
    from autoparser.integrations.common import ALLOW_UNVERIFIED, require_verified

    monkeypatch.delenv(ALLOW_UNVERIFIED, raising=False)
    require_verified(_fixture("hermes_json"))               # verified: nothing to refuse
    tmpl = _corpus("vllm-tool_chat_template_llama3.2_pythonic.rev-f67ce05d.jinja")
    with pytest.raises(TemplateError) as err:
        require_verified(tmpl)
    reason = tmpl.analysis.verification.tool_calls_failed[0].reason     # type: ignore[union-attr]
    assert reason in str(err.value) and ALLOW_UNVERIFIED in str(err.value) and err.value.phase == "verify"
    monkeypatch.setenv(ALLOW_UNVERIFIED, "1")
    require_verified(tmpl)                                   # the documented opt-out runs it anyway
