"""What the PEM family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from energyopt.core.family import FamilyHooks
from energyopt.core.tolerance import Tolerance
from energyopt.pipeline.evaluator import PemEvaluation, PemSolution, evaluate
from energyopt.pipeline.frontierbounds import frontier_bounds
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.paretoset import energy_at


def _evaluate(instance: PemInstance, solution: PemSolution) -> PemEvaluation:
    return evaluate(instance, solution)


HOOKS = FamilyHooks(
    name="pipeline",
    title="Pipeline energy minimization (PEM)",
    objective_name="energy per iteration",
    objective_unit="J",
    evaluate=_evaluate,
    tolerance=Tolerance(rtol=1e-6, atol=1e-6, unit="J"),
    frontier_objective_at=energy_at,
    frontier_time_name="iteration time",
    frontier_bounds=frontier_bounds,
    plots=("frontier", "frontier_gaps", "profile_curves"),
)
