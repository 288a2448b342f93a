"""Every PEM method in the registry, each scored by :func:`energyopt.pipeline.evaluator.evaluate`.

This is the one module of the family that registers methods; the algorithm
modules (:mod:`~energyopt.pipeline.crawl.perseus`, :mod:`~energyopt.pipeline.baselines.envpipe`,
:mod:`~energyopt.pipeline.baselines.zeus`, :mod:`~energyopt.pipeline.exact.frontier`) know
nothing of the registry.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, NamedTuple

from energyopt.core import methodoptions as O
from energyopt.core.gap import gap
from energyopt.core.highs import highs_version
from energyopt.core.milp_solvers import check_solver
from energyopt.core.outcome import SolverOutcome
from energyopt.core.registry import register, solve
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.timelimit import TimeBudget
from energyopt.pipeline.baselines.envpipe import PLANNERS, RANKINGS, VALLEYS, envpipe_result
from energyopt.pipeline.baselines.zeus import zeus_sweep
from energyopt.pipeline.crawl.perseus import CRAWLS, perseus_frontier
from energyopt.pipeline.evaluator import PemEvaluation, evaluate, fastest_choice
from energyopt.pipeline.exact import bruteforce as _bf
from energyopt.pipeline.exact import cpsat as _cpsat
from energyopt.pipeline.exact import solve as _exact
from energyopt.pipeline.exact.frontier import exact_frontier
from energyopt.pipeline.exact.lns import neighbourhood_search
from energyopt.pipeline.exact.milp import FORMULATIONS
from energyopt.pipeline.instance import FilterReport, PemInstance
from energyopt.pipeline.results import FAMILY, PlanEvaluations, pem_result


def _no_plan(instance: PemInstance, method: str) -> Result:
    """The ``infeasible`` result when even the fastest options miss the deadline."""
    return pem_result(
        instance,
        method,
        None,
        termination=TerminationReason.INFEASIBLE,
        message="no plan meets the deadline (even with every computation at its fastest)",
    )


_WARM = O.flag("warm_start", True, "start from the hull relaxation's rounded plan")
_FILTER = O.flag("filter_dominated", True, "drop options no better in time or energy")
_TEE = O.flag("tee", False, "print the solver's log")


@register(
    FAMILY,
    "highs",
    exact=True,
    description="PEM MILP (Pyomo) solved by HiGHS",
    options=(
        O.choice("formulation", "incremental", FORMULATIONS, "MILP formulation"),
        _WARM,
        _FILTER,
        O.flag("time_windows", True, "drop options outside the time windows (Eq. PEM-7)"),
        O.number("rel_gap", 1e-6, "relative MIP gap to stop at", minimum=0.0, maximum=1.0),
        O.integer("threads", None, "solver threads (null: default)", minimum=1, nullable=True),
        _TEE,
        O.text("solver", "highs", "Pyomo MILP solver name", check_solver),
    ),
)
def solve_highs(
    instance: PemInstance,
    *,
    time_limit: float | None,
    seed: int | None,
    formulation: str,
    warm_start: bool,
    filter_dominated: bool,
    time_windows: bool,
    rel_gap: float,
    threads: int | None,
    tee: bool,
    solver: str,
) -> Result:
    """PEM MILP (Eqs. PEM-1..7) by HiGHS, started from the hull relaxation (Eqs. PEM-R1..R6).

    ``solver`` picks another Pyomo MILP solver (:mod:`energyopt.core.milp_solvers`).

    The bound is the larger of HiGHS' MIP dual bound and the relaxation's; the
    plan is the better of HiGHS' incumbent and the relaxation's rounded plan. The
    whole call, model building included, stays within ``time_limit``.
    """
    budget = TimeBudget(time_limit)
    stop_at = budget.stop_at
    work, report = instance.filter_dominated() if filter_dominated else (instance, None)
    evals = PlanEvaluations(instance, report)
    T = instance.deadline_s
    lp_bound, start = None, None
    if T is not None:
        lp_bound, start = _exact.relaxation_start(work, T, stop_at, evals.feasible)
        if lp_bound is None and start is None:
            return _no_plan(instance, "highs")
    else:
        # No deadline: the relaxation's best iteration time gives a bound on the least
        # energy over all times (Eq. PEM-R7) and a plan, so a short limit still has both.
        left = None if stop_at is None else 0.3 * (stop_at - time.perf_counter())
        T_star, lp_bound = _exact.best_free_deadline(work, time_limit=left)
        _, start = _exact.relaxation_start(work, T_star, stop_at, evals.feasible)
    outcome, choice, solver_objective, milp_bound, note = _exact.solve_milp(
        work,
        start if warm_start else None,
        stop_at,
        formulation=formulation,
        time_windows=time_windows,
        rel_gap=rel_gap,
        threads=threads,
        tee=tee,
        solver=solver,
    )
    choice, solver_objective, milp_plan_rejected, note = _better_plan(
        evals, choice, solver_objective, start, note
    )
    energy = None if choice is None else evals(choice).energy_j
    bound = _best_bound(work, (lp_bound, milp_bound), energy)
    outcome, termination = _milp_termination(outcome, milp_plan_rejected, choice)
    extra = {
        "formulation": formulation,
        "options_dropped_by_filter": report.num_dropped if report else 0,
        "relaxation_bound_j": lp_bound,
        "milp_bound_j": milp_bound,
    }
    proven = energy is not None and (
        termination is TerminationReason.OPTIMAL or gap_closed_at(energy, bound, rel_gap)
    )
    if proven:
        termination = TerminationReason.OPTIMAL
    return pem_result(
        instance,
        "highs",
        None if choice is None else evals.original(choice),
        evaluation=None if choice is None else evals(choice),
        termination=termination,
        proven_optimal=proven,
        bound=bound,
        solver_objective=solver_objective,
        solver=outcome.solver,
        solver_version=outcome.solver_version,
        message="; ".join(m for m in (outcome.message, note) if m),
        extra={**outcome.extra, **extra},
    )


def _better_plan(
    evals: PlanEvaluations,
    choice: tuple[int, ...] | None,
    solver_objective: float | None,
    start: tuple[int, ...] | None,
    note: str,
) -> tuple[tuple[int, ...] | None, float | None, bool, str]:
    """The better of HiGHS' plan and the relaxation's rounded plan ``start``.

    A HiGHS plan the evaluator rejects is dropped (and said so in the note).
    Returns the plan, HiGHS' objective when the plan is HiGHS', whether HiGHS' plan
    was rejected, and the note.
    """
    rejected = choice is not None and not evals(choice).feasible
    if rejected:
        choice, solver_objective = None, None
        note = "HiGHS' plan misses the deadline beyond the evaluator's tolerance; not used"
    if start is not None and (choice is None or evals(start).energy_j < evals(choice).energy_j):
        choice, solver_objective = start, None
    return choice, solver_objective, rejected, note


def _milp_termination(
    outcome: SolverOutcome | None, rejected: bool, choice: tuple[int, ...] | None
) -> tuple[SolverOutcome, TerminationReason]:
    """HiGHS' outcome and termination; no outcome (no time left to hand it the model)
    is a time limit, and an optimum the evaluator rejected keeps only its bound."""
    if outcome is None:
        outcome = SolverOutcome(
            TerminationReason.TIME_LIMIT,
            SolutionStatus.NONE,
            None,
            None,
            0.0,
            "highs",
            highs_version(),
        )
    termination = outcome.termination
    if rejected and termination is TerminationReason.OPTIMAL:
        # HiGHS' optimum is not the evaluator's; only the bound is kept.
        termination = TerminationReason.COMPLETED if choice else TerminationReason.UNKNOWN
    return outcome, termination


@register(
    FAMILY,
    "relaxation-rounding",
    exact=False,
    description="Convex-hull LP relaxation bound (Eqs. PEM-R1..R6) and its rounded plan",
)
def solve_relaxation_rounding(
    instance: PemInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """The hull relaxation's proven bound and its plan rounded down and improved on slack.

    Without a deadline the deadline is the one that minimises the relaxation's energy
    bound (Eq. PEM-R7), and the bound is that minimum.
    """
    budget = TimeBudget(time_limit)
    stop_at = budget.stop_at
    # Most of the limit for the bound curve; the rest for the LP and the rounding.
    start = _relaxed_start(instance, stop_at, curve_share=0.7)
    if start is None:
        return _no_plan(instance, "relaxation-rounding")
    stopped = budget.expired()
    return start.result(
        instance,
        "relaxation-rounding",
        start.plan,
        termination=TerminationReason.TIME_LIMIT if stopped else TerminationReason.COMPLETED,
        solver="highs",
        solver_version=highs_version(),
        extra={"relaxation_deadline_s": start.at_T.deadline_s},
    )


class _RelaxedStart(NamedTuple):
    """The hull relaxation at a method's deadline: bound and rounded plan (Sec. 7)."""

    work: PemInstance  # dominated options filtered out
    at_T: PemInstance  # ``work`` at the deadline T the relaxation was solved at
    report: FilterReport
    bound: float | None  # None: the LP was cut off by the time limit
    plan: tuple[int, ...] | None
    evals: PlanEvaluations  # of ``work``'s plans, on the original instance

    def capped_bound(self, evaluation: PemEvaluation | None) -> float | None:
        """The bound, capped at the plan's energy (its ``evaluation``) within HiGHS'
        tolerance."""
        if evaluation is None or self.bound is None:
            return self.bound
        return _exact.within_solver_tolerance(self.at_T, self.bound, evaluation.energy_j)

    def result(
        self, instance: PemInstance, method: str, plan: tuple[int, ...] | None, **details: Any
    ) -> Result:
        """``plan`` (in ``work``'s indices) as ``method``'s result, scored and capped from
        one evaluation."""
        evals = self.evals
        ev = None if plan is None else evals(plan)
        original = None if plan is None else evals.original(plan)
        return pem_result(
            instance, method, original, evaluation=ev, bound=self.capped_bound(ev), **details
        )


