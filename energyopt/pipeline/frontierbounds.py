"""A proven lower bound at every iteration time, for every frontier of a PEM instance.

The best bound available at an iteration time ``T`` (a deadline: every plan the
evaluator accepts there, makespan up to ``T (1 + DEADLINE_RTOL)``) is the larger of

- the exact frontier's bound, where one was computed for the instance (a proven
  ``exact-frontier`` result, in the same call or the same store): each of its points is
  an exact solve at a deadline ``d_j``, and its bound ``B_j`` (moved to the point's
  makespan ``m_j``) bounds the effective energy ``C`` of every plan accepted at ``d_j``
  by ``B_j - P_b S m_j``; ``L`` falls with the deadline, so at every ``T <= d_j`` the
  energy is at least ``B_j - P_b S m_j + P_b S T`` (:func:`exact_frontier_bounds`);
- the hull relaxation's bound curve (Eq. PEM-R7,
  :func:`energyopt.pipeline.relaxation.hull.bound_curve`), computed once per instance in a
  process and shared by every method's frontier (:func:`instance_curve`).

- the bound ``b`` of an exact method at the instance's deadline ``D`` (a one-shot solve
  in the same call or store): every plan accepted at ``T <= D`` is accepted at ``D``, so
  its energy at ``T`` is at least ``b - P_b S (D - T)`` (:func:`deadline_bounds`).

A per-point bound that a method gave itself (an exact solve at that deadline) is kept
where it is larger (:func:`energyopt.core.frontiergap.bounded_frontier`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from energyopt.core.result import FrontierPoint
from energyopt.pipeline.evaluator import DEADLINE_RTOL
from energyopt.pipeline.instance import PemInstance

#: ``curve(instance, time_limit) -> BoundCurve | None``: the hull relaxation's bound curve
#: (``None`` when not even its first LP finished in time). The relaxation lives in a
#: sub-package that only the package and ``methods.py`` import (docs/architecture.md), so
#: the package wires it in (:func:`use_curve_source`) when it is imported.
_CURVE_SOURCE: Callable[..., Any] | None = None


def use_curve_source(source: Callable[..., Any]) -> None:
    """Set the bound-curve source (the package's ``__init__`` does, on import)."""
    global _CURVE_SOURCE
    _CURVE_SOURCE = source


#: Bound curves kept per process, by instance id (a curve of GPT-3 8x96 holds a few
#: hundred tangents: small; computing it takes seconds).
CACHE_SIZE = 16
_CURVES: collections.OrderedDict[str, Any] = collections.OrderedDict()


def instance_curve(instance: PemInstance, time_limit: float | None = None) -> Any:
    """The hull relaxation's bound curve of ``instance``, computed once per process.

    A curve stopped by ``time_limit`` is still a valid (looser) bound and is kept;
    ``None`` when not even its first LP finished in time.
    """
    key = instance.instance_id
    curve = _CURVES.get(key)
    if curve is None:
        if _CURVE_SOURCE is None:  # pragma: no cover - the package wires it on import
            raise RuntimeError("the pipeline package wires the bound curve: import it first")
        curve = _CURVE_SOURCE(instance, time_limit)
        if curve is None or not curve.tangents:
            return None
        _CURVES[key] = curve
        while len(_CURVES) > CACHE_SIZE:
            _CURVES.popitem(last=False)
    else:
        _CURVES.move_to_end(key)
    return curve


def exact_frontier_bounds(
    instance: PemInstance, points: Sequence[FrontierPoint], times_s: np.ndarray
) -> np.ndarray:
    """Bounds at ``times_s`` from a proven exact frontier's points (module docstring);
    ``NaN`` where none of its points covers the time.

    The sweep (:func:`energyopt.pipeline.exact.frontier.exact_frontier`) solves next at
    ``m (1 - 2 DEADLINE_RTOL)`` below each breakpoint ``m``, so a point's solve deadline
    is that of the next slower point's makespan (at least its own makespan over
    ``1 + DEADLINE_RTOL``); the slowest point is the least-effective-energy plan, whose
    effective-energy bound holds at every time.
    """
    pbs = instance.p_blocking_w * instance.num_stages
    times = np.asarray(times_s, dtype=float)
    out = np.full(len(times), -np.inf)
    ordered = sorted(points, key=lambda p: p.makespan_s)
    for k, p in enumerate(ordered):
        if p.bound is None:
            continue
        if k + 1 < len(ordered):
            slower = ordered[k + 1].makespan_s * (1 - 2 * DEADLINE_RTOL)
            reach = max(p.makespan_s / (1 + DEADLINE_RTOL), slower)
        else:
            reach = np.inf
        covered = times <= reach
        out[covered] = np.maximum(out[covered], p.bound - pbs * p.makespan_s + pbs * times[covered])
    out[~np.isfinite(out)] = np.nan
    return out


def deadline_bounds(
    instance: PemInstance, times_s: np.ndarray, pairs: Sequence[tuple[float, float]]
) -> np.ndarray:
    """Bounds at ``times_s`` from exact solves at deadlines: ``(D, b)`` gives
    ``b - P_b S (D - T)`` at every ``T <= D`` (module docstring); ``NaN`` elsewhere.

    A plan with makespan ``m <= D`` accepted at ``T`` has ``C >= b - P_b S D``, so its
    energy at ``T`` is at least that plus ``P_b S T``; one with ``D < m <= D (1 + rtol)``
    has energy ``C + P_b S m >= b`` there.
    """
    pbs = instance.p_blocking_w * instance.num_stages
    times = np.asarray(times_s, dtype=float)
    out = np.full(len(times), -np.inf)
    for D, b in pairs:
        covered = times <= D
        out[covered] = np.maximum(out[covered], b - pbs * (D - times[covered]))
    out[~np.isfinite(out)] = np.nan
    return out


def frontier_bounds(
    instance: PemInstance,
    times_s: np.ndarray,
    references: Sequence[Sequence[FrontierPoint]] = (),
    time_limit: float | None = None,
    at_deadlines: Sequence[tuple[float, float]] = (),
) -> np.ndarray:
    """The best proven lower bound on the energy at each iteration time (``NaN``: none).

    ``references`` are exact frontiers of the instance, ``at_deadlines`` the ``(deadline,
    bound)`` pairs of exact solves; the bound curve is :func:`instance_curve`'s. Below
    the fastest makespan no plan exists (a point there is contradicted by the bench's
    frontier cross-check): ``NaN``.
    """
    times = np.asarray(times_s, dtype=float)
    curve = instance_curve(instance, time_limit=time_limit)
    out = np.full(len(times), np.nan) if curve is None else curve.energy_bounds(times)
    for ref in references:
        out = np.fmax(out, exact_frontier_bounds(instance, ref, times))
    if at_deadlines:
        out = np.fmax(out, deadline_bounds(instance, times, at_deadlines))
    return out
