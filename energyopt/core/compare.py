"""Several methods on one instance, each against the best bound any of them proved.

:func:`compare` (``energyopt.compare``) solves an instance with each method and returns
one row per method; :func:`cross_bounded` does the bounding for results already
computed (the CLI's ``solve -m A -m B``). A method's own gap uses its own bound; the
gap here uses the largest useful bound of the call (a bound <= 0 under a positive
objective proves nothing and is not used), and ``proven_by`` names the method that
proved it. Frontier results get a bound at every point (exact frontiers of the same
call included, :mod:`energyopt.core.frontiergap`) and their summary as columns.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from energyopt.core.frontiergap import SHARE_LEVELS, bounded_frontier, share_key
from energyopt.core.gap import gap
from energyopt.core.result import Result
from energyopt.core.scoring import useful_bound

if TYPE_CHECKING:
    import pandas as pd

#: Frontier summary keys shown as ``frontier_<key>`` columns of :func:`compare`.
SUMMARY_KEYS = (
    "points", "points_with_bound", "below_bound", "gap_max", "gap_mean", "gap_median",
    *(share_key(x) for x in SHARE_LEVELS), "area_ratio",
)  # fmt: skip


def compare(
    instance: Any,
    methods: Sequence[str],
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    options: Mapping[str, Mapping[str, Any]] | None = None,
) -> pd.DataFrame:
    """Solve ``instance`` with each method and compare them against the best bound proved.

    Parameters
    ----------
    instance
        An instance of any family.
    methods
        Registered method names of its family.
    time_limit
        Seconds per method (and for the bound curve of a frontier family, computed
        once per instance).
    options
        Method name -> its options.

    Returns
    -------
    pandas.DataFrame
        One row per method, indexed by method: ``objective``, ``bound`` (its own),
        ``best_bound``, ``proven_by``, ``gap`` (to the best bound, a fraction),
        ``runtime_s``, ``termination``, ``status``, and for families with frontiers
        ``frontier_<key>`` for each of :data:`SUMMARY_KEYS` (``NaN`` for methods
        without a frontier).
    """
    from energyopt.core.registry import solve

    options = options or {}
    results = [
        solve(instance, m, time_limit=time_limit, seed=seed, **dict(options.get(m, {})))
        for m in methods
    ]
    return comparison_frame(cross_bounded(instance, results, time_limit=time_limit))


def cross_bounded(
    instance: Any, results: Sequence[Result], *, time_limit: float | None = None
) -> list[Result]:
    """``results`` with ``extra["best_bound"]``, ``extra["proven_by"]`` and
    ``extra["gap_to_best_bound"]``, and bounded frontiers with their summaries."""
    from energyopt.core.registry import family_hooks, methods

    hooks = family_hooks(instance.family)
    registered = methods(instance.family)
    references = [
        r.frontier for r in results
        if r.frontier and getattr(registered.get(r.method), "exact", False)
        and getattr(registered.get(r.method), "frontier", False)
    ]  # fmt: skip
    if hooks.frontier_bounds is not None:
        pairs = deadline_pairs(instance, results, registered, hooks.positive_objective)
        results = [
            bounded_frontier(r, instance, hooks, references, time_limit, pairs) for r in results
        ]
    best, by = None, ""
    for r in results:
        b = useful_bound(r.bound, hooks.positive_objective, r.objective)
        if b is not None and (best is None or b > best):
            best, by = b, r.method
    out = []
    for r in results:
        g = gap(r.objective, best) if r.has_solution else None
        extra = {**r.extra, "best_bound": best, "proven_by": by or None, "gap_to_best_bound": g}
        r = dataclasses.replace(r, extra=extra)
        if g is not None and g < 0 and not hooks.tolerance.allows(r.objective, best):
            # An objective below a proven bound: a bug in this method or in the prover.
            note = f"objective below the best proven bound {best!r} of {by} (a bug)"
            r = dataclasses.replace(r, message=f"{r.message}; {note}" if r.message else note)
        out.append(r)
    return out


def deadline_pairs(
    instance: Any, results: Sequence[Result], registered: Mapping[str, Any], positive: bool
) -> list[tuple[float, float]]:
    """``(deadline, bound)`` of the exact one-shot results, when the instance has a deadline."""
    deadline = getattr(instance, "deadline_s", None)
    if deadline is None:
        return []
    out = []
    for r in results:
        m = registered.get(r.method)
        b = useful_bound(r.bound, positive, r.objective)
        if b is not None and m is not None and m.exact and not r.frontier:
            out.append((float(deadline), b))
    return out


def comparison_frame(results: Sequence[Result]) -> pd.DataFrame:
    """The rows of :func:`compare` from :func:`cross_bounded`'s results."""
    import pandas as pd

    frontier = any(r.frontier for r in results)
    rows = []
    for r in results:
        row = {
            "method": r.method,
            "objective": _nan(r.objective),
            "bound": _nan(r.bound),
            "best_bound": _nan(r.extra.get("best_bound")),
            "proven_by": r.extra.get("proven_by"),
            "gap": _nan(r.extra.get("gap_to_best_bound")),
            "runtime_s": float(r.runtime_s),
            "termination": r.termination.value,
            "status": r.status.value,
        }
        if frontier:
            summary = r.extra.get("frontier_summary") or {}
            row.update({f"frontier_{k}": _nan(summary.get(k)) for k in SUMMARY_KEYS})
        rows.append(row)
    frame = pd.DataFrame(rows)
    frame.index = pd.Index(frame["method"].to_list())  # unnamed: "method" stays a column
    return frame


def _nan(x: Any) -> float:
    return math.nan if x is None else float(x)
