"""What the powercap family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from typing import Any

from energyopt.core.family import FamilyHooks
from energyopt.core.tolerance import Tolerance
from energyopt.powercap.evaluator import evaluate as evaluate_event
from energyopt.powercap.scenario import PowercapScenario, evaluate_schedule, method_applies


def evaluate(instance: Any, solution: Any) -> Any:
    """An event's decision by the event evaluator, a scenario's schedule by its own."""
    if isinstance(instance, PowercapScenario):
        return evaluate_schedule(instance, solution)
    return evaluate_event(instance, solution)


def _report_sections(results: Any, names: Any) -> list[Any]:
    from energyopt.powercap.simreport import report_sections

    return report_sections(results, names)


def _simulate(
    method: Any,
    *,
    trace: Any,
    cluster: Any,
    truth: Any,
    eta: float | None = None,
    models: Any = None,
    time_limit: float | None = 10.0,
    **options: Any,
) -> Any:
    """A method name runs as PowerFlow at every event with that method (needs ``eta``)."""
    from energyopt.powercap.policies import PowerFlowPolicy
    from energyopt.powercap.simulator import simulate

    policy = method
    if isinstance(method, str):
        if eta is None:
            raise ValueError(f"method {method!r}: give eta, the power-cap fraction (Eq. 19)")
        models = truth if models is None else models
        policy = PowerFlowPolicy(models, eta, method=method, time_limit=time_limit)
    return simulate(trace, policy, cluster, truth, **options)


HOOKS = FamilyHooks(
    name="powercap",
    title="Job completion time under a power cap (PowerFlow)",
    objective_name="mean job completion time",
    objective_unit="s",
    evaluate=evaluate,
    tolerance=Tolerance(rtol=1e-6, atol=1e-6, unit="s"),
    plots=("powerflow_eta",),
    simulate=_simulate,
    method_applies=method_applies,
    report_sections=_report_sections,
)
