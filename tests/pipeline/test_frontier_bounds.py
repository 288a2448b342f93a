"""The bound at every iteration time (hull curve, exact frontier) holds for every accepted plan.

The reference is brute force: every plan of a small instance, scored by the evaluator's
batch scorer; the least energy at a deadline T is over the plans the evaluator accepts
there (makespan up to T (1 + DEADLINE_RTOL)), blocking counted up to max(T, makespan).
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import energyopt
from energyopt.pipeline import synthetic_instance
from energyopt.pipeline.evaluator import DEADLINE_RTOL, evaluate_many
from energyopt.pipeline.frontierbounds import exact_frontier_bounds, frontier_bounds
from energyopt.pipeline.paretoset import energy_at


def _brute_force(instance):
    """(makespans, effective energies C = E - P_b S m) of every plan."""
    plans = np.array(list(itertools.product(*(range(len(t)) for t in instance.option_times))))
    ev = evaluate_many(instance, plans, None)
    pbs = instance.p_blocking_w * instance.num_stages
    return ev.iteration_time_s, ev.energy_j - pbs * ev.iteration_time_s


def _optimum(instance, m, c, T):
    """Least energy over the plans accepted at deadline T (inf when none is)."""
    ok = m <= T * (1 + DEADLINE_RTOL)
    if not ok.any():
        return np.inf
    pbs = instance.p_blocking_w * instance.num_stages
    return float(np.min(c[ok] + pbs * np.maximum(T, m[ok])))


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    k=st.integers(2, 3),
    u=st.lists(st.floats(0, 1), min_size=5, max_size=5),
)
def test_curve_bounds_never_exceed_the_brute_force_optimum(seed, k, u):
    inst = synthetic_instance(2, 2, k, seed=seed)
    m, c = _brute_force(inst)
    lo, hi = float(m.min()), float(m.max())
    times = np.array([lo, hi, *(lo + x * (hi - lo) for x in u)])
    bounds = frontier_bounds(inst, times)
    for T, b in zip(times, bounds):
        assert not np.isnan(b)
        opt = _optimum(inst, m, c, T)
        assert b <= opt + 1e-9 * abs(opt), (T, b, opt)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_exact_frontier_bounds_are_valid_and_tight_at_its_points(seed):
    inst = synthetic_instance(2, 2, 3, seed=seed)
    m, c = _brute_force(inst)
    ex = energyopt.solve(inst, "exact-frontier")
    assert ex.frontier
    lo, hi = float(m.min()), float(m.max())
    times = np.concatenate([np.linspace(lo, hi * 1.05, 301), [p.makespan_s for p in ex.frontier]])
    bounds = exact_frontier_bounds(inst, ex.frontier, times)
    assert not np.isnan(bounds).any()  # every time from the fastest makespan up is covered
    for T, b in zip(times, bounds):
        opt = _optimum(inst, m, c, T)
        assert b <= opt + 1e-6 * abs(opt), (T, b, opt)
    # With its own bounds, the exact frontier's value is matched wherever its point is closed.
    for p in ex.frontier:
        if p.bound is not None and abs(p.bound - p.objective) <= 1e-9 * p.objective:
            (b,) = exact_frontier_bounds(inst, ex.frontier, np.array([p.makespan_s]))
            assert b == pytest.approx(energy_at(inst, ex.frontier, p.makespan_s), rel=1e-9)


def test_the_curve_is_computed_once_per_instance():
    from energyopt.pipeline import frontierbounds

    inst = synthetic_instance(2, 2, 3, seed=7)
    frontierbounds._CURVES.pop(inst.instance_id, None)
    first = frontierbounds.instance_curve(inst)
    assert first is not None and first.tangents
    assert frontierbounds.instance_curve(inst) is first


@pytest.mark.parametrize("seed", [3, 4])
def test_deadline_bounds_of_exact_solves_are_valid(seed):
    from energyopt.pipeline.frontierbounds import deadline_bounds

    inst = synthetic_instance(2, 2, 3, seed=seed)
    m, c = _brute_force(inst)
    lo, hi = float(m.min()), float(m.max())
    D = lo + 0.4 * (hi - lo)
    exact = energyopt.solve(inst.with_deadline(D), "highs")
    assert exact.bound is not None
    times = np.linspace(lo, hi, 101)
    bounds = deadline_bounds(inst, times, [(D, exact.bound)])
    assert np.isnan(bounds[times > D]).all() and not np.isnan(bounds[times <= D]).any()
    for T, b in zip(times[times <= D], bounds[times <= D]):
        opt = _optimum(inst, m, c, T)
        assert b <= opt + 1e-6 * abs(opt), (T, b, opt)
    # At the deadline itself the bound is the solve's own (the optimum there).
    (b,) = deadline_bounds(inst, np.array([D]), [(D, exact.bound)])
    assert b == exact.bound
