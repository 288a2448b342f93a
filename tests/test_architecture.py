"""The package's layers, checked on its source (docs/architecture.md).

- In every family, ``methods.py`` is the one module that registers methods; the
  algorithm modules stay free of the registry's ``register``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "energyopt"
FAMILIES = ("pipeline", "capacity", "powercap", "tuning")


def _imports(path: Path) -> list[tuple[str, tuple[str, ...]]]:
    """(module, names) for every import in ``path``, nested ones included."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append((node.module, tuple(a.name for a in node.names)))
        elif isinstance(node, ast.Import):
            out.extend((a.name, ()) for a in node.names)
    return out


@pytest.mark.parametrize("family", FAMILIES)
def test_only_methods_py_registers_methods(family):
    registering = sorted(
        path.name
        for path in (PACKAGE / family).rglob("*.py")
        if any(
            module == "energyopt.core.registry" and "register" in names
            for module, names in _imports(path)
        )
    )
    assert registering == ["methods.py"]


def test_pipeline_package_imports_only_methods_for_registration():
    text = (PACKAGE / "pipeline" / "__init__.py").read_text()
    side_effect_imports = [line for line in text.splitlines() if "noqa: F401" in line]
    assert side_effect_imports == [
        "from energyopt.pipeline import methods as _methods  # noqa: F401  (registers every method)"
    ]
