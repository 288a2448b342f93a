"""The ``patterns`` method (formulations/capacity.md Section 8, CAP-11..17).

Hand-worked optima (identical nodes aggregated, a host node with an anchored job), the
aggregation itself, agreement with ``bruteforce`` and the CAP-1..10 MILP ``highs`` on
random small points (node classes with several members, several GPU types, running
jobs anchored to their nodes, both postponement variants), the paper's N = 100 scale,
the time limit, and bad options. The Hypothesis property against brute force is in
tests/properties/test_capacity_properties.py.
"""

from __future__ import annotations

import pytest

import energyopt
from energyopt.capacity import CapacityInstance, Job, Node, brute_force, evaluate
from energyopt.capacity.generators import random_point
from energyopt.capacity.patterns import aggregate, packings, theta_candidates
from energyopt.core.gap import gap
from energyopt.core.status import SolutionStatus, TerminationReason
from tests.timing import assert_within, loaded, measured

from .conftest import PRICE, class_with_host, keep_or_move, one_job, two_jobs
from .helpers import homogenized, menu_point


def _tol(x: float) -> float:
    return 1e-7 * max(1.0, abs(x))


@pytest.mark.parametrize(
    "make, work_conserving, optimum",
    [
        (one_job, True, 0.025),  # conftest.one_job: (0, 2), 50 s * 500 W * 1e-6
        (one_job, False, 0.0),  # postponing is free, far from the due date
        (two_jobs, True, 0.030),  # conftest.two_jobs, schedule (b)
        (two_jobs, False, 0.030),
        (keep_or_move, True, 0.035),  # keep j0 on n0, j1 on n1
        (class_with_host, True, 0.020),  # j0 kept on n0, j1 beside it
        (class_with_host, False, 0.015),  # j1 alone on 2 GPUs, j0 waits at no cost
    ],
)
def test_hand_checked_optima(make, work_conserving, optimum):
    r = energyopt.solve(make().with_variant(work_conserving), "patterns")
    assert r.termination is TerminationReason.OPTIMAL, r.message
    assert r.status is SolutionStatus.OPTIMAL
    assert r.objective == pytest.approx(optimum, abs=1e-12)
    assert r.bound == pytest.approx(optimum, abs=1e-8)
    assert r.bound <= r.objective + 1e-12


def test_hand_checked_schedule_keeps_the_anchored_job():
    # conftest.class_with_host: the unique work-conserving optimum keeps j0 on (n0, 1)
    # and puts j1 on n0's second GPU (theta 40 s, one node on: 0.020 EUR).
    r = energyopt.solve(class_with_host(), "patterns")
    assert r.solution.assignment == ((0, 1), (0, 1))


def test_aggregation_of_class_with_host():
    agg = aggregate(class_with_host())
    # One class of two nodes; n0 hosts the anchored j0, so only n1 is a free node.
    assert len(agg.classes) == 1
    assert agg.classes[0].nodes == (0, 1) and agg.classes[0].free_nodes == (1,)
    assert set(agg.keeps) == {0} and agg.keeps[0].time_s == 50.0  # 0.5 epoch * 100 s
    # Host states of n0: j0 leaves (2 GPUs left) or stays (1 left).
    assert [(s.kept, s.residual) for s in agg.host_states[0]] == [((), 2), ((0,), 1)]
    # Moves from the checkpoint: j0 100 s / 60 s, j1 40 s / 30 s; theta takes these
    # four values or j0's keep time 50 s.
    assert theta_candidates(agg) == [30.0, 40.0, 50.0, 60.0, 100.0]


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
    # The 12 multisets of formulations/capacity.md Section 8.1 / patterns.packings.
    pats = packings(4, 4)
    assert len(pats) == 12 and pats[0] == (0, 0, 0, 0)
    assert all(sum(g * k for g, k in enumerate(q, start=1)) <= 4 for q in pats)
    assert len(set(pats)) == 12
    # A node with 1 GPU left of 2 takes nothing or one 1-GPU job.
    assert packings(1, 2) == ((0, 0), (1, 0))


