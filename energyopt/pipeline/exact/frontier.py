"""Exact time-energy frontier of a PEM instance by the epsilon-constraint method.

For a fixed choice x, the energy at iteration time T is C(x) + P_b S T with
C(x) = sum of effective energies, feasible for T >= makespan(x). The minimal
energy E*(T) is therefore P_b S T plus a non-increasing step function of T whose
steps sit at makespans of optimal choices. The step function is lowest at the
makespan T_slow of the choice that minimizes C(x) outright (every computation at
its least effective energy), and for any T >= T_slow that choice is optimal.
Starting at T_slow, each exact solve at a deadline just below the previous
breakpoint yields the next step, until the deadline falls below the fastest
makespan. Every point is an exact optimum (or carries its solver's bound when a
time limit cuts a solve short).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.pipeline.evaluator import (
    DEADLINE_RTOL,
    evaluate,
    fastest_choice,
    min_energy_choice,
)
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.paretoset import energy_at

__all__ = ["PointSolver", "energy_at", "exact_frontier"]  # energy_at: its old home

FAMILY = "pipeline"


#: ``solve_point(instance, solver, time_limit=..., seed=..., **options) -> Result``: one
#: exact solve at the instance's deadline (the registry's ``solve`` in the method).
PointSolver = Callable[..., Result]


def exact_frontier(
    instance: PemInstance,
    *,
    solve_point: PointSolver,
    time_limit: float | None = None,
    seed: int | None = None,
    solver: str = "highs",
    max_points: int = 500,
    **solver_options: Any,
) -> Result:
    """Breakpoints of E*(T) between the fastest and the minimal-energy iteration time.

    Parameters
    ----------
    solve_point
        Solves the instance at one deadline with the exact method ``solver``.
    solver
        Exact method used for each point (``"highs"`` or ``"cpsat"``).
    max_points
        Stop after this many breakpoints (the result then says so).

    Returns
    -------
    Result
        ``frontier``: points (makespan, energy at that makespan, choice, bound),
        fastest first; ``objective``/``bound``: those at the instance's deadline
        when it has one, else at the minimal-energy point.
    """
    tick = time.perf_counter()
    t_fast = evaluate(instance, fastest_choice(instance), None).iteration_time_s
    # Beyond the least-C choice's makespan nothing changes but P_b S T (module docstring).
    slowest = evaluate(instance, min_energy_choice(instance), None)
    deadline = slowest.iteration_time_s
    points: list[FrontierPoint] = []
    if deadline <= 0.0:
        # Every least-C option takes no time: that choice is optimal at every T >= 0.
        points.append(FrontierPoint(0.0, slowest.energy_j, min_energy_choice(instance), None))
        deadline = -1.0
    termination = TerminationReason.OPTIMAL
    message = ""
    while deadline > 0.0:
        left = None if time_limit is None else time_limit - (time.perf_counter() - tick)
        if left is not None and left <= 0:
            termination, message = TerminationReason.TIME_LIMIT, "time limit reached mid-frontier"
            break
        res = solve_point(
            instance.with_deadline(deadline), solver, time_limit=left, seed=seed, **solver_options
        )
        if not res.has_solution:
            if res.termination is not TerminationReason.INFEASIBLE:
                termination = res.termination
                message = f"stopped at deadline {deadline}: {res.message}"
            break
        point = _breakpoint(instance, res, deadline)
        points.append(point)
        if res.status is not SolutionStatus.OPTIMAL:
            termination = res.termination
        if len(points) >= max_points:
            termination = TerminationReason.ITERATION_LIMIT
            message = f"stopped after {max_points} points"
            break
        deadline = point.makespan_s * (1 - 2 * DEADLINE_RTOL)
        if point.makespan_s <= t_fast or deadline < t_fast * (1 - 2 * DEADLINE_RTOL):
            break
    points.sort(key=lambda p: p.makespan_s)
    return _frontier_result(instance, points, termination, message, solver)


def _breakpoint(instance: PemInstance, res: Result, deadline: float) -> FrontierPoint:
    """The frontier point of an exact solve at ``deadline``: its makespan, the
    evaluator's energy there, the choice, and the solve's bound moved to that makespan."""
    ev = evaluate(instance, res.solution, None)
    bound = None
    if res.bound is not None:
        # The solve's bound is at its deadline; shift it to the makespan (same C(x) bound).
        shift = instance.p_blocking_w * instance.num_stages * (deadline - ev.iteration_time_s)
        bound = res.bound - shift
    return FrontierPoint(ev.iteration_time_s, ev.energy_j, res.solution, bound)


def _frontier_result(
    instance: PemInstance,
    points: list[FrontierPoint],
    termination: TerminationReason,
    message: str,
    solver: str,
) -> Result:
    """The Result of a frontier sweep: the frontier, read at the instance's deadline
    (the slowest point within it) or, without a deadline, at its least energy."""
    objective = bound = solution = None
    T = instance.deadline_s
    feasible = [p for p in points if T is None or p.makespan_s <= T * (1 + DEADLINE_RTOL)]
    if feasible:
        pick = feasible[-1] if T is not None else min(points, key=lambda p: p.objective)
        solution = pick.solution
        objective = evaluate(instance, pick.solution).energy_j
        bound = objective if termination is TerminationReason.OPTIMAL else None
    elif termination is TerminationReason.OPTIMAL and points:
        termination = TerminationReason.INFEASIBLE  # the deadline is below the fastest makespan
    if objective is None:
        status = SolutionStatus.NONE
    elif termination is TerminationReason.OPTIMAL:
        status = SolutionStatus.OPTIMAL
    else:
        status = SolutionStatus.FEASIBLE
    return Result(
        family=FAMILY,
        instance_id=instance.instance_id,
        method="exact-frontier",
        termination=termination,
        status=status,
        objective=objective,
        bound=bound,
        solver=solver,
        solution=solution,
        frontier=tuple(points),
        message=message,
        extra={"num_points": len(points)},
    )
