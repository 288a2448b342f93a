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
    segments
        The schedule: ``(start_s, end_s, ((job, num_gpus, sm_clock_mhz), ...))`` for
        every interval between two events, what
        :func:`energyopt.powercap.scenario.evaluate_schedule` checks.
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
    segments: tuple[tuple[float, float, tuple[tuple[str, int, int], ...]], ...] = ()


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
    sim = _Simulation(trace, policy, cluster, _Rates(truth), profile_overhead_s)
    while sim.pi < len(sim.pending) or sim.active:
        sim.admit_arrivals()
        if not sim.active:
            sim.now = sim.pending[sim.pi].arrival_s
            continue
        sim.decisions += 1
        if sim.decisions > max_decisions:
            raise RuntimeError(f"more than {max_decisions} decisions; is the policy stuck?")
        config = sim.decide_and_place()
        run, power, idle = sim.run_rates_and_power(config)
        if reschedule_interval_s:
            sim.next_tick = sim.now + reschedule_interval_s
        finish = {
            k: sim.now + sim.overhead.get(k, 0.0) + sim.active[k].remaining_iterations * t
            for k, (t, _) in run.items()
        }
        t_next = sim.next_event_s(finish)
        sim.advance(t_next, config, run, power, idle)
        sim.retire_finished(run, finish)
    return sim.result()


class _Simulation:
    """The state of one run of :func:`simulate` and the steps of its event loop.

    ``pending`` holds the trace's jobs by arrival, ``pi`` the next to arrive;
    ``active`` the jobs arrived and not finished; ``overhead`` the profiling seconds
    a job still owes (6.1) and ``profiled`` the (job, GPU count) pairs already charged.
    """

    def __init__(
        self,
        trace: Trace,
        policy: Policy,
        cluster: Cluster,
        rates: _Rates,
        profile_overhead_s: float,
    ) -> None:
        self.trace, self.policy, self.cluster, self.rates = trace, policy, cluster, rates
        self.profile_overhead_s = profile_overhead_s
        self.pending = sorted(trace.jobs, key=lambda j: (j.arrival_s, j.name))
        self.pi = 0
        self.active: dict[str, ActiveJob] = {}
        self.jct: dict[str, float] = {}
        self.profiled: set[tuple[str, int]] = set()
        self.overhead: dict[str, float] = {}
        self.placement = None
        self.now = 0.0
        self.energy = self.idle_energy = 0.0
        self.decisions = self.migrations = 0
        self.max_power = 0.0
        self.timeline: list[tuple[float, int, float]] = []
        self.segments: list[tuple[float, float, tuple[tuple[str, int, int], ...]]] = []
        self.next_tick = math.inf

    def admit_arrivals(self) -> None:
        """Make every job that has arrived by now active."""
        while self.pi < len(self.pending) and self.pending[self.pi].arrival_s <= self.now + 1e-9:
            j = self.pending[self.pi]
            self.active[j.name] = ActiveJob(
                j.name,
                j.workload,
                j.global_batch_size,
                j.requested_gpus,
                j.arrival_s,
                j.iterations,
                j.iterations,
            )
            self.pi += 1

    def decide_and_place(self) -> dict[str, tuple[int, int]]:
        """Ask the policy, check its answer, place the jobs (buddy placement, 5.3),
        record each job's configuration and charge first-time profiling overhead."""
        cluster, active = self.cluster, self.active
        jobs = sorted(active.values(), key=lambda a: (a.arrival_s, a.name))
        decision = self.policy.decide(self.now, jobs, cluster)
        config = _check_decision(decision, active, cluster, self.policy.name)
        prev = None if self.placement is None else dict(self.placement.blocks)
        sizes = {k: n for k, (n, _) in config.items()}
        self.placement = buddy_place(sizes, cluster.num_nodes, cluster.gpus_per_node, prev)
        if self.placement is None:  # cannot happen for powers of two within G; guard anyway
            raise RuntimeError("buddy placement failed for a decision within the GPU count")
        self.migrations += len(self.placement.migrated)
        for a in active.values():
            a.config = config.get(a.name, (0, 0))
        for name, (n, _) in config.items():
            active[name].started = True
            if self.profile_overhead_s > 0 and (name, n) not in self.profiled:
                self.profiled.add((name, n))
                self.overhead[name] = self.overhead.get(name, 0.0) + self.profile_overhead_s
        return config

    def run_rates_and_power(
        self, config: Mapping[str, tuple[int, int]]
    ) -> tuple[dict[str, tuple[float, float]], float, int]:
        """Truth (s/iteration, W) of each running job, the cluster power (jobs plus
        idle GPUs on powered nodes) and the idle GPU count; logs the timeline."""
        used = sum(n for n, _ in config.values())
        idle = self.placement.powered_nodes * self.cluster.gpus_per_node - used
        run = {
            k: self.rates(self.active[k].workload, self.active[k].global_batch_size, n, f)
            for k, (n, f) in config.items()
        }
        power = sum(p for _, p in run.values()) + self.cluster.idle_power_w * idle
        self.max_power = max(self.max_power, power)
        self.timeline.append((self.now, used, power))
        return run, power, idle

    def next_event_s(self, finish: Mapping[str, float]) -> float:
        """The next completion, arrival or periodic tick; an error when there is none."""
        pending, pi = self.pending, self.pi
        t_next = min(
            min(finish.values(), default=math.inf),
            pending[pi].arrival_s if pi < len(pending) else math.inf,
            self.next_tick,
        )
        if not math.isfinite(t_next):
            raise InstanceError(
                f"policy {self.policy.name!r} runs no job at t = {self.now:.1f} s with "
                f"{len(self.active)} job(s) waiting and no arrival ahead; a power cap below "
                "every job's smallest configuration does this"
            )
        return t_next

    def advance(
        self,
        t_next: float,
        config: Mapping[str, tuple[int, int]],
        run: Mapping[str, tuple[float, float]],
        power: float,
        idle: int,
    ) -> None:
        """Move time to ``t_next``: energy, progress net of profiling, attained GPU-s."""
        dt = t_next - self.now
        if dt > 0:
            cfg = tuple(sorted((k, n, f) for k, (n, f) in config.items()))
            self.segments.append((self.now, t_next, cfg))
        self.energy += (power) * dt
        self.idle_energy += self.cluster.idle_power_w * idle * dt
        for k, (t, _) in run.items():
            a = self.active[k]
            o = min(self.overhead.get(k, 0.0), dt)
            if o:
                self.overhead[k] -= o
            a.remaining_iterations -= (dt - o) / t
            a.attained_gpu_s += config[k][0] * dt
        self.now = t_next

    def retire_finished(
        self, run: Mapping[str, tuple[float, float]], finish: Mapping[str, float]
    ) -> None:
        """Record the JCT of each running job that has now completed."""
        for k in list(run):
            a = self.active[k]
            if finish[k] <= self.now + 1e-9 or a.remaining_iterations <= 1e-9 * a.iterations:
                self.jct[k] = self.now - a.arrival_s
                del self.active[k]

    def result(self) -> SimResult:
        jct = self.jct
        return SimResult(
            self.policy.name,
            sum(jct.values()) / len(jct),
            self.energy,
            self.idle_energy,
            self.now,
            jct,
            self.decisions,
            self.migrations,
            self.max_power,
            tuple(self.timeline),
            self.trace.source,
            tuple(self.segments),
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
