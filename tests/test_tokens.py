"""PRE.1 skip_special_tokens: tokenizer facts (HF folder, GGUF) and the no-tokenizer heuristic."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from autoparser.decisions.tokens import (
    SpecialTokenReport,
    heuristic_skip_special_tokens,
    special_looking_parts,
    special_token_parts,
    special_token_status,
)
from autoparser.sources import load_file, load_gguf, load_path, load_pretrained

TEMPLATE = "{% for m in messages %}{{ m.content }}{% endfor %}"

QWEN_SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
QWEN_ADDED = ["<think>", "</think>", "<tool_call>", "</tool_call>"]          # Qwen3: added, special=False
GEMMA4_SPECIAL = ["<bos>", "<eos>", "<|turn>", "<turn|>", "<|channel>", "<channel|>", "<|tool_call>",
                  "<tool_call|>", "<|\"|>"]
HARMONY_SPECIAL = ["<|start|>", "<|end|>", "<|channel|>", "<|message|>", "<|call|>", "<|return|>"]

QWEN_MARKERS = ["<think>", "</think>", "<tool_call>\n", "\n</tool_call>"]
GEMMA4_MARKERS = ["<|channel>thought\n", "<channel|>", "<|tool_call>call:", "<tool_call|>", "<|\"|>"]
HARMONY_MARKERS = ["<|channel|>analysis<|message|>", "<|end|>", "<|start|>assistant<|channel|>final<|message|>"]
PLAIN_MARKERS = ["functools[", "]", "<function=", "\n"]


def build_tokenizer(specials: list[str], added: tuple[str, ...] | list[str] = ()) -> Any:
    """A byte-level BPE tokenizer: 256 byte tokens plus special and plain added tokens."""
    tokenizers = pytest.importorskip("tokenizers")
    from tokenizers import AddedToken, decoders, models, pre_tokenizers
    from tokenizers.pre_tokenizers import ByteLevel

    vocab = {ch: i for i, ch in enumerate(sorted(ByteLevel.alphabet()))}
    tok = tokenizers.Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(specials)
    tok.add_tokens([AddedToken(t, special=False) for t in added])
    return tok


def save_model(root: Path, name: str, tok: Any, eos: str) -> Path:
    """tokenizer.json + tokenizer_config.json + chat_template.jinja in ``root/name``."""
    folder = root / name
    folder.mkdir()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({"eos_token": eos}))
    (folder / "chat_template.jinja").write_text(TEMPLATE)
    return folder


def save_gguf(path: Path, tok: Any) -> Path:
    """The same vocabulary as a GGUF: special added -> CONTROL, plain added -> USER_DEFINED."""
    gguf = pytest.importorskip("gguf")
    by_id = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    added = tok.get_added_tokens_decoder()
    kinds = [(gguf.TokenType.CONTROL if added[i].special else gguf.TokenType.USER_DEFINED)
             if i in added else gguf.TokenType.NORMAL for i in range(len(by_id))]
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list([by_id[i] for i in range(len(by_id))])
    writer.add_token_types(kinds)
    writer.add_token_merges(["a b"])
    writer.add_chat_template(TEMPLATE)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def stripped_by_decode(tok: Any, marker: str) -> bool:
    """Does decoding with skip_special_tokens=True lose part of ``marker``?"""
    ids = tok.encode(marker).ids
    return tok.decode(ids, skip_special_tokens=True) != tok.decode(ids, skip_special_tokens=False)


# --------------------------------------------------------------------------- the heuristic


@pytest.mark.parametrize("marker, parts", [
    ("<|im_end|>", ("<|im_end|>",)),
    ("<｜tool▁calls▁begin｜>", ("<｜tool▁calls▁begin｜>",)),
    ("[TOOL_CALLS]", ("[TOOL_CALLS]",)),
    ("[/THINK]", ("[/THINK]",)),
    ("<think>", ("<think>",)),
    ("\n</tool_call>", ("</tool_call>",)),
    ("<|tool_call>call:", ("<|tool_call>",)),            # Gemma 4 opener
    ("<tool_call|>", ("<tool_call|>",)),                  # Gemma 4 closer
    ("<|channel|>analysis<|message|>", ("<|channel|>", "<|message|>")),
    ("<|start header|>", ("<|start header|>",)),         # pipes may hold spaces
])
def test_special_looking_parts_positive(marker: str, parts: tuple[str, ...]) -> None:
    assert special_looking_parts(marker) == parts


@pytest.mark.parametrize("marker", [
    "functools[", "[{", "a < b > c", "[x]", "[A]", "<>", "<1>", "<function=", "\n\n", "```json", "<tool call>",
])
def test_special_looking_parts_negative(marker: str) -> None:
    assert special_looking_parts(marker) == ()


def test_heuristic_skip_special_tokens() -> None:
    assert heuristic_skip_special_tokens(PLAIN_MARKERS) is True
    assert heuristic_skip_special_tokens([]) is True
    assert heuristic_skip_special_tokens([*PLAIN_MARKERS, "[TOOL_CALLS]"]) is False
    assert heuristic_skip_special_tokens(iter(["<｜tool▁call▁end｜>"])) is False   # any iterable


def test_status_without_tokenizer_is_heuristic() -> None:
    report = special_token_status(GEMMA4_MARKERS, None)
    assert report.source == "heuristic"
    assert report.skip_special_tokens is None
    assert report.preserved_tokens == ("<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", '<|"|>')
    assert "no tokenizer" in report.reason


def test_status_without_tokenizer_plain_markers() -> None:
    report = special_token_status(PLAIN_MARKERS, None)
    assert (report.skip_special_tokens, report.preserved_tokens, report.source) == (None, (), "heuristic")
    assert "suggests True" in report.reason


# --------------------------------------------------------------------------- with a known token set


def test_status_with_tokens_preserves_contained_tokens_in_order() -> None:
    specials = frozenset(HARMONY_SPECIAL)
    report = special_token_status([*HARMONY_MARKERS, "<|end|>"], specials)
    assert report == SpecialTokenReport(
        skip_special_tokens=False,
        preserved_tokens=("<|channel|>", "<|message|>", "<|end|>", "<|start|>"),
        reason=report.reason, source="tokenizer")
    assert "'<|channel|>'" in report.reason


def test_status_with_tokens_none_needed() -> None:
    report = special_token_status(PLAIN_MARKERS, frozenset(QWEN_SPECIAL))
    assert (report.skip_special_tokens, report.preserved_tokens, report.source) == (True, (), "tokenizer")


def test_status_no_markers() -> None:
    assert special_token_status([], frozenset(QWEN_SPECIAL)).skip_special_tokens is True
    assert special_token_status(["", ""], None).preserved_tokens == ()


def test_tokenizer_beats_heuristic() -> None:
    """A tag that looks special but is plain text in this vocabulary does not force False."""
    markers = ["<think>", "</think>"]
    assert heuristic_skip_special_tokens(markers) is False
    assert special_token_status(markers, frozenset(QWEN_SPECIAL)).skip_special_tokens is True


def test_special_token_parts_leftmost_longest_ignores_whitespace_tokens() -> None:
    specials = frozenset({"<|", "<|tool_call>", "<tool_call|>", "\n\n", "<eos>"})
    assert special_token_parts("<|tool_call>call:f{}<tool_call|>\n\n", specials) == ("<|tool_call>", "<tool_call|>")
    assert special_token_parts("\n\n", specials) == ("\n\n",)   # exact match counts even for whitespace
    assert special_token_parts("plain", specials) == ()


# --------------------------------------------------------------------------- through real tokenizers and sources


def test_special_markers_really_are_stripped_by_decode() -> None:
    """The reason PRE.1 exists: special tokens vanish with skip_special_tokens=True."""
    tok = build_tokenizer(GEMMA4_SPECIAL)
    text = "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>}<tool_call|>"
    ids = tok.encode(text).ids
    assert tok.decode(ids, skip_special_tokens=False) == text
    assert tok.decode(ids, skip_special_tokens=True) == "call:get_weather{city:Paris}"


@pytest.mark.parametrize("specials, added, markers", [
    (GEMMA4_SPECIAL, [], GEMMA4_MARKERS),
    (HARMONY_SPECIAL, [], HARMONY_MARKERS),
    (QWEN_SPECIAL, QWEN_ADDED, QWEN_MARKERS),
    (QWEN_SPECIAL, [], QWEN_MARKERS),
])
def test_report_covers_every_marker_decode_would_strip(tmp_path: Path, specials: list[str], added: list[str],
                                                       markers: list[str]) -> None:
    tok = build_tokenizer(specials, added)
    src = load_pretrained(save_model(tmp_path, "m", tok, eos=specials[-1]))
    report = special_token_status(markers, src.special_tokens)
    for marker in markers:
        if stripped_by_decode(tok, marker):
            assert report.skip_special_tokens is False
            assert set(special_token_parts(marker, src.special_tokens or frozenset())) <= set(report.preserved_tokens)


def test_gemma4_folder(tmp_path: Path) -> None:
    src = load_pretrained(save_model(tmp_path, "gemma-4", build_tokenizer(GEMMA4_SPECIAL), eos="<eos>"))
    report = special_token_status(GEMMA4_MARKERS, src.special_tokens)
    assert report.source == "tokenizer"
    assert report.skip_special_tokens is False
    assert report.preserved_tokens == ("<|channel>", "<channel|>", "<|tool_call>", "<tool_call|>", '<|"|>')


def test_qwen_added_non_special_tokens_do_not_count(tmp_path: Path) -> None:
    """Qwen3's <think>/<tool_call> are added with special=False: decoding keeps them, so True."""
    tok = build_tokenizer(QWEN_SPECIAL, QWEN_ADDED)
    src = load_pretrained(save_model(tmp_path, "qwen3", tok, eos="<|im_end|>"))
    assert src.special_tokens is not None and "<tool_call>" not in src.special_tokens
    report = special_token_status(QWEN_MARKERS, src.special_tokens)
    assert (report.skip_special_tokens, report.preserved_tokens) == (True, ())
    assert not any(stripped_by_decode(tok, m) for m in QWEN_MARKERS)


