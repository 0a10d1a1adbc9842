"""Value codecs (autoparser.values.codecs): each codec round-trips any string, decodes a piece at a
time exactly as whole, never raises on garbage; learn_codec picks the codec real Jinja expressions
write; regex_source and the GBNF rule (autoparser.grammar.codecs) accept exactly-encoded values.
"""

from __future__ import annotations

import html
import itertools
import json
import shlex
import urllib.parse
from xml.sax.saxutils import escape as xml_escape

import markupsafe
import pytest
import regex
from gbnf_check import accepts, cfg_accepts, grammar_error
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jinja2.sandbox import ImmutableSandboxedEnvironment

from autoparser.grammar.codecs import codec_const, codec_string_rule
from autoparser.grammar.gbnf import GbnfBuilder
from autoparser.values.codecs import (
    NOT_SCALAR,
    PROBE_STRINGS,
    Codec,
    Spellings,
    decode_number,
    decode_scalar,
    learn_codec,
    learn_codec_explained,
    learn_spelling,
)
from autoparser.values.codecs.escapes import Quoted
from autoparser.values.codecs.learn import _fixed

HYP = settings(max_examples=120, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))

SPECS = (
    "raw", "json", "json(ascii)", "json(ascii,html)", "json(html)", "json(bare)", "json(ascii,html,bare)",
    "python", 'quoted(",backslash)', "quoted(',backslash,nl,tab,cr)", "quoted(`,backslash,bare)",
    'quoted(")', "quoted(',nl,bare)", "doubled(')", 'doubled(",bare)', "shell", "shell(sq)",
    "shell(sq,bs)", "shell(dq)", "shell(dq,bare)", "percent(%20)", "percent(plus)", "percent(%20,safe=)",
    "percent(plus,safe=/)", "entities(html)", "entities(xml)", "entities(quot,#x27)", "entities(quot,apos)",
    "escaped(\\\\ ,=)", "escaped( ,)", 'ifneeded("\\n \\"=\\\\",json)', 'ifneeded("\\n\\",",doubled("))', 'table({"&": "&amp;", "<": "&lt;"})', 'table("<<",{">": "\\\\>", "\\\\": "\\\\\\\\"},">>")', 'table({"\\\\": "\\\\\\\\", "|": "\\\\|"})',
)
# a backslash stands for itself in these and cannot be told from an escape before the quote
NO_BACKSLASH = {'quoted(")', "quoted(',nl,bare)", "escaped( ,)"}
CODECS = [Codec.from_spec(s) for s in SPECS]
IDS = [c.spec for c in CODECS]

SPECIAL = [*"\"'`\\\n\t\r\x00\x1b%+&;=<># ,{}[]()$/:@~|-_.!*?", "é", "中", "😀", "\u2028", "\xa0", "\x85"]
texts = st.text(alphabet=st.sampled_from(SPECIAL) | st.characters(exclude_categories=("Cs",)), max_size=40)
GARBAGE = [*"\"'`\\%&#;xXuU0123456789abcdefABCDEFnrt \n+=<>$", "amp;", "quot;", "\\u", "%E2", "%82", "\\ud83d"]
garbage = st.lists(st.sampled_from(GARBAGE) | st.characters(exclude_categories=("Cs",)), max_size=30).map("".join)


def values_for(codec: Codec) -> st.SearchStrategy[str]:
    return texts.map(lambda s: s.replace("\\", "")) if codec.spec in NO_BACKSLASH else texts


def feed_pieces(codec: Codec, text: str, cuts: list[int]) -> tuple[str, int | None, bool]:
    """Decode `text` cut at `cuts`: (decoded, absolute end, malformed), checking each piece's index."""
    dec, out, start = codec.decoder(), [], 0
    bounds = sorted({c % (len(text) + 1) for c in cuts} | {len(text)})
    for stop in bounds:
        piece = text[start:stop]
        was_done = dec.done
        got, end = dec.feed(piece, final=stop == len(text))
        out.append(got)
        if was_done:
            assert (got, end) == ("", None)
        elif end is not None:
            assert dec.end == start + end
        start = stop
    return "".join(out), dec.end, dec.malformed


