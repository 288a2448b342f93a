"""The process that solves one cell: ``python -m energyopt.bench.worker`` (spec on stdin).

The worker writes ``ready`` on a line once the instance is loaded (the parent starts
the cell's clock there), then the result as one JSON object on the original
standard output; everything the
solvers print is sent to standard error, so that solver logs cannot corrupt it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from collections.abc import Callable
from typing import Any


def solve_spec(spec: dict[str, Any], ready: Callable[[], None] | None = None) -> dict[str, Any]:
    """``{"result": Result.to_dict()}``, or ``{"error": "<one line>"}`` when solving raised.

    ``ready`` is called once the instance is loaded, just before solving starts.
    """
    from energyopt.core.instance import load_instance
    from energyopt.core.registry import solve

    try:
        for module in spec.get("plugins", ()):
            importlib.import_module(module)
        instance = load_instance(spec["instance_json"])
        if ready is not None:
            ready()
        result = solve(
            instance,
            spec["method"],
            time_limit=spec["time_limit_s"],
            seed=spec["seed"],
            **spec.get("options", {}),
        )
    except Exception as exc:
        # EvaluationMismatchError (a bug) and bad options land here: recorded, not lost.
        first = (str(exc).strip().splitlines() or [""])[0]
        return {"error": f"{type(exc).__name__}: {first}"}
    return {"result": result.to_dict()}


def main() -> int:
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout.flush()
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    spec = json.loads(sys.stdin.read())

    def ready() -> None:
        # The parent starts the cell's clock at this line.
        out.write("ready\n")
        out.flush()

    payload = solve_spec(spec, ready)
    out.write(json.dumps(payload))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
