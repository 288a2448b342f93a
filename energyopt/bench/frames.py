"""A results store as tidy pandas DataFrames: one row per cell, one row per frontier point.

:func:`read_results` and :func:`read_frontiers` are the public entry points
(``energyopt.bench.read_results``, ``energyopt.bench.read_frontiers``); every
:mod:`energyopt.plot` function accepts their frames as returned, and the gap report
(:mod:`energyopt.bench.report`) is built on them.

A store written by another version, or edited by hand, may hold values of the wrong type:
such a value becomes ``NaN`` and the cell gets a line in the ``problem`` column, so one bad
cell never stops a whole report. The lines are also in ``frame.attrs["problems"]`` (one
per unreadable cell or frontier, skipped); no function returns them beside the frame.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from energyopt.bench.store import ResultsStore
from energyopt.core.gap import gap

#: Cell columns of :func:`read_results`, in order (``problem`` is added last).
CELL_COLUMNS = (
    "family", "suite", "instance_id", "instance_name", "method", "seed", "time_limit_s",
    "outcome", "termination", "status", "objective", "bound", "gap", "runtime_s", "wall_s",
    "solver", "solver_version", "message", "run_id", "cell_key",
)  # fmt: skip
_NUMERIC = ("time_limit_s", "objective", "bound", "gap", "runtime_s", "wall_s")
#: Columns :func:`read_results` derives for the gap report and the plots.
GAP_COLUMNS = (
    "instance", "solved", "failed", "killed", "useful_bound", "bound_scope", "best_bound",
    "proven_by", "best_objective", "gap_to_best_bound",
)  # fmt: skip
#: Columns of :func:`read_frontiers`.
FRONTIER_COLUMNS = (
    "family", "instance_id", "instance", "method", "seed", "deadline_s", "energy_j",
    "bound_j", "gap", "below_bound", "cell_key",
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
    """Every cell of a results store as a tidy DataFrame, with gaps to the best bound.

    Parameters
    ----------
    store
        Path of the SQLite store (opened for reading only) or an open :class:`ResultsStore`.

    Returns
    -------
    pandas.DataFrame
        One row per (instance, method, seed) cell, sorted by family, instance, method:
        the columns of :data:`CELL_COLUMNS` (``objective``, ``bound``, ``gap`` as floats,
        ``NaN`` where missing; times in seconds), ``problem`` (why a stored value was not
        usable, ``""`` if none was) and :data:`GAP_COLUMNS`: ``instance`` (display name,
        unique in its family), ``solved``/``failed``/``killed``, ``useful_bound`` (the
        cell's bound; a bound <= 0 under a positive objective proves nothing and is
        ``NaN``), ``bound_scope`` (the seed, for a family whose bounds hold per seed, else
        -1), ``best_bound`` (the largest useful bound on the instance, in that scope),
        ``proven_by`` (the method, and seed, that proved it), ``best_objective`` and
        ``gap_to_best_bound`` (:func:`energyopt.core.gap.gap`). ``attrs["problems"]``
        lists the unusable values, one line per cell.
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
    frame = frame.sort_values(
        ["family", "instance_name", "instance_id", "method", "seed"], ignore_index=True
    )
    frame = _with_gaps(frame)
    frame.attrs["problems"] = [
        f"{r.family} {r.instance or r.instance_id} {r.method}: {r.problem} (skipped)"
        for r in frame.itertuples()
        if r.problem
    ]
    return frame


def _with_gaps(cells: pd.DataFrame) -> pd.DataFrame:
    """:data:`GAP_COLUMNS` of the cells (see :func:`read_results`)."""
    cells["instance"] = _display_names(cells)
    cells["solved"] = (
        (cells["outcome"] == "finished")
        & cells["status"].isin(["optimal", "feasible"])
        & cells["objective"].notna()
    )
    cells["failed"] = (cells["outcome"] != "finished") | (cells["termination"] == "error")
    cells["killed"] = cells["outcome"] == "killed"
    cells["useful_bound"] = [
        _useful(f, o, b) for f, o, b in zip(cells["family"], cells["objective"], cells["bound"])
    ]
    # Bounds that hold per seed (a family's seeded_bound) are shared by that seed's cells only.
    from energyopt.bench.sections import bound_scope

    cells["bound_scope"] = bound_scope(cells)
    key = [cells["family"], cells["instance_id"], cells["bound_scope"]]
    cells["best_bound"] = cells.groupby(key)["useful_bound"].transform("max")
    prover = cells["method"] + cells["seed"].map(lambda s: "" if pd.isna(s) else f" (seed {s})")
    holds = cells["useful_bound"].notna() & (cells["useful_bound"] == cells["best_bound"])
    cells["proven_by"] = (
        prover.where(holds).groupby(key).transform(lambda s: ", ".join(sorted(s.dropna())))
    )
    cells.loc[cells["best_bound"].isna(), "proven_by"] = ""
    cells["best_objective"] = (
        cells["objective"].where(cells["solved"]).groupby(key).transform("min")
    )
    cells["gap_to_best_bound"] = [
        _nan(gap(o, b)) if s and not math.isnan(b) else math.nan
        for o, b, s in zip(cells["objective"], cells["best_bound"], cells["solved"])
    ]
    return cells