def whole(codec: Codec, text: str) -> tuple[str, int | None, bool]:
    dec = codec.decoder()
    got, _ = dec.feed(text, final=True)
    return got, dec.end, dec.malformed


# --- specs -------------------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
def test_spec_round_trips(codec: Codec) -> None:
    assert Codec.from_spec(codec.spec) == codec == Codec(codec.spec)
    assert hash(codec) == hash(Codec.from_spec(codec.spec))
    assert json.loads(json.dumps(codec.spec)) == codec.spec
    assert codec.kind == codec.spec.partition("(")[0]


def test_spec_aliases_and_errors() -> None:
    assert Codec.from_spec("entities(#34,#39)").spec == "entities(html)"
    assert Codec.from_spec("entities(-,-)").spec == "entities(xml)"
    assert Codec.from_spec("percent(%20,safe=/)").spec == "percent(%20)"
    assert Codec.from_spec("json(bare,ascii)").spec == "json(ascii,bare)"
    with pytest.raises(ValueError):
        Codec("entities(#34,#39)")                     # not canonical
    for bad in ("nope", "json(", "json(x)", "quoted(x)", "quoted(\",nl,nl)", "percent(%21)", "table([])",
                'table({"a": "ba"})', 'table({"<": ""})', "escaped()", "raw(x)", "shell(zz)", "doubled(',x)"):
        with pytest.raises(ValueError):
            Codec.from_spec(bad)


# --- encoders against the functions templates use ----------------------------------------------


@HYP
@given(texts)
def test_encoders_are_the_library_functions(s: str) -> None:
    enc = {c.spec: c.encode for c in CODECS}
    assert enc["json"](s) == json.dumps(s, ensure_ascii=False)
    assert enc["json(ascii)"](s) == json.dumps(s)
    assert enc["python"](s) == repr(s)
    assert enc["shell"](s) == shlex.quote(s)
    assert enc["percent(%20)"](s) == urllib.parse.quote(s)
    assert enc["percent(plus)"](s) == urllib.parse.quote_plus(s)
    assert enc["percent(%20,safe=)"](s) == urllib.parse.quote(s, safe="")
    assert enc["entities(html)"](s) == str(markupsafe.escape(s))
    assert enc["entities(xml)"](s) == xml_escape(s)
    assert enc["entities(quot,#x27)"](s) == html.escape(s)
    assert enc["entities(quot,apos)"](s) == xml_escape(s, {'"': "&quot;", "'": "&apos;"})
    assert json.loads(enc["json(ascii,html)"](s)) == s


# --- round trips, pieces, garbage ------------------------------------------------------------------


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
@HYP
@given(data=st.data())
def test_round_trip_whole_and_in_pieces(codec: Codec, data: st.DataObject) -> None:
    s = data.draw(values_for(codec))
    text = codec.encode(s)
    assert codec.decode_checked(text) == (s, True)
    cuts = data.draw(st.lists(st.integers(0, 200), max_size=8))
    got, end, malformed = feed_pieces(codec, text, cuts)
    assert (got, malformed) == (s, False)
    if codec.self_delimiting:
        assert end == len(text)


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
@HYP
@given(text=garbage, cuts=st.lists(st.integers(0, 200), max_size=8))
def test_garbage_decodes_the_same_in_pieces(codec: Codec, text: str, cuts: list[int]) -> None:
    value, ok = codec.decode_checked(text)             # never raises
    assert isinstance(value, str) and isinstance(ok, bool)
    assert feed_pieces(codec, text, cuts) == whole(codec, text)


BARE_AFTER = {"json(bare)": '", x', "json(ascii,html,bare)": '"\n', "quoted(`,backslash,bare)": "` x",
              "quoted(',nl,bare)": "' x", 'doubled(",bare)': '" x', "shell(dq,bare)": '"', "escaped( ,=\\\\)": ", x",
              "escaped( ,)": " x"}


