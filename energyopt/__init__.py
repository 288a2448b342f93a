"""energyopt: exact formulations beside published heuristics for GPU training energy.

One entry point::

    import energyopt
    result = energyopt.solve(instance, method="highs", time_limit=60)
    table = energyopt.compare(instance, ["highs", "perseus"], time_limit=60)

Families: ``energyopt.pipeline`` (PEM: Perseus, EnvPipe, Zeus baselines),
``energyopt.capacity`` (ANDREAS), ``energyopt.powercap`` (PowerFlow),
``energyopt.tuning`` (Zeus recurring jobs).
"""

from energyopt.core import (
    FrontierPoint,
    InstanceError,
    Result,
    SolutionStatus,
    TerminationReason,
    gap,
    get_method,
    load_instance,
    methods,
    solve,
)
from energyopt.core.simulation import simulate

__version__ = "0.1.0"

__all__ = [
    "FrontierPoint",
    "InstanceError",
    "Result",
    "SolutionStatus",
    "TerminationReason",
    "__version__",
    "compare",
    "gap",
    "get_method",
    "load_instance",
    "methods",
    "simulate",
    "solve",
]


def __getattr__(name: str) -> object:
    # compare needs numpy and pandas: imported on first use, so that ``import energyopt``
    # (and so every ``energyopt`` command) does not pay for them (28 ms against 230 ms).
    if name == "compare":
        from energyopt.core.compare import compare

        return compare
    raise AttributeError(f"module 'energyopt' has no attribute {name!r}")
