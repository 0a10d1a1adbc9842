"""How the limits reach compiled templates: a tree rewrite plus a few ``super()``-calling overrides.

jinja's code generator is not forked: :mod:`autoparser.render.compiler` rewrites
the parsed tree (loop iterables and ``~`` become calls of two internal filters)
and overrides only the visitors that wrap jinja's own output.
"""

from __future__ import annotations

import jinja2
import pytest
from jinja2.compiler import CodeGenerator

from autoparser.errors import TemplateError, TemplateLimitError
from autoparser.render import Renderer, RenderLimits, make_environment
from autoparser.render.compiler import JOIN, LOOP_ITER, LimitedCodeGenerator, limit_tree

MESSAGES = [{"role": "user", "content": "Hi."}]


def test_code_generator_overrides_only_wrapping_visitors() -> None:
    own = {name for name in vars(LimitedCodeGenerator) if name.startswith("visit_")}
    assert own <= {"visit_Template", "visit_Filter", "visit_List", "visit_Dict", "visit_Tuple", "visit_Getitem"}
    assert own <= {name for name in vars(CodeGenerator) if name.startswith("visit_")}


def test_environment_is_an_immutable_sandbox() -> None:
    env = make_environment()
    assert isinstance(env, jinja2.sandbox.ImmutableSandboxedEnvironment)
    assert env.code_generator_class is LimitedCodeGenerator


def test_rewrite_is_idempotent() -> None:
    env = make_environment()
    tree = env.parse("{% for m in messages %}{{ m.role ~ ':' ~ m.content }}{% endfor %}{{ 'a' ~ x }}")
    limit_tree(tree)
    once = tree.dump()
    limit_tree(tree)
    assert tree.dump() == once
    assert once.count(repr(LOOP_ITER)) == 1 and once.count(repr(JOIN)) == 2


@pytest.mark.parametrize("source", [
    "{% for x in [1, 2, 3] %}{{ x }}{% endfor %}",              # a constant iterable is not folded away
    "{% for x in messages recursive %}{{ x.role }}{% endfor %}",
    "{% macro m() %}{% for x in 'abc' %}{{ x }}{% endfor %}{% endmacro %}{{ m() }}",
])
def test_every_loop_checks_the_deadline(source: str) -> None:
    with pytest.raises(TemplateLimitError, match="exceeded"):
        Renderer(source, limits=RenderLimits(timeout_s=-1)).render(MESSAGES)


@pytest.mark.parametrize("name", [LOOP_ITER, JOIN])
def test_internal_filters_cannot_be_named_by_a_template(name: str) -> None:
    with pytest.raises(TemplateError) as info:
        Renderer("{{ 'a' | " + name + " }}").render(MESSAGES)
    assert info.value.phase == "compile"


@pytest.mark.parametrize("source", [
    "{{ 'a' ~ 'b' ~ 1 ~ none ~ [1, 2] }}",
    "{% set x = 'q' %}{{ x ~ (x ~ 'r') ~ x }}",
    "{% for m in messages %}{{ loop.index ~ m.role }}{% endfor %}",
    "{% autoescape true %}{{ '<b>' ~ x ~ ('<i>' | safe) }}{% endautoescape %}",
    "{{ ('<b>' | safe) ~ '<i>' }}",
    "{% autoescape true %}{{ ('<b>' | safe) ~ 'x' }}{% set y = ('<b>' | safe) ~ x %}{{ y }}{% endautoescape %}",
    "{% autoescape flag %}{{ ('<b>' | safe) ~ x }}{% endautoescape %}{{ ('<b>' | safe) ~ x }}",
    "{% autoescape false %}{{ ('<b>' | safe) ~ x }}{% endautoescape %}",
])
def test_concat_renders_as_jinja(source: str) -> None:
    plain = jinja2.sandbox.ImmutableSandboxedEnvironment().from_string(source)
    ours = make_environment().from_string(source)
    context = {"messages": MESSAGES, "x": "<x>", "flag": True}
    assert ours.render(context) == plain.render(context)
