"""What every exported region is made of: the refusal reasons, markers as regexes, and the
small regex combinators the call, reasoning and content fields are written with."""

from __future__ import annotations

from typing import Any

import regex

from .. import markers as mk
from ..analysis.model import Analysis
from ..errors import ExportError

__all__ = ["ID", "NAME", "REASONS", "TRAILING_WS", "alt", "alternatives", "is_literal", "lookahead", "opt", "put",
           "refuse", "rx", "seq", "set_key", "transform"]

#: Every reason an export is refused, by key (``ExportError.reason``), with its message.
REASONS: dict[str, str] = {
    "reasoning-without-opener": "reasoning has an end marker but no opening marker: a field needs an "
                                "opener, and the implicit field is taken by the content",
    "no-call-opener": "tool calls have no opening marker (the call starts with the tool's name, or "
                      "a recipient such as `>>>NAME`)",
    "markerless-parallel": "tool calls written as bare JSON objects with no marker: one call can be "
                           "found with a lookahead, several in a row cannot be split",
    "name-as-key": "the tool name is a JSON key ({\"NAME\": {...}}); transforms only copy fixed paths",
    "html-escaped": "the template HTML-escapes its JSON (&#34;); the json parser reads plain JSON",
    "name-in-id": "the tool name is read back from the call id",
    "id-after-args": "the call id follows the arguments outside the JSON",
    "python-args": "calls or arguments are Python literals ({'k': 'v'}, True, None); the json parser "
                   "reads JSON only",
    "bare-strings": "literal arguments print strings unquoted (f(k=Paris, France))",
    "literal-style": "a literal argument style no content parser reads (only Gemma-style "
                     "{k:<|\"|>v<|\"|>} and Python call lists [f(k='v')] are expressible)",
    "yaml-args": "arguments are `key: value` lines (YAML) or bare `key=value` pairs; no content parser reads them",
    "nested-tagged": "tagged argument values are closed by a tag naming the key (nested XML objects)",
    "tagged-separator": "tagged arguments are separated by text that is not whitespace",
    "blank-line-closer": "reasoning ends at a blank line, not at a closing marker (a `Thought: ` label): "
                         "a field closes at a literal",
    "no-anchor": "the assistant turn has no header to anchor the prompt replay, and the prompt "
                 "opens a reasoning block",
    "json-envelope": "the whole turn is one JSON object whose keys hold the reasoning, the answer and "
                     "the calls; regions cannot read the keys of one object",
    "python-values": "argument values are printed as Python literals ({'k': 'v'}, ['a'], None, True); "
                     "transformers types values as JSON only",
    "cdata-values": "argument values may be wrapped in <![CDATA[...]]>, which xml-inline keeps as text",
    "unescaped-strings": "Python-call string arguments are printed without escaping their quotes "
                         "(f(k='it's')); python-call-list cannot read them",
    "layout-shape": "the call layout does not hold one name and one arguments hole",
    "name-codec": "the tool name is written with a codec (quoted or escaped); a region captures it as it is",
    "string-args": "the arguments are written inside a string with its escapes (a JSON string holding the "
                   "JSON); content parsers read them unescaped",
    "positional-args": "arguments are positional values in the schema's order; content parsers read named "
                       "arguments only",
    "columns": "arguments are written as columns (a header row of names, then a row of values); content "
               "parsers read each value beside its name",
    "key-codec": "argument names are written with a codec (quoted or escaped); xml-inline captures them as they are",
    "value-codec": "argument values are written with a codec no content parser decodes",
    "value-spelling": "booleans or null are spelled in words transformers does not type by the schema "
                      "(true/1, false/0 in any case, null/None)",
    "own-nested": "arrays and objects in the arguments are written in the format's own syntax (own-syntax "
                  "nested objects, or items with path keys: filters[lang]=en), not as JSON",
    "items-misread": "the arguments written as the layout says do not read back through xml-inline",
}

TRAILING_WS = r"\s*"            # a call's close takes the whitespace after it: an empty content region
                                 # there would overwrite the content written before the call
NAME = r"(?P<name>[\w.\-]+)"      # a tool name as the runtime's NAME wildcard reads it
ID = r"[^\n]*?"                   # a call id between two markers


def refuse(analysis: Analysis, reason: str, detail: str = "") -> ExportError:
    msg = REASONS[reason] + (f" ({detail})" if detail else "")
    return ExportError(msg, template=analysis.template, reason=reason)


# ------------------------------------------------------------------ markers
def is_literal(marker: str) -> bool:
    """A marker the parser can match as a fixed string: no inner whitespace, digits or wildcards."""
    s = marker.strip()
    return bool(s) and len(mk.tokens(s)) == 1 and not regex.search(r"\d|\x03|\x04", s)


def rx(marker: str) -> str:
    """Regex source for a marker (whitespace between its pieces optional, digits flexible)."""
    return mk.pattern(marker)


def put(field: dict[str, Any], key: str, markers: list[str]) -> None:
    """``open``/``close`` as literals when every marker allows it, else ``*_pattern``."""
    markers = [m for m in dict.fromkeys(m.strip() for m in markers) if m]
    if not markers:
        return
    if all(is_literal(m) for m in markers):
        field[key] = markers[0] if len(markers) == 1 else markers
    else:
        field[f"{key}_pattern"] = "|".join(rx(m) for m in sorted(markers, key=len, reverse=True))


def set_key(field: dict[str, Any], key: str, value: str) -> None:
    if value:
        field[key] = value


def alternatives(markers: list[str]) -> list[str]:
    """Regex alternatives for markers, longest first, safe for streaming.

    With ``partial=True`` the regex module prefers a complete match of a shorter
    marker to a partial match of a longer one it starts (``<|close|>`` before
    ``<|close|>response``), so a stream would close too early. A marker that starts
    another therefore matches only when the next character cannot continue the longer
    one, or at the very end of the text.
    """
    unique = sorted({m.strip() for m in markers if m.strip()}, key=len, reverse=True)
    flat = {m: "".join(m.split()) for m in unique}
    out = []
    for m in unique:
        nexts = sorted({flat[o][len(flat[m])] for o in unique
                        if o != m and flat[o].startswith(flat[m]) and len(flat[o]) > len(flat[m])})
        if nexts:
            chars = "[" + "".join(regex.escape(c) for c in nexts) + "]"
            out.append(f"{rx(m)}(?!\\s*{chars}|\\Z)|{rx(m)}\\Z")
        else:
            out.append(rx(m))
    return out


def lookahead(*sources: str) -> str:
    """A zero-width close before the next call or the end of the turn (no ``\\Z``: with
    ``partial=True`` a complete match at the end hides a partial marker before it)."""
    present = [x for x in sources if x]
    return "(?=" + r"\s*" + alt(present) + ")" if present else ""


def seq(*parts: str) -> str:
    """Regex pieces in a row, optional whitespace between them."""
    out = r"\s*".join(p for p in parts if p)
    while r"\s*\s*" in out:
        out = out.replace(r"\s*\s*", r"\s*")
    return out


def alt(sources: list[str]) -> str:
    sources = [s for s in dict.fromkeys(sources) if s]
    return sources[0] if len(sources) == 1 else "(?:" + "|".join(sources) + ")"


def opt(source: str) -> str:
    return f"(?:{source}\\s*)?" if source else ""


def transform(name: str, args: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": args}}
