"""Every fixture template: its analysis matches the stored snapshot, and known turns parse back.

Snapshots are ``templates/<name>.expected.json`` (``analysis.to_dict()`` without ``digest``
and ``template``), written by ``tools/update_expectations.py``. The round trip renders a
known assistant turn with a reference Jinja environment (tests/turns.py), cuts out the
text the model would have generated, and parses it back with ``req.parse``.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest
import turns

from autoparser import ChatTemplate

VOLATILE = ("digest", "template")
NO_TOOLS = {"chatml_plain", "gemma_plain"}
NO_REASONING = {"chatml_plain", "gemma_plain", "hermes_json", "xml_params", "mistral_array", "llama3_json",
                "granite_list", "pythonic_bare", "nix_attrs", "name_after_args"}
SINGLE_CALL = {"llama3_json"}   # refuses more than one call per message
# synthesized fixtures (tools/write_synth_fixtures.py) name their axes in their header; "-none" ends
# the axes of those that render no reasoning
NO_REASONING |= {p.stem for p in turns.fixture_templates()
                 if p.stem.startswith("synth_") and "-none -#}" in p.read_text(encoding="utf-8").split("\n", 3)[2]}
ROUND_TRIP = ("content", "reasoning", "tool", "parallel")
# (fixture, scenario) -> why the round trip does not parse back yet (strict xfail)
KNOWN: dict[tuple[str, str], str] = {}


@functools.cache
def template(path: Path) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def expected_scenarios(name: str) -> list[str]:
    """What templates/README.md says each family can express."""
    out = ["content"]
    if name not in NO_REASONING:
        out.append("reasoning")
    if name not in NO_TOOLS:
        out.append("tool")
        if name not in SINGLE_CALL:
            out.append("parallel")
    return out


def flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}{k}."))
        return out or {prefix.rstrip("."): {}}
    return {prefix.rstrip("."): d}


# ------------------------------------------------------------------ snapshots
@pytest.mark.parametrize("path", turns.fixture_templates(), ids=lambda p: p.stem)
def test_analysis_matches_snapshot(path: Path) -> None:
    snapshot = path.with_name(path.stem + ".expected.json")
    if not snapshot.is_file():
        pytest.skip(f"no snapshot {snapshot.name} (run tools/update_expectations.py)")
    stored = json.loads(snapshot.read_text(encoding="utf-8"))
    current = template(path).analysis.to_dict()
    for key in VOLATILE:
        stored.pop(key, None)
        current.pop(key, None)
    if current != stored:
        a, b = flatten(stored), flatten(current)
        diff = [f"{k}: {a.get(k, '<missing>')!r} -> {b.get(k, '<missing>')!r}"
                for k in sorted(set(a) | set(b)) if a.get(k, "<missing>") != b.get(k, "<missing>")]
        pytest.fail(f"{snapshot.name} differs from the analysis (stored -> current):\n  " + "\n  ".join(diff))


# ------------------------------------------------------------------ round trips
CASES: dict[tuple[str, str], turns.Case] = {
    (c.path.stem, c.scenario): c for p in turns.fixture_templates() for c in turns.build_cases(p, only=list(ROUND_TRIP))
}


def _round_trip_params() -> list[Any]:
    out = []
    for path in turns.fixture_templates():
        for scenario in expected_scenarios(path.stem):
            why = KNOWN.get((path.stem, scenario))
            marks = [pytest.mark.xfail(strict=True, reason=why)] if why else []
            out.append(pytest.param(path.stem, scenario, id=f"{path.stem}-{scenario}", marks=marks))
    return out


def test_no_unexpected_scenarios() -> None:
    """A scenario the README says a family cannot express must not render either."""
    extra = {k for k in CASES if k[1] not in expected_scenarios(k[0])}
    assert extra == set()


@pytest.mark.parametrize(("name", "scenario"), _round_trip_params())
def test_round_trip(name: str, scenario: str) -> None:
    case = CASES.get((name, scenario))
    assert case is not None, f"{name} no longer renders the {scenario!r} turn in a form the checker can cut out"
    req = template(case.path).apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
    got = req.parse(case.text).to_dict()
    why = turns.compare(case.expected, got, case.text)
    assert why is None, f"{why}\n  text: {case.text!r}\n  got:  {got}"
