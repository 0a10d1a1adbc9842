"""Arrays and objects written as items whose keys are paths (issue 21): ``filters[lang]=en&tags[]=a``.

The spelling (:class:`~autoparser.values.written.KeyPath`) is learned from the template's own
renders (``templates/query_paths.jinja`` and variants of it spelling paths otherwise), and the
reader, the strict parser and the GBNF read and accept what the template writes; paths that do
not continue what is open are plain keys (nothing raises, no text is lost).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from autoparser import ChatTemplate
from autoparser.analysis.layout.encode import encode_call
from autoparser.values.keypaths import PathStack, flatten, split_path
from autoparser.values.written import KeyPath

FIXTURE = Path(__file__).resolve().parent.parent / "templates" / "query_paths.jinja"
SOURCE = FIXTURE.read_text(encoding="utf-8")
# the same format with other path spellings: indexes from 0 or 1, dotted paths
VARIANTS = {
    "empty": (SOURCE, KeyPath("[", "]", "empty")),
    "index0": (SOURCE.replace("pairs(p ~ '[]', x)", "pairs(p ~ '[' ~ loop.index0 ~ ']', x)"), KeyPath("[", "]", "0")),
    "index1": (SOURCE.replace("pairs(p ~ '[]', x)", "pairs(p ~ '[' ~ loop.index ~ ']', x)"), KeyPath("[", "]", "1")),
    "dotted": (SOURCE.replace("pairs(p ~ '[' ~ k ~ ']', x)", "pairs(p ~ '.' ~ k, x)")
               .replace("pairs(p ~ '[]', x)", "pairs(p ~ '.' ~ loop.index0, x)"), KeyPath(".", "", "0")),
}
TOOL = {"type": "function", "function": {"name": "find", "description": "Find things.", "parameters": {
    "type": "object", "required": ["q"], "properties": {
        "q": {"type": "string"}, "n": {"type": "integer"},
        "filters": {"type": "object", "properties": {
            "lang": {"type": "string"}, "depth": {"type": "integer"}, "strict": {"type": "boolean"},
            "scope": {"type": "object", "properties": {"site": {"type": "string"}}}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "rows": {"type": "array", "items": {"type": "object", "properties": {"k": {"type": "string"},
                                                                            "v": {"type": "integer"}}}}}}}}
# (in the schema's order: the GBNF takes that order or the keys sorted)
CASES: list[dict[str, Any]] = [
    {"q": "plain & simple = yes"},
    {"q": "a", "filters": {"lang": "en", "depth": 2, "scope": {"site": "docs [x]"}}},
    {"q": "a", "n": 4, "tags": ["alpha", "b&c"], "ids": [1, 2, 3]},
    {"q": "z", "filters": {"strict": True}, "tags": ["one"]},
    {"q": "e", "filters": {}, "tags": []},
    {"q": "r", "rows": [{"k": "x", "v": 1}, {"k": "y", "v": 2}]},
]


def _template(variant: str) -> ChatTemplate:
    return ChatTemplate.from_string(VARIANTS[variant][0], name=f"query_paths_{variant}")


def _text(tmpl: ChatTemplate, args: dict[str, Any], cid: str = "call00001") -> str:
    layout = tmpl.analysis.tools.layout
    assert layout is not None
    return tmpl.analysis.tools.call_start + encode_call(layout, "find", cid, args)


# ---------------------------------------------------------------- the pure mechanism
def test_flatten_writes_paths() -> None:
    p = KeyPath("[", "]", "0")
    got = list(flatten("f", {"a": 1, "b": {"c": [True, None]}, "e": {}}, p))
    assert got == [("f[a]", 1), ("f[b][c][0]", True), ("f[b][c][1]", None), ("f[e]", {})]
    assert list(flatten("t", ["x"], KeyPath("[", "]", "empty"))) == [("t[]", "x")]
    assert list(flatten("t", ["x"], KeyPath("%", "", "whole"))) == [("t", ["x"])]


def test_split_path() -> None:
    p = KeyPath(".", "", "0")
    assert split_path("tags.0", p, ["tags"]) == ["tags", "0"]
    assert split_path("a.b.c", p, ["a.b"]) == ["a.b", "c"]
    assert split_path("a.b", p, ["a.b"]) is None
    assert split_path("a..b", p, ["a"]) is None         # an empty segment: no path
    assert split_path("f[x", KeyPath(), ["f"]) is None   # unclosed


def _stack(keys_values: list[tuple[str, Any]], props: dict[str, Any], path: KeyPath | None = None) -> Any:
    st = PathStack(path or KeyPath(), props)
    out = []
    for k, v in keys_values:
        text, _ = st.key(k)
        out += [text, json.dumps(v)]
    out.append(st.end())
    return json.loads("".join(out))


def test_stack_nests_and_degrades_to_plain_keys() -> None:
    props = {"f": {"type": "object"}, "t": {"type": "array"}, "q": {"type": "string"}}
    assert _stack([("f[a]", 1), ("f[b][c]", 2), ("t[0]", "x"), ("t[1]", "y")], props) == \
        {"f": {"a": 1, "b": {"c": 2}}, "t": ["x", "y"]}
    # a container reopened after another key, an index out of turn: plain keys, nothing lost
    assert _stack([("f[a]", 1), ("q", "s"), ("f[b]", 2), ("t[1]", "x")], props) == \
        {"f": {"a": 1}, "q": "s", "f[b]": 2, "t[1]": "x"}
    # an array the schema declares is not opened by a member name; an object takes numeric keys
    assert _stack([("t[x]", 1), ("f[0]", 2), ("f[7]", 3)], props) == {"t[x]": 1, "f": {"0": 2, "7": 3}}
    assert _stack([], props) == {}


# ---------------------------------------------------------------- learned from the renders
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_spelling_is_learned(variant: str) -> None:
    layout = _template(variant).analysis.tools.layout
    assert layout is not None and layout.args.items is not None and layout.args.items.values is not None
    assert layout.args.items.values.path == VARIANTS[variant][1]


def test_to_dict_shows_the_path_only_where_there_is_one() -> None:
    values = ChatTemplate.from_file(FIXTURE).analysis.to_dict()["tools"]["layout"]["args"]["items"]["values"]
    assert values["path"] == {"open": "[", "close": "]", "arrays": "empty"}
    other = Path(__file__).resolve().parent.parent / "templates" / "ini_sections.jinja"
    assert "path" not in ChatTemplate.from_file(other).analysis.to_dict()["tools"]["layout"]["args"]["items"]["values"]


# ---------------------------------------------------------------- read back: parse, stream, PEG, GBNF
@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("n", range(len(CASES)))
def test_reads_what_the_template_writes(variant: str, n: int) -> None:
    import gbnf_check

    tmpl = _template(variant)
    args = CASES[n]
    if variant == "dotted" and n == 1:
        args = {"q": "a", "filters": {"lang": "en", "depth": 2, "scope": {"site": "docs"}}}
    text = _text(tmpl, args)
    msg = [{"role": "user", "content": "go"}]
    req = tmpl.apply(msg, tools=[TOOL])
    got = req.parse(text).to_dict()["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in got] == [args], text
    rng = random.Random(n)
    s = req.stream()
    deltas, i = [], 0
    while i < len(text):
        step = rng.randint(1, 7)
        deltas += s.feed(text[i:i + step])
        i += step
    deltas += s.finish()
    streamed = "".join(d["tool_calls"][0]["function"].get("arguments", "") for d in deltas
                       if d.get("tool_calls"))
    assert streamed == got[0]["function"]["arguments"]
    strict = req.parse_strict(text).to_dict()["tool_calls"]
    assert [json.loads(c["function"]["arguments"]) for c in strict] == [args]
    if args.get("rows"):
        return   # (arrays of objects in path form are read, not generated)
    forced = tmpl.apply(msg, tools=[TOOL], tool_choice="required")
    assert forced.gbnf is not None and gbnf_check.accepts(forced.gbnf, text), text


@pytest.mark.parametrize("junk", [
    "q=a&filters[lang]=en&q2=x&filters[depth]=2",   # reopened after another key
    "q=a&tags[]=x&tags[oops]=y",                     # a member name in an array
    "q=a&filters[lang=en",                           # unclosed segment
    "q=a&filters[scope][site]=docs&filters[",         # cut inside a path key
    "q=a&ids[]=1&ids[]=",                             # cut after the separator
])
def test_malformed_paths_never_raise_nor_lose_text(junk: str) -> None:
    tmpl = _template("empty")
    req = tmpl.apply([{"role": "user", "content": "go"}], tools=[TOOL])
    text = "<|request|>/tools/find?" + junk
    whole = req.parse(text)
    s = req.stream()
    deltas = [d for ch in text for d in s.feed(ch)] + s.finish()
    streamed = "".join(d["tool_calls"][0]["function"].get("arguments", "") for d in deltas if d.get("tool_calls"))
    calls = whole.to_dict().get("tool_calls") or []
    if calls:
        args = calls[0]["function"]["arguments"]
        assert streamed == args
        json.loads(args)
    blob = json.dumps(whole.to_dict(), ensure_ascii=False)
    for piece in ("en", "docs", "x"):
        if piece in junk:
            assert piece in blob
