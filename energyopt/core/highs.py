"""Pyomo + HiGHS adapter: solve a Pyomo model, read back incumbent and proven bound.

Uses Pyomo's ``pyomo.contrib.solver`` HiGHS interface. The legacy
``SolverFactory("highs").solve()`` path is avoided on purpose: it has been seen to
replace a configured time limit with its own default.

A claimed optimum is re-verified when HiGHS ran in the condition where HiGHS 1.12.0
has declared a suboptimal incumbent optimal (its dual bound 32 % above the true
optimum; ``benchmarks/highs_false_optimum.py``): a MIP feasibility tolerance below
:data:`SAFE_MIP_FEASIBILITY_TOLERANCE` with presolve's probing off (as under a time
limit). The re-solve is the same model at the same tolerances with probing on and no
MIP start, in the time left; an optimum it does not confirm is reported with the
re-solve's bound, never as ``optimal``.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Mapping
from typing import Any

from energyopt.core.outcome import SolverOutcome
from energyopt.core.status import SolutionStatus, TerminationReason

__all__ = ["SolverOutcome", "highs_version", "solve_with_highs"]  # SolverOutcome: core.outcome

#: The MIP feasibility tolerance at or above which HiGHS' optimality claims are taken
#: as they come. At 1e-9 with probing off HiGHS 1.12.0 proved a false optimum on 13 of
#: 30 random seeds of ``tests/data/capacity-false-optimum.json`` (5 of 30 without the
#: MIP start); at 1e-8, or 1e-9 with probing on, on none
#: (``benchmarks/highs_false_optimum.py --sweep``).
SAFE_MIP_FEASIBILITY_TOLERANCE = 1e-8
#: HiGHS' default absolute MIP gap: a claimed optimum is confirmed when the re-solve's
#: bound lies within the larger of this and ``rel_gap`` (at least 1e-6) of it.
_MIP_ABS_GAP = 1e-6


def highs_version() -> str:
    import highspy

    return (
        f"{highspy.HIGHS_VERSION_MAJOR}.{highspy.HIGHS_VERSION_MINOR}.{highspy.HIGHS_VERSION_PATCH}"
    )


def _termination_from_pyomo(tc: Any) -> TerminationReason:
    from pyomo.contrib.solver.common.results import TerminationCondition as TC

    return {
        TC.convergenceCriteriaSatisfied: TerminationReason.OPTIMAL,
        TC.maxTimeLimit: TerminationReason.TIME_LIMIT,
        TC.iterationLimit: TerminationReason.ITERATION_LIMIT,
        TC.objectiveLimit: TerminationReason.ITERATION_LIMIT,
        TC.provenInfeasible: TerminationReason.INFEASIBLE,
        TC.locallyInfeasible: TerminationReason.INFEASIBLE,
        TC.infeasibleOrUnbounded: TerminationReason.INFEASIBLE,
        TC.unbounded: TerminationReason.UNBOUNDED,
        TC.interrupted: TerminationReason.INTERRUPTED,
        TC.error: TerminationReason.ERROR,
    }.get(tc, TerminationReason.UNKNOWN)


def _status_from_pyomo(ss: Any) -> SolutionStatus:
    from pyomo.contrib.solver.common.results import SolutionStatus as SS

    return {
        SS.optimal: SolutionStatus.OPTIMAL,
        SS.feasible: SolutionStatus.FEASIBLE,
        SS.infeasible: SolutionStatus.INFEASIBLE,
    }.get(ss, SolutionStatus.NONE)


def _highs_class() -> type:
    from pyomo.contrib.solver.solvers.highs import Highs

    class WarmStartHighs(Highs):
        """Pyomo's persistent HiGHS interface, plus a MIP start handed to HiGHS."""

        warm_start: Mapping[Any, float] | None = None
        deadline: float | None = None

        def _solve(self):
            if self.deadline is not None:
                # Pyomo's hand-off of the model ran since the call began: HiGHS gets
                # only what is left of the caller's time limit.
                left = max(0.01, self.deadline - time.perf_counter())
                self._active_config.time_limit = left
            if self.warm_start:
                import numpy as np

                index, value = [], []
                for var, val in self.warm_start.items():
                    col = self._pyomo_var_to_solver_var_map.get(id(var))
                    if col is not None:
                        index.append(col)
                        value.append(float(val))
                self._solver_model.setSolution(
                    len(index), np.asarray(index, dtype=np.int32), np.asarray(value, dtype=float)
                )
            return super()._solve()

    return WarmStartHighs


