"""The exact PEM solve: relaxation bound, rounded incumbent, then the MILP, in one time limit.

1. The convex-hull relaxation (:mod:`energyopt.pipeline.relaxation.hull`) at the deadline
   gives a proven bound, and its rounded plan (:mod:`energyopt.pipeline.relaxation.rounding`)
   an incumbent, in well under a second even for GPT-3 8x96.
2. The MILP (:mod:`energyopt.pipeline.exact.milp`) starts from that plan. It is built on
   a copy of the instance scaled so that the deadline is 1 and energies are of
   order 1, because HiGHS' tolerances are absolute: with times from microseconds
   to kiloseconds an unscaled model cannot tell the options apart. With T = 1,
   HiGHS' feasibility tolerance (1e-9) matches the evaluator's relative deadline
   tolerance (``DEADLINE_RTOL``), so both accept the same plans. The relaxation
   is solved at ``T (1 + DEADLINE_RTOL)``, so its bound holds for every plan the
   evaluator accepts.
3. Model building and Pyomo's hand-off count against the time limit: when too
   little time is left for them, the MILP is skipped and the relaxation's bound
   and plan are what the result reports.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable

from energyopt.core.milp_solvers import solve_milp as solve_pyomo_milp
from energyopt.core.outcome import SolverOutcome
from energyopt.core.status import SolutionStatus
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.evaluator import DEADLINE_RTOL, evaluate, fastest_choice
from energyopt.pipeline.exact import milp as _milp
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.relaxation.hull import (
    HullRelaxation,
    LpTimeLimit,
    bound_curve,
    least_energy_bound,
)
from energyopt.pipeline.relaxation.rounding import rounded_plan

#: Seconds of model building and hand-off per option entry, measured on GPT-3
#: 8x96 (92k options: 1.1 s build, 3.9 s hand-off), with a safety factor of 2.
_SECONDS_PER_OPTION = 1.1e-4
#: Pyomo's hand-off of the built model to HiGHS (persistent interface, one
#: integrality call per column) takes about 8x the build on GPT-3 8x96
#: (build 2.1 s, hand-off 17.9 s, measured after merging main); with less time
#: left the MILP is not started, so the call stays inside its time limit.
_HANDOFF_PER_BUILD = 10.0


#: HiGHS' MIP tolerances, in the scaled model's energy unit (see :func:`solve_milp`).
_MIP_TOL = 1e-6


def scaled_instance(instance: PemInstance, time_unit_s: float, energy_unit_j: float) -> PemInstance:
    """``instance`` with times in ``time_unit_s`` and energies in ``energy_unit_j``.

    Plans are the same (same option indices); every energy divides by
    ``energy_unit_j``, since ``P_b`` is rescaled to keep ``P_b t`` in energy units.
    """
    tables = {
        name: OptionTable(
            t.sm_clock_mhz,
            tuple(x / time_unit_s for x in t.time_s),
            tuple(e / energy_unit_j for e in t.energy_j),
        )
        for name, t in instance.tables.items()
    }
    deadline = None if instance.deadline_s is None else instance.deadline_s / time_unit_s
    return dataclasses.replace(
        instance,
        tables=tables,
        p_blocking_w=instance.p_blocking_w * time_unit_s / energy_unit_j,
        deadline_s=deadline,
    )


def energy_unit(instance: PemInstance, tau: float) -> float:
    """The scaled model's energy unit: the largest energy in play, P_b S tau included.

    All option energies can be 0 while blocking costs energy (a unit of 1e-300 then
    overflowed to an objective of -inf); with nothing in play at all, joules.
    """
    eps = max(
        max(float(e.max()) for e in instance.option_energies),
        instance.p_blocking_w * instance.num_stages * tau,
    )
    return eps if eps > 0 else 1.0


def within_solver_tolerance(
    instance: PemInstance, bound: float | None, energy_j: float | None
) -> float | None:
    """``bound``, or ``energy_j`` when the bound exceeds it by less than HiGHS' tolerance.

    HiGHS' dual bound is exact only up to its tolerances in the model's energy unit
    (seen: 1e-7 units, 2e-6 J, above an optimum of 0 J whose unit is the blocking
    energy P_b S T); a plan's evaluated energy caps such a bound.
    """
    if bound is None or energy_j is None or bound <= energy_j:
        return bound
    tau = instance.deadline_s or max(float(t.min()) for t in instance.option_times)
    if bound <= energy_j + _MIP_TOL * energy_unit(instance, tau):
        return energy_j
    return bound


def _left(deadline: float | None) -> float | None:
    return None if deadline is None else deadline - time.perf_counter()


def relaxation_start(
    instance: PemInstance,
    deadline_s: float,
    stop_at: float | None,
    feasible: Callable[[tuple[int, ...]], bool] | None = None,
) -> tuple[float | None, tuple[int, ...] | None]:
    """Bound and rounded plan of the hull relaxation at the evaluator's deadline.

    ``(None, None)``: no plan meets the deadline. When the LP cannot be solved by
    ``stop_at``, there is no bound, and the plan is every computation at its fastest
    option (which meets the deadline whenever any plan does). ``feasible(plan)`` says
    whether the evaluator accepts a plan: a method passes the evaluations it scores its
    result from (:class:`~energyopt.pipeline.results.PlanEvaluations`), so that the plan
    is evaluated once; by default the evaluator is asked here.
    """
    if feasible is None:

        def feasible(plan: tuple[int, ...]) -> bool:
            return evaluate(instance, plan).feasible

    relax = HullRelaxation(instance)
    T = deadline_s * (1 + DEADLINE_RTOL)
    try:
        got = relax.solve(T, time_limit=_left(stop_at))
    except LpTimeLimit:
        fastest = fastest_choice(instance).choice
        return None, fastest if feasible(fastest) else None
    if got is None:
        return None, None
    tangent, durations = got
    # The relaxed deadline T adds P_b S (T - deadline) of blocking energy that the
    # evaluator does not count at the deadline itself.
    pbs = instance.p_blocking_w * instance.num_stages
    bound = tangent(T) + pbs * deadline_s
    left = _left(stop_at)
    plan = rounded_plan(instance, durations, deadline_s, time_limit=left)
    if plan is not None and not feasible(tuple(plan)):
        plan = None
    return bound, plan


def best_free_deadline(
    instance: PemInstance, time_limit: float | None = None
) -> tuple[float, float]:
    """Without a deadline: the ``T`` minimising the relaxation's energy bound, and that bound.

    The least energy over all iteration times is at least the minimum over ``T`` of
    the curve's bound (Eq. PEM-R7); that minimum is also where the rounded plan is
    aimed. The minimum is found at the breakpoints of the tangents' upper envelope
    (:func:`~energyopt.pipeline.relaxation.hull.least_energy_bound`, O(k log k) for k
    tangents), ties going to the smallest ``T``.
    """
    curve = bound_curve(instance, time_limit=time_limit)  # stopping early only loosens it
    return least_energy_bound(curve)


def solve_milp(
    instance: PemInstance,
    start: tuple[int, ...] | None,
    stop_at: float | None,
    *,
    formulation: str,
    time_windows: bool,
    rel_gap: float,
    threads: int | None,
    tee: bool = False,
    solver: str = "highs",
) -> tuple[SolverOutcome | None, tuple[int, ...] | None, float | None, float | None, str]:
    """The scaled MILP; returns (outcome, choice, solver objective (J), bound (J), note).

    ``outcome`` is ``None`` when no time was left to build and hand the model over.
    """
    T = instance.deadline_s
    options = sum(len(t) for t in instance.option_times)
    left = _left(stop_at)
    if left is not None and left < options * _SECONDS_PER_OPTION:
        return None, None, None, None, "no time left to build the MILP"
    fastest = max(float(t.min()) for t in instance.option_times)
    tau = T if T is not None and T > 0 else max(fastest, 1e-300)
    # Energy unit: the largest energy in play, the blocking energy P_b S tau included
    # (all option energies can be 0 while blocking costs energy; a unit of 1e-300 then
    # overflowed to an objective of -inf). Nothing in play at all: joules.
    eps = energy_unit(instance, tau)
    scaled = scaled_instance(instance, tau, eps)
    # With T = 1, HiGHS' absolute feasibility tolerance (1e-9) is the evaluator's
    # relative deadline tolerance: both accept the same plans (up to rounding).
    T_model = scaled.deadline_s
    build_tick = time.perf_counter()
    model = _milp.build_model(scaled, T_model, formulation, time_windows)
    built = time.perf_counter() - build_tick
    left = _left(stop_at)
    if left is not None and left < _HANDOFF_PER_BUILD * built:
        return None, None, None, None, "no time left to hand the MILP to HiGHS"
    start_values = None
    if start is not None:
        # Earliest starts of the start plan on the scaled DAG (the evaluator's recurrence,
        # not the evaluator: the plan is scored once, by the method's result).
        durations = [float(t[k]) for t, k in zip(scaled.option_times, start)]
        start_values = _milp.warm_start_values(
            model, scaled, start, CompactDag(scaled).earliest_start(durations)[0]
        )
    outcome = solve_pyomo_milp(
        model,
        solver=solver,
        time_limit=left,
        rel_gap=rel_gap,
        threads=threads,
        warm_start=start_values,
        tee=tee,
    )
    pbs = instance.p_blocking_w * instance.num_stages
    bound = None if outcome.bound is None else outcome.bound * eps
    choice, objective = None, None
    if outcome.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE):
        choice = _milp.read_choice(model, scaled)
        objective = None if outcome.objective is None else outcome.objective * eps
        if T is None and objective is not None:
            # Without a deadline T is a variable that an incumbent may leave above its
            # makespan; the energy counts to the makespan, so compare at the model's T.
            import pyomo.environ as pyo

            slack = pyo.value(model.T) - evaluate(scaled, choice, None).iteration_time_s
            objective -= pbs * slack * tau
    return outcome, choice, objective, bound, ""
