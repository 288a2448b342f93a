"""Which MILP solver solves a Pyomo-built model: HiGHS by default, any Pyomo solver present.

The exact methods build Pyomo models and call :func:`solve_milp` with the user's
``solver=`` option (``--solver`` / ``-o solver=NAME`` on the command line):

- ``"highs"`` (default): :func:`energyopt.core.highs.solve_with_highs`, with warm starts.
- any name of Pyomo's ``pyomo.contrib.solver`` factory (``scip_direct``,
  ``gurobi_direct``, ``gurobi_persistent``, ``knitro_direct``, ...), or a short alias
  (``scip``, ``gurobi``): Pyomo's interface to that solver.
- ``appsi_<name>`` (``appsi_cbc``, ``appsi_gurobi``, ``appsi_cplex``): Pyomo's older
  APPSI interfaces.

Every solver's termination, incumbent and proven bound are mapped to the same
:class:`SolverOutcome` (and so to the same :class:`~energyopt.core.result.Result`):
the termination and solution status through Pyomo's common enumerations, the bound
from the solver's MIP dual bound (``None`` when it gives none or it is not finite).
Only HiGHS receives the MIP start; other solvers start cold (recorded in ``extra``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from energyopt.core.highs import (
    _status_from_pyomo,
    _termination_from_pyomo,
    solve_with_highs,
)
from energyopt.core.outcome import SolverOutcome
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.timelimit import TimeBudget

DEFAULT_SOLVER = "highs"
#: Short names for Pyomo's solver interfaces.
ALIASES = {"scip": "scip_direct", "gurobi": "gurobi_direct"}
#: Tight feasibility tolerances per solver: the families re-check every solution with an
#: exact evaluator (HiGHS sets its own in :func:`solve_with_highs`).
_TIGHT = {
    "scip_direct": {"numerics/feastol": 1e-9},
    "scip_persistent": {"numerics/feastol": 1e-9},
    "gurobi_direct": {"FeasibilityTol": 1e-9, "IntFeasTol": 1e-9},
    "gurobi_persistent": {"FeasibilityTol": 1e-9, "IntFeasTol": 1e-9},
}


class UnknownSolverError(ValueError):
    """A solver name that no Pyomo interface knows."""


def solver_names() -> list[str]:
    """Every name :func:`solve_milp` accepts (available or not on this machine)."""
    import pyomo.environ  # noqa: F401  (registers the solver interfaces)
    from pyomo.contrib.solver.common.factory import SolverFactory

    appsi = ["appsi_cbc", "appsi_cplex", "appsi_gurobi", "appsi_highs"]
    return sorted({DEFAULT_SOLVER, *ALIASES, *SolverFactory, *appsi})


def check_solver(name: Any) -> str:
    """``name`` as the canonical solver name; :class:`UnknownSolverError` if unknown."""
    if not isinstance(name, str) or name not in solver_names():
        raise UnknownSolverError(
            f"unknown MILP solver {name!r}; known: {', '.join(solver_names())}"
        )
    return ALIASES.get(name, name)


def solve_milp(
    model: Any,
    *,
    solver: str = DEFAULT_SOLVER,
    time_limit: float | None = None,
    rel_gap: float | None = 1e-6,
    threads: int | None = None,
    warm_start: Mapping[Any, float] | None = None,
    solver_options: Mapping[str, Any] | None = None,
    tee: bool = False,
) -> SolverOutcome:
    """Solve a Pyomo model with ``solver`` and load the incumbent into the model.

    Parameters are those of :func:`~energyopt.core.highs.solve_with_highs`; ``solver``
    is a name from :func:`solver_names` (:class:`UnknownSolverError` otherwise). Never
    raises on solver failure (an unavailable solver included): errors come back with
    ``termination = ERROR``.
    """
    if solver == DEFAULT_SOLVER:
        return solve_with_highs(
            model, time_limit=time_limit, rel_gap=rel_gap, threads=threads,
            warm_start=warm_start, solver_options=solver_options, tee=tee,
        )  # fmt: skip
    tick = time.perf_counter()
    name = check_solver(solver)  # a wrong name is bad input, not a solver failure
    try:
        if name.startswith("appsi_"):
            return _solve_appsi(model, name, tick, time_limit, rel_gap, solver_options, tee)
        return _solve_contrib(model, name, tick, time_limit, rel_gap, threads, solver_options, tee)
    except Exception as exc:  # a solver failure is a result, not a traceback
        return SolverOutcome.failure(str(solver), "", tick, f"{type(exc).__name__}: {exc}")


def _version(opt: Any) -> str:
    v = opt.version()
    return ".".join(str(x) for x in v) if isinstance(v, tuple) else str(v or "")


def _finite(x: Any) -> float | None:
    return None if x is None or not math.isfinite(float(x)) else float(x)


def _solve_contrib(
    model: Any,
    name: str,
    tick: float,
    time_limit: float | None,
    rel_gap: float | None,
    threads: int | None,
    solver_options: Mapping[str, Any] | None,
    tee: bool,
) -> SolverOutcome:
    """A ``pyomo.contrib.solver`` interface: the same results API as HiGHS'."""
    import pyomo.environ  # noqa: F401
    from pyomo.contrib.solver.common.factory import SolverFactory

    opt = SolverFactory(name)
    if not opt.available():
        return SolverOutcome.failure(name, "", tick, f"{name} is not available to Pyomo")
    version = _version(opt)
    left = TimeBudget(time_limit, start=tick).remaining(0.01)
    res = opt.solve(
        model, time_limit=left, rel_gap=rel_gap, threads=threads, load_solutions=False,
        raise_exception_on_nonoptimal_result=False, tee=tee,
        solver_options={**_TIGHT.get(name, {}), **(solver_options or {})},
    )  # fmt: skip
    termination = _termination_from_pyomo(res.termination_condition)
    status = _status_from_pyomo(res.solution_status)
    if status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE):
        res.solution_loader.load_vars()
    return SolverOutcome(
        termination, status, _finite(res.incumbent_objective), _finite(res.objective_bound),
        time.perf_counter() - tick, name, version, extra={"warm_start": "not passed"},
    )  # fmt: skip


