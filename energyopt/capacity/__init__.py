"""Capacity allocation (ANDREAS): exact MILP, Randomized Greedy, FIFO/EDF/priority, simulator.

Importing this package registers its methods (``highs``, ``bruteforce``,
``randomized-greedy``, ``fifo``, ``edf``, ``priority``) in the ``capacity`` family.
"""

from energyopt.capacity import methods as _methods  # noqa: F401  (registers methods)
from energyopt.capacity.baselines import first_principle
from energyopt.capacity.bruteforce import brute_force
from energyopt.capacity.evaluator import CapacityEvaluation, CapacitySolution, evaluate
from energyopt.capacity.greedy import randomized_greedy
from energyopt.capacity.instance import CapacityInstance, Job, Node

__all__ = [
    "CapacityEvaluation",
    "CapacityInstance",
    "CapacitySolution",
    "Job",
    "Node",
    "brute_force",
    "evaluate",
    "first_principle",
    "randomized_greedy",
]
