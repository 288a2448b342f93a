"""PEM methods in the registry, each scored by :func:`energyopt.pipeline.evaluator.evaluate`."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pyomo.environ as pyo

from energyopt.core.highs import SolverOutcome, solve_with_highs
from energyopt.core.registry import register
from energyopt.core.result import Result
from energyopt.core.scoring import Scored, Tolerance, scored_result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.pipeline import bruteforce as _bf
from energyopt.pipeline import cpsat as _cpsat
from energyopt.pipeline import milp as _milp
from energyopt.pipeline.evaluator import PemSolution, evaluate
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.warmstart import slack_descent

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
    )


def _outcome_result(
    instance: PemInstance,
    method: str,
    outcome: SolverOutcome,
    choice: tuple[int, ...] | None,
    bound: float | None,
    solver_objective: float | None,
    extra: dict[str, Any],
) -> Result:
    proven = outcome.termination is TerminationReason.OPTIMAL and choice is not None
    return pem_result(
        instance,
        method,
        choice,
        termination=outcome.termination,
        proven_optimal=proven,
        bound=bound,
        solver_objective=solver_objective,
        solver=outcome.solver,
        solver_version=outcome.solver_version,
        message=outcome.message,
        extra={**outcome.extra, **extra},
    )


def _remaining(deadline: float | None, tick: float) -> float | None:
    return None if deadline is None else max(0.05, deadline - (time.perf_counter() - tick))


@register(FAMILY, "highs", exact=True, description="PEM MILP (Pyomo) solved by HiGHS")
def solve_highs(
    instance: PemInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    formulation: str = "incremental",
    warm_start: bool = True,
    filter_dominated: bool = True,
    time_windows: bool = True,
    rel_gap: float = 1e-6,
    threads: int | None = None,
) -> Result:
    """PEM MILP (Eqs. PEM-1..7) solved by HiGHS through Pyomo, with the MIP dual bound."""
    tick = time.perf_counter()
    work, report = instance.filter_dominated() if filter_dominated else (instance, None)
    T = instance.deadline_s
    model = _milp.build_model(work, T, formulation, time_windows)
    start_values = None
    if warm_start and T is not None:
        ws = slack_descent(work, T)
        if ws is not None:
            start_values = _milp.warm_start_values(
                model, work, ws.choice, evaluate(work, ws).start_s
            )
    outcome = solve_with_highs(
        model,
        time_limit=_remaining(time_limit, tick),
        rel_gap=rel_gap,
        threads=threads,
        warm_start=start_values,
    )
    choice, solver_objective = None, outcome.objective
    if outcome.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE):
        choice = _milp.read_choice(model, work)
        if T is None and solver_objective is not None:
            # Without a deadline T is a variable that an incumbent may leave above its
            # makespan; the energy counts to the makespan, so compare at the model's T.
            slack = pyo.value(model.T) - evaluate(work, choice, None).iteration_time_s
            solver_objective -= instance.p_blocking_w * instance.num_stages * slack
        if report is not None:
            choice = report.to_original(instance, choice)
    extra = {
        "formulation": formulation,
        "options_dropped_by_filter": report.num_dropped if report else 0,
    }
    return _outcome_result(
        instance, "highs", outcome, choice, outcome.bound, solver_objective, extra
    )


@register(FAMILY, "cpsat", exact=True, description="PEM in CP-SAT, times scaled to integer ticks")
def solve_cpsat(
    instance: PemInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    resolution_s: float = 1e-4,
    energy_unit_j: float = 1e-3,
    workers: int | None = None,
    warm_start: bool = True,
    filter_dominated: bool = True,
    bound_model: bool = True,
) -> Result:
    """PEM in CP-SAT (formulations/pem.md, Sec. 4): times rounded up (primal), down (bound)."""
    tick = time.perf_counter()
    work, report = instance.filter_dominated() if filter_dominated else (instance, None)
    T = instance.deadline_s
    hint = None
    if warm_start and T is not None:
        ws = slack_descent(work, T)
        hint = None if ws is None else ws.choice
    outcome, choice, bound = _cpsat.solve_cpsat(
        work,
        T,
        time_limit=_remaining(time_limit, tick),
        seed=seed,
        resolution_s=resolution_s,
        energy_unit_j=energy_unit_j,
        workers=workers,
        hint=hint,
        bound_model=bound_model,
    )
    if choice is not None and report is not None:
        choice = report.to_original(instance, choice)
    res = pem_result(
        instance,
        "cpsat",
        choice,
        termination=outcome.termination,
        bound=bound,
        solver=outcome.solver,
        solver_version=outcome.solver_version,
        message=outcome.message,
        extra={**outcome.extra, "resolution_s": resolution_s, "energy_unit_j": energy_unit_j},
    )
    if res.termination is TerminationReason.OPTIMAL:
        if res.gap == 0.0:
            res = replace(res, status=SolutionStatus.OPTIMAL)
        else:
            # Optimal for the rounded model only: the gap is what the time scaling costs.
            res = replace(
                res,
                termination=TerminationReason.COMPLETED,
                message="optimal for the model with times rounded to the resolution",
            )
    elif res.termination is TerminationReason.INFEASIBLE and not _cpsat._scaling_is_exact(
        work, T, resolution_s, energy_unit_j
    ):
        # Times rounded up can miss a tight deadline that the exact times meet.
        res = replace(
            res,
            termination=TerminationReason.UNKNOWN,
            message="infeasible with times rounded up to the resolution; "
            "use a finer resolution_s or the 'highs' method",
        )
    return res


@register(
    FAMILY, "bruteforce", exact=True, description="Every combination of options (tiny instances)"
)
def solve_bruteforce(
    instance: PemInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Exhaustive enumeration (at most 5 million combinations); exact by construction."""
    choice, energy = _bf.brute_force(instance, instance.deadline_s)
    if choice is None:
        return pem_result(instance, "bruteforce", None, termination=TerminationReason.INFEASIBLE)
    return pem_result(
        instance,
        "bruteforce",
        choice,
        termination=TerminationReason.OPTIMAL,
        proven_optimal=True,
        bound=energy,
        solver_objective=energy,
    )