def _relaxed_start(
    instance: PemInstance, stop_at: float | None, curve_share: float
) -> _RelaxedStart | None:
    """Filter, pick T, and solve the relaxation there; ``None`` when no plan meets T.

    Without a deadline, T minimises the relaxation's bound over all deadlines (Eq.
    PEM-R7), found with ``curve_share`` of the time left, and the bound is that minimum.
    """
    work, report = instance.filter_dominated()
    T, bound = instance.deadline_s, None
    if T is None:
        left = None if stop_at is None else curve_share * (stop_at - time.perf_counter())
        T, bound = _exact.best_free_deadline(work, time_limit=left)
    evals = PlanEvaluations(instance, report)
    lp_bound, plan = _exact.relaxation_start(work, T, stop_at, evals.feasible)
    if lp_bound is None and plan is None:
        return None
    bound = lp_bound if bound is None else bound
    return _RelaxedStart(work, replace(work, deadline_s=T), report, bound, plan, evals)


@register(
    FAMILY,
    "lns",
    exact=False,
    description="Large-neighbourhood search: sub-MILPs around the relaxation's rounded plan",
    options=(
        O.number("window", 0.15, "first window, share of the deadline", above=0.0, maximum=1.0),
        O.number("sub_time_limit", 3.0, "seconds per sub-MILP", above=0.0),
        O.integer("reach", 2, "option places a move may go (null: all)", minimum=0, nullable=True),
        O.integer("max_idle", 60, "sub-MILPs without improvement before widening", minimum=1),
    ),
)
def solve_lns(
    instance: PemInstance,
    *,
    time_limit: float | None,
    seed: int | None,
    window: float,
    sub_time_limit: float,
    reach: int | None,
    max_idle: int,
) -> Result:
    """The relaxation's rounded plan improved by sub-MILPs (formulations/pem.md, Sec. 8).

    ``window`` is the first neighbourhood's width as a fraction of the deadline;
    ``reach`` limits a freed computation to options within that many places of its
    incumbent option in time order (``None``: all options), widened by one after
    ``max_idle`` sub-MILPs in a row without improvement; with all options open, such
    a streak doubles ``sub_time_limit`` if a sub-MILP of it was cut off, and ends the
    search if all were solved to optimality; the search ends at ``time_limit``. The
    bound is the relaxation's (Eq. PEM-R6). Without a deadline the search runs at
    the deadline that minimises the relaxation's bound (Eq. PEM-R7).
    """
    budget = TimeBudget(time_limit)
    stop_at = budget.stop_at
    start = _relaxed_start(instance, stop_at, curve_share=0.3)
    if start is None:
        return _no_plan(instance, "lns")
    at_T, plan = start.at_T, start.plan
    if plan is None and evaluate(at_T, fastest_choice(at_T)).feasible:
        plan = fastest_choice(at_T).choice
    stats = None
    if plan is not None:
        plan, stats = neighbourhood_search(
            at_T,
            plan,
            time_limit=budget.remaining(floor=0.0),
            seed=seed,
            window=window,
            sub_time_limit=sub_time_limit,
            reach=reach,
            max_idle=max_idle,
        )
    stopped = stop_at is not None and time.perf_counter() >= stop_at - 0.05
    extra = {"relaxation_deadline_s": at_T.deadline_s}
    if stats is not None:
        extra.update(
            sub_milps=stats.sub_milps,
            improvements=stats.improvements,
            sub_milps_solved=stats.solved_to_optimality,
            final_window=stats.window,
            final_reach=stats.reach,
            final_sub_time_limit_s=stats.sub_time_limit,
        )
    return start.result(
        instance,
        "lns",
        plan,
        termination=TerminationReason.TIME_LIMIT if stopped else TerminationReason.COMPLETED,
        solver="highs",
        solver_version=highs_version(),
        extra=extra,
    )


