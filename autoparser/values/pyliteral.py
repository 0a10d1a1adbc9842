"""Python literal text (``{'a': True, 'b': None}``) to JSON text, without eval."""

from __future__ import annotations

import ast
import json
import re

_WORDS = {"True": "true", "False": "false", "None": "null"}
# what follows a backslash in a Python escape; anything else keeps its backslash ("back\slash")
_PY_ESCAPES = frozenset("\n\\'\"abfnrtv01234567xNuU")
_SANITIZE = re.compile(r"\\([0-7]{1,3}|.)|\\\Z|[\x00-\x1f\x7f\ud800-\udfff]", re.DOTALL)
_ONE_ESCAPE = re.compile(r"\\(?:N\{[^}]*\}|x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}|[0-7]{1,3}|.)|\\\Z",
                         re.DOTALL)
_SURROGATE = re.compile("[\ud800-\udfff]")


def _char_escape(ch: str) -> str:
    """``ch`` as a Python escape (control characters and surrogates cannot stand raw in a literal)."""
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def _sanitized(body: str, quote: str) -> str:
    """The body as a one-line Python literal body with the same meaning: unknown escapes get their
    backslash doubled and octal escapes become ``\\u`` ones (so Python raises no warning), raw
    control characters become escapes. In a
    double-quoted string ``\\/`` is JSON's ``/`` (such a string may be JSON)."""
    def one(m: re.Match[str]) -> str:
        text = m.group()
        if not text.startswith("\\"):
            return _char_escape(text)
        nxt = m.group(1)
        if nxt is None:            # a lone backslash at the end (text cut short)
            return ""
        if nxt[0] in "01234567":   # octal, also above \\377 (which Python reads with a warning)
            return f"\\u{int(nxt, 8):04x}"
        if nxt == "/" and quote == '"':
            return "/"
        if nxt in _PY_ESCAPES:
            return text
        return "\\\\" + (_char_escape(nxt) if nxt < " " or "\ud800" <= nxt <= "\udfff" or nxt == "\x7f" else nxt)
    return _SANITIZE.sub(one, body)


def _decode_escapes_one_by_one(body: str) -> str:
    """Fallback for a body Python refuses (``\\xZZ``, ``\\N{no such name}``): each escape is
    decoded by ``ast.literal_eval`` on its own, one it refuses is kept as written."""
    def one(m: re.Match[str]) -> str:
        try:
            value = ast.literal_eval("'" + m.group() + "'")
        except (SyntaxError, ValueError):
            return m.group()
        return value if isinstance(value, str) else m.group()
    return _ONE_ESCAPE.sub(one, body)


def python_string_value(body: str, quote: str = "'") -> str:
    """The value of a Python string literal's body (what is between the quotes), as
    ``ast.literal_eval`` reads it: ``\\n``, ``\\t``, ``\\xNN``, ``\\uNNNN``, ``\\UNNNNNNNN``,
    ``\\N{...}``, octal, an unknown escape keeps its backslash. Never raises: an escape Python
    refuses is kept as written. Never ``eval``."""
    if "\\" not in body:
        return body
    token = quote + _sanitized(body, quote) + quote
    try:
        value = ast.literal_eval(token)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return _decode_escapes_one_by_one(body)
    return value if isinstance(value, str) else body


def string_to_json(text: str, i: int, quote: str) -> tuple[str, int]:
    """The JSON form of the quoted string starting at ``text[i]`` and the index after it.

    The value follows Python (:func:`python_string_value`); a string cut short ends where the
    text does. Surrogates (``\\ud83d\\ude00``) are written as JSON escapes, so ``json.loads``
    joins a pair into one character.
    """
    j, n = i + 1, len(text)
    while j < n and text[j] != quote:
        j += 2 if text[j] == "\\" else 1
    body = text[i + 1:min(j, n)]
    out = json.dumps(python_string_value(body, quote), ensure_ascii=False)
    if _SURROGATE.search(out):
        out = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", out)
    return out, min(j, n) + 1


def python_to_json(text: str) -> str:
    """Rewrite single-quoted strings and True/False/None; JSON text passes through unchanged."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            piece, i = string_to_json(text, i, ch)
            out.append(piece)
            continue
        if ch.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            out.append(_WORDS.get(word, word))
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)
