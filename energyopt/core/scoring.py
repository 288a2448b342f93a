"""Turn an evaluated solution into a :class:`Result`, with the checks every family needs.

A family's method computes its solution, scores it with the family's own evaluator,
and hands both here. The checks are the contract's: the evaluator must accept the
solution, a solver's own objective must agree with the evaluator, and a proven
bound must not lie above the objective. Each failure is a bug and raises
:class:`EvaluationMismatchError`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from energyopt.core.errors import EvaluationMismatchError
from energyopt.core.gap import gap
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason

#: Relative gap within which a bound proves an objective optimal (solvers stop at
#: relative MIP gaps of 1e-6 to 1e-4; nothing wider is ever called optimal).
OPTIMALITY_RTOL = 1e-4


def gap_closed(objective: float | None, bound: float | None) -> bool:
    """Whether ``bound`` proves ``objective`` optimal (relative gap <= OPTIMALITY_RTOL)."""
    g = gap(objective, bound)
    return g is not None and g <= OPTIMALITY_RTOL


def useful_bound(
    bound: float | None,
    positive_objective: bool,
    objective: float | None = None,
    extra: dict[str, Any] | None = None,
) -> float | None:
    """``bound``, or ``None`` when it says nothing.

    On an objective that is nonnegative by construction, a bound <= 0 below a
    positive objective is no bound: it would show a 100 % gap as if one had been
    measured. (A bound of 0 on an objective of 0 proves it optimal and is kept.)
    ``extra`` (when given) records the dropped value under ``"bound_note"``.
    """
    if bound is None or not math.isfinite(bound):
        return None
    if positive_objective and bound <= 0.0 and (objective is None or objective > 0.0):
        if extra is not None:
            extra["bound_note"] = f"no useful bound (solver bound {bound!r})"
        return None
    return bound


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
    positive_objective: bool = False,
) -> Result:
    """A checked :class:`Result` for ``solution`` (``None``: no solution) and its score.

    ``proven_optimal`` gives status ``optimal`` only when the bound closes the gap
    (within :data:`OPTIMALITY_RTOL`); otherwise the status is ``feasible`` and a
    termination of ``optimal`` becomes ``completed``. With ``positive_objective``
    (the family's objective is nonnegative by construction, so that 0 bounds it
    trivially) a bound <= 0 is no bound: it is dropped and ``extra["bound_note"]``
    says so.
    """
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
        extra.update(scored.extra)
    bound = useful_bound(bound, positive_objective, objective, extra)
    if scored is not None:
        closed = bound is not None and gap_closed(objective, bound)
        status = SolutionStatus.OPTIMAL if proven_optimal and closed else SolutionStatus.FEASIBLE
        if termination is TerminationReason.OPTIMAL and not closed:
            termination = TerminationReason.COMPLETED
            message = message or "the solver stopped, but its bound does not close the gap"
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
