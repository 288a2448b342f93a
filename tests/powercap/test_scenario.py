"""Whole-trace PowerFlow simulations as instances and bench cells (issue 25, item 4)."""

from __future__ import annotations

import dataclasses
import json

import pytest

import energyopt
from energyopt.core.errors import InstanceError
from energyopt.core.status import TerminationReason
from energyopt.powercap.instance import JobOption
from energyopt.powercap.scenario import PowercapScenario, Schedule, evaluate_schedule
from energyopt.powercap.simsuites import scenario_suite
from energyopt.powercap.simulator import Cluster
from energyopt.powercap.trace import TraceJob


def one_job(eta: float) -> PowercapScenario:
    """One GPU, one job of 100 iterations at t = 0, two clocks: 2 s/iter at 100 W or
    1 s/iter at 300 W; P_max = 400 W, so the cap is eta * 400 W."""
    opts = (JobOption(1, 1000, 2.0, 100.0), JobOption(1, 1500, 1.0, 300.0))
    return PowercapScenario(
        "one-job",
        (TraceJob("a", 0.0, "w", 8, 1, 100.0),),
        {"w/8": opts},
        Cluster(1, 1, (1000, 1500), 0.0, 400.0),
        eta,
        10.0,
        "hand-made",
    )


def test_one_job_by_hand():
    # Cap 400 W: the fast clock fits, JCT 100 s, and PC-28 bounds at 100 * 1 s: gap 0.
    sc = one_job(1.0)
    run = energyopt.solve(sc, "powerflow")
    bound = energyopt.solve(sc, "offline-bound", time_limit=30)
    assert run.objective == pytest.approx(100.0)
    assert bound.bound == pytest.approx(100.0, rel=1e-6)
    # Cap 200 W: only the slow clock at every instant, JCT 200 s. The slot averages let
    # the MILP mix: 300 x + 100 (1 - x) <= 200 gives x <= 1/2, 0.75 iterations per s, so
    # the work ends in slot 13 ([130, 140) s) and PC-27 gives JCT >= 130 s.
    sc = one_job(0.5)
    run = energyopt.solve(sc, "powerflow")
    bound = energyopt.solve(sc, "offline-bound", time_limit=30)
    assert run.objective == pytest.approx(200.0)
    assert bound.bound == pytest.approx(130.0, rel=1e-6)
    assert bound.objective is None and bound.solution is None


def test_round_trip_and_kind_dispatch(tmp_path):
    sc = scenario_suite("smoke")[0]
    path = tmp_path / "sc.json"
    sc.to_json(path)
    back = energyopt.load_instance(path)
    assert isinstance(back, PowercapScenario) and back.instance_id == sc.instance_id
    assert back.to_dict() == sc.to_dict()
    # The event methods refuse a scenario, the scenario methods an event.
    with pytest.raises(ValueError, match="does not run on a PowercapScenario"):
        energyopt.solve(sc, "greedy")
    from energyopt.powercap.suites import event_suite

    with pytest.raises(ValueError, match="does not run on a PowercapInstance"):
        energyopt.solve(event_suite("smoke")[0], "powerflow")


@pytest.mark.parametrize(
    ("path", "value", "field"),
    [
        (("eta",), 1.5, "eta"),
        (("eta",), True, "eta"),
        (("cluster", "num_gpus"), 8.0, "cluster.num_gpus"),
        (("jobs", 0, "requested_gpus"), 3, "requested_gpus"),
        (("jobs", 0, "iterations"), "many", "jobs[0].iterations"),
        (("slot_s",), 0, "slot_s"),
    ],
)
def test_bad_input_names_the_field(path, value, field):
    data = json.loads(scenario_suite("smoke")[1].to_json())
    node = data
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = value
    with pytest.raises(InstanceError, match=field.replace("[", r"\[").replace("]", r"\]")):
        energyopt.load_instance(json.dumps(data))


def test_evaluator_rejects_tampered_schedules():
    sc = one_job(0.5)
    good = energyopt.solve(sc, "powerflow").solution
    assert evaluate_schedule(sc, good).feasible
    (seg,) = good.segments
    fast = Schedule(((seg[0], seg[1], (("a", 1, 1500),)),))
    ev = evaluate_schedule(sc, fast)
    assert not ev.feasible and any("above the cap" in v for v in ev.violations)
    short = Schedule(((0.0, 50.0, seg[2]),))
    assert any("never complete" in v for v in evaluate_schedule(sc, short).violations)
    early = dataclasses.replace(sc, jobs=(dataclasses.replace(sc.jobs[0], arrival_s=5.0),))
    assert any("before its arrival" in v for v in evaluate_schedule(early, good).violations)


@pytest.mark.parametrize("sc", scenario_suite("smoke"), ids=lambda s: s.name)
def test_policies_never_below_the_offline_bound(sc):
    bound = energyopt.solve(sc, "offline-bound", time_limit=20)
    assert bound.bound is not None and bound.bound > 0
    for method in ("powerflow", "powerflow-printed"):
        r = energyopt.solve(sc, method)
        assert r.termination is TerminationReason.COMPLETED
        assert r.objective == pytest.approx(r.extra["simulator_mean_jct_s"], rel=1e-9)
        assert r.objective >= bound.bound * (1 - 1e-9), method


def test_no_bound_at_scale_says_why():
    big = scenario_suite("paper")[-1]
    r = energyopt.solve(big, "offline-bound", time_limit=5)
    assert r.bound is None and "no bound at this scale" in r.message
    assert r.extra["no_bound_reason"] == "scale"
