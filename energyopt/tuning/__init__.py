"""Recurring-job tuning (Zeus, NSDI'23): batch size and GPU power limit.

Importing this package registers the family's methods (``exact``, ``zeus``,
``grid-search``, ``default``) under ``"tuning"``. See docs/tuning.md and
formulations/tuning.md.
"""

from energyopt.tuning import methods as _methods  # noqa: F401  (registers methods)
from energyopt.tuning.bandit import GaussianThompsonSampling, PruningExplorer, posterior
from energyopt.tuning.cost import energy_time_cost, epoch_cost, recurrence_cost
from energyopt.tuning.evaluator import Evaluation, ExactReference, evaluate, exact_reference
from energyopt.tuning.generators import synthetic_instance
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.policies import DefaultPolicy, GridSearchPolicy, ZeusPolicy
from energyopt.tuning.power import (
    JitPowerLimitOptimizer,
    PowerLimitProbe,
    PowerProfile,
    SliceMeasurement,
    probe_from_device,
    probe_from_power_table,
    probe_from_profile,
)
from energyopt.tuning.replay import ReplayError, ReplayLog, Run, replay, replay_concurrent
from energyopt.tuning.trace import (
    PAPER_WORKLOADS,
    WorkloadSpec,
    instance_from_trace,
    read_power_trace,
    read_train_trace,
    zeus_trace_instances,
)

__all__ = [
    "PAPER_WORKLOADS",
    "DefaultPolicy",
    "Evaluation",
    "ExactReference",
    "GaussianThompsonSampling",
    "GridSearchPolicy",
    "JitPowerLimitOptimizer",
    "PowerLimitProbe",
    "PowerProfile",
    "PruningExplorer",
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
    "posterior",
    "probe_from_device",
    "probe_from_power_table",
    "probe_from_profile",
    "read_power_trace",
    "read_train_trace",
    "recurrence_cost",
    "replay",
    "replay_concurrent",
    "synthetic_instance",
    "zeus_trace_instances",
]
