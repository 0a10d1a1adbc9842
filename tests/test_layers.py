"""The package's import graph: no cycles, dependencies one way, every module importable alone."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
grimp = pytest.importorskip("grimp", reason="grimp (installed with import-linter, the test extra) is not installed")


def _graph():  # type: ignore[no-untyped-def]
    return grimp.build_graph("autoparser", exclude_type_checking_imports=False)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycle_between_modules() -> None:
    """Type-checking imports count: a cycle through them is still a cycle in the design."""
    g = _graph()
    edges = {m: set(g.find_modules_directly_imported_by(m)) for m in g.modules}
    # a package's __init__ may re-export its own submodules
    for m in edges:
        edges[m] = {d for d in edges[m] if not m.startswith(d + ".")}
    assert _cycles(edges) == []


def test_layers_contract_is_kept() -> None:
    """The layers contract in pyproject.toml (``lint-imports`` runs the same in CI)."""
    cli = pytest.importorskip("importlinter.cli", reason="import-linter (the test extra) is not installed")
    assert cli.lint_imports(config_filename=str(ROOT / "pyproject.toml")) == 0


def test_every_module_imports_alone() -> None:
    import importlib.util

    # a server plugin imports its host (vLLM), which is an optional extra
    hosts = {"autoparser.integrations.vllm": "vllm", "autoparser.integrations.sglang": "sglang"}
    modules = sorted(m for m in _graph().modules if m != "autoparser.__main__"
                     and (m not in hosts or importlib.util.find_spec(hosts[m]) is not None))

    def run(module: str) -> tuple[str, int, str]:
        proc = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True, text=True, cwd=ROOT)
        return module, proc.returncode, proc.stderr[-400:]

    with ThreadPoolExecutor(max_workers=4) as pool:
        failed = [(m, err) for m, rc, err in pool.map(run, modules) if rc != 0]
    assert failed == []
