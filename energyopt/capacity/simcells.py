"""The methods of a :class:`~energyopt.capacity.scenario.CapacityScenario`: online
policies run by the simulator at every rescheduling point, and the offline bound.

A policy's result is the run's rescheduling decisions, scored by
:func:`~energyopt.capacity.scenario.evaluate_decisions` (cumulative energy and
tardiness cost of the whole trace). The offline bound
(:func:`~energyopt.capacity.offline.offline_bound`) has no schedule, only the bound.
"""

from __future__ import annotations

import time
from typing import Any

from energyopt.capacity.offline import offline_bound
from energyopt.capacity.scenario import POLICIES, CapacityScenario, Decisions
from energyopt.capacity.simulator import simulate
from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import TerminationReason

#: Rescheduling points per job (an arrival and an end), to share a time limit among calls.
POINTS_PER_JOB = 2


class _Policy:
    """``POLICIES[method]`` at every point until the deadline, FIFO after it (so that the
    run ends near its time limit with a whole schedule; the result says so)."""

    def __init__(self, method: str, per_call: float | None, deadline: float | None) -> None:
        self.name, self.policy = method, POLICIES[method]
        self.per_call, self.deadline = per_call, deadline
        self.fallback_at: int | None = None
        self.calls = 0

    def __call__(self, instance: Any, *, seed: int, time_limit: Any = None, **options: Any):
        from energyopt.core.registry import solve

        self.calls += 1
        late = self.deadline is not None and time.perf_counter() >= self.deadline
        if late and self.fallback_at is None:
            self.fallback_at = self.calls - 1
        if late:
            return solve(instance, "fifo")
        return solve(instance, self.policy, seed=seed, time_limit=self.per_call, **options)


def run_policy(
    hooks: Any, sc: CapacityScenario, method: str, seed: int | None, time_limit: float | None
) -> Result:
    """Simulate the trace with ``POLICIES[method]`` at every rescheduling point."""
    start = time.perf_counter()
    per_call = deadline = None
    if time_limit is not None:
        # Each call gets an equal share of the limit; FIFO and EDF need far less.
        per_call = max(0.01, 0.5 * time_limit / (POINTS_PER_JOB * len(sc.jobs)))
        deadline = start + 0.5 * time_limit
    policy = _Policy(method, per_call, deadline)
    rep = simulate(
        sc.nodes,
        sc.jobs,
        policy,
        seed=0 if seed is None else seed,
        energy_price_eur_per_kwh=sc.energy_price_eur_per_kwh,
        pue=sc.pue,
        restart_from_checkpoint=sc.restart_from_checkpoint,
    )
    extra = {
        "simulator_total_cost_eur": rep.total_cost_eur,
        "makespan_s": rep.makespan_s,
        "late_jobs": rep.late_jobs,
        "calls": rep.calls,
        "preemptions": rep.preemptions,
        "migrations": rep.migrations,
        "lost_epochs": rep.lost_epochs,
        "simulation_s": time.perf_counter() - start,
        "fifo_from_point": policy.fallback_at,
        "source": rep.source,
    }
    cut = policy.fallback_at is not None
    return score(
        hooks,
        sc,
        method,
        Decisions(tuple(rep.decisions)),
        termination=TerminationReason.TIME_LIMIT if cut else TerminationReason.COMPLETED,
        solver_objective=rep.total_cost_eur,
        message=(
            f"time limit: FIFO ran the points from {policy.fallback_at} of {rep.calls} on; "
            if cut
            else ""
        )
        + "an online policy proves no bound; offline-bound gives one on the same trace",
        extra=extra,
    )


def bound_result(hooks: Any, sc: CapacityScenario) -> Result:
    """The relaxation's bound (CAP-B1..CAP-B3): linear in jobs x configurations."""
    bound = offline_bound(sc)
    return score(
        hooks,
        sc,
        "offline-bound",
        None,
        termination=TerminationReason.COMPLETED,
        bound=bound,
        message=(
            "lower bound on the cumulative cost of every policy on this trace: each job alone, "
            "node idle power and the other jobs dropped (CAP-B1..CAP-B3); no schedule"
        ),
    )
