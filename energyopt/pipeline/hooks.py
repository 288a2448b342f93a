"""What the PEM family tells the generic layers (core.family.FamilyHooks)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from energyopt.core.family import FamilyHooks
from energyopt.core.result import FrontierPoint
from energyopt.core.scoring import Tolerance
from energyopt.pipeline.evaluator import PemEvaluation, PemSolution, evaluate
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.paretoset import energy_at


def _evaluate(instance: PemInstance, solution: PemSolution) -> PemEvaluation:
    return evaluate(instance, solution)


def _frontier_bounds(
    instance: PemInstance,
    times_s: np.ndarray,
    references: Sequence[Sequence[FrontierPoint]] = (),
    time_limit: float | None = None,
    at_deadlines: Sequence[tuple[float, float]] = (),
) -> np.ndarray:
    """:func:`energyopt.pipeline.relaxation.frontierbounds.frontier_bounds`."""
    # Only the package and methods.py import the sub-packages (docs/architecture.md):
    # the relaxation's bound is reached through the package, once it is imported.
    from energyopt.pipeline import frontier_bounds

    return frontier_bounds(instance, times_s, references, time_limit, at_deadlines)


HOOKS = FamilyHooks(
    name="pipeline",
    title="Pipeline energy minimization (PEM)",
    objective_name="energy per iteration",
    objective_unit="J",
    evaluate=_evaluate,
    tolerance=Tolerance(rtol=1e-6, atol=1e-6, unit="J"),
    frontier_objective_at=energy_at,
    frontier_time_name="iteration time",
    frontier_bounds=_frontier_bounds,
    plots=("frontier", "frontier_gaps", "profile_curves"),
)
