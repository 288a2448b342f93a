"""Capacity methods in the registry, every one scored by the evaluator (``evaluate``)."""

from __future__ import annotations

import time
from typing import Any

from energyopt.capacity import baselines as _baselines
from energyopt.capacity import bruteforce as _bf
from energyopt.capacity import milp as _milp
from energyopt.capacity import simcells
from energyopt.capacity import thetasearch as _thetasearch
from energyopt.capacity.evaluator import Assignment, CapacitySolution, evaluate
from energyopt.capacity.greedy import randomized_greedy
from energyopt.capacity.hooks import HOOKS
from energyopt.capacity.instance import CapacityInstance
from energyopt.capacity.scenario import POLICIES, CapacityScenario
from energyopt.core import methodoptions as O
from energyopt.core.errors import EvaluationMismatchError
from energyopt.core.highs import highs_version
from energyopt.core.milp_solvers import check_solver, solve_milp
from energyopt.core.registry import register
from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.timelimit import TimeBudget

FAMILY = HOOKS.name
#: Tolerance between a solver's objective and the evaluator's (see the hooks).
TOLERANCE = HOOKS.tolerance
#: ``highs`` skips the solver unless this many times its model-building time is left
#: (measured at N = 100, 0.3-0.9 s to build: Pyomo's hand-off to HiGHS took 2.3-3.5 s).
HANDOFF_FACTOR = 20.0
#: ... and gives the solver (hand-off included) this share of the time left: at N = 100
#: HiGHS ran 5-20 % past its own limit (0.1 s at 5.6 s, 3 s at 13.5 s).
SOLVER_SHARE = 0.75


def capacity_result(
    instance: CapacityInstance,
    method: str,
    assignment: Assignment | None,
    *,
    termination: TerminationReason,
    **details: Any,
) -> Result:
    """Score ``assignment`` with the evaluator, package it (:func:`energyopt.core.scoring.score`).

    ``details`` are :func:`energyopt.core.scoring.scored_result`'s keywords.
    """
    solution = None if assignment is None else CapacitySolution(tuple(assignment))
    return score(HOOKS, instance, method, solution, termination=termination, **details)


@register(
    FAMILY,
    "highs",
    exact=True,
    description="Capacity MILP (CAP-1..10) solved by HiGHS",
    options=(
        O.flag("warm_start", True, "start from Randomized Greedy's schedule"),
        O.number("rel_gap", 1e-9, "relative MIP gap to stop at", minimum=0.0, maximum=1.0),
        O.integer("threads", 1, "solver threads (null: default)", minimum=1, nullable=True),
        O.text("solver", "highs", "Pyomo MILP solver name", check_solver),
        O.flag("tee", False, "print the solver's log"),
    ),
)
def solve_highs(
    instance: CapacityInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    warm_start: bool,
    rel_gap: float,
    threads: int | None,
    solver: str,
    tee: bool,
) -> Result:
    """The exact linearization (formulations/capacity.md, CAP-1..CAP-10) with HiGHS' dual bound.

    ``solver`` picks another Pyomo MILP solver (:mod:`energyopt.core.milp_solvers`);
    ``tee`` prints the solver's log.
    """
    budget = TimeBudget(time_limit)
    ws, _, _ = randomized_greedy(instance, max_iterations=10, seed=0 if seed is None else seed)
    tick = time.perf_counter()
    model = _milp.build_model(instance)
    build_s = time.perf_counter() - tick
    left = budget.remaining()
    if left is not None and left < HANDOFF_FACTOR * build_s:
        # The hand-off and HiGHS' presolve would overrun the limit (HANDOFF_FACTOR).
        return capacity_result(
            instance,
            "highs",
            ws,
            termination=TerminationReason.TIME_LIMIT,
            solver=solver,
            message=(
                f"MILP not solved: {left:.1f} s left after building it in {build_s:.1f} s, "
                f"too little to hand it to the solver; incumbent from Randomized Greedy "
                f"(the 'patterns' method solves such points)"
            ),
            extra={"work_conserving": instance.work_conserving, "build_s": build_s},
        )
    start = _milp.warm_start_values(model, instance, ws) if warm_start else None
    outcome = solve_milp(
        model,
        solver=solver,
        time_limit=None if left is None else SOLVER_SHARE * left,
        rel_gap=rel_gap,
        threads=threads,
        warm_start=start,
        solver_options=_milp.HIGHS_OPTIONS if solver == "highs" else None,
        tee=tee,
    )
    assignment = None
    if outcome.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE):
        assignment = _milp.read_assignment(model, instance)
    proven = outcome.termination is TerminationReason.OPTIMAL and assignment is not None
    solver_objective = outcome.objective
    if assignment is not None and not proven and solver_objective is not None:
        # An incumbent short of optimality may carry q_j above max(0, .) (CAP-8), so the
        # solver's value may exceed f_OBJ of its schedule, never fall below it.
        ev = evaluate(instance, assignment)
        if ev.objective > solver_objective and not TOLERANCE.allows(solver_objective, ev.objective):
            raise EvaluationMismatchError(
                f"highs: incumbent {solver_objective!r} EUR below the evaluator's "
                f"{ev.objective!r} EUR for its schedule"
            )
        solver_objective = None
    return capacity_result(
        instance,
        "highs",
        assignment,
        termination=outcome.termination,
        proven_optimal=proven,
        bound=outcome.bound,
        solver_objective=solver_objective,
        solver=outcome.solver,
        solver_version=outcome.solver_version,
        message=outcome.message,
        extra={**outcome.extra, "work_conserving": instance.work_conserving},
    )


