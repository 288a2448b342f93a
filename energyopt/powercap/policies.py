"""Scheduling policies for the simulator: PowerFlow and the baselines of PowerFlow 6.1.

* :class:`PowerFlowPolicy` -- builds the event instance from the active jobs and its
  (fitted) models and solves it with the marginal-return greedy (or the exact MILP).
* :class:`FifoPolicy` -- non-elastic, non-preemptive first-come first-served on the
  requested GPUs (stands in for the non-elastic Gandiva baseline).
* :class:`LasPolicy` -- non-elastic, preemptive least-attained-service (GPU-seconds),
  in the spirit of Tiresias.
* Both with ``zeus=True``: each job runs at its Zeus-style energy-optimal clock
  (minimum of ``eta_z E + (1 - eta_z) MAXPOWER T`` per iteration, Zeus Eq. 2 form).
* :class:`ElasticPolicy` -- elastic, not energy-aware: GPUs go to queued jobs first
  (shortest first), then doublings by JCT reduction per added GPU, in the spirit of AFS.

Non-energy-aware baselines run every GPU at one global clock; sweeping it is how
the paper varies their energy (6.2).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from energyopt.powercap.algorithm1 import printed_greedy
from energyopt.powercap.greedy import marginal_return_greedy
from energyopt.powercap.instance import (
    EventJob,
    IterationModel,
    JobOption,
    PowercapInstance,
    _facts,
    option_table,
)
from energyopt.powercap.simulator import ActiveJob, Cluster


class _Tables:
    """Predicted option tables per (workload, global batch), cached across events."""

    def __init__(self, models: Mapping[str, IterationModel], cluster: Cluster):
        self.models, self.cluster = models, cluster
        self.cache: dict[tuple[str, int], tuple[JobOption, ...]] = {}

    def __call__(self, w: str, bs: int) -> tuple[JobOption, ...]:
        if (w, bs) not in self.cache:
            self.cache[(w, bs)] = option_table(
                self.models[w], bs, self.cluster.num_gpus, self.cluster.clocks_mhz
            )
        return self.cache[(w, bs)]

    def get(self, w: str, bs: int, n: int, f: int) -> JobOption | None:
        return _facts(self(w, bs)).index.get((n, f))

    def efficient(self, w: str, bs: int) -> JobOption:
        """One-GPU option with the least energy per iteration (ties: higher clock)."""
        return _facts(self(w, bs)).efficient


def event_from_jobs(
    now_s: float,
    jobs: Sequence[ActiveJob],
    cluster: Cluster,
    tables: _Tables,
    eta: float,
    name: str = "",
) -> PowercapInstance:
    """The scheduling-event instance at ``now_s`` (PC-9..PC-15).

    The waiting estimate of a queued job (PC-10) is the mean one-GPU remaining time
    of the active jobs at their efficient clocks: a queued job waits about one job.
    """
    ev = []
    t_eff = []
    for a in jobs:
        opts = tables(a.workload, a.global_batch_size)
        eff = tables.efficient(a.workload, a.global_batch_size)
        t_eff.append(a.remaining_iterations * eff.iter_time_s)
        ev.append(
            EventJob(
                a.name,
                a.remaining_iterations,
                now_s - a.arrival_s,
                opts,
                0,
                a.workload,
                a.global_batch_size,
            )
        )
    return PowercapInstance(
        cluster.num_gpus,
        cluster.gpus_per_node,
        eta,
        cluster.p_max_w,
        cluster.idle_power_w,
        float(np.mean(t_eff)),
        tuple(ev),
        name or f"event t={now_s:.0f}s",
        "simulated (energyopt.powercap.simulator event; predicted option tables)",
    )


class PowerFlowPolicy:
    """PowerFlow at every event: Algorithm 1 (``method="greedy"``) or the event MILP.

    Parameters
    ----------
    models
        The scheduler's performance models (fitted ones in the experiments).
    eta
        Power-cap fraction (Eq. 19).
    method
        ``"greedy"`` (energyopt's Algorithm 1, default), ``"greedy-printed"``
        (Algorithm 1 as printed) or any registered powercap method (``"highs"``).
    record
        Keep every event instance in ``self.events`` (for the gap table).
    """

    def __init__(
        self,
        models: Mapping[str, IterationModel],
        eta: float,
        *,
        method: str = "greedy",
        time_limit: float | None = 10.0,
        record: bool = False,
    ):
        self.models, self.eta, self.method = models, float(eta), method
        self.time_limit, self.record = time_limit, record
        self.events: list[PowercapInstance] = []
        self.name = f"powerflow-{method}" if method != "greedy" else "powerflow"
        self._tables: _Tables | None = None

    def decide(
        self, now_s: float, jobs: list[ActiveJob], cluster: Cluster
    ) -> dict[str, tuple[int, int]]:
        if self._tables is None or self._tables.cluster != cluster:
            self._tables = _Tables(self.models, cluster)
        inst = event_from_jobs(now_s, jobs, cluster, self._tables, self.eta)
        if self.record:
            self.events.append(inst)
        if self.method == "greedy":
            config = marginal_return_greedy(inst).config
        elif self.method == "greedy-printed":
            config = printed_greedy(inst).config
        else:
            from energyopt.core.registry import solve

            res = solve(inst, self.method, time_limit=self.time_limit)
            config = None if res.solution is None else res.solution.config
        if config is None:
            return {}
        return {a.name: c for a, c in zip(jobs, config) if c[0] > 0}


def zeus_clock(
    model: IterationModel,
    global_batch_size: int,
    num_gpus: int,
    clocks_mhz: Sequence[int],
    *,
    eta_zeus: float = 0.5,
    max_power_w: float = 300.0,
) -> int:
    """Zeus-style energy-optimal clock: argmin ``eta E + (1 - eta) n MAXPOWER T`` per iteration."""
    f = np.asarray(clocks_mhz, float)
    t, e = model.iteration(float(num_gpus), f, float(global_batch_size))
    cost = eta_zeus * np.asarray(e) + (1 - eta_zeus) * num_gpus * max_power_w * np.asarray(t)
    return int(clocks_mhz[int(np.argmin(cost))])


class _NonElastic:
    zeus: bool

    def __init__(
        self,
        models: Mapping[str, IterationModel],
        *,
        clock_mhz: int | None = None,
        zeus: bool = False,
        eta_zeus: float = 0.5,
        max_power_w: float = 300.0,
    ):
        self.models, self.clock, self.zeus = models, clock_mhz, zeus
        self.eta_zeus, self.max_power_w = eta_zeus, max_power_w
        self._zeus: dict[tuple[str, int, int], int] = {}

    def _clock(self, a: ActiveJob, cluster: Cluster) -> int:
        if not self.zeus:
            return int(self.clock if self.clock is not None else max(cluster.clocks_mhz))
        key = (a.workload, a.global_batch_size, a.requested_gpus)
        if key not in self._zeus:
            self._zeus[key] = zeus_clock(
                self.models[a.workload],
                a.global_batch_size,
                a.requested_gpus,
                cluster.clocks_mhz,
                eta_zeus=self.eta_zeus,
                max_power_w=self.max_power_w,
            )
        return self._zeus[key]


class FifoPolicy(_NonElastic):
    """Non-elastic FIFO: running jobs keep their GPUs; the queue head starts when it fits."""

    @property
    def name(self) -> str:
        return "fifo+zeus" if self.zeus else "fifo"

    def decide(self, now_s: float, jobs: list[ActiveJob], cluster: Cluster):
        out = {a.name: (a.requested_gpus, self._clock(a, cluster)) for a in jobs if a.started}
        free = cluster.num_gpus - sum(n for n, _ in out.values())
        for a in jobs:  # arrival order
            if a.started:
                continue
            if a.requested_gpus > free:
                break  # head-of-line blocking, as in plain FIFO
            out[a.name] = (a.requested_gpus, self._clock(a, cluster))
            free -= a.requested_gpus
        return out


class LasPolicy(_NonElastic):
    """Non-elastic least-attained-service (Tiresias-like): fewest GPU-seconds first, preemptive."""

    @property
    def name(self) -> str:
        return "las+zeus" if self.zeus else "las"

    def decide(self, now_s: float, jobs: list[ActiveJob], cluster: Cluster):
        out = {}
        free = cluster.num_gpus
        for a in sorted(jobs, key=lambda a: (a.attained_gpu_s, a.arrival_s, a.name)):
            if a.requested_gpus <= free:
                out[a.name] = (a.requested_gpus, self._clock(a, cluster))
                free -= a.requested_gpus
        return out


class ElasticPolicy:
    """Elastic, not energy-aware (AFS-like), all GPUs at one clock."""

    def __init__(self, models: Mapping[str, IterationModel], *, clock_mhz: int | None = None):
        self.models, self.clock = models, clock_mhz
        self.name = "afs"
        self._tables: _Tables | None = None

    def decide(self, now_s: float, jobs: list[ActiveJob], cluster: Cluster):
        if self._tables is None or self._tables.cluster != cluster:
            self._tables = _Tables(self.models, cluster)
        f = int(self.clock if self.clock is not None else max(cluster.clocks_mhz))
        n = {a.name: 0 for a in jobs}
        free = cluster.num_gpus
        while free > 0:
            best, best_key = None, None
            for a in jobs:
                k = n[a.name]
                k2 = 1 if k == 0 else 2 * k
                if k2 - k > free:
                    continue
                o2 = self._tables.get(a.workload, a.global_batch_size, k2, f)
                if o2 is None:
                    continue
                if k == 0:  # start waiting jobs first, shortest first
                    key = (1, -a.remaining_iterations * o2.iter_time_s)
                else:
                    o1 = self._tables.get(a.workload, a.global_batch_size, k, f)
                    gain = a.remaining_iterations * (o1.iter_time_s - o2.iter_time_s)
                    if gain <= 0:
                        continue
                    key = (0, gain / (k2 - k))
                if best_key is None or key > best_key:
                    best, best_key = a, key
            if best is None:
                break
            k = n[best.name]
            n[best.name] = 1 if k == 0 else 2 * k
            free -= n[best.name] - k
        return {name: (k, f) for name, k in n.items() if k > 0}