def _solve_appsi(
    model: Any,
    name: str,
    tick: float,
    time_limit: float | None,
    rel_gap: float | None,
    solver_options: Mapping[str, Any] | None,
    tee: bool,
) -> SolverOutcome:
    """An APPSI interface (``pyomo.contrib.appsi.solvers``): its own results enums."""
    from pyomo.contrib.appsi import solvers
    from pyomo.contrib.appsi.base import TerminationCondition as TC

    cls = {"cbc": solvers.Cbc, "cplex": solvers.Cplex, "gurobi": solvers.Gurobi,
           "highs": solvers.Highs}[name.removeprefix("appsi_")]  # fmt: skip
    opt = cls()
    if not opt.available():
        return SolverOutcome.failure(name, "", tick, f"{name} is not available to Pyomo")
    opt.config.load_solution = False
    opt.config.stream_solver = tee
    if time_limit is not None:
        opt.config.time_limit = TimeBudget(time_limit, start=tick).remaining(0.01)
    if rel_gap is not None and hasattr(opt.config, "mip_gap"):
        opt.config.mip_gap = rel_gap
    for key, val in (solver_options or {}).items():
        opt.solver_options[key] = val
    res = opt.solve(model)
    tc = res.termination_condition
    termination = {
        TC.optimal: TerminationReason.OPTIMAL,
        TC.maxTimeLimit: TerminationReason.TIME_LIMIT,
        TC.maxIterations: TerminationReason.ITERATION_LIMIT,
        TC.infeasible: TerminationReason.INFEASIBLE,
        TC.unbounded: TerminationReason.UNBOUNDED,
        TC.interrupted: TerminationReason.INTERRUPTED,
        TC.error: TerminationReason.ERROR,
    }.get(tc, TerminationReason.UNKNOWN)
    objective = _finite(res.best_feasible_objective)
    status = SolutionStatus.NONE
    if objective is not None:
        res.solution_loader.load_vars()
        optimal = termination is TerminationReason.OPTIMAL
        status = SolutionStatus.OPTIMAL if optimal else SolutionStatus.FEASIBLE
    return SolverOutcome(
        termination, status, objective, _finite(res.best_objective_bound),
        time.perf_counter() - tick, name, _version(opt), extra={"warm_start": "not passed"},
    )  # fmt: skip
