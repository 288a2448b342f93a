"""OR-Tools CP-SAT adapter: solve a ``CpModel``, read back incumbent and proven bound."""

from __future__ import annotations

import time
from typing import Any

from energyopt.core.outcome import SolverOutcome
from energyopt.core.status import SolutionStatus, TerminationReason


def cpsat_version() -> str:
    import ortools

    return ortools.__version__


def solve_with_cpsat(
    model: Any,
    *,
    time_limit: float | None = None,
    workers: int | None = None,
    seed: int | None = None,
    rel_gap: float | None = None,
    parameters: dict[str, Any] | None = None,
    log: bool = False,
) -> tuple[SolverOutcome, Any]:
    """Solve a CP-SAT model.

    Parameters
    ----------
    model
        An ``ortools.sat.python.cp_model.CpModel`` with an objective to minimize.
    time_limit
        ``max_time_in_seconds``; ``None`` for no limit.
    workers
        ``num_workers`` (CP-SAT's portfolio size); ``None`` lets CP-SAT choose.
    seed
        ``random_seed``.
    rel_gap
        ``relative_gap_limit``.
    parameters
        Further ``SatParameters`` fields by name.
    log
        Print CP-SAT's search log.

    Returns
    -------
    (SolverOutcome, CpSolver)
        The outcome (objective and bound in the model's integer units) and the
        solver, to read variable values from. Failures come back as
        ``termination = ERROR`` with the solver set to ``None``.
    """
    tick = time.perf_counter()
    version = ""
    try:
        from ortools.sat.python import cp_model

        version = cpsat_version()
        solver = cp_model.CpSolver()
        _set_parameters(solver.parameters, time_limit, workers, seed, rel_gap, parameters, log)
        code = solver.solve(model)
        termination, status = _reasons(cp_model, code)
        has = code in (cp_model.OPTIMAL, cp_model.FEASIBLE)
        bound = solver.best_objective_bound if code != cp_model.INFEASIBLE else None
        outcome = SolverOutcome(
            termination,
            status,
            solver.objective_value if has else None,
            bound,
            time.perf_counter() - tick,
            "cp-sat",
            version,
            "" if code != cp_model.MODEL_INVALID else model.validate(),
            {"branches": solver.num_branches, "conflicts": solver.num_conflicts},
        )
        return outcome, solver
    except Exception as exc:
        return SolverOutcome.failure("cp-sat", version, tick, f"{type(exc).__name__}: {exc}"), None


def _set_parameters(
    params: Any,
    time_limit: float | None,
    workers: int | None,
    seed: int | None,
    rel_gap: float | None,
    parameters: dict[str, Any] | None,
    log: bool,
) -> None:
    """Fill ``SatParameters`` from the arguments of :func:`solve_with_cpsat`."""
    if time_limit is not None:
        params.max_time_in_seconds = float(time_limit)
    if workers is not None:
        params.num_workers = int(workers)
    if seed is not None:
        params.random_seed = int(seed) % (2**31)
    if rel_gap is not None:
        params.relative_gap_limit = float(rel_gap)
    params.log_search_progress = bool(log)
    for key, value in (parameters or {}).items():
        setattr(params, key, value)


def _reasons(cp_model: Any, code: Any) -> tuple[TerminationReason, SolutionStatus]:
    """Termination reason and solution status of a CP-SAT status code.

    FEASIBLE means a limit stopped the search with an incumbent; UNKNOWN, that a
    limit stopped it before finding anything.
    """
    if code == cp_model.OPTIMAL:
        return TerminationReason.OPTIMAL, SolutionStatus.OPTIMAL
    if code == cp_model.FEASIBLE:
        return TerminationReason.TIME_LIMIT, SolutionStatus.FEASIBLE
    if code == cp_model.INFEASIBLE:
        return TerminationReason.INFEASIBLE, SolutionStatus.NONE
    if code == cp_model.MODEL_INVALID:
        return TerminationReason.ERROR, SolutionStatus.NONE
    return TerminationReason.TIME_LIMIT, SolutionStatus.NONE
