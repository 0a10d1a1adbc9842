"""The ``tool_calls`` field of a response template for a call written as a learned layout
(``ToolFormat.style == "layout"``, :mod:`autoparser.analysis.layout`).

A call region opens at the call's start marker and the layout's pieces up to the arguments (the
name captured as ``name``, an id matched and dropped) and closes at the pieces after them. The
arguments are read by a content parser:

* a JSON object (``ArgsLayout.kind == "json"``) by ``json``;
* items (``key=value``, ``<k>v</k>``, ``<arg_key>k</arg_key><arg_value>v</arg_value>`` ...) by
  ``xml-inline``: one regex per item with the groups ``key`` and ``value``; each value is JSON
  (``value_parser`` json) when strings are JSON-quoted, else raw text that transformers types by the
  tool's schema, as ``Request.parse`` does. Values written with other text around some types (a
  string between ``<|"|>``, ``string="true">``) are alternatives of the value group.

What the language cannot read is refused with the reason (:data:`~.regions.REASONS`): a name or
key written with a codec, positional arguments, arguments escaped as one string, string values in
a codec no content parser decodes (percent-encoding, shell quoting, character references ...),
booleans or null spelled so that the schema cannot type them, arrays and objects in the format's
own syntax or as Python literals. Before an items field is returned, it reads back the layout's
own writing of probe arguments through the same steps transformers takes (:func:`_reads_back`).
"""

from __future__ import annotations

import json
from typing import Any

import regex

from ..analysis.layout.encode import encode_items
from ..analysis.layout.model import ArgsLayout, Piece
from ..analysis.model import Analysis
from ..values.codecs import Codec
from ..values.spelling import KEY_AGAIN, Items, Values
from ..values.yamlblock import is_block
from .regions import ID, NAME, TRAILING_WS, lookahead, opt, refuse, rx, seq, transform

__all__ = ["layout_calls"]

ANY_NAME = r"[\w.\-]+"                     # the name written again (``</NAME>``): any name
KEY_WORD = r"[A-Za-z_][\w.\-]*"            # a key that starts the next item (lookahead)
JSON_STRINGS = ("json", "json(ascii)", "json(ascii,html)")   # codecs whose values json.loads reads
# a value a JSON value parser reads: a JSON string (its quotes and escapes), else any text
JSON_STRING = r'"(?:[^"\\]|\\.)*"'
# a JSON array or object (brackets balanced, strings skipped): a value that runs to the next item
# is read whole, not cut at a separator inside it; defined once per pattern, used as (?&nested)
NESTED = r'(?(DEFINE)(?P<nested>[\[{](?:[^\[\]{}"]|"(?:[^"\\]|\\.)*"|(?&nested))*[\]}]))'
# probe arguments the items field must read back (strings with the texts that end values)
PROBE_ARGS: dict[str, Any] = {
    "query": 'naïve café "quoted" 東京 😀, it\'s <b>',
    "code": "def f(x):\n    return {x: [1, 2]}  # it's fine; a=b",
    "top_k": 7, "ratio": -0.25, "exact": True, "off": False, "since": None,
    "filters": {"lang": "en", "depth": 2}, "tags": ["alpha", "beta"],
}


def layout_calls(a: Analysis, end_lookahead: str) -> dict[str, Any]:
    """The ``tool_calls`` field for a layout, or ``ExportError``."""
    t = a.tools
    lay = t.layout
    assert lay is not None
    at = [i for i, p in enumerate(lay.pieces) if p.kind == "args"]
    names = [p for p in lay.pieces if p.kind == "name"]
    if len(at) != 1 or len(names) != 1:
        raise refuse(a, "layout-shape", lay.describe())
    for p in lay.pieces:
        if p.kind in ("name", "name_again") and p.codec != "raw":
            raise refuse(a, "name-codec", f"the {p.codec} codec")
    before, after = lay.pieces[:at[0]], lay.pieces[at[0] + 1:]
    field: dict[str, Any] = {"open_pattern": _opener(a, before)}
    close = _closer(a, after)
    if close:
        # JSON arguments end with their closing brace: a closing text inside a string value is no close
        field["close_pattern"] = (r"(?<=\})\s*" if lay.args.kind == "json" else "") + close
    else:
        # nothing after the arguments: the call ends before the next call's opening text or the turn's end
        first = lay.pieces[0].text if lay.pieces[0].kind == "lit" else ""
        nxt = rx(t.call_start) or rx(first) or rx(t.separator)
        if nxt or end_lookahead:
            field["close_pattern"] = lookahead(nxt, end_lookahead)
        # else the one call runs to the end of the output
    field.update(_arguments(a, lay.args))
    field.update(repeats=True, transform=transform("{name}", "{content}"))
    return field


