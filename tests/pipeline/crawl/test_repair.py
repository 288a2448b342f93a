"""The end repairs of the hull crawl (energyopt/pipeline/crawl/repair.py)."""

from __future__ import annotations

import numpy as np
import pytest

import energyopt
from energyopt.core.instance import InstanceError
from energyopt.core.status import TerminationReason
from energyopt.pipeline import synthetic_instance
from energyopt.pipeline.crawl.grid import crawl as grid_crawl
from energyopt.pipeline.crawl.repair import fast_end_trace, repair_steps, slow_end_trace
from energyopt.pipeline.crawl.trace import CrawlTrace
from energyopt.pipeline.evaluator import evaluate
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.generators import random_dag_instance
from energyopt.pipeline.paretoset import energy_at


def _trace(times: list[float]) -> CrawlTrace:
    n = len(times)
    nan = np.full(n, np.nan)
    return CrawlTrace(np.zeros((n, 1), dtype=np.int64), nan, nan, np.asarray(times), nan, {})


def test_repair_steps_cover_the_slow_share_of_the_range():
    # Makespans 1.0 .. 2.0 s: range 1.0 s; a fifth of it is 0.2 s = 20 steps of 10 ms.
    assert repair_steps(_trace([1.0, 1.5, 2.0]), 0.01, 0.2) == 20
    # A quarter: 0.25 s = 25 steps; 0.2 s of a 0.15 s step rounds up to 2 steps.
    assert repair_steps(_trace([1.0, 1.5, 2.0]), 0.01, 0.25) == 25
    assert repair_steps(_trace([1.0, 2.0]), 0.15, 0.2) == 2
    # No range (one finite makespan) or no share: no repair.
    assert repair_steps(_trace([1.0, np.inf]), 0.01, 0.2) == 0
    assert repair_steps(_trace([1.0, 2.0]), 0.01, 0.0) == 0


def test_slow_end_trace_is_the_start_of_the_exponential_crawl():
    inst = synthetic_instance(2, 4, 6, seed=0)
    hull = energyopt.solve(inst, "perseus", progress=False, repair=False)
    T = np.array([p.makespan_s for p in hull.frontier])
    trace = _trace(list(T))
    got = slow_end_trace(inst, trace, tau_s=1e-3)
    steps = repair_steps(trace, 1e-3)
    assert got is not None and got.stats["repair"]["max_steps"] == steps
    # Not an early stop of the method: the step budget is the repair's plan.
    assert got.stats["stopped"] == ""
    full = grid_crawl(inst, tau_s=1e-3, cost_model="exponential", max_steps=steps, progress=False)
    np.testing.assert_array_equal(got.choices, full.choices)
    assert slow_end_trace(inst, trace, tau_s=1e-3, share=0.0) is None
    assert slow_end_trace(inst, trace, tau_s=1e-3, time_limit=0.0) is None


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_repair_never_worse_and_every_point_is_measured(seed):
    inst = random_dag_instance(6, 3, seed=seed, num_stages=2)
    off = energyopt.solve(inst, "perseus", progress=False, repair=False)
    on = energyopt.solve(inst, "perseus", progress=False)
    assert on.termination is off.termination
    for p in off.frontier:  # only plans were added: never worse at any makespan
        assert energy_at(inst, on.frontier, p.makespan_s) <= p.objective * (1 + 1e-12)
    for p in on.frontier:  # every point is a real plan, scored as the evaluator scores it
        ev = evaluate(inst, p.solution, None)
        assert ev.iteration_time_s == pytest.approx(p.makespan_s, rel=1e-12)
        assert ev.energy_j == pytest.approx(p.objective, rel=1e-12)
        # ... and none is better than the exact optimum at its own makespan.
        _, best = brute_force(inst, p.makespan_s)
        assert p.objective >= best * (1 - 1e-9)


def test_repaired_default_matches_both_at_the_slow_end():
    # The repair's plans are the exponential crawl's first steps, which cost_model="both"
    # also keeps: at every time the repair reached, the default is at or below "both".
    inst = synthetic_instance(4, 8, 10, seed=0)
    on = energyopt.solve(inst, "perseus", progress=False)
    both = energyopt.solve(inst, "perseus", progress=False, cost_model="both")
    run = next(r for r in on.extra["runs"] if r["cost_model"] == "repair")
    assert run["steps"] > 0
    assert on.termination is TerminationReason.COMPLETED
    T = np.array([p.makespan_s for p in on.frontier])
    reached = T.max() - run["steps"] * 1e-3
    for p in both.frontier:
        if p.makespan_s >= reached:
            assert energy_at(inst, on.frontier, p.makespan_s) <= p.objective * (1 + 1e-12)


