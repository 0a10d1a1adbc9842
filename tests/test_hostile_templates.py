"""Hostile chat templates: each must end in a clear TemplateError, within the render limits.

Chat templates are untrusted input (llama-cpp-python's CVE-2024-34359 was a
template rendered outside a sandbox). Every template below tries to escape the
sandbox or to exhaust time or memory. Rendering, ``try_render`` and the analysis
must all stop it with a :class:`~autoparser.errors.TemplateError` that names the
template, the phase and the line. Templates that would escape try to create an
``AUTOPARSER`` file in the working directory; it must never appear.

No test times anything: the renders run with ``RenderLimits(timeout_s=0.5)``,
and that limit is what ends the templates that would run forever.
"""

from __future__ import annotations

import tracemalloc
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

from autoparser.errors import AnalysisError, TemplateError, TemplateLimitError, TemplateSecurityError
from autoparser.render import Renderer, RenderLimits

LIMITS = RenderLimits(timeout_s=0.5)
MESSAGES = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Hi."}]
MARKER = "AUTOPARSER"

# Every hostile body follows this ordinary preamble, so error lines are offset by FIRST_LINE.
PREAMBLE = "{#- a chat template -#}\n{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}\n"
FIRST_LINE = PREAMBLE.count("\n") + 1


@dataclass(frozen=True)
class Hostile:
    body: str
    error: type[TemplateError] = TemplateLimitError
    line: int | tuple[int, ...] = 1   # line(s) of the body the error may be reported at

    @property
    def source(self) -> str:
        return PREAMBLE + self.body


def _many(statement: str, n: int) -> str:
    return "".join(statement % {"i": i} for i in range(n))


S1M = "{% set s = 'x' * 1000000 %}"

