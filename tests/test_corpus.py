"""The whole third-party corpus (../shared/templates): no crashes, deterministic, serialisable.

For every template: it either fails to compile with ``autoparser.TemplateError`` or analyses
without raising; a second cold analysis, in a fresh interpreter with another hash seed (run
alongside this one), gives the same ``to_dict()``; and ``Analysis.from_dict`` reads back what
``to_dict`` wrote, also through JSON. For the templates in
``../shared/conformance/key-templates.txt`` a one-call turn rendered by the template parses back.

Everything is skipped when ../shared is absent (set AUTOPARSER_SHARED to point elsewhere).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import turns

from autoparser import AnalysisError, ChatTemplate, TemplateError
from autoparser.analysis.model import Analysis

SHARED = turns.shared_dir()
pytestmark = [pytest.mark.corpus,
              pytest.mark.skipif(SHARED is None, reason="shared template corpus not found (set AUTOPARSER_SHARED)")]

CORPUS: list[Path] = sorted((SHARED / "templates").glob("*.jinja")) if SHARED else []
KEY_FILE = SHARED / "conformance" / "key-templates.txt" if SHARED else None
KEY: list[str] = [line.strip() for line in KEY_FILE.read_text(encoding="utf-8").splitlines()
                  if line.strip() and not line.startswith("#")] if KEY_FILE and KEY_FILE.is_file() else []

# key template -> why its one-call turn does not parse back yet (strict xfail)
KNOWN_KEY: dict[str, str] = {}


@dataclass
class Outcome:
    """One template loaded and analysed in this process."""

    template: ChatTemplate | None = None
    analysis: Analysis | None = None
    error: TemplateError | None = None     # the template does not compile
    unreadable: AnalysisError | None = None  # it prints no user message in any basic conversation
    crash: str = ""                        # anything else raised (a bug)


@functools.cache
def outcome(path: Path) -> Outcome:
    try:
        tmpl = ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)
    except TemplateError as e:
        return Outcome(error=e)
    try:
        return Outcome(template=tmpl, analysis=tmpl.analysis)
    except AnalysisError as e:
        if "cannot read the template" not in str(e):
            return Outcome(template=tmpl, crash=traceback.format_exc(limit=-3))
        return Outcome(template=tmpl, unreadable=e)
    except Exception:
        return Outcome(template=tmpl, crash=traceback.format_exc(limit=-3))


def analysed(path: Path) -> Analysis:
    out = outcome(path)
    if out.error is not None:
        pytest.skip(f"does not compile: {out.error}")
    if out.unreadable is not None:
        pytest.skip(f"not a readable chat template: {out.unreadable}")
    if out.analysis is None:
        pytest.fail(f"analysis raised:\n{out.crash}")
    return out.analysis


# ------------------------------------------------------------------ second, cold pass in another interpreter
SECOND_PASS = r"""
import json, sys
from autoparser import AnalysisError, ChatTemplate, TemplateError
for path in sys.argv[1:]:
    try:
        result = ChatTemplate.from_file(path, bos_token="<s>", eos_token="</s>").analysis.to_dict()
    except TemplateError as e:
        result = {"error": "TemplateError", "phase": e.phase}
    except Exception as e:
        result = {"error": type(e).__name__}
    print(json.dumps({"path": path, "result": result}, ensure_ascii=False), flush=True)
