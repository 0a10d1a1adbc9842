"""A call's id and name written again on each of its rows (a long table: ``ID|NAME|KEY|VALUE``).

The fixture ``templates/call_rows.jinja`` writes one row per argument; nothing names the format:
the layout learner finds the call's id and name inside the separator between two items (the
probes' id and name marks), and the reader takes a row as the same call's only when it writes that
call's id and name again, exactly (a row with another id opens the next call, even of the same
tool). The strict PEG and the GBNF read the same description (any id there).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
import gbnf_check  # noqa: E402

TOOLS = [
    {"type": "function", "function": {"name": "get_weather", "description": "Weather.", "parameters": {
        "type": "object", "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["location"]}}},
    {"type": "function", "function": {"name": "ping", "description": "No arguments.",
                                      "parameters": {"type": "object", "properties": {}}}},
]
HISTORY = [{"role": "user", "content": "Weather?"}]
HEAD = "[[calls]]"


@pytest.fixture(scope="module")
def tmpl() -> ChatTemplate:
    return ChatTemplate.from_file(ROOT / "templates" / "call_rows.jinja", bos_token="<s>", eos_token="</s>")


def _calls(msg: Any) -> list[tuple[str, str, dict[str, Any]]]:
    return [(c["id"], c["function"]["name"], json.loads(c["function"]["arguments"]))
            for c in msg.to_dict().get("tool_calls") or []]


def _streamed(req: Any, text: str) -> Any:
    s = req.stream()
    for ch in text:
        s.feed(ch)
    s.finish()
    return s.message


def test_the_separator_writes_the_call_again(tmpl: ChatTemplate) -> None:
    items = tmpl.analysis.tools.layout.args.items
    assert items is not None and items.sep == "\n\x02|\x01|"
    assert items.empty == "|"


@pytest.mark.parametrize(("text", "want"), [
    # two rows of one call
    (f'{HEAD}\nc1|get_weather|location|"Paris"\nc1|get_weather|days|3',
     [("c1", "get_weather", {"location": "Paris", "days": 3})]),
    # the same tool twice: ids that differ only in their digits are two calls
    (f'{HEAD}\ncall00001|get_weather|location|"Paris"\ncall00002|get_weather|location|"Rome"\n'
     'call00002|get_weather|days|2',
     [("call00001", "get_weather", {"location": "Paris"}), ("call00002", "get_weather", {"location": "Rome", "days": 2})]),
    # a call without arguments (its row writes ``|`` where the arguments go: learned, not lost), then another
    (f'{HEAD}\n1|ping||\n2|get_weather|location|"Oslo"', [("1", "ping", {}), ("2", "get_weather", {"location": "Oslo"})]),
])
def test_rows_read_back(tmpl: ChatTemplate, text: str, want: list[tuple[str, str, dict[str, Any]]]) -> None:
    req = tmpl.apply(HISTORY, tools=TOOLS)
    msg = req.parse(text)
    assert _calls(msg) == want
    assert msg.content is None
    assert _calls(_streamed(req, text)) == want
    assert req.gbnf is not None and gbnf_check.accepts(req.gbnf, text)


def test_a_row_of_another_call_is_not_an_argument(tmpl: ChatTemplate) -> None:
    """A row whose name differs starts the next call, though its id is the same (no merge by id alone)."""
    req = tmpl.apply(HISTORY, tools=TOOLS)
    text = f'{HEAD}\nc1|get_weather|location|"Paris"\nc1|ping||'
    assert _calls(req.parse(text)) == [("c1", "get_weather", {"location": "Paris"}), ("c1", "ping", {})]


def test_turn_markers_sharing_the_brackets(tmpl: ChatTemplate) -> None:
    """``[[/assistant]]`` and nothing the calls write share ``[[``: the turn's end is cut whole."""
    assert tmpl.analysis.tools.section_start == HEAD + "\n"
    req = tmpl.apply(HISTORY, tools=TOOLS)
    msg = req.parse('Checking.\n[[calls]]\nc1|get_weather|location|"Paris"\n[[/assistant]]')
    assert msg.content == "Checking."
    assert _calls(msg) == [("c1", "get_weather", {"location": "Paris"})]