HOSTILE: dict[str, Hostile] = {
    # -- attribute walks out of the sandbox ---------------------------------------------------------------
    "str_class_subclasses": Hostile("{{ ''.__class__.__mro__[1].__subclasses__() }}", TemplateSecurityError),
    "getitem_class_walk": Hostile("{{ ()['__class__']['__base__']['__subclasses__']() }}", TemplateSecurityError),
    "attr_filter_walk": Hostile("{{ (''|attr('__class__')|attr('__mro__'))[1].__subclasses__() }}", TemplateError),
    "cycler_globals_os": Hostile(
        "{{ cycler.__init__.__globals__.os.popen('touch AUTOPARSER').read() }}", TemplateSecurityError),
    "joiner_builtins_open": Hostile(
        "{{ joiner.__init__.__globals__['__builtins__']['open']('AUTOPARSER', 'w') }}", TemplateSecurityError),
    "namespace_init_globals": Hostile(
        "{{ namespace.__init__.__globals__['sys'].modules['os'].system('touch AUTOPARSER') }}",
        TemplateSecurityError),
    "namespace_underscore_store": Hostile(
        "{% set ns = namespace() %}\n{% set ns.__class__ = 1 %}", TemplateSecurityError, line=2),
    "lipsum_globals_os": Hostile("{{ lipsum.__globals__['os'].system('touch AUTOPARSER') }}", TemplateSecurityError),
    "range_globals": Hostile("{{ range.__globals__['os'].system('touch AUTOPARSER') }}", TemplateSecurityError),
    "raise_exception_globals": Hostile(
        "{{ raise_exception.__globals__['__builtins__']['exec']('open(\"AUTOPARSER\", \"w\")') }}",
        TemplateSecurityError),
    "strftime_globals": Hostile("{{ strftime_now.__globals__.os.system('touch AUTOPARSER') }}",
                                TemplateSecurityError),
    "dict_fromkeys_func": Hostile("{{ dict.fromkeys.__func__.__globals__['os'] }}", TemplateSecurityError),
    "self_context": Hostile("{{ self._TemplateReference__context.environment.globals }}", TemplateSecurityError),
    "self_init_globals": Hostile("{{ self.__init__.__globals__['os'].system('touch AUTOPARSER') }}",
                                 TemplateSecurityError),
    "loop_internals": Hostile(
        "{% for x in messages %}\n{{ loop._iterator.__class__ }}{{ loop.__init__.__globals__['os'] }}\n{% endfor %}",
        TemplateSecurityError, line=2),
    "input_method_self": Hostile("{{ messages.append.__self__.__class__ }}", TemplateSecurityError),
    "input_mutation": Hostile("{% set _ = messages.append({'role': 'user', 'content': 'x'}) %}",
                              TemplateSecurityError),
    # -- format-string tricks ------------------------------------------------------------------------------
    "format_method_walk": Hostile("{{ '{0.__class__.__mro__[1]}'.format(messages) }}", TemplateSecurityError),
    "format_map_walk": Hostile("{{ '{m.__init__.__globals__}'.format_map({'m': cycler}) }}",
                               TemplateSecurityError),
    "format_filter_walk": Hostile("{{ '%s'|format(messages.__class__.__base__.__subclasses__()) }}",
                                  TemplateSecurityError),
    "percent_operator_walk": Hostile("{{ '%s' % cycler.__init__.__globals__ }}", TemplateSecurityError),
    "format_width": Hostile("{{ '{:>999999999}'.format(1) }}"),
    "format_nested_width": Hostile("{{ '{:{}}'.format(1, 999999999) }}"),
    "format_field_repeat": Hostile(S1M + "{{ '{0}{0}{0}'.format(s) }}"),
    "percent_width": Hostile("{{ '%999999999d' % 1 }}"),
    "percent_star_width": Hostile("{{ '%*d' % (999999999, 1) }}"),
    "percent_mapping_repeat": Hostile(S1M + "{{ '%(a)s%(a)s%(a)s' % {'a': s} }}"),
    "format_filter_width": Hostile("{{ '%0999999999d'|format(1) }}"),
    # -- loops that would never end --------------------------------------------------------------------------
    "range_1e9": Hostile("{% for i in range(10**9) %}{% endfor %}"),
    "nested_range_loops": Hostile("{% for i in range(99999) %}{% for j in range(99999) %}{% endfor %}{% endfor %}"),
    "nested_string_loops": Hostile(
        "{% set s = 'x' * 100000 %}\n{% for a in s %}{% for b in s %}{% endfor %}{% endfor %}", line=2),
    "exponential_macro": Hostile(
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(60) }}"),
    "quadratic_sum": Hostile("{{ ([[1]] * 100000)|sum(start=[])|length }}"),
    # -- recursion -------------------------------------------------------------------------------------------
    "deep_macro_recursion": Hostile("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
    "mutual_macro_recursion": Hostile(
        "{% macro a(n) %}{{ b(n) }}{% endmacro %}\n{% macro b(n) %}{{ a(n) }}{% endmacro %}\n{{ a(0) }}",
        line=(1, 2)),  # whichever macro was running when the recursion limit hit
    "recursive_loop": Hostile("{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}"),
    "caller_recursion": Hostile(
        "{% macro m() %}{% call m() %}x{% endcall %}{{ caller() }}{% endmacro %}{{ m() }}"),
    # -- multiplication, power and huge output -----------------------------------------------------------------
    "string_multiplication": Hostile("{{ 'x' * 10**9 }}"),
    "list_multiplication": Hostile("{{ [1] * 10**9 }}"),
    "reversed_multiplication": Hostile("{{ 10**9 * 'ab' }}"),
    "shared_list_multiplication": Hostile(S1M + "{% set l = [s] * 1000 %}{{ l|length }}"),
    "integer_power": Hostile("{% set ns = namespace(x=10) %}{% for i in range(40) %}{% set ns.x = ns.x ** 64 %}{% endfor %}"),
    "integer_squaring": Hostile("{% set ns = namespace(x=10) %}{% for i in range(40) %}{% set ns.x = ns.x * ns.x %}{% endfor %}"),
    "huge_output": Hostile("{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}"),
    "lipsum_huge": Hostile("{{ lipsum(1000000) }}"),
    "range_list_join_output": Hostile("{{ range(100000)|join('y' * 100000) }}"),
    # -- doubling loops ----------------------------------------------------------------------------------------
    "tilde_doubling": Hostile(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
    "plus_doubling": Hostile(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}"),
    "list_plus_doubling": Hostile(
        "{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}"),
    "extend_self_doubling": Hostile("{% set l = [1] %}{% for i in range(64) %}{% set _ = l.extend(l) %}{% endfor %}"),
    "append_shared_doubling": Hostile(
        S1M + "{% set l = [] %}{% for i in range(1000) %}{% set _ = l.append(s) %}{% endfor %}"),
    "set_block_doubling": Hostile(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
        "{% set b %}{{ ns.s }}{{ ns.s }}{% endset %}{% set ns.s = b %}{% endfor %}"),
    "macro_doubling": Hostile(
        "{% macro d(s) %}{{ s }}{{ s }}{% endmacro %}{% set ns = namespace(s='x') %}"
        "{% for i in range(64) %}{% set ns.s = d(ns.s) %}{% endfor %}"),
    "filter_block_doubling": Hostile(
        "{% set ns = namespace(s='x') %}{% for i in range(64) %}"
        "{% set b %}{% filter upper %}{{ ns.s }}{{ ns.s }}{% endfilter %}{% endset %}{% set ns.s = b %}{% endfor %}"),
    "escape_expansion": Hostile("{{ ('\"' * 1000000)|forceescape }}"),
    # -- filter and method amplification ------------------------------------------------------------------------
    "join_shared_items": Hostile(S1M + "{{ [s, s, s]|join }}"),
    "str_join_method": Hostile(S1M + "{{ ''.join([s, s, s]) }}"),
    "replace_amplification": Hostile("{{ ('x' * 100000)|replace('x', 'y' * 100000) }}"),
    "replace_empty_pattern": Hostile("{{ ('x' * 1000000)|replace('', 'abc') }}"),
    "replace_method": Hostile("{{ ('x' * 100000).replace('x', 'y' * 100000) }}"),
    "center_filter": Hostile("{{ 'x'|center(1000000000) }}"),
    "center_method": Hostile("{{ 'x'.center(1000000000) }}"),
    "ljust_method": Hostile("{{ 'x'.ljust(1000000000) }}"),
    "zfill_method": Hostile("{{ '1'.zfill(1000000000) }}"),
    "expandtabs_method": Hostile("{{ ('\\t' * 1000).expandtabs(1000000) }}"),
    "translate_method": Hostile("{{ ('x' * 100000).translate({120: 'y' * 100000}) }}"),
    "indent_amplification": Hostile("{{ ('\\n' * 100000)|indent(100000) }}"),
    "indent_string_width": Hostile("{{ ('\\n' * 100000)|indent('y' * 100000) }}"),
    "wordwrap_amplification": Hostile("{{ ('a ' * 500000)|wordwrap(1, wrapstring='y' * 1000) }}"),
    "wordwrap_slow_input": Hostile("{{ ('-' * 1000000)|wordwrap(3) }}"),
    "tojson_indent": Hostile("{{ [[[[1]]]]|tojson(indent=1000000000) }}"),
    "tojson_shared": Hostile(S1M + "{{ [s, s, s]|tojson }}"),
    "batch_fill": Hostile("{{ [1]|batch(1000000000, 'x')|list }}"),
    "slice_fill": Hostile(S1M + "{{ [1]|slice(1000, s)|list }}"),
    "striptags_quadratic": Hostile("{{ ('<a>' * 600000)|striptags }}"),
    "urlize_input": Hostile("{{ ('a.b ' * 200000)|urlize }}"),
    "pprint_shared": Hostile(S1M + "{{ [s, s, s]|pprint }}"),
    "string_filter_shared": Hostile(S1M + "{{ [s, s, s]|string }}"),
    "dict_fromkeys_shared": Hostile("{{ dict.fromkeys(range(100000), 'x' * 1000) }}"),
    # -- structures that print far larger than they are ---------------------------------------------------------
    "shared_literal_print": Hostile(S1M + "{% set l = [s, s, s, s, s] %}{{ l }}"),
    "nested_literals": Hostile(
        "{% set s = 'x' * 100000 %}{% set a = [s,s,s,s,s,s,s,s,s,s] %}"
        "{% set b = [a,a,a,a,a,a,a,a,a,a] %}{% set c = [b,b,b,b,b,b,b,b,b,b] %}{{ c|length }}"),
    "varargs_print": Hostile(S1M + "{% macro m() %}{{ varargs }}{% endmacro %}{{ m(s, s, s, s, s) }}"),
    "kwargs_print": Hostile(S1M + "{% macro m() %}{{ kwargs }}{% endmacro %}{{ m(a=s, b=s, c=s) }}"),
    "namespace_shared": Hostile(S1M + "{% set ns = namespace() %}{% set ns.a = [s] %}{% set ns.b = [s] %}{% set ns.c = [s] %}"),
    "tilde_container": Hostile(S1M + "{% set l = [s] %}{% set m = [l, l] %}{{ '' ~ [m, m] }}"),
    "tilde_many_operands": Hostile(S1M + "{{ s" + " ~ s" * 300 + " }}"),  # refused before the join allocates
    "self_referencing_list": Hostile("{% set l = [] %}{% set _ = l.append(l) %}{{ l|tojson }}"),
    "deep_nesting": Hostile(
        "{% set ns = namespace(l=[]) %}{% for i in range(5000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}"),
    # -- memory held across many statements ---------------------------------------------------------------------
    "many_distinct_strings": Hostile(S1M + _many("{%% set a%(i)d = s ~ %(i)d %%}", 200)),
    "many_slices": Hostile(S1M + _many("{%% set a%(i)d = s[%(i)d:] %%}", 200)),
}


@pytest.fixture(autouse=True)
def _in_tmp_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Run in an empty directory; a successful escape would leave an AUTOPARSER file there."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _assert_no_escape(tmp_path: Path) -> None:
    assert not (tmp_path / MARKER).exists(), "a template ran code outside the sandbox"


def test_at_least_thirty_hostile_templates() -> None:
    assert len(HOSTILE) >= 30


@pytest.mark.parametrize("name", list(HOSTILE))
def test_render_ends_in_a_clear_error(name: str, tmp_path: Path) -> None:
    case = HOSTILE[name]
    with pytest.raises(case.error) as info:
        Renderer(case.source, name=name, limits=LIMITS).render(MESSAGES)
    err = info.value
    assert err.template == name and err.phase == "render"
    lines = case.line if isinstance(case.line, tuple) else (case.line,)
    assert err.lineno in [FIRST_LINE + n - 1 for n in lines], str(err)
    assert str(err).startswith(f"{name}, line {err.lineno} (render): ")
    assert err.source_line == case.source.splitlines()[err.lineno - 1]
    _assert_no_escape(tmp_path)


# the cases that build large values; the rest fail before allocating anything worth measuring
_MEMORY_CASES = [n for n, c in HOSTILE.items() if c.error is TemplateLimitError]


@pytest.mark.parametrize("name", _MEMORY_CASES)
def test_render_stays_within_a_memory_bound(name: str) -> None:
    case = HOSTILE[name]
    renderer = Renderer(case.source, name=name, limits=LIMITS)
    tracemalloc.start()
    try:
        with pytest.raises(TemplateLimitError):
            renderer.render(MESSAGES)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # max_work (32 x max_output characters) bounds what a render may hold; one character is 1 byte here
    assert peak < LIMITS.max_work + 64 * 2**20, f"peak {peak / 2**20:.0f} MiB"


@pytest.mark.parametrize("name", list(HOSTILE))
def test_try_render_refuses(name: str, tmp_path: Path) -> None:
    renderer = Renderer(HOSTILE[name].source, name=name, limits=LIMITS)
    assert renderer.try_render(MESSAGES) is None
    assert renderer.try_render(MESSAGES, tools=[], add_generation_prompt=True, enable_thinking=False) is None
    _assert_no_escape(tmp_path)


@pytest.mark.parametrize("name", list(HOSTILE))
def test_analysis_fails_cleanly(name: str, tmp_path: Path) -> None:
    autoparser = pytest.importorskip("autoparser")
    chat_template = getattr(autoparser, "ChatTemplate", None)
    if chat_template is None:
        pytest.skip("autoparser.ChatTemplate not available yet")
    limits = RenderLimits(timeout_s=0.05)  # the analysis renders many probes; keep the runaway ones short
    try:
        analysis = chat_template.from_string(HOSTILE[name].source, name=name, limits=limits).analysis
    except (TemplateError, AnalysisError) as e:
        assert name in str(e)
    else:
        assert analysis.reasoning.mode == "none" and analysis.tools.style == "none"
        assert not analysis.content.start and not analysis.content.end and not analysis.end_of_turn
    _assert_no_escape(tmp_path)


# -- error locations ------------------------------------------------------------------------------------------

def test_runtime_error_names_the_line_inside_a_macro() -> None:
    source = "{% macro m(x) %}\n{{ x.content|upper }}\n{{ x.missing.deeper }}\n{% endmacro %}\n{{ m(messages[0]) }}"
    with pytest.raises(TemplateError) as info:
        Renderer(source, name="t.jinja").render(MESSAGES)
    assert info.value.lineno == 3 and info.value.phase == "render"
    assert str(info.value).startswith("t.jinja, line 3 (render): ")
    assert info.value.source_line == "{{ x.missing.deeper }}"


def test_python_error_names_the_line() -> None:
    source = "ok\n{{ messages|length }}\n{{ 1 // 0 }}\n"
    with pytest.raises(TemplateError) as info:
        Renderer(source, name="div").render(MESSAGES)
    assert info.value.lineno == 3 and "ZeroDivisionError" in str(info.value)


def test_raise_exception_names_the_line() -> None:
    source = "{% if messages[0].role != 'user' %}\n{{ raise_exception('first message must be from the user') }}\n{% endif %}"
    with pytest.raises(TemplateError) as info:
        Renderer(source, name="strict").render(MESSAGES)
    assert info.value.lineno == 2 and "first message must be from the user" in str(info.value)


def test_syntax_error_names_compile_phase_and_line() -> None:
    with pytest.raises(TemplateError) as info:
        Renderer("fine\n{% if %}\n", name="broken")
    assert info.value.phase == "compile" and info.value.lineno == 2


COMPILE_HOSTILE = {
    "nested_parentheses": "{{ " + "(" * 5000 + "1" + ")" * 5000 + " }}",
    "nested_ifs": "{% if 1 %}" * 300 + "x" + "{% endif %}" * 300,
    "nested_fors": "{% for a in [1] %}" * 30 + "x" + "{% endfor %}" * 30,  # Python: too many nested blocks
    "nested_lists": "{{ " + "[" * 3000 + "]" * 3000 + " }}",
}


@pytest.mark.parametrize("name", list(COMPILE_HOSTILE))
def test_sources_that_cannot_compile_fail_at_compile(name: str) -> None:
    with pytest.raises(TemplateLimitError) as info:
        Renderer(COMPILE_HOSTILE[name], name=name, limits=LIMITS)
    assert info.value.phase == "compile" and str(info.value).startswith(f"{name} (compile): ")
    chat_template = getattr(pytest.importorskip("autoparser"), "ChatTemplate", None)
    if chat_template is not None:
        with pytest.raises(TemplateError):
            chat_template.from_string(COMPILE_HOSTILE[name], name=name)  # compiling is enough to refuse


def test_limit_errors_follow_the_configured_limits() -> None:
    small = RenderLimits(timeout_s=0.5, max_output=1000, max_range=10)
    renderer = Renderer("{{ 'x' * n }}", limits=small)
    assert renderer.render([], n=1000) == "x" * 1000
    with pytest.raises(TemplateLimitError):
        renderer.render([], n=1001)
    with pytest.raises(TemplateLimitError):
        Renderer("{% for i in range(11) %}{% endfor %}", limits=small).render([])


# -- the limits do not change what ordinary templates render --------------------------------------------------

BENIGN = [
    "{{ 'ab' * 3 }}|{{ 3 * [1] }}|{{ 2 ** 10 }}|{{ 7 * 6 }}|{{ 'x' + 'y' }}|{{ [1] + [2] }}|{{ (1,) + (2,) }}",
    "{{ '{:>6}|{:.2f}|{!r}'.format('a', 3.14159, 'q') }}|{{ '{0}{1}{0}'.format('a', 'b') }}|{{ '%05d|%s' % (3, 'z') }}",
    "{{ '%(a)s-%(b)s' % {'a': 1, 'b': [2]} }}|{{ '%s %s'|format('a', 'b') }}|{{ '%(x)s'|format(x='k') }}",
    "{{ ['a', 'b', 'c']|join(', ') }}|{{ messages|map(attribute='role')|join('/') }}|{{ ''.join(['p', 'q']) }}",
    "{{ 'mid'|center(9) }}|{{ 'a\nb'|indent(2, true) }}|{{ 'one two three four'|wordwrap(5) }}",
    "{{ 'a-b-c'|replace('-', '+') }}|{{ 'aaa'.replace('a', 'bb', 2) }}|{{ 'x'.rjust(4, '.') }}|{{ '7'.zfill(3) }}",
    "{{ range(5)|list }}|{{ range(3)|sum }}|{{ [[1], [2]]|sum(start=[]) }}|{{ [1, 2, 3, 4, 5]|batch(2, 0)|list }}",
    "{{ [1, 2, 3]|slice(2)|list }}|{{ '<b>x</b> y'|striptags }}|{{ '<&>'|e }}|{{ 'ab'|list }}|{{ [3, 1]|sort }}",
    "{% set ns = namespace(items=[], s='') %}{% for m in messages %}{% set ns.items = ns.items + [m.role] %}"
    "{% set ns.s = ns.s ~ m.content[:3] %}{% endfor %}{{ ns.items }}|{{ ns.s }}",
    "{% set d = {'k': messages[0], 'n': [1, (2, 3)]} %}{{ d.k.role }}|{{ d.n }}|{{ messages[::-1]|map(attribute='role')|list }}",
    "{% macro row(m) %}<{{ m.role }}>{{ caller() if caller else '' }}{% endmacro %}"
    "{% for m in messages %}{% call row(m) %}{{ m.content }}{% endcall %}{% endfor %}",
    "{% for m in messages recursive %}{{ loop.index }}/{{ loop.length }}{{ ',' if not loop.last }}{% endfor %}"
    "{% for m in messages if m.role == 'user' %}{{ m.content }}{% else %}none{% endfor %}",
    "{% set b %}{% for i in range(3) %}{{ i }}{% endfor %}{% endset %}{{ b }}|{% filter upper %}shout{% endfilter %}",
    "{{ messages[0].content.split(' ')|length }}|{{ messages|selectattr('role', 'equalto', 'user')|list|length }}"
    "|{{ messages[0].get('missing', 'dflt') }}|{{ messages[1].content[1:] }}|{{ dict(a=1).items()|list }}",
]


def _reference(mutable: bool) -> jinja2.Environment:
    cls = SandboxedEnvironment if mutable else ImmutableSandboxedEnvironment
    return cls(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])


@pytest.mark.parametrize("source", BENIGN)
def test_ordinary_templates_render_as_in_the_plain_sandbox(source: str) -> None:
    context: dict[str, Any] = {"messages": MESSAGES}
    expected = _reference(False).from_string(source).render(**context)
    assert Renderer(source).render(MESSAGES) == expected


def test_building_lists_with_append_renders_as_a_mutable_sandbox_would() -> None:
    source = ("{% set ns = namespace(ids=[]) %}{% for m in messages %}{% set _ = ns.ids.append(m.role) %}{% endfor %}"
              "{% set first = ns.ids.pop(0) %}{{ first }}|{{ ns.ids }}|{% set d = {} %}{% set _ = d.update({'a': 1}) %}{{ d }}")
    expected = _reference(True).from_string(source).render(messages=MESSAGES)
    assert Renderer(source).render(MESSAGES) == expected == "system|['user']|{'a': 1}"
