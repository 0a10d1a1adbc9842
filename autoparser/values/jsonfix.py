r"""Mend the strings of JSON text that models write almost right, fragment by fragment.

Models put raw newlines and tabs inside JSON strings, and backslashes that start
no JSON escape (``"C:\\dir"`` written as ``"C:\dir"``). The scanner accepts
both, so that the call is not lost; :class:`StringMender` then rewrites each
fragment sent as arguments so that the arguments are valid JSON: a control
character becomes its escape, a stray backslash is doubled (the value keeps
the backslash the model wrote). It keeps whether a string is open between
fragments; a fragment never ends inside an escape (the scanner's commit points
fall after one), so no further state is needed. Linear in the text.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r'["\\\x00-\x1f]')
_SIMPLE_ESCAPES = frozenset('"\\/bfnrt')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


class StringMender:
    """Rewrites JSON fragments so that every string in them is valid JSON."""

    __slots__ = ("in_string", "mended")

    def __init__(self) -> None:
        self.in_string = False
        self.mended = False      # something was rewritten (the output was malformed)

    def __call__(self, fragment: str) -> str:
        if not _SPECIAL.search(fragment):
            return fragment
        out: list[str] = []
        last = 0
        i = 0
        n = len(fragment)
        while True:
            m = _SPECIAL.search(fragment, i)
            if m is None:
                break
            j = m.start()
            ch = fragment[j]
            i = j + 1
            if ch == '"':
                self.in_string = not self.in_string
                continue
            if not self.in_string:
                continue          # structure: the scanner has checked it
            if ch == "\\":
                nxt = fragment[i] if i < n else ""
                if nxt in _SIMPLE_ESCAPES and nxt:
                    i += 1
                    continue
                if nxt == "u" and _HEX4.match(fragment, i + 1):
                    i += 5
                    continue
                out.append(fragment[last:j])
                out.append("\\\\")
            else:
                out.append(fragment[last:j])
                out.append(_CONTROL.get(ch) or f"\\u{ord(ch):04x}")
            last = i
            self.mended = True
        if not out:
            return fragment
        out.append(fragment[last:])
        return "".join(out)
