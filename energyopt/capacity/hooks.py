"""What the capacity family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from typing import Any

from energyopt.capacity.evaluator import evaluate as evaluate_point
from energyopt.capacity.scenario import CapacityScenario, evaluate_decisions, method_applies
from energyopt.core.family import FamilyHooks
from energyopt.core.tolerance import Tolerance


def _simulate(method: Any, *, nodes: Any, jobs: Any, **options: Any) -> Any:
    from energyopt.capacity.simulator import simulate

    return simulate(nodes, jobs, method, **options)


def evaluate(instance: Any, solution: Any) -> Any:
    """A point's schedule by the point evaluator, a scenario's decisions by its own."""
    if isinstance(instance, CapacityScenario):
        return evaluate_decisions(instance, solution)
    return evaluate_point(instance, solution)


def _report_sections(results: Any, names: Any) -> list[Any]:
    from energyopt.capacity.simreport import report_sections

    return report_sections(results, names)


HOOKS = FamilyHooks(
    name="capacity",
    title="Capacity allocation (ANDREAS)",
    objective_name="cost to the next rescheduling point",
    objective_unit="EUR",
    evaluate=evaluate,
    # Relative, with an absolute floor of 1e-7 EUR (costs here are often cents).
    tolerance=Tolerance(rtol=1e-6, atol=1e-7, unit="EUR"),
    plots=("capacity_simulation",),
    simulate=_simulate,
    method_applies=method_applies,
    report_sections=_report_sections,
)
