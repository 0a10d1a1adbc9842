"""The analysis cache: keyed on a digest of the template (not on object identity), bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

import autoparser.analysis as analysis_mod
from autoparser import ChatTemplate

SOURCE = (Path(__file__).resolve().parents[1] / "templates" / "hermes_json.jinja").read_text(encoding="utf-8")


def analyse(source: str, **kw: str) -> None:
    assert ChatTemplate.from_string(source, **kw).analysis is not None


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every analysis actually computed (the source it ran on), with a cold cache."""
    runs: list[str] = []
    real = analysis_mod._analyze

    def counting(renderer):  # type: ignore[no-untyped-def]
        runs.append(renderer.source)
        return real(renderer)

    monkeypatch.setattr(analysis_mod, "_analyze", counting)
    clear = getattr(analysis_mod, "clear_cache", None)
    if clear is not None:
        clear()
    else:
        analysis_mod._analyze_cached.cache_clear()
    return runs


def test_same_source_shares_one_analysis(counted: list[str]) -> None:
    a = ChatTemplate.from_string(SOURCE, name="a", eos_token="<|im_end|>")
    b = ChatTemplate.from_string(SOURCE, name="b", eos_token="<|im_end|>")
    assert a is not b and a.renderer is not b.renderer
    first, second = a.analysis, b.analysis
    assert len(counted) == 1, "two templates with the same source and tokens must share one analysis"
    assert first.template == "a" and second.template == "b"   # each keeps its own name
    assert first.to_dict() | {"template": ""} == second.to_dict() | {"template": ""}


def test_different_eos_is_analysed_again(counted: list[str]) -> None:
    analyse(SOURCE, eos_token="<|im_end|>")
    analyse(SOURCE, eos_token="</s>")
    assert len(counted) == 2


def test_cache_key_covers_source_tokens_and_limits() -> None:
    from autoparser.render import Renderer, RenderLimits

    base = analysis_mod.cache_key(Renderer(SOURCE, eos_token="</s>"))
    assert base == analysis_mod.cache_key(Renderer(SOURCE, name="other", eos_token="</s>"))
    assert len(base) == 64 and int(base, 16) >= 0   # a sha256 hex digest
    for other in (Renderer(SOURCE + " ", eos_token="</s>"), Renderer(SOURCE, bos_token="<s>", eos_token="</s>"),
                  Renderer(SOURCE, eos_token="</s>", limits=RenderLimits(timeout_s=1.0))):
        assert analysis_mod.cache_key(other) != base


def test_cache_is_bounded(counted: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    bound = analysis_mod.CACHE_SIZE
    assert 0 < bound <= 256
    tiny = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    for i in range(bound + 5):
        analyse(tiny + f"{{# {i} #}}")
        assert len(analysis_mod._cache) <= bound
    assert len(analysis_mod._cache) == bound
    # the oldest entries went first: the first template is analysed again, the last one is not
    analyse(tiny + f"{{# {bound + 4} #}}")
    assert len(counted) == bound + 5
    analyse(tiny + "{# 0 #}")
    assert len(counted) == bound + 6
