"""The package's layers, checked on its source (docs/architecture.md).

- In every family, ``methods.py`` is the one module that registers methods; the
  algorithm modules stay free of the registry's ``register``.
"""

from __future__ import annotations

import ast
import re
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


def _family_imports(layer: str) -> list[str]:
    """``file: module`` for every import of a family module under ``energyopt/<layer>``."""
    out = []
    for path in sorted((PACKAGE / layer).rglob("*.py")):
        for module, names in _imports(path):
            targets = [module] + [f"{module}.{n}" for n in names]
            if any(t.split(".")[:2] == ["energyopt", f] for t in targets for f in FAMILIES):
                out.append(f"{path.relative_to(PACKAGE)}: {module}")
            elif module == "energyopt" and set(names) & set(FAMILIES):
                out.append(f"{path.relative_to(PACKAGE)}: {module} {names}")
    return out


@pytest.mark.parametrize("layer", ["core"])  # profiles: issue 15, moving
def test_lower_layers_import_no_family(layer):
    assert _family_imports(layer) == []


def test_bench_names_no_family():
    """The bench asks the families' hooks; no family's name appears in its code or text."""
    words = re.compile(r"\b(" + "|".join(FAMILIES) + r"|PEM|ANDREAS|PowerFlow|Zeus|Perseus)\b")
    found = []
    for path in sorted((PACKAGE / "bench").rglob("*")):
        if path.suffix not in (".py", ".j2", ".html", ".md") or not path.is_file():
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if words.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{n}: {line.strip()}")
    assert _family_imports("bench") == []
    assert found == []


def test_families_are_discovered_not_listed():
    from energyopt.core import registry

    assert sorted(registry.FAMILY_MODULES) == sorted(FAMILIES)
    text = (PACKAGE / "core" / "registry.py").read_text()
    assert not any(f'"{f}"' in text for f in FAMILIES)


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_has_hooks_and_evaluation_protocol(family):
    from energyopt.core.evaluation import Evaluation
    from energyopt.core.registry import family_hooks, get_method

    hooks = family_hooks(family)
    assert hooks.name == family and hooks.objective_unit
    # Every family's smoke instance, solved and re-evaluated through the protocol.
    from energyopt.bench.families import suite_instances

    inst = suite_instances(family, "smoke")[0]
    cheap = {"pipeline": "bruteforce", "capacity": "fifo", "powercap": "greedy",
             "tuning": "default"}  # fmt: skip
    res = get_method(family, cheap[family]).function(inst, time_limit=10, seed=0)
    if res.solution is not None:
        ev = hooks.evaluate(inst, res.solution)
        assert isinstance(ev, Evaluation)
        assert ev.feasible and ev.objective == pytest.approx(res.objective)
        assert all(hasattr(f, "unit") for f in ev.figures().values())
