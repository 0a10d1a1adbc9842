"""Property tests: malformed model output never breaks ``parse`` or ``stream`` (ISSUE 7.2).

Every example is a template (all fixtures plus a fixed sample of ``../shared/templates``),
one valid generated text for it (``turns.build_cases``) and a mutation of that text: a
marker occurrence dropped or duplicated, whitespace inserted, a closing marker planted inside
a string argument, a call moved into the reasoning block, the whole text replaced by random
unicode (with markers sprinkled in), or a truncation. One further random mutation may follow.

Properties, each its own hypothesis test:

* ``parse`` and ``parse(partial=True)`` never raise;
* streaming in random chunks never raises and the merged deltas equal ``parse(text).to_dict()``;
* the arguments of every call are valid JSON;
* no text is lost: once every marker piece is cut out of the input, every remaining word
  (three characters or more) is found in the content, the reasoning, a call's name, id or
  arguments (raw or decoded).

A hang (no result within ``HANG_LIMIT``) fails the example. Minimal cases of the bugs the
properties found are tests at the end of this file. The number of examples tried is printed
after the module (``-s``).
"""

from __future__ import annotations

import contextlib
import functools
import html
import itertools
import json
import re
import signal
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import turns
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autoparser import ChatTemplate, Message, Request, merge_deltas

# third-party templates with tools (a fixed sample; missing ones are skipped)
SHARED_SAMPLE = (
    "Qwen3-Coder", "Qwen-Qwen3-0.6B", "GLM-4.6", "MiniMax-M2", "mistralai-Mistral-Nemo-Instruct-2407",
    "meta-llama-Llama-3.1-8B-Instruct", "deepseek-ai-DeepSeek-V3.1", "Kimi-K2-Instruct",
    "google-gemma-4-31B-it", "NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "ByteDance-Seed-OSS",
    "LFM2.5-8B-A1B",
)
EXAMPLES = 100         # per (property, mutation)
COUNTS: Counter[str] = Counter()


def shared_paths() -> list[Path]:
    shared = turns.shared_dir()
    if shared is None:
        return []
    paths = [shared / "templates" / f"{name}.jinja" for name in SHARED_SAMPLE]
    return [p for p in paths if p.is_file()]


def cases_with_tools(path: Path) -> list[turns.Case]:
    """Cases for a template that cannot render a turn without tools (``turns`` finds none).

    The end of turn is left on the text: a model that writes its stop marker is valid output.
    """
    try:
        ref = turns.Reference(path.read_text(encoding="utf-8"))
    except Exception:
        return []
    out = []
    for sc in turns.SCENARIOS:
        for history in turns.HISTORIES:
            try:
                text, _why, variant = turns.expected_text(ref, history, sc.msg, turns.TOOLS, {})
            except Exception:
                continue
            if text is not None and variant is not None:
                out.append(turns.Case(path, sc.name, history, turns.TOOLS, {}, text, variant, corpus=True))
                break
    return out


def build_all() -> list[turns.Case]:
    cases = [c for p in turns.fixture_templates() for c in turns.build_cases(p)]
    for p in shared_paths():
        cases += turns.build_cases(p, corpus=True) or cases_with_tools(p)
    return cases


CASES = build_all()


# ---------------------------------------------------------------- per-case context
@functools.cache
def template(path: Path) -> ChatTemplate:
    return ChatTemplate.from_file(path, bos_token=turns.BOS, eos_token=turns.EOS)


def _strings(x: Any) -> Iterator[str]:
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            yield from _strings(v)


def _piece_pattern(piece: str) -> str:
    """A marker piece as a regex: digits stand for any index, ``\\x03`` for varying text, ``\\x04`` for
    a tool name (``markers.NAME_WILDCARD``: ``</NAME>``), ``\\x05`` for header fields (``markers.HEADER``);
    white space may come between a tag and what is next to it (``</string> </value>``, as the parser reads it)."""
    return r"\s*".join(_piece_part(p) for p in re.split(r"(?<=>)(?=.)|(?<=.)(?=<)", piece))


