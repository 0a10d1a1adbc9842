"""The arguments of a call whose name is framed by markers, read off the call's body in the
probe renders (one argument, two, and the second one an integer): a JSON object written with
character references, argument literals (``{k: v}``, ``(k=v)``), ``key: value`` lines or
``key=value`` pairs, per-key tagged values; and the id between the name and the arguments.
"""

from __future__ import annotations

from typing import Any

from .. import markers as mk
from ..diff.split import common_prefix_len, shared_prefix, shared_suffix
from ..markers import definition as dm
from ..probes import needles as N
from ..values.literal import LiteralEnd, literal_value
from .calljson import _json_object_with
from .model import LiteralArgs, TaggedArgs

NM, IM = N.NAME_MARK, N.ID_MARK


def _entity_json(body: str, arg_at: int) -> tuple[int, int] | None:
    """Where a JSON object holding the first argument is written with XML character references
    (``{&quot;k&quot;: &quot;v&quot;}``, ``{&#34;k&#34;: ...}``), or None."""
    from ..values.entities import unescape

    if arg_at < 0:
        return None
    a = body.rfind("{", 0, arg_at)
    while a >= 0:
        e = body.find("}", arg_at)
        while e >= 0:
            raw = body[a:e + 1]
            if "&" in raw and _json_object_with(unescape(raw), N.ARG1):
                return a, e + 1
            e = body.find("}", e + 1)
        a = body.rfind("{", 0, a)
    return None


def _literal_args(body: str) -> tuple[LiteralArgs, int, int] | None:
    """Arguments written as ``{k:Q v Q}`` or ``(k=Q v Q)`` with some string quote Q."""
    import regex

    k = body.find(N.ARG1)
    v = body.find(N.VAL1, k)
    if k < 0 or v < 0:
        return None
    opener_at = max(body.rfind("{", 0, k), body.rfind("(", 0, k))
    if opener_at < 0 or body[opener_at + 1:k].strip() not in ("", '"', "'"):
        return None
    m = regex.match(r"\s*([:=])\s*(.*)\Z", body[k + len(N.ARG1):v], regex.DOTALL)
    if m is None:
        return None
    sep, quote = m.group(1), m.group(2)   # no quote: strings printed bare (``location=Paris``)
    if quote and not body.startswith(quote, v + len(N.VAL1)):
        return None
    opener = body[opener_at]
    closer = "}" if opener == "{" else ")"
    quotes = tuple(dict.fromkeys([q for q in (quote, '"', "'") if q]))
    end = LiteralEnd(quotes).feed(body, opener_at)
    if end is None:
        return None
    try:
        value = literal_value(body[opener_at:opener_at + end], quotes, sep)
    except (ValueError, IndexError):
        return None
    if value != {N.ARG1: N.VAL1}:
        return None
    return (LiteralArgs(open=opener, close=closer, kv_sep=sep, quotes=quotes, bare_strings=not quote),
            opener_at, opener_at + end)


def _line_args(body: str, two_args: str | None) -> tuple[str, TaggedArgs, int, int] | None:
    """Arguments written as ``key: value`` lines (YAML) or ``key=value`` pairs (Python keyword
    arguments without brackets): each key starts a line at the same indentation, or the pairs
    follow each other on one line with a separator (``; ``, ``, ``); ``:`` or ``=`` follows the
    key, and nothing but the line break and indentation, or the separator, comes between a value
    and the next key (the renders with one and two arguments show it). Returns the args style,
    the format, where the arguments begin and where the last value ends; None for any other layout."""
    import regex

    k = body.find(N.ARG1)
    v = body.find(N.VAL1, k)
    if k < 0 or v < 0 or two_args is None or N.ARG2 not in two_args or N.VAL2 not in two_args:
        return None
    m = regex.fullmatch(r"([ \t]*([:=])([ \t]*))([\"']?)", body[k + len(N.ARG1):v])
    if m is None:
        return None
    kv, quote = m.group(2), m.group(4)
    end = v + len(N.VAL1)
    if (quote and not body.startswith(quote, end)) or (kv == ":" and quote == "'"):
        return None
    t = two_args
    v1 = t.find(N.VAL1)
    k2 = t.find(N.ARG2, v1)
    if v1 < 0 or k2 < 0:
        return None
    between = t[v1 + len(N.VAL1) + len(quote):k2]
    key_suffix = m.group(1) + (" " if kv == ":" and not m.group(3) else "")
    brk = body.rfind("\n", 0, k)
    if brk >= 0 and not body[brk + 1:k].strip(" \t") and between == body[brk:k]:
        ta = TaggedArgs(prefix=body[brk:k], key_suffix=key_suffix, strings_json=bool(quote))
        return ("yaml" if kv == ":" else "kwargs"), ta, brk, end + len(quote)
    if kv == "=" and between and "\n" not in between and between.strip() in ("", ";", ","):
        # pairs on one line: the first key follows the name's markers
        ta = TaggedArgs(prefix="", key_suffix=key_suffix, separator=between, strings_json=bool(quote))
        return "kwargs", ta, k, end + len(quote)
    return None


