"""Job-level event simulator (PowerFlow 6.1): arrivals, rescheduling, completions.

At every event (a job arrives, a job completes, optionally a periodic tick) the
policy chooses a (GPU count, SM clock) for each active job; the simulator places
the jobs with buddy placement (migrating when needed), shuts down empty nodes and
advances time to the next event. Progress and energy come from the *truth* models
(the simulated GPU here), while policies decide with their own (fitted) models.

Energy = sum over time of the jobs' power plus ``idle_power_w`` for every idle GPU
on a powered node. An optional profiling overhead charges a job that runs on a
GPU count for the first time that many seconds at its power without progress (the
pre-run overhead of 6.1).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any, Protocol

from energyopt.core.instance import InstanceError
from energyopt.powercap.instance import IterationModel, is_power_of_two
from energyopt.powercap.placement import buddy_place
from energyopt.powercap.trace import Trace


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The simulated cluster.

    ``p_max_w`` is P_max of Eq. 19; ``idle_power_w`` the power of an idle GPU on a
    powered node; ``clocks_mhz`` the supported SM clocks.
    """

    num_gpus: int
    gpus_per_node: int
    clocks_mhz: tuple[int, ...]
    idle_power_w: float
    p_max_w: float

    @property
    def num_nodes(self) -> int:
        return self.num_gpus // self.gpus_per_node


@dataclasses.dataclass
class ActiveJob:
    """What a policy sees of a job."""

    name: str
    workload: str
    global_batch_size: int
    requested_gpus: int
    arrival_s: float
    iterations: float
    remaining_iterations: float
    attained_gpu_s: float = 0.0
    config: tuple[int, int] = (0, 0)
    started: bool = False


class Policy(Protocol):
    name: str

    def decide(
        self, now_s: float, jobs: list[ActiveJob], cluster: Cluster
    ) -> Mapping[str, tuple[int, int]]: ...


@dataclasses.dataclass(frozen=True)
class SimResult:
    """Outcome of one simulation.

    Attributes
    ----------
    policy
        The policy's name.
    mean_jct_s
        Mean job completion time (completion - arrival).
    total_energy_j
        Jobs' energy plus idle GPUs on powered nodes.
    idle_energy_j
        The idle part of it.
    makespan_s
        Last completion.
    jct_s
        Per job.
    num_decisions, migrations
        Policy calls and jobs moved by buddy placement.
    max_power_w
        Largest cluster power (truth models) over the run.
    timeline
        ``(time_s, gpus_used, power_w)`` after each decision.
    """

    policy: str
    mean_jct_s: float
    total_energy_j: float
    idle_energy_j: float
    makespan_s: float
    jct_s: Mapping[str, float]
    num_decisions: int
    migrations: int
    max_power_w: float
    timeline: tuple[tuple[float, int, float], ...]
    source: str = ""


class _Rates:
    """Truth (seconds per iteration, watts) per (workload, batch, n, clock), cached."""

    def __init__(self, truth: Mapping[str, IterationModel]):
        self.truth = truth
        self.cache: dict[tuple[str, int, int, int], tuple[float, float]] = {}

    def __call__(self, w: str, bs: int, n: int, f: int) -> tuple[float, float]:
        key = (w, bs, n, f)
        if key not in self.cache:
            t, e = self.truth[w].iteration(float(n), float(f), float(bs))
            self.cache[key] = (float(t), float(e) / float(t))
        return self.cache[key]


def _check_decision(
    decision: Mapping[str, tuple[int, int]],
    active: dict[str, ActiveJob],
    cluster: Cluster,
    pol: str,
) -> dict[str, tuple[int, int]]:
    out = {}
    for name, (n, f) in decision.items():
        if name not in active:
            raise ValueError(f"policy {pol!r} configured unknown job {name!r}")
        n, f = int(n), int(f)
        if n == 0:
            continue
        if not is_power_of_two(n) or f not in cluster.clocks_mhz:
            raise ValueError(f"policy {pol!r}: job {name!r} got ({n} GPUs, {f} MHz)")
        out[name] = (n, f)
    if sum(n for n, _ in out.values()) > cluster.num_gpus:
        raise ValueError(f"policy {pol!r} used more than {cluster.num_gpus} GPUs")
    return out


