"""One verdict (issue 23.6): ``autoparser check``, the vLLM plugin's refusal and ``req.warnings`` read
the same record, the template's verification with the project's accepted limitations applied
(``autoparser.analysis.verdict``): ``--accept TEMPLATE:CAPABILITY`` (or a file of such lines) on the
command line, ``ChatTemplate(accept=...)``, or ``$AUTOPARSER_ACCEPT`` for both and the plugins."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
import turns

from autoparser import ChatTemplate
from autoparser.analysis.verdict import ACCEPT_ENV, Acceptance, accepted_from_env, parse_accept, verdict
from autoparser.analysis.verification import Capability, Verification
from autoparser.cli import main
from autoparser.errors import TemplateError
from autoparser.integrations.common import ALLOW_UNVERIFIED, require_verified

FIXTURES = Path(__file__).resolve().parent.parent / "templates"
USER = [{"role": "user", "content": "Weather in Paris?"}]
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
    "type": "object", "properties": {"city": {"type": "string"}}}}}]
TEXT = Capability("content before a call", "failed", "content_tool", "reasoning 'x' != ''", calls=True)
CALLS = Capability("one call", "failed", "tool", "arguments {} != {'a': 1}", calls=True, calls_misread=True)
REASONING = Capability("reasoning", "failed", "reasoning", "content 'x' != ''")
FINE = Capability("content", "verified", "content")
_unique = itertools.count()


def failing(*caps: Capability, **kw: object) -> ChatTemplate:
    """The Hermes fixture under a name of its own, its verification replaced by ``caps`` (the source gets a
    unique comment, so the analysis, cached per digest, is this template's alone)."""
    source = (FIXTURES / "hermes_json.jinja").read_text() + f"{{# {next(_unique)} #}}"
    tmpl = ChatTemplate.from_string(source, name="models/acme-chat.jinja", **kw)   # type: ignore[arg-type]
    tmpl.analysis.verification_slot._value = Verification((FINE, *caps))
    return tmpl


def test_entries_and_files(tmp_path: Path) -> None:
    listed = tmp_path / "accepted.txt"
    listed.write_text("# known limitations\nopenai-gpt-oss-120b.jinja:content_tool  # by design\n\n"
                      "*:content before a call\n")
    got = parse_accept(["acme:tool", str(listed), "acme:tool"])
    assert got == (Acceptance("acme", "tool"), Acceptance("openai-gpt-oss-120b.jinja", "content_tool"),
                   Acceptance("*", "content before a call"))
    for bad in ("no-colon-no-file", "acme:", ":tool"):
        with pytest.raises(ValueError):
            parse_accept([bad])
    assert accepted_from_env({ACCEPT_ENV: "a:tool, b:reasoning\nc:*"}) == (
        Acceptance("a", "tool"), Acceptance("b", "reasoning"), Acceptance("c", "*"))


@pytest.mark.parametrize("entry, covers", [
    ("acme-chat.jinja:content_tool", True), ("acme-chat:content_tool", True), ("models/acme-chat:content_tool", True),
    ("models-acme-chat:content before a call", True), ("*:content_tool", True), ("acme-chat:*", True),
    ("ACME-Chat:content_tool", True), ("other:content_tool", False), ("acme-chat:tool", False),
])
def test_what_an_acceptance_covers(entry: str, covers: bool) -> None:
    v = verdict(Verification((FINE, TEXT)), "models/acme-chat.jinja", parse_accept([entry]))
    assert (v.accepted == (TEXT,) and v.ok) == covers and (v.failed == ()) == covers


def test_the_verdict_says_what_concerns_a_request() -> None:
    v = verdict(Verification((FINE, TEXT, CALLS, REASONING)), "acme", ())
    assert v.failed == (TEXT, CALLS, REASONING) and not v.ok
    assert v.applies(tools=True) == (TEXT, CALLS, REASONING) and v.applies(tools=False) == (REASONING,)
    assert v.accept_hint() == "acme:content_tool acme:tool acme:reasoning"


def test_req_warnings_plugin_and_check_agree(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(ACCEPT_ENV, raising=False)
    monkeypatch.delenv(ALLOW_UNVERIFIED, raising=False)
    tmpl = failing(TEXT)
    (warning,) = tmpl.apply(USER, tools=TOOLS).warnings
    assert "content before a call failed" in warning and "in the wrong field" in warning
    assert tmpl.apply(USER).warnings == []          # no tools: a call scenario does not concern it
    with pytest.raises(TemplateError) as refused:
        require_verified(tmpl)
    assert refused.value.phase == "verify" and "acme-chat:content_tool" in str(refused.value)
    assert ACCEPT_ENV in str(refused.value)
    # accepted, by the constructor or by the environment (what the plugins read): all three agree
    for accepted in (failing(TEXT, accept=["acme-chat:content_tool"]),
                     (monkeypatch.setenv(ACCEPT_ENV, "acme-chat:content_tool"), failing(TEXT))[1]):
        assert accepted.verdict.ok and accepted.verdict.accepted == (TEXT,)
        assert accepted.apply(USER, tools=TOOLS).warnings == []
        require_verified(accepted)
    monkeypatch.delenv(ACCEPT_ENV)
    misread = failing(CALLS)
    assert "tool calls failed" in misread.apply(USER, tools=TOOLS).warnings[0]
    monkeypatch.setenv(ALLOW_UNVERIFIED, "1")
    require_verified(misread)                        # the documented opt-out serves it anyway


SHARED = turns.shared_dir()
GPT_OSS = SHARED / "templates" / "openai-gpt-oss-120b.jinja" if SHARED else None


@pytest.mark.corpus
@pytest.mark.skipif(GPT_OSS is None or not GPT_OSS.is_file(), reason="gpt-oss's template is not in ../shared")
def test_gpt_oss_one_verdict(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                             capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: check, the plugin and req.warnings said three different things."""
    assert GPT_OSS is not None
    monkeypatch.delenv(ACCEPT_ENV, raising=False)
    monkeypatch.delenv(ALLOW_UNVERIFIED, raising=False)
    base = ["check", str(GPT_OSS), "--no-expect", "--no-progress"]
    assert main([*base, "--format", "json"]) == 1
    assert "--accept openai-gpt-oss-120b:content_tool" in capsys.readouterr().out
    tmpl = ChatTemplate.from_file(GPT_OSS)
    assert tmpl.apply(USER, tools=TOOLS).warnings
    with pytest.raises(TemplateError):
        require_verified(tmpl)
    listed = tmp_path / "accepted.txt"
    listed.write_text("openai-gpt-oss-120b.jinja:content_tool\n")
    assert main([*base, "--accept", "openai-gpt-oss-120b.jinja:content_tool"]) == 0
    assert main([*base, "--accept", str(listed)]) == 0
    monkeypatch.setenv(ACCEPT_ENV, str(listed))       # the deployment's list: check and the plugin read it
    assert main(base) == 0
    served = ChatTemplate.from_file(GPT_OSS)
    require_verified(served)
    assert served.apply(USER, tools=TOOLS).warnings == []
    capsys.readouterr()
