"""Template sources: load a chat template and the tokenizer facts that go with it.

A :class:`TemplateSource` carries the Jinja text plus what the analysis and the
per-request decisions need from the tokenizer: the BOS/EOS strings and the set of
special (added) tokens. Nothing here touches the network or needs transformers.

Loaders:

* :func:`load_file`: a bare ``.jinja`` file (no tokenizer known).
* :func:`load_pretrained`: a Hugging Face model folder, or one JSON config file.
  Template precedence in a folder follows transformers: ``chat_template.jinja``,
  then ``chat_template.json``, then ``tokenizer_config.json``; named extras come
  from ``additional_chat_templates/<name>.jinja`` and from list-form configs
  (``[{"name": ..., "template": ...}]``).
* :func:`load_gguf`: a GGUF file, read with ``gguf.GGUFReader`` (imported lazily).
* :func:`load_path`: dispatch on the path (folder, ``*.gguf``, ``*.json``, else Jinja).

Every failure raises :class:`autoparser.errors.TemplateError` with ``phase="load"``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Literal

from .errors import TemplateError

__all__ = ["TemplateSource", "load_file", "load_gguf", "load_path", "load_pretrained"]

Origin = Literal["file", "pretrained", "gguf", "string"]

DEFAULT_TEMPLATE = "default"

_CONFIG_FILE = "tokenizer_config.json"
_TOKENIZER_FILE = "tokenizer.json"
_TEMPLATE_JINJA = "chat_template.jinja"
_TEMPLATE_JSON = "chat_template.json"
_SPECIAL_MAP_FILE = "special_tokens_map.json"
_EXTRA_TEMPLATES_DIR = "additional_chat_templates"

# transformers' named special-token attributes; their values are special tokens.
_NAMED_SPECIAL_KEYS = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token", "mask_token")
_LIST_SPECIAL_KEYS = ("additional_special_tokens", "extra_special_tokens")

# GGUF token types (gguf.TokenType): CONTROL tokens are special (llama.cpp drops them when
# detokenizing without special=True); USER_DEFINED ones are plain added tokens, always rendered.
_GGUF_CONTROL = 3
_GGUF_USER_DEFINED = 4
_GGUF_STRING = 8    # gguf.GGUFValueType.STRING, for readers without Field.contents()


@dataclass(frozen=True)
class TemplateSource:
    """A chat template plus the tokenizer facts known about it."""

    source: str                 # the Jinja text
    name: str                   # display name (file name, or "dir:tool_use")
    bos_token: str = ""
    eos_token: str = ""
    special_tokens: frozenset[str] | None = None   # tokens marked special; None = no tokenizer known
    template_names: tuple[str, ...] = ()           # names available when the config holds several templates
    origin: Origin = "string"   # "file" | "pretrained" | "gguf" | "string"


# --------------------------------------------------------------------------- errors and small helpers


def _fail(message: str, where: str | Path) -> TemplateError:
    """A load-phase TemplateError naming ``where``."""
    return TemplateError(message, template=str(where), phase="load")


def _read_text(path: Path) -> str:
    """Read a UTF-8 text file, turning OS and decode errors into TemplateError."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise _fail("no such file", path) from None
    except UnicodeDecodeError as exc:
        raise _fail(f"not valid UTF-8 ({exc.reason} at byte {exc.start})", path) from None
    except OSError as exc:
        raise _fail(f"cannot read: {exc.strerror or exc}", path) from None