def _split_id(before_args: str, fmt: dict[str, Any]) -> dict[str, Any]:
    """Text between name and arguments: a name suffix, or an id framed by markers."""
    if IM not in before_args:
        return {"name_suffix": before_args}
    j = before_args.index(IM)
    return {"name_suffix": "", "id_position": "after_name", "id_prefix": before_args[:j],
            "id_suffix": before_args[j + 1:]}


def _typed_key_suffix(key_suffix: str, typed: str | None) -> str:
    """Where the text between key and value depends on the value's type (DSML ``string="true"``)."""
    if not typed or N.ARG2 not in typed or "12345" not in typed:
        return key_suffix
    k = typed.index(N.ARG2) + len(N.ARG2)
    other = typed[k: typed.index("12345", k)]
    if other == key_suffix or not other:
        return key_suffix
    a = common_prefix_len(key_suffix, other)
    b = 0
    while b < min(len(key_suffix), len(other)) - a and key_suffix[-1 - b] == other[-1 - b]:
        b += 1
    return key_suffix[:a] + "\x03" + key_suffix[len(key_suffix) - b:]


def _tagged_args(body: str, two_args: str | None, typed: str | None = None) -> tuple[TaggedArgs, str, str]:
    """(tagged argument markers, name suffix, call close) from the call body.

    A key written again after its value (``<KEY>value</KEY>``) becomes a name wildcard.
    """
    body = _key_again(body, N.ARG1, N.VAL1)
    if two_args is not None:
        two_args = _key_again(_key_again(two_args, N.ARG1, N.VAL1), N.ARG2, N.VAL2)
    k1 = body.index(N.ARG1)
    v1 = body.find(N.VAL1, k1)
    pre1 = body[:k1]
    key_suffix = body[k1 + len(N.ARG1): v1]
    after1 = body[v1 + len(N.VAL1):]
    value_end, rest_x = "", ""
    if two_args and N.ARG2 in two_args and N.VAL2 in two_args:
        t = two_args
        x = t[t.index(N.VAL1) + len(N.VAL1): t.index(N.ARG2)]
        y = t[t.index(N.VAL2) + len(N.VAL2):]
        n = shared_prefix(x, y)
        if n == len(x) and (cs := shared_suffix(pre1, x)) and cs < len(x):
            n = len(x) - cs     # the next argument's prefix is also how the call closes: it is the prefix's
        value_end, rest_x = x[:n], x[n:]
    else:
        m = dm.search(after1)
        value_end = after1[: m.end()] if m else ""
    if not value_end.strip():
        m = dm.search(after1)
        value_end = after1[: m.end()] if m else after1
    close = after1[len(value_end):] if after1.startswith(value_end) else after1
    if rest_x:
        cs = shared_suffix(pre1, rest_x)
        prefix = pre1[len(pre1) - cs:] if cs else ""
        sep = rest_x[: len(rest_x) - cs]
    else:
        m = dm.last(pre1)
        prefix = pre1[m.start():] if m else ""
        sep = ""
    name_suffix = pre1[: len(pre1) - len(prefix)]
    strings_json = key_suffix.endswith('"') and value_end.startswith('"')
    if strings_json:
        key_suffix, value_end = key_suffix[:-1], value_end[1:]
    key_suffix = _typed_key_suffix(key_suffix, typed)
    tagged = TaggedArgs(prefix=prefix, key_suffix=key_suffix, value_end=value_end,
                        separator=sep if sep.strip() else "", strings_json=strings_json)
    return tagged, name_suffix, close


def _key_again(text: str, key: str, value: str) -> str:
    """``text`` with the key's first writing after its value (a closing ``</KEY>``) made a wildcard."""
    v = text.find(value, text.find(key))
    if v < 0:
        return text
    again = text.find(key, v + len(value))
    nxt = min((i for i in (text.find(N.ARG1, v), text.find(N.ARG2, v)) if i >= 0 and i != again), default=-1)
    if again < 0 or (0 <= nxt < again):
        return text
    return text[:again] + mk.NAME_WILDCARD + text[again + len(key):]