# ------------------------------------------------------------------ the call's frame
def _piece(p: Piece, capture: bool) -> str:
    if p.kind == "lit":
        return rx(p.text)
    if p.kind == "name":
        return NAME if capture else ANY_NAME
    if p.kind == "name_again":
        return ANY_NAME
    return ID


def _opener(a: Analysis, before: tuple[Piece, ...]) -> str:
    """Where a call opens: the separator and section start (optional), the call's start marker and
    the pieces up to the arguments."""
    t = a.tools
    first = before[0] if before else None
    if t.call_start.strip() and not t.section_start.strip() and a.generation_prompt.endswith(t.call_start.strip()):
        # the prompt writes the first call's opener (``>>>``): the output starts with a name
        raise refuse(a, "no-call-opener", f"the generation prompt writes the first {t.call_start.strip()!r}")
    own = t.call_start.strip() or (first is not None and first.kind == "lit" and first.text.strip())
    if not (own or t.section_start.strip()):
        raise refuse(a, "no-call-opener", "the call starts with the tool's name")
    head = [rx(t.call_start), *(_piece(p, True) for p in before)]
    if t.section_start.strip() and not t.call_start.strip():
        # the call's own opening text (``<``) is no marker: the first call opens with the section,
        # the next ones right after a call closed (the last literal of the call, not another field's)
        later = _after_a_call(a) + r"\s*" + opt(rx(t.separator)) if a.capabilities.parallel_tool_calls else ""
        lead = "(?:" + rx(t.section_start) + (r"\s*|" + later if later else "") + ")"
        return r"\s*" + seq(lead, *head)
    lead = seq(opt(rx(t.separator)), opt(rx(t.section_start)) if t.section_start.strip() else "")
    return r"\s*" + seq(lead, *head)


def _after_a_call(a: Analysis) -> str:
    """A lookbehind: the text before is the end of a call (and not the end of another field)."""
    t = a.tools
    assert t.layout is not None
    pieces = t.layout.pieces
    at = next(i for i, p in enumerate(pieces) if p.kind == "args")
    tail = seq(*(_piece(p, False) for p in pieces[at + 1:]))
    if not tail:
        raise refuse(a, "no-call-opener", "calls after the first start with the tool's name")
    others = [rx(m) for m in (a.reasoning.end, a.content.end, a.content.start) if m.strip()]
    out = f"(?<={tail}\\s*)"
    return out + "".join(f"(?<!{o}\\s*)" for o in others)


def _closer(a: Analysis, after: tuple[Piece, ...]) -> str:
    """The pieces after the arguments (a hole between two literals), or "" when no literal follows them."""
    if not any(p.kind == "lit" and p.text.strip() for p in after):
        if any(p.kind != "lit" for p in after):
            raise refuse(a, "id-after-args", "a hole follows the arguments with no text after them")
        return ""
    first = next(p for p in after if p.kind != "lit" or p.text.strip())
    if first.kind != "lit":
        raise refuse(a, "id-after-args", f"{first.kind} right after the arguments")
    return seq(*(_piece(p, True) for p in after)) + TRAILING_WS


# ------------------------------------------------------------------ the arguments
def _arguments(a: Analysis, args: ArgsLayout) -> dict[str, Any]:
    if args.kind == "python":
        raise refuse(a, "python-args")
    if args.codec:
        if args.codec.startswith("entities"):
            raise refuse(a, "html-escaped")
        raise refuse(a, "string-args", f"the {args.codec} codec")
    if args.kind == "json":
        return {"content": "json"}
    assert args.items is not None
    return _items(a, args.items)