@pytest.mark.parametrize("codec", [c for c in CODECS if c.self_delimiting], ids=lambda c: c.spec)
def test_self_delimiting_value_reports_its_end(codec: Codec) -> None:
    for s in PROBE_STRINGS:
        text = codec.encode(s)
        after = BARE_AFTER.get(codec.spec, "\n</x> rest")
        dec = codec.decoder()
        got, end = dec.feed(text + after)
        assert (got, end, dec.end, dec.malformed) == (s, len(text), len(text), False)
        assert dec.feed("more") == ("", None)


def test_end_index_of_a_value_held_back() -> None:
    """A bare doubled quote waits for the next character: the end lies in the earlier piece."""
    dec = Codec.from_spec("doubled(',bare)").decoder()
    assert dec.feed("it''s'") == ("it's", None)
    assert dec.feed(", x") == ("", -1)
    assert dec.end == 5


@pytest.mark.parametrize(("spec", "text", "value"), [
    ("json", '"a\\qb"', "a\\qb"), ("json", '"\\ud83d"', "\\ud83d"), ("json", '"ab', "ab"), ("json", "ab", "ab"),
    ("python", "'\\xZZ'", "\\xZZ"), ("percent(%20)", "a%ZZb%", "a%ZZb%"), ("percent(%20)", "%C3%28", "%C3("),
    ("entities(html)", "a &bogus; &amp", "a &bogus; &amp"), ("quoted(\",backslash)", '"a\\', "a\\"),
    ("shell", "'abc", "abc"), ('table({"&": "&amp;", "<": "&lt;"})', "a&b", "a&b"),
])
def test_malformed_text_stays_literal(spec: str, text: str, value: str) -> None:
    assert Codec.from_spec(spec).decode_checked(text) == (value, False)


@pytest.mark.parametrize(("spec", "text", "value"), [
    ("json", '"\\u00e9\\ud83d\\ude00\\n"', "é😀\n"), ("python", "'\\x41\\101\\u00e9\\U0001F600'", "AAé😀"),
    ("shell", """a'b c'"d\\"e"\\ f""", 'ab cd"e f'), ("percent(plus)", "a+b%2B%e2%82%ac", "a b+€"),
    ("entities(xml)", "&#65;&#x42;&eacute;&lt;", "ABé<"), ("quoted(',backslash)", "'\\n\\\"'", '\n"'),
])
def test_lenient_decoding(spec: str, text: str, value: str) -> None:
    assert Codec.from_spec(spec).decode_checked(text) == (value, True)


def test_streaming_a_long_value_in_small_pieces() -> None:
    s = ("ligne é 😀 \"q\" & <b> 100% \\ " * 1200)[:32000]
    for codec in CODECS:
        if codec.spec in NO_BACKSLASH:
            continue
        text = codec.encode(s)
        assert feed_pieces(codec, text, list(range(0, len(text), 4)))[0] == s, codec.spec


# --- learning ----------------------------------------------------------------------------------

_JINJA = ImmutableSandboxedEnvironment()
_HF = ImmutableSandboxedEnvironment()
_HF.filters["tojson"] = lambda x, ensure_ascii=False, indent=None: json.dumps(x, ensure_ascii=ensure_ascii, indent=indent)
_HOST = ImmutableSandboxedEnvironment()
_HOST.filters["shell_quote"] = shlex.quote

