"""No model family or template name in the analysis code (issue 13).

The analysis reads a format because it is general, not because it knows the family: model names
belong only in the one data module for model-specific facts (``analysis/special.py``). This test
reads the source of every module on the way from rendering to parsing (probes, diff, analysis,
plan, IR, grammar, runtime, values, markers) and fails on a family name anywhere in it, comments
and docstrings included. ``llama.cpp`` (the reference implementation, not a format) is allowed.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "autoparser"
SCOPE = ("probes", "diff", "analysis", "plan", "ir", "grammar", "runtime", "values", "markers")
FACTS = PACKAGE / "analysis" / "special.py"
FAMILIES = (
    "qwen", "llama", "mistral", "ministral", "devstral", "deepseek", "glm", "kimi", "gpt-oss", "harmony", "gemma",
    "granite", "hermes", "minimax", "functionary", "phi-?[34]", "lfm", "nemotron", "command-?r", "cohere",
    "seed-oss", "apriel", "hyperclova", "xlam", "firefunction", "hunyuan", "inkling", "magistral", "smollm",
    "internlm", "ernie", "jamba", "olmo", "longcat", "step3",
)
NAME = re.compile(r"(?:" + "|".join(FAMILIES) + r")(?!\.cpp)", re.IGNORECASE)

OPTION_VALUES = re.compile(r'"deepseek(?:-legacy)?"')   # reasoning_format values, named as llama.cpp names them


def _modules() -> list[Path]:
    out: list[Path] = []
    for part in SCOPE:
        path = PACKAGE / part
        out += sorted(path.rglob("*.py")) if path.is_dir() else [path]
    return [p for p in out if p != FACTS]


def test_the_scope_exists() -> None:
    assert all((PACKAGE / part).exists() for part in SCOPE)
    assert FACTS.is_file() and NAME.search(FACTS.read_text(encoding="utf-8"))   # the facts do name families


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_family_name_in_analysis_code(path: Path) -> None:
    hits = [f"{i}: {line.strip()}" for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if NAME.search(OPTION_VALUES.sub("", line))]
    assert not hits, "family names outside analysis/special.py:\n" + "\n".join(hits)
