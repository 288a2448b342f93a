"""Property tests of the capacity ``patterns`` method (formulations/capacity.md Section 8).

On random small points, both postponement variants, ``patterns`` finds the brute-force
optimum and its proven bound never exceeds it. Three kinds of clusters: node classes
drawn from a menu (classes of several nodes, one GPU type with several GPU counts,
most running jobs anchored by a fractional epoch), ``random_point`` (every node its own
class) and ``random_point`` made identical per GPU type (one class per type).
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import energyopt
from energyopt.capacity import brute_force
from energyopt.capacity.generators import random_point
from energyopt.core.gap import gap
from energyopt.core.status import SolutionStatus
from tests.capacity.helpers import homogenized, menu_point


def _tol(x: float) -> float:
    return 1e-7 * max(1.0, abs(x))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    nodes=st.integers(1, 4),
    jobs=st.integers(1, 4),
    cluster=st.sampled_from(["menu", "random", "identical"]),
    running=st.sampled_from([0.0, 0.5, 1.0]),
    gpus=st.integers(1, 3),
    work_conserving=st.booleans(),
)
def test_patterns_equals_brute_force(seed, nodes, jobs, cluster, running, gpus, work_conserving):
    if cluster == "menu":
        inst = menu_point(seed, nodes, jobs, work_conserving)
    else:
        inst = random_point(
            seed,
            nodes,
            jobs,
            max_gpus=gpus,
            running_fraction=running,
            work_conserving=work_conserving,
        )
        if cluster == "identical":
            inst = homogenized(inst)
    try:
        _, best = brute_force(inst)
    except ValueError:  # too many assignments for brute force
        return
    r = energyopt.solve(inst, "patterns", time_limit=60)
    assert r.status is SolutionStatus.OPTIMAL, r.message
    assert abs(r.objective - best) <= _tol(best)
    assert r.bound <= best + _tol(best)
    assert gap(r.objective, r.bound) <= 1e-4
