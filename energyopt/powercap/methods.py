"""Powercap methods in the registry, every one scored by the evaluator."""

from __future__ import annotations

from typing import Any

from energyopt.core import methodoptions as O
from energyopt.core.highs import highs_version
from energyopt.core.milp_solvers import check_solver, solve_milp
from energyopt.core.registry import register
from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.timelimit import TimeBudget
from energyopt.powercap import milp as _milp
from energyopt.powercap import simcells
from energyopt.powercap.algorithm1 import printed_greedy
from energyopt.powercap.bruteforce import brute_force
from energyopt.powercap.evaluator import PowercapSolution
from energyopt.powercap.greedy import GreedyOutcome, marginal_return_greedy
from energyopt.powercap.hooks import HOOKS
from energyopt.powercap.instance import PowercapInstance
from energyopt.powercap.scenario import PowercapScenario

FAMILY = HOOKS.name
#: Tolerance between a solver's objective and the evaluator's (see the hooks).
TOLERANCE = HOOKS.tolerance


def powercap_result(
    instance: PowercapInstance,
    method: str,
    config: tuple[tuple[int, int], ...] | None,
    *,
    termination: TerminationReason,
    **details: Any,
) -> Result:
    """Score ``config`` with the evaluator and package it (:func:`energyopt.core.scoring.score`).

    ``details`` are :func:`energyopt.core.scoring.scored_result`'s keywords.
    """
    solution = None if config is None else PowercapSolution(tuple(config))
    return score(HOOKS, instance, method, solution, termination=termination, **details)


#: Seconds to build the event MILP per job (about 3 ms measured at 640 jobs, doubled):
#: a smaller time limit returns the greedy warm start instead of overrunning.
BUILD_S_PER_JOB = 6e-3
#: From this many jobs on, HiGHS runs without presolve (see ``solve_highs``).
PRESOLVE_OFF_JOBS = 256


@register(
    FAMILY,
    "highs",
    exact=True,
    description="Event MILP (Pyomo) solved by HiGHS",
    options=(
        O.flag("warm_start", True, "start from the marginal-return greedy"),
        O.number("rel_gap", 1e-9, "relative MIP gap to stop at", minimum=0.0, maximum=1.0),
        O.integer("threads", None, "solver threads (null: default)", minimum=1, nullable=True),
        O.text("solver", "highs", "Pyomo MILP solver name", check_solver),
        O.flag("tee", False, "print the solver's log"),
    ),
)
def solve_highs(
    instance: PowercapInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    warm_start: bool,
    rel_gap: float,
    threads: int | None,
    solver: str,
    tee: bool,
) -> Result:
    """Event MILP (PC-17..PC-21), greedy warm start, HiGHS MIP dual bound as the bound.

    ``solver`` picks another Pyomo MILP solver (:mod:`energyopt.core.milp_solvers`);
    ``tee`` prints the solver's log.
    """
    budget = TimeBudget(time_limit)
    greedy = marginal_return_greedy(instance) if warm_start else None
    remaining = budget.remaining(floor=0.0)
    too_big = remaining is not None and remaining < BUILD_S_PER_JOB * len(instance.jobs)
    if not too_big:
        model = _milp.build_model(instance)
        remaining = budget.remaining(floor=0.0)
    if (too_big or (remaining is not None and remaining <= 0.05)) and greedy is not None:
        # Building the model used the time: report the warm start, without a bound.
        return powercap_result(
            instance,
            "highs",
            greedy.config,
            termination=TerminationReason.TIME_LIMIT,
            solver="highs",
            solver_version=highs_version(),
            message="time limit reached while building the MILP; the plan is the warm start",
        )
    start = None
    if greedy is not None and greedy.config is not None:
        start = _milp.warm_start_values(model, instance, greedy.config)
    remaining = budget.remaining()
    # HiGHS' presolve checks the time limit only between its passes: at 640 jobs one
    # pass took 4 s against a 1.7 s remainder, while without presolve the root LP
    # gives a bound (and a 0.1 % gap) inside the limit.
    big = len(instance.jobs) >= PRESOLVE_OFF_JOBS
    out = solve_milp(
        model,
        solver=solver,
        time_limit=remaining,
        rel_gap=rel_gap,
        threads=threads,
        warm_start=start,
        solver_options={"presolve": "off"} if big and solver == "highs" else None,
        tee=tee,
    )
    config = None
    if out.status in (SolutionStatus.OPTIMAL, SolutionStatus.FEASIBLE):
        config = _milp.read_config(model, instance)
    proven = out.termination is TerminationReason.OPTIMAL and config is not None
    return powercap_result(
        instance,
        "highs",
        config,
        termination=out.termination,
        proven_optimal=proven,
        bound=out.bound,
        solver_objective=out.objective,
        solver=out.solver,
        solver_version=out.solver_version,
        message=out.message
        or (
            "no configuration meets the power cap" if out.termination.value == "infeasible" else ""
        ),
        extra=dict(out.extra),
    )


