"""Turn an evaluated solution into a :class:`Result`, with the checks every family needs.

A family's method computes its solution, scores it with the family's own evaluator,
and hands both here. The checks are the contract's: the evaluator must accept the
solution, a solver's own objective must agree with the evaluator, and a proven
bound must not lie above the objective. Each failure is a bug and raises
:class:`EvaluationMismatchError`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from energyopt.core.errors import EvaluationMismatchError
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason


@dataclasses.dataclass(frozen=True)
class Scored:
    """What a family's evaluator says of one solution."""

    objective: float
    feasible: bool
    violations: tuple[str, ...] = ()
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """Objectives agree when ``|a - b| <= max(atol, rtol * |b|)``; ``unit`` is for messages."""

    rtol: float = 1e-6
    atol: float = 1e-6
    unit: str = ""

    def allows(self, value: float, reference: float) -> bool:
        return abs(value - reference) <= max(self.atol, self.rtol * abs(reference))


def scored_result(
    *,
    family: str,
    instance_id: str,
    method: str,
    solution: Any,
    scored: Scored | None,
    termination: TerminationReason,
    tolerance: Tolerance,
    proven_optimal: bool = False,
    bound: float | None = None,
    solver_objective: float | None = None,
    solver: str = "python",
    solver_version: str = "",
    message: str = "",
    extra: dict[str, Any] | None = None,
) -> Result:
    """A checked :class:`Result` for ``solution`` (``None``: no solution) and its score."""
    objective, status = None, SolutionStatus.NONE
    extra = dict(extra or {})
    unit = f" {tolerance.unit}" if tolerance.unit else ""
    if scored is not None:
        if not scored.feasible:
            raise EvaluationMismatchError(
                f"{method}: solution rejected by the evaluator: {'; '.join(scored.violations)}"
            )
        if solver_objective is not None and not tolerance.allows(
            solver_objective, scored.objective
        ):
            raise EvaluationMismatchError(
                f"{method}: solver objective {solver_objective!r}{unit} but the evaluator "
                f"gives {scored.objective!r}{unit}"
            )
        objective = scored.objective
        status = SolutionStatus.OPTIMAL if proven_optimal else SolutionStatus.FEASIBLE
        extra.update(scored.extra)
    if bound is not None and objective is not None and bound > objective:
        if not tolerance.allows(bound, objective):
            raise EvaluationMismatchError(
                f"{method}: bound {bound!r}{unit} above its own objective {objective!r}{unit}"
            )
    return Result(
        family=family,
        instance_id=instance_id,
        method=method,
        termination=termination,
        status=status,
        objective=objective,
        bound=bound,
        solver=solver,
        solver_version=solver_version,
        solution=solution if scored is not None else None,
        message=message,
        extra=extra,
    )
