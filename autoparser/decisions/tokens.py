"""PRE.1: may the server decode model output with ``skip_special_tokens=True``?

Inference servers (vLLM, sglang, Dynamo) decode with ``skip_special_tokens=True`` by
default. When a marker the parser needs (``<|channel|>``, Gemma 4's ``<|tool_call>``,
``<|tool_calls_section_begin|>`` ...) is a single special token, that default strips
it and the parser silently sees prose: empty ``reasoning_content``/``tool_calls`` and
no error. This module decides the flag from the markers the parser needs and the
tokenizer's special tokens (:attr:`autoparser.sources.TemplateSource.special_tokens`).

With a tokenizer, a marker counts when it *is* a special token or *contains* one
(``"<|tool_call>call:"`` needs ``<|tool_call>``). Only tokens marked special count:
``decode(skip_special_tokens=True)`` (tokenizers, transformers, vLLM, SGLang) and
llama.cpp's detokenizer (GGUF CONTROL tokens) strip those and nothing else. Tokens
added with ``special: false`` (Hermes' and Qwen3-Coder's ``<tool_call>``, GGUF
USER_DEFINED) survive decoding, so a parser that needs only those can keep the
default ``skip_special_tokens=True``.

Without a tokenizer a marker is judged by its look (see :func:`special_looking_parts`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from ..markers.definition import TOKEN_LOOK

__all__ = [
    "SpecialTokenReport",
    "heuristic_skip_special_tokens",
    "special_looking_parts",
    "special_token_parts",
    "special_token_status",
]

@dataclass(frozen=True)
class SpecialTokenReport:
    """The PRE.1 decision and what it rests on."""

    skip_special_tokens: bool | None   # None: unknown (no tokenizer); see heuristic_skip_special_tokens
    preserved_tokens: tuple[str, ...]  # special tokens the parser needs kept in the decoded text
    reason: str
    source: Literal["tokenizer", "heuristic"]


def _unique_markers(markers: Iterable[str]) -> tuple[str, ...]:
    """Non-empty markers, first occurrence order, no duplicates."""
    return tuple(dict.fromkeys(m for m in markers if m))


def _unique(parts: Iterable[str]) -> tuple[str, ...]:
    """Deduplicate keeping the first occurrence."""
    return tuple(dict.fromkeys(parts))


def special_looking_parts(marker: str) -> tuple[str, ...]:
    """The pieces of ``marker`` that look like special tokens (no tokenizer needed).

    The heuristic, applied to every non-overlapping match, leftmost first:

    * ``<|...|>``: pipe-delimited tokens (ChatML, Llama 3, gpt-oss, Kimi);
    * ``<｜...｜>``: the same with fullwidth bars (DeepSeek);
    * ``[UPPER_CASE]`` and ``[/UPPER_CASE]``: bracketed control words (Mistral);
    * ``<...>`` and ``</...>``: tags without whitespace that contain a letter
      (``<think>``, ``</tool_call>``, Gemma 4's ``<|tool_call>`` and ``<tool_call|>``).

    Plain XML-ish tags are included on purpose: many models make them added tokens,
    and assuming "special" only costs keeping markers that would have survived anyway.
    """
    return _unique(m.group(0) for m in TOKEN_LOOK.finditer(marker))


def special_token_parts(marker: str, special_tokens: frozenset[str]) -> tuple[str, ...]:
    """The special tokens inside ``marker``, split leftmost-longest as a tokenizer does.

    A marker that is itself a token yields just that token. Inside a longer marker,
    whitespace-only added tokens (``"\\n\\n"``, runs of spaces) are ignored: they are
    layout, not structure.
    """
    if marker in special_tokens:
        return (marker,)
    candidates = sorted((t for t in special_tokens if t.strip() and t in marker), key=len, reverse=True)
    found: list[str] = []
    pos = 0
    while pos < len(marker) and candidates:
        match = next((t for t in candidates if marker.startswith(t, pos)), None)
        if match is None:
            pos += 1
            continue
        found.append(match)
        pos += len(match)
    return _unique(found)


def heuristic_skip_special_tokens(markers: Iterable[str]) -> bool:
    """Without a tokenizer: False when any marker looks special (assume it would be stripped)."""
    return not any(special_looking_parts(m) for m in _unique_markers(markers))


def _quote(tokens: Iterable[str]) -> str:
    """``'a', 'b'`` for messages."""
    return ", ".join(repr(t) for t in tokens)


def _tokenizer_report(markers: tuple[str, ...], special_tokens: frozenset[str]) -> SpecialTokenReport:
    """The decision from the tokenizer's special tokens."""
    preserved = _unique(t for m in markers for t in special_token_parts(m, special_tokens))
    if preserved:
        reason = (f"parser markers use special tokens {_quote(preserved)}; "
                  "skip_special_tokens=True would strip them from the decoded text")
        return SpecialTokenReport(False, preserved, reason, "tokenizer")
    reason = ("no parser marker is a special token of the tokenizer (plain added tokens survive "
              "decoding); the default "
              "skip_special_tokens=True keeps them" if markers else "the parser needs no markers")
    return SpecialTokenReport(True, (), reason, "tokenizer")


def _heuristic_report(markers: tuple[str, ...]) -> SpecialTokenReport:
    """No tokenizer: report the special-looking markers, leave the decision open."""
    preserved = _unique(t for m in markers for t in special_looking_parts(m))
    if preserved:
        reason = (f"no tokenizer known; markers {_quote(preserved)} look like special tokens, "
                  "so skip_special_tokens=True may strip them (heuristic suggests False)")
    elif markers:
        reason = "no tokenizer known; no marker looks like a special token (heuristic suggests True)"
    else:
        reason = "no tokenizer known; the parser needs no markers"
    return SpecialTokenReport(None, preserved, reason, "heuristic")


def special_token_status(markers: Iterable[str], special_tokens: frozenset[str] | None) -> SpecialTokenReport:
    """Decide ``skip_special_tokens`` for a parser needing ``markers``.

    * tokenizer known (``special_tokens`` not None): False when any marker is or
      contains a special token (those go in ``preserved_tokens``), else True;
    * no tokenizer (None): ``skip_special_tokens`` is None and ``preserved_tokens``
      holds the special-looking parts (:func:`special_looking_parts`); use
      :func:`heuristic_skip_special_tokens` for a best guess.
    """
    unique = _unique_markers(markers)
    if special_tokens is None:
        return _heuristic_report(unique)
    return _tokenizer_report(unique, special_tokens)
