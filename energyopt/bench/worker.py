"""The process that solves one cell: ``python -m energyopt.bench.worker`` (spec on stdin).

The result goes to the original standard output as one JSON object; everything the
solvers print is sent to standard error, so that solver logs cannot corrupt it.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any


def solve_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """``{"result": Result.to_dict()}``, or ``{"error": "<one line>"}`` when solving raised."""
    from energyopt.core.instance import load_instance
    from energyopt.core.registry import solve

    try:
        for module in spec.get("plugins", ()):
            importlib.import_module(module)
        instance = load_instance(spec["instance_json"])
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
    payload = solve_spec(spec)
    out.write(json.dumps(payload))
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