def solve_with_highs(
    model: Any,
    *,
    time_limit: float | None = None,
    rel_gap: float | None = 1e-6,
    threads: int | None = None,
    warm_start: Mapping[Any, float] | None = None,
    solver_options: Mapping[str, Any] | None = None,
    tee: bool = False,
) -> SolverOutcome:
    """Solve a Pyomo model with HiGHS and load the incumbent into the model.

    Parameters
    ----------
    model
        A Pyomo ``ConcreteModel`` with one active objective (minimized).
    time_limit
        Wall-clock seconds for this call, Pyomo's hand-off of the model included;
        ``None`` for no limit.
    rel_gap
        Relative MIP gap at which HiGHS stops (HiGHS' ``mip_rel_gap``).
    threads
        HiGHS threads; ``None`` lets HiGHS choose.
    warm_start
        Values for some or all variables (Pyomo ``VarData`` -> value), given to
        HiGHS as a MIP start. HiGHS completes or discards it as it sees fit.
    solver_options
        Further HiGHS options by their HiGHS names.
    tee
        Print the HiGHS log (presolve and solving report) on standard output.

    Returns
    -------
    SolverOutcome
        Never raises on solver failure: errors come back with
        ``termination = ERROR``. The proven bound is HiGHS' MIP dual bound; a claimed
        optimum under a tight tolerance is re-verified (see the module docstring).
    """
    tick = time.perf_counter()
    version = ""
    try:
        version = highs_version()
        solver = _highs_class()()
        if not solver.available():
            return SolverOutcome.failure(
                "highs", version, tick, "HiGHS is not available to Pyomo (is highspy installed?)"
            )
        solver.warm_start = warm_start
        solver.deadline = None if time_limit is None else tick + float(time_limit)
        options = _highs_options(solver_options, time_limit is not None, tee)
        res = solver.solve(
            model,
            time_limit=time_limit,
            rel_gap=rel_gap,
            threads=threads,
            load_solutions=False,
            raise_exception_on_nonoptimal_result=False,
            tee=tee,
            solver_options=options,
        )
        outcome = _outcome_from_results(res, tick, version)
        if outcome.termination is TerminationReason.OPTIMAL and _at_risk(options):
            outcome = _verify_optimum(solver, outcome, options, tick, rel_gap, tee)
        return outcome
    except Exception as exc:  # a solver failure is a result, not a traceback
        return SolverOutcome.failure("highs", version, tick, f"{type(exc).__name__}: {exc}")


def _highs_options(
    solver_options: Mapping[str, Any] | None, limited: bool, tee: bool = False
) -> dict[str, Any]:
    """The HiGHS options: log on the console only with ``tee``, tight feasibility
    tolerances, probing off under a time limit (``limited``; see
    :data:`energyopt.core.highslp.PROBING_OFF`), then the caller's."""
    from energyopt.core.highslp import PROBING_OFF

    # Tight tolerances: solutions are re-checked by exact evaluators, and a binary
    # off by the default 1e-6 integrality tolerance can shift a makespan past a deadline.
    # Pyomo switches HiGHS' console log on and captures it; it reaches the terminal
    # only with ``tee``, so without it the log is not written at all.
    options: dict[str, Any] = {
        "log_to_console": bool(tee),
        "mip_feasibility_tolerance": 1e-9,
        "primal_feasibility_tolerance": 1e-9,
    }
    if limited:
        options["presolve_rule_off"] = PROBING_OFF
    options.update(solver_options or {})
    return options


