"""The evaluator on the hand-worked instances of conftest.py."""

from __future__ import annotations

import pytest

from energyopt.capacity import CapacitySolution, evaluate
from energyopt.core.instance import InstanceError

from .conftest import keep_or_move


def test_one_job(tiny_one_job):
    ev = evaluate(tiny_one_job, [(0, 2)])
    # 50 s * (100 + 2 * 200) W * 1e-6 EUR/J = 0.025 EUR
    assert ev.feasible and ev.theta_s == pytest.approx(50.0)
    assert ev.energy_cost_eur == pytest.approx(0.025)
    assert ev.objective == pytest.approx(0.025)
    ev = evaluate(tiny_one_job, [(0, 1)])
    assert ev.objective == pytest.approx(0.030)  # 100 s * 300 W * 1e-6
    ev = evaluate(tiny_one_job, [None])
    # theta = idle horizon 1000 s; nothing runs, no energy; not work-conserving
    assert not ev.feasible and "work-conserving" in ev.violations[0]
    assert ev.theta_s == 1000.0 and ev.objective == 0.0
    assert evaluate(tiny_one_job.with_variant(False), [None]).feasible


def test_two_jobs_every_schedule(tiny_two_jobs):
    cases = {
        ((0, 1), (0, 1)): (True, 0.040),  # a) 0.020 energy + 0.020 tardiness
        ((0, 2), None): (True, 0.030),  # b)
        (None, (0, 2)): (True, 1.015),  # c) 0.015 + 100 * 1e-3 * 10
        ((0, 1), None): (False, 0.050),  # j1 waits beside a free GPU
        (None, (0, 1)): (False, 0.012 + 2.0),
        (None, None): (False, 101.0),  # 0.1 * (1000 + 60 - 80) + 0.1 * (1000 + 30 - 1000)
    }
    for assignment, (feasible, cost) in cases.items():
        ev = evaluate(tiny_two_jobs, CapacitySolution(assignment))
        assert ev.feasible is feasible, assignment
        assert ev.objective == pytest.approx(cost), assignment
    ev = evaluate(tiny_two_jobs, [(0, 2), (0, 1)])
    assert not ev.feasible and "3 GPUs assigned" in ev.violations[0]


def test_keep_or_move():
    ev = evaluate(keep_or_move(), [(0, 1), (1, 1)])
    assert ev.objective == pytest.approx(0.035) and ev.tardiness_cost_eur == 0
    ev = evaluate(keep_or_move(), [(1, 1), (0, 1)])
    # j0 restarts: 2 epochs = 200 s, 20 s late at 1e-3 EUR/s
    assert ev.tardiness_cost_eur == pytest.approx(0.020)
    assert ev.objective == pytest.approx(0.055)
    ev = evaluate(keep_or_move(restart_from_checkpoint=False), [(1, 1), (0, 1)])
    assert ev.objective == pytest.approx(0.035)


def test_invalid_configurations_raise(tiny_two_jobs):
    with pytest.raises(InstanceError, match="node index"):
        evaluate(tiny_two_jobs, [(3, 1), None])
    with pytest.raises(InstanceError, match="has 2 GPUs"):
        evaluate(tiny_two_jobs, [(0, 3), None])
    with pytest.raises(InstanceError, match="2 jobs"):
        evaluate(tiny_two_jobs, [(0, 1)])


def test_solution_json():
    sol = CapacitySolution(((0, 1), None))
    assert CapacitySolution.from_dict(sol.to_dict()) == sol
    with pytest.raises(InstanceError, match=r"assignment\[0\]"):
        CapacitySolution.from_dict({"assignment": [[1]]})