def _piece_part(piece: str) -> str:
    out = []
    for part in re.split(r"(\d+|\x03|\x04|\x05)", piece):
        if part == "\x04":
            out.append(r"[\w.:-]+")
        elif part == "\x03":
            out.append(r"[^<>\n]*?")
        elif part == "\x05":
            out.append(r"(?:[^<>\n{]|<\|\w{1,20}\|>){0,80}?")
        elif part.isdigit():
            out.append(r"\d+")
        elif part:
            out.append(re.escape(part))
    return "".join(out)


@dataclass
class Subject:
    """One case with its request and the marker strings its mutations and checks use."""

    case: turns.Case
    req: Request
    markers: tuple[str, ...]      # dropped, duplicated and sprinkled
    closers: tuple[str, ...]      # planted inside string arguments
    pieces: tuple[str, ...]       # every marker piece, cut out before the no-loss check
    strip: re.Pattern[str]        # ... as one pattern
    tags: re.Pattern[str]         # pieces and closers that look like markers (``<``, ``[``, ``|`` in them)
    call_text: str                # this template's one-call output, for moving a call into reasoning
    arg_values: tuple[str, ...]   # string argument values as written in the text

    @property
    def text(self) -> str:
        return self.case.text


@functools.cache
def subject(index: int) -> Subject:
    case = CASES[index]
    tmpl = template(case.path)
    req = tmpl.apply(case.history, tools=case.tools, chat_template_kwargs=case.kwargs or None)
    a = tmpl.analysis
    markers = tuple(dict.fromkeys([*a.markers(), *req.stop]))
    t = a.tools
    closing = [a.reasoning.end, a.content.end, t.section_end, t.call_end, t.call_close, *a.end_of_turn,
               *((t.tagged.value_end,) if t.tagged else ())]
    closers = tuple(dict.fromkeys(["</tool_call>", *(c.strip() for c in closing if c.strip()), *req.stop]))
    d = a.to_dict()
    stray = req.plan.tools.stray_closers if req.plan.tools else ()   # closers dropped as markers too
    # a turn envelope's keys, as written, are its markup (``"thought":`` frames the reasoning as ``<think>`` does)
    keys = [json.dumps(k) for k in _strings(d.get("envelope"))]
    raw = [*_strings(d["reasoning"]), *_strings(d["content"]), *_strings(d["tools"]), *a.end_of_turn,
           a.assistant_header, *req.stop, *stray, turns.BOS, turns.EOS, *keys]
    pieces = sorted({p for s in raw for p in s.split()}, key=lambda p: (-len(p), p))   # (one order in every process)
    strip = re.compile("|".join(_piece_pattern(p) for p in pieces) or r"(?!x)x")
    tagged = {p for p in [*pieces, *closers] if any(ch in p for ch in "<>[]|｜")}
    tags = re.compile("|".join(_piece_pattern(p) for p in sorted(tagged, key=lambda p: (-len(p), p))) or r"(?!x)x")
    tool = next((c for c in CASES if c.path == case.path and c.scenario == "tool"), None)
    values = []
    for c in case.expected.get("tool_calls") or []:
        for v in _strings(turns.arguments_of(c)):
            for form in (v, json.dumps(v, ensure_ascii=False)[1:-1], json.dumps(v)[1:-1]):
                if len(form) > 1 and form in case.text:
                    values.append(form)
                    break
    # (sorted: the draws are the same in every process, whatever order the analysis lists markers in)
    return Subject(case, req, tuple(sorted(markers)), tuple(sorted(closers)), tuple(pieces), strip, tags,
                   tool.text.strip() if tool else "", tuple(values))


def occurrences(text: str, needles: tuple[str, ...]) -> list[tuple[int, str]]:
    return [(m.start(), n) for n in needles for m in re.finditer(re.escape(n), text)]


# ---------------------------------------------------------------- mutations
Mutation = Callable[[st.DrawFn, Subject, str], str]


def drop_marker(draw: st.DrawFn, s: Subject, text: str) -> str:
    found = occurrences(text, s.markers)
    if not found:
        return text
    i, m = draw(st.sampled_from(found))
    return text[:i] + text[i + len(m):]


