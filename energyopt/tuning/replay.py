"""Trace-driven replay of a recurring job (paper Sec. 6.1).

Each run of a recurrence trains on one recorded training path of its batch size,
read from the replay's :class:`~energyopt.tuning.realisation.Realisation` (common
random numbers: run ``k`` of batch size ``b`` in recurrence ``t`` gets the same
uniformly drawn path under every policy of that seed), until that path reaches the
target, until ``max_epochs``, or, with early stopping, until the next epoch
would push the run's cost past ``beta`` times the smallest recurrence cost seen.
A run that stops without reaching the target is retried within the same
recurrence (its cost counts). A run that profiles power (first run of a batch
size under the JIT optimizer) spends its first epoch split evenly over all power
limits, so that epoch costs the mean of the per-limit epoch figures (as in the
Zeus simulator).

:func:`replay` runs recurrences one after another; :func:`replay_concurrent`
submits them at given arrival times, so that a job may start before earlier ones
have finished and been observed (Sec. 4.4, concurrent submissions).
"""

from __future__ import annotations

import dataclasses
import heapq
import itertools
import math
from typing import Any, Protocol

import numpy as np

from energyopt.core.timelimit import TimeBudget
from energyopt.tuning.cost import energy_time_cost
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.realisation import ATTEMPTS, Realisation

#: A recurrence that fails this many runs in a row is an error (as in Zeus).
MAX_TRIES = ATTEMPTS


class Policy(Protocol):
    early_stopping: bool

    def next_config(self) -> tuple[int, float, bool]: ...

    def observe(
        self, batch_size: int, power_limit_w: float, cost: float, reached: bool
    ) -> None: ...


class ReplayError(RuntimeError):
    """A recurrence could not reach the target metric within :data:`MAX_TRIES` runs."""


