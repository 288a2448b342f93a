"""The ``patterns`` method (formulations/capacity.md Section 8) against hand-worked optima,
brute force and the CAP-1..10 MILP, on identical nodes (aggregated) and anchored jobs."""

from __future__ import annotations

import dataclasses
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import energyopt
from energyopt.capacity import CapacityInstance, Job, Node
from energyopt.capacity.generators import random_point
from energyopt.capacity.patterns import aggregate, packings
from energyopt.core.gap import gap
from energyopt.core.status import SolutionStatus, TerminationReason

from .conftest import PRICE, keep_or_move, one_job, two_jobs


@pytest.mark.parametrize(
    "make, work_conserving, optimum",
    [
        (one_job, True, 0.025),  # see conftest.one_job
        (one_job, False, 0.0),
        (two_jobs, True, 0.030),
        (two_jobs, False, 0.030),
        (keep_or_move, True, 0.035),
    ],
)
def test_hand_checked_optima(make, work_conserving, optimum):
    r = energyopt.solve(make().with_variant(work_conserving), "patterns")
    assert r.termination is TerminationReason.OPTIMAL, r.message
    assert r.status is SolutionStatus.OPTIMAL
    assert r.objective == pytest.approx(optimum, abs=1e-9)
    assert r.bound == pytest.approx(optimum, abs=1e-7)


def twin_nodes(idle_horizon_s: float = 3600.0) -> CapacityInstance:
    """Two identical nodes (one class of 2): 2 GPUs, idle 100 W, 50 W per busy GPU.

    Two waiting jobs, each 1 epoch: 100 s on 1 GPU, 60 s on 2; due 1000 s (never late).
    Work-conserving (1e-6 EUR/J):
      both on one node, 1 GPU each: theta 100, 100 + 2*50 = 200 W  -> 20000 J = 0.020
      one per node, 1 GPU each:     theta 100, 2 * 150 W = 300 W   -> 30000 J = 0.030
      one per node, 2 GPUs each:    theta  60, 2 * 200 W = 400 W   -> 24000 J = 0.024
      2 GPUs + 1 GPU:               theta  60, 200 + 150 = 350 W   -> 21000 J = 0.021
    optimum 0.020. May postpone, H = 100 s: both wait, theta = H, nodes off (0 J) and
    beta w max(0, 0 + 100 + 60 - 1000) = 0: optimum 0.
    """
    node = dict(gpu_type="V100", num_gpus=2, idle_power_w=100.0, gpu_power_w=50.0)
    job = dict(arrival_s=0.0, due_s=1000.0, tardiness_weight_eur_per_s=1e-2)
    return CapacityInstance(
        (Node("a", **node), Node("b", **node)),
        (
            Job("x", remaining_epochs=1.0, epoch_time_s={"V100": (100.0, 60.0)}, **job),
            Job("y", remaining_epochs=1.0, epoch_time_s={"V100": (100.0, 60.0)}, **job),
        ),
        idle_horizon_s=idle_horizon_s,
        name="twin-nodes",
        **PRICE,
    )


@pytest.mark.parametrize("work_conserving, optimum", [(True, 0.020), (False, 0.0)])
def test_twin_nodes_form_one_class(work_conserving, optimum):
    inst = twin_nodes(idle_horizon_s=100.0).with_variant(work_conserving)
    assert len(aggregate(inst).classes) == 1
    for method in ("patterns", "bruteforce"):
        r = energyopt.solve(inst, method)
        assert r.status is SolutionStatus.OPTIMAL, method
        assert r.objective == pytest.approx(optimum, abs=1e-12), method


def test_packings_of_a_four_gpu_node():
    # nothing, 1, 2, 3, 4, 1+1, 1+2, 1+3, 2+2, 1+1+1, 1+1+2, 1+1+1+1: 12 patterns.
    assert len(packings(4, 4)) == 12
    assert packings(4, 4)[0] == (0, 0, 0, 0)
    assert all(sum(g * m for g, m in enumerate(p, 1)) <= 4 for p in packings(4, 4))


def homogenized(inst: CapacityInstance) -> CapacityInstance:
    """``inst`` with every node of a GPU type made identical (one class per type).

    Each node gets its type's largest GPU count, which every running job and epoch
    table of ``random_point`` already fits, and the powers of the type's first node.
    """
    first: dict[str, Node] = {}
    size: dict[str, int] = {}
    for node in inst.nodes:
        first.setdefault(node.gpu_type, node)
        size[node.gpu_type] = max(size.get(node.gpu_type, 0), node.num_gpus)
    nodes = tuple(
        dataclasses.replace(
            first[n.gpu_type],
            name=n.name,
            num_gpus=size[n.gpu_type],
        )
        for n in inst.nodes
    )
    return dataclasses.replace(inst, nodes=nodes)


def _tol(x: float) -> float:
    return 1e-7 * max(1.0, abs(x))


@settings(deadline=None)
@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(1, 4),
    jobs=st.integers(1, 4),
    running=st.sampled_from([0.0, 0.5, 1.0]),
    work_conserving=st.booleans(),
    identical=st.booleans(),
    gpus=st.integers(1, 3),
)
def test_patterns_equals_brute_force(seed, nodes, jobs, running, work_conserving, identical, gpus):
    inst = random_point(
        seed, nodes, jobs, max_gpus=gpus, running_fraction=running, work_conserving=work_conserving
    )
    if identical:
        inst = homogenized(inst)
    brute = energyopt.solve(inst, "bruteforce")
    r = energyopt.solve(inst, "patterns", time_limit=60)
    opt = brute.objective
    assert r.status is SolutionStatus.OPTIMAL, r.message
    assert abs(r.objective - opt) <= _tol(opt)
    assert r.bound <= opt + _tol(opt)
    assert gap(r.objective, r.bound) <= 1e-4


def test_agrees_with_the_milp_on_a_larger_point():
    # 6 nodes of 4 GPUs in two classes, 8 jobs (half running): HiGHS proves CAP-1..10.
    inst = homogenized(random_point(7, 6, 8, max_gpus=4, running_fraction=0.5))
    h = energyopt.solve(inst, "highs", time_limit=120)
    p = energyopt.solve(inst, "patterns", time_limit=60)
    assert h.status is SolutionStatus.OPTIMAL and p.status is SolutionStatus.OPTIMAL
    assert p.objective == pytest.approx(h.objective, rel=1e-6)


def test_time_limit_returns_incumbent_and_an_honest_status():
    inst = energyopt.load_instance("instances/capacity/paper/016-paper-s2-n100-point100.json")
    tick = time.perf_counter()
    r = energyopt.solve(inst, "patterns", time_limit=0.05)
    assert time.perf_counter() - tick < 0.05 + 1.0
    assert r.objective is not None  # Randomized Greedy's schedule at the least
    if r.status is SolutionStatus.OPTIMAL:
        assert gap(r.objective, r.bound) <= 1e-4
    else:
        assert r.termination is TerminationReason.TIME_LIMIT


def test_paper_point_at_n100_is_proven():
    inst = energyopt.load_instance("instances/capacity/paper/008-paper-s1-n100-point150.json")
    r = energyopt.solve(inst, "patterns", time_limit=120)
    assert r.status is SolutionStatus.OPTIMAL
    greedy = energyopt.solve(inst, "randomized-greedy", seed=0)
    assert greedy.objective >= r.bound - _tol(r.bound)
