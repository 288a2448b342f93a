"""Simulation scenarios of the capacity suites (simulated: synthetic job streams and
assumed node powers), each built from the family's generators with a seed."""

from __future__ import annotations

from energyopt.capacity.generators import job_stream, scenario_cluster
from energyopt.capacity.scenario import CapacityScenario

#: (nodes, GPU scenario of the cluster, jobs, seed) of each suite's scenarios.
SCENARIOS = {
    "smoke": [(2, 1, 8, 0), (4, 2, 16, 1)],
    "paper": [(10, 1, 100, 10), (10, 2, 100, 11)],
}


def scenario(num_nodes: int, gpu_scenario: int, num_jobs: int, seed: int) -> CapacityScenario:
    """``scenario_cluster(num_nodes, gpu_scenario)`` with ``job_stream(num_jobs, seed)``."""
    nodes = scenario_cluster(num_nodes, gpu_scenario)
    jobs = job_stream(nodes, num_jobs, seed=seed)
    return CapacityScenario(
        f"sim-n{num_nodes}-s{gpu_scenario}-j{num_jobs}-seed{seed}",
        nodes,
        jobs,
        source=(
            f"simulated: scenario_cluster({num_nodes}, {gpu_scenario}), "
            f"job_stream(J={num_jobs}, seed={seed}), assumed node powers"
        ),
    )


def scenario_suite(name: str) -> list[CapacityScenario]:
    """The scenarios of suite ``name`` (``smoke`` or ``paper``)."""
    return [scenario(*spec) for spec in SCENARIOS[name]]
