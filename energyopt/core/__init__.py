"""Core contracts shared by every family: results, statuses, gap, registry, solver adapters."""

from energyopt.core.gap import gap
from energyopt.core.instance import InstanceBase, InstanceError, load_instance
from energyopt.core.registry import (
    EvaluationMismatchError,
    Method,
    get_method,
    methods,
    register,
    solve,
)
from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import SolutionStatus, TerminationReason

__all__ = [
    "EvaluationMismatchError",
    "FrontierPoint",
    "InstanceBase",
    "InstanceError",
    "Method",
    "Result",
    "SolutionStatus",
    "TerminationReason",
    "gap",
    "get_method",
    "load_instance",
    "methods",
    "register",
    "solve",
]
