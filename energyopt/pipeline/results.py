"""PEM solutions scored by the evaluator and packaged as checked :class:`Result` objects.

Algorithm modules (crawl, EnvPipe, Zeus baselines, exact frontier) build their
results here; :mod:`energyopt.pipeline.methods` registers them as methods.
"""

from __future__ import annotations

from typing import Any

from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import TerminationReason
from energyopt.pipeline.evaluator import PemSolution
from energyopt.pipeline.hooks import HOOKS
from energyopt.pipeline.instance import PemInstance

FAMILY = HOOKS.name
#: How far a solver's objective (or a bound) may stray from the evaluator's.
TOLERANCE = HOOKS.tolerance


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
