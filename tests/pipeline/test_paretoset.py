"""The frontier bookkeeping (paretoset.py) against plain one-point-at-a-time references."""

import numpy as np
import pytest

from energyopt.pipeline import synthetic_instance
from energyopt.pipeline.paretoset import _plan_tuples, frontier_points, pareto_indices


def _pareto_reference(times, energies):
    """The definition, point after point: kept when below the best so far beyond 1e-12."""
    t, e = np.asarray(times, dtype=float), np.asarray(energies, dtype=float)
    keep, best = [], np.inf
    for k in np.lexsort((np.arange(len(t)), e, t)):
        if e[k] < best - 1e-12 * max(1.0, abs(best) if np.isfinite(best) else 1.0):
            keep.append(int(k))
            best = e[k]
    return keep


@pytest.mark.parametrize("seed", range(6))
def test_pareto_indices_equal_the_point_by_point_definition(seed):
    rng = np.random.default_rng(seed)
    n = 400
    t = np.sort(rng.integers(0, 300, n)) * 0.01  # some equal times
    e = 1000.0 - 3 * t + rng.normal(0, 1e-3, n)
    if seed % 2:
        e -= 1000.0  # energies around zero: the tolerance is absolute there
    # Steps down from the point before of 0.3 to 3 tolerances: near ties kept and dropped.
    for i in np.sort(rng.choice(np.arange(1, n), 120, replace=False)):
        frac = rng.choice([0.0, 0.3, 0.9, 1.0, 1.5, 3.0])
        e[i] = e[i - 1] - frac * 1e-12 * max(1.0, abs(e[i - 1]))
    e[rng.choice(n, 5, replace=False)] = np.nan
    e[rng.choice(n, 3, replace=False)] = np.inf
    if seed == 5:
        e[rng.choice(n, 2, replace=False)] = -np.inf
    perm = rng.permutation(n)
    t, e = t[perm], e[perm]
    assert pareto_indices(t, e).tolist() == _pareto_reference(t, e)


def test_pareto_indices_of_no_points_and_of_a_chain_of_near_ties():
    assert pareto_indices([], []).tolist() == []
    chain = 5.0 - 1e-12 * 3.0 * np.arange(10)  # each within the tolerance of two before
    times = np.arange(10.0)
    assert pareto_indices(times, chain).tolist() == _pareto_reference(times, chain)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int16", "int32", "int64", ">i4"])
def test_plan_tuples_are_the_rows_as_int_tuples(dtype):
    rng = np.random.default_rng(0)
    plans = rng.integers(0, 100, (30, 11)).astype(dtype)
    rows = np.array([29, 0, 7, 7, 12])
    got = list(_plan_tuples(plans[:, ::1], rows))
    assert got == [tuple(plans[k].tolist()) for k in rows]
    assert all(type(v) is int for v in got[0])
    # A view with strides (the rows of a transposed array) gives the same tuples.
    assert list(_plan_tuples(np.asfortranarray(plans), rows)) == got


def test_frontier_points_keep_the_plans_whatever_their_integer_width():
    inst = synthetic_instance(3, 4, 5, seed=2)
    rng = np.random.default_rng(1)
    sizes = [len(t) for t in inst.option_times]
    plans = np.array([[rng.integers(k) for k in sizes] for _ in range(200)])
    wide = frontier_points(inst, plans)
    for dtype in ("int16", "uint8"):
        assert frontier_points(inst, plans.astype(dtype)) == wide
    assert all(type(v) is int for v in wide[0].solution.choice)