def _read_json(path: Path) -> Any:
    """Parse a JSON file, turning errors into TemplateError."""
    try:
        return json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise _fail(f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", path) from None


def _read_json_object(path: Path) -> dict[str, Any]:
    """Parse a JSON file that must hold an object."""
    data = _read_json(path)
    if not isinstance(data, dict):
        raise _fail(f"expected a JSON object, got {type(data).__name__}", path)
    return data


def _token_text(value: Any) -> str | None:
    """The text of a token given as a string or an AddedToken dict ``{"content": ...}``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        content = value.get("content")
        return content if isinstance(content, str) else None
    return None


def _display_name(base: str, selected: str, names: tuple[str, ...]) -> str:
    """``base`` alone for a single template, ``base:selected`` when there are several."""
    return f"{base}:{selected}" if names else base


def _select(templates: Mapping[str, str], template_name: str | None, where: str | Path) -> tuple[str, str]:
    """Pick ``(name, text)`` from the available templates, as transformers would by default.

    With no ``template_name``: the only template, else the one called ``default``.
    """
    available = ", ".join(repr(n) for n in templates)
    if template_name is not None:
        if template_name not in templates:
            raise _fail(f"unknown template name {template_name!r}; available: {available}", where)
        return template_name, templates[template_name]
    if len(templates) == 1:
        return next(iter(templates.items()))
    if DEFAULT_TEMPLATE in templates:
        return DEFAULT_TEMPLATE, templates[DEFAULT_TEMPLATE]
    raise _fail(f"several chat templates and none is called 'default'; pass template_name, one of: {available}",
                where)


def _names(templates: Mapping[str, str]) -> tuple[str, ...]:
    """The template names worth listing: all of them when there are several, else none."""
    return tuple(templates) if len(templates) > 1 else ()


# --------------------------------------------------------------------------- plain Jinja files


def load_file(path: str | Path, *, bos_token: str | None = None, eos_token: str | None = None) -> TemplateSource:
    """Load a bare Jinja template file; no tokenizer is known (``special_tokens`` is None)."""
    path = Path(path)
    if path.is_dir():
        raise _fail("is a directory; use load_pretrained or load_path for a model folder", path)
    text = _read_text(path)
    if not text.strip():
        raise _fail("template file is empty", path)
    return TemplateSource(source=text, name=path.name, bos_token=bos_token or "", eos_token=eos_token or "",
                          origin="file")


def tokenizer_beside(path: str | Path) -> TemplateSource | None:
    """BOS, EOS and special tokens from a ``tokenizer_config.json`` in the folder of the Jinja file
    ``path`` (a model folder's template saved beside its tokenizer), or None when there is none or it
    cannot be read. The template itself is not taken from it."""
    config_path = Path(path).parent / _CONFIG_FILE
    if not config_path.is_file():
        return None
    try:
        config = _read_json_object(config_path)
    except TemplateError:
        return None
    bos, eos = _bos_eos(config, config_path.parent)
    return TemplateSource(source="", name=config_path.name, bos_token=bos, eos_token=eos,
                          special_tokens=_special_tokens(config, config_path.parent), origin="pretrained")


# --------------------------------------------------------------------------- Hugging Face folders and configs


def _templates_from_value(value: Any) -> dict[str, str]:
    """Normalise a config's ``chat_template`` value: a string, a list of {name, template}, or a dict."""
    if isinstance(value, str):
        return {DEFAULT_TEMPLATE: value} if value.strip() else {}
    if isinstance(value, Mapping):
        return {str(k): v for k, v in value.items() if isinstance(v, str) and v.strip()}
    if isinstance(value, list):
        out: dict[str, str] = {}
        for item in value:
            if isinstance(item, Mapping) and isinstance(item.get("name"), str) and isinstance(item.get("template"), str):
                out[item["name"]] = item["template"]
        return out
    return {}


def _extra_templates(folder: Path) -> dict[str, str]:
    """Named templates from ``additional_chat_templates/<name>.jinja`` (transformers' layout)."""
    extra_dir = folder / _EXTRA_TEMPLATES_DIR
    if not extra_dir.is_dir():
        return {}
    return {p.stem: _read_text(p) for p in sorted(extra_dir.glob("*.jinja"))}


def _folder_templates(folder: Path, config: Mapping[str, Any]) -> dict[str, str]:
    """All templates of a model folder, the default one by transformers' precedence."""
    jinja_file, json_file = folder / _TEMPLATE_JINJA, folder / _TEMPLATE_JSON
    if jinja_file.is_file():
        text = _read_text(jinja_file)
        templates = {DEFAULT_TEMPLATE: text} if text.strip() else {}
    elif json_file.is_file():
        templates = _templates_from_value(_read_json_object(json_file).get("chat_template"))
    else:
        templates = _templates_from_value(config.get("chat_template"))
    templates.update(_extra_templates(folder))
    return templates


def _config_specials(config: Mapping[str, Any]) -> set[str]:
    """Special tokens named by a tokenizer_config.json or special_tokens_map.json."""
    found: set[str] = set()
    decoder = config.get("added_tokens_decoder")
    if isinstance(decoder, Mapping):   # added tokens: only those marked special
        found.update(t for t in map(_token_text, filter(_is_special, decoder.values())) if t)
    for key in _NAMED_SPECIAL_KEYS:
        if text := _token_text(config.get(key)):
            found.add(text)
    for key in _LIST_SPECIAL_KEYS:
        value = config.get(key)
        items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
        found.update(t for t in map(_token_text, items) if t)
    return found


def _is_special(entry: Any) -> bool:
    """An added-token entry (``{"content": ..., "special": ...}``) marked special; a bare string is."""
    return not isinstance(entry, Mapping) or bool(entry.get("special", True))


def _tokenizer_json_added(path: Path) -> set[str] | None:
    """The tokenizer.json ``added_tokens`` marked ``special``; None if the file is absent.

    Tokens added with ``special: false`` (Hermes' and Qwen3-Coder's ``<tool_call>``) are
    not stripped by ``decode(skip_special_tokens=True)`` and do not count.
    """
    if not path.is_file():
        return None
    added = _read_json_object(path).get("added_tokens")
    if not isinstance(added, list):
        return set()
    return {t for t in map(_token_text, filter(_is_special, added)) if t}


def _special_tokens(config: Mapping[str, Any], folder: Path | None) -> frozenset[str] | None:
    """The tokenizer's special tokens, or None when no tokenizer vocabulary is known.

    Known means a ``tokenizer.json`` exists or the config has ``added_tokens_decoder``;
    bos/eos/additional_special_tokens alone are too partial to claim "nothing else is special".
    """
    from_json = _tokenizer_json_added(folder / _TOKENIZER_FILE) if folder else None
    if from_json is None and not isinstance(config.get("added_tokens_decoder"), Mapping):
        return None
    found = set(from_json or ()) | _config_specials(config)
    special_map = folder / _SPECIAL_MAP_FILE if folder else None
    if special_map and special_map.is_file():
        found |= _config_specials(_read_json_object(special_map))
    return frozenset(found)


def _bos_eos(config: Mapping[str, Any], folder: Path | None) -> tuple[str, str]:
    """BOS/EOS strings from the config, falling back to special_tokens_map.json."""
    bos, eos = _token_text(config.get("bos_token")), _token_text(config.get("eos_token"))
    special_map = folder / _SPECIAL_MAP_FILE if folder else None
    if (bos is None or eos is None) and special_map and special_map.is_file():
        fallback = _read_json_object(special_map)
        bos = bos if bos is not None else _token_text(fallback.get("bos_token"))
        eos = eos if eos is not None else _token_text(fallback.get("eos_token"))
    return bos or "", eos or ""


def _build_pretrained(templates: dict[str, str], template_name: str | None, base: str, where: Path,
                      config: Mapping[str, Any], folder: Path | None) -> TemplateSource:
    """Assemble the TemplateSource for a folder or a config file."""
    if not templates:
        raise _fail("no chat template found (looked for chat_template.jinja, chat_template.json and "
                    "tokenizer_config.json 'chat_template')", where)
    selected, text = _select(templates, template_name, where)
    names = _names(templates)
    bos, eos = _bos_eos(config, folder)
    return TemplateSource(source=text, name=_display_name(base, selected, names), bos_token=bos, eos_token=eos,
                          special_tokens=_special_tokens(config, folder), template_names=names,
                          origin="pretrained")


def _load_folder(folder: Path, template_name: str | None) -> TemplateSource:
    """A model folder: templates by transformers' precedence, tokens from all tokenizer files."""
    config_file = folder / _CONFIG_FILE
    config = _read_json_object(config_file) if config_file.is_file() else {}
    templates = _folder_templates(folder, config)
    return _build_pretrained(templates, template_name, folder.resolve().name, folder, config, folder)


def _load_config_file(path: Path, template_name: str | None) -> TemplateSource:
    """One JSON config file: the template comes from this file only.

    Sibling tokenizer files (tokenizer.json, special_tokens_map.json) are read only when
    the file has the standard name ``tokenizer_config.json``, so a folder of unrelated
    configs does not mix tokenizers.
    """
    config = _read_json_object(path)
    templates = _templates_from_value(config.get("chat_template"))
    standard = path.name in (_CONFIG_FILE, _TEMPLATE_JSON)
    base = path.resolve().parent.name if standard else path.name
    folder = path.parent if path.name == _CONFIG_FILE else None
    return _build_pretrained(templates, template_name, base, path, config, folder)


def load_pretrained(path: str | Path, *, template_name: str | None = None) -> TemplateSource:
    """Load a Hugging Face model folder or a tokenizer_config.json / chat_template.json file.

    ``template_name`` selects one of several named templates (e.g. ``"tool_use"``);
    without it the single template, or the one named ``default``, is used.
    """
    path = Path(path)
    if path.is_dir():
        return _load_folder(path, template_name)
    if path.is_file():
        return _load_config_file(path, template_name)
    raise _fail("no such file or directory", path)


# --------------------------------------------------------------------------- GGUF


def _gguf_module() -> Any:
    """Import gguf lazily with a clear error."""
    try:
        import gguf
    except ImportError:
        raise _fail("reading .gguf files needs the 'gguf' package (pip install gguf)", "<gguf>") from None
    return gguf


def _field_value(field: Any) -> Any:
    """A GGUF reader field as a Python value (``contents()`` where available, else from parts)."""
    if hasattr(field, "contents"):
        return field.contents()
    values = [field.parts[i] for i in field.data]
    is_array = len(field.types) > 1
    decoded = [bytes(v).decode("utf-8") if field.types[-1] == _GGUF_STRING else v.tolist()[0] for v in values]
    return decoded if is_array else decoded[0]


def _gguf_fields(path: Path) -> dict[str, Any]:
    """The key/value metadata fields of a GGUF file (values are decoded on use)."""
    gguf = _gguf_module()
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # the reader raises ValueError, struct errors, numpy errors...
        raise _fail(f"not a readable GGUF file: {exc}", path) from None
    return dict(reader.fields)


def _gguf_templates(fields: Mapping[str, Any]) -> dict[str, str]:
    """The default and named chat templates stored in GGUF metadata."""
    templates: dict[str, str] = {}
    if "tokenizer.chat_template" in fields:
        templates[DEFAULT_TEMPLATE] = str(_field_value(fields["tokenizer.chat_template"]))
    prefix = "tokenizer.chat_template."
    listed = _field_value(fields["tokenizer.chat_templates"]) if "tokenizer.chat_templates" in fields else []
    named = [k.removeprefix(prefix) for k in fields if k.startswith(prefix)]
    for name in [*listed, *named]:
        key = prefix + str(name)
        if key in fields and name not in templates:
            templates[str(name)] = str(_field_value(fields[key]))
    return {k: v for k, v in templates.items() if v.strip()}


def _gguf_token(tokens: list[str], fields: Mapping[str, Any], key: str) -> str:
    """The token string for a ``tokenizer.ggml.<x>_token_id`` field, or ""."""
    if key not in fields:
        return ""
    token_id = int(_field_value(fields[key]))
    return tokens[token_id] if 0 <= token_id < len(tokens) else ""


def _gguf_specials(tokens: list[str], fields: Mapping[str, Any]) -> frozenset[str] | None:
    """Tokens typed CONTROL; None when the file has no vocabulary types.

    USER_DEFINED tokens (added without ``special``) are rendered by llama.cpp's detokenizer
    whatever its ``special`` flag, so they do not count.
    """
    if not tokens or "tokenizer.ggml.token_type" not in fields:
        return None
    types = _field_value(fields["tokenizer.ggml.token_type"])
    return frozenset(t for t, kind in zip(tokens, types, strict=False) if int(kind) == _GGUF_CONTROL)


def load_gguf(path: str | Path, *, template_name: str | None = None) -> TemplateSource:
    """Load the chat template and vocabulary facts from a GGUF file (needs ``gguf``)."""
    path = Path(path)
    if not path.is_file():
        raise _fail("no such file", path)
    fields = _gguf_fields(path)
    templates = _gguf_templates(fields)
    if not templates:
        raise _fail("GGUF file has no tokenizer.chat_template", path)
    selected, text = _select(templates, template_name, path)
    names = _names(templates)
    tokens = [str(t) for t in _field_value(fields["tokenizer.ggml.tokens"])] \
        if "tokenizer.ggml.tokens" in fields else []
    return TemplateSource(source=text, name=_display_name(path.name, selected, names),
                          bos_token=_gguf_token(tokens, fields, "tokenizer.ggml.bos_token_id"),
                          eos_token=_gguf_token(tokens, fields, "tokenizer.ggml.eos_token_id"),
                          special_tokens=_gguf_specials(tokens, fields), template_names=names, origin="gguf")


# --------------------------------------------------------------------------- dispatch


def _load_jinja(path: Path, template_name: str | None) -> TemplateSource:
    """A Jinja file holds one template; only ``default`` (or no name) selects it."""
    if template_name not in (None, DEFAULT_TEMPLATE):
        raise _fail(f"unknown template name {template_name!r}; a Jinja file has one template: 'default'", path)
    return load_file(path)


def load_path(path: str | Path, *, template_name: str | None = None, bos_token: str | None = None,
              eos_token: str | None = None) -> TemplateSource:
    """Load any supported source: a folder, ``*.gguf``, ``*.json`` or a Jinja file.

    ``bos_token``/``eos_token``, when given, override what the source says.
    """
    path = Path(path)
    if path.is_dir():
        loaded = load_pretrained(path, template_name=template_name)
    elif not path.exists():
        raise _fail("no such file or directory", path)
    elif path.suffix.lower() == ".gguf":
        loaded = load_gguf(path, template_name=template_name)
    elif path.suffix.lower() == ".json":
        loaded = load_pretrained(path, template_name=template_name)
    else:
        loaded = _load_jinja(path, template_name)
    return _override(loaded, bos_token=bos_token, eos_token=eos_token)


def _override(source: TemplateSource, *, bos_token: str | None, eos_token: str | None) -> TemplateSource:
    """Replace BOS/EOS where the caller gave them."""
    return replace(source, bos_token=source.bos_token if bos_token is None else bos_token,
                   eos_token=source.eos_token if eos_token is None else eos_token)

