"""Template sources: Jinja files, Hugging Face folders/configs and GGUF files, built locally."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from autoparser.errors import TemplateError
from autoparser.sources import TemplateSource, load_file, load_gguf, load_path, load_pretrained

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
TOOL_USE = "{{ bos_token }}TOOLS:{{ tools | tojson }}{% for m in messages %}{{ m.content }}{% endfor %}"
JINJA_FILE_TEMPLATE = "{{ bos_token }}{% for m in messages %}[{{ m.role }}] {{ m.content }}{% endfor %}"

SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<think>", "</think>", "<|tool_call>", "<tool_call|>"]
NON_SPECIAL_ADDED = ["<tool_call>", "</tool_call>"]   # Qwen marks these special=False: decoding keeps them


# --------------------------------------------------------------------------- builders


def build_tokenizer(specials: list[str], added: list[str]) -> Any:
    """A byte-level BPE tokenizer: 256 byte tokens, then the given special and plain added tokens."""
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


def write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, ensure_ascii=False), encoding="utf-8")
    return path


def make_model_dir(root: Path, name: str = "Qwen-Mini", *, chat_template: Any = CHATML,
                   tokenizer: bool = True, config_extra: dict[str, Any] | None = None) -> Path:
    """A Hugging Face style folder: tokenizer.json + tokenizer_config.json (+ template)."""
    folder = root / name
    folder.mkdir()
    if tokenizer:
        build_tokenizer(SPECIALS, NON_SPECIAL_ADDED).save(str(folder / "tokenizer.json"))
    config: dict[str, Any] = {
        "bos_token": None,
        "eos_token": {"content": "<|im_end|>", "lstrip": False, "special": True},
        "pad_token": "<|endoftext|>",
        "tokenizer_class": "Qwen2Tokenizer",
    }
    if chat_template is not None:
        config["chat_template"] = chat_template
    config.update(config_extra or {})
    write_json(folder / "tokenizer_config.json", config)
    return folder


def write_gguf(path: Path, *, templates: Any = CHATML, tokens: list[str] | None = None,
               types: list[int] | None = None, bos: int | None = None, eos: int | None = None) -> Path:
    """A tiny vocab-only GGUF (header, kv data, no tensors)."""
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_tokenizer_model("gpt2")
    if tokens is not None:
        writer.add_token_list(tokens)
        writer.add_token_merges(["a b"])
    if types is not None:
        writer.add_token_types(types)
    if bos is not None:
        writer.add_bos_token_id(bos)
    if eos is not None:
        writer.add_eos_token_id(eos)
    if templates is not None:
        writer.add_chat_template(templates)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


GGUF_TOKENS = ["a", "b", "<0x0A>", "<s>", "</s>", "<think>", "</think>", "<|tool_call>", "plain"]
GGUF_TYPES = [1, 1, 6, 3, 3, 4, 4, 3, 1]   # NORMAL, NORMAL, BYTE, CONTROL, CONTROL, USER_DEFINED x2, CONTROL, NORMAL


def load_errors(excinfo: pytest.ExceptionInfo[TemplateError]) -> str:
    """The error text, after checking it is a load-phase TemplateError."""
    assert excinfo.value.phase == "load"
    return str(excinfo.value)


# --------------------------------------------------------------------------- Jinja files


def test_load_file_reads_template_and_tokens(tmp_path: Path) -> None:
    path = tmp_path / "model.jinja"
    path.write_text(JINJA_FILE_TEMPLATE, encoding="utf-8")
    src = load_file(path, bos_token="<s>", eos_token="</s>")
    assert src == TemplateSource(source=JINJA_FILE_TEMPLATE, name="model.jinja", bos_token="<s>",
                                 eos_token="</s>", special_tokens=None, template_names=(), origin="file")


def test_load_file_defaults_to_empty_bos_eos_and_keeps_text_verbatim(tmp_path: Path) -> None:
    text = "{{ 'é' }}<｜User｜>{{ messages[0].content }}\n\n"
    path = tmp_path / "ds.jinja"
    path.write_text(text, encoding="utf-8")
    src = load_file(str(path))
    assert (src.source, src.bos_token, src.eos_token) == (text, "", "")


@pytest.mark.parametrize("content, needle", [(None, "no such file"), ("  \n", "empty"), (b"\xff\xfe{{", "UTF-8")])
def test_load_file_errors(tmp_path: Path, content: str | bytes | None, needle: str) -> None:
    path = tmp_path / "bad.jinja"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(TemplateError) as excinfo:
        load_file(path)
    text = load_errors(excinfo)
    assert needle in text and "bad.jinja" in text


def test_load_file_rejects_directory(tmp_path: Path) -> None:
    with pytest.raises(TemplateError, match="load_pretrained"):
        load_file(tmp_path)


# --------------------------------------------------------------------------- Hugging Face folders


def test_pretrained_folder_with_config_template(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    src = load_pretrained(folder)
    assert src.source == CHATML
    assert src.name == "Qwen-Mini"
    assert src.origin == "pretrained"
    assert src.template_names == ()
    assert (src.bos_token, src.eos_token) == ("", "<|im_end|>")   # None bos, AddedToken-dict eos


def test_pretrained_special_tokens_are_the_added_tokens_marked_special(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    src = load_pretrained(folder)
    assert src.special_tokens == frozenset(SPECIALS)   # special=False added tokens survive decoding
    # the set agrees with the tokenizer's own view of its added tokens
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    assert {t.content for t in tok.get_added_tokens_decoder().values() if t.special} == src.special_tokens
    assert "a" not in src.special_tokens and "Ġ" not in src.special_tokens   # byte tokens are not added


def test_pretrained_special_tokens_merge_config_sources(tmp_path: Path) -> None:
    extra = {
        "added_tokens_decoder": {"300": {"content": "<|python_tag|>", "special": True}},
        "additional_special_tokens": ["<|fim_prefix|>", {"content": "<|fim_suffix|>"}],
        "extra_special_tokens": {"image_token": "<|image|>"},
    }
    src = load_pretrained(make_model_dir(tmp_path, config_extra=extra))
    assert src.special_tokens is not None
    assert {"<|python_tag|>", "<|fim_prefix|>", "<|fim_suffix|>", "<|image|>", "<|im_end|>"} <= src.special_tokens


def test_pretrained_without_tokenizer_has_unknown_specials(tmp_path: Path) -> None:
    src = load_pretrained(make_model_dir(tmp_path, tokenizer=False))
    assert src.special_tokens is None
    assert src.eos_token == "<|im_end|>"


def test_pretrained_added_tokens_decoder_alone_is_a_known_tokenizer(tmp_path: Path) -> None:
    extra = {"added_tokens_decoder": {"7": {"content": "[TOOL_CALLS]", "special": True}}}
    src = load_pretrained(make_model_dir(tmp_path, tokenizer=False, config_extra=extra))
    assert src.special_tokens == frozenset({"[TOOL_CALLS]", "<|im_end|>", "<|endoftext|>"})


def test_chat_template_jinja_takes_precedence(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    (folder / "chat_template.json").write_text(json.dumps({"chat_template": "FROM JSON"}))
    (folder / "chat_template.jinja").write_text("FROM JINJA {{ messages }}")
    assert load_pretrained(folder).source == "FROM JINJA {{ messages }}"
    (folder / "chat_template.jinja").unlink()
    assert load_pretrained(folder).source == "FROM JSON"


def test_chat_template_jinja_without_config_template(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path, chat_template=None)
    (folder / "chat_template.jinja").write_text(CHATML)
    src = load_pretrained(folder)
    assert src.source == CHATML and src.special_tokens is not None and "<think>" in src.special_tokens


NAMED = [{"name": "default", "template": CHATML}, {"name": "tool_use", "template": TOOL_USE}]


def test_named_templates_default_is_selected(tmp_path: Path) -> None:
    src = load_pretrained(make_model_dir(tmp_path, "cmd-r", chat_template=NAMED))
    assert src.source == CHATML
    assert src.template_names == ("default", "tool_use")
    assert src.name == "cmd-r:default"


def test_named_templates_select_tool_use(tmp_path: Path) -> None:
    src = load_pretrained(make_model_dir(tmp_path, "cmd-r", chat_template=NAMED), template_name="tool_use")
    assert src.source == TOOL_USE
    assert src.name == "cmd-r:tool_use"
    assert src.template_names == ("default", "tool_use")


def test_unknown_template_name_lists_available(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path, "cmd-r", chat_template=NAMED)
    with pytest.raises(TemplateError) as excinfo:
        load_pretrained(folder, template_name="rag")
    text = load_errors(excinfo)
    assert "'rag'" in text and "'default'" in text and "'tool_use'" in text


def test_string_template_only_answers_to_default(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    assert load_pretrained(folder, template_name="default").source == CHATML
    with pytest.raises(TemplateError, match="available: 'default'"):
        load_pretrained(folder, template_name="tool_use")


def test_several_templates_without_default_need_a_name(tmp_path: Path) -> None:
    named = [{"name": "rag", "template": "R"}, {"name": "tool_use", "template": TOOL_USE}]
    folder = make_model_dir(tmp_path, chat_template=named)
    with pytest.raises(TemplateError, match=r"none is called 'default'.*'rag', 'tool_use'"):
        load_pretrained(folder)
    assert load_pretrained(folder, template_name="rag").source == "R"


def test_single_named_template_is_used(tmp_path: Path) -> None:
    src = load_pretrained(make_model_dir(tmp_path, chat_template=[{"name": "tool_use", "template": TOOL_USE}]))
    assert src.source == TOOL_USE and src.template_names == () and src.name == "Qwen-Mini"


def test_additional_chat_templates_folder(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    (folder / "additional_chat_templates").mkdir()
    (folder / "additional_chat_templates" / "tool_use.jinja").write_text(TOOL_USE)
    src = load_pretrained(folder, template_name="tool_use")
    assert src.source == TOOL_USE and src.template_names == ("default", "tool_use")


def test_config_json_path_reads_sibling_tokenizer(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path, chat_template=NAMED)
    src = load_pretrained(folder / "tokenizer_config.json", template_name="tool_use")
    assert src.source == TOOL_USE
    assert src.name == "Qwen-Mini:tool_use"
    assert src.special_tokens is not None and "<|im_end|>" in src.special_tokens
    assert "<tool_call>" not in src.special_tokens   # added with special=False
    assert src.origin == "pretrained"


def test_nonstandard_config_name_ignores_siblings(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    other = write_json(folder / "other_model_config.json", {"chat_template": "OTHER", "eos_token": "</s>"})
    src = load_pretrained(other)
    assert (src.source, src.name, src.eos_token) == ("OTHER", "other_model_config.json", "</s>")
    assert src.special_tokens is None   # the folder's tokenizer.json belongs to another model


def test_special_tokens_map_fallback_for_bos(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path, config_extra={"bos_token": None})
    write_json(folder / "special_tokens_map.json", {"bos_token": {"content": "<|endoftext|>"}, "eos_token": "IGNORED"})
    src = load_pretrained(folder)
    assert (src.bos_token, src.eos_token) == ("<|endoftext|>", "<|im_end|>")


@pytest.mark.parametrize("setup, needle", [
    ("no_template", "no chat template"),
    ("bad_json", "invalid JSON"),
    ("missing", "no such file"),
    ("not_object", "expected a JSON object"),
])
def test_pretrained_errors(tmp_path: Path, setup: str, needle: str) -> None:
    folder = make_model_dir(tmp_path, chat_template=None)
    target: Path = folder
    if setup == "bad_json":
        (folder / "tokenizer_config.json").write_text("{not json")
    elif setup == "missing":
        target = folder / "nope"
    elif setup == "not_object":
        (folder / "tokenizer_config.json").write_text("[1, 2]")
    with pytest.raises(TemplateError) as excinfo:
        load_pretrained(target)
    assert needle in load_errors(excinfo)


# --------------------------------------------------------------------------- GGUF


def test_gguf_default_template_and_vocab(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "mini.gguf", tokens=GGUF_TOKENS, types=GGUF_TYPES, bos=3, eos=4)
    src = load_gguf(path)
    assert src.source == CHATML
    assert src.name == "mini.gguf"
    assert src.origin == "gguf"
    assert (src.bos_token, src.eos_token) == ("<s>", "</s>")
    assert src.special_tokens == frozenset({"<s>", "</s>", "<|tool_call>"})   # CONTROL, not USER_DEFINED
    assert src.template_names == ()


def test_gguf_named_templates(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "cmd.gguf", templates=NAMED, tokens=GGUF_TOKENS, types=GGUF_TYPES)
    src = load_gguf(path)
    assert (src.source, src.name) == (CHATML, "cmd.gguf:default")
    assert set(src.template_names) == {"default", "tool_use"}
    tool = load_gguf(path, template_name="tool_use")
    assert (tool.source, tool.name) == (TOOL_USE, "cmd.gguf:tool_use")
    with pytest.raises(TemplateError, match=r"unknown template name 'rag'.*'tool_use'"):
        load_gguf(path, template_name="rag")


def test_gguf_without_token_types_has_unknown_specials(tmp_path: Path) -> None:
    src = load_gguf(write_gguf(tmp_path / "t.gguf", tokens=GGUF_TOKENS, eos=99))
    assert src.special_tokens is None
    assert src.eos_token == ""   # out-of-range id is ignored


def test_gguf_without_template(tmp_path: Path) -> None:
    path = write_gguf(tmp_path / "base.gguf", templates=None, tokens=GGUF_TOKENS, types=GGUF_TYPES)
    with pytest.raises(TemplateError) as excinfo:
        load_gguf(path)
    assert "no tokenizer.chat_template" in load_errors(excinfo)


def test_gguf_garbage_file(tmp_path: Path) -> None:
    pytest.importorskip("gguf")
    path = tmp_path / "junk.gguf"
    path.write_bytes(b"NOTAGGUF" * 8)
    with pytest.raises(TemplateError) as excinfo:
        load_gguf(path)
    assert "not a readable GGUF file" in load_errors(excinfo)


def test_gguf_missing_package_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF")
    monkeypatch.setitem(sys.modules, "gguf", None)   # makes `import gguf` raise ImportError
    with pytest.raises(TemplateError) as excinfo:
        load_gguf(path)
    assert "pip install gguf" in load_errors(excinfo)


def test_gguf_and_pretrained_agree_on_the_same_tokenizer(tmp_path: Path) -> None:
    """The same vocabulary through both routes gives the same template and token facts."""
    folder = make_model_dir(tmp_path)
    tok = build_tokenizer(SPECIALS, NON_SPECIAL_ADDED)
    by_id = {i: t for t, i in tok.get_vocab(with_added_tokens=True).items()}
    added = tok.get_added_tokens_decoder()
    tokens = [by_id[i] for i in range(len(by_id))]
    types = [(3 if added[i].special else 4) if i in added else 1 for i in range(len(by_id))]
    eos = tok.token_to_id("<|im_end|>")
    gguf_src = load_gguf(write_gguf(tmp_path / "same.gguf", tokens=tokens, types=types, eos=eos))
    hf_src = load_pretrained(folder)
    assert gguf_src.source == hf_src.source
    assert gguf_src.eos_token == hf_src.eos_token == "<|im_end|>"
    assert gguf_src.special_tokens == hf_src.special_tokens


# --------------------------------------------------------------------------- load_path dispatch


def test_load_path_dispatch(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    (tmp_path / "t.jinja").write_text(JINJA_FILE_TEMPLATE)
    (tmp_path / "t.txt").write_text(JINJA_FILE_TEMPLATE)
    gguf_path = write_gguf(tmp_path / "m.GGUF", tokens=GGUF_TOKENS, types=GGUF_TYPES)
    assert load_path(folder).origin == "pretrained"
    assert load_path(folder / "tokenizer_config.json").origin == "pretrained"
    assert load_path(gguf_path).origin == "gguf"
    assert load_path(tmp_path / "t.jinja").origin == "file"
    assert load_path(tmp_path / "t.txt").source == JINJA_FILE_TEMPLATE


def test_load_path_overrides_bos_eos(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path)
    src = load_path(folder, bos_token="<|endoftext|>")
    assert (src.bos_token, src.eos_token) == ("<|endoftext|>", "<|im_end|>")
    (tmp_path / "t.jinja").write_text(JINJA_FILE_TEMPLATE)
    jinja = load_path(tmp_path / "t.jinja", bos_token="<s>", eos_token="</s>")
    assert (jinja.bos_token, jinja.eos_token, jinja.special_tokens) == ("<s>", "</s>", None)


def test_load_path_template_name_passes_through(tmp_path: Path) -> None:
    folder = make_model_dir(tmp_path, chat_template=NAMED)
    assert load_path(folder, template_name="tool_use").source == TOOL_USE
    (tmp_path / "t.jinja").write_text(JINJA_FILE_TEMPLATE)
    assert load_path(tmp_path / "t.jinja", template_name="default").source == JINJA_FILE_TEMPLATE
    with pytest.raises(TemplateError, match="one template"):
        load_path(tmp_path / "t.jinja", template_name="tool_use")


def test_load_path_missing(tmp_path: Path) -> None:
    with pytest.raises(TemplateError) as excinfo:
        load_path(tmp_path / "absent.gguf")
    assert "no such file or directory" in load_errors(excinfo)


def test_gguf_reader_without_field_contents(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Older gguf readers have no ``Field.contents()``; values are decoded from the raw parts."""
    import autoparser.sources as sources

    path = write_gguf(tmp_path / "old.gguf", templates=NAMED, tokens=GGUF_TOKENS, types=GGUF_TYPES, bos=3, eos=4)
    expected = load_gguf(path, template_name="tool_use")

    class OldField:
        def __init__(self, field: Any) -> None:
            self.parts, self.data, self.types = field.parts, field.data, field.types

    real = sources._gguf_fields
    monkeypatch.setattr(sources, "_gguf_fields", lambda p: {k: OldField(f) for k, f in real(p).items()})
    assert load_gguf(path, template_name="tool_use") == expected
