"""Python literal text (``{'a': True, 'b': None}``) to JSON text, without eval."""

from __future__ import annotations

import json

_WORDS = {"True": "true", "False": "false", "None": "null"}
_JSON_ESCAPES = set('"\\/bfnrtu')


def string_to_json(text: str, i: int, quote: str) -> tuple[str, int]:
    """The JSON form of the quoted string starting at ``text[i]``; escapes stay escapes.

    Keeping ``\\ud83d\\ude00`` as written lets ``json.loads`` join the surrogate pair.
    """
    out = ['"']
    j, n = i + 1, len(text)
    while j < n and text[j] != quote:
        ch = text[j]
        if ch == "\\" and j + 1 < n:
            nxt = text[j + 1]
            if nxt == quote and quote == "'":
                out.append("'")
            elif nxt == "x" and j + 3 < n:
                out.append("\\u00" + text[j + 2:j + 4])
                j += 4
                continue
            elif nxt in _JSON_ESCAPES:
                out.append(text[j:j + 2])
            else:   # Python keeps the backslash of an escape it does not know ("back\slash")
                out.append("\\\\" + json.dumps(nxt, ensure_ascii=False)[1:-1])
            j += 2
            continue
        if ch == '"':
            out.append('\\"')
        elif ch < " ":
            out.append(json.dumps(ch)[1:-1])
        else:
            out.append(ch)
        j += 1
    out.append('"')
    return "".join(out), j + 1


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
