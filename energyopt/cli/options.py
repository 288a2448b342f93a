"""Method options given on the command line as ``-o KEY=VALUE``."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def parse_options(items: Iterable[str]) -> dict[str, Any]:
    """``["tau_s=0.001", "cost_model=hull"]`` -> ``{"tau_s": 0.001, "cost_model": "hull"}``.

    A value is read as JSON when it parses as JSON (numbers, ``true``, lists, quoted
    strings), else kept as text.
    """
    opts: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"--option {item!r}: expected KEY=VALUE")
        try:
            opts[key] = json.loads(value)
        except json.JSONDecodeError:
            opts[key] = value
    return opts


def check_options_known(methods: Iterable[Any], options: dict[str, Any]) -> None:
    """Raise ``ValueError`` for an option that none of ``methods`` takes, listing the valid ones.

    ``methods`` are registered :class:`~energyopt.core.registry.Method` objects.
    """
    from energyopt.core.registry import method_options, unknown_options

    methods = list(methods)
    if not options or not methods:
        return
    unknown = set(options)
    for m in methods:
        unknown &= set(unknown_options(m, options))
    if unknown:
        valid = sorted({k for m in methods for k in method_options(m)})
        raise ValueError(
            f"-o {', '.join(sorted(unknown))}: no selected method takes this option; "
            f"valid: {', '.join(valid) or 'none'} (see 'energyopt methods FAMILY')"
        )
