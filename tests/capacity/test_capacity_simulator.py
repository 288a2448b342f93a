"""The online simulator on a run worked out by hand, and its bookkeeping."""

from __future__ import annotations

import itertools

import pytest

from energyopt.capacity import Node
from energyopt.capacity.generators import SubmittedJob, job_stream, scenario_cluster
from energyopt.capacity.simulator import simulate

PRICE = dict(energy_price_eur_per_kwh=3.6, pue=1.0)  # 1e-6 EUR per joule


def preemption_case():
    """One 1-GPU node (100 W idle + 200 W busy = 300 W -> 3e-4 EUR/s).

    A: arrives 0, 2 epochs of 100 s, due 1e5, w 1e-3.  B: arrives 150, 1 epoch of 100 s,
    due 260, w 1e-3. At t = 150 A has 0.5 epoch left.
    Randomized Greedy at t = 150: B has the highest pressure (150 + 100 - 260 = -10),
    takes the GPU (ends 250 < 260); A waits: beta w max(0, 150 + 100 + 100 - 1e5) = 0.
    Keeping A instead would make B wait: 100 * 1e-3 * (150 + 50 + 100 - 260) = 4 EUR.
    So A is preempted, loses its half epoch, restarts at 250 with 1 epoch: ends 350.
    RG: energy 350 s * 3e-4 = 0.105 EUR, no tardiness.
    FIFO: A runs to 200, B 200-300, 40 s late: energy 300 * 3e-4 = 0.090, tardiness 0.040.
    Without the checkpoint loss A resumes its half epoch: ends 300, energy 0.090.
    """
    nodes = (Node("v", "V100", 1, 100.0, 200.0),)
    jobs = (
        SubmittedJob("A", "test", 0.0, 1e5, 1e-3, 2, {"V100": (100.0,)}),
        SubmittedJob("B", "test", 150.0, 260.0, 1e-3, 1, {"V100": (100.0,)}),
    )
    return nodes, jobs


def test_randomized_greedy_preempts():
    nodes, jobs = preemption_case()
    r = simulate(nodes, jobs, "randomized-greedy", max_iterations=20, **PRICE)
    assert r.makespan_s == pytest.approx(350.0)
    assert r.energy_cost_eur == pytest.approx(0.105)
    assert r.tardiness_cost_eur == 0.0 and r.late_jobs == 0
    assert r.preemptions == 1 and r.calls == 3  # arrivals at 0 and 150, B's end at 250
    assert r.lost_epochs == pytest.approx(0.5)  # A had run half of its second epoch
    assert "simulated" in r.source


def test_fifo_waits():
    nodes, jobs = preemption_case()
    r = simulate(nodes, jobs, "fifo", **PRICE)
    assert r.makespan_s == pytest.approx(300.0)
    assert r.energy_cost_eur == pytest.approx(0.090)
    assert r.tardiness_cost_eur == pytest.approx(0.040) and r.late_jobs == 1
    assert r.total_cost_eur == pytest.approx(0.130)
    assert r.preemptions == 0 and r.migrations == 0


def test_without_checkpoint_loss():
    nodes, jobs = preemption_case()
    r = simulate(
        nodes, jobs, "randomized-greedy", max_iterations=20, restart_from_checkpoint=False, **PRICE
    )
    assert r.makespan_s == pytest.approx(300.0)
    assert r.energy_cost_eur == pytest.approx(0.090)
    assert r.lost_epochs == 0.0


def test_small_scenario_is_deterministic_and_complete():
    nodes = scenario_cluster(4, scenario=2)
    jobs = job_stream(nodes, 20, seed=3)
    a = simulate(nodes, jobs, "randomized-greedy", max_iterations=5, keep_points_every=4)
    b = simulate(nodes, jobs, "randomized-greedy", max_iterations=5)
    timing = ("mean_call_s", "max_call_s")
    assert {k: v for k, v in a.summary().items() if k not in timing} == {
        k: v for k, v in b.summary().items() if k not in timing
    }
    # Every job ends once: a rescheduling point per arrival and per end (the last one
    # ends with an empty system), so at most 2 J - 1 calls.
    assert a.calls <= 2 * len(jobs) - 1
    assert a.points and all(p.num_nodes == 4 for p in a.points)
    assert a.energy_cost_eur > 0
    f = simulate(nodes, jobs, "fifo")
    assert f.preemptions == f.migrations == 0


def test_generators_follow_the_paper_scales():
    nodes = scenario_cluster(10, scenario=1)
    assert sum(n.gpu_type == "V100" for n in nodes) == 5
    assert {(n.gpu_type, n.num_gpus) for n in nodes} == {("V100", 2), ("T4", 1)}
    assert {(n.gpu_type, n.num_gpus) for n in scenario_cluster(4, 2)} == {("V100", 4), ("T4", 2)}
    jobs = job_stream(nodes, 100, seed=0)
    assert len(jobs) == 100
    assert all(a.arrival_s <= b.arrival_s for a, b in itertools.pairwise(jobs))
    # Sublinear speed-up: g GPUs are faster, but less than g times.
    for j in jobs:
        t = j.epoch_time_s["V100"]
        assert t[1] < t[0] < 2 * t[1]
    with pytest.raises(ValueError, match="scenario"):
        scenario_cluster(10, scenario=3)


def test_suites():
    from energyopt.capacity import suite
    from energyopt.capacity.scenario import method_applies
    from energyopt.capacity.suites import point_suite

    smoke = point_suite("smoke")
    assert len(smoke) == 8 and all("seed=" in p.source for p in smoke)
    assert [p.instance_id for p in smoke] == [p.instance_id for p in suite("smoke")[:8]]
    assert len(suite("smoke")) == 8 + 2  # the points, then the simulation scenarios
    import energyopt

    for p in smoke:
        for m in energyopt.methods("capacity"):
            if method_applies(p, m):
                assert energyopt.solve(p, m, seed=0).has_solution, (m, p.name)
    paper = point_suite("paper")
    # 18 simulated points, then 6 from measurements (data, or the library's copies)
    assert len(paper) == 24 and {p.num_nodes for p in paper} == {10, 50, 100}
    assert all(p.source.startswith("simulated") for p in paper[:18])
    assert all(p.source.startswith("measured") for p in paper[18:])
    with pytest.raises(ValueError, match="unknown suite"):
        suite("huge")
