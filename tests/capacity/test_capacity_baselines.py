"""FIFO, EDF and priority: their order, and that running jobs are never touched."""

from __future__ import annotations

import pytest

import energyopt
from energyopt.capacity import CapacityInstance, Job, Node, first_principle
from energyopt.capacity.generators import random_point


def three_waiting() -> CapacityInstance:
    """One 1-GPU node, three waiting jobs at T_c = 2 s: only the first of each policy's order runs.

    a: arrived 0, due 500, weight 1e-3;  b: arrived 1, due 100, weight 2e-3;
    c: arrived 2, due 300, weight 5e-3.  FIFO -> a, EDF -> b, priority -> c.
    """
    t = {"V100": (10.0,)}
    return CapacityInstance(
        (Node("v", "V100", 1, 100.0, 200.0),),
        (
            Job("a", 0.0, 500.0, 1e-3, 1.0, t),
            Job("b", 1.0, 100.0, 2e-3, 1.0, t),
            Job("c", 2.0, 300.0, 5e-3, 1.0, t),
        ),
        now_s=2.0,
    )


@pytest.mark.parametrize("policy, runs", [("fifo", 0), ("edf", 1), ("priority", 2)])
def test_policy_order(policy, runs):
    assignment = first_principle(three_waiting(), policy)
    assert [a is not None for a in assignment] == [j == runs for j in range(3)]
    r = energyopt.solve(three_waiting(), policy)
    assert r.solution.assignment == assignment and r.status.value == "feasible"


def test_fastest_configuration_that_fits():
    # A 2-GPU V100 node and a 1-GPU T4 node; a job 60 s/epoch on 1 V100, 40 s on 2,
    # 150 s on the T4: FIFO gives it both V100s (40 s is the fastest).
    inst = CapacityInstance(
        (Node("v", "V100", 2, 100.0, 200.0), Node("t", "T4", 1, 80.0, 70.0)),
        (Job("a", 0.0, 1e3, 1e-3, 1.0, {"V100": (60.0, 40.0), "T4": (150.0,)}),),
    )
    assert first_principle(inst, "fifo") == ((0, 2),)


@pytest.mark.parametrize("seed", range(10))
def test_running_jobs_untouched_and_work_conserving(seed):
    inst = random_point(seed, 3, 5, running_fraction=0.6)
    for policy in ("fifo", "edf", "priority"):
        r = energyopt.solve(inst, policy)  # scored by the evaluator: feasible or raises
        for job, a in zip(inst.jobs, r.solution.assignment):
            if job.running is not None:
                assert a == job.running


def test_unknown_policy():
    with pytest.raises(ValueError, match="policy"):
        first_principle(three_waiting(), "lifo")
