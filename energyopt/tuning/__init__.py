"""Recurring-job tuning (Zeus, NSDI'23): batch size and GPU power limit.

Importing this package registers the family's methods (``best-expected-arm``,
``zeus``, ``grid-search``, ``default``) under ``"tuning"``. Every method of a seed
replays the same :class:`Realisation` (common random numbers) and is scored against
its clairvoyant lower bound (:func:`references`). See docs/tuning.md and
formulations/tuning.md.
"""

from typing import TYPE_CHECKING, Any

from energyopt.tuning import methods as _methods  # noqa: F401  (registers methods)
from energyopt.tuning.bandit import GaussianThompsonSampling, PruningExplorer, posterior
from energyopt.tuning.cost import energy_time_cost, epoch_cost, recurrence_cost
from energyopt.tuning.evaluator import Evaluation, ExactReference, evaluate, exact_reference
from energyopt.tuning.generators import synthetic_instance
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.policies import DefaultPolicy, FixedArmPolicy, GridSearchPolicy, ZeusPolicy
from energyopt.tuning.power import (
    JitPowerLimitOptimizer,
    PowerLimitProbe,
    PowerProfile,
    SliceMeasurement,
    probe_from_device,
    probe_from_power_table,
    probe_from_profile,
)
from energyopt.tuning.powerlimit import parse_selector, power_limit_choice
from energyopt.tuning.realisation import Realisation, References, references
from energyopt.tuning.replay import ReplayError, ReplayLog, Run, replay, replay_concurrent

if TYPE_CHECKING:
    from energyopt.tuning.trace import (
        PAPER_WORKLOADS,
        WorkloadSpec,
        instance_from_trace,
        read_power_trace,
        read_train_trace,
        zeus_trace_instances,
    )

#: Names of :mod:`energyopt.tuning.trace`, imported on first use: reading a trace needs
#: pandas (0.14 s), which no method needs, and every cell server imports this package.
_TRACE_NAMES = (
    "PAPER_WORKLOADS",
    "WorkloadSpec",
    "instance_from_trace",
    "read_power_trace",
    "read_train_trace",
    "zeus_trace_instances",
)


def __getattr__(name: str) -> Any:
    if name in _TRACE_NAMES:
        from energyopt.tuning import trace

        return getattr(trace, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_TRACE_NAMES})


__all__ = [
    "PAPER_WORKLOADS",
    "DefaultPolicy",
    "Evaluation",
    "ExactReference",
    "FixedArmPolicy",
    "GaussianThompsonSampling",
    "GridSearchPolicy",
    "JitPowerLimitOptimizer",
    "PowerLimitProbe",
    "PowerProfile",
    "PruningExplorer",
    "Realisation",
    "References",
    "ReplayError",
    "ReplayLog",
    "Run",
    "SliceMeasurement",
    "TuningInstance",
    "WorkloadSpec",
    "ZeusPolicy",
    "energy_time_cost",
    "epoch_cost",
    "evaluate",
    "exact_reference",
    "instance_from_trace",
    "parse_selector",
    "posterior",
    "power_limit_choice",
    "probe_from_device",
    "probe_from_power_table",
    "probe_from_profile",
    "read_power_trace",
    "read_train_trace",
    "recurrence_cost",
    "references",
    "replay",
    "replay_concurrent",
    "synthetic_instance",
    "zeus_trace_instances",
]
