"""The MILP (CAP-1..10) against hand-worked optima and against brute force."""

from __future__ import annotations

import pytest

import energyopt
from energyopt.capacity import brute_force, evaluate
from energyopt.capacity import milp as capmilp
from energyopt.capacity.generators import random_point
from energyopt.core.status import SolutionStatus, TerminationReason

from .conftest import keep_or_move, one_job, two_jobs


@pytest.mark.parametrize(
    "make, work_conserving, optimum, schedule",
    [
        (one_job, True, 0.025, ((0, 2),)),  # see conftest.one_job
        (one_job, False, 0.0, (None,)),  # postponing is free, far from the due date
        (two_jobs, True, 0.030, ((0, 2), None)),  # schedule (b)
        (two_jobs, False, 0.030, ((0, 2), None)),
        (keep_or_move, True, 0.035, ((0, 1), (1, 1))),
    ],
)
def test_hand_checked_optima(make, work_conserving, optimum, schedule):
    inst = make().with_variant(work_conserving)
    for method in ("highs", "bruteforce"):
        r = energyopt.solve(inst, method)
        assert r.termination is TerminationReason.OPTIMAL, r.message
        assert r.status is SolutionStatus.OPTIMAL
        assert r.objective == pytest.approx(optimum, abs=1e-9)
        assert r.bound == pytest.approx(optimum, abs=1e-7)
        assert r.gap == 0.0
        assert r.solution.assignment == schedule, method


def test_checkpoint_loss_off_makes_the_move_free():
    # keep_or_move without the loss: keep and swap both cost 0.035 (see conftest).
    r = energyopt.solve(keep_or_move(restart_from_checkpoint=False), "highs")
    assert r.objective == pytest.approx(0.035)


# Random tiny points: 2-3 nodes of 1-2 GPUs, 3-4 jobs, some running; both variants.
CASES = [(seed, nodes, jobs) for seed in range(12) for nodes, jobs in ((2, 3), (3, 4))]


@pytest.mark.parametrize("work_conserving", [True, False])
@pytest.mark.parametrize("seed, nodes, jobs", CASES)
def test_milp_equals_brute_force(seed, nodes, jobs, work_conserving):
    inst = random_point(seed, nodes, jobs, work_conserving=work_conserving)
    _, best = brute_force(inst)
    r = energyopt.solve(inst, "highs")
    assert r.termination is TerminationReason.OPTIMAL, r.message
    assert r.objective == pytest.approx(best, rel=1e-6, abs=1e-9)
    assert r.bound <= best + 1e-7 + 1e-6 * best
    assert evaluate(inst, r.solution).feasible


def test_non_work_conserving_never_worse():
    for seed in range(10):
        wc = random_point(100 + seed, 3, 4)
        a = energyopt.solve(wc, "highs").objective
        b = energyopt.solve(wc.with_variant(False), "highs").objective
        assert b <= a + 1e-9


def test_warm_start_values_are_a_feasible_point():
    # The MIP start built from a schedule satisfies every constraint of the model.
    import pyomo.environ as pyo

    inst = random_point(5, 3, 4)
    sched, _ = brute_force(inst)
    m = capmilp.build_model(inst)
    for var, val in capmilp.warm_start_values(m, inst, sched).items():
        var.set_value(val, skip_validation=True)
    for con in m.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(con.body)
        assert con.lower is None or body >= pyo.value(con.lower) - 1e-6, con.name
        assert con.upper is None or body <= pyo.value(con.upper) + 1e-6, con.name
    assert pyo.value(m.cost) == pytest.approx(evaluate(inst, sched).objective, abs=1e-9)


def test_time_limit_reports_a_bound_or_nothing():
    inst = random_point(3, 3, 4)
    r = energyopt.solve(inst, "highs", time_limit=5)
    assert r.bound is None or r.bound <= r.objective + 1e-9


def test_scoring_catches_wrong_numbers(tiny_two_jobs):
    from energyopt.capacity.methods import capacity_result
    from energyopt.core.registry import EvaluationMismatchError

    done = TerminationReason.COMPLETED
    # Schedule (b) costs 0.030 EUR (conftest.two_jobs).
    r = capacity_result(tiny_two_jobs, "t", ((0, 2), None), termination=done)
    assert r.objective == pytest.approx(0.030)
    with pytest.raises(EvaluationMismatchError, match="evaluator gives"):
        capacity_result(
            tiny_two_jobs, "t", ((0, 2), None), termination=done, solver_objective=0.029
        )
    with pytest.raises(EvaluationMismatchError, match="rejected"):
        capacity_result(tiny_two_jobs, "t", ((0, 1), None), termination=done)  # j1 waits
    with pytest.raises(EvaluationMismatchError, match="bound"):
        capacity_result(tiny_two_jobs, "t", ((0, 2), None), termination=done, bound=0.031)
