"""One simulator entry point: a registered method name or a policy, in every online family."""

from __future__ import annotations

import pytest

import energyopt
from energyopt.capacity import Node
from energyopt.capacity.generators import SubmittedJob


def test_capacity_method_name_and_policy_give_the_same_run():
    # Two jobs on one 1-GPU node: FIFO runs A (0-200 s), then B (200-300 s).
    nodes = (Node("v", "V100", 1, 100.0, 200.0),)
    jobs = (
        SubmittedJob("A", "test", 0.0, 1e5, 1e-3, 2, {"V100": (100.0,)}),
        SubmittedJob("B", "test", 150.0, 260.0, 1e-3, 1, {"V100": (100.0,)}),
    )
    by_name = energyopt.simulate("capacity", "fifo", nodes=nodes, jobs=jobs)

    def my_fifo(instance, *, seed=None, time_limit=None):
        return energyopt.solve(instance, "fifo", seed=seed, time_limit=time_limit)

    by_policy = energyopt.simulate("capacity", my_fifo, nodes=nodes, jobs=jobs)
    assert by_name.makespan_s == pytest.approx(300.0)
    assert by_policy.summary() | {"method": "fifo", "mean_call_s": 0, "max_call_s": 0} == (
        by_name.summary() | {"mean_call_s": 0, "max_call_s": 0}
    )
    assert by_policy.method == "my_fifo"


def test_powercap_method_name_is_powerflow_with_that_method():
    from energyopt.powercap.instance import p_max_from_models
    from energyopt.powercap.policies import PowerFlowPolicy
    from energyopt.powercap.profilegen import CLOCKS_MHZ, IDLE_POWER_W, WORKLOADS, truth_models
    from energyopt.powercap.simulator import Cluster, simulate
    from energyopt.powercap.trace import synthetic_trace

    tm = truth_models(4)
    pmax = p_max_from_models(tm, CLOCKS_MHZ, {w: WORKLOADS[w].batch_sizes for w in WORKLOADS})
    cl = Cluster(4, 4, CLOCKS_MHZ, IDLE_POWER_W, pmax)
    tr = synthetic_trace(3, span_s=300, models=tm, seed=2, max_gpus=2, median_duration_s=300)
    scenario = {"trace": tr, "cluster": cl, "truth": tm}
    by_name = energyopt.simulate("powercap", "greedy", eta=0.8, **scenario)
    direct = simulate(tr, PowerFlowPolicy(tm, 0.8), cl, tm)
    assert by_name.mean_jct_s == pytest.approx(direct.mean_jct_s)
    by_policy = energyopt.simulate("powercap", PowerFlowPolicy(tm, 0.8), **scenario)
    assert by_policy.mean_jct_s == pytest.approx(direct.mean_jct_s)
    with pytest.raises(ValueError, match="give eta"):
        energyopt.simulate("powercap", "greedy", **scenario)


def test_tuning_policy_replays_like_the_registered_method():
    from energyopt.tuning.policies import DefaultPolicy
    from energyopt.tuning.suites import suite

    inst = suite("smoke")[0]
    by_name = energyopt.simulate("tuning", "default", instance=inst, seed=3)
    by_policy = energyopt.simulate("tuning", DefaultPolicy(inst), instance=inst, seed=3)
    assert by_policy.objective == pytest.approx(by_name.objective)
    assert by_policy.bound == pytest.approx(by_name.bound)


def test_a_family_without_simulator_says_which_have_one():
    with pytest.raises(ValueError, match="families with one: capacity, powercap, tuning"):
        energyopt.simulate("pipeline", "perseus")