def _outcome_from_results(res: Any, tick: float, version: str) -> SolverOutcome:
    """Load the incumbent (if any) into the model; termination, status, incumbent,
    proven bound (``None`` when not finite) and HiGHS' node and iteration counts."""
    termination = _termination_from_pyomo(res.termination_condition)
    status = _status_from_pyomo(res.solution_status)
    if status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE):
        res.solution_loader.load_vars()
    bound = res.objective_bound
    if bound is not None and not math.isfinite(bound):
        bound = None
    extra = {}
    for key in ("mip_node_count", "simplex_iteration_count"):
        val = getattr(res.extra_info, key, None)
        if val is not None:
            extra[key] = int(val)
    return SolverOutcome(
        termination,
        status,
        res.incumbent_objective,
        bound,
        time.perf_counter() - tick,
        "highs",
        version,
        extra=extra,
    )


def _at_risk(options: Mapping[str, Any]) -> bool:
    """Whether HiGHS ran where it has proved false optima: a MIP feasibility tolerance
    below :data:`SAFE_MIP_FEASIBILITY_TOLERANCE` with presolve on and probing off."""
    from energyopt.core.highslp import PROBING_OFF

    tight = options.get("mip_feasibility_tolerance", 1e-6) < SAFE_MIP_FEASIBILITY_TOLERANCE
    probing_off = int(options.get("presolve_rule_off", 0)) & PROBING_OFF
    return bool(tight and probing_off and options.get("presolve", "choose") != "off")


def _verify_optimum(
    solver: Any,
    outcome: SolverOutcome,
    options: Mapping[str, Any],
    tick: float,
    rel_gap: float | None,
    tee: bool,
) -> SolverOutcome:
    """``outcome`` (an ``OPTIMAL`` one, its solution loaded) checked by a second solve.

    The same HiGHS model is solved again at the same tolerances with presolve's probing
    on, no MIP start, and the time left before ``solver.deadline`` (:func:`_at_risk`:
    with probing on HiGHS has not gone wrong). When its dual bound lies within the gap
    tolerance of the claimed optimum, the claim stands; otherwise the incumbent is
    reported as feasible, with the re-solve's bound and ``TIME_LIMIT`` (re-solve
    stopped by the limit) or ``UNKNOWN`` (HiGHS' claim refuted).
    """
    import highspy

    from energyopt.core.highslp import PROBING_OFF

    h = solver._solver_model
    h.clearSolver()  # drops the incumbent and so the MIP start: a cold re-solve
    h.setOptionValue("presolve_rule_off", int(options["presolve_rule_off"]) & ~PROBING_OFF)
    h.setOptionValue("log_to_console", bool(tee))
    if solver.deadline is not None:
        h.setOptionValue("time_limit", max(0.01, solver.deadline - time.perf_counter()))
    h.run()
    status = h.getModelStatus()
    bound = h.getInfo().mip_dual_bound
    bound = bound if math.isfinite(bound) else None
    claimed = float(outcome.objective if outcome.objective is not None else math.inf)
    tol = max(_MIP_ABS_GAP, max(rel_gap or 0.0, 1e-6) * abs(claimed))
    extra = {**outcome.extra, "verify_bound": bound, "verify_status": h.modelStatusToString(status)}
    if bound is not None and bound >= claimed - tol:
        extra["verified_optimal"] = True
        return dataclasses.replace(outcome, runtime_s=time.perf_counter() - tick, extra=extra)
    extra["verified_optimal"] = False
    timed_out = status == highspy.HighsModelStatus.kTimeLimit
    termination = TerminationReason.TIME_LIMIT if timed_out else TerminationReason.UNKNOWN
    why = (
        "the re-solve with probing on ran out of time"
        if timed_out
        else f"a re-solve with probing on proved the bound {bound!r}"
    )
    message = (
        f"HiGHS declared its incumbent {claimed!r} optimal (bound {outcome.bound!r}); "
        f"not confirmed: {why}; reported as feasible with the re-solve's bound"
    )
    return dataclasses.replace(
        outcome,
        termination=termination,
        status=SolutionStatus.FEASIBLE,
        bound=None if bound is None else min(bound, claimed),
        runtime_s=time.perf_counter() - tick,
        message=message,
        extra=extra,
    )
