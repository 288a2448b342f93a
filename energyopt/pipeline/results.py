"""PEM solutions scored by the evaluator and packaged as checked :class:`Result` objects.

Algorithm modules (crawl, EnvPipe, Zeus baselines, exact frontier) build their
results here; :mod:`energyopt.pipeline.methods` registers them as methods.
"""

from __future__ import annotations

from typing import Any

from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import TerminationReason
from energyopt.pipeline.evaluator import PemEvaluation, PemSolution, evaluate
from energyopt.pipeline.hooks import HOOKS
from energyopt.pipeline.instance import FilterReport, PemInstance

FAMILY = HOOKS.name
#: How far a solver's objective (or a bound) may stray from the evaluator's.
TOLERANCE = HOOKS.tolerance


class PlanEvaluations:
    """Each plan evaluated once: a method compares its candidate plans, caps its bound and
    scores its result (``pem_result(..., evaluation=evals(plan))``) from one evaluation each.

    Plans are given in the indices the method works in; ``report`` (``filter_dominated``'s,
    ``None`` when the method works on ``instance`` itself) maps them to ``instance``'s, and
    the evaluation is the original plan's on ``instance``, so that the one evaluation is the
    one of the plan the result reports.
    """

    def __init__(self, instance: PemInstance, report: FilterReport | None = None) -> None:
        self.instance = instance
        self._report = report
        self._seen: dict[tuple[int, ...], PemEvaluation] = {}

    def original(self, plan: tuple[int, ...]) -> tuple[int, ...]:
        """``plan`` in ``instance``'s option indices."""
        plan = tuple(plan)
        return plan if self._report is None else self._report.to_original(self.instance, plan)

    def __call__(self, plan: tuple[int, ...]) -> PemEvaluation:
        key = tuple(plan)
        if key not in self._seen:
            self._seen[key] = evaluate(self.instance, PemSolution(self.original(key)))
        return self._seen[key]

    def feasible(self, plan: tuple[int, ...]) -> bool:
        """Whether the evaluator accepts ``plan``, from its one evaluation."""
        return self(plan).feasible

    def energy(self, plan: tuple[int, ...]) -> float:
        """``plan``'s energy (J) by the evaluator, from its one evaluation."""
        return self(plan).energy_j


def pem_result(
    instance: PemInstance,
    method: str,
    choice: tuple[int, ...] | None,
    *,
    termination: TerminationReason,
    **details: Any,
) -> Result:
    """Score ``choice`` with the evaluator and package it (:func:`energyopt.core.scoring.score`).

    ``details`` are :func:`energyopt.core.scoring.scored_result`'s keywords
    (``proven_optimal``, ``bound``, ``solver_objective``, ``solver``,
    ``solver_version``, ``message``, ``extra``).
    """
    solution = None if choice is None else PemSolution(tuple(choice))
    return score(HOOKS, instance, method, solution, termination=termination, **details)
