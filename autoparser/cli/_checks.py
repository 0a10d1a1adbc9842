"""The work behind ``autoparser check`` (no rich here: it runs in worker processes and tools).

* finding the templates under the given paths (``collect``);
* expectation files: ``<dir>/<stem>.expected.json`` holding ``analysis.to_dict()`` minus
  the volatile ``digest`` and ``template`` fields (``expected_dict``, ``diff``);
* checking one source (``check_item``): load and render, analyse, look for undetected
  support, run the self-test, compare with (or update) the expectation.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis.model import Analysis
from ..analysis.verdict import accepted_from_env, parse_accept, verdict
from ..errors import AnalysisError, TemplateError
from ._common import CliError, load_source, template_from_source

if TYPE_CHECKING:
    from ..sources import TemplateSource
    from ..template import ChatTemplate

EXPECT_SUFFIX = ".expected.json"
VOLATILE = ("digest", "template")
MODEL_FOLDER_FILES = ("tokenizer_config.json", "chat_template.jinja", "chat_template.json")
CONFIG_FILES = ("tokenizer_config.json", "chat_template.json")

# problem kinds, in the order a template's status is decided
RENDER, CRASH, UNDETECTED, SELFTEST, DRIFT, EXPECTATION = (
    "render", "crash", "undetected", "selftest", "drift", "expectation")
STATUSES = ("detected", "plain", "undetected", "failing", "error")
FILES_GROUP = "files"


# ------------------------------------------------------------------ expectations
def expected_dict(analysis: Analysis) -> dict[str, Any]:
    """What an expectation file stores: the analysis without volatile fields."""
    data = analysis.to_dict()
    for key in VOLATILE:
        data.pop(key, None)
    return data


def dump_expectation(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def read_expectation(path: Path) -> dict[str, Any] | None:
    """The stored expectation, None when there is none; ValueError when unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ValueError(f"cannot read {path.name}: {e.strerror or e}") from None
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{path.name} is not valid JSON: {e}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} does not hold a JSON object")
    for key in VOLATILE:
        data.pop(key, None)
    return data


def normalize(stored: dict[str, Any]) -> dict[str, Any]:
    """A stored expectation read through the current model: fields added to the analysis since it
    was written take their defaults (so a new field at its default is not drift), fields the
    model no longer has are dropped."""
    try:
        return expected_dict(Analysis.from_dict(stored))
    except Exception:   # not an analysis at all: compare it as it is
        return stored


def write_expectation(path: Path, data: dict[str, Any]) -> bool:
    """Write the expectation; True when the file changed."""
    text = dump_expectation(data)
    try:
        if path.read_text(encoding="utf-8") == text:
            return False
    except OSError:
        pass
    path.write_text(text, encoding="utf-8")
    return True


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def diff(stored: Any, current: Any, path: str = "") -> list[str]:
    """The differences between a stored and a current expectation, one line per leaf."""
    if isinstance(stored, dict) and isinstance(current, dict):
        out: list[str] = []
        for key in [*stored, *(k for k in current if k not in stored)]:
            sub = f"{path}.{key}" if path else str(key)
            if key not in current:
                out.append(f"{sub}: {_short(stored[key])} -> (absent)")
            elif key not in stored:
                out.append(f"{sub}: (absent) -> {_short(current[key])}")
            else:
                out += diff(stored[key], current[key], sub)
        return out
    if stored != current:
        return [f"{path or '(root)'}: {_short(stored)} -> {_short(current)}"]
    return []


# ------------------------------------------------------------------ what to check
@dataclass(frozen=True)
class Item:
    """One template source to check."""

    source: str                 # path to load
    display: str                # path as shown in reports (and GitHub annotations)
    group: str                  # the command-line PATH it was found under
    stem: str                   # expectation file stem
    expect_dir: str             # where its expectation file lives
    jinja: bool                 # a bare Jinja file (takes no template name)


def _is_model_folder(path: Path) -> bool:
    return any((path / name).is_file() for name in MODEL_FOLDER_FILES)


def _stem(path: Path) -> str:
    if path.is_dir():
        return path.resolve().name
    if path.name in CONFIG_FILES:
        return path.resolve().parent.name
    return path.stem


def _default_expect_dir(path: Path) -> Path:
    """Beside the template: a file's folder; for a model folder (or its config), the folder's parent."""
    if path.is_dir():
        return path.resolve().parent
    if path.name in CONFIG_FILES:
        return path.resolve().parent.parent
    return path.parent


def _item(path: Path, group: str, expect: Path | None) -> Item:
    return Item(source=str(path), display=str(path), group=group, stem=_stem(path),
                expect_dir=str(expect if expect is not None else _default_expect_dir(path)),
                jinja=path.is_file() and path.suffix.lower() not in (".json", ".gguf"))


