"""diff/split.py: marker-safe common prefixes and suffixes, and the MARKER pattern.

The analysis diffs paired renderings; a cut that falls inside ``<tool_call>`` or
``[TOOL_CALLS]`` would hand half a marker to one side. These tests pin the
marker boundary fixing on the markers real families use, and check the two
invariants with generated strings: the shared part really is shared, and no
marker is ever split.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autoparser.diff.split import (
    MARKER,
    common_prefix_len,
    common_suffix_len,
    first_marker,
    fix_prefix_end,
    fix_suffix_start,
    last_marker,
    markers_in,
    shared_prefix,
    shared_suffix,
)

# Markers from the families the fixtures imitate.
MARKERS = [
    "<tool_call>", "</tool_call>", "<tool_response>", "[TOOL_CALLS]", "[TOOL_RESULTS]", "[CALL_ID]", "[ARGS]",
    "<｜tool▁sep｜>", "<｜tool▁call▁begin｜>", "<｜tool▁calls▁begin｜>", "<|im_end|>", "<|im_start|>",
    "<parameter=location>", "<parameter=unit>", "</parameter>", "<function=get_weather>", "[/INST]",
    "<|tool_call_begin|>", "<|tool_calls_section_begin|>", "<|START_ACTION|>", "<|START_RESPONSE|>",
]


def _splits(text: str, cut: int) -> bool:
    """True when ``cut`` falls strictly inside a marker of ``text``."""
    return any(m.start() < cut < m.end() for m in MARKER.finditer(text))


# ------------------------------------------------------------------ MARKER
@pytest.mark.parametrize("marker", MARKERS)
def test_marker_matches_whole_family_markers(marker: str) -> None:
    """Each family marker is recognised whole, also when glued to text on both sides."""
    assert MARKER.fullmatch(marker)
    assert markers_in(f"abc{marker}def") == [marker]


@pytest.mark.parametrize("text", ["[1, 2, 3]", "[tool]", "a <> b", "<a\nb>", "plain text", "x[e]y"])
def test_marker_ignores_non_markers(text: str) -> None:
    """JSON arrays, lower-case brackets, empty or multi-line brackets are not markers."""
    assert markers_in(text) == []
    assert first_marker(text) is None
    assert last_marker(text) is None


def test_markers_in_order_and_first_last() -> None:
    """Markers come out left to right; first/last pick the ends of a marker run."""
    text = '[TOOL_CALLS]get_weather[CALL_ID]abc123XYZ[ARGS]{"location": "Paris"}</s>'
    assert markers_in(text) == ["[TOOL_CALLS]", "[CALL_ID]", "[ARGS]", "</s>"]
    first, last = first_marker(text), last_marker(text)
    assert first is not None and first.group() == "[TOOL_CALLS]" and first.start() == 0
    assert last is not None and last.group() == "</s>" and last.end() == len(text)


def test_marker_unicode_deepseek_run() -> None:
    """A run of fullwidth-bar markers splits into its markers, with the glued word between them kept out."""
    text = "<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather"
    assert markers_in(text) == ["<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"]


# ------------------------------------------------------------------ common lengths
def test_common_lengths_are_plain_character_counts() -> None:
    assert common_prefix_len("<tool_call>", "<tool_response>") == len("<tool_")
    assert common_suffix_len("<tool_call>", "<function_call>") == len("_call>")
    assert common_prefix_len("", "abc") == 0
    assert common_suffix_len("abc", "abc") == 3


# ------------------------------------------------------------------ shared_prefix
@pytest.mark.parametrize(("a", "b", "shared"), [
    # differing inside the marker: cut back to before it
    ("<tool_call>\n{", "<tool_response>\n{", ""),
    ("[TOOL_CALLS][{", "[TOOL_RESULTS][{", ""),
    ("x<｜tool▁calls▁begin｜>", "x<｜tool▁sep｜>", "x"),
    ("<parameter=location>\nParis", "<parameter=unit>\ncelsius", ""),
    ("<parameter=a>", "<parameter=b>", ""),
    ("<|im_end|>\n", "<|im_start|>", ""),
    # differing after a complete marker: the marker stays shared
    ("<tool_call>\n{\"name\"", "<tool_call>\n[", "<tool_call>\n"),
    ("[TOOL_CALLS]get_weather", "[TOOL_CALLS]search", "[TOOL_CALLS]"),
    ("<｜tool▁sep｜>get_weather", "<｜tool▁sep｜>search_docs", "<｜tool▁sep｜>"),
    ("hello world", "hello there", "hello "),
])
def test_shared_prefix_never_splits_a_marker(a: str, b: str, shared: str) -> None:
    n = shared_prefix(a, b)
    assert a[:n] == shared
    assert b.startswith(a[:n])
    assert shared_prefix(b, a) == n


@pytest.mark.parametrize(("a", "b", "shared"), [
    # differing inside the marker: cut forward to after it
    ("x<tool_call>", "y<function_call>", ""),
    ("x[TOOL_CALLS]", "y[FUNC_CALLS]", ""),
    ("A<｜tool▁call▁end｜>", "B<｜tool▁calls▁end｜>", ""),
    ("<parameter=location>", "<parameter=unit>", ""),
    ("1</parameter>", "2</parameter>", "</parameter>"),
    # differing before a complete marker: the marker stays shared
    ("Paris\n</tool_call>", "London\n</tool_call>", "\n</tool_call>"),
    ('{"a": 1}[ARGS]', '{"b": 2}[ARGS]', "}[ARGS]"),
    ("get_weather<｜tool▁sep｜>", "search_docs<｜tool▁sep｜>", "<｜tool▁sep｜>"),
])
def test_shared_suffix_never_splits_a_marker(a: str, b: str, shared: str) -> None:
    n = shared_suffix(a, b)
    assert a[len(a) - n:] == shared
    assert b.endswith(a[len(a) - n:])


# ------------------------------------------------------------------ fix_prefix_end / fix_suffix_start
@pytest.mark.parametrize(("text", "n", "fixed"), [
    ("ab<tool_call>cd", 5, 2),          # inside "<tool_call>": back to its "<"
    ("ab<tool_call>cd", 13, 13),        # right after the marker: unchanged
    ("ab<tool_call>cd", 2, 2),          # right before the marker: unchanged
    ("[TOOL_CALLS][{", 6, 0),           # inside "[TOOL_CALLS]"
    ("[TOOL_CALLS][{", 13, 12),         # after "[TOOL_CALLS][": the open "[" goes back too
    ("<parameter=city>", 11, 0),        # "<parameter=" is not a marker on its own
    ("no markers", 5, 5),
])
def test_fix_prefix_end(text: str, n: int, fixed: int) -> None:
    assert fix_prefix_end(text, n) == fixed


@pytest.mark.parametrize(("text", "start", "fixed"), [
    ("ab<tool_call>cd", 5, 13),         # inside: forward past the ">"
    ("ab<tool_call>cd", 2, 2),          # at the marker's "<": unchanged
    ("ab<tool_call>cd", 13, 13),        # after it: unchanged
    ("x[TOOL_CALLS]", 4, 13),
    ("a<｜tool▁sep｜>b", 3, 13),
    ("a>b", 1, 1),                      # a ">" with nothing opened before is not a marker's end
    ("no markers", 3, 3),
])
def test_fix_suffix_start(text: str, start: int, fixed: int) -> None:
    assert fix_suffix_start(text, start) == fixed


# ------------------------------------------------------------------ properties
_PIECES = st.sampled_from([*MARKERS, "a", "b", "get_weather", "\n", " ", '{"x": 1}', "Paris", "=", ":"])
_TEXT = st.lists(_PIECES, max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(head=_TEXT, a_tail=_TEXT, b_tail=_TEXT)
def test_shared_prefix_properties(head: str, a_tail: str, b_tail: str) -> None:
    """The prefix is common to both, no longer than the raw common prefix, and splits no marker."""
    a, b = head + a_tail, head + b_tail
    n = shared_prefix(a, b)
    assert 0 <= n <= common_prefix_len(a, b)
    assert a[:n] == b[:n]
    assert not _splits(a, n)
    assert not _splits(b, n)


@settings(max_examples=300, deadline=None)
@given(tail=_TEXT, a_head=_TEXT, b_head=_TEXT)
def test_shared_suffix_properties(tail: str, a_head: str, b_head: str) -> None:
    """The suffix is common to both, no longer than the raw common suffix, and splits no marker."""
    a, b = a_head + tail, b_head + tail
    n = shared_suffix(a, b)
    assert 0 <= n <= common_suffix_len(a, b)
    assert a[len(a) - n:] == b[len(b) - n:]
    assert not _splits(a, len(a) - n)
    assert not _splits(b, len(b) - n)