def duplicate_marker(draw: st.DrawFn, s: Subject, text: str) -> str:
    """A marker written twice in place, or a copy of it somewhere else."""
    found = occurrences(text, s.markers)
    if not found:
        return text
    i, m = draw(st.sampled_from(found))
    at = i if draw(st.booleans()) else draw(st.integers(0, len(text)))
    return text[:at] + m + text[at:]


def insert_whitespace(draw: st.DrawFn, s: Subject, text: str) -> str:
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.text(" \t\r\n", min_size=1, max_size=3)) + text[at:]
    return text


def closer_in_argument(draw: st.DrawFn, s: Subject, text: str) -> str:
    """A closing marker (``</tool_call>``, ``</parameter>``, ...) inside a string argument."""
    spans = [(i, i + len(v)) for v in s.arg_values for i in (text.find(v),) if i >= 0]
    closer = draw(st.sampled_from(s.closers))
    if spans:
        a, b = draw(st.sampled_from(spans))
        at = draw(st.integers(a + 1, b - 1))
    else:
        at = draw(st.integers(0, len(text)))
    return text[:at] + closer + text[at:]


def call_in_reasoning(draw: st.DrawFn, s: Subject, text: str) -> str:
    """The template's call text inside the reasoning (and gone from after it, when it was there)."""
    i = text.find(turns.REASONING)
    if i < 0 or not s.call_text:
        return text
    tail = text[i + len(turns.REASONING):]
    if tail.rstrip().endswith(s.call_text):
        tail = tail.rstrip()[: -len(s.call_text)]
    at = draw(st.integers(i, i + len(turns.REASONING)))
    return text[:at] + s.call_text + text[at:i + len(turns.REASONING)] + tail


def random_text(draw: st.DrawFn, s: Subject, text: str) -> str:
    """Unicode text with markers and pieces of the valid text sprinkled in."""
    part = st.one_of(st.text(max_size=12), st.sampled_from(s.markers) if s.markers else st.text(max_size=3),
                     st.tuples(st.integers(0, len(text)), st.integers(0, 40)).map(lambda p: text[p[0]:p[0] + p[1]]))
    return "".join(draw(st.lists(part, max_size=10)))


def truncate(draw: st.DrawFn, s: Subject, text: str) -> str:
    return text[:draw(st.integers(0, len(text)))]


MUTATIONS: dict[str, Mutation] = {
    "drop": drop_marker, "duplicate": duplicate_marker, "whitespace": insert_whitespace,
    "closer_in_arg": closer_in_argument, "call_in_reasoning": call_in_reasoning,
    "random_text": random_text, "truncate": truncate,
}


def applicable(kind: str, s: Subject) -> bool:
    if kind in ("drop", "duplicate"):
        return bool(occurrences(s.text, s.markers))
    if kind == "closer_in_arg":
        return bool(s.arg_values)
    if kind == "call_in_reasoning":
        return bool(s.call_text) and turns.REASONING in s.text
    return True


@functools.cache
def subjects_for(kind: str) -> list[int]:
    return [i for i in range(len(CASES)) if applicable(kind, subject(i))]


class Example:
    """A mutated text and the chunks it is streamed in."""

    def __init__(self, subject: Subject, text: str, chunks: list[str]) -> None:
        self.subject, self.text, self.chunks = subject, text, chunks

    def __repr__(self) -> str:
        cuts = list(itertools.accumulate(len(c) for c in self.chunks))[:-1]
        return f"Example({self.subject.case.id}, text={self.text!r}, cuts={cuts})"


def split_points(draw: st.DrawFn, n: int) -> list[int]:
    """Cut points: a few anywhere, sometimes a run of one-character chunks."""
    if n < 2:
        return []
    cuts = set(draw(st.lists(st.integers(1, n - 1), max_size=12)))
    if draw(st.booleans()):
        a = draw(st.integers(1, n - 1))
        cuts.update(range(a, draw(st.integers(a, min(n, a + 40)))))
    return sorted(cuts)


@st.composite
def examples(draw: st.DrawFn, kind: str) -> Example:
    s = subject(draw(st.sampled_from(subjects_for(kind))))
    text = MUTATIONS[kind](draw, s, s.text)
    if draw(st.integers(0, 3)) == 0:
        text = MUTATIONS[draw(st.sampled_from(sorted(MUTATIONS)))](draw, s, text)
    bounds = [0, *split_points(draw, len(text)), len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds) if b > a]
    return Example(s, text, chunks)


