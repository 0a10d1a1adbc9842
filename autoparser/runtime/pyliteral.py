"""Python literal text (``{'a': True, 'b': None}``) to JSON text, without eval."""

from __future__ import annotations

import json

_WORDS = {"True": "true", "False": "false", "None": "null"}


def python_to_json(text: str) -> str:
    """Rewrite single-quoted strings and True/False/None; JSON text passes through unchanged."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in "\"'":
            j = i + 1
            buf: list[str] = []
            while j < n and text[j] != ch:
                if text[j] == "\\" and j + 1 < n:
                    nxt = text[j + 1]
                    if nxt == "'" and ch == "'":
                        buf.append("'")
                    elif nxt == '"' and ch == '"':
                        buf.append('"')
                    else:
                        try:
                            buf.append(json.loads('"' + text[j:j + 2] + '"'))
                        except ValueError:
                            buf.append(nxt)
                        if nxt == "u" and j + 5 < n:
                            try:
                                buf[-1] = json.loads('"' + text[j:j + 6] + '"')
                                j += 4
                            except ValueError:
                                pass
                    j += 2
                    continue
                buf.append(text[j])
                j += 1
            out.append(json.dumps("".join(buf), ensure_ascii=False))
            i = j + 1
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