@dataclasses.dataclass(frozen=True)
class Run:
    """One training run of one recurrence: the decisions and the sampled path.

    ``energy_j``, ``time_s`` and ``cost`` are the replay's own figures; the
    evaluator recomputes them from the other fields and the instance.
    """

    recurrence: int
    batch_size: int
    power_limit_w: float
    path: int
    epochs: int
    reached: bool
    profiled: bool
    energy_j: float
    time_s: float
    cost: float
    start_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ReplayLog:
    """Everything a replay did."""

    runs: tuple[Run, ...]
    recurrences: int
    skipped_attempts: int = 0
    """Attempts that early stopping refused before their first epoch (no cost)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "recurrences": self.recurrences,
            "skipped_attempts": self.skipped_attempts,
            "runs": [r.to_dict() for r in self.runs],
        }


def _execute(
    inst: TuningInstance,
    b: int,
    p: float,
    profiled: bool,
    threshold: float,
    real: Realisation,
    recurrence: int,
    start_s: float,
    attempts: dict[tuple[int, int], int],
) -> Run | None:
    i, j = inst.index_of_batch(b), inst.index_of_power(p)
    t_e, p_e = inst.epoch_time_s[i][j], inst.avg_power_w[i][j]
    e_e = t_e * p_e
    c_e = energy_time_cost(e_e, t_e, inst.eta, inst.max_power_w)
    allowed = inst.max_epochs
    if math.isfinite(threshold):
        # Eq. 12: stop right before the epoch whose cost would cross the threshold. A run
        # that costs exactly the threshold does not cross it (1e-12: float rounding of
        # k * c_e against a threshold that was itself such a sum).
        ratio = threshold / c_e * (1 + 1e-12)
        # An epoch that costs next to nothing (c_e ~ 1e-320) gives an infinite ratio.
        allowed = inst.max_epochs if ratio >= inst.max_epochs else math.floor(ratio)
    if allowed <= 0:
        return None
    # Only runs that execute take an attempt (the clairvoyant bound counts on it).
    k = attempts.get((recurrence, i), 0)
    attempts[(recurrence, i)] = k + 1
    path = real.path(recurrence, i, k)
    target = inst.target_epochs[i][path]
    reached = target is not None and target <= allowed
    epochs = int(target) if reached else allowed
    if profiled:
        # Eq. 13: the profiling epoch is split evenly over every power limit.
        n = len(inst.power_limits_w)
        t0 = sum(inst.epoch_time_s[i]) / n
        e0 = sum(t * w for t, w in zip(inst.epoch_time_s[i], inst.avg_power_w[i])) / n
        time_s, energy_j = t0 + (epochs - 1) * t_e, e0 + (epochs - 1) * e_e
    else:
        time_s, energy_j = epochs * t_e, epochs * e_e
    cost = energy_time_cost(energy_j, time_s, inst.eta, inst.max_power_w)
    return Run(recurrence, b, p, path, epochs, reached, profiled, energy_j, time_s, cost, start_s)


def _threshold(inst: TuningInstance, policy: Policy, min_cost: float) -> float:
    if inst.beta is None or not policy.early_stopping:
        return math.inf
    return inst.beta * min_cost


def as_realisation(
    instance: TuningInstance, paths: Realisation | np.random.Generator
) -> Realisation:
    """``paths`` itself, or a realisation seeded from a generator (callers that hold a
    generator rather than a seed)."""
    if isinstance(paths, Realisation):
        if paths.instance is not instance and paths.instance != instance:
            raise ValueError("the realisation was drawn for another instance")
        return paths
    return Realisation(instance, int(paths.integers(2**63 - 1)))


def _out_of_time(budget: TimeBudget | None) -> bool:
    return budget is not None and budget.expired()


def replay(
    instance: TuningInstance,
    policy: Policy,
    paths: Realisation | np.random.Generator,
    budget: TimeBudget | None = None,
) -> ReplayLog:
    """Replay ``instance.recurrences`` recurrences one after another.

    Parameters
    ----------
    instance
        The job and its traces.
    policy
        Chooses (batch size, power limit) and learns from each run's cost.
    paths
        The realisation the runs train on (every policy replayed on the same one
        sees the same paths); a generator seeds a fresh realisation.
    budget
        Once it is spent no new recurrence starts; the log's ``recurrences`` then
        counts the ones replayed (a time limit).

    Raises
    ------
    ReplayError
        When a recurrence fails :data:`MAX_TRIES` times in a row.
    """
    real = as_realisation(instance, paths)
    attempts: dict[tuple[int, int], int] = {}
    runs: list[Run] = []
    min_cost, skipped, clock = math.inf, 0, 0.0
    done = 0
    for t in range(instance.recurrences):
        if _out_of_time(budget):
            break
        done = t + 1
        acc = 0.0
        for _ in range(MAX_TRIES):
            b, p, profiled = policy.next_config()
            thr = _threshold(instance, policy, min_cost)
            run = _execute(instance, b, p, profiled, thr, real, t, clock, attempts)
            if run is None:
                # Not even one epoch fits under the threshold: the job never runs; the
                # policy learns that this batch size costs at least the threshold.
                skipped += 1
                policy.observe(b, p, thr, False)
                continue
            runs.append(run)
            clock += run.time_s
            acc += run.cost
            policy.observe(b, p, run.cost, run.reached)
            if run.reached:
                min_cost = min(min_cost, acc)
                break
        else:
            raise ReplayError(f"recurrence {t}: target not reached in {MAX_TRIES} runs")
    return ReplayLog(tuple(runs), done, skipped)


def replay_concurrent(
    instance: TuningInstance,
    policy: Policy,
    paths: Realisation | np.random.Generator,
    arrivals_s: list[float],
    budget: TimeBudget | None = None,
) -> ReplayLog:
    """Replay recurrences submitted at ``arrivals_s`` (seconds, one per recurrence).

    Once ``budget`` is spent no recurrence is submitted; those in flight finish, and
    the log counts the ones submitted.

    A run lasts its training time. The policy observes a run when it finishes,
    so jobs submitted while others are in flight are decided without their
    outcome. A run that misses the target is resubmitted when it finishes. The
    early-stopping threshold uses the smallest single-run cost of a completed
    recurrence known at submission time.
    """
    if len(arrivals_s) != instance.recurrences:
        raise ValueError(
            f"arrivals_s has {len(arrivals_s)} times; "
            f"the instance has {instance.recurrences} recurrences"
        )
    if any(b < a for a, b in itertools.pairwise(arrivals_s)):
        raise ValueError("arrivals_s must be non-decreasing")
    real = as_realisation(instance, paths)
    attempts: dict[tuple[int, int], int] = {}
    runs: list[Run] = []
    in_flight: list[tuple[float, int, Run]] = []  # (end time, sequence, run)
    seq, skipped = 0, 0
    min_cost = math.inf
    tries = [0] * instance.recurrences

    def submit(t: int, now: float) -> None:
        nonlocal seq, skipped
        while True:
            tries[t] += 1
            if tries[t] > MAX_TRIES:
                raise ReplayError(f"recurrence {t}: target not reached in {MAX_TRIES} runs")
            b, p, profiled = policy.next_config()
            thr = _threshold(instance, policy, min_cost)
            run = _execute(instance, b, p, profiled, thr, real, t, now, attempts)
            if run is None:
                skipped += 1
                policy.observe(b, p, thr, False)
                continue
            heapq.heappush(in_flight, (now + run.time_s, seq, run))
            seq += 1
            return

    def reap(until: float) -> None:
        nonlocal min_cost
        while in_flight and in_flight[0][0] <= until:
            end, _, run = heapq.heappop(in_flight)
            runs.append(run)
            policy.observe(run.batch_size, run.power_limit_w, run.cost, run.reached)
            if run.reached:
                min_cost = min(min_cost, run.cost)
            else:
                submit(run.recurrence, end)

    done = 0
    for t, now in enumerate(arrivals_s):
        if _out_of_time(budget):
            break
        reap(now)
        submit(t, float(now))
        done = t + 1
    reap(math.inf)
    runs.sort(key=lambda r: (r.recurrence, r.start_s))
    return ReplayLog(tuple(runs), done, skipped)