@pytest.mark.parametrize("special", [False, True])
def test_tool_call_added_both_ways(tmp_path: Path, special: bool) -> None:
    """<tool_call> added as AddedToken(special=False) keeps the default; special=True needs False."""
    from tokenizers import AddedToken

    tok = build_tokenizer(QWEN_SPECIAL)
    tok.add_tokens([AddedToken(t, special=special) for t in ("<tool_call>", "</tool_call>")])
    markers = ["<tool_call>\n", "\n</tool_call>"]
    assert any(stripped_by_decode(tok, m) for m in markers) is special   # what decode really does
    for src in (load_pretrained(save_model(tmp_path, f"m{special}", tok, eos="<|im_end|>")),
                load_gguf(save_gguf(tmp_path / f"m{special}.gguf", tok)) if _has_gguf() else None):
        if src is None:
            continue
        report = special_token_status(markers, src.special_tokens)
        assert report.source == "tokenizer"
        assert report.skip_special_tokens is (not special)
        assert report.preserved_tokens == (("<tool_call>", "</tool_call>") if special else ())


def _has_gguf() -> bool:
    try:
        import gguf  # noqa: F401
    except ImportError:
        return False
    return True


def test_plain_text_markers_keep_default(tmp_path: Path) -> None:
    tok = build_tokenizer(QWEN_SPECIAL)
    src = load_path(save_model(tmp_path, "phi", tok, eos="<|im_end|>"))
    report = special_token_status(PLAIN_MARKERS, src.special_tokens)
    assert (report.skip_special_tokens, report.preserved_tokens) == (True, ())
    assert not any(stripped_by_decode(tok, m) for m in PLAIN_MARKERS)


def test_gguf_source_matches_pretrained_source(tmp_path: Path) -> None:
    tok = build_tokenizer(GEMMA4_SPECIAL, QWEN_ADDED)
    hf = load_pretrained(save_model(tmp_path, "g", tok, eos="<eos>"))
    gg = load_gguf(save_gguf(tmp_path / "g.gguf", tok))
    markers = [*GEMMA4_MARKERS, *QWEN_MARKERS, *PLAIN_MARKERS]
    assert special_token_status(markers, gg.special_tokens) == special_token_status(markers, hf.special_tokens)
    assert special_token_status(markers, gg.special_tokens).skip_special_tokens is False


def test_jinja_file_source_falls_back_to_heuristic(tmp_path: Path) -> None:
    path = tmp_path / "gemma4.jinja"
    path.write_text(TEMPLATE)
    src = load_file(path)
    report = special_token_status(GEMMA4_MARKERS, src.special_tokens)
    assert (report.source, report.skip_special_tokens) == ("heuristic", None)
    assert heuristic_skip_special_tokens(GEMMA4_MARKERS) is False
