"""Known assistant turns and the text a model would generate for them (test helper).

The logic follows the team's conformance checker (``../shared/conformance/roundtrip.py``):
render the conversation with a reference Hugging Face-style Jinja environment, once with
the generation prompt and once with the assistant turn appended, cut the turn out after the
prompt (handling prompts that pre-open or pre-close a reasoning block), then strip the
end-of-turn text the server would stop at. Nothing here imports autoparser, so the expected
texts do not depend on the code under test.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import random
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import SandboxedEnvironment

BOS, EOS = "<s>", "</s>"
ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "templates"

Msg = dict[str, Any]


def shared_dir() -> Path | None:
    """The third-party corpus folder (``$AUTOPARSER_SHARED`` if set, else ``../shared``), or None."""
    env = os.environ.get("AUTOPARSER_SHARED")
    candidate = Path(env) if env else Path(__file__).resolve().parents[2] / "shared"
    return candidate if (candidate / "templates").is_dir() else None


def fixture_templates() -> list[Path]:
    return sorted(FIXTURES.glob("*.jinja"))


def corpus_sample(n: int = 40, seed: int = 20240611) -> list[Path]:
    """A deterministic sample of corpus templates whose source handles tools and tool calls."""
    shared = shared_dir()
    if shared is None:
        return []
    candidates = []
    for path in sorted((shared / "templates").glob("*.jinja")):
        source = path.read_text(encoding="utf-8", errors="replace")
        if "tools" in source and "tool_calls" in source:
            candidates.append(path)
    rng = random.Random(seed)
    return sorted(rng.sample(candidates, min(n, len(candidates))))


# ---------------------------------------------------------------- reference renderer
def _tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None,
            sort_keys: bool = False) -> str:
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _raise(msg: str) -> None:
    raise jinja2.exceptions.TemplateError(msg)


class _GenerationTag(Extension):
    """transformers' ``{% generation %}...{% endgeneration %}``: renders its body unchanged."""

    tags = {"generation"}  # noqa: RUF012 - jinja's Extension API

    def parse(self, parser: Any) -> Any:
        next(parser.stream)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


class Reference:
    """A template rendered as transformers does (sandboxed, ``trim_blocks``/``lstrip_blocks``).

    Unlike roundtrip.py, ``tools=None`` is passed on as transformers does, so that a template
    that cannot render without tools (``tools | length``) is not applicable here either.
    """

    def __init__(self, source: str) -> None:
        env = SandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols, _GenerationTag])
        env.filters["tojson"] = _tojson
        env.globals["raise_exception"] = _raise
        env.globals["strftime_now"] = lambda fmt: datetime(2026, 1, 15).strftime(fmt)
        self.tmpl = env.from_string(source)

    def render(self, messages: list[Msg], tools: list[Msg] | None = None, add_generation_prompt: bool = False,
               **kwargs: Any) -> str:
        # transformers passes ``tools`` (None when there are none) and ``documents`` to every render
        ctx = dict(messages=copy.deepcopy(messages), tools=tools, documents=None,
                   add_generation_prompt=add_generation_prompt, bos_token=BOS, eos_token=EOS, **kwargs)
        return self.tmpl.render(**ctx)


# ---------------------------------------------------------------- scenarios
def _fn(name: str, desc: str, props: dict[str, Any], required: list[str]) -> Msg:
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": {
        "type": "object", "properties": props, "required": required}}}


