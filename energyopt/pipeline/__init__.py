"""Pipeline Energy Minimization (PEM): Perseus, EnvPipe and Zeus baselines, with exact methods.

Importing this package registers its methods in the ``pipeline`` family:
exact ``highs``, ``cpsat``, ``bruteforce``, ``exact-frontier``; heuristics
``perseus``, ``perseus-exponential`` (frontier crawl), ``envpipe``,
``envpipe-greedy``, ``zeus-global``, ``zeus-per-stage`` (and their ``-power`` forms).
EnvPipe's scheduler (EnvPipe 4.3) is :func:`envpipe_schedule`, which returns a
rescheduled instance to run ``envpipe`` on.
"""

from energyopt.pipeline import methods as _methods  # noqa: F401  (registers every method)
from energyopt.pipeline.baselines.envpipe import envpipe_plan
from energyopt.pipeline.baselines.envpipe_scheduler import envpipe_schedule
from energyopt.pipeline.baselines.zeus import zeus_global_plans, zeus_per_stage_plans
from energyopt.pipeline.crawl.perseus import perseus_frontier
from energyopt.pipeline.crawl.straggler import StragglerPlan, straggler_lookup
from energyopt.pipeline.crawl.trace import CrawlTrace
from energyopt.pipeline.evaluator import PemEvaluation, PemSolution, evaluate, fastest_choice
from energyopt.pipeline.frontierbounds import frontier_bounds, use_curve_source
from energyopt.pipeline.generators import (
    nonmonotone_instance,
    random_dag_instance,
    synthetic_instance,
)
from energyopt.pipeline.instance import FilterReport, PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.paretoset import best_at, energy_pareto, frontier_points
from energyopt.pipeline.readers import instance_from_perseus_profile, read_perseus_profile
from energyopt.pipeline.relaxation.hull import curve_or_none
from energyopt.pipeline.schedules import Computation, build_dag

# The frontiers' bound (frontierbounds.py, the family's hook) uses the relaxation's curve.
use_curve_source(curve_or_none)

__all__ = [
    "Computation",
    "CrawlTrace",
    "FilterReport",
    "OptionTable",
    "PemEvaluation",
    "PemInstance",
    "PemSolution",
    "StragglerPlan",
    "best_at",
    "build_dag",
    "energy_pareto",
    "envpipe_plan",
    "envpipe_schedule",
    "evaluate",
    "fastest_choice",
    "frontier_bounds",
    "frontier_points",
    "instance_from_perseus_profile",
    "nonmonotone_instance",
    "perseus_frontier",
    "random_dag_instance",
    "read_perseus_profile",
    "straggler_lookup",
    "synthetic_instance",
    "zeus_global_plans",
    "zeus_per_stage_plans",
]
