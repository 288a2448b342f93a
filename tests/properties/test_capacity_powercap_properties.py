"""Property-based audit of the capacity and powercap families (issue 12).

Random small rescheduling points and scheduling events (both variants, caps from
tight to loose): the MILP equals brute force, no bound exceeds the optimum,
``optimal`` only with a closed gap, and no heuristic falls below the optimum or
answers ``infeasible`` where brute force finds a solution.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import energyopt
from energyopt.capacity.generators import random_point
from energyopt.core.gap import gap
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.powercap.suites import random_event


def _tol(x: float) -> float:
    return 1e-7 * max(1.0, abs(x))


def _check_against(reference, result, method: str) -> None:
    opt = reference.objective
    assert result.termination is not TerminationReason.ERROR, (method, result.message)
    if opt is not None and method != "bruteforce":
        assert result.termination is not TerminationReason.INFEASIBLE, method
    if result.objective is not None:
        assert result.objective >= opt - _tol(opt), method
    if result.bound is not None and opt is not None:
        assert result.bound <= opt + _tol(opt), method
    if result.status is SolutionStatus.OPTIMAL:
        assert gap(result.objective, result.bound) <= 1e-4, method


@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(1, 3),
    jobs=st.integers(1, 4),
    running=st.sampled_from([0.0, 0.5, 1.0]),
    work_conserving=st.booleans(),
)
def test_capacity_methods_against_brute_force(seed, nodes, jobs, running, work_conserving):
    inst = random_point(
        seed, nodes, jobs, max_gpus=2, running_fraction=running, work_conserving=work_conserving
    )
    brute = energyopt.solve(inst, "bruteforce")
    assert brute.status is SolutionStatus.OPTIMAL
    h = energyopt.solve(inst, "highs", time_limit=30)
    assert h.objective is not None and abs(h.objective - brute.objective) <= _tol(brute.objective)
    for method in ("highs", "randomized-greedy", "fifo", "edf", "priority"):
        r = h if method == "highs" else energyopt.solve(inst, method, seed=seed)
        _check_against(brute, r, method)


@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 4),
    eta=st.sampled_from([0.2, 0.3, 0.5, 0.8, 1.0]),
    per_node=st.sampled_from([4, 8]),
    wait=st.sampled_from([None, 0.0]),
)
def test_powercap_methods_against_brute_force(seed, jobs, eta, per_node, wait):
    import dataclasses

    inst = random_event(jobs, 8, per_node, eta, seed=seed, clocks_mhz=(795, 1110, 1530), max_gpus=4)
    if wait is not None:  # the degenerate waiting estimate of issue 12, item 5
        inst = dataclasses.replace(inst, wait_estimate_s=wait)
    brute = energyopt.solve(inst, "bruteforce")
    if brute.objective is None:
        return  # the cap is below every configuration: nothing to compare
    for method in ("highs", "greedy"):
        _check_against(brute, energyopt.solve(inst, method, time_limit=30), method)