def _items(a: Analysis, items: Items) -> dict[str, Any]:
    """``xml-inline`` for key/value items, checked by reading the layout's own writing back."""
    v = items.values or Values()
    if not items.keyed:
        raise refuse(a, "positional-args")
    if items.columns:
        raise refuse(a, "columns")
    if items.key.codec != "raw":
        raise refuse(a, "key-codec", f"the {items.key.codec} codec")
    json_values = _string_codec(a, v)
    _nested(a, v, json_values)
    _scalars(a, v, json_values)
    kv = items.key.post + items.kv
    key = _key(items) if kv.strip() else r"(?P<key>[\w.\-]+)"
    head = seq(rx(items.item_pre + items.key.pre), key, rx(kv))
    value = _value(v, json_values)
    post = items.item_post
    if post.strip():
        tail = seq(*(rx(part) if part else "(?P=key)" for part in _split_key_again(post)))
        pattern = head + r"\s*" + value + r"\s*" + tail
    else:
        nxt = seq(rx(items.sep), rx(items.item_pre + items.key.pre), KEY_WORD, rx(kv))
        ends = [x for x in (nxt, rx(items.close) + r"\s*\Z" if items.close.strip() else "", r"\Z") if x]
        value = _value(v, json_values, nested=True)
        pattern = NESTED + head + r"\s*" + value + r"(?=\s*(?:" + "|".join(ends) + "))"
    args: dict[str, Any] = {"tag_pattern": pattern}
    if json_values:
        args["value_parser"] = {"name": "json", "args": {"allow_non_json": True}}
    field = {"content": "xml-inline", "content_args": args}
    wrong = _reads_back(items, v, args)
    if wrong:
        raise refuse(a, "items-misread", wrong)
    return field


def _key(items: Items) -> str:
    """The ``key`` group: no white space, quote or angle bracket, nor a punctuation character of the
    texts around the items (``{`` ``,`` ``:`` in ``{k:v,k:v}``)."""
    around = items.open + items.close + items.sep + items.item_pre + items.key.pre + items.key.post + items.kv
    punct = sorted({c for c in around if not (c.isalnum() or c == "_" or c.isspace())} | set("<>=\"'"))
    return r"(?P<key>[^\s" + "".join(regex.escape(c) for c in punct) + "]+?)"


def _split_key_again(text: str) -> list[str]:
    """``</\\x04>`` as ["</", "", ">"]: "" stands for the key written again."""
    out: list[str] = []
    for i, part in enumerate(text.split(KEY_AGAIN)):
        if i:
            out.append("")
        if part.strip():
            out.append(part)
    return out


def _string_codec(a: Analysis, v: Values) -> bool:
    """Whether string values are JSON strings (read by a json value parser); raw strings are
    kept as text; any other codec is refused."""
    codec = Codec.from_spec(v.string.codec)
    if codec.spec in JSON_STRINGS and not v.string.pre.strip() and not v.string.post.strip():
        return True
    if codec.spec == "raw":
        return False
    if codec.spec == "json(bare)" and v.string.pre.endswith('"') and v.string.post.startswith('"'):
        return True
    if codec.kind == "python":
        raise refuse(a, "python-values", "strings are Python reprs")
    raise refuse(a, "value-codec", f"values written with the {codec.kind} codec ({codec.spec})")


def _nested(a: Analysis, v: Values, json_values: bool) -> None:
    if v.nested == "own" or is_block(v.nested) or v.path is not None:   # (YAML blocks below the key: the format's own syntax)
        raise refuse(a, "own-nested")
    if v.nested_codec:
        raise refuse(a, "value-codec", f"arrays and objects written inside a string ({v.nested_codec})")
    if v.nested == "python" or (v.nested == "spelled" and (v.true, v.false, v.null) != ("true", "false", "null")):
        raise refuse(a, "python-values", "arrays and objects hold Python literals")
    if v.nested == "spelled" and not json_values and Codec.from_spec(v.string.codec).spec not in JSON_STRINGS:
        raise refuse(a, "python-values", "strings inside arrays and objects are not JSON")


