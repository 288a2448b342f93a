"""What the capacity family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from typing import Any

from energyopt.capacity.evaluator import evaluate
from energyopt.core.family import FamilyHooks
from energyopt.core.tolerance import Tolerance


def _simulate(method: Any, *, nodes: Any, jobs: Any, **options: Any) -> Any:
    from energyopt.capacity.simulator import simulate

    return simulate(nodes, jobs, method, **options)


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
)
