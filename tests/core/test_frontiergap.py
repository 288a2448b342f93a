"""Frontier summaries against a bound, pinned by hand on a step frontier."""

from __future__ import annotations

import numpy as np
import pytest

from energyopt.core.frontiergap import bounded_frontier, frontier_summary, share_key
from energyopt.core.result import FrontierPoint, Result
from energyopt.core.scoring import Tolerance
from energyopt.core.status import SolutionStatus, TerminationReason


class _Hooks:
    """A frontier is worth its last point at or before t (no blocking energy); the bound
    is 100 J everywhere."""

    tolerance = Tolerance(rtol=1e-6, atol=1e-6)

    @staticmethod
    def frontier_objective_at(instance, points, t):
        ok = [p.objective for p in points if p.makespan_s <= t]
        return min(ok) if ok else float("inf")

    @staticmethod
    def frontier_bounds(instance, times, references, time_limit, at_deadlines):
        return np.full(len(times), 100.0)


def _result(points):
    return Result("x", "id", "m", TerminationReason.COMPLETED, SolutionStatus.FEASIBLE,
                  objective=points[-1].objective, frontier=tuple(points))  # fmt: skip


def test_summary_of_a_step_frontier():
    # Points (0 s, 110 J) and (1 s, 100.5 J): the frontier is 110 on [0, 1) and 100.5 at 1.
    res = bounded_frontier(_result([FrontierPoint(0.0, 110.0), FrontierPoint(1.0, 100.5)]),
                           None, _Hooks)  # fmt: skip
    s = res.frontier_summary
    assert [p.bound for p in res.frontier] == [100.0, 100.0]
    # Point gaps (110 - 100)/110 and (100.5 - 100)/100.5.
    assert s["gap_max"] == pytest.approx(10 / 110)
    assert s["gap_median"] == pytest.approx((10 / 110 + 0.5 / 100.5) / 2)
    assert s["points"] == s["points_with_bound"] == 2 and s["below_bound"] == 0
    # On the 201-time grid only t = 1 is within 1 % (0.5 %): 1 of 201 times; none within 0.1 %.
    assert s[share_key(0.01)] == pytest.approx(1 / 201)
    assert s[share_key(0.005)] == pytest.approx(1 / 201)
    assert s[share_key(0.001)] == 0.0
    # Area between: 10 J over [0, 0.995] plus the trapezoid to 0.5 J at 1; under: 100 J * 1 s.
    assert s["area_ratio"] == pytest.approx((10 * 0.995 + 0.005 * (10 + 0.5) / 2) / 100)


def test_a_point_below_its_bound_is_flagged():
    res = bounded_frontier(_result([FrontierPoint(0.0, 99.0), FrontierPoint(1.0, 120.0)]),
                           None, _Hooks)  # fmt: skip
    assert res.frontier_summary["below_bound"] == 1
    assert "below their proven bound" in res.message


def test_own_bound_kept_where_larger_and_summary_without_bounds():
    res = bounded_frontier(_result([FrontierPoint(0.0, 110.0, bound=105.0)]), None, _Hooks)
    assert res.frontier[0].bound == 105.0
    s = frontier_summary(
        None, _Hooks, [FrontierPoint(0.0, 110.0)], lambda t: np.full(len(t), np.nan)
    )
    assert s["gap_max"] is None and s["area_ratio"] is None and s["points_with_bound"] == 0


def test_json_summary_by_default_full_frontier_on_request():
    res = bounded_frontier(_result([FrontierPoint(0.0, 110.0), FrontierPoint(1.0, 100.5)]),
                           None, _Hooks)  # fmt: skip
    short = res.to_dict(full_frontier=False)
    assert short["frontier"] == [] and short["frontier_points"] == 2
    assert short["frontier_summary"]["gap_max"] == pytest.approx(10 / 110)
    assert len(res.to_dict()["frontier"]) == 2
    assert Result.from_dict(short).frontier == ()


def test_summary_from_the_points_own_bounds_when_not_bounded():
    res = _result([FrontierPoint(0.0, 110.0, bound=100.0), FrontierPoint(1.0, 100.5)])
    s = res.frontier_summary
    assert s["points"] == 2 and s["points_with_bound"] == 1 and s["below_bound"] == 0
    assert s["gap_max"] == s["gap_median"] == pytest.approx(10 / 110)
    empty = Result("x", "id", "m", TerminationReason.COMPLETED, SolutionStatus.NONE)
    assert empty.frontier_summary is None