def _best_bound(
    instance: PemInstance, bounds: tuple[float | None, ...], energy: float | None
) -> float | None:
    """The largest of ``bounds``, capped at the plan's ``energy`` (evaluated) within HiGHS'
    tolerance."""
    known = [b for b in bounds if b is not None]
    bound = max(known) if known else None
    if energy is None:
        return bound
    return _exact.within_solver_tolerance(instance, bound, energy)


def gap_closed_at(energy: float, bound: float | None, rel_gap: float) -> bool:
    """Whether ``bound`` proves a plan of (evaluated) ``energy`` optimal within ``rel_gap``."""
    g = gap(energy, bound)
    return g is not None and g <= rel_gap


@register(
    FAMILY,
    "cpsat",
    exact=True,
    description="PEM in CP-SAT, times scaled to integer ticks",
    options=(
        O.number("resolution_s", 1e-4, "seconds per integer tick", minimum=1e-9),
        O.number("energy_unit_j", 1e-3, "joules per integer energy unit", minimum=1e-9),
        O.integer("workers", None, "CP-SAT workers (null: default)", minimum=1, nullable=True),
        _WARM,
        _FILTER,
        O.flag("bound_model", True, "also solve the model with times rounded down, for a bound"),
        _TEE,
    ),
)
def solve_cpsat(
    instance: PemInstance,
    *,
    time_limit: float | None,
    seed: int | None,
    resolution_s: float,
    energy_unit_j: float,
    workers: int | None,
    warm_start: bool,
    filter_dominated: bool,
    bound_model: bool,
    tee: bool,
) -> Result:
    """PEM in CP-SAT (formulations/pem.md, Sec. 4): times rounded up (primal), down (bound).

    With a deadline (and ``warm_start``) the hull relaxation (Sec. 7) runs first: its
    rounded plan is CP-SAT's hint, and its bound joins CP-SAT's (the larger is
    reported). When the rounded-up times miss a deadline that the exact times meet,
    the resolution is refined tenfold while time is left (down to 1e8 ticks per
    deadline); if that does not find a plan either, the relaxation's rounded plan
    is reported. No CP-SAT model is built when the time left cannot cover its build
    (estimated from the number of options): the relaxation's plan and bound are
    reported with termination ``time_limit``, which is also the termination whenever
    the limit stopped the method before CP-SAT proved optimality. The message says
    what was done. ``tee`` prints CP-SAT's search log.
    """
    budget = TimeBudget(time_limit)
    stop_at = budget.stop_at
    work, report = instance.filter_dominated() if filter_dominated else (instance, None)
    evals = PlanEvaluations(instance, report)
    T = instance.deadline_s
    lp_bound, hint = None, None
    if warm_start and T is not None:
        # Without a deadline no relaxation runs: its bound at one deadline would not
        # bound the energy at other iteration times.
        lp_bound, hint = _exact.relaxation_start(work, T, stop_at, evals.feasible)
    run = _cpsat.solve_refining(
        work,
        T,
        stop_at=stop_at,
        seed=seed,
        resolution_s=resolution_s,
        energy_unit_j=energy_unit_j,
        workers=workers,
        hint=hint,
        bound_model=bound_model,
        log=tee,
    )
    choice, termination, notes = _cpsat.reported_plan(work, run, hint, evals.energy)
    cp_bound = None if run.solve is None else run.solve.bound
    bound = _cpsat.best_bound(work, cp_bound, lp_bound, choice, evals.energy)
    outcome = _cpsat.run_outcome(run)
    res = pem_result(
        instance,
        "cpsat",
        None if choice is None else evals.original(choice),
        evaluation=None if choice is None else evals(choice),
        termination=termination,
        bound=bound,
        solver=outcome.solver,
        solver_version=outcome.solver_version,
        message="; ".join([m for m in (outcome.message,) if m] + notes),
        extra={
            **outcome.extra,
            "resolution_s": run.resolution_s,
            "energy_unit_j": energy_unit_j,
            "relaxation_bound_j": lp_bound,
            "cpsat_bound_j": cp_bound,
        },
    )
    return _cpsat.pem_status(res, stopped=run.stopped)


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