# ---------------------------------------------------------------- checks
WORD = re.compile(r"[^\s{}\[\]\",:']+")


def _unescape(word: str) -> str:
    """JSON (and Python) string escapes in a word decoded, as far as they decode."""
    def one(m: re.Match[str]) -> str:
        try:
            return json.loads(f'"{m.group(0)}"')
        except ValueError:
            return m.group(0)
    return re.sub(r"\\(?:u[0-9a-fA-F]{4}(?:\\u[0-9a-fA-F]{4})?|.)", one, word)


def kept_text(msg: Message) -> str:
    """Everything the message holds: content, reasoning, names, ids, raw and decoded arguments."""
    parts = [msg.content or "", msg.reasoning_content or ""]
    for c in msg.tool_calls:
        parts += [c.name, c.id, c.arguments]
        try:
            args = json.loads(c.arguments)
        except ValueError:
            continue
        parts += [json.dumps(args, ensure_ascii=False), repr(args), *_strings(args), *_keys(args)]
    return "\n".join(parts)


def _keys(x: Any) -> Iterator[str]:
    if isinstance(x, dict):
        for k, v in x.items():
            yield k
            yield from _keys(v)
    elif isinstance(x, list):
        for v in x:
            yield from _keys(v)


def marker_prefix_at_end(s: Subject, text: str) -> int:
    """Length of the longest start of a marker piece the text ends with (a marker cut short)."""
    return max((k for p in s.pieces for k in range(len(p) - 1, 0, -1) if text.endswith(p[:k])), default=0)


def lost_words(s: Subject, text: str, msg: Message) -> list[str]:
    """Words of ``text`` (markers cut out) that the message does not hold anywhere.

    Not checked, as the output was cut short there: the start of a marker the text ends with;
    when the message is truncated, the word the text ends in; and when it ends inside a call,
    the call's unfinished last member (after the last ``,{[(``: a key without its value, or a
    number cut short, has no place in JSON arguments); a word in a broken key (``mangled_keys``). A word counts as kept as written,
    JSON-unescaped (once, or twice for arguments written inside a JSON string, or after its
    character references are decoded), percent-decoded, or without its backslashes (escape syntax).
    """
    kept = kept_text(msg)
    # (a percent escape is kept whole: the markers' pattern may hold digits, ``%2C`` is no marker)
    rest = re.sub(f"(%[0-9A-Fa-f]{{2}})|(?:{s.strip.pattern})", lambda m: m.group(1) or " " * len(m.group()), text)
    rest = rest[:len(rest) - marker_prefix_at_end(s, rest)]
    end = len(rest)
    if msg.truncated and any(c.truncated for c in msg.tool_calls):
        cut = max(text.rfind(ch, 0, len(rest.rstrip())) for ch in ",{[(")   # not in a marker it ends with
        end = cut if cut >= 0 else end
    lost = []
    keys = mangled_keys(s, text)
    for m in WORD.finditer(rest):
        if m.end() > end or (msg.truncated and m.end() == len(rest)):
            continue
        if any(a <= m.start() < b for a, b in keys):
            continue
        word = m.group()
        forms = (word, _unescape(word), _unescape(_unescape(word)), word.replace("\\", ""),   # twice: JSON in a string
                 _unescape(html.unescape(word).strip("\"'")),     # JSON written with character references
                 urllib.parse.unquote(word), urllib.parse.unquote_plus(word))   # percent-encoded (query strings)
        # a word may end in the first backslash of an escape it does not hold whole (``\\"``)
        if len(word) >= 3 and not any(w in kept or w.rstrip("\\") in kept for w in forms) \
                and not _straddles(word, kept):
            lost.append(word)
    return lost


def _straddles(word: str, kept: str) -> bool:
    """The word runs across the end of one field into the next (``<|invoke|>00)``: the call's name
    ``00``, then ``)`` as content): both of its pieces are kept, each in its field."""
    return any(word[:k] in kept.split("\n") and word[k:] in kept for k in range(1, len(word)))


