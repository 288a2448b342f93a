"""The ``patterns`` method (formulations/capacity.md Section 8, CAP-11..17).

Hand-worked optima, the aggregation itself, agreement with ``bruteforce`` and
``highs`` on random small points (node classes with several members, several GPU
types, running jobs anchored to their nodes), the time limit, and bad options.
"""

from __future__ import annotations

import numpy as np
import pytest

import energyopt
from energyopt.capacity import CapacityInstance, Job, Node, brute_force, evaluate
from energyopt.capacity.generators import epoch_table, random_point
from energyopt.capacity.patterns import aggregate, packings, theta_candidates
from energyopt.core.gap import gap
from energyopt.core.status import SolutionStatus, TerminationReason

from .conftest import class_with_host, keep_or_move, one_job, two_jobs


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


def test_packings_of_a_four_gpu_node():
    # The 12 multisets of formulations/capacity.md Section 8.1 / patterns.packings.
    pats = packings(4, 4)
    assert len(pats) == 12 and pats[0] == (0, 0, 0, 0)
    assert all(sum(g * k for g, k in enumerate(q, start=1)) <= 4 for q in pats)
    assert len(set(pats)) == 12
    # A node with 1 GPU left of 2 takes nothing or one 1-GPU job.
    assert packings(1, 2) == ((0, 0), (1, 0))


# Node classes drawn from a small menu, so that classes have several members; two GPU
# types, 1-, 2- and 4-GPU nodes of one type (classes of one type with different G).
MENU = (
    ("V100", 2, 100.0, 200.0),
    ("V100", 1, 100.0, 200.0),
    ("V100", 4, 150.0, 250.0),
    ("T4", 2, 60.0, 70.0),
)


def menu_point(seed: int, num_nodes: int, num_jobs: int, work_conserving: bool):
    """A small point of repeated node classes; most running jobs anchored (fractional)."""
    rng = np.random.default_rng(seed)
    nodes = tuple(
        Node(f"n{i}", *MENU[int(k)]) for i, k in enumerate(rng.integers(0, len(MENU), num_nodes))
    )
    cap: dict[str, int] = {}
    for node in nodes:
        cap[node.gpu_type] = max(cap.get(node.gpu_type, 0), node.num_gpus)
    free = [node.num_gpus for node in nodes]
    jobs = []
    for j in range(num_jobs):
        t1 = float(rng.choice([20.0, 40.0, 60.0, 100.0]))  # repeated times: ties in theta
        table = epoch_table(t1, float(rng.choice([1.5, 2.0])), float(rng.choice([0.5, 0.8])), cap)
        if len(cap) > 1 and rng.random() < 0.25:  # a job for one GPU type only
            table.pop(sorted(cap)[int(rng.integers(len(cap)))])
        epochs = int(rng.integers(1, 4))
        remaining, running = float(epochs), None
        options = [
            (n, g)
            for n, node in enumerate(nodes)
            if node.gpu_type in table
            for g in range(1, free[n] + 1)
        ]
        if options and rng.random() < 0.6:
            running = options[int(rng.integers(len(options)))]
            free[running[0]] -= running[1]
            if rng.random() < 0.7:  # anchored: its progress stays on its node
                remaining -= float(rng.choice([0.25, 0.5]))
        fastest = remaining * min(min(v) for v in table.values())
        due = 100.0 + float(rng.uniform(0.3, 3.0)) * fastest
        weight = float(rng.choice([1e-4, 5e-4, 1e-3]))
        jobs.append(Job(f"j{j}", 0.0, due, weight, remaining, table, running))
    return CapacityInstance(
        nodes,
        tuple(jobs),
        now_s=100.0,
        work_conserving=work_conserving,
        idle_horizon_s=float(rng.choice([200.0, 1000.0])),
        restart_from_checkpoint=bool(rng.random() < 0.8),
        name=f"menu-point-{seed}",
    )


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


def test_time_limit_returns_incumbent_and_bound():
    # 100 heterogeneous nodes (every node its own class) and 100 jobs: about 9 s to close
    # on an idle machine, so a 2 s limit stops the scan.
    inst = random_point(0, 100, 100, max_gpus=4, running_fraction=0.5)
    limit = 2.0
    r = energyopt.solve(inst, "patterns", time_limit=limit)
    assert r.runtime_s <= limit + 1.0
    assert r.objective is not None and evaluate(inst, r.solution).feasible
    assert r.bound is not None and r.bound <= r.objective
    if gap(r.objective, r.bound) > 1e-6:
        assert r.termination is TerminationReason.TIME_LIMIT
        assert r.status is not SolutionStatus.OPTIMAL


@pytest.mark.parametrize(
    "options, text",
    [
        ({"greedy_iterations": 0}, "greedy_iterations = 0: must be >= 1"),
        ({"rel_gap": -0.1}, "rel_gap = -0.1: must be in [0, 1)"),
        ({"rel_gap": 1.5}, "rel_gap = 1.5: must be in [0, 1)"),
        ({"rel_gap": float("inf")}, "rel_gap = inf: must be in [0, 1)"),
    ],
)
def test_bad_options_name_the_option(options, text):
    r = energyopt.solve(one_job(), "patterns", **options)
    assert r.termination is TerminationReason.ERROR
    assert text in r.message


@pytest.mark.parametrize(
    "options", [{"greedy_iterations": 2.5}, {"greedy_iterations": True}, {"rel_gap": "x"}]
)
def test_bad_option_types_are_refused_before_solving(options):
    with pytest.raises(ValueError, match=next(iter(options))):
        energyopt.solve(one_job(), "patterns", **options)
