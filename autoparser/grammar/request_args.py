"""The arguments after a framed call's name in a request's GBNF: JSON or Python values, a JSON
string holding them, JSON escaped inside an attribute, argument literals, ``key: value`` lines
(:mod:`.lines`) or per-key tagged values in declared order (and sorted, as ``|dictsort`` prints
them), each value following the tool's schema."""

from __future__ import annotations

from typing import Any

from .. import markers as mk
from ..analysis.model import LINE_ARGS
from .attrjson import escaped_copy
from .gbnf import GbnfBuilder, literal, sanitize_name
from .lines import line_args_rule, ordered
from .pieces import WS_MAX
from .pyvalue import literal_args_rule, python_value_rule
from .request_rules import _join, _RequestRules
from .schema import _Converter, schema_value_rule, strict_objects


class _FramedArgs(_RequestRules):
    """A framed call's arguments: JSON, Python, literals, key lines, tags."""

    def tagged_args(self, tool: str) -> str:
        """The arguments after a tagged call's name: JSON, Python, a literal or per-key tags."""
        t = self.t
        name = sanitize_name(tool)
        schema = strict_objects(self.plan.schemas[tool])
        if t.args == "tagged" and t.tagged is not None:
            return self.key_tags(tool, schema)
        if t.args in LINE_ARGS and t.tagged is not None:
            ta = t.tagged
            rule = line_args_rule(self.b, schema, f"{name}-args", prefix=ta.prefix, key_suffix=ta.key_suffix,
                                  quoted=ta.strings_json, end=self.line_end(), separator=ta.separator)
            # pairs on one line begin after the name's marker, or after white space (``NAME key=value``)
            # (at least one white space character: the name would run on into the key)
            ws1 = self.b.rule("ws1", f"[ \\t\\n\\r]{{1,{WS_MAX}}}")
            return _join(ws1, rule) if not ta.prefix and not t.name_suffix.strip() else rule
        if t.args == "json_attr":
            return _join(self.ws, self.attr_json(tool))
        if t.args == "literal" and t.literal is not None:
            lit = t.literal
            rule = literal_args_rule(self.b, schema, f"{name}-args", open_=lit.open, close=lit.close,
                                     sep=lit.kv_sep, quotes=tuple(lit.quotes), bare_strings=lit.bare_strings)
            return _join(self.ws, rule)
        if t.args_as_string:     # a JSON string holding the arguments
            return _join(self.ws, f"( {self.args_string(tool)} | {self.args_value(tool)} )")
        return _join(self.ws, self.args_value(tool))

    def attr_json(self, tool: str) -> str:
        """JSON arguments written with character references inside an attribute value: the tool's
        schema, escaped (:mod:`autoparser.grammar.attrjson`)."""
        schema = strict_objects(self.plan.schemas[tool])
        src = GbnfBuilder()
        root = src.reserve("args")
        src.define(root, " | ".join(_Converter(src, schema, True).alts(schema, root)))
        return escaped_copy(self.b, src, root, f"{sanitize_name(tool)}-attr")

    def line_end(self) -> str:
        """What may follow the last ``key: value`` line's value on that line: the first piece of
        the marker the template writes right after it ("" when a line break comes first)."""
        t = self.t
        for m in (t.call_close, t.call_end):
            if m.strip():
                return "" if m[0].isspace() else mk.tokens(m)[0]
        if t.separator.strip() and not t.separator[0].isspace():
            return " ".join(mk.tokens(t.separator) + mk.tokens(t.call_start + t.name_prefix))
        if t.section_end.strip() and not t.section_end[0].isspace():
            return mk.tokens(t.section_end)[0]
        return ""

    def key_tags(self, tool: str, schema: dict[str, Any]) -> str:
        """Per-key tagged arguments in declared order (optional ones may be left out)."""
        t = self.t
        ta = t.tagged
        assert ta is not None
        name = sanitize_name(tool)

        def value_end(key: str) -> tuple[str, str]:
            """(the value's closing piece, the rest of its end marker) for ``key`` (``</KEY>``)."""
            end = mk.tokens(ta.value_end.replace(mk.NAME_WILDCARD, key))
            rest = self.lead(f"value-end-rest-{key}" if mk.NAME_WILDCARD in ta.value_end else "value-end-rest",
                             " ".join(end[1:])) if len(end) > 1 else ""
            return (end[0] if end else ""), rest

        closing, end_rest = value_end("")
        prefix = self.lead("arg-prefix", ta.prefix)
        key_suffix = self.lead("arg-key-suffix", ta.key_suffix)
        raw = not ta.strings_json and bool(closing)
        # the line break the call reader strips around a raw value (the template's ``>\nV\n</parameter>``)
        edges = ('"\\n"?' if ta.key_suffix.endswith("\n") else "", '"\\n"?' if ta.value_end.startswith("\n") else "")
        raw_props = schema.get("properties")
        props: dict[str, Any] = raw_props if isinstance(raw_props, dict) else {}
        required = [k for k in schema.get("required") or [] if isinstance(k, str)]
        slots: list[tuple[str, bool]] = []
        keys = [*props, *(k for k in required if k not in props)]
        for key in keys:
            prop = props.get(key, {})
            closing, end_rest = value_end(key)
            if _structured(prop) and closing:
                # objects and lists: JSON, or the Python repr a template prints with |string
                value = _join(self.ws, python_value_rule(self.b, prop, f"{name}-{key}-value", root=schema),
                              self.ws, literal(closing))
            else:
                value = schema_value_rule(self.b, prop, f"{name}-{key}-value", raw, closing=closing, pad=self.ws,
                                          raw_edges=edges, root=schema)
            slots.append((_join(prefix, self.ws, literal(key), key_suffix, value, end_rest), key in required))
        if not props and schema.get("additionalProperties", True) is not False:
            # free-form arguments: any key, any raw value
            closing, end_rest = value_end("")
            key_text = self.through("arg-key-suffix", ta.key_suffix) if ta.key_suffix.strip() else self.ws
            value = schema_value_rule(self.b, {}, "any-value", raw, closing=closing, pad=self.ws)
            item = self.b.rule("any-arg", _join(prefix, key_text, value, end_rest))
            return self.b.recursive_rule("any-args", lambda r: f"| {item} {r}")
        sep = self.lead("arg-separator", ta.separator)
        layouts = [ordered(slots, sep)]
        by_key = [slot for _key, slot in sorted(zip(keys, slots, strict=False), key=lambda ks: ks[0].lower())]
        if by_key != slots:   # templates that print arguments with |dictsort
            layouts.append(ordered(by_key, sep))
        return layouts[0] if len(layouts) == 1 else "( " + " | ".join(layouts) + " )"


def _structured(schema: Any) -> bool:
    """An object or array schema (possibly nullable), by its type or keywords."""
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    kinds = set(kind) if isinstance(kind, list) else {kind} if isinstance(kind, str) else set()
    if not kinds:
        return bool({"properties", "items", "prefixItems"} & set(schema))
    return bool(kinds & {"object", "array"}) and kinds <= {"object", "array", "null"}


__all__ = ["_FramedArgs"]
