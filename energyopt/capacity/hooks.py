"""What the capacity family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from energyopt.capacity.evaluator import evaluate
from energyopt.core.family import FamilyHooks
from energyopt.core.scoring import Tolerance

HOOKS = FamilyHooks(
    name="capacity",
    title="Capacity allocation (ANDREAS)",
    objective_name="cost to the next rescheduling point",
    objective_unit="EUR",
    evaluate=evaluate,
    # Relative, with an absolute floor of 1e-7 EUR (costs here are often cents).
    tolerance=Tolerance(rtol=1e-6, atol=1e-7, unit="EUR"),
    plots=("capacity_simulation",),
)
