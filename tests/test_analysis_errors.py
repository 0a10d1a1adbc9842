"""``AnalysisError``: raised, naming the template, when the analysis cannot read a template;
never a bare Python exception out of ``ChatTemplate.analysis``."""

from __future__ import annotations

from pathlib import Path

import pytest

import autoparser.analysis as analysis_mod
from autoparser import AnalysisError, AutoparserError, ChatTemplate, TemplateError

FIXTURES = Path(__file__).resolve().parents[1] / "templates"
UNREADABLE = {
    "empty": "",
    "constant": "You are a reranker. Answer yes or no.",
    "always_raises": "{{ raise_exception('this template is for documents only') }}",
    "needs_a_variable": "{{ additional_special_tokens[1] }}{% for m in messages %}{{ m.content }}{% endfor %}",
}


@pytest.fixture(autouse=True)
def cold_cache() -> None:
    analysis_mod.clear_cache()


@pytest.mark.parametrize("name", list(UNREADABLE))
def test_unreadable_template_raises_analysis_error(name: str) -> None:
    tmpl = ChatTemplate.from_string(UNREADABLE[name], name=f"{name}.jinja")
    with pytest.raises(AnalysisError) as info:
        _ = tmpl.analysis
    assert isinstance(info.value, AutoparserError) and not isinstance(info.value, TemplateError)
    assert f"{name}.jinja" in str(info.value) and "cannot read the template" in str(info.value)
    assert info.value.template == f"{name}.jinja" and info.value.phase == "analysis"
    if name in ("empty", "constant"):   # rendering (no analysis) still works
        assert tmpl.render([{"role": "user", "content": "hi"}]) == UNREADABLE[name]


def test_plain_and_parts_templates_are_readable() -> None:
    parts_only = ("{% for m in messages %}{% for p in m.content %}{{ p.text }}{% endfor %}\n{% endfor %}"
                  "{% if add_generation_prompt %}ASSISTANT:{% endif %}")
    for source in ("{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}", parts_only):
        assert ChatTemplate.from_string(source).analysis.tools.style == "none"


@pytest.mark.parametrize("exc", [KeyError("role"), IndexError("list index out of range"), TypeError("x"),
                                 AttributeError("y"), ValueError("z")])
def test_rule_failure_becomes_analysis_error(exc: Exception, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*args: object, **kw: object) -> object:
        raise exc

    monkeypatch.setattr(analysis_mod, "analyze_content", broken)
    tmpl = ChatTemplate.from_file(FIXTURES / "hermes_json.jinja")
    with pytest.raises(AnalysisError) as info:
        _ = tmpl.analysis
    assert info.value.__cause__ is exc and type(exc).__name__ in str(info.value)
    assert tmpl.name in str(info.value)


def test_cli_reports_an_unreadable_template(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from autoparser.cli import main

    path = tmp_path / "reranker.jinja"
    path.write_text(UNREADABLE["constant"], encoding="utf-8")
    code = main(["analyze", str(path)])
    err = capsys.readouterr().err
    assert code != 0 and "cannot read the template" in err and "Traceback" not in err
