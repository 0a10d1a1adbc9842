"""A value's text read back by its spelling and the tool's schema (``values.spelling.decode_value``)."""

from __future__ import annotations

import json

from turns import FIXTURES

from autoparser import ChatTemplate
from autoparser.values.spelling import Items, Slot, Values, decode_value

#: DeepSeek V3.2's DSML parameters: ``string="true">`` before a string, ``string="false">`` before the rest
DSML = Values(string=Slot(pre='true">'), number=Slot(pre='false">'), true='false">true', false='false">false',
              null='false">null', nested_pre='false">')
#: Lua tables: ``{"a", "b"}`` and ``{k = 1}``, so ``{}`` is written alike for an empty array and object
LUA = Values(string=Slot(pre='"', post='"', codec="json"), true="true", false="false", null="nil", nested="own",
             array=Items(open="{", close="}", sep=", "),
             object=Items(open="{", close="}", sep=", ", kv=" = ", keyed=True))


def test_a_stringified_container_after_the_values_own_slot_text() -> None:
    """``string="false">"{\\"a\\": 1}"``: an object-typed value written as a JSON string after the text
    the template writes before every non-string value is decoded, not read as the string it spells."""
    obj = {"type": "object"}
    assert decode_value('false">"{\\"a\\": [1]}"', DSML, obj) == {"a": [1]}
    assert decode_value('false">{"a": [1]}', DSML, obj) == {"a": [1]}
    assert decode_value('true">{"a": [1]}', DSML, {"type": "string"}) == '{"a": [1]}'


def test_an_empty_table_is_what_the_schema_types_it() -> None:
    schema = {"type": "object", "properties": {"tags": {"type": "array"}, "meta": {"type": "object"}}}
    assert decode_value("{tags = {}, meta = {}}", LUA, schema) == {"tags": [], "meta": {}}
    assert decode_value("{}", LUA, {"type": "array"}) == []
    assert decode_value("{}", LUA, {"type": "object"}) == {}
    assert decode_value("{}", LUA, {"type": ["array", "object"]}) == {}   # either: as written first


def test_an_empty_lua_table_in_a_call() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {
        "tags": {"type": "array", "items": {"type": "string"}},
        "filters": {"type": "object", "properties": {"tags": {"type": "array"}}}}}}}]
    req = ChatTemplate.from_file(FIXTURES / "lua_call_sugar.jinja", bos_token="<s>", eos_token="</s>").apply(
        [{"role": "user", "content": "hi"}], tools=tools)
    msg = req.parse("<tool_call>f{tags = {}, filters = {tags = {}}}</tool_call>")
    assert [json.loads(c.arguments) for c in msg.tool_calls] == [{"tags": [], "filters": {"tags": []}}]
    assert msg.tool_calls[0].invalid is None
