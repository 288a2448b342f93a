"""Termination reason and solution status: two separate axes (as in Pyomo's contrib.solver).

The *termination reason* says why a method stopped; the *solution status* says what
it has to show for it. A time limit may end with a feasible incumbent or with none;
an optimal termination always comes with an optimal solution.
"""

from __future__ import annotations

import enum


class TerminationReason(str, enum.Enum):
    """Why a method stopped (printed as its value: ``time_limit``)."""

    def __str__(self) -> str:
        return self.value

    OPTIMAL = "optimal"
    """Converged: the incumbent is proven optimal within the requested gap."""
    COMPLETED = "completed"
    """A heuristic ran to its own end (no optimality claim)."""
    TIME_LIMIT = "time_limit"
    """The time limit was reached."""
    ITERATION_LIMIT = "iteration_limit"
    """An iteration, node or solution limit was reached."""
    INFEASIBLE = "infeasible"
    """The instance was proven infeasible."""
    UNBOUNDED = "unbounded"
    """The model was proven unbounded (a modelling bug for every family here)."""
    ERROR = "error"
    """The method or solver failed; the message is in ``Result.message``."""
    INTERRUPTED = "interrupted"
    """The run was stopped from outside (Ctrl-C, a killed worker)."""
    UNKNOWN = "unknown"
    """The solver gave no usable reason."""


class SolutionStatus(str, enum.Enum):
    """What a method has to show (printed as its value: ``feasible``)."""

    def __str__(self) -> str:
        return self.value

    OPTIMAL = "optimal"
    """A solution proven optimal."""
    FEASIBLE = "feasible"
    """A solution that the evaluator accepts, without an optimality proof."""
    INFEASIBLE = "infeasible"
    """A solution that the evaluator rejects (always a bug in a method)."""
    NONE = "none"
    """No solution."""
