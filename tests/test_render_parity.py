"""Our renderer against a reference copy of transformers' chat-template environment.

For every template in the shared corpus and a few message sets, our
:class:`~autoparser.render.Renderer` must give the same text as transformers
would, or fail where transformers fails. Where transformers refuses a template
because it mutates a list it built (``.append`` is a SecurityError in its
immutable sandbox), we compare against a mutable ``SandboxedEnvironment``, as
llama.cpp renders such templates.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import multiprocessing
import os
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime, timezone
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import pytest
import turns
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment, SecurityError

from autoparser.errors import TemplateError
from autoparser.render import Renderer, plain_data
from autoparser.render.renderer import alias_reasoning

EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z
BOS, EOS = "<s>", "</s>"


SHARED = turns.shared_dir()
TEMPLATES = sorted((SHARED / "templates").glob("*.jinja")) if SHARED else []


# -- the reference: transformers' _cached_compile_jinja_template, copied ---------------------------------------

class _AssistantTracker(jinja2.ext.Extension):
    tags = {"generation"}  # noqa: RUF012 - jinja's Extension API

    def parse(self, parser: Any) -> jinja2.nodes.CallBlock:
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
        return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

    @jinja2.pass_eval_context
    def _generation_support(self, context: Any, caller: Any) -> str:
        return caller()  # type: ignore[no-any-return]


def _raise_exception(message: str) -> None:
    raise jinja2.exceptions.TemplateError(message)


def _tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(fmt: str) -> str:
    return datetime.fromtimestamp(EPOCH, tz=timezone.utc).replace(tzinfo=None).strftime(fmt)


class _TemplateDict:
    def __call__(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict[Any, Any]:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    def __init__(*args: Any, **kwargs: Any) -> None:
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise SecurityError(f"underscore-prefixed namespace attribute {name!r}")


def reference_environment(mutable: bool = False) -> jinja2.Environment:
    """transformers' environment; ``mutable`` swaps in the plain sandbox (llama.cpp's semantics)."""
    cls = SandboxedEnvironment if mutable else ImmutableSandboxedEnvironment
    env = cls(trim_blocks=True, lstrip_blocks=True, extensions=[_AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    return env


_REFERENCE = {False: reference_environment(False), True: reference_environment(True)}


@lru_cache(maxsize=8)
def reference_template(source: str, mutable: bool) -> jinja2.Template:
    return _REFERENCE[mutable].from_string(source)


def ref_alias(chat: list[Any]) -> list[Any]:
    """transformers' ``_alias_reasoning_fields``, copied."""
    out = []
    for message in chat:
        if isinstance(message, dict):
            reasoning = next((message[k] for k in ("reasoning_content", "thinking", "reasoning")
                              if message.get(k) is not None), None)
            if reasoning is not None:
                message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def reference_render(source: str, messages: list[Any], tools: Any = None, add_generation_prompt: bool = False,
                     mutable: bool = False, **kwargs: Any) -> str:
    """``render_jinja_template`` for one conversation, with bos/eos as the tokenizer's special tokens."""
    template = reference_template(source, mutable)
    kwargs = {"bos_token": BOS, "eos_token": EOS, **kwargs}
    return template.render(messages=ref_alias(plain_data(messages)), tools=plain_data(tools), documents=None,
                           add_generation_prompt=add_generation_prompt, **plain_data(kwargs))


# -- message sets -------------------------------------------------------------------------------------------

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"},
                           "days": {"type": "integer", "description": "Forecast days"}},
            "required": ["city"],
        },
    },
}]