def collect(paths: list[str], expect: str | None = None) -> list[Item]:
    """The templates under ``paths``: files as given; a folder's *.jinja, *.gguf and model subfolders."""
    expect_dir = Path(expect) if expect else None
    items: list[Item] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise CliError(f"no such file or directory: {raw}")
        if path.is_file() or _is_model_folder(path):
            items.append(_item(path, FILES_GROUP, expect_dir))   # one progress bar for all single paths
            continue
        found = [p for p in sorted(path.iterdir())
                 if (p.is_file() and p.suffix.lower() in (".jinja", ".gguf"))
                 or (p.is_dir() and _is_model_folder(p))]
        if not found:
            raise CliError(f"no templates in {raw} (looked for *.jinja, *.gguf and model folders)")
        items += [_item(p, raw, expect_dir) for p in found]
    return items


# ------------------------------------------------------------------ checking one template
@dataclass
class Problem:
    kind: str
    message: str
    line: int | None = None


@dataclass
class Result:
    """The outcome for one template (plain data: it crosses process boundaries as a dict)."""

    display: str
    name: str
    group: str
    path: str = ""                 # the file or folder (for annotations)
    status: str = "detected"
    reasoning: str = ""            # analysed formats ("" when the template was not analysed)
    tools: str = ""
    content: str = ""
    selftest: dict[str, str] = field(default_factory=dict)      # scenario -> pass/fail/n/a
    expectation: str = "skipped"   # match | drift | missing | created | updated | unchanged | skipped
    expect_file: str = ""
    problems: list[Problem] = field(default_factory=list)
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Result:
        data = dict(data)
        data["problems"] = [Problem(**p) for p in data.get("problems", [])]
        return cls(**data)

    def counts(self) -> dict[str, int]:
        out = {"pass": 0, "fail": 0, "n/a": 0, "accepted": 0}
        for status in self.selftest.values():
            out[status] = out.get(status, 0) + 1
        return out

    def decide(self) -> None:
        kinds = {p.kind for p in self.problems}
        if kinds & {RENDER, CRASH}:
            self.status = "error"
        elif UNDETECTED in kinds:
            self.status = "undetected"
        elif kinds:
            self.status = "failing"
        elif self.reasoning not in ("", "none") or self.tools not in ("", "none") or self.content == "wrapped":
            self.status = "detected"
        else:
            self.status = "plain"


@dataclass(frozen=True)
class Options:
    selftest: bool = True
    accept: tuple[str, ...] = ()   # TEMPLATE:CAPABILITY entries (--accept), $AUTOPARSER_ACCEPT added
    expect: str = "compare"        # compare | update | off
    require_expect: bool = False
    template_name: str | None = None
    bos_token: str | None = None
    eos_token: str | None = None


def undetected(analysis: Analysis) -> list[str]:
    """What the template renders but the analysis found no format for."""
    out = [note for note in analysis.notes if note.startswith("cannot read:")]   # named by the analysis first
    caps = analysis.capabilities
    if caps.tool_calls and analysis.tools.style == "none":
        out.append("the template renders tool calls but no tool-call format was found")
    in_envelope = analysis.envelope is not None and bool(analysis.envelope.reasoning_key)
    if caps.reasoning and analysis.reasoning.mode == "none" and not in_envelope:
        out.append("the template renders reasoning but no reasoning format was found")
    return out


_BASIC = [{"role": "user", "content": "Hello"}]


def _render_basic(tmpl: ChatTemplate) -> None:
    """Render a one-user-turn prompt, with the probe tools if it needs tools; raise the first error."""
    from ..selftest import PROBE_TOOLS

    first: TemplateError | None = None
    for tools in (None, PROBE_TOOLS):
        try:
            tmpl.render(_BASIC, tools=tools, add_generation_prompt=True)
            return
        except TemplateError as e:
            first = first or e
            if e.phase == "compile":
                break
    assert first is not None
    raise first


def check_item(item: Item, options: Options) -> list[dict[str, Any]]:
    """Check one source; a source holding several named templates gives one result per name
    (unless ``--template-name`` picked one)."""
    start = time.perf_counter()
    name = None if item.jinja else options.template_name
    names: tuple[str, ...] = ()
    try:
        src = load_source(item.source, template_name=name, bos_token=options.bos_token,
                          eos_token=options.eos_token)
        if name is None and len(src.template_names) > 1:
            names = src.template_names
    except TemplateError as e:
        names = _listed_names(e) if name is None and not item.jinja else ()
        if not names:
            return [_failed(item, item.display, RENDER, e, start)]
    except Exception as e:  # a loader bug: report it, keep checking the others
        return [_failed(item, item.display, CRASH, e, start)]
    if names:
        out: list[dict[str, Any]] = []
        for template_name in names:
            named = Item(source=item.source, display=f"{item.display}:{template_name}", group=item.group,
                         stem=item.stem, expect_dir=item.expect_dir, jinja=False)
            out += check_item(named, replace(options, template_name=template_name))
        return out
    stem = item.stem if name is None else f"{item.stem}.{name}"
    return [_check_source(item, src, stem, options, start).to_dict()]


