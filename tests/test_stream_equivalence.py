"""Parsing known assistant turns, and streaming them in any chunking, gives the same message.

For every fixture template and a deterministic sample of the shared corpus, each scenario in
``turns.SCENARIOS`` that the template can express is rendered, the model's text is cut out of
the rendering (as the conformance checker does), and:

* ``req.parse(text)`` must return the known message (stripped text, arguments compared as JSON);
* streaming the text in any chunking (fixed ones, hypothesis-drawn ones, splits inside
  ``\\uXXXX`` escapes and between the halves of a surrogate pair) must give deltas that merge
  to exactly ``req.parse(text).to_dict()``, argument fragments that concatenate to the final
  arguments, and a first delta per call carrying index, id, type and the whole name.

Known failures are listed in ``KNOWN_PARSE`` / ``KNOWN_STREAM`` and marked strict xfail: when
one starts passing, the suite says so and the entry should be removed.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from typing import Any

import pytest
import turns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser import ChatTemplate, Message, Request, merge_deltas

FIXTURE_CASES = [c for p in turns.fixture_templates() for c in turns.build_cases(p)]
CORPUS_CASES = [c for p in turns.corpus_sample() for c in turns.build_cases(p, corpus=True)]

# (template stem, scenario) -> why req.parse(text) does not give the expected message yet (shared
# with test_peg, which expects the same turns to miss).
KNOWN_PARSE: dict[tuple[str, str], str] = turns.KNOWN_PARSE

# (template stem, scenario) -> why streaming does not reproduce req.parse(text) yet.
KNOWN_STREAM: dict[tuple[str, str], str] = {}

# (template stem, scenario) -> why cutting inside a \uXXXX escape changes the result.
KNOWN_ESCAPE_SPLIT: dict[tuple[str, str], str] = {}


def _params(cases: list[turns.Case], known: dict[tuple[str, str], str],
            keep: Any = None) -> list[Any]:
    out = []
    for c in cases:
        if keep is not None and not keep(c):
            continue
        marks: list[Any] = [pytest.mark.corpus] if c.corpus else []
        why = known.get((c.path.stem, c.scenario))
        if why:
            marks.append(pytest.mark.xfail(strict=True, reason=why))
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


@functools.cache
def template(path: Any) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


_REQUESTS: dict[str, Request] = {}


def request(case: turns.Case) -> Request:
    """One request per case, so that parses of the same text can be cached."""
    if case.id not in _REQUESTS:
        _REQUESTS[case.id] = template(case.path).apply(case.history, tools=case.tools,
                                                       chat_template_kwargs=case.kwargs or None)
    return _REQUESTS[case.id]


# ---------------------------------------------------------------- stream checks
@functools.lru_cache(maxsize=64)
def _parsed(req: Request, text: str) -> Message:
    return req.parse(text)


def stream_problems(req: Request, chunks: list[str]) -> list[str]:
    """What is wrong with streaming ``chunks`` compared with parsing their concatenation."""
    parsed = _parsed(req, "".join(chunks))
    want = parsed.to_dict()
    s = req.stream()
    deltas: list[dict[str, Any]] = []
    for chunk in chunks:
        deltas.extend(s.feed(chunk))
    deltas.extend(s.finish())
    problems = []
    merged = merge_deltas(deltas)
    if merged != want:
        problems.append(f"merged deltas {merged} != parse {want}")
    if s.message.to_dict() != want:
        problems.append(f"stream message {s.message.to_dict()} != parse {want}")
    if s.finish_reason != parsed.finish_reason:
        problems.append(f"finish_reason {s.finish_reason!r} != {parsed.finish_reason!r}")
    seen: set[int] = set()
    fragments: dict[int, str] = {}
    for d in deltas:
        for key in ("content", "reasoning_content"):
            if key in d and not (isinstance(d[key], str) and d[key]):
                problems.append(f"empty or non-string {key} delta {d!r}")
        for tc in d.get("tool_calls") or []:
            i = tc.get("index")
            if not isinstance(i, int) or i >= len(want.get("tool_calls") or []):
                problems.append(f"delta for unknown call index {i!r}")
                continue
            final = want["tool_calls"][i]
            fn = tc.get("function") or {}
            if i not in seen:
                seen.add(i)
                if tc.get("id") != final["id"] or tc.get("type") != "function" \
                        or fn.get("name") != final["function"]["name"]:
                    problems.append(f"first delta of call {i} {tc!r} does not carry id/type/name of {final}")
            elif fn.get("name") or tc.get("id"):
                problems.append(f"later delta of call {i} repeats name or id: {tc!r}")
            fragments[i] = fragments.get(i, "") + (fn.get("arguments") or "")
    for i, call in enumerate(want.get("tool_calls") or []):
        if fragments.get(i, "") != call["function"]["arguments"]:
            problems.append(f"call {i}: fragments {fragments.get(i, '')!r} != arguments "
                            f"{call['function']['arguments']!r}")
    return problems


def split(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *sorted(set(cuts)), len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("case", _params(FIXTURE_CASES + CORPUS_CASES, KNOWN_PARSE))
def test_parse_gives_expected_message(case: turns.Case) -> None:
    req = request(case)
    got = req.parse(case.text)
    why = turns.compare(case.expected, got.to_dict(), case.text)
    assert why is None, f"{why}\ntext: {case.text!r}"
    for call in got.tool_calls:
        json.dumps(json.loads(call.arguments), ensure_ascii=False).encode("utf-8")  # no lone surrogates


@pytest.mark.parametrize("case", _params(FIXTURE_CASES + CORPUS_CASES, KNOWN_STREAM))
def test_stream_fixed_chunkings(case: turns.Case) -> None:
    """Whole text, one character at a time, and three characters at a time."""
    req = request(case)
    text = case.text
    for name, chunks in (("whole", [text]), ("chars", list(text)),
                         ("triples", [text[i:i + 3] for i in range(0, len(text), 3)])):
        problems = stream_problems(req, chunks)
        assert not problems, f"{name}: " + "\n".join(problems)


@st.composite
def cut_points(draw: st.DrawFn, n: int) -> list[int]:
    """Split points in ``1..n-1``: a few anywhere, sometimes a run of one-character chunks."""
    if n < 2:
        return []
    cuts = set(draw(st.lists(st.integers(1, n - 1), max_size=24)))
    if draw(st.booleans()):
        a = draw(st.integers(1, n - 1))
        b = draw(st.integers(a, min(n, a + 48)))
        cuts.update(range(a, b))
    return sorted(cuts)


def _streams_cleanly(c: turns.Case) -> bool:
    """Known stream failures are covered (strict xfail) by ``test_stream_fixed_chunkings`` alone."""
    return (c.path.stem, c.scenario) not in KNOWN_STREAM


@pytest.mark.parametrize("case", _params(FIXTURE_CASES, {}, keep=_streams_cleanly))
@settings(max_examples=8, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_stream_random_chunkings_fixtures(case: turns.Case, data: st.DataObject) -> None:
    req = request(case)
    cuts = data.draw(cut_points(len(case.text)), label="cuts")
    problems = stream_problems(req, split(case.text, cuts))
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("case", _params(CORPUS_CASES, {}, keep=_streams_cleanly))
@settings(max_examples=3, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_stream_random_chunkings_corpus(case: turns.Case, data: st.DataObject) -> None:
    req = request(case)
    cuts = data.draw(cut_points(len(case.text)), label="cuts")
    problems = stream_problems(req, split(case.text, cuts))
    assert not problems, "\n".join(problems)


_ESCAPE = re.compile(r"(?<!\\)\\u[0-9a-fA-F]{4}(?:\\u[dD][c-fC-F][0-9a-fA-F]{2})?")


@pytest.mark.parametrize("case", _params(FIXTURE_CASES + CORPUS_CASES, KNOWN_ESCAPE_SPLIT,
                                         keep=lambda c: c.scenario == "escaped_args"))
def test_stream_splits_inside_unicode_escapes(case: turns.Case) -> None:
    """Cut inside ``\\u00e9`` and between/inside the two halves of ``\\ud83d\\ude00``."""
    req = request(case)
    text = case.text
    spans = [m.span() for m in _ESCAPE.finditer(text)]
    assert any(b - a == 12 for a, b in spans), "no surrogate pair escape in the text"
    for a, b in spans:
        for i in range(a + 1, b):
            problems = stream_problems(req, split(text, [i]))
            assert not problems, f"cut at {i} ({text[a:i]!r}|{text[i:b]!r}): " + "\n".join(problems)
        for i in range(a + 1, b if b - a == 12 else a + 1):   # two cuts: surrogate pairs only
            for j in range(i + 1, b):
                problems = stream_problems(req, split(text, [i, j]))
                assert not problems, f"cuts {i},{j} in {text[a:b]!r}: " + "\n".join(problems)
        problems = stream_problems(req, split(text, list(range(a, b + 1))))
        assert not problems, f"one character at a time through {text[a:b]!r}: " + "\n".join(problems)


def test_samples_are_not_empty() -> None:
    """The fixtures express every scenario somewhere (guards the case builder itself)."""
    assert {c.scenario for c in FIXTURE_CASES} == set(turns.SCENARIO_NAMES)
    assert len(FIXTURE_CASES) > 100


# ---------------------------------------------------------------- minimal reproductions and regressions
def _engine_run(spec: Any, chunks: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(merged deltas, final message) of the runtime engine fed ``chunks``."""
    from autoparser.runtime.engine import Engine

    engine = Engine(spec)
    deltas: list[dict[str, Any]] = []
    for chunk in chunks:
        deltas.extend(engine.feed(chunk))
    deltas.extend(engine.finish())
    return merge_deltas(deltas), engine.msg.to_dict()


