"""Check GBNF grammars and texts: llguidance over a byte tokenizer, and exact CFG semantics.

    from gbnf_check import accepts, cfg_accepts, grammar_error, sample
    assert grammar_error(gbnf) == ""           # llguidance loads it
    assert accepts(gbnf, '{"a": 1}')           # llguidance matches the text
    assert cfg_accepts(gbnf, '{"a": 1}')       # plain context-free match (llama.cpp's semantics)
    text = sample(gbnf, random.Random(0))      # a random text the grammar generates (None: too long)

llguidance lexes greedily and never backs up more than one byte: a multi-byte lexeme
(a literal, or a rule without recursion, which becomes one regex) that is still alive
hides a shorter alternative that ended earlier. So llguidance rejects some texts that
llama.cpp accepts, e.g. ``word ::= [a-z]{1,5}`` in ``word "ab"`` on ``"xab"``, or
``until("</think>") "</think>"`` on ``"</thi </think>"``. ``cfg_accepts`` has no lexer.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from llguidance import LLMatcher, LLTokenizer, grammar_from
from llguidance._tokenizer import TokenizerWrapper


class ByteTokenizer:
    """256 single-byte tokens plus an EOS token."""

    eos_token_id = 256
    bos_token_id = None
    special_token_ids = [256]  # noqa: RUF012 - read by TokenizerWrapper
    tokens = [bytes([i]) for i in range(256)] + [b"<eos>"]

    def __call__(self, s: str | bytes) -> list[int]:
        return list(s) if isinstance(s, (bytes, bytearray)) else list(s.encode())


@lru_cache(maxsize=1)
def tokenizer() -> LLTokenizer:
    """The shared byte-level llguidance tokenizer."""
    return LLTokenizer(TokenizerWrapper(ByteTokenizer()))


@lru_cache(maxsize=256)
def _compile(gbnf: str) -> tuple[Any, str]:
    """(llguidance grammar, error message); the message is "" when the grammar is valid."""
    try:
        grammar = grammar_from("gbnf", gbnf)
    except ValueError as exc:
        return None, str(exc)
    return grammar, LLMatcher.validate_grammar(grammar, tokenizer())


def grammar_error(gbnf: str) -> str:
    """Why llguidance rejects `gbnf`, or "" when it loads."""
    return _compile(gbnf)[1]


def accepts(gbnf: str, text: str | bytes) -> bool:
    """Whether `gbnf` (rule `root`) matches exactly `text`; raises on an invalid grammar."""
    grammar, error = _compile(gbnf)
    if error:
        raise ValueError(f"invalid grammar: {error}")
    tok = tokenizer()
    matcher = LLMatcher(tok, grammar, log_level=0)
    ids = tok.tokenize_bytes(text) if isinstance(text, bytes) else tok.tokenize_str(text)
    return matcher.validate_tokens(ids) == len(ids) and matcher.consume_tokens(ids) and matcher.is_accepting()


def grammar_words(gbnf: str) -> list[str]:
    """The literals a grammar holds (``"<tool_call>"``), decoded: whole words for :func:`sample`."""
    out = []
    for token in _GBNF_TOKEN.findall(gbnf):
        if not token.startswith('"'):
            continue
        body = token[1:-1]
        chars, i = [], 0
        while i < len(body):
            ch, i = _read_char(body, i)
            chars.append(ch)
        if chars:
            out.append("".join(chars))
    return sorted(set(out))


_GBNF_TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|[^"\[]+')
_FREE = 100      # more allowed bytes than this: free text
_CLOSING = frozenset(b'}]">\n')


def _allowed(matcher: Any) -> list[int]:
    mask = matcher.compute_bitmask()
    return [i for i in range(ByteTokenizer.eos_token_id + 1) if mask[i // 8] >> (i % 8) & 1]


def sample(gbnf: str, rng: random.Random, words: Sequence[str] = (), max_bytes: int = 4000) -> str | None:
    """A random text the grammar generates, sampled byte by byte through llguidance's token mask
    (the byte tokenizer), as a model under constrained decoding writes it: where the grammar allows
    few bytes (structure: markers, names, JSON punctuation) often a whole word (``words`` and the
    grammar's literals) it takes whole; in free text (reasoning, strings, raw values: nearly every
    byte allowed) random printable bytes, closing punctuation weighted up so values end, and now and
    then a word that ends the free text (the grammar allows few bytes after it); the end once the
    grammar allows it, with some chance. None when the text grows past ``max_bytes`` or a multi-byte
    character was cut."""
    grammar, error = _compile(gbnf)
    if error:
        raise ValueError(f"invalid grammar: {error}")
    pool = [list(w.encode()) for w in dict.fromkeys([*words, *grammar_words(gbnf)]) if w]
    matcher = LLMatcher(tokenizer(), grammar, log_level=0)
    eos = ByteTokenizer.eos_token_id
    out = bytearray()
    while len(out) <= max_bytes:
        allowed = _allowed(matcher)
        if not allowed:
            return None
        if eos in allowed and (len(allowed) == 1 or rng.random() < 0.25):
            try:
                return out.decode()
            except UnicodeDecodeError:
                return None
        free = len(allowed) > _FREE
        if pool and rng.random() < (0.15 if free else 0.4):
            for word in rng.sample(pool, min(len(pool), 12)):
                if matcher.validate_tokens(word) != len(word):
                    continue
                matcher.consume_tokens(word)
                if free and len(_allowed(matcher)) > _FREE:    # in free text, only a word that ends it
                    matcher.rollback(len(word))
                    continue
                out.extend(word)
                break
            else:
                word = []
            if word:
                continue
        choices = [i for i in allowed if i != eos]
        weights = [6.0 if i in _CLOSING else 1.0 if 0x20 <= i < 0x7F else 0.05 for i in choices]
        byte = rng.choices(choices, weights)[0]
        matcher.consume_token(byte)
        out.append(byte)
    return None


# --- exact context-free semantics (what llama.cpp implements), pure Python ---------------

_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "[": "[", "]": "]"}
_HEX_LEN = {"x": 2, "u": 4, "U": 8}

Symbol = tuple[Any, ...]  # ("n", rule name) or ("t", negated, ((lo, hi), ...))


def _read_char(s: str, i: int) -> tuple[str, int]:
    """One possibly escaped character of a literal or class, and the next index."""
    if s[i] != "\\":
        return s[i], i + 1
    c = s[i + 1]
    if c in _HEX_LEN:
        n = _HEX_LEN[c]
        return chr(int(s[i + 2 : i + 2 + n], 16)), i + 2 + n
    return _ESCAPES[c], i + 2


class _CfgGrammar:
    """GBNF parsed into plain productions (repetitions and groups desugared)."""

    def __init__(self, gbnf: str) -> None:
        self.prods: dict[str, list[tuple[Symbol, ...]]] = {}
        self._fresh = 0
        for line in gbnf.split("\n"):
            line = line.strip(" \t\r")
            if line and not line.startswith("#"):
                name, body = line.split("::=", 1)
                alts, end = self._alts(body, 0)
                if end != len(body):
                    raise ValueError(f"cannot parse {body[end:]!r}")
                self.prods[name.strip()] = alts

    def _new(self, alts: list[tuple[Symbol, ...]]) -> Symbol:
        self._fresh += 1
        name = f" {self._fresh}"
        self.prods[name] = alts
        return ("n", name)

    def _skip(self, s: str, i: int) -> int:
        while i < len(s) and s[i] in " \t":
            i += 1
        return i

    def _alts(self, s: str, i: int) -> tuple[list[tuple[Symbol, ...]], int]:
        alts = []
        while True:
            seq, i = self._seq(s, i)
            alts.append(tuple(seq))
            i = self._skip(s, i)
            if i >= len(s) or s[i] != "|":
                return alts, i
            i += 1

    def _seq(self, s: str, i: int) -> tuple[list[Symbol], int]:
        seq: list[Symbol] = []
        while True:
            i = self._skip(s, i)
            if i >= len(s) or s[i] in "|)#":
                return seq, i
            atom, i = self._atom(s, i)
            group, i = self._repeat(s, i, atom)
            seq += group

    def _atom(self, s: str, i: int) -> tuple[list[Symbol], int]:
        c = s[i]
        if c == '"':
            out, i = [], i + 1
            while s[i] != '"':
                ch, i = _read_char(s, i)
                out.append(("t", False, ((ord(ch), ord(ch)),)))
            return out, i + 1
        if c == "[":
            return self._class(s, i)
        if c == "(":
            alts, i = self._alts(s, i + 1)
            return [self._new(alts)], self._skip(s, i) + 1
        if c == ".":
            return [("t", True, ())], i + 1
        j = i
        while j < len(s) and (s[j].isalnum() or s[j] in "-_"):
            j += 1
        if j == i:
            raise ValueError(f"unexpected {s[i:]!r}")
        return [("n", s[i:j])], j

    def _class(self, s: str, i: int) -> tuple[list[Symbol], int]:
        i += 1
        negated = s[i] == "^"
        i += negated
        ranges = []
        while s[i] != "]":
            lo, i = _read_char(s, i)
            hi = lo
            if s[i] == "-" and s[i + 1] != "]":
                hi, i = _read_char(s, i + 1)
            ranges.append((ord(lo), ord(hi)))
        return [("t", negated, tuple(ranges))], i + 1

    def _star(self, item: tuple[Symbol, ...]) -> Symbol:
        """New rule matching `item` zero or more times (right recursive)."""
        star = self._new([()])
        self.prods[star[1]].insert(0, (*item, star))
        return star

    def _repeat(self, s: str, i: int, atom: list[Symbol]) -> tuple[list[Symbol], int]:
        item = tuple(atom)
        op = s[i] if i < len(s) else ""
        if op == "?":
            return [self._new([item, ()])], i + 1
        if op in ("*", "+"):
            return [*(item if op == "+" else ()), self._star(item)], i + 1
        if op != "{":
            return list(atom), i
        end = s.index("}", i)
        lo_text, comma, hi_text = s[i + 1 : end].partition(",")
        lo = int(lo_text)
        if comma and not hi_text.strip():
            return [*item * lo, self._star(item)], end + 1
        tail: list[Symbol] = []
        for _ in range((int(hi_text) if comma else lo) - lo):
            tail = [self._new([(*item, *tail), ()])]
        return [*item * lo, *tail], end + 1


def _matches(symbol: Symbol, ch: str) -> bool:
    code = ord(ch)
    inside = any(lo <= code <= hi for lo, hi in symbol[2])
    return inside != symbol[1]


@lru_cache(maxsize=64)
def _cfg(gbnf: str) -> tuple[_CfgGrammar, frozenset[str]]:
    grammar = _CfgGrammar(gbnf)
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for name, alts in grammar.prods.items():
            if name not in nullable and any(all(s[0] == "n" and s[1] in nullable for s in alt) for alt in alts):
                nullable.add(name)
                changed = True
    return grammar, frozenset(nullable)


def cfg_accepts(gbnf: str, text: str, root: str = "root") -> bool:
    """Exact context-free match of `text` (code points) by `gbnf`: an Earley recognizer.

    Unlike llguidance there is no lexer, so this is the semantics llama.cpp's grammar
    sampler implements. Slow: meant for small grammars and texts.
    """
    grammar, nullable = _cfg(gbnf)
    prods = grammar.prods
    sets: list[set[tuple[str, int, int, int]]] = [set() for _ in range(len(text) + 1)]
    for k in range(len(prods[root])):
        sets[0].add((root, k, 0, 0))
    for i in range(len(text) + 1):
        agenda = list(sets[i])
        while agenda:
            lhs, k, dot, origin = agenda.pop()
            rhs = prods[lhs][k]
            new: list[tuple[str, int, int, int]] = []
            if dot == len(rhs):
                new = [(l2, k2, d2 + 1, o2) for (l2, k2, d2, o2) in list(sets[origin])
                       if d2 < len(prods[l2][k2]) and prods[l2][k2][d2] == ("n", lhs)]
            elif rhs[dot][0] == "n":
                name = rhs[dot][1]
                new = [(name, k2, 0, i) for k2 in range(len(prods[name]))]
                if name in nullable:
                    new.append((lhs, k, dot + 1, origin))
            elif i < len(text) and _matches(rhs[dot], text[i]):
                sets[i + 1].add((lhs, k, dot + 1, origin))
            for item in new:
                if item not in sets[i]:
                    sets[i].add(item)
                    agenda.append(item)
    return any(lhs == root and dot == len(prods[lhs][k]) and origin == 0 for lhs, k, dot, origin in sets[len(text)])
