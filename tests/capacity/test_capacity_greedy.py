"""Randomized Greedy: hand-checked run, determinism, never below the proven optimum."""

from __future__ import annotations

import pytest

import energyopt
from energyopt.capacity import evaluate, randomized_greedy
from energyopt.capacity.generators import random_point

from .conftest import keep_or_move, two_jobs


def test_plain_greedy_on_two_jobs():
    # Pressure (Eq. 2): j0 0 + 60 - 80 = -20, j1 0 + 30 - 1000 = -970 -> j0 first.
    # D_j0 = {2 GPUs} (60 < 80; 100 is not): cost 60 * 500e-6 = 0.030 -> (0, 2).
    # D_j1 = {1 GPU: 40 * 300e-6 = 0.012, 2 GPUs: 30 * 500e-6 = 0.015}: 1 GPU is
    # cheapest, the node is full, no fallback fits -> j1 waits. f_OBJ 0.030 (schedule b).
    assignment, cost, trace = randomized_greedy(two_jobs(), max_iterations=1)
    assert assignment == ((0, 2), None)
    assert cost == pytest.approx(0.030)
    assert trace.best_per_iteration == [cost]


def test_greedy_keeps_a_running_job():
    # j0's own configuration (150 s) is cheaper than a restart elsewhere (200 s).
    assignment, cost, _ = randomized_greedy(keep_or_move(), max_iterations=1)
    assert assignment == ((0, 1), (1, 1)) and cost == pytest.approx(0.035)


def test_deterministic_for_a_seed():
    inst = random_point(11, 3, 6, max_gpus=2)
    a = energyopt.solve(inst, "randomized-greedy", seed=4, max_iterations=200)
    b = energyopt.solve(inst, "randomized-greedy", seed=4, max_iterations=200)
    assert a.solution == b.solution and a.objective == b.objective


def test_more_iterations_never_worse():
    inst = random_point(12, 3, 6, max_gpus=2)
    costs = [randomized_greedy(inst, k, seed=1)[1] for k in (1, 10, 100)]
    assert costs[0] >= costs[1] >= costs[2]
    _, _, trace = randomized_greedy(inst, 100, seed=1)
    assert all(a >= b for a, b in zip(trace.best_per_iteration, trace.best_per_iteration[1:]))


@pytest.mark.parametrize("seed", range(16))
def test_never_below_the_milp_optimum(seed):
    inst = random_point(200 + seed, 3, 5, max_gpus=2)
    for variant in (True, False):
        point = inst.with_variant(variant)
        opt = energyopt.solve(point, "highs")
        assert opt.termination.value == "optimal"
        for k in (1, 50):
            g = energyopt.solve(point, "randomized-greedy", seed=seed, max_iterations=k)
            assert evaluate(inst, g.solution).feasible  # always work-conserving
            assert g.objective >= opt.objective - 1e-9 - 1e-9 * opt.objective
            assert energyopt.gap(g.objective, opt.bound) >= 0


def test_bad_options():
    inst = two_jobs()
    with pytest.raises(ValueError, match="max_iterations"):
        randomized_greedy(inst, 0)
    with pytest.raises(ValueError, match="swap_probability"):
        randomized_greedy(inst, 5, swap_probability=2.0)
    with pytest.raises(ValueError, match="max_iterations = 0: must be >= 1"):
        energyopt.solve(inst, "randomized-greedy", max_iterations=0)


def test_never_below_the_optimum_on_simulated_points():
    # Rescheduling points as the simulator meets them (running jobs with fractional
    # progress, jobs restarted from checkpoints), on a 4-node cluster of scenario 2.
    from energyopt.capacity import job_stream, scenario_cluster, simulate

    nodes = scenario_cluster(4, scenario=2)
    run = simulate(
        nodes, job_stream(nodes, 16, seed=5, load=1.5), "randomized-greedy",
        max_iterations=20, keep_points_every=5,
    )  # fmt: skip
    points = [p for p in run.points if p.num_jobs >= 3][:4]
    assert points
    for p in points:
        for variant in (True, False):
            point = p.with_variant(variant)
            opt = energyopt.solve(point, "highs")
            assert opt.termination.value == "optimal"
            for k in (1, 100):
                g = energyopt.solve(point, "randomized-greedy", seed=1, max_iterations=k)
                assert g.objective >= opt.objective - 1e-9 - 1e-9 * opt.objective