def _listed_names(exc: TemplateError) -> tuple[str, ...]:
    """The template names a 'several chat templates, none is default' load error lists."""
    if "several chat templates" not in exc.message:
        return ()
    listed = exc.message.rsplit("one of:", 1)[-1]
    return tuple(re.findall(r"'([^']*)'", listed))


def _failed(item: Item, display: str, kind: str, exc: BaseException, start: float) -> dict[str, Any]:
    message = exc.message if isinstance(exc, TemplateError) else f"{type(exc).__name__}: {exc}"
    phase = f"{exc.phase}: " if isinstance(exc, TemplateError) else ""
    line = exc.lineno if isinstance(exc, TemplateError) else None
    res = Result(display=display, name=Path(item.source).name, group=item.group, path=item.source,
                 problems=[Problem(kind, f"{phase}{message}".splitlines()[0][:300], line)])
    res.decide()
    res.seconds = time.perf_counter() - start
    return res.to_dict()


_SCENARIO_STATUS = {"verified": "pass", "failed": "fail", "n/a": "n/a"}


def _check_source(item: Item, src: TemplateSource, stem: str, options: Options, start: float) -> Result:

    display = item.display
    res = Result(display=display, name=src.name, group=item.group, path=item.source)
    try:
        tmpl = template_from_source(src)
        _render_basic(tmpl)
    except TemplateError as e:
        res.problems.append(Problem(RENDER, f"{e.phase}: {e.message}".splitlines()[0][:300], e.lineno))
        res.decide()
        res.seconds = time.perf_counter() - start
        return res
    try:
        analysis = tmpl.analysis
    except AnalysisError as e:   # a template no basic conversation can be read from
        res.problems.append(Problem(RENDER, f"analysis: {e}".splitlines()[0][:300]))
        res.decide()
        res.seconds = time.perf_counter() - start
        return res
    except Exception as e:
        res.problems.append(Problem(CRASH, f"analysis raised {type(e).__name__}: {e}".splitlines()[0][:300]))
        res.decide()
        res.seconds = time.perf_counter() - start
        return res
    res.reasoning = analysis.reasoning.mode
    res.tools = analysis.tools.style
    res.content = "wrapped" if (analysis.content.start or analysis.content.end) else "plain"
    res.problems += [Problem(UNDETECTED, msg) for msg in undetected(analysis)]
    if options.selftest:
        try:   # one source of truth: the record the library itself uses at run time
            verification = analysis.verification
        except Exception as e:
            res.problems.append(Problem(CRASH, f"self-test raised {type(e).__name__}: {e}".splitlines()[0][:300]))
        else:
            if verification is None:
                res.problems.append(Problem(CRASH, "self-test did not run"))
            else:
                # the verdict the plugins and req.warnings read: failures no accepted limitation covers
                v = verdict(verification, tmpl.name, (*parse_accept(options.accept), *accepted_from_env()))
                res.selftest = {c.scenario: _SCENARIO_STATUS[c.status] for c in verification.capabilities}
                res.selftest.update({c.scenario: "accepted" for c in v.accepted})
                name = v.accept_hint().split()[0].rpartition(":")[0] if v.failed else ""
                for c in v.failed:
                    res.problems.append(Problem(SELFTEST, f"self-test {c.scenario}: {c.reason} "
                                                          f"(a known limitation? --accept {name}:{c.scenario})"))
    if options.expect != "off":
        _expectation(res, analysis, Path(item.expect_dir) / f"{stem}{EXPECT_SUFFIX}", options)
    res.decide()
    res.seconds = time.perf_counter() - start
    return res


def _expectation(res: Result, analysis: Analysis, path: Path, options: Options) -> None:
    res.expect_file = str(path)
    current = expected_dict(analysis)
    try:
        stored = read_expectation(path)
    except ValueError as e:
        stored = None
        if options.expect != "update":
            res.expectation = "drift"
            res.problems.append(Problem(EXPECTATION, str(e)))
            return
    if options.expect == "update":
        existed = stored is not None
        try:
            changed = write_expectation(path, current)
        except OSError as e:
            res.problems.append(Problem(EXPECTATION, f"cannot write {path}: {e.strerror or e}"))
            return
        res.expectation = ("updated" if existed else "created") if changed else "unchanged"
        return
    if stored is None:
        res.expectation = "missing"
        if options.require_expect:
            res.problems.append(Problem(EXPECTATION, f"no expectation file {path.name} (run with --update)"))
        return
    changes = diff(normalize(stored), current)
    if not changes:
        res.expectation = "match"
        return
    res.expectation = "drift"
    more = f"; and {len(changes) - 3} more" if len(changes) > 3 else ""
    res.problems.append(Problem(DRIFT, f"analysis drifted from {path.name}: " + "; ".join(changes[:3]) + more))
