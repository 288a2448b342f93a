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
from energyopt.core.registry import FAMILY_MODULES

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
    """Families (in registry order) whose suites module exists, restricted to ``only``."""
    if only:
        unknown = sorted(set(only) - set(FAMILY_MODULES))
        if unknown:
            raise ValueError(
                f"unknown family {', '.join(map(repr, unknown))}; "
                f"known: {', '.join(sorted(FAMILY_MODULES))}"
            )
    return [f for f in FAMILY_MODULES if (not only or f in only) and suites_module(f) is not None]


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