def _agree(inst) -> None:
    _, best = brute_force(inst)
    tol = 1e-7 * max(1.0, best)
    p = energyopt.solve(inst, "patterns")
    assert p.termination is TerminationReason.OPTIMAL, p.message
    assert p.objective == pytest.approx(best, rel=1e-6, abs=1e-9)
    assert p.bound <= best + tol
    assert gap(p.objective, p.bound) <= 1e-5
    assert evaluate(inst, p.solution).feasible
    h = energyopt.solve(inst, "highs")
    assert h.objective == pytest.approx(p.objective, rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("work_conserving", [True, False])
@pytest.mark.parametrize("seed", range(10))
def test_equals_brute_force_and_highs_on_node_classes(seed, work_conserving):
    _agree(menu_point(seed, 2 + seed % 3, 3 + seed % 2, work_conserving))


def test_menu_points_cover_shared_classes_and_anchored_jobs():
    # The cases above are only a check of the aggregation if some of them have a class
    # of several nodes, a host node, and a node class whose type has another GPU count.
    aggs = [aggregate(menu_point(seed, 2 + seed % 3, 3 + seed % 2, True)) for seed in range(10)]
    assert sum(any(len(c.nodes) > 1 for c in a.classes) for a in aggs) >= 3
    assert sum(bool(a.keeps) for a in aggs) >= 3
    assert sum(len({c.gpu_type for c in a.classes}) > 1 for a in aggs) >= 3


@pytest.mark.parametrize("work_conserving", [True, False])
@pytest.mark.parametrize("seed", range(6))
def test_equals_brute_force_and_highs_on_random_points(seed, work_conserving):
    # random_point: every node its own class (random powers), two GPU types.
    _agree(
        random_point(
            seed, 2 + seed % 2, 3 + seed % 2, running_fraction=0.6, work_conserving=work_conserving
        )
    )


def test_agrees_with_the_milp_on_a_larger_point():
    # 6 nodes of 4 GPUs in two classes, 8 jobs (half running): HiGHS proves CAP-1..10.
    inst = homogenized(random_point(7, 6, 8, max_gpus=4, running_fraction=0.5))
    h = energyopt.solve(inst, "highs", time_limit=120)
    p = energyopt.solve(inst, "patterns", time_limit=60)
    assert h.status is SolutionStatus.OPTIMAL and p.status is SolutionStatus.OPTIMAL
    assert p.objective == pytest.approx(h.objective, rel=1e-6)


def test_time_limit_returns_incumbent_and_an_honest_status():
    inst = energyopt.load_instance("instances/capacity/paper/016-paper-s2-n100-point100.json")
    with measured() as used:
        r = energyopt.solve(inst, "patterns", time_limit=0.05)
    assert_within(used, 0.05, "patterns")
    assert r.objective is not None  # Randomized Greedy's schedule at the least
    if r.status is SolutionStatus.OPTIMAL:
        assert gap(r.objective, r.bound) <= 1e-4
    else:
        assert r.termination is TerminationReason.TIME_LIMIT


def test_time_limit_returns_incumbent_and_bound():
    # 100 heterogeneous nodes (every node its own class) and 100 jobs, work-conserving:
    # still open after 30 s (docs/capacity.md), so the limit stops the scan. 5 s leaves
    # the first LP bound (0.3-1.2 s measured, greedy and aggregation before it) time to
    # finish on a loaded machine.
    inst = random_point(0, 100, 100, max_gpus=4, running_fraction=0.5)
    limit = 5.0
    with measured() as used:
        r = energyopt.solve(inst, "patterns", time_limit=limit)
    assert_within(used, limit, "patterns")
    assert r.objective is not None and evaluate(inst, r.solution).feasible
    assert r.bound is not None or loaded(used), f"no bound although the method ran: {used}"
    assert r.bound is None or r.bound <= r.objective
    g = gap(r.objective, r.bound)
    if g is None or g > 1e-6:
        assert r.termination is TerminationReason.TIME_LIMIT
        assert r.status is not SolutionStatus.OPTIMAL


@pytest.mark.parametrize(
    "options, text",
    [
        ({"greedy_iterations": 0}, "greedy_iterations = 0: must be >= 1"),
        ({"rel_gap": -0.1}, "rel_gap = -0.1: must be >= 0"),
        ({"rel_gap": 1.5}, "rel_gap = 1.5: must be < 1"),
        ({"rel_gap": float("inf")}, "rel_gap = inf: must be finite"),
    ],
)
def test_bad_options_name_the_option(options, text):
    # Refused from the method's declaration, before any work (issue 27).
    with pytest.raises(ValueError) as info:
        energyopt.solve(one_job(), "patterns", **options)
    assert text in str(info.value)


@pytest.mark.parametrize(
    "options", [{"greedy_iterations": 2.5}, {"greedy_iterations": True}, {"rel_gap": "x"}]
)
def test_bad_option_types_are_refused_before_solving(options):
    with pytest.raises(ValueError, match=next(iter(options))):
        energyopt.solve(one_job(), "patterns", **options)


def test_paper_point_at_n100_is_proven():
    inst = energyopt.load_instance("instances/capacity/paper/008-paper-s1-n100-point150.json")
    r = energyopt.solve(inst, "patterns", time_limit=120)
    assert r.status is SolutionStatus.OPTIMAL
    greedy = energyopt.solve(inst, "randomized-greedy", seed=0)
    assert greedy.objective >= r.bound - _tol(r.bound)