TOOL_CALL = {"id": "call_0001", "type": "function",
             "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}

CASES: dict[str, dict[str, Any]] = {
    "system_user": dict(messages=[{"role": "system", "content": "You are terse."},
                                  {"role": "user", "content": "Hello there."}],
                        add_generation_prompt=True),
    "system_user_no_prompt": dict(messages=[{"role": "system", "content": "You are terse."},
                                            {"role": "user", "content": "Hello there."}],
                                  add_generation_prompt=False),
    "reasoning_thinking_on": dict(messages=[{"role": "user", "content": "What is 2+2?"},
                                            {"role": "assistant", "content": "4.", "reasoning_content": "Add."},
                                            {"role": "user", "content": "And 3+3?"}],
                                  add_generation_prompt=True, enable_thinking=True),
    "reasoning_alias_thinking_off": dict(messages=[{"role": "user", "content": "What is 2+2?"},
                                                   {"role": "assistant", "content": "4.", "reasoning": "Add."}],
                                         add_generation_prompt=False, enable_thinking=False),
    "tool_round_trip": dict(messages=[
        {"role": "system", "content": "Use tools."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "", "reasoning_content": "Call the tool.", "tool_calls": [TOOL_CALL]},
        {"role": "tool", "content": "Sunny, 21C", "tool_call_id": "call_0001", "name": "get_weather"},
        {"role": "assistant", "content": "It is sunny."},
    ], tools=TOOLS, add_generation_prompt=False),
    "tools_prompt_thinking_off": dict(messages=[{"role": "user", "content": "Weather in Paris?"}],
                                      tools=TOOLS, add_generation_prompt=True, enable_thinking=False),
}


def _outcome(render: Callable[[], str]) -> tuple[str, str | BaseException]:
    try:
        return "ok", render()
    except Exception as e:  # the reference may raise anything a template provokes
        return "error", e


def compare(source: str, name: str) -> list[str]:
    """Differences between our render and the reference for every case; empty when identical."""
    problems: list[str] = []
    try:
        ours_renderer = Renderer(source, name=name, bos_token=BOS, eos_token=EOS)
    except TemplateError as e:
        ours_renderer = None
        compile_error: TemplateError | None = e
    else:
        compile_error = None
    for case, spec in CASES.items():
        spec = dict(spec)
        ref_kind, ref = _outcome(lambda spec=spec: reference_render(source, **spec))
        if ref_kind == "error" and isinstance(ref, SecurityError):
            # transformers refuses; llama.cpp semantics (mutable sandbox) are the reference instead
            ref_kind, ref = _outcome(lambda spec=spec: reference_render(source, mutable=True, **spec))
        if ours_renderer is None:
            ours_kind, ours = "error", compile_error
        else:
            ours_kind, ours = _outcome(lambda spec=spec: ours_renderer.render(**spec))
        if ours_kind == "error" and not isinstance(ours, TemplateError):
            problems.append(f"{case}: raised {type(ours).__name__}, not TemplateError: {ours}")
        elif ours_kind != ref_kind or (ours_kind == "ok" and ours != ref):
            problems.append(f"{case}: ours {ours_kind} {str(ours)[:300]!r} vs reference {ref_kind} {str(ref)[:300]!r}")
    return problems


@pytest.fixture(autouse=True)
def _pinned_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCE_DATE_EPOCH", str(EPOCH))


def _compare_file(path: Path) -> tuple[str, list[str]]:
    os.environ["SOURCE_DATE_EPOCH"] = str(EPOCH)  # also in worker processes
    return path.name, compare(path.read_text(encoding="utf-8"), path.name)


def _compare_all(paths: list[Path]) -> list[tuple[str, list[str]]]:
    """Compare every template, over the available cores (compiling ~440 templates twice dominates)."""
    workers = min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1, 4)
    if workers > 1 and "fork" in multiprocessing.get_all_start_methods():
        try:
            with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
                return list(pool.map(_compare_file, paths, chunksize=8))
        except (BrokenProcessPool, pickle.PicklingError, AttributeError):
            pass  # e.g. this module is not importable by name in a worker: compare here instead
    return [_compare_file(p) for p in paths]


@pytest.mark.corpus
def test_corpus_renders_like_transformers() -> None:
    if not TEMPLATES:
        pytest.skip("shared template corpus not found (set AUTOPARSER_SHARED)")
    failures = {name: problems for name, problems in _compare_all(TEMPLATES) if problems}
    report = "\n".join(f"{name}:\n  " + "\n  ".join(p) for name, p in sorted(failures.items()))
    assert not failures, f"{len(failures)} of {len(TEMPLATES)} templates differ:\n{report}"


# -- plain_data and reasoning aliasing ------------------------------------------------------------------------