register(
    FAMILY,
    "exact-frontier",
    exact=True,
    frontier=True,
    description="Exact frontier: epsilon-constraint over deadlines",
    options=(
        O.choice("solver", "highs", ("highs", "cpsat"), "exact method solving each point"),
        O.integer("max_points", 500, "stop after this many breakpoints", minimum=1),
    ),
    fixed={"solve_point": solve},
    passes_options_to="solver",
)(exact_frontier)

#: The crawl's options shared by the Perseus methods (:func:`.perseus_frontier`).
_TAU = O.number("tau_s", 1e-3, "the crawl's unit time, in seconds", minimum=1e-6)
_MAX_STEPS = O.integer("max_steps", None, "steps per crawl (null: all)", minimum=0, nullable=True)
_PROGRESS = O.MethodOption("progress", bool, None, "progress bar (null: if slow)", nullable=True)
_VERIFY = O.flag("verify", True, "score the frontier's plans with the evaluator")
_ROUNDING = O.choice("rounding", "down", ("down", "up", "both"), "measured times to the grid")
_CERTIFY = O.flag("certify", False, "every frontier point gets the relaxation's bound")
_POLISH = O.integer("polish", 0, "rounded relaxation plans added (0: none)", minimum=0)

register(
    FAMILY,
    "perseus",
    exact=False,
    frontier=True,
    description="Perseus frontier crawl (min-cut, Algs. 1-3) on the exact convex hull",
    options=(
        _TAU,
        O.choice("cost_model", "hull", ("hull", "exponential", "both"), "the crawl's cost model"),
        O.choice("crawl", "exact", CRAWLS, "exact hull crawl, or Algorithm 1 on the grid"),
        _MAX_STEPS,
        _PROGRESS,
        _VERIFY,
        _ROUNDING,
        _CERTIFY,
        _POLISH,
        O.flag("repair", True, "add the two end repairs' plans"),
    ),
    fixed={"method": "perseus"},
)(perseus_frontier)

