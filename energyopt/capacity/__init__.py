"""Capacity allocation (ANDREAS): exact MILP, Randomized Greedy, FIFO/EDF/priority, simulator.

Importing this package registers its methods (``highs``, ``bruteforce``,
``randomized-greedy``, ``fifo``, ``edf``, ``priority``) in the ``capacity`` family.
"""

from energyopt.capacity import methods as _methods  # noqa: F401  (registers methods)
from energyopt.capacity.baselines import first_principle
from energyopt.capacity.bruteforce import brute_force
from energyopt.capacity.evaluator import CapacityEvaluation, CapacitySolution, evaluate
from energyopt.capacity.generators import (
    SubmittedJob,
    job_stream,
    random_point,
    scenario_cluster,
)
from energyopt.capacity.greedy import randomized_greedy
from energyopt.capacity.instance import CapacityInstance, Job, Node
from energyopt.capacity.scenario import CapacityScenario
from energyopt.capacity.simulator import SimulationReport, simulate
from energyopt.capacity.suites import suite

__all__ = [
    "CapacityEvaluation",
    "CapacityInstance",
    "CapacityScenario",
    "CapacitySolution",
    "Job",
    "Node",
    "SimulationReport",
    "SubmittedJob",
    "brute_force",
    "evaluate",
    "first_principle",
    "job_stream",
    "random_point",
    "randomized_greedy",
    "scenario_cluster",
    "simulate",
    "suite",
]
