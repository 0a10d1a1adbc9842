"""The analysis result: plain frozen data describing how a model writes its turn.

Every field is derived by rendering the template; nothing here names a model.
``Analysis.to_dict()`` is JSON and ``Analysis.from_dict`` reads it back, so an
analysis can be cached, stored as a test expectation, or edited by hand.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, fields
from typing import Any, Literal

import regex

from ..markers.definition import TOKEN_LOOK, token_shaped
from ..values.spelling import Slot, Values
from ..values.written import Frame, KeyPath
from .layout.model import ArgsLayout, CallLayout, Items, Piece
from .verification import Verification, VerificationSlot

SCHEMA_VERSION = 1

ReasoningMode = Literal["none", "tagged", "delimiter"]
ToolStyle = Literal["none", "json", "tagged", "layout"]
ArgsStyle = Literal["json", "tagged", "python", "literal", "yaml", "kwargs", "json_attr"]
LINE_ARGS = ("yaml", "kwargs")      # arguments as key/value pairs no marker closes (runtime.lineargs)
# "json_attr": a JSON object written with XML character references (an attribute value, ``{&quot;k&quot;: 1}``)
IdPosition = Literal["none", "json", "before_name", "after_name", "after_args"]


@dataclass(frozen=True)
class Capabilities:
    """What the template can render (minja-style needles; a probe that throws reads False)."""

    system_role: bool = False
    tools: bool = False                 # renders the tool list
    tool_calls: bool = False            # renders assistant tool calls
    parallel_tool_calls: bool = False   # renders two calls in one turn
    tool_call_id: bool = False          # renders the call id
    object_arguments: bool = False      # renders arguments given as a dict
    string_arguments: bool = False      # renders arguments given as a JSON string
    null_content: bool = False          # accepts content=None with tool calls
    reasoning: bool = False             # renders reasoning_content, or opens a reasoning block
    thinking_toggle: bool = False       # a chat_template_kwargs value changes the reasoning prompt


@dataclass(frozen=True)
class ReasoningFormat:
    """How reasoning is delimited (``<think>``/``</think>``, or a delimiter-only end)."""

    mode: ReasoningMode = "none"
    start: str = ""                  # opening marker as rendered ("<think>\n")
    end: str = ""                    # closing marker as rendered ("\n</think>\n\n")
    scope: Literal["always", "tools_only"] = "always"   # some templates render reasoning only with tool calls
    prefilled: bool = False          # the generation prompt itself opens the block (QwQ, R1-Distill)
    off_kwargs: dict[str, Any] = field(default_factory=dict)   # chat_template_kwargs that switch it off
    on_kwargs: dict[str, Any] = field(default_factory=dict)    # ... and on


@dataclass(frozen=True)
class ContentFormat:
    """Markers wrapping the visible answer (``<|START_RESPONSE|>``), if any."""

    start: str = ""
    end: str = ""
    in_tool_turns: tuple[str, ...] = ()   # other wrapper markers around an answer that precedes calls (a channel header)
    aside_start: str = ""            # opens a message to a recipient that is neither the user nor a call (a channel format's
    aside_end: str = ""              # built-in tools: `` to=python<|message|>``) ... and closes it


@dataclass(frozen=True)
class JsonLayout:
    """Where name, arguments and id sit in a JSON call object."""

    name_path: tuple[str, ...] = ("name",)
    args_path: tuple[str, ...] = ("arguments",)
    id_path: tuple[str, ...] = ()
    name_is_key: bool = False        # Apertus: {"get_weather": {...}}
    args_as_string: bool = False     # arguments rendered as a JSON string
    id_after_args: bool = False      # the template writes "id" after "arguments"
    constants: tuple[str, ...] = ()  # other members the template writes in every call ("jsonrpc": "2.0")
    constant_values: tuple[str, ...] = ()  # their values as JSON text ('"2.0"'); "" where it varies


@dataclass(frozen=True)
class TaggedArgs:
    """Per-argument markers (``<parameter=K>\\nV\\n</parameter>``).

    Arguments written as ``key: value`` lines (args ``"yaml"``, a YAML block mapping) or as
    ``key=value`` pairs (args ``"kwargs"``, Python keyword arguments without brackets) use the
    same fields: ``prefix`` is the line break and indentation before each key (``"\\n  "``; ""
    for pairs on one line, ``separator`` between them), ``key_suffix`` the ``": "`` or ``"="``
    after it, ``value_end`` is empty (a value runs to the next key or the call's end) and
    ``strings_json`` says the template quotes string values.
    """

    prefix: str = ""                 # before the key
    key_suffix: str = ""             # between key and value
    value_end: str = ""              # after the value
    separator: str = ""              # between two arguments
    strings_json: bool = False       # string values are JSON-quoted (else rendered raw)


@dataclass(frozen=True)
class LiteralArgs:
    """A non-JSON argument literal (bare keys with a custom quote ``{k:<|"|>v<|"|>}``, Python ``f(k='v')``)."""

    open: str = "{"                  # "(" for Python-call arguments
    close: str = "}"
    kv_sep: str = ":"                # "=" for Python-call arguments
    quotes: tuple[str, ...] = ('"', "'")   # string delimiters
    bare_strings: bool = False       # the template prints strings unquoted (location=Paris, France)


@dataclass(frozen=True)
class ToolFormat:
    """How tool calls are written."""

    style: ToolStyle = "none"
    section_start: str = ""          # once before all calls ("[TOOL_CALLS]", "<|tool_calls_section_begin|>")
    section_end: str = ""
    call_start: str = ""             # before each call ("<tool_call>\n")
    call_end: str = ""               # after each call
    separator: str = ""              # between calls (", " in a JSON array)
    json: JsonLayout | None = None   # style "json": name inside the JSON object
    name_prefix: str = ""            # style "tagged": text right before the name ("<function=")
    name_suffix: str = ""            # text right after the name (">\n")
    args: ArgsStyle = "json"
    tagged: TaggedArgs | None = None  # args "tagged", and "yaml" / "kwargs" (LINE_ARGS)
    literal: LiteralArgs | None = None
    call_close: str = ""             # after the arguments, before call_end ("</function>")
    id_position: IdPosition = "none"
    id_prefix: str = ""
    id_suffix: str = ""
    name_in_id: str = ""
    id_from_header: bool = False     # the template writes the id as text around the name ("functions.NAME:0")             # regex with a `name` group when the id carries the name
    python_literals: bool = False    # arguments use Python literals ('x', True, None)
    args_as_string: bool = False     # style "tagged": the JSON arguments are written inside a JSON string
    layout: CallLayout | None = None  # style "layout": the call's pieces and argument spelling (analysis.layout)


@dataclass(frozen=True)
class EnvelopeFormat:
    """The whole assistant turn is one JSON object (``{"thought": R, "response": C, "tool_calls": [...]}``):
    the top-level keys holding the reasoning and the reply (JSON strings) and the calls (an array of
    call objects laid out as ``call``), each found by diffing paired renderings; "" when not rendered."""

    reasoning_key: str = ""
    content_key: str = ""
    calls_key: str = ""
    call: JsonLayout | None = None   # where name, arguments and id sit in one call object


@dataclass(frozen=True)
class Analysis:
    """Everything the runtime needs, derived once per template and cached."""

    template: str = "<template>"
    digest: str = ""
    capabilities: Capabilities = field(default_factory=Capabilities)
    generation_prompt: str = ""
    reasoning: ReasoningFormat = field(default_factory=ReasoningFormat)
    content: ContentFormat = field(default_factory=ContentFormat)
    tools: ToolFormat = field(default_factory=ToolFormat)
    end_of_turn: tuple[str, ...] = ()
    assistant_header: str = ""       # what opens an assistant turn ("<|im_start|>assistant"); recognised if echoed
    handler: str = ""                # name of a dedicated handler in analysis.special, if any
    envelope: EnvelopeFormat | None = None   # the turn is one JSON object (then no marker frames its parts)
    notes: tuple[str, ...] = ()      # what the analysis was unsure of
    version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        # not a field: no part of the data (to_dict, equality), filled by the layer above
        object.__setattr__(self, "_verification", VerificationSlot())

    @property
    def verification(self) -> Verification | None:
        """Whether the parser reads back what this template renders, per capability
        (:mod:`autoparser.analysis.verification`). Computed on first use by the function the API
        layer gave (``ChatTemplate.analysis`` gives the self-test) and cached with this analysis.
        None when nothing can compute it (an analysis read with ``from_dict``, or unpickled before
        it was verified) and, inside the self-test itself, while it runs."""
        return self.verification_slot.get()

    @property
    def verification_slot(self) -> VerificationSlot:
        """The slot behind :attr:`verification` (the API layer gives it its function)."""
        slot: VerificationSlot | None = self.__dict__.get("_verification")
        if slot is None:   # unpickled from a version without the slot
            slot = VerificationSlot()
            object.__setattr__(self, "_verification", slot)
        return slot

    def renamed(self, name: str) -> Analysis:
        """This analysis under another template name, sharing its verification (same digest)."""
        out = dataclasses.replace(self, template=name)
        object.__setattr__(out, "_verification", self.verification_slot)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready dict (tuples become lists)."""
        out: dict[str, Any] = _unset_paths(_plain(dataclasses.asdict(self)))
        if out.get("envelope") is None:   # most templates: kept out of the dict (and of stored expectations)
            out.pop("envelope", None)
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Analysis:
        built: Analysis = _build(cls, data)
        return built

    def markers(self) -> tuple[str, ...]:
        """Every token-shaped marker piece the parser recognises (:func:`~autoparser.markers.definition.token_shaped`),
        in a stable order: the pieces a decoder must keep."""
        t, r, c = self.tools, self.reasoning, self.content
        raw = [r.start, r.end, c.start, c.end, t.section_start, t.section_end, t.call_start, t.call_end,
               t.name_prefix, t.name_suffix, t.call_close, t.id_prefix, t.id_suffix, *self.end_of_turn]
        if t.tagged:
            raw += [t.tagged.prefix, t.tagged.key_suffix, t.tagged.value_end]
        out: list[str] = []
        for m in raw:
            for piece in m.split():
                if piece and piece not in out and token_shaped(piece):
                    out.append(piece)
        if t.layout is not None:
            # the call's literal pieces and its items' texts (with a letter: not the ``</`` before a name
            # written again), and the special tokens values are written with (``<|"|>``)
            pieces = [p for m in t.layout.texts() for p in _SENTINEL.split(m)
                      if token_shaped(p) and any(c.isalnum() for c in p)]
            pieces += [x.group() for m in t.layout.spellings() for x in TOKEN_LOOK.finditer(m)]
            out += [p for p in dict.fromkeys(pieces) if p not in out]
        return tuple(out)


_SENTINEL = regex.compile(r"\s+|[\x03\x04\x05]")   # white space; a wildcard, a name or key written again, header fields


def _plain(x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    return x


def _unset_paths(x: Any) -> Any:
    """`x` without the ``path`` of value spellings that write no path keys, and the ``frames`` of items
    that write every value in one frame (most layouts: kept out of the dict and of stored expectations)."""
    if isinstance(x, dict):
        return {k: _unset_paths(v) for k, v in x.items() if not (k == "path" and v is None and "nested" in x)
                and not (k == "frames" and not v and "null_item" in x)}
    if isinstance(x, list):
        return [_unset_paths(v) for v in x]
    return x


def _build(cls: Any, data: Any) -> Any:
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)) or not isinstance(data, dict):
        return data
    kwargs = {}
    hints = {f.name: f for f in fields(cls)}
    for name, value in data.items():
        f = hints.get(name)
        if f is None:
            continue
        kwargs[name] = _convert(f.type, value)
    return cls(**kwargs)


_NESTED = {"Capabilities": Capabilities, "ReasoningFormat": ReasoningFormat, "ContentFormat": ContentFormat,
           "ToolFormat": ToolFormat, "JsonLayout": JsonLayout, "TaggedArgs": TaggedArgs,
           "LiteralArgs": LiteralArgs, "EnvelopeFormat": EnvelopeFormat, "CallLayout": CallLayout,
           "ArgsLayout": ArgsLayout, "Items": Items, "Piece": Piece, "Slot": Slot, "Values": Values,
           "KeyPath": KeyPath, "Frame": Frame}


def _convert(type_name: Any, value: Any) -> Any:
    text = str(type_name)
    for name, klass in _NESTED.items():
        if text.startswith(name):
            return None if value is None else _build(klass, value)
    if text.startswith("tuple") and isinstance(value, list):
        inner = text[len("tuple["):].split(",")[0].strip()
        item = _NESTED.get(inner)
        return tuple(_build(item, v) for v in value) if item is not None else tuple(value)
    return value