BS = r"replace('\\', '\\\\')"     # a Jinja filter doubling each backslash, written @bs below
LEARNED = [(source.replace("@bs", BS), env, spec) for source, env, spec in [
    ("{{ v }}", _JINJA, "raw"),
    ("{{ v | tojson }}", _JINJA, "json(ascii,html)"),
    ("{{ v | tojson }}", _HF, "json"),
    ("{{ v | tojson(ensure_ascii=True) }}", _HF, "json(ascii)"),
    ("{{ (v | tojson)[1:-1] }}", _HF, "json(bare)"),
    ("{{ [v] }}", _JINJA, "python"),                       # a list prints its items' repr: cut below
    ("{{ v | e }}", _JINJA, "entities(html)"),
    ("{{ v | forceescape }}", _JINJA, "entities(html)"),
    ("{{ v | replace('&', '&amp;') | replace('<', '&lt;') | replace('>', '&gt;') }}", _JINJA, "entities(xml)"),
    (r"""{{ v | replace('&', '&amp;') | replace('<', '&lt;') | replace('>', '&gt;') | replace('"', '&quot;') | replace("'", '&#x27;') }}""", _JINJA, "entities(quot,#x27)"),
    ("{{ v | urlencode }}", _JINJA, "percent(%20)"),
    ("{{ {'k': v} | urlencode }}", _JINJA, "percent(plus)"),       # cut "k=" below
    (r"""{{ '"' ~ v | @bs | replace('"', '\\"') ~ '"' }}""", _JINJA, 'quoted(",backslash)'),
    (r"""{{ '"' ~ v | @bs | replace('"', '\\"') | replace('\n', '\\n') ~ '"' }}""", _JINJA, 'quoted(",backslash,nl)'),
    (r"""{{ '"' ~ v | @bs | replace('"', '\\"') | replace('\n', '\\n') | replace('\t', '\\t') | replace('\r', '\\r') ~ '"' }}""", _JINJA, 'quoted(",backslash,nl,tab,cr)'),
    (r"""{{ '"' ~ v | replace('"', '\\"') ~ '"' }}""", _JINJA, 'quoted(")'),
    (r"""{{ "'" ~ v | @bs | replace("'", "\\'") ~ "'" }}""", _JINJA, "quoted(',backslash)"),
    (r"""{{ v | @bs | replace("'", "\\'") }}""", _JINJA, "quoted(',backslash,bare)"),
    (r"""{{ "'" ~ v | replace("'", "''") ~ "'" }}""", _JINJA, "doubled(')"),
    (r"""{{ '"' ~ v | replace('"', '""') ~ '"' }}""", _JINJA, 'doubled(")'),
    (r"""{{ v | replace("'", "''") }}""", _JINJA, "doubled(',bare)"),
    ("{{ v | shell_quote }}", _HOST, "shell"),
    (r"""{{ "'" ~ v | replace("'", "'\"'\"'") ~ "'" }}""", _JINJA, "shell(sq)"),
    (r"""{{ "'" ~ v | replace("'", "'\\''") ~ "'" }}""", _JINJA, "shell(sq,bs)"),
    (r"""{{ '"' ~ v | @bs | replace('"', '\\"') | replace('$', '\\$') | replace('`', '\\`') ~ '"' }}""", _JINJA, "shell(dq)"),
    (r"""{{ v | @bs | replace(' ', '\\ ') | replace(',', '\\,') | replace('=', '\\=') }}""", _JINJA, r"escaped( ,=\\)"),
    ("{{ v | replace('&', '&amp;') | replace('<', '&lt;') }}", _JINJA, 'table({"&": "&amp;", "<": "&lt;"})'),
    (r"{{ v | @bs | replace('\n', '\\n') }}", _JINJA, r'table({"\n": "\\n", "\\": "\\\\"})'),
    ("{{ (v | tojson) if (v == '' or ' ' in v or '=' in v or '\"' in v or '\\\\' in v or '\\n' in v) else v }}", _JINJA,
     'ifneeded("\\t\\n\\r\\u001b \\"$%&+,-./:;<=>@\\\\`",json(ascii,html))'),
    ("""{{ ('"' ~ v | replace('"', '""') ~ '"') if (',' in v or '"' in v or '\\n' in v) else v }}""", _JINJA,
     'ifneeded("\\t\\n\\r\\u001b \\"%&+,-./:;<=>@",doubled("))'),
    (r"""{{ "'" ~ v | @bs | replace("'", "\\'") | replace('"', '\\"') ~ "'" }}""", _JINJA, r"""table("'",{"\"": "\\\"", "'": "\\'", "\\": "\\\\"},"'")"""),
]]


def probe_samples(source: str, env: ImmutableSandboxedEnvironment) -> list[tuple[str, str]]:
    template = env.from_string(source)
    out = []
    for p in PROBE_STRINGS:
        text = template.render(v=p)
        if source.startswith("{{ [v]"):
            text = text[1:-1]
        elif "'k': v" in source:
            text = text.removeprefix("k=")
        out.append((p, text))
    return out


