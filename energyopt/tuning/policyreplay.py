"""Replaying a policy on a seed's realisation and scoring the replay against its
references: shared by the registered methods (:mod:`energyopt.tuning.methods`) and the
family's simulator hook (:mod:`energyopt.tuning.hooks`).

The functions take the family's hooks as an argument rather than importing them, so that
the hooks can offer :func:`replay_policy` without an import circle.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING, Any

import numpy as np

from energyopt.core.errors import EvaluationMismatchError
from energyopt.core.evaluation import Scored
from energyopt.core.gap import gap
from energyopt.core.result import Result
from energyopt.core.scoring import score
from energyopt.core.status import TerminationReason
from energyopt.core.timelimit import TimeBudget
from energyopt.tuning.evaluator import exact_reference
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.realisation import (
    Realisation,
    References,
    best_epoch_costs,
    fixed_arm_costs,
    references,
)
from energyopt.tuning.replay import MAX_TRIES, ReplayError, ReplayLog, replay, replay_concurrent

if TYPE_CHECKING:
    from energyopt.core.family import FamilyHooks
#: Recurrences averaged for the converged ETA/TTA (paper Fig. 6: "last five").
LAST = 5


@dataclasses.dataclass(frozen=True)
class Draws:
    """What one seed fixes for a replay: the realisation and the policy's own streams."""

    realisation: Realisation
    policy: np.random.Generator
    arrivals: np.random.Generator


def draws(instance: TuningInstance, seed: int | None) -> Draws:
    """The realisation and streams of ``seed`` (None: 0), the same for every method."""
    seed = 0 if seed is None else seed
    _, policy, arrivals = np.random.SeedSequence(seed).spawn(3)
    return Draws(
        Realisation(instance, seed), np.random.default_rng(policy), np.random.default_rng(arrivals)
    )


def _bound(hooks: FamilyHooks, refs: References, objective: float) -> float:
    """The clairvoyant bound, no higher than an objective it meets up to float rounding
    (a replay that pays the clairvoyant minimum sums the same costs in another order);
    one further above is passed on, and the scorer rejects it."""
    b = refs.bound
    return objective if b > objective and hooks.tolerance.allows(b, objective) else b


def _curve(x: np.ndarray) -> list[float]:
    return [float(v) for v in np.cumsum(x)]


def reference_figures(inst: TuningInstance, refs: References, objective: float) -> dict[str, Any]:
    """The references of a result's ``extra``: clairvoyant bound, best fixed arm in
    hindsight, and the optimum in expectation (a documented figure, not a bound)."""
    T = inst.recurrences
    expected = T * exact_reference(inst).c_star
    hindsight = refs.hindsight_total
    return {
        "clairvoyant_bound": refs.bound,
        "hindsight_objective": hindsight,
        "hindsight_config": (
            None
            if refs.hindsight_batch_size is None
            else [refs.hindsight_batch_size, refs.hindsight_power_limit_w]
        ),
        "regret_vs_hindsight": objective - hindsight if math.isfinite(hindsight) else None,
        "gap_vs_hindsight": gap(objective, hindsight) if math.isfinite(hindsight) else None,
        "expected_optimum": expected,
        "gap_vs_expected_optimum": gap(objective, expected),
    }


def replay_result(
    hooks: FamilyHooks,
    inst: TuningInstance,
    method: str,
    log: ReplayLog,
    refs: References,
    extra: dict[str, Any] | None = None,
) -> Result:
    """Score a replay with the evaluator and package it with its references.

    ``refs`` are the references of the realisation the replay ran on, over the
    replay's recurrences. The scorer (:func:`energyopt.core.scoring.score`) checks the
    replay and that its cost is not below the clairvoyant bound (the ``bound``).
    """
    ev = hooks.evaluate(inst, log)
    if not ev.feasible:
        raise EvaluationMismatchError(f"{method}: replay rejected: {'; '.join(ev.violations[:5])}")
    ref = exact_reference(inst)
    T = inst.recurrences
    cost = np.asarray(ev.recurrence_cost)
    last = slice(max(0, T - LAST), T)
    final = log.runs[-1]
    ex = {
        **reference_figures(inst, refs, ev.total_cost),
        # Eq. 8's regret, against the optimum in expectation c* (the paper's figure).
        "cumulative_regret": float(np.sum(cost - ref.c_star)) if T else 0.0,
        "regret_curve": _curve(cost - ref.c_star),
        "regret_vs_clairvoyant_curve": _curve(cost - refs.clairvoyant),
        "regret_vs_hindsight_curve": (
            _curve(cost - refs.hindsight) if math.isfinite(refs.hindsight_total) else None
        ),
        "last5_energy_j": float(np.mean(ev.recurrence_energy_j[last])),
        "last5_time_s": float(np.mean(ev.recurrence_time_s[last])),
        "last5_cost": float(np.mean(ev.recurrence_cost[last])),
        "final_config": [final.batch_size, final.power_limit_w],
        "num_runs": len(log.runs),
        "skipped_attempts": log.skipped_attempts,
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
        bound=_bound(hooks, refs, ev.total_cost),
        extra=ex,
    )


#: Share of the time limit the replay may use; the rest computes the references and
#: scores it (the evaluator takes about a quarter of the replay's time on Default).
REPLAY_SHARE = 0.5


def _budget(time_limit: float | None) -> TimeBudget:
    """The replay's share of the time limit, from now."""
    return TimeBudget(None if time_limit is None else REPLAY_SHARE * max(0.0, float(time_limit)))