def simulate(
    trace: Trace,
    policy: Policy,
    cluster: Cluster,
    truth: Mapping[str, IterationModel],
    *,
    reschedule_interval_s: float | None = None,
    profile_overhead_s: float = 0.0,
    max_decisions: int = 1_000_000,
) -> SimResult:
    """Run ``policy`` on ``trace`` and measure mean JCT and total energy.

    Raises
    ------
    InstanceError
        For impossible inputs: a job needing more GPUs than the cluster has, a job
        whose workload has no truth model, or a policy that leaves every job
        waiting with no arrival ahead (e.g. a power cap below any job's power).
    """
    trace.validate(cluster.num_gpus)
    for i, j in enumerate(trace.jobs):
        if j.workload not in truth:
            raise InstanceError(f"trace.jobs[{i}].workload = {j.workload!r}: no truth model")
    rates = _Rates(truth)
    pending = sorted(trace.jobs, key=lambda j: (j.arrival_s, j.name))
    active: dict[str, ActiveJob] = {}
    jct: dict[str, float] = {}
    profiled: set[tuple[str, int]] = set()
    overhead: dict[str, float] = {}
    placement = None
    now = 0.0
    energy = idle_energy = 0.0
    decisions = migrations = 0
    max_power = 0.0
    timeline: list[tuple[float, int, float]] = []
    pi = 0
    next_tick = math.inf
    while pi < len(pending) or active:
        while pi < len(pending) and pending[pi].arrival_s <= now + 1e-9:
            j = pending[pi]
            active[j.name] = ActiveJob(
                j.name,
                j.workload,
                j.global_batch_size,
                j.requested_gpus,
                j.arrival_s,
                j.iterations,
                j.iterations,
            )
            pi += 1
        if not active:
            now = pending[pi].arrival_s
            continue
        decisions += 1
        if decisions > max_decisions:
            raise RuntimeError(f"more than {max_decisions} decisions; is the policy stuck?")
        jobs = sorted(active.values(), key=lambda a: (a.arrival_s, a.name))
        config = _check_decision(policy.decide(now, jobs, cluster), active, cluster, policy.name)
        prev = None if placement is None else {k: b for k, b in placement.blocks.items()}
        placement = buddy_place(
            {k: n for k, (n, _) in config.items()}, cluster.num_nodes, cluster.gpus_per_node, prev
        )
        if placement is None:  # cannot happen for powers of two within G; guard anyway
            raise RuntimeError("buddy placement failed for a decision within the GPU count")
        migrations += len(placement.migrated)
        for a in active.values():
            a.config = config.get(a.name, (0, 0))
        for name, (n, _) in config.items():
            active[name].started = True
            if profile_overhead_s > 0 and (name, n) not in profiled:
                profiled.add((name, n))
                overhead[name] = overhead.get(name, 0.0) + profile_overhead_s
        used = sum(n for n, _ in config.values())
        idle = placement.powered_nodes * cluster.gpus_per_node - used
        run = {
            k: rates(active[k].workload, active[k].global_batch_size, n, f)
            for k, (n, f) in config.items()
        }
        power = sum(p for _, p in run.values()) + cluster.idle_power_w * idle
        max_power = max(max_power, power)
        timeline.append((now, used, power))
        if reschedule_interval_s:
            next_tick = now + reschedule_interval_s
        finish = {
            k: now + overhead.get(k, 0.0) + active[k].remaining_iterations * t
            for k, (t, _) in run.items()
        }
        t_next = min(
            min(finish.values(), default=math.inf),
            pending[pi].arrival_s if pi < len(pending) else math.inf,
            next_tick,
        )
        if not math.isfinite(t_next):
            raise InstanceError(
                f"policy {policy.name!r} runs no job at t = {now:.1f} s with "
                f"{len(active)} job(s) waiting and no arrival ahead; a power cap below "
                "every job's smallest configuration does this"
            )
        dt = t_next - now
        energy += (power) * dt
        idle_energy += cluster.idle_power_w * idle * dt
        for k, (t, _) in run.items():
            a = active[k]
            o = min(overhead.get(k, 0.0), dt)
            if o:
                overhead[k] -= o
            a.remaining_iterations -= (dt - o) / t
            a.attained_gpu_s += config[k][0] * dt
        now = t_next
        for k in list(run):
            a = active[k]
            if finish[k] <= now + 1e-9 or a.remaining_iterations <= 1e-9 * a.iterations:
                jct[k] = now - a.arrival_s
                del active[k]
    return SimResult(
        policy.name,
        sum(jct.values()) / len(jct),
        energy,
        idle_energy,
        now,
        jct,
        decisions,
        migrations,
        max_power,
        tuple(timeline),
        trace.source,
    )


def summary(result: SimResult) -> dict[str, Any]:
    """The headline numbers of a run, for tables."""
    return {
        "policy": result.policy,
        "mean_jct_s": result.mean_jct_s,
        "energy_j": result.total_energy_j,
        "idle_energy_j": result.idle_energy_j,
        "makespan_s": result.makespan_s,
        "decisions": result.num_decisions,
        "migrations": result.migrations,
        "max_power_w": result.max_power_w,
    }