@pytest.mark.parametrize(("source", "env", "spec"), LEARNED, ids=[s for _, _, s in LEARNED])
def test_learn_codec_from_real_jinja(source: str, env: ImmutableSandboxedEnvironment, spec: str) -> None:
    samples = probe_samples(source, env)
    codec = learn_codec(samples)
    assert codec is not None and codec.spec == spec
    for value, text in samples:
        assert codec.encode(value) == text and codec.decode(text) == value


def test_probes_tell_the_candidates_apart() -> None:
    """No two codecs of the library (every flag combination) render every probe string alike."""
    head, tail = _fixed()
    quoted = [Quoted(q, *flags) for q in "\"'`" for flags in itertools.product((False, True), repeat=5)]
    seen: dict[tuple[str, ...], str] = {}
    for impl in [*head, *quoted, *tail]:
        key = tuple(impl.encode(p) for p in PROBE_STRINGS)
        assert key not in seen, (impl.spec, seen.get(key))
        seen[key] = impl.spec
    assert 8 <= len(PROBE_STRINGS) <= 12


def test_delimiters() -> None:
    raw = probe_samples("{{ v }}", _JINJA)
    choice = learn_codec_explained(raw, delimiters=['"'])
    assert choice.codec is None and ("raw", '"') in choice.clashes and "delimiter" in choice.reason
    assert learn_codec(raw, delimiters=["\n</arg>"]) == Codec("raw")
    bare = probe_samples("{{ (v | tojson)[1:-1] }}", _HF)
    assert learn_codec(bare, delimiters=['"']) == Codec("json(bare)")
    shell = probe_samples("{{ v | shell_quote }}", _HOST)
    assert learn_codec(shell, delimiters=[" --"]) == Codec("shell")
    assert learn_codec_explained(shell, delimiters=[","]).clashes[0] == ("shell", ",")
    query = probe_samples("{{ {'k': v} | urlencode }}", _JINJA)
    assert learn_codec(query, delimiters=["&"]) == Codec("percent(plus)")
    assert learn_codec(probe_samples("{{ v | e }}", _JINJA), delimiters=["</arg>"]) == Codec("entities(html)")


def test_nothing_fits() -> None:
    upper = probe_samples("{{ v | upper }}", _JINJA)
    choice = learn_codec_explained(upper)
    assert choice.codec is None and choice.reason == "no candidate codec reproduces every sample"
    assert learn_codec_explained([]).reason == "no samples"
    lossy = [("a<b", "a&lt;b"), ("a&b", "a&b"), ("&lt;", "&lt;")]     # & not escaped: ambiguous
    assert learn_codec(lossy) is None
    newlines = probe_samples(r"{{ v | replace('\n', '\\n') }}", _JINJA)   # a backslash is ambiguous
    assert learn_codec(newlines) is None


# --- regex and GBNF ------------------------------------------------------------------------------

NOT_ENCODINGS = {
    "json": ['"a', 'a"', '"a"b"', '"\\x"', '"\\ud83d"', '"a\nb"'],
    "python": ["'a", "'a'b'", "'\\'", "\"a\"b\""],
    'quoted(",backslash)': ['"a', '"a"b"', '"\\"'],
    "doubled(')": ["'a", "'a'b'"],
    "shell": ["", "a b", "'a", "a;b"],
    "percent(%20)": ["a b", "%ZZ", "%C3(", "a&b", "%"],
    "entities(html)": ["a<b", "a&b", 'a"b'],
}


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
@HYP
@given(data=st.data())
def test_regex_source(codec: Codec, data: st.DataObject) -> None:
    pattern = regex.compile(codec.regex_source())
    s = data.draw(values_for(codec))
    assert pattern.fullmatch(codec.encode(s))
    t = data.draw(garbage)
    if pattern.fullmatch(t):                  # what it accepts decodes cleanly
        assert codec.decode_checked(t)[1], t
    for bad in NOT_ENCODINGS.get(codec.spec, []):
        assert not pattern.fullmatch(bad), bad


