"""Whole-stream ANDREAS simulations as instances and bench cells (issue 25, item 4)."""

from __future__ import annotations

import dataclasses
import json

import pytest

import energyopt
from energyopt.capacity.generators import SubmittedJob
from energyopt.capacity.instance import Node
from energyopt.capacity.offline import offline_bound
from energyopt.capacity.scenario import CapacityScenario, Decisions, evaluate_decisions
from energyopt.capacity.simsuites import scenario_suite
from energyopt.core.errors import InstanceError


def one_job(due_s: float = 80.0) -> CapacityScenario:
    """One V100 node (2 GPUs, idle 100 W, 200 W a GPU), one job of 10 epochs at t = 0:
    10 s an epoch on one GPU, 6 s on two; 0.36 EUR/kWh at PUE 1 = 1e-7 EUR/J; w = 1e-4."""
    return CapacityScenario(
        "one-job",
        (Node("v", "V100", 2, 100.0, 200.0),),
        (SubmittedJob("a", "x", 0.0, due_s, 1e-4, 10, {"V100": (10.0, 6.0)}),),
        energy_price_eur_per_kwh=0.36,
        pue=1.0,
        source="hand-made",
    )


def test_one_job_bound_and_cost_by_hand():
    sc = one_job()
    # Alone, GPU energy only: 1 GPU: 100 s, 100 * 200 J = 2e-3 EUR, 20 s late (2e-3 EUR);
    # 2 GPUs: 60 s, 60 * 400 J = 2.4e-3 EUR, on time. Half the epochs each ends at the due
    # time, 80 s: 0.5 * 2e-3 + 0.5 * 2.4e-3 = 2.2e-3 EUR, the least (CAP-B3).
    assert offline_bound(sc) == pytest.approx(2.2e-3)
    b = energyopt.solve(sc, "offline-bound")
    assert b.bound == pytest.approx(2.2e-3) and b.objective is None
    # With the node's idle power: 1 GPU 300 W x 100 s = 3e-3 EUR + 2e-3 late = 5e-3;
    # 2 GPUs 500 W x 60 s = 3e-3 EUR on time.
    for m in ("online-fifo", "online-edf", "online-randomized-greedy"):
        r = energyopt.solve(sc, m, seed=0)
        assert min(abs(r.objective - 5e-3), abs(r.objective - 3e-3)) < 1e-12, (m, r.objective)
        assert r.objective >= b.bound


def test_round_trip_and_kind_dispatch(tmp_path):
    sc = scenario_suite("smoke")[0]
    path = tmp_path / "sc.json"
    sc.to_json(path)
    back = energyopt.load_instance(path)
    assert isinstance(back, CapacityScenario) and back.instance_id == sc.instance_id
    with pytest.raises(ValueError, match="does not run on a CapacityScenario"):
        energyopt.solve(sc, "fifo")


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("pue",), 0.5, "pue"),
        (("restart_from_checkpoint",), 1, "restart_from_checkpoint"),
        (("jobs", 0, "epochs"), 2.5, "epochs"),
        (("jobs", 0, "due_s"), -1.0, "due_s"),
        (("nodes", 0, "num_gpus"), True, "num_gpus"),
    ],
)
def test_bad_input_names_the_field(path, value, field):
    data = json.loads(scenario_suite("smoke")[0].to_json())
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(InstanceError, match=field):
        energyopt.load_instance(json.dumps(data))


def test_evaluator_rejects_tampered_decisions():
    sc = one_job()
    good = energyopt.solve(sc, "online-fifo", seed=0).solution
    assert evaluate_decisions(sc, good).feasible
    (t, run), *rest = good.points
    crowded = Decisions(((t, ((run[0][0], 0, 3),)), *rest))
    assert not evaluate_decisions(sc, crowded).feasible
    none = Decisions(((t, ()),))
    assert any("never end" in v for v in evaluate_decisions(sc, none).violations)
    late = dataclasses.replace(sc, jobs=(dataclasses.replace(sc.jobs[0], arrival_s=5.0),))
    assert any("before its arrival" in v for v in evaluate_decisions(late, good).violations)


@pytest.mark.parametrize("sc", scenario_suite("smoke"), ids=lambda s: s.name)
def test_policies_never_below_the_offline_bound(sc):
    bound = energyopt.solve(sc, "offline-bound").bound
    assert bound > 0
    for m in ("online-fifo", "online-edf", "online-randomized-greedy"):
        r = energyopt.solve(sc, m, seed=0, time_limit=20)
        assert r.objective == pytest.approx(r.extra["simulator_total_cost_eur"], rel=1e-6)
        assert r.objective >= bound, m