register(
    FAMILY,
    "perseus-exponential",
    exact=False,
    frontier=True,
    description="Perseus frontier crawl with the paper's exponential fit a*exp(b*t)+c",
    options=(_TAU, _MAX_STEPS, _PROGRESS, _VERIFY, _ROUNDING, _CERTIFY, _POLISH),
    fixed={"method": "perseus-exponential", "cost_model": "exponential"},
)(perseus_frontier)

# Algorithms 1-3 and Sec. 4.3 as printed: exponential model (Appendix D), one unit step
# of tau per cut, Algorithm 3's two maximum flows, planned durations rounded up from the
# measured times, no finishing phase.
register(
    FAMILY,
    "perseus-printed",
    exact=False,
    frontier=True,
    description="Perseus crawl as printed: exponential fit, unit steps of tau, Algorithm 3",
    options=(_TAU, _MAX_STEPS, _PROGRESS, _VERIFY),
    fixed={
        "method": "perseus-printed",
        "cost_model": "exponential",
        "crawl": "grid",
        "jump": False,
        "rounding": "up",
        "flow": "algorithm3",
        "finish": False,
    },
)(perseus_frontier)

for _name, _text in (
    ("zeus-global", "ZeusGlobal: one clock swept"),
    ("zeus-per-stage", "ZeusPerStage: per-stage clocks balancing forward time, swept"),
    ("zeus-global-power", "ZeusGlobal as printed: one power limit swept (emulated)"),
    ("zeus-per-stage-power", "ZeusPerStage as printed: per-stage power limits (emulated)"),
):
    _zeus = register(FAMILY, _name, exact=False, frontier=True, description=_text,
                     fixed={"method": _name})  # fmt: skip
    _zeus(zeus_sweep)

_ENVPIPE_OPTIONS = (
    O.choice(
        "planner",
        "authors",
        PLANNERS,
        "EnvPipe's own code (authors), Algorithms 1-2 as printed (paper), or as printed "
        "ranked by measured time (improved)",
    ),
    O.MethodOption(
        "ranking",
        str,
        None,
        "'maximum clock' by measured time or by MHz; null: the planner's own order",
        choices=RANKINGS,
        nullable=True,
    ),
    O.choice("valley", "energy", VALLEYS, "where planning starts off the envelope"),
)
register(
    FAMILY,
    "envpipe",
    exact=False,
    description="EnvPipe envelope planner, balanced",
    options=_ENVPIPE_OPTIONS,
    fixed={"policy": "balanced", "method": "envpipe"},
)(envpipe_result)
register(
    FAMILY,
    "envpipe-greedy",
    exact=False,
    description="EnvPipe envelope planner, greedy",
    options=_ENVPIPE_OPTIONS,
    fixed={"policy": "greedy", "method": "envpipe-greedy"},
)(envpipe_result)