class Colour(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


@dataclasses.dataclass
class Point:
    x: int
    y: tuple[int, ...]


class Model:
    def model_dump(self) -> dict[str, Any]:
        return {"kind": Colour.RED}


def test_plain_data_matches_transformers_rules() -> None:
    data = {"colour": Colour.RED, "level": Level.HIGH, "point": Point(1, (2, 3)), "model": Model(),
            "pair": (1, "a"), 7: [None, True, 1.5], "other": object()}
    out = plain_data(data)
    assert out == {"colour": "red", "level": 3, "point": {"x": 1, "y": (2, 3)}, "model": {"kind": "red"},
                   "pair": (1, "a"), 7: [None, True, 1.5], "other": "<object>"}
    assert type(out["colour"]) is str and type(out["level"]) is int
    assert type(out["pair"]) is tuple and 7 in out  # tuples stay tuples, keys are not stringified
    numpy = pytest.importorskip("numpy")
    assert plain_data({"flag": numpy.bool_(False), "n": numpy.int64(4)}) == {"flag": False, "n": 4}


@pytest.mark.parametrize("message", [
    {"role": "assistant", "content": "x", "reasoning": "r"},
    {"role": "assistant", "content": "x", "thinking": "t"},
    {"role": "assistant", "content": "x", "reasoning_content": "rc", "thinking": "t"},
    {"role": "assistant", "content": "x", "reasoning_content": None, "thinking": "t", "reasoning": "r"},
    {"role": "assistant", "content": "x"},
])
def test_reasoning_aliasing_matches_transformers(message: dict[str, Any]) -> None:
    ours = alias_reasoning([dict(message)])
    assert ours == ref_alias([dict(message)])
    assert [list(m) for m in ours] == [list(m) for m in ref_alias([dict(message)])]  # key order too
    if any(message.get(k) is not None for k in ("reasoning", "thinking", "reasoning_content")):
        assert ours[0]["thinking"] is not None and ours[0]["reasoning_content"] is not None


def test_reasoning_reaches_the_template() -> None:
    source = "{% for m in messages %}[{{ m.thinking }}|{{ m.reasoning_content }}]{% endfor %}"
    messages = [{"role": "assistant", "content": "x", "reasoning": "why"}]
    assert Renderer(source).render(messages) == reference_render(source, messages) == "[why|why]"


def test_tools_and_documents_are_defined_as_none() -> None:
    source = "{{ tools is defined }} {{ tools is none }} {{ documents is defined }}"
    assert Renderer(source).render([]) == reference_render(source, []) == "True True True"


def test_mutating_a_built_list_works_but_inputs_stay_immutable() -> None:
    source = "{% set ns = namespace(ids=[]) %}{% set _ = ns.ids.append(1) %}{{ ns.ids }}"
    assert Renderer(source).render([]) == "[1]"
    with pytest.raises(SecurityError):
        reference_render(source, [])
    with pytest.raises(TemplateError):
        Renderer("{% set _ = messages.append(1) %}").render([{"role": "user", "content": "x"}])


def test_generation_tag_scopes_like_transformers() -> None:
    source = "{% set x = 1 %}{% generation %}{% set x = 2 %}{{ x }}{% endgeneration %}{{ x }}"
    assert Renderer(source).render([]) == reference_render(source, []) == "21"


def test_strftime_now_is_pinned() -> None:
    source = "{{ strftime_now('%Y-%m-%d') }}"
    assert Renderer(source).render([]) == reference_render(source, []) == "2026-01-01"


# -- against transformers itself, when installed ----------------------------------------------------------------

HANDFUL = ("Qwen3-Coder.jinja", "GLM-4.6.jinja", "Kimi-K2-Thinking.jinja", "HuggingFaceTB-SmolLM3-3B.jinja",
           "Apertus-8B-Instruct.jinja", "ByteDance-Seed-OSS.jinja")


@pytest.mark.corpus
@pytest.mark.parametrize("name", HANDFUL)
def test_matches_installed_transformers(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    utils = pytest.importorskip("transformers.utils.chat_template_utils")

    class PinnedDatetime(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> datetime:  # type: ignore[override]
            return datetime.fromtimestamp(EPOCH, tz=timezone.utc).replace(tzinfo=None)

    monkeypatch.setattr(utils, "datetime", PinnedDatetime)
    if SHARED is None or not (SHARED / "templates" / name).exists():
        pytest.skip(f"{name} not in the shared corpus")
    source = (SHARED / "templates" / name).read_text(encoding="utf-8")
    renderer = Renderer(source, name=name, bos_token=BOS, eos_token=EOS)
    for case, spec in CASES.items():
        spec = dict(spec)
        messages = spec.pop("messages")
        tools = spec.pop("tools", None)
        agp = spec.pop("add_generation_prompt")
        theirs_kind, theirs = _outcome(lambda m=messages, t=tools, a=agp, s=spec: utils.render_jinja_template(
            [m], tools=t, chat_template=source, add_generation_prompt=a, bos_token=BOS, eos_token=EOS, **s)[0][0])
        if theirs_kind == "ok":
            assert renderer.render(messages, tools=tools, add_generation_prompt=agp, **spec) == theirs, case
        elif isinstance(theirs, SecurityError):
            continue  # a list the template built was mutated: we render it, transformers does not
        else:
            with pytest.raises(TemplateError):
                renderer.render(messages, tools=tools, add_generation_prompt=agp, **spec)