def _scalars(a: Analysis, v: Values, json_values: bool) -> None:
    """Booleans and null as transformers types a value by the schema (``true``/``1``, ``false``/``0``
    in any case; ``null``/``None``); behind a json value parser, only JSON's or non-JSON words."""
    for text, words in ((v.true, ("true", "1")), (v.false, ("false", "0")), (v.null, ("null", "None"))):
        body = _body(text, v)
        ok = body.strip().lower() in words if words[0] != "null" else body.strip() in words
        if ok and json_values and body.strip() not in ("true", "false", "null"):
            ok = not _is_json(body)
        if not ok:
            raise refuse(a, "value-spelling", f"{words[0]} written as {text!r}")
    for slot in (v.number, v.integer):
        if slot is not None and slot.codec != "raw":
            raise refuse(a, "value-codec", f"numbers written with the {slot.codec} codec")


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def _wrappers(v: Values) -> list[tuple[str, str]]:
    """The distinct texts written around a value of some type (``<|"|>`` ... ``<|"|>``, ``string="true">``)."""
    out = [(v.string.pre, v.string.post), (v.number.pre, v.number.post)]
    if v.integer is not None:
        out.append((v.integer.pre, v.integer.post))
    out.append((v.nested_pre, v.nested_post))
    return list(dict.fromkeys(out))


def _body(text: str, v: Values) -> str:
    """A boolean's or null's text without the wrapper the other values have (``false">true``)."""
    for pre, post in sorted(_wrappers(v), key=lambda w: -len(w[0] + w[1])):
        if (pre or post) and text.startswith(pre) and text.endswith(post) and len(text) >= len(pre + post):
            return text[len(pre):len(text) - len(post)]
    return text


def _value(v: Values, json_values: bool, nested: bool = False) -> str:
    """The ``value`` group: one alternative per wrapper, longest first (a bare one last); ``nested``:
    a JSON array or object is read whole (it needs :data:`NESTED` defined)."""
    whole = (JSON_STRING + "|" if json_values else "") + ("(?&nested)|" if nested and v.nested != "own" else "")
    body = f"(?P<value>{whole}.*?)"
    wrappers = _wrappers(v)
    if any(_body(t, v) == t for t in (v.true, v.false, v.null)) and ("", "") not in wrappers:
        wrappers.append(("", ""))   # a boolean or null written bare among wrapped values
    if v.string.codec == "json(bare)" and json_values:
        wrappers = [(p[:-1], q[1:]) if (p, q) == (v.string.pre, v.string.post) else (p, q) for p, q in wrappers]
    if wrappers == [("", "")]:
        return body
    alts = [seq(rx(pre), body, rx(post)) for pre, post in sorted(wrappers, key=lambda w: -len(w[0]))]
    return "(?:" + "|".join(alts) + ")"


# ------------------------------------------------------------------ the check
def _reads_back(items: Items, v: Values, args: dict[str, Any]) -> str:
    """Why the layout's writing of :data:`PROBE_ARGS` does not read back through ``xml-inline``
    (a regex per item, the value parser, then the value typed by its JSON type), or ""."""
    text = encode_items(items, PROBE_ARGS)
    try:
        found = {m.group("key"): m.group("value") for m in
                 regex.finditer(args["tag_pattern"], text, flags=regex.DOTALL, timeout=1.0)}
    except (regex.error, TimeoutError) as e:
        return f"the item pattern fails ({e})"
    for key, want in PROBE_ARGS.items():
        if key not in found:
            return f"argument {key!r} is not found in {text!r}"
        got = _typed(found[key], want, "value_parser" in args)
        if got != want or type(got) is not type(want):
            return f"argument {key!r} reads back as {got!r}, not {want!r}"
    return ""


def _typed(raw: str, want: Any, json_values: bool) -> Any:
    """What transformers makes of an item's text for an argument of ``want``'s JSON type."""
    value: Any = raw
    if json_values:
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw.strip()
    if not isinstance(value, str) or isinstance(want, str):
        return value
    s = value.strip()
    if isinstance(want, bool):
        return s.lower() in ("true", "1") if s.lower() in ("true", "1", "false", "0") else value
    if want is None:
        return None if s in ("null", "None") else value
    if isinstance(want, (int, float)):
        try:
            number = float(s)
        except ValueError:
            return value
        return int(number) if isinstance(want, int) and number.is_integer() else number
    try:
        return json.loads(s)
    except ValueError:
        return value