"""


class SecondPass:
    """Runs SECOND_PASS over some templates in a subprocess while this process analyses them too."""

    def __init__(self, paths: list[Path]) -> None:
        seed = os.environ.get("PYTHONHASHSEED", "")
        env = {**os.environ, "PYTHONHASHSEED": str(int(seed) + 1) if seed.isdigit() else "12345"}
        self.proc = subprocess.Popen([sys.executable, "-c", SECOND_PASS, *map(str, paths)], env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, encoding="utf-8")
        self.results: dict[str, Any] = {}
        self.stderr = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            out, self.stderr = self.proc.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, self.stderr = self.proc.communicate()
        for line in out.splitlines():
            row = json.loads(line)
            self.results[row["path"]] = row["result"]

    def get(self, path: Path) -> Any:
        self._reader.join(timeout=600)
        if str(path) not in self.results:
            pytest.fail(f"the second pass gave no result for {path.name}:\n{self.stderr[-2000:]}")
        return self.results[str(path)]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self._reader.join(timeout=10)


@pytest.fixture(scope="module")
def second_pass(request: pytest.FixtureRequest) -> Any:
    """The cold analyses of the templates whose determinism test was selected."""
    wanted = sorted({item.callspec.params["path"] for item in request.session.items
                     if getattr(item, "originalname", "") == "test_deterministic"
                     and getattr(item, "module", None) is sys.modules[__name__] and hasattr(item, "callspec")})
    runner = SecondPass(wanted)
    yield runner
    runner.close()


# ------------------------------------------------------------------ per template
@pytest.mark.usefixtures("second_pass")   # start the second pass now, so that it runs alongside this one
@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_compiles_or_analyses(path: Path) -> None:
    """A TemplateError at compile time, or an analysis that does not raise."""
    out = outcome(path)
    if out.error is not None:
        assert out.error.phase == "compile", f"raised outside compilation: {out.error}"
        return
    if out.unreadable is not None:   # rerankers, embedders, templates that need variables no one passes
        assert path.name in str(out.unreadable)
        return
    assert out.analysis is not None, f"analysis raised:\n{out.crash}"
    if out.analysis.handler == "lfm2-pythonic":
        assert "List of tools:" in path.read_text(encoding="utf-8")


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_from_dict_round_trip(path: Path) -> None:
    a = analysed(path)
    data = a.to_dict()
    assert Analysis.from_dict(data) == a
    through_json = json.loads(json.dumps(data, ensure_ascii=False))
    assert Analysis.from_dict(through_json) == a
    assert Analysis.from_dict(through_json).to_dict() == data


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_deterministic(path: Path, second_pass: SecondPass) -> None:
    """A cold analysis in another interpreter (another hash seed) gives the same to_dict()."""
    other = second_pass.get(path)
    out = outcome(path)
    if out.error is not None:
        assert other == {"error": "TemplateError", "phase": out.error.phase}
        return
    if out.unreadable is not None:
        assert other == {"error": "AnalysisError"}
        return
    assert out.analysis is not None, f"analysis raised:\n{out.crash}"
    assert other == out.analysis.to_dict()


# ------------------------------------------------------------------ the reasoning analysis moves only on purpose
REASONING_SNAPSHOT = Path(__file__).with_name("corpus_reasoning.json")


def test_reasoning_analysis_unchanged() -> None:
    """Every template's reasoning analysis is the one stored in tests/corpus_reasoning.json: a change
    to it must fix a template whose reasoning was read wrong (review the diff, then
    ``python tools/update_corpus_reasoning.py``)."""
    stored = json.loads(REASONING_SNAPSHOT.read_text(encoding="utf-8"))
    changed = []
    for path in CORPUS:
        out = outcome(path)
        if out.error is not None or out.unreadable is not None:
            now: Any = type(out.error or out.unreadable).__name__
        elif out.analysis is None:
            now = "crash"
        else:
            r = out.analysis.reasoning
            now = "none" if r.mode == "none" else dataclasses.asdict(r)
        if stored.get(path.name) != now:
            changed.append(f"{path.name}: {stored.get(path.name, '<missing>')!r} -> {now!r}")
    assert not changed, "reasoning analysis changed:\n  " + "\n  ".join(changed)


# ------------------------------------------------------------------ key templates: one call parses back
class _WithTools:
    """A reference renderer that passes the tools even where the checker passes none.

    Some templates (Hermes 2 Pro / 3 tool_use) cannot render at all without tools, which
    would make turns.end_of_turn give up on them.
    """

    def __init__(self, ref: turns.Reference) -> None:
        self.ref = ref

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               add_generation_prompt: bool = False, **kwargs: Any) -> str:
        return self.ref.render(messages, tools=tools or turns.TOOLS, add_generation_prompt=add_generation_prompt,
                               **kwargs)


def one_call_case(path: Path) -> tuple[turns.Case | None, str]:
    """The one-call turn as the model writes it, or (None, why the template cannot express it)."""
    scenario = next(s for s in turns.SCENARIOS if s.name == "tool")
    ref = turns.Reference(path.read_text(encoding="utf-8"))
    why = "no history shape renders"
    for kwargs in ({}, {"enable_thinking": False}):
        for history in turns.HISTORIES:
            try:
                text, why_not, variant = turns.expected_text(ref, history, scenario.msg, turns.TOOLS, kwargs)
            except Exception as e:
                text, why_not, variant = None, f"template raised: {e}", None
            if text is None or variant is None:
                why = why_not or why
                continue
            try:
                eot = turns.end_of_turn(ref, history, kwargs)
            except Exception:
                try:
                    eot = turns.end_of_turn(_WithTools(ref), history, kwargs)   # type: ignore[arg-type]
                except Exception:
                    eot = ""
            text = turns.strip_end_of_turn(text, eot)
            return turns.Case(path, "tool", history, turns.TOOLS, kwargs, text, variant, corpus=True), ""
    return None, why


def _key_params() -> list[Any]:
    out = []
    for name in KEY:
        why = KNOWN_KEY.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
        out.append(pytest.param(name, id=name.removesuffix(".jinja"), marks=marks))
    return out


@pytest.mark.parametrize("name", _key_params())
def test_key_template_one_call_round_trip(name: str) -> None:
    assert SHARED is not None
    path = SHARED / "templates" / name
    assert path.is_file(), f"{name} is listed in key-templates.txt but missing from the corpus"
    analysed(path)
    case, why = one_call_case(path)
    if case is None:
        pytest.skip(f"the template does not render a tool call: {why}")
    tmpl = outcome(path).template
    assert tmpl is not None
    req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
    got = req.parse(case.text).to_dict()
    problem = turns.compare(case.expected, got, case.text)
    assert problem is None, f"{problem}\n  text: {case.text!r}\n  got:  {got}"
