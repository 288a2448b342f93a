"""Property tests of the capacity ``patterns`` method (formulations/capacity.md Section 8).

On random small points (repeated node classes, several GPU types, running jobs
anchored to their nodes, both postponement variants), ``patterns`` finds the brute-force
optimum and its proven bound never exceeds it.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

import energyopt
from energyopt.capacity import brute_force
from energyopt.capacity.generators import random_point
from tests.capacity.helpers import menu_point


def _tol(x: float) -> float:
    return 1e-7 * max(1.0, abs(x))


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 100_000),
    nodes=st.integers(1, 4),
    jobs=st.integers(1, 4),
    menu=st.booleans(),
    work_conserving=st.booleans(),
)
def test_patterns_equals_brute_force(seed, nodes, jobs, menu, work_conserving):
    if menu:  # node classes with several members, anchored jobs
        inst = menu_point(seed, nodes, jobs, work_conserving)
    else:  # every node its own class
        inst = random_point(
            seed, min(nodes, 3), jobs, running_fraction=0.6, work_conserving=work_conserving
        )
    try:
        _, best = brute_force(inst)
    except ValueError:  # too many assignments for brute force
        return
    r = energyopt.solve(inst, "patterns")
    assert r.objective is not None and abs(r.objective - best) <= _tol(best) + 1e-6 * best
    assert r.bound is not None and r.bound <= best + _tol(best)
    assert r.status.value == "optimal", r.message
