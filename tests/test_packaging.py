"""Every third-party module autoparser imports is declared in pyproject.toml: an import at a
module's top level in ``dependencies``, a lazy one (inside a function or ``try``) at least in an extra."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:   # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_name(req: str) -> str:
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
    assert match, req
    return _norm(match.group(1))


def third_party_imports() -> dict[str, bool]:
    """Top-level module name -> imported unconditionally at some module's top level."""
    found: dict[str, bool] = {}

    def visit(node: ast.AST, top: bool) -> None:
        for child in ast.iter_child_nodes(node):
            names: list[str] = []
            if isinstance(child, ast.Import):
                names = [a.name for a in child.names]
            elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
                names = [child.module]
            for name in names:
                root = name.split(".")[0]
                if root != "autoparser" and root not in sys.stdlib_module_names and root != "__future__":
                    found[root] = found.get(root, False) or top
            nested = isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Try, ast.If, ast.With))
            visit(child, top and not nested and not isinstance(child, ast.ClassDef))

    for path in sorted((ROOT / "autoparser").rglob("*.py")):
        # a server plugin (autoparser/integrations) is imported only inside its host: its host is an extra
        plugin = path.parent.name == "integrations"
        visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), not plugin)
    return found


def test_every_third_party_import_is_declared() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    required = {_requirement_name(r) for r in project["dependencies"]}
    optional = {_requirement_name(r) for reqs in project.get("optional-dependencies", {}).values() for r in reqs}
    dists = importlib.metadata.packages_distributions()
    imports = third_party_imports()
    assert {"jinja2", "regex"} <= set(imports)   # the scan sees what it must
    missing = []
    for module, top in sorted(imports.items()):
        names = {_norm(d) for d in dists.get(module, [module])}
        declared = required if top else required | optional
        if not names & declared:
            where = "dependencies" if top else "dependencies or an extra"
            missing.append(f"{module} (distribution {'/'.join(sorted(names))}) is not in {where}")
    assert not missing, "\n".join(missing)
