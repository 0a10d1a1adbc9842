r"""Mend the strings of JSON text that models write almost right, fragment by fragment.

Models put raw newlines and tabs inside JSON strings, and backslashes that start
no JSON escape (``"C:\\dir"`` written as ``"C:\dir"``). The scanner accepts
both, so that the call is not lost; :class:`StringMender` then rewrites each
fragment sent as arguments so that the arguments are valid JSON: a control
character becomes its escape, a stray backslash is doubled (the value keeps
the backslash the model wrote). It keeps whether a string is open between
fragments; a fragment never ends inside an escape (the scanner's commit points
fall after one), so no further state is needed. A trailing comma before ``}`` or ``]``
(``{"a": 1,}``) is dropped. Linear in the text.
"""

from __future__ import annotations

import re

_SPECIAL = re.compile(r'["\\\x00-\x1f]')
_SIMPLE_ESCAPES = frozenset('"\\/bfnrt')
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_IN_STRING = re.compile(r'\\.|"')
_OUTSIDE = re.compile(r'[",]')
_CONTROL = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


class StringMender:
    """Rewrites JSON fragments so that every string in them is valid JSON."""

    __slots__ = ("held", "in_string", "mended")

    def __init__(self) -> None:
        self.in_string = False
        self.mended = False      # something was rewritten (the output was malformed)
        self.held = ""           # a comma (and whitespace) that ended the last fragment, outside strings

    def __call__(self, fragment: str) -> str:
        start_in = self.in_string
        text = self._strings(fragment)
        if self.held or "," in text:
            text = self._commas(self.held + text, start_in)
        return text

    def _commas(self, text: str, in_string: bool) -> str:
        """Drop a trailing comma before ``}`` or ``]`` (``{"a": 1,}``); a comma that ends the
        fragment is held until the next one shows what follows it."""
        self.held = ""
        out: list[str] = []
        i, n = 0, len(text)
        while i < n:
            if in_string:
                m = _IN_STRING.search(text, i)
                if m is None:
                    out.append(text[i:])
                    break
                if m.group() == '"':
                    in_string = False
                out.append(text[i:m.end()])
                i = m.end()
                continue
            m = _OUTSIDE.search(text, i)
            if m is None:
                out.append(text[i:])
                break
            j = m.start()
            if m.group() == '"':
                in_string = True
                out.append(text[i:j + 1])
                i = j + 1
                continue
            k = j + 1
            while k < n and text[k] in " \t\r\n":
                k += 1
            if k == n:
                out.append(text[i:j])
                self.held = text[j:]
                break
            if text[k] in "}]":
                out.append(text[i:j])
                out.append(text[j + 1:k])
                self.mended = True
            else:
                out.append(text[i:k])
            i = k
        return "".join(out)

    def _strings(self, fragment: str) -> str:
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