def test_repair_skipped_where_the_exponential_model_cannot_be_fitted():
    # Seed 32 draws a table whose three options no a*exp(b*t)+c fits: the grid crawl on
    # the exponential model raises, the repair steps aside, the hull crawl stands alone.
    inst = random_dag_instance(2, 3, seed=32, num_stages=2)
    with pytest.raises(InstanceError):
        grid_crawl(inst, cost_model="exponential", progress=False)
    on = energyopt.solve(inst, "perseus", progress=False)
    off = energyopt.solve(inst, "perseus", progress=False, repair=False)
    assert on.termination is TerminationReason.COMPLETED
    assert [p.objective for p in on.frontier] == [p.objective for p in off.frontier]


def test_repair_stays_inside_the_time_limit():
    inst = synthetic_instance(4, 8, 10, seed=0)
    res = energyopt.solve(inst, "perseus", progress=False, time_limit=0.05)
    # A tiny limit stops the hull crawl; the repair then does not run at all.
    assert res.termination is TerminationReason.TIME_LIMIT
    assert all(r["cost_model"] != "repair" for r in res.extra.get("runs", []))


def test_crawl_from_the_slowest_plan_is_the_crawl():
    # Every computation at its slowest option lands on d_max (rounded down, clipped):
    # the same start as Algorithm 1's, so the same plans.
    inst = synthetic_instance(2, 4, 6, seed=1)
    slowest = tuple(int(np.argmax(inst.tables[c.table].time_s)) for c in inst.computations)
    kw = {"tau_s": 1e-3, "cost_model": "exponential", "progress": False}
    np.testing.assert_array_equal(
        grid_crawl(inst, start=slowest, **kw).choices, grid_crawl(inst, **kw).choices
    )


@pytest.mark.parametrize(
    "start, message",
    [((0,), "option indices for"), ("bad", "option indices for"), (None, "not an option")],
)
def test_crawl_start_is_checked(start, message):
    inst = synthetic_instance(2, 2, 4, seed=0)
    if start is None:  # right length, one index past its table
        start = (0,) * (inst.num_computations - 1) + (99,)
    with pytest.raises(ValueError, match=message):
        grid_crawl(inst, start=start, progress=False)
    with pytest.raises(ValueError, match="not an option"):
        grid_crawl(inst, start=(True,) + (0,) * (inst.num_computations - 1), progress=False)


def test_fast_end_trace_runs_from_a_fifth_up_to_t_min():
    inst = synthetic_instance(4, 8, 10, seed=0)
    hull = energyopt.solve(inst, "perseus", progress=False, repair=False)
    plans = np.array([p.solution.choice for p in hull.frontier])
    T = np.array([p.makespan_s for p in hull.frontier])
    E = np.array([p.objective for p in hull.frontier])
    trace = CrawlTrace(plans, T, E, T, E, {})
    got = fast_end_trace(inst, trace, tau_s=1e-3)
    assert got is not None and got.stats["stopped"] == ""
    target = T.min() + 0.2 * (T.max() - T.min())
    start = got.stats["repair"]["start_time_s"]
    assert start <= target and start in set(T)
    # It starts at its start plan, ends at T_min's and never plans slower than its
    # start. Measured times are not monotone: each computation rounded down to the
    # grid can run up to one tau longer than planned (here 0.761 s measured after
    # the 0.760 s start, planned 0.750 s after 0.751 s).
    assert got.time_s[0] == start
    assert got.time_s.min() == pytest.approx(T.min(), abs=1e-12)
    assert np.nanmax(got.planned_time_s) <= got.planned_time_s[0]  # NaN: the finish plans
    assert fast_end_trace(inst, trace, share=0.0) is None
    assert fast_end_trace(inst, trace, time_limit=0.0) is None


def test_repaired_default_at_or_below_both_everywhere_on_8x16():
    # Both ends repaired: on synthetic 8 x 16 (8 clocks, seed 2) the default is at or
    # below cost_model="both" at every one of its 1383 points; with the slow end alone
    # it lost at 2 points near T_min (up to +0.057 %).
    inst = synthetic_instance(8, 16, 8, seed=2)
    on = energyopt.solve(inst, "perseus", progress=False)
    assert {r["cost_model"] for r in on.extra["runs"]} >= {"repair", "repair-fast"}
    both = energyopt.solve(inst, "perseus", progress=False, cost_model="both")
    for p in both.frontier:
        assert energy_at(inst, on.frontier, p.makespan_s) <= p.objective * (1 + 1e-12)
