"""Pipeline Energy Minimization (PEM): Perseus, EnvPipe and Zeus baselines, with exact methods.

Importing this package registers its methods (``highs``, ``cpsat``, ``bruteforce``,
``exact-frontier``, ...) in the ``pipeline`` family.
"""

from energyopt.pipeline import frontier as _frontier  # noqa: F401  (registers methods)
from energyopt.pipeline import methods as _methods  # noqa: F401  (registers methods)
from energyopt.pipeline.evaluator import PemEvaluation, PemSolution, evaluate, fastest_choice
from energyopt.pipeline.generators import random_dag_instance, synthetic_instance
from energyopt.pipeline.instance import FilterReport, PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.readers import instance_from_perseus_profile, read_perseus_profile
from energyopt.pipeline.schedules import Computation, build_dag

__all__ = [
    "Computation",
    "FilterReport",
    "OptionTable",
    "PemEvaluation",
    "PemInstance",
    "PemSolution",
    "build_dag",
    "evaluate",
    "fastest_choice",
    "instance_from_perseus_profile",
    "random_dag_instance",
    "read_perseus_profile",
    "synthetic_instance",
]
