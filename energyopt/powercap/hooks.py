"""What the powercap family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from energyopt.core.family import FamilyHooks
from energyopt.core.scoring import Tolerance
from energyopt.powercap.evaluator import evaluate

HOOKS = FamilyHooks(
    name="powercap",
    title="Job completion time under a power cap (PowerFlow)",
    objective_name="mean job completion time",
    objective_unit="s",
    evaluate=evaluate,
    tolerance=Tolerance(rtol=1e-6, atol=1e-6, unit="s"),
    plots=("powerflow_eta",),
)
