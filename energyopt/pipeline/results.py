"""PEM solutions scored by the evaluator and packaged as checked :class:`Result` objects.

Algorithm modules (crawl, EnvPipe, Zeus baselines, exact frontier) build their
results here; :mod:`energyopt.pipeline.methods` registers them as methods.
"""

from __future__ import annotations

from typing import Any

from energyopt.core.result import Result
from energyopt.core.scoring import Scored, Tolerance, scored_result
from energyopt.core.status import TerminationReason
from energyopt.pipeline.evaluator import PemSolution, evaluate
from energyopt.pipeline.instance import PemInstance

FAMILY = "pipeline"
#: How far a solver's objective (or a bound) may stray from the evaluator's.
TOLERANCE = Tolerance(rtol=1e-6, atol=1e-6, unit="J")


def pem_result(
    instance: PemInstance,
    method: str,
    choice: tuple[int, ...] | None,
    *,
    termination: TerminationReason,
    **details: Any,
) -> Result:
    """Score ``choice`` with the evaluator and package it as a checked :class:`Result`.

    A solver objective that disagrees with the evaluator, or a solution the
    evaluator rejects, raises :class:`EvaluationMismatchError`: both are bugs.

    ``details`` are :func:`energyopt.core.scoring.scored_result`'s keywords
    (``proven_optimal``, ``bound``, ``solver_objective``, ``solver``,
    ``solver_version``, ``message``, ``extra``).
    """
    scored = None
    if choice is not None:
        ev = evaluate(instance, PemSolution(choice))
        scored = Scored(
            ev.energy_j, ev.feasible, ev.violations, {"iteration_time_s": ev.iteration_time_s}
        )
    return scored_result(
        family=FAMILY,
        instance_id=instance.instance_id,
        method=method,
        solution=None if choice is None else PemSolution(choice),
        scored=scored,
        termination=termination,
        tolerance=TOLERANCE,
        **details,
        positive_objective=True,
    )