def stream(req: Request, chunks: list[str]) -> dict[str, Any]:
    parser = req.stream()
    deltas: list[dict[str, Any]] = []
    for chunk in chunks:
        deltas.extend(parser.feed(chunk))
    deltas.extend(parser.finish())
    return merge_deltas(deltas)


# ---------------------------------------------------------------- mangled keys
_KEY = re.compile(r"""(["'])((?:(?!\1)[^\\])*)\1(?=\s*:)""")


def mangled_keys(s: Subject, text: str) -> list[tuple[int, int]]:
    """Spans of the JSON keys in ``text`` that whitespace or a marker broke (``"argu\\nments"``).

    Such a key of a call object is read as the member it stands for (its arguments, under
    whatever key), and the key itself is not kept: documented behaviour, not lost text.
    """
    return [m.span(2) for m in _KEY.finditer(text)
            if s.tags.search(m.group(2)) or any(c.isspace() for c in m.group(2))]


class Hang(BaseException):
    """The parser did not return in time (not an ``Exception``: the parser's handlers must not catch it)."""


HANG_LIMIT = 5.0   # seconds; a parse of these texts takes milliseconds


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``Hang`` in the block after ``seconds`` (POSIX main thread; elsewhere no limit)."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(_signum: int, _frame: Any) -> None:
        raise Hang(f"no result after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@contextlib.contextmanager
def returns(s: Subject) -> Iterator[None]:
    """The block's parsing must return: a hang fails the example, or counts as a known issue."""
    try:
        with time_limit(HANG_LIMIT):
            yield
    except Hang:
        raise AssertionError(f"parser did not return within {HANG_LIMIT} s") from None


# ---------------------------------------------------------------- properties
KINDS = sorted(MUTATIONS)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module", autouse=True)
def report() -> Iterator[None]:
    """Print how many examples the properties tried (``pytest -s`` shows it)."""
    yield
    per = ", ".join(f"{k} {v}" for k, v in sorted(COUNTS.items()))
    print(f"\nmalformed-output properties: {sum(COUNTS.values())} examples ({per})")


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(data=st.data())
def test_parse_never_raises(kind: str, data: st.DataObject) -> None:
    ex = data.draw(examples(kind), label="example")
    COUNTS["never_raises"] += 1
    with returns(ex.subject):
        ex.subject.req.parse(ex.text)
        ex.subject.req.parse(ex.text, partial=True)


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(data=st.data())
def test_stream_equals_parse(kind: str, data: st.DataObject) -> None:
    ex = data.draw(examples(kind), label="example")
    COUNTS["stream_equals_parse"] += 1
    with returns(ex.subject):
        parsed = ex.subject.req.parse(ex.text)
        streamed = stream(ex.subject.req, ex.chunks)
        assert streamed == parsed.to_dict()


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(data=st.data())
def test_arguments_are_json(kind: str, data: st.DataObject) -> None:
    ex = data.draw(examples(kind), label="example")
    COUNTS["arguments_json"] += 1
    calls: list[Any] = []
    with returns(ex.subject):
        calls = [c for partial in (False, True) for c in ex.subject.req.parse(ex.text, partial=partial).tool_calls]
    for call in calls:
        json.loads(call.arguments)


@pytest.mark.parametrize("kind", KINDS)
@SETTINGS
@given(data=st.data())
def test_no_text_lost(kind: str, data: st.DataObject) -> None:
    ex = data.draw(examples(kind), label="example")
    COUNTS["no_text_lost"] += 1
    with returns(ex.subject):
        msg = ex.subject.req.parse(ex.text)
        lost = lost_words(ex.subject, ex.text, msg)
        assert not lost, f"lost {lost[:5]} from {ex.text!r}: {msg.to_dict()}"


def test_sample_covers_templates() -> None:
    """Every fixture with cases is in, and the mutations each have subjects."""
    stems = {c.path.stem for c in CASES}
    assert {p.stem for p in turns.fixture_templates()} <= stems
    assert all(subjects_for(k) for k in KINDS)


# ---------------------------------------------------------------- minimal cases the properties found
def _hermes() -> Request:
    return template(turns.FIXTURES / "hermes_json.jinja").apply(
        [{"role": "user", "content": "hi"}], tools=turns.TOOLS)


def _args(msg: Message) -> list[Any]:
    """Each call's arguments as a value, or the raw string when it is not JSON."""
    out = []
    for c in msg.tool_calls:
        try:
            out.append(json.loads(c.arguments))
        except ValueError:
            out.append(c.arguments)
    return out


def test_raw_newline_in_json_string_is_escaped() -> None:
    msg = _hermes().parse('<tool_call>{"name": "search_docs", "arguments": {"code": "a\nb"}}</tool_call>')
    assert _args(msg) == [{"code": "a\nb"}]
    assert msg.malformed and any("escaped" in w for w in msg.warnings)


def test_stray_backslash_in_json_string_is_kept() -> None:
    msg = _hermes().parse('<tool_call>{"name": "search_docs", "arguments": {"code": "a\\qb \\u00e9"}}</tool_call>')
    assert _args(msg) == [{"code": "a\\qb \u00e9"}]


def test_doubled_call_end_stays_content_in_a_stream() -> None:
    req = _hermes()
    text = '<tool_call>{"name": "get_weather", "arguments": {}}</tool_call></tool_call>'
    assert req.parse(text).content == "</tool_call>"
    assert stream(req, [text[:51], text[51:]]) == req.parse(text).to_dict()


def test_json_call_breaking_after_its_name() -> None:
    """The call is announced (a stream has sent its header); the broken member is content."""
    req = _hermes()
    text = '<tool_call>{"name": "get_weather", "arguments": {"unit":x}}</tool_call>'
    msg = req.parse(text)
    assert [c.name for c in msg.tool_calls] == ["get_weather"] and _args(msg) == [{}]
    assert msg.content == '"unit":x}}</tool_call>' and msg.malformed
    assert stream(req, list(text)) == msg.to_dict()


def test_name_as_key_with_a_scalar_value_is_content() -> None:
    req = template(turns.FIXTURES / "name_as_key.jinja").apply([{"role": "user", "content": "hi"}], tools=turns.TOOLS)
    msg = req.parse('<|tools_prefix|>[{"location": "Paris, France", "unit": "celsius"}]<|tools_suffix|>')
    assert msg.tool_calls == []
    assert msg.content is not None and '"location": "Paris, France", "unit": "celsius"' in msg.content


def test_name_as_key_extra_member_is_content() -> None:
    req = template(turns.FIXTURES / "name_as_key.jinja").apply([{"role": "user", "content": "hi"}], tools=turns.TOOLS)
    msg = req.parse('<|tools_prefix|>[{"get_weather": {"location": "Paris"}, "unit": "celsius"}]<|tools_suffix|>')
    assert _args(msg) == [{"location": "Paris"}]
    assert msg.content == '"unit": "celsius"' and msg.malformed


def test_tagged_value_opening_with_two_newlines_in_a_stream() -> None:
    req = template(turns.FIXTURES / "xml_params.jinja").apply([{"role": "user", "content": "hi"}], tools=turns.TOOLS)
    text = "<tool_call>\n<function=get_weather>\n<parameter=unit>\n\ncelsius\n</parameter>\n</function>\n</tool_call>"
    assert _args(req.parse(text)) == [{"unit": "\ncelsius"}]
    for cut in range(1, len(text)):
        assert stream(req, [text[:cut], text[cut:]]) == req.parse(text).to_dict(), cut


def test_arguments_under_a_mangled_or_other_key() -> None:
    for key in ("argu\nments", "parameters"):
        call = {"name": "get_weather", key: {"location": "Paris"}}
        msg = _hermes().parse(f"<tool_call>{json.dumps(call)}</tool_call>".replace("\\n", "\n"))
        assert _args(msg) == [{"location": "Paris"}] and msg.malformed, key


def test_unknown_call_members_are_content() -> None:
    msg = _hermes().parse('<tool_call>{"name": "get_weather", "arguments": {"location": "Paris"}, '
                          '"type": "function", "note": "x y"}</tool_call>')
    assert _args(msg) == [{"location": "Paris"}]
    assert msg.content == '"note": "x y"'       # "type" is a recognised envelope member


def _engine_parser(tools: Any) -> Callable[[str], Message]:
    """``parse`` of a bare engine for a tool format (formats no fixture template has)."""
    from autoparser.analysis.model import Analysis
    from autoparser.plan import RequestOptions, make_plan
    from autoparser.runtime.engine import Engine

    declared = tuple({"type": "function", "function": {"name": n}} for n in ("get_weather", "search_docs"))
    plan = make_plan(Analysis(tools=tools), RequestOptions(tools=declared), prompt="")

    def parse(text: str) -> Message:
        engine = Engine(plan)
        engine.feed(text)
        engine.finish()
        return engine.msg
    return parse


def _literal_request() -> Callable[[str], Message]:
    """Gemma 4 style calls (``call:NAME{k:<|"|>v<|"|>}``), as the analysis derives them."""
    from autoparser.analysis.model import LiteralArgs, ToolFormat

    return _engine_parser(ToolFormat(
        style="tagged", call_start="<|tool_call>", section_end="<|tool_response>", name_prefix="call:",
        args="literal", call_close="<tool_call|>",
        literal=LiteralArgs(open="{", close="}", kv_sep=":", quotes=('<|"|>', '"', "'"))))


def _pythonic_request() -> Callable[[str], Message]:
    """LFM2 style calls (``[NAME(k='v'), ...]``), as the analysis derives them."""
    from autoparser.analysis.model import LiteralArgs, ToolFormat

    return _engine_parser(ToolFormat(
        style="tagged", section_start="<|tool_call_start|>[", section_end="]<|tool_call_end|>", separator=", ",
        args="literal", literal=LiteralArgs(open="(", close=")", kv_sep="=", quotes=("'", '"'))))


def test_unclosed_literal_ends_at_the_call_end() -> None:
    parse = _literal_request()
    msg = parse('<|tool_call>call:get_weather{location:<|"|>Paris<|"|>,unit:<|"|>celsius}<tool_call|>Hello there')
    assert _args(msg) == [{"location": "Paris", "unit": "celsius}"}]
    assert msg.content == "Hello there" and msg.malformed


def test_literal_cut_short_keeps_what_it_holds() -> None:
    parse = _literal_request()
    msg = parse('<|tool_call>call:get_weather{location:<|"|>Paris<|"|>,unit:<|"|>cel')
    assert _args(msg) == [{"location": "Paris", "unit": "cel"}] and msg.truncated


def test_literal_array_closed_by_brace_returns() -> None:
    """A literal array closed by the wrong bracket ({k:[1, 2}) once made the literal reader loop forever."""
    if not hasattr(signal, "setitimer"):
        pytest.skip("needs SIGALRM to stop a loop")
    parse = _literal_request()
    text = "<|tool_call>call:get_weather{tags:[1, 2}<tool_call|>"
    try:
        with time_limit(2.0):
            msg = parse(text)
    except Hang:
        raise AssertionError("parse did not return") from None
    assert _args(msg) == [{"tags": [1, 2]}] and msg.malformed


def test_stray_bracket_in_literal_keeps_the_next_call() -> None:
    parse = _pythonic_request()
    msg = parse("<|tool_call_start|>[get_weather(location='Paris', u[nit='c'), "
                "search_docs(query='tool parsing')]<|tool_call_end|>")
    assert [c.name for c in msg.tool_calls] == ["get_weather", "search_docs"]
    assert _args(msg) == [{"location": "Paris", "u[nit": "c"}, {"query": "tool parsing"}] and msg.malformed


def test_marker_inside_json_arguments_keeps_the_member() -> None:
    req = template(turns.FIXTURES / "kimi_sections.jinja").apply([{"role": "user", "content": "hi"}], tools=turns.TOOLS)
    msg = req.parse('<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0'
                    '<|tool_call_argument_begin|>{"location": <|tool_call_end|>"Paris"}<|tool_call_end|>'
                    '<|tool_calls_section_end|>')
    assert _args(msg) == [{}] and msg.malformed
    assert msg.content is not None and msg.content.startswith('"location": <|tool_call_end|>"Paris"}')
