"""Simulation scenarios of the powercap suites (simulated: synthetic traces, the
simulated GPU's tables), each built from the family's generators with a seed."""

from __future__ import annotations

from energyopt.powercap.instance import p_max_from_models
from energyopt.powercap.profilegen import CLOCKS_MHZ, IDLE_POWER_W, WORKLOADS, truth_models
from energyopt.powercap.scenario import PowercapScenario, scenario_from_trace
from energyopt.powercap.simulator import Cluster
from energyopt.powercap.trace import synthetic_trace

#: (jobs, GPUs, eta, slot seconds, seed) of each suite's scenarios. The smoke ones are
#: the scale whose offline MILP HiGHS closes in seconds; the paper's last one is beyond
#: the MILP's size limit, so its bound cell says so (simcells.MAX_BOUND_VARIABLES).
SCENARIOS = {
    "smoke": [(5, 8, 0.6, 150.0, 0), (4, 8, 1.0, 150.0, 1)],
    "paper": [(10, 16, 0.5, 300.0, 10), (10, 16, 0.8, 300.0, 11), (200, 64, 0.6, 600.0, 12)],
}


def scenario(
    num_jobs: int, num_gpus: int, eta: float, slot_s: float, seed: int
) -> PowercapScenario:
    """A synthetic trace (arrivals over 1200 s per 5 jobs, median 900 s, at most 4 GPUs a
    job) on ``num_gpus`` GPUs in nodes of 4, the simulated GPU's truth as its tables."""
    tm = truth_models(4)
    batches = {w: WORKLOADS[w].batch_sizes for w in WORKLOADS}
    cluster = Cluster(
        num_gpus, 4, CLOCKS_MHZ, IDLE_POWER_W, p_max_from_models(tm, CLOCKS_MHZ, batches)
    )
    trace = synthetic_trace(
        num_jobs, span_s=240.0 * num_jobs, models=tm, seed=seed, max_gpus=4, median_duration_s=900
    )
    name = f"sim-{num_jobs}jobs-{num_gpus}gpus-eta{eta:g}-seed{seed}"
    return scenario_from_trace(trace, tm, cluster, eta, slot_s=slot_s, name=name)


def scenario_suite(name: str) -> list[PowercapScenario]:
    """The scenarios of suite ``name`` (``smoke`` or ``paper``)."""
    return [scenario(*spec) for spec in SCENARIOS[name]]