def greedy_result(instance: PowercapInstance, method: str, g: GreedyOutcome) -> Result:
    """A greedy's decision as a scored result (infeasible when its start breaks the cap)."""
    if g.config is None:
        return powercap_result(
            instance, method, None, termination=TerminationReason.INFEASIBLE, message=g.message
        )
    return powercap_result(
        instance,
        method,
        g.config,
        termination=TerminationReason.COMPLETED,
        message=g.message,
        extra={"gpu_steps": g.gpu_steps, "clock_steps": g.clock_steps},
    )


@register(
    FAMILY, "greedy", exact=False, description="PowerFlow marginal-return greedy (Algorithm 1)"
)
def solve_greedy(
    instance: PowercapInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Algorithm 1 (Eqs. 20-21); deterministic. Infeasible when the minimum breaks the cap."""
    return greedy_result(instance, "greedy", marginal_return_greedy(instance))


@register(
    FAMILY,
    "greedy-printed",
    exact=False,
    description="PowerFlow Algorithm 1 as printed: one GPU per step, stored priorities",
)
def solve_greedy_printed(
    instance: PowercapInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Algorithm 1 as printed (:mod:`energyopt.powercap.algorithm1`); deterministic."""
    return greedy_result(instance, "greedy-printed", printed_greedy(instance))


@register(FAMILY, "bruteforce", exact=True, description="Every combination (tiny events)")
def solve_bruteforce(
    instance: PowercapInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Exhaustive enumeration scored by the evaluator; exact by construction."""
    config, value = brute_force(instance)
    if config is None:
        return powercap_result(
            instance,
            "bruteforce",
            None,
            termination=TerminationReason.INFEASIBLE,
            message="no combination meets the GPU count and the power cap",
        )
    return powercap_result(
        instance,
        "bruteforce",
        config,
        termination=TerminationReason.OPTIMAL,
        proven_optimal=True,
        bound=value,
        solver_objective=value,
    )


# -- simulation scenarios (PowercapScenario): whole traces, issue 25 ----------------------


@register(
    FAMILY,
    "powerflow",
    exact=False,
    description="Simulation: PowerFlow (Algorithm 1 at every event) over a whole trace",
)
def solve_powerflow(
    instance: PowercapScenario, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """The event simulator with PowerFlow's greedy at every event; mean JCT of the trace."""
    return simcells.run_policy(HOOKS, instance, "powerflow", time_limit)


@register(
    FAMILY,
    "powerflow-printed",
    exact=False,
    description="Simulation: PowerFlow with Algorithm 1 as printed at every event",
)
def solve_powerflow_printed(
    instance: PowercapScenario, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """The event simulator with Algorithm 1 as printed at every event."""
    return simcells.run_policy(HOOKS, instance, "powerflow-printed", time_limit)


@register(
    FAMILY,
    "offline-bound",
    exact=False,
    description="Simulation: offline time-indexed MILP bound on the mean JCT (no schedule)",
)
def solve_offline_bound(
    instance: PowercapScenario, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """HiGHS' dual bound of the time-indexed MILP (PC-22..PC-28, PC-25') on the trace."""
    return simcells.bound_result(HOOKS, instance, time_limit)
