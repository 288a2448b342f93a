"""The pipeline package by role (docs/architecture.md): who may import whom, module sizes."""

from __future__ import annotations

import ast
from pathlib import Path

PIPELINE = Path(__file__).resolve().parents[2] / "energyopt" / "pipeline"
ROLES = ("crawl", "exact", "relaxation", "baselines")
#: Which sub-packages each sub-package may import (besides itself and the top level).
MAY_IMPORT = {
    "crawl": {"relaxation"},
    "exact": {"relaxation"},
    "relaxation": set(),
    "baselines": set(),
}


def _imported_roles(path: Path) -> set[str]:
    """The pipeline sub-packages that ``path`` imports (any import statement)."""
    roles = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[:2] == ["energyopt", "pipeline"] and len(parts) > 2 and parts[2] in ROLES:
                roles.add(parts[2])
    return roles


def test_sub_packages_by_role_exist():
    for role in ROLES:
        assert (PIPELINE / role / "__init__.py").is_file(), role


def test_only_methods_and_the_package_import_sub_packages_from_the_top():
    for path in sorted(PIPELINE.glob("*.py")):
        if path.name in ("__init__.py", "methods.py"):
            continue
        assert not _imported_roles(path), f"{path.name} imports {_imported_roles(path)}"


def test_sub_packages_import_only_what_their_role_may():
    for role, allowed in MAY_IMPORT.items():
        for path in sorted((PIPELINE / role).glob("*.py")):
            extra = _imported_roles(path) - allowed - {role}
            assert not extra, f"{role}/{path.name} imports {sorted(extra)}"


def test_no_pipeline_module_over_600_lines():
    for path in sorted(PIPELINE.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        assert lines <= 600, f"{path.relative_to(PIPELINE)}: {lines} lines"