def incumbent_config(inst: TuningInstance, log: ReplayLog) -> tuple[int, float]:
    """The configuration whose successful runs in ``log`` cost least on average.

    (b0 at the maximum power limit when no run has succeeded yet.)
    """
    seen: dict[tuple[int, float], list[float]] = {}
    for r in log.runs:
        if r.reached:
            seen.setdefault((r.batch_size, r.power_limit_w), []).append(r.cost)
    if not seen:
        return inst.default_batch_size, max(inst.power_limits_w)
    return min(seen, key=lambda k: (sum(seen[k]) / len(seen[k]), k))


def time_limited_result(
    hooks: FamilyHooks,
    inst: TuningInstance,
    method: str,
    log: ReplayLog,
    refs: References,
    extra: dict[str, Any] | None = None,
) -> Result:
    """A replay cut short by the time limit, completed by its incumbent.

    The ``k`` recurrences replayed are scored by the evaluator; the other ``T - k``
    are the incumbent configuration (:func:`incumbent_config`) run fixed on the same
    realisation (:func:`~energyopt.tuning.realisation.fixed_arm_costs`; the policy stops
    exploring and runs its best configuration). That total is the objective; the
    bound stays the clairvoyant bound of all T recurrences.
    """
    T, k = inst.recurrences, log.recurrences
    b, p = incumbent_config(inst, log)
    i = inst.index_of_batch(b)
    ec, _ = best_epoch_costs(inst)
    ratio = inst.epoch_cost(b, p) / ec[i]
    tail = float(fixed_arm_costs(refs.head(T), i, ratio)[k:].sum())
    message = (
        f"time limit: replayed {k} of {T} recurrences; the other {T - k} run the "
        f"incumbent (b={b}, p={p:g} W) on the same realisation"
    )
    if not math.isfinite(tail):
        return score(
            hooks,
            inst,
            method,
            None,
            termination=TerminationReason.TIME_LIMIT,
            message=message + f", which misses the target {MAX_TRIES} times in a recurrence",
        )
    prefix = None
    if k:
        short = dataclasses.replace(inst, recurrences=k)
        prefix = replay_result(hooks, short, method, log, refs.head(k), extra)
    objective = (prefix.objective if prefix is not None else 0.0) + tail
    ex = dict(prefix.extra) if prefix is not None else {}
    ex.update(reference_figures(inst, refs, objective))
    ex.update(
        {
            "replayed_recurrences": k,
            "incumbent_config": [b, p],
            "incumbent_tail": tail,
            # The k recurrences replayed: no solution of the whole instance (the evaluator
            # wants all T), so it is kept here, and the result stores no solution.
            "replayed_log": log,
        }
    )
    return score(
        hooks,
        inst,
        method,
        None,
        # Replayed part by the evaluator (prefix), the rest the fixed arm's realised cost.
        evaluation=Scored(objective),
        termination=TerminationReason.TIME_LIMIT,
        bound=_bound(hooks, refs, objective),
        message=message + "; no complete replay, so no solution is stored",
        extra=ex,
    )


def _finish(
    hooks: FamilyHooks,
    inst: TuningInstance,
    method: str,
    log: ReplayLog,
    refs: References,
    extra: dict[str, Any] | None = None,
) -> Result:
    if log.recurrences < inst.recurrences:
        return time_limited_result(hooks, inst, method, log, refs, extra)
    return replay_result(hooks, inst, method, log, refs, extra)


def _error(hooks: FamilyHooks, inst: TuningInstance, method: str, exc: Exception) -> Result:
    return score(
        hooks,
        inst,
        method,
        None,
        termination=TerminationReason.ERROR,
        message=f"{type(exc).__name__}: {exc}",
    )


def _run(
    inst: TuningInstance,
    policy: Any,
    d: Draws,
    interarrival_s: float | None,
    budget: TimeBudget | None = None,
) -> ReplayLog:
    if interarrival_s is None:
        return replay(inst, policy, d.realisation, budget)
    if not interarrival_s > 0:
        raise ValueError(f"interarrival_s = {interarrival_s!r}: must be > 0")
    gaps = d.arrivals.exponential(float(interarrival_s), size=inst.recurrences)
    arrivals = list(np.cumsum(gaps) - gaps[0])
    return replay_concurrent(inst, policy, d.realisation, arrivals, budget)


def replay_method(
    hooks: FamilyHooks,
    inst: TuningInstance,
    name: str,
    policy: Any,
    d: Draws,
    *,
    time_limit: float | None = None,
    interarrival_s: float | None = None,
    extra: Any = None,
) -> Result:
    """Replay ``policy`` on the realisation of ``d`` and score it against its references.

    ``extra``: a callable giving the policy's own figures after the replay.
    """
    budget = _budget(time_limit)
    try:
        log = _run(inst, policy, d, interarrival_s, budget)
    except (ReplayError, RuntimeError, ValueError) as exc:
        return _error(hooks, inst, name, exc)
    # After the replay, so that a short time limit still replays something: the
    # references cost about 0.1 s of CPU per 200,000 recurrences of 5 batch sizes.
    refs = references(d.realisation)
    return _finish(hooks, inst, name, log, refs, extra() if extra else None)


def replay_policy(
    hooks: FamilyHooks,
    instance: TuningInstance,
    policy: Any,
    *,
    seed: int = 0,
    interarrival_s: float | None = None,
) -> Result:
    """Replay any policy (``next_config()``/``observe(...)``) as the registered methods do.

    It trains on the realisation of ``seed``, so a policy and a registered method with
    the same seed see the same paths and have the same references.
    """
    name = str(getattr(policy, "name", "") or type(policy).__name__)
    return replay_method(
        hooks, instance, name, policy, draws(instance, seed), interarrival_s=interarrival_s
    )