def _useful(family: str, objective: float, bound: float) -> float:
    """The bound, or ``NaN`` where it proves nothing (core.scoring.useful_bound)."""
    from energyopt.core.scoring import useful_bound

    positive = True  # every objective here is a cost >= 0 unless the family says otherwise
    try:
        from energyopt.core.registry import family_hooks

        positive = family_hooks(family).positive_objective
    except ValueError:  # a family this installation does not know
        pass
    b = None if math.isnan(bound) else bound
    o = None if math.isnan(objective) else objective
    return _nan(useful_bound(b, positive, o))


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _display_names(cells: pd.DataFrame) -> pd.Series:
    """Instance names, made unique within a family with a short id where two share one."""
    name = cells["instance_name"].where(cells["instance_name"] != "", cells["instance_id"])
    ids_per_name = cells.groupby(["family", name])["instance_id"].transform("nunique")
    short = cells["instance_id"].str.slice(0, 8)
    return name.where(ids_per_name <= 1, name + " [" + short + "]")


def read_frontiers(
    store: str | Path | ResultsStore, *, time_limit: float | None = None
) -> pd.DataFrame:
    """Every stored frontier point with the best proven bound there and its gap.

    The bound is the family's (:func:`energyopt.bench.frontiers.store_frontiers`: the
    exact frontier stored for the instance, else the family's bound curve, computed once
    per instance; a point's own bound where larger; see docs/architecture.md).

    Parameters
    ----------
    time_limit
        Seconds for each instance's bound curve (``None``: until it converges).

    Returns
    -------
    pandas.DataFrame
        One row per point with the columns of :data:`FRONTIER_COLUMNS`: ``deadline_s``
        (the point's makespan), ``energy_j``, ``bound_j`` (the best proven bound, ``NaN``
        if none), ``gap``
        and ``below_bound`` (the point lies below its bound beyond the family's
        tolerance: a bug). Sorted by instance, method, seed and time.
        ``attrs["problems"]`` lists the stored results that are not readable frontiers.
    """
    from energyopt.bench.frontiers import store_frontiers

    if isinstance(store, ResultsStore):
        found = store_frontiers(store, time_limit)
    else:
        with ResultsStore(store, read_only=True) as opened:
            found = store_frontiers(opened, time_limit)
    frame = frontier_frame(found)
    frame.attrs["problems"] = list(found.problems)
    return frame


def frontier_frame(found: Any) -> pd.DataFrame:
    """:func:`read_frontiers`'s frame from :func:`~energyopt.bench.frontiers.store_frontiers`."""
    from energyopt.core.registry import family_hooks

    points: list[dict[str, Any]] = []
    for item in found.instances:
        tol = family_hooks(item.family).tolerance
        for key, res in item.frontiers:
            for p in res.frontier:
                b = _nan(p.bound)
                points.append({
                    "family": item.family, "instance_id": item.instance_id,
                    "instance": item.name, "method": res.method, "seed": res.seed,
                    "deadline_s": p.makespan_s, "energy_j": p.objective,
                    "bound_j": b, "gap": _nan(gap(p.objective, p.bound)),
                    "below_bound": bool(p.bound is not None and p.objective < p.bound
                                        and not tol.allows(p.objective, p.bound)),
                    "cell_key": key,
                })  # fmt: skip
    frame = pd.DataFrame(points, columns=list(FRONTIER_COLUMNS))
    frame["seed"] = frame["seed"].astype("Int64")
    return frame.sort_values(["instance_id", "method", "seed", "deadline_s"], ignore_index=True)
