"""One verdict on a template's verification, read by ``autoparser check``, the server plugins and
``req.warnings`` alike.

The verification (:class:`~autoparser.analysis.verification.Verification`) says which capabilities
the parser reads back wrong. A project may *accept* a known limitation, per template and
capability (``my-model.jinja:content_tool``: a template that writes an answer before a call into
its reasoning channel, by design). The :class:`Verdict` of a template is its
failed capabilities that no acceptance covers: ``check`` fails on them, a server plugin refuses the
template for them (``AUTOPARSER_ALLOW_UNVERIFIED=1`` serves it anyway) and every request they apply
to carries a warning. Accepted ones are listed apart and block nothing.

An acceptance is ``TEMPLATE:CAPABILITY``: TEMPLATE is a template's name as autoparser shows it, its
file name, that name without ``.jinja``, a model id or folder with ``/`` read as ``-``
(``org/my-model`` is ``org-my-model``), or ``*``; CAPABILITY is a self-test scenario
(``content_tool``), a capability's name (``content before a call``) or ``*``. Lists come from the
command line (``--accept``), ``ChatTemplate(accept=...)`` or the environment variable
:data:`ACCEPT_ENV`; an entry that names a file stands for the entries on its lines (``#`` starts a
comment).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .verification import Capability, Verification

__all__ = ["ACCEPT_ENV", "Acceptance", "Verdict", "accepted_from_env", "parse_accept", "verdict"]

#: The environment variable holding acceptances (entries separated by commas or white space), read
#: by every ``ChatTemplate`` built without ``accept=`` (so by the server plugins too).
ACCEPT_ENV = "AUTOPARSER_ACCEPT"
MAX_ACCEPT_FILE = 1_000_000      # characters of an acceptance file


@dataclass(frozen=True)
class Acceptance:
    """A known limitation a project accepts: ``template`` and ``capability`` as written (or ``*``)."""

    template: str
    capability: str

    def __str__(self) -> str:
        return f"{self.template}:{self.capability}"

    def covers(self, template_name: str, capability: Capability) -> bool:
        return (self.template == "*" or _norm(self.template) in template_keys(template_name)) and \
            self.capability in ("*", capability.scenario, capability.name)


def _norm(name: str) -> str:
    name = name.strip().lower()
    return name[: -len(".jinja")] if name.endswith(".jinja") else name


def template_keys(name: str) -> frozenset[str]:
    """The spellings an acceptance may use for the template called ``name`` (lower case, no ``.jinja``)."""
    full = name.strip().rstrip("/\\")
    base = full.replace("\\", "/").rsplit("/", 1)[-1]
    keys = {full, base, full.replace("\\", "/").strip("/").replace("/", "-")}
    return frozenset(_norm(k) for k in keys if k)


def parse_accept(entries: Iterable[str]) -> tuple[Acceptance, ...]:
    """Acceptances from ``TEMPLATE:CAPABILITY`` entries, or names of files holding them one a line;
    ``ValueError`` naming an entry that is neither."""
    out: list[Acceptance] = []
    for raw in entries:
        entry = raw.strip()
        if not entry or entry.startswith("#"):
            continue
        path = Path(entry)
        if ":" in entry and not path.is_file():
            out.append(_entry(entry))
            continue
        if not path.is_file():
            raise ValueError(f"accept entry {entry!r} is neither TEMPLATE:CAPABILITY nor a file of such lines")
        text = path.read_text(encoding="utf-8")[:MAX_ACCEPT_FILE]
        out += [_entry(line) for line in (raw.split("#", 1)[0].strip() for raw in text.splitlines()) if line]
    return tuple(dict.fromkeys(out))


def _entry(entry: str) -> Acceptance:
    template, sep, capability = entry.rpartition(":")
    if not sep or not template.strip() or not capability.strip():
        raise ValueError(f"accept entry {entry!r} is not TEMPLATE:CAPABILITY")
    return Acceptance(template.strip(), capability.strip())


def accepted_from_env(environ: Mapping[str, str] | None = None) -> tuple[Acceptance, ...]:
    """The acceptances in :data:`ACCEPT_ENV` (commas or white space between entries; a capability
    name with spaces is written with ``_`` or as its scenario)."""
    text = (os.environ if environ is None else environ).get(ACCEPT_ENV, "")
    return parse_accept(text.replace(",", " ").split())


@dataclass(frozen=True)
class Verdict:
    """A template's verification once the project's acceptances are applied."""

    template: str
    failed: tuple[Capability, ...] = ()      # failed, and accepted by no entry: these count
    accepted: tuple[Capability, ...] = ()    # failed, and accepted

    @property
    def ok(self) -> bool:
        return not self.failed

    def applies(self, tools: bool) -> tuple[Capability, ...]:
        """The failed capabilities that concern a request: all with tools, else those not about calls."""
        return self.failed if tools else tuple(c for c in self.failed if not c.calls)

    def describe(self, capabilities: tuple[Capability, ...] | None = None) -> str:
        """The failed capabilities in words, each with its scenario and reason."""
        caps = self.failed if capabilities is None else capabilities
        return "; ".join(f"{c.name} ({c.scenario}): {c.reason}" for c in caps)

    def accept_hint(self) -> str:
        """The ``--accept`` / ``AUTOPARSER_ACCEPT`` entries that would accept what failed."""
        name = sorted(template_keys(self.template), key=len)[0] if self.template else "*"
        return " ".join(f"{name}:{c.scenario}" for c in self.failed)


def verdict(verification: Verification | None, template: str, accepted: Iterable[Acceptance] = ()) -> Verdict:
    """The verdict on ``verification`` of the template called ``template``."""
    caps = verification.failed if verification is not None else ()
    rules = tuple(accepted)
    taken = tuple(c for c in caps if any(a.covers(template, c) for a in rules))
    return Verdict(template, tuple(c for c in caps if c not in taken), taken)
