"""Replaying a policy over the trace and scoring the replay: shared by the registered
methods (:mod:`energyopt.tuning.methods`) and the family's simulator hook
(:mod:`energyopt.tuning.hooks`).

The functions take the family's hooks as an argument rather than importing them, so that
the hooks can offer :func:`replay_policy` without an import circle.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from energyopt.core.errors import EvaluationMismatchError
from energyopt.core.gap import gap
from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import TerminationReason
from energyopt.core.timelimit import TimeBudget
from energyopt.tuning.evaluator import exact_reference
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.replay import ReplayError, ReplayLog, replay, replay_concurrent

if TYPE_CHECKING:
    from energyopt.core.family import FamilyHooks

#: Recurrences averaged for the converged ETA/TTA (paper Fig. 6: "last five").
LAST = 5


def policy_rngs(seed: int) -> tuple[np.random.Generator, np.random.Generator, np.random.Generator]:
    """Generators for the trace's paths, the policy and the arrivals, from one seed."""
    paths, policy, arrivals = np.random.SeedSequence(seed).spawn(3)
    return (
        np.random.default_rng(paths),
        np.random.default_rng(policy),
        np.random.default_rng(arrivals),
    )


def run_policy(
    inst: TuningInstance,
    policy: Any,
    rng_paths: np.random.Generator,
    rng_arr: np.random.Generator,
    interarrival_s: float | None,
    budget: TimeBudget | None = None,
) -> ReplayLog:
    """One replay: one recurrence after another, or Poisson arrivals (``interarrival_s``)."""
    if interarrival_s is None:
        return replay(inst, policy, rng_paths, budget)
    if not interarrival_s > 0:
        raise ValueError(f"interarrival_s = {interarrival_s!r}: must be > 0")
    gaps = rng_arr.exponential(float(interarrival_s), size=inst.recurrences)
    arrivals = list(np.cumsum(gaps) - gaps[0])
    return replay_concurrent(inst, policy, rng_paths, arrivals, budget)


def replay_result(
    hooks: FamilyHooks,
    inst: TuningInstance,
    method: str,
    log: ReplayLog,
    extra: dict[str, Any] | None = None,
) -> Result:
    """Score a replay with the evaluator and package it (regret, gap vs. the optimum).

    The scorer (:func:`energyopt.core.scoring.score`) checks the replay and that its
    cost is not below the proven floor ``T * c_floor`` (the bound).
    """
    ev = hooks.evaluate(inst, log)
    if not ev.feasible:
        raise EvaluationMismatchError(f"{method}: replay rejected: {'; '.join(ev.violations[:5])}")
    ref = exact_reference(inst)
    T = inst.recurrences
    optimum = T * ref.c_star
    regret = np.cumsum(np.asarray(ev.recurrence_cost) - ref.c_star)
    last = slice(max(0, T - LAST), T)
    final = log.runs[-1]
    ex = {
        "cumulative_regret": float(regret[-1]) if T else 0.0,
        "gap_vs_exact": gap(ev.total_cost, optimum),
        "exact_objective": optimum,
        "last5_energy_j": float(np.mean(ev.recurrence_energy_j[last])),
        "last5_time_s": float(np.mean(ev.recurrence_time_s[last])),
        "last5_cost": float(np.mean(ev.recurrence_cost[last])),
        "final_config": [final.batch_size, final.power_limit_w],
        "num_runs": len(log.runs),
        "skipped_attempts": log.skipped_attempts,
        "regret_curve": [float(x) for x in regret],
        "source": inst.source.get("kind", "unknown"),
        **(extra or {}),
    }
    return score(
        hooks,
        inst,
        method,
        log,
        evaluation=ev,
        termination=TerminationReason.COMPLETED,
        bound=T * ref.c_floor,
        extra=ex,
    )


def replay_error(hooks: FamilyHooks, inst: TuningInstance, method: str, exc: Exception) -> Result:
    """The result of a replay that failed: no solution, the error as its message."""
    return score(
        hooks,
        inst,
        method,
        None,
        termination=TerminationReason.ERROR,
        message=f"{type(exc).__name__}: {exc}",
    )


def replay_policy(
    hooks: FamilyHooks,
    instance: TuningInstance,
    policy: Any,
    *,
    seed: int = 0,
    interarrival_s: float | None = None,
) -> Result:
    """Replay any policy (``next_config()``/``observe(...)``) as the registered methods do.

    The trace's paths are drawn from the same seeded stream as the methods', so a
    policy and a registered method with the same seed see the same paths.
    """
    rp, _, rarr = policy_rngs(seed)
    name = str(getattr(policy, "name", "") or type(policy).__name__)
    try:
        log = run_policy(instance, policy, rp, rarr, interarrival_s)
    except (ReplayError, RuntimeError, ValueError) as exc:
        return replay_error(hooks, instance, name, exc)
    return replay_result(hooks, instance, name, log)
