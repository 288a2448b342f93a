"""The one scorer: an evaluated solution becomes a checked :class:`Result`, in every family.

A family's method computes its solution and hands it to :func:`score` with the
family's hooks (:mod:`energyopt.core.family`); the hooks' evaluator scores it (an
:class:`~energyopt.core.evaluation.Evaluation`). The checks are the contract's:
the evaluator must accept the solution, a solver's own objective must agree with
the evaluator, and a proven bound must not lie above the objective. Each failure
is a bug and raises :class:`EvaluationMismatchError`.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from energyopt.core.errors import EvaluationMismatchError
from energyopt.core.evaluation import Evaluation, Scored, figure_values
from energyopt.core.gap import gap
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.tolerance import Tolerance

if TYPE_CHECKING:
    from energyopt.core.family import FamilyHooks

__all__ = [
    "OPTIMALITY_RTOL",
    "Scored",
    "gap_closed",
    "score",
    "scored_result",
    "useful_bound",
]

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


def scored_result(
    *,
    family: str,
    instance_id: str,
    method: str,
    solution: Any,
    scored: Evaluation | None,
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
    """A checked :class:`Result` for ``solution`` (``None``: no solution) and its evaluation.

    Families call :func:`score`, which evaluates and fills in the family's name,
    tolerance and sign; this is the step below it.

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
        extra.update(figure_values(scored))
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


def score(
    hooks: FamilyHooks,
    instance: Any,
    method: str,
    solution: Any,
    *,
    termination: TerminationReason,
    evaluation: Evaluation | None = None,
    **details: Any,
) -> Result:
    """Evaluate ``solution`` with the family's evaluator and package a checked :class:`Result`.

    Parameters
    ----------
    hooks
        The family's hooks: its evaluator, tolerance and objective sign.
    instance, method, solution
        What was solved, by which method, and its decisions (``None``: no solution).
    termination
        Why the method stopped.
    evaluation
        An evaluation computed elsewhere (e.g. an expectation), used instead of
        ``hooks.evaluate(instance, solution)``.
    **details
        :func:`scored_result`'s keywords (``proven_optimal``, ``bound``,
        ``solver_objective``, ``solver``, ``solver_version``, ``message``, ``extra``).

    Raises
    ------
    EvaluationMismatchError
        The evaluator rejects the solution, a solver objective disagrees with it, or
        a bound lies above the objective: each is a bug.
    """
    if evaluation is None and solution is not None:
        evaluation = hooks.evaluate(instance, solution)
    return scored_result(
        family=hooks.name,
        instance_id=instance.instance_id,
        method=method,
        solution=solution,
        scored=evaluation,
        termination=termination,
        tolerance=hooks.tolerance,
        positive_objective=hooks.positive_objective,
        **details,
    )