def test_regression_stop_marker_prefix_of_content_end() -> None:
    """Kimi-K3: ``<|close|>`` (a stop marker) must not win over ``<|close|>response`` in a stream."""
    from autoparser.analysis.model import Analysis, ContentFormat
    from autoparser.plan import RequestOptions, make_plan

    spec = make_plan(Analysis(content=ContentFormat(end="<|close|>response"), end_of_turn=("<|close|>",)),
                     RequestOptions(), prompt="")
    text = "Hello.<|close|>response"
    assert _engine_run(spec, [text])[0]["content"] == "Hello."
    assert _engine_run(spec, list(text))[0]["content"] == "Hello."


def test_regression_tagged_id_after_arguments() -> None:
    """mistral-common v7: the id after the arguments is the id of the first delta too."""
    from autoparser.analysis.model import Analysis, ToolFormat
    from autoparser.plan import RequestOptions, make_plan

    tools = ToolFormat(style="tagged", section_start="[TOOL_CALLS] [", section_end="]", separator=", ",
                       name_prefix='{"name": "', name_suffix='", "arguments": ', args="json",
                       id_position="after_args", id_prefix=', "id": "', id_suffix='"}')
    spec = make_plan(Analysis(tools=tools), RequestOptions(tools=({"type": "function", "function": {"name": "f"}},)),
                     prompt="")
    merged, final = _engine_run(spec, ['[TOOL_CALLS] [{"name": "f", "arguments": {"a": 1}, "id": "abc123XYZ"}]'])
    assert final["tool_calls"][0]["id"] == "abc123XYZ"
    assert merged["tool_calls"][0]["id"] == "abc123XYZ"