@register(
    FAMILY,
    "patterns",
    exact=True,
    description="theta enumeration + node-pattern MILPs (CAP-11..17) by HiGHS; paper scale",
    options=(
        O.number("rel_gap", 1e-6, "relative gap to stop at", minimum=0.0, below=1.0),
        O.integer("greedy_iterations", 100, "Randomized Greedy iterations", minimum=1),
    ),
)
def solve_patterns(
    instance: CapacityInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    rel_gap: float,
    greedy_iterations: int,
) -> Result:
    """Exact by theta enumeration (formulations/capacity.md, Section 8).

    For each value theta can take, a MILP over node classes and packing patterns
    (CAP-11..CAP-17); values are scanned upward and pruned by the LP bound of the
    relaxation P'(T), which bounds every larger value. The incumbent is the best
    schedule rebuilt from a model solution (or Randomized Greedy's), scored by the
    evaluator; the bound is proven for the values scanned and the rest.
    """
    out = _thetasearch.search(
        instance,
        time_limit=time_limit,
        seed=0 if seed is None else seed,
        rel_gap=rel_gap,
        greedy_iterations=greedy_iterations,
    )
    closed = out.complete and out.bound is not None
    return capacity_result(
        instance,
        "patterns",
        out.assignment,
        termination=TerminationReason.OPTIMAL if closed else TerminationReason.TIME_LIMIT,
        proven_optimal=closed,
        bound=out.bound,
        solver="highs",
        solver_version=highs_version(),
        extra={
            "thetas": out.thetas,
            "thetas_scanned": out.scanned,
            "milps": out.milps,
            "incumbent_from": out.source,
            "work_conserving": instance.work_conserving,
        },
    )


@register(FAMILY, "bruteforce", exact=True, description="Every assignment tried (tiny instances)")
def solve_bruteforce(
    instance: CapacityInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Exhaustive search; the optimum is its own proven bound."""
    assignment, cost = _bf.brute_force(instance)
    return capacity_result(
        instance,
        "bruteforce",
        assignment,
        termination=TerminationReason.OPTIMAL,
        proven_optimal=True,
        bound=cost,
        solver_objective=cost,
    )


@register(
    FAMILY,
    "randomized-greedy",
    exact=False,
    description="ANDREAS Randomized Greedy (Alg. 1), best f_OBJ of max_iterations",
    options=(
        O.integer("max_iterations", 1000, "iterations", minimum=1),
        O.number("swap_probability", 0.5, "probability of a swap", minimum=0.0, maximum=1.0),
    ),
)
def solve_randomized_greedy(
    instance: CapacityInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    max_iterations: int,
    swap_probability: float,
) -> Result:
    """ANDREAS Randomized Greedy; deterministic for a seed (``None`` means seed 0).

    Within ``time_limit`` (less a small reserve for scoring) no new iteration
    starts; the result then says ``time_limit`` and keeps the best schedule found.
    """
    # A small reserve of the limit for scoring.
    budget = TimeBudget(None if time_limit is None else 0.9 * float(time_limit))
    assignment, cost, trace = randomized_greedy(
        instance,
        max_iterations=max_iterations,
        seed=0 if seed is None else seed,
        swap_probability=swap_probability,
        budget=budget,
    )
    stopped = trace.stopped_at_deadline
    return capacity_result(
        instance,
        "randomized-greedy",
        assignment,
        termination=TerminationReason.TIME_LIMIT if stopped else TerminationReason.COMPLETED,
        solver_objective=cost,
        extra={"iterations": len(trace.best_per_iteration), "improvements": trace.improvements},
    )


def _baseline(policy: str) -> Any:
    def run(
        instance: CapacityInstance, *, time_limit: float | None = None, seed: int | None = None
    ) -> Result:
        return capacity_result(
            instance,
            policy,
            _baselines.first_principle(instance, policy),
            termination=TerminationReason.COMPLETED,
        )

    run.__name__ = f"solve_{policy}"
    return run


for _policy, _what in (
    ("fifo", "First In First Out: waiting jobs by arrival, running jobs untouched"),
    ("edf", "Earliest Deadline First: waiting jobs by due date, running jobs untouched"),
    ("priority", "Priority scheduling: waiting jobs by tardiness weight, running jobs untouched"),
):
    register(FAMILY, _policy, exact=False, description=_what)(_baseline(_policy))


# -- simulation scenarios (CapacityScenario): whole job streams, issue 25 -----------------


def _online(method: str) -> Any:
    def run(
        instance: CapacityScenario, *, time_limit: float | None = None, seed: int | None = None
    ) -> Result:
        return simcells.run_policy(HOOKS, instance, method, seed, time_limit)

    run.__name__ = "solve_" + method.replace("-", "_")
    return run


for _method, _policy in POLICIES.items():
    register(
        FAMILY,
        _method,
        exact=False,
        description=f"Simulation: {_policy} at every rescheduling point of a whole job stream",
    )(_online(_method))


@register(
    FAMILY,
    "offline-bound",
    exact=False,
    description="Simulation: offline relaxation bound on the cumulative cost (no schedule)",
)
def solve_offline_bound(
    instance: CapacityScenario, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Each job alone, idle power dropped (CAP-B1..CAP-B3), summed over the stream."""
    return simcells.bound_result(HOOKS, instance)
