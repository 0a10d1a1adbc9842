"""The Python-literal readers follow Python's string escapes (``ast.literal_eval``), never ``eval``."""

from __future__ import annotations

import ast
import json
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser.values.literal import literal_value
from autoparser.values.pyliteral import python_string_value, python_to_json, string_to_json

# every kind of escape Python knows, the ones it does not (backslash kept), and raw characters
ESCAPES = [
    r"a\nb", r"tab\there", r"back\\slash", r"it\'s", r"say \"hi\"", r"bell\a", r"\b\f\r\v",
    r"\x41\x7e\xe9\xff", r"\u00e9\u20ac\u4e2d", r"\U0001F600\U00010348", r"\N{BULLET}\N{LATIN SMALL LETTER E WITH ACUTE}",
    r"\0", r"\7", r"\101\1012", r"\08", r"\777",
    r"C:\path\to\dir", r"\d+\s*\w", r"\q\z\%", r"\/", r"trailing \ space", "cont\\\nline",
    "raw\ttab", "é😀中", r"\ud83d\ude00", "",
]


@pytest.mark.parametrize("body", ESCAPES)
@pytest.mark.parametrize("quote", ["'", '"'])
def test_escape_table_matches_literal_eval(body: str, quote: str) -> None:
    token = quote + body + quote
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # Python warns about the unknown escapes we read on purpose
        expected = ast.literal_eval(token)
    if body == r"\/" and quote == '"':
        expected = "/"   # a double-quoted string may be JSON: \/ is JSON's escaped slash
    assert python_string_value(body, quote) == expected
    text, end = string_to_json(token + ", rest", 0, quote)
    assert end == len(token)
    assert json.loads(text) == expected.encode("utf-16", "surrogatepass").decode("utf-16")   # pairs joined


@pytest.mark.parametrize(("body", "kept"), [(r"\xZZ", r"\xZZ"), (r"\x4", r"\x4"), (r"\N{NO SUCH NAME}", r"\N{NO SUCH NAME}"),
                                            (r"ok\n\u12", "ok\n\\u12")])
def test_escapes_python_refuses_are_kept(body: str, kept: str) -> None:
    assert python_string_value(body) == kept
    assert json.loads(string_to_json("'" + body + "'", 0, "'")[0]) == kept


def test_text_cut_short() -> None:
    assert python_string_value("cut\\") == "cut"   # a lone backslash at the end: the escape never came
    assert json.loads(string_to_json("'cut short", 0, "'")[0]) == "cut short"
    assert json.loads(string_to_json("'cut\\'", 0, "'")[0]) == "cut'"   # \' is a quote, not the end


def test_never_eval() -> None:
    marker: list[int] = []
    globals()["_side_effect"] = marker
    body = "' + __import__('builtins').globals().get('_side_effect').append(1) + '"
    python_string_value(body.replace("'", "\\'") + "\\n")
    assert marker == []


TEXT = st.text(st.characters(codec="utf-8"), max_size=40)


@settings(max_examples=300, deadline=None)
@given(TEXT)
def test_repr_reads_back(s: str) -> None:
    r = repr(s)
    assert python_string_value(r[1:-1], r[0]) == s
    text, end = string_to_json(r, 0, r[0])
    assert end == len(r) and json.loads(text) == s
    assert json.loads(python_to_json(repr({"k": s, "flag": True, "none": None}))) == {"k": s, "flag": True, "none": None}


@settings(max_examples=200, deadline=None)
@given(TEXT, TEXT)
def test_literal_reader_reads_reprs(a: str, b: str) -> None:
    assert literal_value(repr({"a": a, "b": [b]}), ("'", '"'), ":") == {"a": a, "b": [b]}
    assert literal_value(f"(a={a!r}, b={b!r})", ("'", '"'), "=") == {"a": a, "b": b}