def test_repro_python_literal_surrogate_pair() -> None:
    from autoparser.values.pyliteral import python_to_json

    assert json.loads(python_to_json(r"{'q': '\ud83d\ude00'}")) == {"q": "\U0001f600"}
    req = template(turns.FIXTURES / "python_dict_args.jinja").apply(
        [{"role": "user", "content": "hi"}], tools=turns.TOOLS)
    msg = req.parse("<seed:tool_call>{'name': 'search_docs', 'arguments': {'query': '\\ud83d\\ude00'}}"
                    "</seed:tool_call>")
    assert json.loads(msg.tool_calls[0].arguments) == {"query": "\U0001f600"}


# ---------------------------------------------------------------- a marker growing at the end of a stream
def test_leftmost_prefers_an_earlier_marker_still_growing() -> None:
    """The ``regex`` module prefers a complete match to an earlier partial one; the engine must not,
    or a longer marker holding a shorter one is read differently when a chunk ends inside it."""
    import regex

    from autoparser.runtime.engine import leftmost

    pat = regex.compile(r"(?P<long>```<end><stop>)|(?P<stop><stop>)")
    grown = leftmost(pat, "text ```<end><stop", 0, final=False)
    assert grown is not None and grown.partial and grown.start() == 5
    cut = leftmost(pat, "text ```<end><stop>", 0, final=False)
    assert cut is not None and cut.lastgroup == "long" and cut.start() == 5
    alone = leftmost(pat, "text <stop> more", 0, final=False)
    assert alone is not None and alone.lastgroup == "stop"


FUZZED = ('<t_weather\n```json\n{"location": "Paris, France", "unit": "celsius"}\n```<｜tool▁call▁end｜>'
          "<｜tool▁calls▁end｜><｜end▁of▁sentence｜><｜Assistant｜></think>")


@pytest.mark.corpus
def test_a_tool_turn_tail_streams_as_it_parses() -> None:
    """One of the fuzzed DeepSeek-R1-Distill outputs that streamed differently (issue 23.8)."""
    shared = turns.shared_dir()
    path = shared / "templates" / "deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja" if shared else None
    if path is None or not path.is_file():
        pytest.skip("DeepSeek-R1-Distill-Qwen-32B's template is not in ../shared")
    (case,) = turns.build_cases(path, corpus=True, only=["tool"])
    req = ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS).apply(case.history, tools=case.tools)
    whole = req.parse(FUZZED).to_dict()
    for size in (1, 2, 5):
        parser = req.stream()
        deltas = [d for i in range(0, len(FUZZED), size) for d in parser.feed(FUZZED[i:i + size])]
        assert merge_deltas([*deltas, *parser.finish()]) == whole, size