@pytest.mark.parametrize("codec", [c for c in CODECS if not c.self_delimiting], ids=lambda c: c.spec)
def test_regex_source_until(codec: Codec) -> None:
    pattern = regex.compile(codec.regex_source("</v>") + "</v>")
    for p in PROBE_STRINGS:
        assert pattern.fullmatch(codec.encode(p) + "</v>")
    assert not pattern.fullmatch(codec.encode("a") + "</v>" + codec.encode("b") + "</v>")


def gbnf(codec: Codec, until: str = "", through: bool = False) -> str:
    b = GbnfBuilder()
    b.define(b.reserve("root"), codec_string_rule(b, codec, until, through))
    text = b.render()
    assert grammar_error(text) == ""
    return text


@pytest.mark.parametrize("codec", CODECS, ids=IDS)
def test_gbnf_rule(codec: Codec) -> None:
    grammar = gbnf(codec)
    for p in PROBE_STRINGS:
        if not (codec.spec in NO_BACKSLASH and "\\" in p):
            assert accepts(grammar, codec.encode(p)), p
    for bad in NOT_ENCODINGS.get(codec.spec, []):
        assert not accepts(grammar, bad), bad
    assert cfg_accepts(grammar, codec.encode("a\"'<&\n b"))


@pytest.mark.parametrize("codec", [c for c in CODECS if not c.self_delimiting], ids=lambda c: c.spec)
@pytest.mark.parametrize("until", ["</v>", "\n", "ab", "&"])
def test_gbnf_rule_until(codec: Codec, until: str) -> None:
    grammar = gbnf(codec, until)
    through = gbnf(codec, until, through=True)
    for p in [*PROBE_STRINGS, "xa", "a"]:
        text = codec.encode(p)
        quoted = codec.delimits_when_opened and text.startswith(codec.quote)   # ends by itself
        ok = until not in text or quoted
        assert cfg_accepts(grammar, text) is ok, (p, text)
        assert cfg_accepts(through, text + until) is ((text + until).find(until) == len(text) or quoted), (p, text)


def test_gbnf_const() -> None:
    codec = Codec("json(ascii)")
    b = GbnfBuilder()
    b.define(b.reserve("root"), codec_const(codec, "é\"x"))
    assert accepts(b.render(), '"\\u00e9\\"x"')


# --- scalars -------------------------------------------------------------------------------------


def test_spellings() -> None:
    env = ImmutableSandboxedEnvironment()
    for source, want in [("{{ v }}", ("True", "False", "None")), ("{{ v | tojson }}", ("true", "false", "null")),
                         ("{{ 'on' if v else ('~' if v is none else 'off') }}", ("on", "off", "~")),
                         ("{{ v | int if v is not none else '' }}", ("1", "0", ""))]:
        t = env.from_string(source)
        sp = learn_spelling([(v, t.render(v=v)) for v in (True, False, None)])
        assert (sp.true, sp.false, sp.null) == want
        assert [decode_scalar(x, sp) for x in want] == [True, False, None]
    same = learn_spelling([(True, "x"), (False, "x"), (None, "n")])
    assert same == Spellings(None, None, "n")
    assert decode_scalar("7", Spellings(true="1", false="0")) == 7
    assert decode_scalar("1", Spellings(true="1", false="0")) is True
    assert decode_scalar("yes", Spellings()) is NOT_SCALAR
    assert decode_scalar("7", Spellings(), numbers=False) is NOT_SCALAR


@pytest.mark.parametrize(("text", "value"), [
    ("7", 7), ("-7", -7), ("7.5", 7.5), ("-1e3", -1000.0), ("1e+30", 1e30), ("0", 0), ("1E-05", 1e-05),
    ("007", NOT_SCALAR), ("7.", NOT_SCALAR), (".5", NOT_SCALAR), ("1e999", NOT_SCALAR), ("nan", NOT_SCALAR),
    ("", NOT_SCALAR), ("9" * 5000, NOT_SCALAR), ("+1", NOT_SCALAR), ("0x1", NOT_SCALAR),
])
def test_numbers(text: str, value: object) -> None:
    got = decode_number(text)
    assert got == value and type(got) is type(value)
