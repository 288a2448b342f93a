"""Frontiers against proven bounds: a bound at every point and one summary per frontier.

A family whose methods return time-objective frontiers says through its hooks
(:attr:`energyopt.core.family.FamilyHooks.frontier_bounds`) what the best proven lower
bound is at any time. :func:`bounded_frontier` gives each point of a result the larger
of its own bound and that one, and summarises the frontier (:func:`frontier_summary`):

- ``gap_max``, ``gap_mean``, ``gap_median``: over the points with a bound
  (:func:`energyopt.core.gap.gap` of the point's objective and bound);
- ``within_0.1%``, ``within_0.5%``, ``within_1%``: the share of the frontier's time
  range (fastest to slowest point) where the frontier (the family's
  ``frontier_objective_at``) is within that gap of the bound;
- ``area_ratio``: the area between the frontier and the bound over the range where
  both are known, divided by the area under the bound.

Shares and area are measured on :data:`GRID` evenly spaced times over the range
(trapezoid rule for the areas). A point below its bound by more than the family's
tolerance is a bug in the method or in the bound: it is counted in ``below_bound``
and named in the result's message, never hidden.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from energyopt.core.gap import gap
from energyopt.core.result import FrontierPoint, Result, point_gaps

#: Gap levels of the ``within_...`` shares.
SHARE_LEVELS = (0.001, 0.005, 0.01)
#: Times at which shares and area are measured over a frontier's range.
GRID = 201


def share_key(level: float) -> str:
    """``"within_0.1%"`` for 0.001: the summary's key of a share level."""
    return f"within_{100 * level:g}%"


def bounded_frontier(
    result: Result,
    instance: Any,
    hooks: Any,
    references: Sequence[Sequence[FrontierPoint]] = (),
    time_limit: float | None = None,
    at_deadlines: Sequence[tuple[float, float]] = (),
) -> Result:
    """``result`` with the best proven bound at every frontier point and its summary.

    Parameters
    ----------
    hooks
        The family's :class:`~energyopt.core.family.FamilyHooks`; a family without
        ``frontier_bounds`` (or a result without a frontier) is returned unchanged.
    references
        Exact frontiers of the same instance (their points' bounds give bounds too).
    at_deadlines
        ``(deadline, bound)`` of exact one-shot solves of the instance.
    time_limit
        Seconds for the bound curve when it is not yet computed for this instance.

    Returns
    -------
    Result
        Points with bounds, ``extra["frontier_summary"]`` (:func:`frontier_summary`),
        and a message naming points below their bound.
    """
    if not result.frontier or getattr(hooks, "frontier_bounds", None) is None:
        return result

    def bounds_at(times: np.ndarray) -> np.ndarray:
        return hooks.frontier_bounds(instance, times, references, time_limit, at_deadlines)

    times = np.array([p.makespan_s for p in result.frontier], dtype=float)
    found = bounds_at(times)
    points = tuple(
        dataclasses.replace(p, bound=_larger(p.bound, float(b)))
        for p, b in zip(result.frontier, found)
    )
    summary = frontier_summary(instance, hooks, points, bounds_at)
    message = result.message
    if summary["below_bound"]:
        note = f"{summary['below_bound']} frontier point(s) below their proven bound (a bug)"
        message = f"{message}; {note}" if message else note
    return dataclasses.replace(
        result, frontier=points, message=message,
        extra={**result.extra, "frontier_summary": summary},
    )  # fmt: skip


def _larger(own: float | None, found: float) -> float | None:
    if math.isnan(found):
        return own
    return found if own is None else max(own, found)


def frontier_summary(
    instance: Any, hooks: Any, points: Sequence[FrontierPoint], bounds_at: Any
) -> dict[str, Any]:
    """Gaps of ``points`` (bounds attached) and of the frontier over its time range.

    ``bounds_at(times) -> array`` is the best proven bound at each time (``NaN``: none).
    Keys: ``points``, ``points_with_bound``, ``below_bound``, ``gap_max``, ``gap_mean``,
    ``gap_median``, one ``within_...`` share per :data:`SHARE_LEVELS` and ``area_ratio``
    (``None`` where nothing was measured). See the module docstring.
    """
    out = point_gaps(points, hooks.tolerance)
    out.update(_range_measures(instance, hooks, points, bounds_at))
    return out


def _range_measures(
    instance: Any, hooks: Any, points: Sequence[FrontierPoint], bounds_at: Any
) -> dict[str, float | None]:
    """Shares of the time range within each gap level, and the area ratio."""
    empty: dict[str, float | None] = {share_key(x): None for x in SHARE_LEVELS}
    empty["area_ratio"] = None
    if not points:
        return empty
    lo = min(p.makespan_s for p in points)
    hi = max(p.makespan_s for p in points)
    grid = np.linspace(lo, hi, GRID) if hi > lo else np.array([lo])
    frontier = np.array([hooks.frontier_objective_at(instance, points, float(t)) for t in grid])
    bound = np.asarray(bounds_at(grid), dtype=float)
    ok = np.isfinite(frontier) & np.isfinite(bound)
    if not ok.any():
        return empty
    gaps = np.array([_nan(gap(f, b)) for f, b in zip(frontier, bound)])
    out: dict[str, float | None] = {
        share_key(x): float(np.mean(ok & (gaps <= x))) for x in SHARE_LEVELS
    }
    if hi > lo and ok.sum() >= 2:
        t, f, b = grid[ok], frontier[ok], bound[ok]
        under = _trapezoid(b, t)
        out["area_ratio"] = _trapezoid(f - b, t) / under if under > 0 else None
    else:
        out["area_ratio"] = None
    return out


def _trapezoid(y: np.ndarray, t: np.ndarray) -> float:
    # np.trapezoid is numpy >= 2 only; the package supports numpy 1.24.
    return float(np.sum(0.5 * (y[1:] + y[:-1]) * np.diff(t)))


def _nan(x: float | None) -> float:
    return math.nan if x is None else x
