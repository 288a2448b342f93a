"""Event simulator, baselines and the offline time-indexed bound."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from energyopt.core.instance import InstanceError
from energyopt.powercap.instance import p_max_from_models
from energyopt.powercap.offline import offline_bound
from energyopt.powercap.policies import (
    ElasticPolicy,
    FifoPolicy,
    LasPolicy,
    PowerFlowPolicy,
    zeus_clock,
)
from energyopt.powercap.profilegen import CLOCKS_MHZ, IDLE_POWER_W, WORKLOADS, truth_models
from energyopt.powercap.simulator import Cluster, simulate
from energyopt.powercap.trace import Trace, TraceJob, synthetic_trace


class Linear:
    """Hand model: ``1/n`` seconds per iteration, 100 W per GPU, whatever the clock."""

    def iteration(self, n, f, bs):
        n = np.asarray(n, float)
        t = 1.0 / n + 0.0 * np.asarray(f, float)
        return t, n * 100.0 * t


HAND = {"toy": Linear()}
CL = Cluster(2, 2, (1000, 2000), 10.0, 100.0)


def test_one_job_by_hand():
    # One job arrives at 5 s with 100 iterations and asks for 1 GPU.
    # FIFO: 1 GPU, 1 s/it -> JCT 100 s; energy 100 W * 100 s + 1 idle GPU * 10 W * 100 s
    # = 11000 J; nothing is powered before the arrival.
    tr = Trace((TraceJob("a", 5.0, "toy", 8, 1, 100.0),))
    r = simulate(tr, FifoPolicy(HAND, clock_mhz=1000), CL, HAND)
    assert r.mean_jct_s == pytest.approx(100.0)
    assert r.total_energy_j == pytest.approx(11000.0)
    assert r.idle_energy_j == pytest.approx(1000.0)
    assert r.makespan_s == pytest.approx(105.0)
    # Elastic: 2 GPUs, 0.5 s/it -> JCT 50 s; 2 * 100 W * 50 s = 10000 J, no idle GPU.
    r = simulate(tr, ElasticPolicy(HAND, clock_mhz=1000), CL, HAND)
    assert r.mean_jct_s == pytest.approx(50.0)
    assert r.total_energy_j == pytest.approx(10000.0)


def test_two_jobs_fifo_and_las_by_hand():
    # a: t=0, 2 GPUs, 100 it (50 s on 2 GPUs); b: t=10, 1 GPU, 20 it (20 s on 1 GPU).
    # FIFO: a runs 0-50; b waits, runs 50-70 -> JCTs 50 and 60, mean 55 s.
    # Energy: 0-50 s 2 GPUs * 100 W = 10000 J; 50-70 s 100 W + 1 idle * 10 W = 2200 J.
    tr = Trace((TraceJob("a", 0.0, "toy", 8, 2, 100.0), TraceJob("b", 10.0, "toy", 8, 1, 20.0)))
    r = simulate(tr, FifoPolicy(HAND, clock_mhz=1000), CL, HAND)
    assert r.jct_s == pytest.approx({"a": 50.0, "b": 60.0})
    assert r.total_energy_j == pytest.approx(12200.0)
    # LAS at t=10: a attained 2 GPU * 10 s = 20 GPU-s, b 0 -> b preempts a (a needs 2 GPUs,
    # only 1 left): b runs 10-30; a resumes at 30 with 80 it left, ends at 70.
    # JCTs: a 70, b 20 -> mean 45 s.
    r = simulate(tr, LasPolicy(HAND, clock_mhz=1000), CL, HAND)
    assert r.jct_s == pytest.approx({"a": 70.0, "b": 20.0})


def test_job_needing_more_gpus_than_exist():
    tr = Trace((TraceJob("big", 0.0, "toy", 8, 4, 10.0),))
    with pytest.raises(InstanceError, match=r"requested_gpus = 4.*more GPUs than the cluster"):
        simulate(tr, FifoPolicy(HAND), CL, HAND)


def test_cap_below_any_job_is_a_clear_error():
    tm = truth_models(2)
    cl = Cluster(2, 2, CLOCKS_MHZ, IDLE_POWER_W, 250.0)
    tr = Trace((TraceJob("a", 0.0, "gpt2", 32, 1, 50.0),))
    with pytest.raises(InstanceError, match="power cap below"):
        simulate(tr, PowerFlowPolicy(tm, 0.05), cl, tm)


@pytest.fixture(scope="module")
def small():
    tm = truth_models(4)
    pmax = p_max_from_models(tm, CLOCKS_MHZ, {w: WORKLOADS[w].batch_sizes for w in WORKLOADS})
    cl = Cluster(8, 4, CLOCKS_MHZ, IDLE_POWER_W, pmax)
    tr = synthetic_trace(12, span_s=3600, models=tm, seed=5, max_gpus=4, median_duration_s=600)
    return tm, cl, tr


def test_every_policy_finishes_every_job(small):
    tm, cl, tr = small
    pols = [
        PowerFlowPolicy(tm, 0.5),
        PowerFlowPolicy(tm, 1.0),
        FifoPolicy(tm),
        FifoPolicy(tm, zeus=True),
        LasPolicy(tm),
        LasPolicy(tm, zeus=True),
        ElasticPolicy(tm, clock_mhz=1110),
    ]
    for pol in pols:
        r = simulate(tr, pol, cl, tm, reschedule_interval_s=300, profile_overhead_s=5.0)
        assert set(r.jct_s) == {j.name for j in tr.jobs}, pol.name
        for j in tr.jobs:  # no job beats its fastest possible run
            t, _ = tm[j.workload].iteration(np.array([1, 2, 4, 8]), 1530.0, j.global_batch_size)
            assert r.jct_s[j.name] >= j.iterations * float(np.min(t)) * (1 - 1e-9)
        if isinstance(pol, PowerFlowPolicy):  # exact models: the cap holds at every instant
            assert r.max_power_w <= pol.eta * cl.num_gpus * cl.p_max_w * (1 + 1e-9)


def test_zeus_clock_minimises_its_cost():
    tm = truth_models()
    f = zeus_clock(tm["vgg16"], 64, 1, CLOCKS_MHZ, eta_zeus=1.0)
    _, e = tm["vgg16"].iteration(1.0, np.array(CLOCKS_MHZ, float), 64.0)
    assert f == CLOCKS_MHZ[int(np.argmin(e))]  # eta = 1: pure energy


def test_offline_bound_below_online_policies():
    tm = truth_models(4)
    pmax = p_max_from_models(tm, CLOCKS_MHZ, {w: WORKLOADS[w].batch_sizes for w in WORKLOADS})
    cl = Cluster(4, 4, CLOCKS_MHZ, IDLE_POWER_W, pmax)
    tr = synthetic_trace(3, span_s=600, models=tm, seed=2, max_gpus=2, median_duration_s=600)
    for eta in (0.5, 1.0):
        runs = [
            simulate(tr, PowerFlowPolicy(tm, eta), cl, tm),
            simulate(tr, PowerFlowPolicy(tm, eta, method="highs"), cl, tm),
        ]
        horizon = max(r.makespan_s for r in runs) + 300
        ob = offline_bound(tr, cl, tm, eta, slot_s=300, horizon_s=horizon, time_limit=20)
        assert ob.bound is not None and ob.termination.value == "optimal"
        for r in runs:
            assert ob.bound <= r.mean_jct_s * (1 + 1e-9), (eta, r.policy)
    short = offline_bound(tr, cl, tm, 0.5, slot_s=300, horizon_s=300)
    assert short.bound is None and "horizon" in short.message


def test_trace_round_trip_and_errors():
    tm = truth_models()
    tr = synthetic_trace(5, span_s=100, models=tm, seed=1)
    assert Trace.from_dict(tr.to_dict()) == tr
    assert tr.source.startswith("simulated")
    dup = dataclasses.replace(tr, jobs=(tr.jobs[0], tr.jobs[0]))
    with pytest.raises(InstanceError, match="duplicate"):
        dup.validate(8)


def test_powerflow_events_are_recorded_with_the_stated_wait(small):
    tm, cl, tr = small
    pol = PowerFlowPolicy(tm, 0.7, record=True)
    r = simulate(tr, pol, cl, tm)
    assert len(pol.events) == r.num_decisions
    ev = pol.events[-1]
    # PC-10 in the simulator: the mean one-GPU remaining time at the efficient clocks.
    expected = np.mean(
        [j.remaining_iterations * ev.efficient_option(k).iter_time_s for k, j in enumerate(ev.jobs)]
    )
    assert ev.wait_estimate_s == pytest.approx(expected)
    assert ev.source.startswith("simulated")
