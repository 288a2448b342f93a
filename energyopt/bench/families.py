"""Families that provide benchmark suites, found through the registry.

A family takes part in the benchmark library once it has a module
``energyopt.<family>.suites`` with ``suite(name) -> list[Instance]``; families
without one yet are skipped, so the library grows as the families land.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from energyopt.core.instance import InstanceError, load_instance
from energyopt.core.registry import FAMILY_MODULES, families

#: The suites every family provides (see the shared conventions).
SUITE_NAMES = ("smoke", "paper")


def suites_module(family: str) -> ModuleType | None:
    """``energyopt.<family>.suites`` if that module exists, else ``None``.

    An import error *inside* an existing suites module is raised: a broken
    module must not pass silently as a missing one.
    """
    package = FAMILY_MODULES[family]
    name = f"{package}.suites"
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name in (name, package):
            return None
        raise


def families_with_suites(only: Sequence[str] | None = None) -> list[str]:
    """Families (sorted by name) whose suites module exists, restricted to ``only``."""
    if only:
        unknown = sorted(set(only) - set(families()))
        if unknown:
            raise ValueError(
                f"unknown family {', '.join(map(repr, unknown))}; known: {', '.join(families())}"
            )
    return [f for f in families() if (not only or f in only) and suites_module(f) is not None]


def load_instance_file(path: str | Path) -> Any:
    """:func:`energyopt.core.instance.load_instance`, with a binary file also reported as
    an :class:`InstanceError` naming it (not a bare decoding error)."""
    try:
        return load_instance(Path(path))
    except UnicodeDecodeError:
        raise InstanceError(f"{path}: not a text file (not an instance JSON file)") from None


def suite_function(family: str) -> Callable[[str], list[Any]]:
    module = suites_module(family)
    if module is None:
        raise ValueError(f"family {family!r} has no suites module (energyopt.{family}.suites)")
    return module.suite


def suite_instances(family: str, name: str) -> list[Any]:
    """The instances of suite ``name`` of ``family``, as its suites module generates them."""
    return list(suite_function(family)(name))


def missing_data(family: str, suite: str) -> list[str]:
    """Data files that ``family``'s suite derives instances from and that are missing here.

    A suites module says so with ``missing_data(suite) -> list[str]``; one without that
    function derives nothing from data.
    """
    module = suites_module(family)
    fn = getattr(module, "missing_data", None)
    return list(fn(suite)) if fn is not None else []


def check_no_data_lost(
    root: str | Path, families: Sequence[str] | None, suites: Sequence[str]
) -> None:
    """Refuse to overwrite a library suite derived from data that is missing here.

    Without its data a suite falls back to synthetic instances; writing those over
    the library's data-derived ones would lose them. Raises ``ValueError`` naming
    the suite and the missing files.
    """
    for family in families_with_suites(families):
        for suite in suites:
            missing = missing_data(family, suite)
            folder = Path(root) / family / suite
            existing = sorted(folder.glob("*.json")) if folder.is_dir() else []
            if missing and existing:
                raise ValueError(
                    f"{folder}: its {len(existing)} instances are derived from data missing "
                    f"here ({', '.join(missing)}); refusing to replace them with synthetic "
                    "ones. Get the data (see instances/README.md) or leave this suite out "
                    "(--family, --suite)."
                )
