"""The methods of a :class:`~energyopt.powercap.scenario.PowercapScenario`: online
policies run by the event simulator, and the offline bound on the same trace.

Each policy's result is the simulator's schedule, scored by
:func:`~energyopt.powercap.scenario.evaluate_schedule` (mean JCT over the whole trace).
The offline bound is the time-indexed MILP of :mod:`energyopt.powercap.offline`
without the finish-by-the-horizon constraint, so that it bounds every cap-respecting
policy whatever its makespan (PC-26'); its result has no schedule, only HiGHS' proven
dual bound. At a scale where the MILP would be too large to build within the time
limit the result says so, and why, instead of a bound.
"""

from __future__ import annotations

import math
import time
from typing import Any

from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import TerminationReason
from energyopt.powercap.offline import efficient_options, offline_bound
from energyopt.powercap.policies import PowerFlowPolicy
from energyopt.powercap.scenario import PowercapScenario, Schedule
from energyopt.powercap.simulator import simulate

#: Slot-fraction variables (jobs x slots x efficient options) above which the offline
#: MILP is not built: measured, 5 jobs x 15 slots x ~20 options (1,500) prove in 5-20 s.
MAX_BOUND_VARIABLES = 40_000
#: Policy name of each scenario method (PowerFlowPolicy's ``method``).
POLICIES = {"powerflow": "greedy", "powerflow-printed": "greedy-printed"}


class _Policy:
    """PowerFlow with ``POLICIES[method]`` at every event until the deadline, then with
    the greedy (the fastest), so that a run ends near its time limit with a whole
    schedule; the result says from which event on."""

    def __init__(self, models: Any, eta: float, method: str, deadline: float | None) -> None:
        self.name = method
        self.main = PowerFlowPolicy(models, eta, method=POLICIES[method])
        self.fast = PowerFlowPolicy(models, eta)
        self.deadline = deadline
        self.events = 0
        self.fallback_at: int | None = None

    def decide(self, now_s: float, jobs: Any, cluster: Any) -> Any:
        self.events += 1
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            if self.fallback_at is None:
                self.fallback_at = self.events - 1
            return self.fast.decide(now_s, jobs, cluster)
        return self.main.decide(now_s, jobs, cluster)


def run_policy(hooks: Any, sc: PowercapScenario, method: str, time_limit: float | None) -> Result:
    """Simulate the policy of ``method`` on the scenario (the tables are its truth and
    its prediction) and score the schedule."""
    start = time.perf_counter()
    models = sc.models()
    deadline = None if time_limit is None else start + 0.5 * time_limit
    policy = _Policy(models, sc.eta, method, deadline)
    sim = simulate(sc.trace, policy, sc.cluster, models)
    cut = policy.fallback_at is not None and POLICIES[method] != "greedy"
    extra = {
        "energy_j": sim.total_energy_j,
        "idle_energy_j": sim.idle_energy_j,
        "decisions": sim.num_decisions,
        "migrations": sim.migrations,
        "simulator_mean_jct_s": sim.mean_jct_s,
        "greedy_from_event": policy.fallback_at if cut else None,
        "source": "simulated: " + (sc.source or "scenario tables"),
    }
    note = f"time limit: the greedy ran the events from {policy.fallback_at} on; " if cut else ""
    return score(
        hooks,
        sc,
        method,
        Schedule(sim.segments),
        termination=TerminationReason.TIME_LIMIT if cut else TerminationReason.COMPLETED,
        solver_objective=sim.mean_jct_s,
        message=note + "an online policy proves no bound; offline-bound gives one on the trace",
        extra=extra,
    )


def horizon_s(sc: PowercapScenario) -> float:
    """A horizon for the offline MILP: the greedy PowerFlow policy's makespan plus a slot.
    (Any horizon gives a valid bound, PC-26'; one that most schedules meet keeps it tight.)"""
    models = sc.models()
    sim = simulate(sc.trace, PowerFlowPolicy(models, sc.eta), sc.cluster, models)
    return sim.makespan_s + sc.slot_s


def bound_size(sc: PowercapScenario, horizon: float) -> int:
    """Slot-fraction variables of the offline MILP at this horizon."""
    slots = math.ceil(horizon / sc.slot_s)
    kinds = {k: len(efficient_options(v)) for k, v in sc.tables.items()}
    return sum(slots * kinds[f"{j.workload}/{j.global_batch_size}"] for j in sc.jobs)


def bound_result(hooks: Any, sc: PowercapScenario, time_limit: float | None) -> Result:
    """The offline lower bound on the mean JCT of every cap-respecting policy."""
    start = time.perf_counter()
    horizon = horizon_s(sc)
    size = bound_size(sc, horizon)
    base = {"horizon_s": horizon, "slot_s": sc.slot_s, "bound_variables": size}
    if size > MAX_BOUND_VARIABLES:
        return score(
            hooks,
            sc,
            "offline-bound",
            None,
            termination=TerminationReason.COMPLETED,
            message=(
                f"no bound at this scale: the time-indexed MILP would have {size:,} slot "
                f"variables ({len(sc.jobs)} jobs x {math.ceil(horizon / sc.slot_s)} slots), "
                f"above the {MAX_BOUND_VARIABLES:,} it is built for"
            ),
            extra={**base, "no_bound_reason": "scale"},
        )
    left = None if time_limit is None else max(0.1, time_limit - (time.perf_counter() - start))
    ob = offline_bound(
        sc.trace,
        sc.cluster,
        sc.models(),
        sc.eta,
        slot_s=sc.slot_s,
        horizon_s=horizon,
        time_limit=None if left is None else 0.9 * left,
        finish_by_horizon=False,
    )
    done = ob.termination in (TerminationReason.OPTIMAL, TerminationReason.COMPLETED)
    return score(
        hooks,
        sc,
        "offline-bound",
        None,
        termination=TerminationReason.COMPLETED if done else ob.termination,
        bound=ob.bound,
        solver="highs",
        message=(
            "lower bound on the mean JCT of every policy that respects the cap on this trace "
            f"(time-indexed MILP, {ob.num_slots} slots of {ob.slot_s:g} s; HiGHS: "
            f"{ob.termination.value}); no schedule: the MILP's solution is a relaxation"
            + ("" if ob.bound is not None else f"; no bound: {ob.message}")
        ),
        extra={**base, "relaxed_objective": ob.relaxed_objective, "milp_runtime_s": ob.runtime_s},
    )