TOOLS = [
    _fn("get_weather", "Get the current weather for a city.", {
        "location": {"type": "string", "description": "City and country"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["location"]),
    _fn("search_docs", "Search the documentation.", {
        "query": {"type": "string"}, "top_k": {"type": "integer"},
        "filters": {"type": "object", "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "exact": {"type": "boolean"}, "since": {"type": ["string", "null"]}}},
        "code": {"type": "string"}}, ["query"]),
]
WEATHER = {"location": "Paris, France", "unit": "celsius"}
SEARCH = {"query": "tool parsing", "top_k": 3}
RICH = {"query": 'naïve café "quoted" 東京 😀 back\\slash', "top_k": 7,
        "filters": {"tags": ["alpha", "beta"], "exact": True, "since": None},
        "code": "def f(x):\n    return {x: [1, 2]}  # it's \"fine\"\n"}
# marker look-alikes inside a string argument
TRICKY = {"query": "close </tool_call> then <tool_call> and {\"name\": \"x\"}",
          "code": "a = '</function>' + \"]\" + '}'\nprint(\"\\\\n\")"}
ESCAPED = {"query": "café 😀 naïve", "top_k": 2}   # written with \u00e9 and \ud83d\ude00 escapes
REASONING = "The user asks about the weather in Paris. I should call the weather tool."
ANSWER = "The capital of France is Paris."
PREAMBLE = "Let me check that for you."


def call(i: int, name: str, args: Any) -> Msg:
    """An HF-style call; nine alphanumerics of id, the shape Mistral's templates insist on."""
    return {"id": f"call{i:05d}", "type": "function", "function": {"name": name, "arguments": args}}


@dataclass(frozen=True)
class Scenario:
    name: str
    needs_tools: bool
    thinking: bool
    msg: Msg


SCENARIOS = [
    Scenario("content", False, False, {"role": "assistant", "content": ANSWER}),
    Scenario("reasoning", False, True, {"role": "assistant", "reasoning_content": REASONING, "content": ANSWER}),
    Scenario("tool", True, False, {"role": "assistant", "content": "", "tool_calls": [call(1, "get_weather", WEATHER)]}),
    Scenario("parallel", True, False, {"role": "assistant", "content": "", "tool_calls": [
        call(1, "get_weather", WEATHER), call(2, "search_docs", SEARCH)]}),
    Scenario("reasoning_tool", True, True, {"role": "assistant", "reasoning_content": REASONING, "content": "",
                                            "tool_calls": [call(1, "get_weather", WEATHER)]}),
    Scenario("content_tool", True, False, {"role": "assistant", "content": PREAMBLE,
                                           "tool_calls": [call(1, "get_weather", WEATHER)]}),
    Scenario("rich_args", True, False, {"role": "assistant", "content": "",
                                        "tool_calls": [call(3, "search_docs", RICH)]}),
    Scenario("tricky_args", True, False, {"role": "assistant", "content": "",
                                          "tool_calls": [call(4, "search_docs", TRICKY)]}),
    Scenario("escaped_args", True, False, {"role": "assistant", "content": "", "tool_calls": [
        call(5, "search_docs", json.dumps(ESCAPED, ensure_ascii=True))]}),
]
SCENARIO_NAMES = [s.name for s in SCENARIOS]

HISTORIES: list[list[Msg]] = [
    [{"role": "system", "content": "You are a helpful assistant."},
     {"role": "user", "content": "What is the weather in Paris?"}],
    [{"role": "user", "content": "What is the weather in Paris?"}],
]


def arguments_of(c: Msg) -> Any:
    """A call's arguments as a value (decoding a JSON string)."""
    args = c["function"]["arguments"]
    return json.loads(args) if isinstance(args, str) else args


def stringify_args(msg: Msg) -> Msg:
    out = copy.deepcopy(msg)
    for c in out.get("tool_calls", []):
        if not isinstance(c["function"]["arguments"], str):
            c["function"]["arguments"] = json.dumps(c["function"]["arguments"], ensure_ascii=False)
    return out


def needles(msg: Msg) -> list[str]:
    found = []
    if msg.get("content"):
        found.append(msg["content"])
    if msg.get("reasoning_content"):
        found.append(msg["reasoning_content"])
    for c in msg.get("tool_calls", []):
        found.append(c["function"]["name"])
    return found


# ---------------------------------------------------------------- cutting out the generated text
# How real models close a reasoning block that the prompt opened (as in roundtrip.py).
REASONING_PAIRS = [
    ("<think>", "\n</think>\n\n"),
    ("<mm:think>", "\n</mm:think>\n\n"),
    ("<seed:think>", "\n</seed:think>\n\n"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|channel>thought", "\n<channel|>"),
    ("[THINK]", "[/THINK]"),
    ("\u25c1think\u25b7", "\u25c1/think\u25b7"),
    ("Here are my reasoning steps:", "\n[BEGIN FINAL RESPONSE]\n"),
]


def after_prefill(prompt: str, full: str, msg: Msg) -> str | None:
    """Model output for a prompt ending with an opened (or empty closed) reasoning block; else None."""
    for opening, closing in REASONING_PAIRS:
        i = prompt.rfind(opening)
        if i < 0:
            continue
        after = prompt[i + len(opening):].strip()
        closed = after == closing.strip()
        if after and not closed:
            continue
        base = prompt[:i]
        if not full.startswith(base):
            continue
        turn = full[len(base):].lstrip()
        if turn.startswith(opening) and closing.strip() in turn:
            head, _, tail = turn.partition(closing.strip())
            if head[len(opening):].strip():
                return None
            turn = tail
        elif turn.startswith(closing.strip()):
            turn = turn[len(closing.strip()):]
        turn = turn.lstrip()
        reasoning = msg.get("reasoning_content") or ""
        if closed:
            return None if reasoning else turn
        if reasoning and reasoning in turn:
            return turn
        return reasoning + closing + turn
    return None


def generated_part(prompt: str, full: str, msg: Msg) -> str | None:
    """The text the model generated after ``prompt``, given the rendered conversation ``full``."""
    if full.startswith(prompt):
        return full[len(prompt):]
    cut = next((i for i, (a, b) in enumerate(zip(prompt, full, strict=False)) if a != b), min(len(prompt), len(full)))
    if not prompt[cut:].strip():
        return full[cut:].lstrip()
    return after_prefill(prompt, full, msg)


def shared_ending(a: str, b: str) -> str:
    """The end both strings share, from the first marker (``<``, ``[``) in it; "" if none."""
    n = 0
    while n < min(len(a), len(b)) and a[-1 - n] == b[-1 - n]:
        n += 1
    shared = a[len(a) - n:]
    if n == len(a):
        return a
    starts = [i for i in (shared.find("<"), shared.find("[")) if i >= 0]
    return shared[min(starts):] if starts and shared[min(starts):].strip() else ""


def end_of_turn(ref: Reference, history: list[Msg], kwargs: dict[str, Any]) -> str:
    """What the template writes after an assistant turn (the server stops there)."""
    probe = {"role": "assistant", "content": "ZQXPROBEZQX"}
    prompt = ref.render(history, add_generation_prompt=True, **kwargs)
    full = ref.render([*history, probe], add_generation_prompt=False, **kwargs)
    if "ZQXPROBEZQX" not in full or generated_part(prompt, full, probe) is None:
        return ""
    eot = full[full.index("ZQXPROBEZQX") + len("ZQXPROBEZQX"):]
    try:
        turn = {"role": "assistant", "content": "", "tool_calls": [call(1, "get_weather", WEATHER)]}
        with_call = ref.render([*history, turn], tools=TOOLS, add_generation_prompt=False, **kwargs)
    except Exception:
        return eot
    if "get_weather" not in with_call[len(prompt) - 40:]:
        return eot
    return shared_ending(eot, with_call) or eot


def strip_end_of_turn(out: str, eot: str) -> str:
    for cut in (eot, EOS):
        if cut and out.endswith(cut):
            return out[: -len(cut)]
    shared = shared_ending(eot, out) if eot else ""
    return out[: len(out) - len(shared)] if shared else out


def expected_text(ref: Reference, history: list[Msg], msg: Msg, tools: list[Msg] | None,
                  kwargs: dict[str, Any]) -> tuple[str | None, str | None, Msg | None]:
    """(generated text, None, rendered variant of msg) or (None, why not applicable, None)."""
    last_err: str | None = None
    already_strings = all(isinstance(c["function"]["arguments"], str) for c in msg.get("tool_calls", []))
    variants = [msg] if already_strings else [msg, stringify_args(msg)]
    for variant in variants:
        try:
            prompt = ref.render(history, tools=tools, add_generation_prompt=True, **kwargs)
            full = ref.render([*history, variant], tools=tools, add_generation_prompt=False, **kwargs)
        except Exception as e:
            last_err = f"template raised: {e}"
            continue
        out = generated_part(prompt, full, msg)
        if out is None:
            return None, "history re-rendered differently", None
        missing = [n for n in needles(msg) if n not in out]
        if missing:
            last_err = f"template does not render {missing[0][:30]!r}"
            continue
        keys = [k for c in msg.get("tool_calls", []) for k in arguments_of(c)]
        if any(k not in out for k in keys):
            last_err = "template does not render the arguments"
            continue
        return out, None, variant
    return None, last_err, None


# ---------------------------------------------------------------- cases
@dataclass
class Case:
    """One template + scenario with its generated text and the message it must parse to."""

    path: Path
    scenario: str
    history: list[Msg]
    tools: list[Msg] | None
    kwargs: dict[str, Any]
    text: str
    expected: Msg
    corpus: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.path.stem}-{self.scenario}"


def build_cases(path: Path, corpus: bool = False, only: list[str] | None = None) -> list[Case]:
    """Every scenario the template can express, with its generated text."""
    try:
        ref = Reference(path.read_text(encoding="utf-8"))
    except Exception:
        return []
    cases = []
    for sc in SCENARIOS:
        if only is not None and sc.name not in only:
            continue
        case = case_for(ref, path, sc.name, sc.msg, TOOLS if sc.needs_tools else None, sc.thinking, corpus)
        if case is None:
            continue
        if sc.name == "escaped_args" and json.dumps(ESCAPED, ensure_ascii=True) not in case.text:
            continue  # the template re-serialises string arguments: no escapes to split
        cases.append(case)
    return cases


def case_for(ref: Reference, path: Path, name: str, msg: Msg, tools: list[Msg] | None, thinking: bool = False,
             corpus: bool = False) -> Case | None:
    """The case for one assistant message (None when the template cannot express it)."""
    found: tuple[str, list[Msg], dict[str, Any], Msg] | None = None
    for kwargs in ([{"enable_thinking": True}] if thinking else [{}, {"enable_thinking": False}]):
        for history in HISTORIES:
            try:
                out, _why, variant = expected_text(ref, history, msg, tools, kwargs)
            except Exception:
                out, variant = None, None
            if out is not None and variant is not None:
                found = (out, history, kwargs, variant)
                break
        if found:
            break
    if found is None:
        return None
    out, history, kwargs, variant = found
    try:
        out = strip_end_of_turn(out, end_of_turn(ref, history, kwargs))
    except Exception:
        return None
    return Case(path, name, history, tools, kwargs, out, variant, corpus)


# ---------------------------------------------------------------- comparison
def grammar_inputs(reasoning_end: str, text: str) -> tuple[str, ...]:
    """The output, and the part of it after the reasoning block ending in ``reasoning_end`` (what a
    server's grammar sees: vLLM and SGLang apply a request's grammar once the reasoning parser has
    seen the block end), each also without trailing white space."""
    end = reasoning_end.strip()
    after = text.split(end, 1)[1] if end and end in text else text
    return text, text.rstrip(), after, after.rstrip()


def norm(s: str | None) -> str:
    return (s or "").strip()


def compare(expected: Msg, got: Msg, text: str) -> str | None:
    """None when ``got`` (a message dict) matches ``expected``, else a short reason."""
    if norm(got.get("reasoning_content")) != norm(expected.get("reasoning_content")):
        return f"reasoning {norm(got.get('reasoning_content'))[:70]!r} != {norm(expected.get('reasoning_content'))[:70]!r}"
    if norm(got.get("content")) != norm(expected.get("content")):
        return f"content {norm(got.get('content'))[:70]!r} != {norm(expected.get('content'))[:70]!r}"
    want = expected.get("tool_calls") or []
    have = got.get("tool_calls") or []
    if len(want) != len(have):
        return f"{len(have)} tool calls != {len(want)}"
    for w, h in zip(want, have, strict=True):
        hf = h.get("function", h)
        if hf.get("name") != w["function"]["name"]:
            return f"tool name {hf.get('name')!r} != {w['function']['name']!r}"
        try:
            args = json.loads(hf.get("arguments") or "")
        except ValueError:
            return f"arguments not JSON: {str(hf.get('arguments'))[:70]!r}"
        if args != arguments_of(w):
            return f"arguments {json.dumps(args, ensure_ascii=False)[:90]} != " \
                   f"{json.dumps(arguments_of(w), ensure_ascii=False)[:90]}"
        if w["id"] in text and h.get("id") != w["id"]:
            return f"id {h.get('id')!r} != {w['id']!r}"
    return None


# ---------------------------------------------------------------- analysis test helpers
def norm_marker(s: str) -> str:
    """A marker as compared in tests: outer whitespace stripped, inner runs collapsed to one space."""
    return " ".join(s.split())


@functools.cache
def load(path: Path) -> Any:
    """A ChatTemplate for ``path`` with the conformance BOS/EOS, built once per test session."""
    from autoparser import ChatTemplate

    return ChatTemplate.from_file(path, bos_token=BOS, eos_token=EOS)


def fixture_template(name: str) -> Any:
    return load(FIXTURES / f"{name}.jinja")


def fixture_analysis(name: str) -> Any:
    return fixture_template(name).analysis


def real_analysis(name: str) -> Any:
    """A third-party template's analysis; skips when ../shared is absent."""
    import pytest

    shared = shared_dir()
    if shared is None:
        pytest.skip("shared template corpus not found (set AUTOPARSER_SHARED)")
    path = shared / "templates" / f"{name}.jinja"
    if not path.is_file():
        pytest.skip(f"{path.name} not in the shared corpus")
    return load(path).analysis


# ---------------------------------------------------------------- known misses
# (template stem, scenario) -> why req.parse(text) does not give the expected message yet.
KNOWN_PARSE: dict[tuple[str, str], str] = {
    # corpus
    ("Kimi-K3", "escaped_args"): "analysis: string arguments in a typed key wrapper not recognised",
    ("contrapuntal-community-pastebins_tBAHN6FV-sigjhl-gemma4-jsonschema-robustness", "escaped_args"):
        "template writes a string argument as one gemma literal; parsed keys differ",
    ("google-gemma-4-31B-it-interleaved", "escaped_args"):
        "template writes a string argument as one gemma literal; parsed keys differ",
    ("hfjs-LiquidAI-LFM2.5-VL-450M", "tricky_args"): "template writes quotes inside strings unescaped (ambiguous)",
    ("mistral-common-v7_image_spm", "escaped_args"): "analysis: HTML-escaped (&#34;) markers; string args",
    ("vllm-tool_chat_template_hyperclovax_seed_think_14b", "content_tool"):
        "reasoning ends with the turn end and the next assistant header, which an answer before a call "
        "also ends with; reasoning written without its /think opener is accepted, so the answer reads as reasoning",
    **{("vllm-tool_chat_template_llama3.2_pythonic.rev-f67ce05d", s): "template renders strings unquoted"
       for s in ("tool", "parallel", "rich_args", "tricky_args")},
}
