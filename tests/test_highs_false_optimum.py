"""Issue 27, "A false optimum": no ``optimal`` above the true optimum on the audit instance.

With a MIP feasibility tolerance of 1e-9 and probing off (as under a time limit),
HiGHS 1.12.0 declared a suboptimal start optimal on the capacity MILP in seconds
(``benchmarks/highs_false_optimum.py``). The capacity model now avoids that condition
(time unit Theta-bar, tolerance 1e-8), and :func:`energyopt.core.highs.solve_with_highs`
re-verifies every optimum claimed under a tighter tolerance than HiGHS' default.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import energyopt
from energyopt.capacity import milp
from energyopt.capacity.bruteforce import brute_force
from energyopt.capacity.greedy import randomized_greedy
from energyopt.core.highs import solve_with_highs
from energyopt.core.instance import load_instance
from energyopt.core.status import SolutionStatus, TerminationReason

INSTANCE = Path(__file__).parent / "data" / "capacity-false-optimum.json"
#: Brute force on the instance: j0 postponed, j1 on n1 with 2 GPUs (theta 24.2 s).
OPTIMUM = 0.0021492989795721


def _honest(objective, bound, status) -> None:
    tol = 1e-9 * OPTIMUM
    assert bound is None or bound <= OPTIMUM + tol, bound
    if status is SolutionStatus.OPTIMAL:
        assert abs(objective - OPTIMUM) <= tol, objective


def test_the_pinned_optimum_is_brute_forces():
    inst = load_instance(INSTANCE)
    _, best = brute_force(inst)
    assert best == pytest.approx(OPTIMUM, rel=1e-12)


@pytest.mark.parametrize("time_limit", [None, 30.0])
@pytest.mark.parametrize("method", ["highs", "patterns", "bruteforce"])
def test_no_method_reports_a_false_optimum(method, time_limit):
    r = energyopt.solve(load_instance(INSTANCE), method, time_limit=time_limit)
    assert r.status is SolutionStatus.OPTIMAL, r.message
    _honest(r.objective, r.bound, r.status)


def test_seeds_of_the_scaled_model():
    # HiGHS' path depends on its random seed: 13 of 30 seeds went wrong on the model in
    # seconds with the MIP start (benchmarks/highs_false_optimum.py --sweep).
    inst = load_instance(INSTANCE)
    start, _, _ = randomized_greedy(inst, max_iterations=10, seed=0)
    for seed in range(8):
        m = milp.build_model(inst)
        out = solve_with_highs(
            m, time_limit=30.0, rel_gap=1e-9, threads=1,
            warm_start=milp.warm_start_values(m, inst, start),
            solver_options={**milp.HIGHS_OPTIONS, "random_seed": seed},
        )  # fmt: skip
        assert out.termination is TerminationReason.OPTIMAL, (seed, out.message)
        _honest(out.objective, out.bound, out.status)


def test_a_false_claim_is_caught_and_reported_honestly():
    # The model in seconds at tolerance 1e-9 (the old settings) makes HiGHS claim the
    # start optimal on some seeds; the re-solve must catch every such claim.
    inst = load_instance(INSTANCE)
    start, _, _ = randomized_greedy(inst, max_iterations=10, seed=0)
    caught = 0
    for seed in (0, 2, 5, 8):  # seeds that went wrong with HiGHS 1.12.0
        m = milp.build_model(inst, time_unit=1.0)
        out = solve_with_highs(
            m, time_limit=30.0, rel_gap=1e-9, threads=1,
            warm_start=milp.warm_start_values(m, inst, start),
            solver_options={"random_seed": seed},
        )  # fmt: skip
        _honest(out.objective, out.bound, out.status)
        if out.extra.get("verified_optimal") is False:
            caught += 1
            assert out.termination is TerminationReason.UNKNOWN, out.termination
            assert out.status is SolutionStatus.FEASIBLE
            assert out.bound == pytest.approx(OPTIMUM, rel=1e-6), out.bound
            assert "not confirmed" in out.message
    if not caught:
        pytest.skip("this HiGHS no longer claims the false optimum: the pin may be lifted")
