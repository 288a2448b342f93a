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
