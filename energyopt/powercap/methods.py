"""Powercap methods in the registry, every one scored by the evaluator."""

from __future__ import annotations

import time
from typing import Any

from energyopt.core.highs import solve_with_highs
from energyopt.core.registry import register
from energyopt.core.result import Result
from energyopt.core.scoring import Scored, Tolerance, scored_result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.powercap import milp as _milp
from energyopt.powercap.bruteforce import brute_force
from energyopt.powercap.evaluator import PowercapSolution, evaluate
from energyopt.powercap.greedy import marginal_return_greedy
from energyopt.powercap.instance import PowercapInstance

FAMILY = "powercap"
#: Relative tolerance between a solver's objective and the evaluator's.
TOLERANCE = Tolerance(rtol=1e-6, atol=1e-6, unit="s")


def powercap_result(
    instance: PowercapInstance,
    method: str,
    config: tuple[tuple[int, int], ...] | None,
    *,
    termination: TerminationReason,
    **details: Any,
) -> Result:
    """Score ``config`` with the evaluator and package it as a checked :class:`Result`.

    A solution the evaluator rejects, a solver objective that disagrees with it, or
    a bound above the objective raise :class:`EvaluationMismatchError` (bugs).

    ``details`` are :func:`energyopt.core.scoring.scored_result`'s keywords
    (``proven_optimal``, ``bound``, ``solver_objective``, ``solver``,
    ``solver_version``, ``message``, ``extra``).
    """
    solution = scored = None
    if config is not None:
        solution = PowercapSolution(config)
        ev = evaluate(instance, config)
        scored = Scored(
            ev.mean_jct_s,
            ev.feasible,
            tuple(ev.violations),
            {
                "power_w": ev.power_w,
                "power_cap_w": ev.power_cap_w,
                "gpus_used": ev.gpus_used,
                "powered_nodes": ev.powered_nodes,
            },
        )
    return scored_result(
        family=FAMILY,
        instance_id=instance.instance_id,
        method=method,
        solution=solution,
        scored=scored,
        termination=termination,
        tolerance=TOLERANCE,
        **details,
        positive_objective=True,
    )


@register(FAMILY, "highs", exact=True, description="Event MILP (Pyomo) solved by HiGHS")
def solve_highs(
    instance: PowercapInstance,
    *,
    time_limit: float | None = None,
    seed: int | None = None,
    warm_start: bool = True,
    rel_gap: float = 1e-9,
    threads: int | None = None,
) -> Result:
    """Event MILP (PC-17..PC-21), greedy warm start, HiGHS MIP dual bound as the bound."""
    tick = time.perf_counter()
    model = _milp.build_model(instance)
    start = None
    if warm_start:
        g = marginal_return_greedy(instance)
        if g.config is not None:
            start = _milp.warm_start_values(model, instance, g.config)
    remaining = None if time_limit is None else max(0.05, time_limit - (time.perf_counter() - tick))
    out = solve_with_highs(
        model, time_limit=remaining, rel_gap=rel_gap, threads=threads, warm_start=start
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


@register(
    FAMILY, "greedy", exact=False, description="PowerFlow marginal-return greedy (Algorithm 1)"
)
def solve_greedy(
    instance: PowercapInstance, *, time_limit: float | None = None, seed: int | None = None
) -> Result:
    """Algorithm 1 (Eqs. 20-21); deterministic. Infeasible when the minimum breaks the cap."""
    g = marginal_return_greedy(instance)
    if g.config is None:
        return powercap_result(
            instance, "greedy", None, termination=TerminationReason.INFEASIBLE, message=g.message
        )
    return powercap_result(
        instance,
        "greedy",
        g.config,
        termination=TerminationReason.COMPLETED,
        extra={"gpu_steps": g.gpu_steps, "clock_steps": g.clock_steps},
    )


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
