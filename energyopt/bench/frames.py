"""A results store as tidy pandas DataFrames: one row per cell, one row per frontier point.

:func:`read_results` is the public entry point (``energyopt.bench.read_results``); the
gap report (:mod:`energyopt.bench.report`) and the notebooks are built on these frames.
A store written by another version, or edited by hand, may hold values of the wrong type:
such a value becomes ``NaN`` and the cell gets a line in the ``problem`` column, so one bad
cell never stops a whole report.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from energyopt.bench.store import ResultsStore

#: Cell columns of :func:`read_results`, in order (``problem`` is added last).
CELL_COLUMNS = (
    "family", "suite", "instance_id", "instance_name", "method", "seed", "time_limit_s",
    "outcome", "termination", "status", "objective", "bound", "gap", "runtime_s", "wall_s",
    "solver", "solver_version", "message", "run_id", "cell_key",
)  # fmt: skip
_NUMERIC = ("time_limit_s", "objective", "bound", "gap", "runtime_s", "wall_s")
#: Columns of :func:`read_frontiers`.
FRONTIER_COLUMNS = (
    "family", "instance_id", "method", "seed", "deadline_s", "energy_j", "bound_j", "cell_key",
)  # fmt: skip


def _number(value: Any) -> tuple[float, str]:
    """``(value as float, problem)``: ``NaN`` with a reason for anything not a finite number."""
    if value is None:
        return math.nan, ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan, f"not a number: {str(value)[:40]!r}"
    x = float(value)
    return (x, "") if math.isfinite(x) else (math.nan, f"not finite: {value!r}")


def read_results(store: str | Path | ResultsStore) -> pd.DataFrame:
    """Every cell of a results store as a tidy DataFrame, sorted by family, instance, method.

    Parameters
    ----------
    store
        Path of the SQLite store (opened for reading only) or an open :class:`ResultsStore`.

    Returns
    -------
    pandas.DataFrame
        One row per (instance, method, seed) cell with the columns of :data:`CELL_COLUMNS`
        (``objective``, ``bound``, ``gap`` as floats, ``NaN`` where missing; times in
        seconds) and ``problem``: why a stored value was not usable, ``""`` if none was.
    """
    if isinstance(store, ResultsStore):
        rows = store.rows()
    else:
        with ResultsStore(store, read_only=True) as opened:
            rows = opened.rows()
    records = []
    for row in rows:
        rec = {c: row.get(c) for c in CELL_COLUMNS}
        problems = []
        for col in _NUMERIC:
            rec[col], why = _number(rec[col])
            if why:
                problems.append(f"{col} {why}")
        seed = rec["seed"]
        rec["seed"] = seed if isinstance(seed, int) and not isinstance(seed, bool) else None
        for col in ("family", "instance_name", "method", "outcome", "termination", "status"):
            rec[col] = "" if rec[col] is None else str(rec[col])
        rec["problem"] = "; ".join(problems)
        records.append(rec)
    frame = pd.DataFrame(records, columns=[*CELL_COLUMNS, "problem"])
    frame["seed"] = frame["seed"].astype("Int64")
    return frame.sort_values(
        ["family", "instance_name", "instance_id", "method", "seed"], ignore_index=True
    )


def read_frontiers(store: str | Path | ResultsStore) -> tuple[pd.DataFrame, list[str]]:
    """Every stored frontier point as a tidy DataFrame, and the cells that could not be read.

    Returns
    -------
    (pandas.DataFrame, list of str)
        Rows with the columns of :data:`FRONTIER_COLUMNS` (``bound_j`` is ``NaN`` where the
        method gave no bound at that deadline), sorted by instance, method, seed and
        deadline; and one line per cell whose stored result was not a readable frontier.
    """
    if isinstance(store, ResultsStore):
        return _frontiers_of(store)
    with ResultsStore(store, read_only=True) as opened:
        return _frontiers_of(opened)


def _frontiers_of(store: ResultsStore) -> tuple[pd.DataFrame, list[str]]:
    points: list[dict[str, Any]] = []
    problems: list[str] = []
    cur = store._db.execute(
        "SELECT cell_key, family, instance_id, method, seed, result_json FROM cells "
        "WHERE result_json IS NOT NULL ORDER BY cell_key"
    )
    for key, family, iid, method, seed, text in cur:
        try:
            res = json.loads(text)
        except (TypeError, ValueError, RecursionError):
            problems.append(f"cell {key}: result_json is not JSON")
            continue
        if not isinstance(res, dict):
            problems.append(f"cell {key}: result_json is a {type(res).__name__}, not an object")
            continue
        frontier = res.get("frontier") or []
        if not isinstance(frontier, list):
            problems.append(f"cell {key}: frontier is a {type(frontier).__name__}, not a list")
            continue
        for i, p in enumerate(frontier):
            row = _frontier_point(p)
            if isinstance(row, str):
                problems.append(f"cell {key}: frontier point {i}: {row}")
                break
            row.update(family=family, instance_id=iid, method=method, seed=seed, cell_key=key)
            points.append(row)
    frame = pd.DataFrame(points, columns=list(FRONTIER_COLUMNS))
    frame["seed"] = frame["seed"].astype("Int64")
    frame = frame.sort_values(["instance_id", "method", "seed", "deadline_s"], ignore_index=True)
    return frame, problems


def _frontier_point(p: Any) -> dict[str, float] | str:
    """A stored frontier point as numbers, or why it is not one."""
    if not isinstance(p, dict):
        return f"a {type(p).__name__}, not an object"
    deadline, why_d = _number(p.get("deadline_s"))
    energy, why_e = _number(p.get("objective"))
    bound, why_b = _number(p.get("bound"))
    why = why_d or why_e or why_b
    if why or math.isnan(deadline) or math.isnan(energy):
        return why or "deadline or objective missing"
    return {"deadline_s": deadline, "energy_j": energy, "bound_j": bound}
