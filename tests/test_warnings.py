"""The suite runs with ``filterwarnings = error``; what it surfaced stays fixed."""

from __future__ import annotations

import warnings

import pytest

from autoparser import ChatTemplate
from autoparser.render import Renderer

# theroyallab-stablelm writes '\# StableLM ...': jinja reads the unknown escape as written (with a
# DeprecationWarning from the unicode-escape codec), as transformers does
SOURCE = "{% for m in messages %}{{ '\\# ' + m.content + '\\n' }}{% endfor %}"


def test_pytest_turns_warnings_into_errors() -> None:
    with pytest.raises(DeprecationWarning):
        warnings.warn("surfaced", DeprecationWarning, stacklevel=1)


@pytest.mark.parametrize("escape", ["\\#", "\\d", "\\777"])
def test_unknown_escape_in_a_template_string_compiles_under_error_filter(escape: str) -> None:
    source = SOURCE.replace("\\#", escape)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = Renderer(source + "{# " + escape + " #}").render([{"role": "user", "content": "hi"}])
    assert out.endswith("hi\n")
    if escape != "\\777":
        assert out.startswith(escape + " ")


def test_template_with_unknown_escape_is_analysed() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        tmpl = ChatTemplate.from_string(SOURCE, name="stablelm-like")
        assert tmpl.analysis.template == "stablelm-like"
