"""Property test: the deviations real models make from their template still give the calls (issue 14).

Every example is a template (all fixtures plus a fixed sample of ``../shared/templates``), one
rendered turn with tool calls (``turns.build_cases``) that parses right as rendered, and one or
two deviations drawn from what the analysis knows about the template:

* ``reemit_opener``: the reasoning opener the prompt already wrote is written again;
* ``whitespace``: a space or newlines between two markers the template writes back to back;
* ``separator``: a newline between two calls that the template writes with no separator;
* ``json_indent``: the JSON arguments pretty-printed over several lines;
* ``trailing_newlines``: newlines after the last call;
* ``drop_closer``: the closing marker of the last call (or of the call section) left out at
  the end of the text;
* ``reorder_header``: where the analysis reads a call header's fields as free (a name suffix
  of header fields, ``mk.HEADER``), the recipient written after the other fields instead of
  before, and the optional fields (``<|constrain|>json``, a bare ``json``) written differently.

Properties: the calls (names, arguments as JSON) equal the rendered ones, and streaming the text
in random chunks gives exactly ``parse(text).to_dict()``. The rules themselves, with the peers'
real model outputs, are tested in ``test_real_*.py``; this test checks that they hold for every
template and not only the ones those outputs came from.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import turns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser import ChatTemplate, Request, merge_deltas
from autoparser import markers as mk

SHARED_SAMPLE = (
    "Qwen3-Coder", "Qwen-Qwen3-0.6B", "GLM-4.6", "MiniMax-M2", "mistralai-Mistral-Nemo-Instruct-2407",
    "meta-llama-Llama-3.1-8B-Instruct", "deepseek-ai-DeepSeek-V3.1", "Kimi-K2-Instruct",
    "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "ByteDance-Seed-OSS", "Qwen-QwQ-32B",
    "deepseek-ai-DeepSeek-R1-0528", "ibm-granite-granite-3.3-8b-instruct", "zai-org-GLM-4.5",
    "openai-gpt-oss-120b",
)


@functools.cache
def template(path: Path) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def _calls_of(msg: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": msg.get("tool_calls")}


def _build() -> list[tuple[turns.Case, Request]]:
    paths = list(turns.fixture_templates())
    shared = turns.shared_dir()
    if shared is not None:
        paths += [p for p in (shared / "templates" / f"{n}.jinja" for n in SHARED_SAMPLE) if p.is_file()]
    out = []
    for path in paths:
        for case in turns.build_cases(path, corpus=path.parent.name != "templates"):
            if not case.expected.get("tool_calls"):
                continue
            req = template(path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
            if turns.compare(_calls_of(case.expected), _calls_of(req.parse(case.text).to_dict()), case.text):
                continue  # misread as rendered: the round-trip tests report it, not this one
            out.append((case, req))
    return out


SUBJECTS = _build()
Pick = Callable[[list[Any]], Any]          # chooses one of the given options
Deviation = Callable[[Pick, turns.Case, Request, str], str | None]


def _markers(case: turns.Case, req: Request) -> list[str]:
    return [m for m in dict.fromkeys([*template(case.path).analysis.markers(), *req.stop]) if m.strip()]


def _adjacent(case: turns.Case, req: Request, text: str) -> list[int]:
    """Offsets where one marker ends and the next starts."""
    found = sorted((m.start(), m.end()) for n in _markers(case, req) for m in re.finditer(re.escape(n), text))
    return [b for (_, end), (b, _) in itertools.pairwise(found) if end == b]


def reemit_opener(pick: Pick, case: turns.Case, req: Request, text: str) -> str | None:
    opener = template(case.path).analysis.reasoning.start.strip()
    if not opener or not req.prompt.rstrip().endswith(opener) or text.lstrip().startswith(opener):
        return None
    return opener + pick(["", "\n"]) + text


def whitespace(pick: Pick, case: turns.Case, req: Request, text: str) -> str | None:
    spots = _adjacent(case, req, text)
    if not spots:
        return None
    at = pick(spots)
    return text[:at] + pick([" ", "\n", "\n\n"]) + text[at:]


def separator(pick: Pick, case: turns.Case, req: Request, text: str) -> str | None:
    t = template(case.path).analysis.tools
    end, start = (t.call_end or t.call_close).strip(), t.call_start.strip()
    if len(case.expected["tool_calls"]) < 2 or t.separator.strip() or not end or not start:
        return None
    spots = [m.end() for m in re.finditer(re.escape(end) + r"(?=\s*" + re.escape(start) + ")", text)]
    if not spots:
        return None
    at = pick(spots)
    return text[:at] + "\n" + text[at:]


def json_indent(pick: Pick, case: turns.Case, req: Request, text: str) -> str | None:
    for call in case.expected["tool_calls"]:
        args = turns.arguments_of(call)
        for form in (json.dumps(args, ensure_ascii=False), json.dumps(args)):
            if isinstance(args, dict) and len(args) > 1 and form in text:
                return text.replace(form, json.dumps(args, ensure_ascii=False, indent=pick([2, 4])), 1)
    return None


def trailing_newlines(pick: Pick, case: turns.Case, req: Request, text: str) -> str | None:
    return text + pick(["\n", "\n\n", " \n"])


def drop_closer(pick: Pick, case: turns.Case, req: Request, text: str) -> str | None:
    t = template(case.path).analysis.tools
    body = text.rstrip()
    for closer in (t.section_end, t.call_end, t.call_close):
        c = closer.strip()
        if c and body.endswith(c):
            return body[: -len(c)]
    return None


def reorder_header(pick: Pick, case: turns.Case, req: Request, text: str) -> str | None:
    t = template(case.path).analysis.tools
    start, suffix = t.call_start.strip(), t.name_suffix
    if not start or not suffix.startswith(mk.HEADER) or not suffix[1:]:
        return None
    names = "|".join(re.escape(c["function"]["name"]) for c in case.expected["tool_calls"])
    found = re.search(f"({re.escape(start)}(?:{names}))(.*?)({re.escape(suffix[1:])})", text)
    if found is None or not found.group(2).strip():
        return None
    recipient, fields, end = found.groups()
    kept = [f for f in fields.split() if f not in ("json", "<|constrain|>json")]
    optional = pick(["", " json", " <|constrain|>json"])
    if pick([True, False]):   # the recipient after the other fields
        header = " ".join(kept) + " " + recipient.strip() + optional
    else:
        header = recipient.strip() + " ".join(kept) + optional
    return text[:found.start()] + header + end + text[found.end():]


CORPUS_ONLY = ("reorder_header",)   # no fixture's analysis reads header fields as free
DEVIATIONS: dict[str, Deviation] = {f.__name__: f for f in (
    reemit_opener, whitespace, separator, json_indent, trailing_newlines, drop_closer, reorder_header)}


@st.composite
def examples(draw: st.DrawFn, kind: str) -> tuple[turns.Case, Request, str, list[str]]:
    def pick(options: list[Any]) -> Any:
        return draw(st.sampled_from(options))

    case, req = draw(st.sampled_from(SUBJECTS))
    text = DEVIATIONS[kind](pick, case, req, case.text)
    if text is None:
        text = case.text
    applied = [kind] if text != case.text else []
    if draw(st.booleans()):   # a second deviation on top
        other = draw(st.sampled_from(sorted(DEVIATIONS)))
        more = DEVIATIONS[other](pick, case, req, text)
        if more is not None and (other != "drop_closer" or "trailing_newlines" not in applied):
            text, applied = more, [*applied, other]
    return case, req, text, applied


def _stream(req: Request, text: str, cuts: list[int]) -> dict[str, Any]:
    s = req.stream()
    deltas, last = [], 0
    for cut in [*sorted(set(cuts)), len(text)]:
        deltas += s.feed(text[last:cut])
        last = cut
    deltas += s.finish()
    return merge_deltas(deltas)


@pytest.mark.skipif(not SUBJECTS, reason="no template with tool calls")
@pytest.mark.parametrize("kind", sorted(DEVIATIONS))
@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_calls_survive_the_deviation(kind: str, data: st.DataObject) -> None:
    case, req, text, applied = data.draw(examples(kind), label="example")
    got = req.parse(text).to_dict()
    why = turns.compare(_calls_of(case.expected), _calls_of(got), text)
    assert why is None, f"{case.id} {applied}: {why}\n{text!r}"
    cuts = data.draw(st.lists(st.integers(0, len(text)), max_size=12), label="cuts")
    assert _stream(req, text, cuts) == got, f"{case.id} {applied}: stream != parse\n{text!r}"


@pytest.mark.parametrize("kind", sorted(DEVIATIONS))
def test_every_deviation_applies_somewhere(kind: str) -> None:
    """Each deviation finds a place in several subjects (else its property would test nothing)."""
    if not SUBJECTS:
        pytest.skip("no template with tool calls")
    applies = [c.id for c, req in SUBJECTS if DEVIATIONS[kind](lambda xs: xs[0], c, req, c.text) is not None]
    if kind in CORPUS_ONLY and turns.shared_dir() is None:
        pytest.skip(f"{kind}: only corpus templates have free header fields; ../shared is absent")
    assert len(applies) >= 3, applies
