"""What a solver adapter (HiGHS, CP-SAT, any Pyomo solver) reports back to a family."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from energyopt.core.status import SolutionStatus, TerminationReason


@dataclasses.dataclass(frozen=True)
class SolverOutcome:
    """What a solver adapter reports; the family turns it into a :class:`Result`.

    ``objective`` is the solver's own incumbent value: families re-evaluate the
    loaded solution with their evaluator and compare against it.
    """

    termination: TerminationReason
    status: SolutionStatus
    objective: float | None
    bound: float | None
    runtime_s: float
    solver: str
    solver_version: str
    message: str = ""
    extra: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def failure(cls, solver: str, version: str, tick: float, message: str) -> SolverOutcome:
        """An ``ERROR`` outcome without a solution, timed from ``tick`` (perf_counter)."""
        return cls(
            TerminationReason.ERROR,
            SolutionStatus.NONE,
            None,
            None,
            time.perf_counter() - tick,
            solver,
            version,
            message,
        )
