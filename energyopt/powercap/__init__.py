"""JCT under a power cap (PowerFlow): performance models, event MILP, greedy, simulator.

Importing this package registers its methods (``highs``, ``greedy``, ``bruteforce``)
in the ``powercap`` family.
"""

from energyopt.powercap import methods as _methods  # noqa: F401  (registers methods)
from energyopt.powercap.evaluator import PowercapEvaluation, PowercapSolution, evaluate
from energyopt.powercap.greedy import marginal_return_greedy
from energyopt.powercap.instance import (
    EventJob,
    EventJobInput,
    JobOption,
    PowercapInstance,
    event_instance,
    option_table,
)
from energyopt.powercap.models import (
    FitReport,
    PerformanceModel,
    fit_all,
    fit_from_profile,
    fit_table,
    mape,
)
from energyopt.powercap.placement import Placement, buddy_place
from energyopt.powercap.profilegen import simulated_profile, truth_models
from energyopt.powercap.scenario import PowercapScenario

__all__ = [
    "EventJob",
    "EventJobInput",
    "FitReport",
    "JobOption",
    "PerformanceModel",
    "Placement",
    "PowercapEvaluation",
    "PowercapInstance",
    "PowercapScenario",
    "PowercapSolution",
    "buddy_place",
    "evaluate",
    "event_instance",
    "fit_all",
    "fit_from_profile",
    "fit_table",
    "mape",
    "marginal_return_greedy",
    "option_table",
    "simulated_profile",
    "truth_models",
]
