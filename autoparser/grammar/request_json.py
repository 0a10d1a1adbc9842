"""JSON call objects in a request's GBNF: the members a call's name prefix spells first, in its
order, the others in any order, up to MAX_EXTRA_MEMBERS other members unless a call is forced; a
forced call object holds the members the template writes in every call (``"jsonrpc": "2.0"``: the
analysis keeps their keys, their values are short scalars)."""

from __future__ import annotations

import itertools
import re

from .gbnf import char_class, literal, sanitize_name
from .pyvalue import LiteralConverter
from .request_rules import _join, _RequestRules
from .schema import _Converter, _group, json_rule, json_string_expr, space_rule

MAX_EXTRA_MEMBERS = 2  # other members of a JSON call object ("type": "function")
CONSTANT = "constant:"  # the role of a constant member of a JSON call object ("jsonrpc": "2.0")
CONSTANT_MAX = 64      # characters of a constant member's string value


class _JsonCalls(_RequestRules):
    """The call object of a JSON-layout call: its members, constant ones, others."""

    def json_call(self, tool: str) -> str:
        """The call object of `tool` in the JSON layout (members in any order, a few others)."""
        layout = self.t.json
        assert layout is not None
        space = space_rule(self.b)
        if layout.name_is_key:
            return _join('"{"', space, self.key_expr(tool), space, '":"', space, self.args_value(tool), space, '"}"')
        roles: dict[str, tuple[str, ...]] = {"name": tuple(layout.name_path), "args": tuple(layout.args_path)}
        if layout.id_path:
            roles["id"] = tuple(layout.id_path)
        if self.plan.forced:
            # the members the template writes in every call besides these (``"jsonrpc": "2.0"``): where
            # no other member may come, they are members of their own
            roles.update({f"{CONSTANT}{k}": (k,) for k in layout.constants if (k,) not in roles.values()})
        return self.json_object(tool, roles, 0)

    def key_expr(self, key: str) -> str:
        if self.t.python_literals:
            return _group([json_string_expr(key), literal("'" + key.replace("\\", "\\\\").replace("'", "\\'") + "'")])
        return json_string_expr(key)

    def role_value(self, tool: str, role: str) -> str:
        if role == "name":
            return self.key_expr(tool)
        if role == "id":
            string = LiteralConverter(self.b, {}).string() if self.t.python_literals else json_rule(self.b, "string")
            return f"( {string} | {json_rule(self.b, 'integer')} )"
        if role.startswith(CONSTANT):
            return self.constant_value(role[len(CONSTANT):])
        args = self.args_value(tool)
        if self.t.json is not None and self.t.json.args_as_string:
            return f"( {self.args_string(tool)} | {args} )"
        return args

    def json_object(self, tool: str, roles: dict[str, tuple[str, ...]], depth: int) -> str:
        """An object holding the members at `depth` of the role paths (inline): those the call's name
        prefix spells (``{"name": ``, ``{"tool_call_id": ``) first, in its order, as the parser finds
        a call by that prefix; the others in any order. Up to MAX_EXTRA_MEMBERS other members may
        follow each known one (``"type": "function"``), and come first only where the name prefix
        says nothing of the order; none in a forced call."""
        space = space_rule(self.b)
        members: dict[str, str] = {}
        for role, path in roles.items():
            key = path[depth]
            if len(path) == depth + 1:
                members[key] = self.role_value(tool, role)
            elif key not in members:
                inner = {r: p for r, p in roles.items() if len(p) > depth + 1 and p[depth] == key}
                members[key] = self.json_object(tool, inner, depth + 1)
        kvs = [_join(self.key_expr(k), space, '":"', space, v, space) for k, v in members.items()]
        if "name" in roles and len(roles["name"]) == depth + 1:
            # the name member is the same in every order: one rule (it starts with its own key)
            i = list(members).index(roles["name"][depth])
            kvs[i] = self.b.rule(f"{sanitize_name(tool)}-name", kvs[i])
        spelled = [k for k in re.findall(r'"((?:[^"\\]|\\.)*)"\s*:', self.t.name_prefix) if k in members]
        first = [kvs[list(members).index(k)] for k in dict.fromkeys(spelled)]
        rest = [kv for kv in kvs if kv not in first]
        after = before = ""
        if not self.plan.forced:
            # a forced call has no other members: one with any JSON value lets a sampler wander off
            # (a random model writes a string until max_tokens and never ends the call)
            extra = self.extra_member(list(members))
            after = self.b.rule("more-members", f'( "," {space} {extra} ){{0,{MAX_EXTRA_MEMBERS}}}')
            if not first:
                before = self.b.rule("lead-members", f'( {extra} "," {space} ){{0,{MAX_EXTRA_MEMBERS}}}')
        orders = [f' "," {space} '.join(_join(kv, after) for kv in (*first, *perm))
                  for perm in itertools.permutations(rest)]
        return _join('"{"', space, before, _group(orders), '"}"')

    def constant_value(self, key: str) -> str:
        """The value of constant member `key` as the template writes it (``"2.0"``); where the
        analysis holds no value for it (read from a stored analysis, or Python literals): a scalar,
        a string of at most CONSTANT_MAX characters (bounded: a sampler cannot run on inside it)."""
        layout = self.t.json
        if layout is not None and not self.t.python_literals and key in layout.constants:
            i = layout.constants.index(key)
            if i < len(layout.constant_values) and layout.constant_values[i]:
                return literal(layout.constant_values[i])
        quotes = "\"'" if self.t.python_literals else '"'
        words = ("true", "false", "null", *(("True", "False", "None") if self.t.python_literals else ()))
        controls = [chr(i) for i in range(0x20)]
        strings = [f"{literal(q)} {char_class([q, chr(92), *controls], negate=True)}{{0,{CONSTANT_MAX}}} {literal(q)}"
                   for q in quotes]
        return self.b.rule("constant-value", " | ".join([*strings, json_rule(self.b, "number"),
                                                         *(literal(w) for w in words)]))

    def extra_member(self, keys: list[str]) -> str:
        """A member whose key is none of `keys`, with any value."""
        space = space_rule(self.b)
        if self.t.python_literals:
            conv = LiteralConverter(self.b, {})
            key, value = conv.any_key(), conv.any_value()
        else:
            key = _Converter(self.b, {}, True).key_excluding(keys, "other-key")
            value = json_rule(self.b, "value")
        return self.b.rule("other-member", _join(key, space, '":"', space, value, space))


__all__ = ["_JsonCalls"]
