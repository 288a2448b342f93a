"""Online simulation of a cluster under any capacity method (ANDREAS Section V-B).

Discrete events: a rescheduling point at every job arrival and every job end (and,
when jobs wait while nothing runs, after the idle horizon). At each point the
simulator builds a :class:`CapacityInstance` of the jobs in the system, calls the
method through :func:`energyopt.solve`, and applies its schedule: a job whose
configuration changes (moved or preempted) restarts from its last epoch checkpoint,
i.e. loses the fractional epoch in progress. Between points, nodes with busy GPUs
draw ``idle + busy * per-GPU`` power; the energy cost accrues as it is drawn and a
job's tardiness penalty ``w_j * max(0, end - d_j)`` at its completion. Everything it
reports is simulated (synthetic jobs, assumed powers), and says so.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from energyopt.capacity.generators import SubmittedJob
from energyopt.capacity.instance import EPOCH_TOL, CapacityInstance, Job, Node
from energyopt.core.registry import solve
from energyopt.core.result import Result


@dataclasses.dataclass
class SimulationReport:
    """Totals of one simulated run (costs in EUR, times in seconds)."""

    method: str
    num_nodes: int
    num_jobs: int
    energy_cost_eur: float
    tardiness_cost_eur: float
    makespan_s: float
    calls: int
    optimizer_time_s: list[float]
    late_jobs: int
    preemptions: int
    migrations: int
    lost_epochs: float = 0.0
    """Epoch fractions thrown away by moves and preemptions (restart from checkpoint)."""
    points: list[CapacityInstance] = dataclasses.field(default_factory=list, repr=False)
    decisions: list[tuple[float, tuple[tuple[str, int, int], ...]]] = dataclasses.field(
        default_factory=list, repr=False
    )
    """Every rescheduling point's schedule: ``(time_s, ((job, node, GPUs), ...))`` for the
    jobs it runs (what :func:`energyopt.capacity.scenario.evaluate_decisions` checks)."""
    restart_from_checkpoint: bool = True
    source: str = "simulated: synthetic jobs and assumed node powers"

    @property
    def total_cost_eur(self) -> float:
        return self.energy_cost_eur + self.tardiness_cost_eur

    @property
    def mean_optimizer_time_s(self) -> float:
        return sum(self.optimizer_time_s) / max(1, len(self.optimizer_time_s))

    @property
    def max_optimizer_time_s(self) -> float:
        return max(self.optimizer_time_s, default=0.0)

    def summary(self) -> dict[str, Any]:
        """Plain numbers, for tables."""
        return {
            "method": self.method,
            "nodes": self.num_nodes,
            "jobs": self.num_jobs,
            "energy_cost_eur": self.energy_cost_eur,
            "tardiness_cost_eur": self.tardiness_cost_eur,
            "total_cost_eur": self.total_cost_eur,
            "makespan_s": self.makespan_s,
            "late_jobs": self.late_jobs,
            "calls": self.calls,
            "mean_call_s": self.mean_optimizer_time_s,
            "max_call_s": self.max_optimizer_time_s,
            "preemptions": self.preemptions,
            "migrations": self.migrations,
            "lost_epochs": self.lost_epochs,
            "restart_from_checkpoint": self.restart_from_checkpoint,
            "source": self.source,
        }


@dataclasses.dataclass
class _State:
    spec: SubmittedJob
    remaining_epochs: float
    running: tuple[int, int] | None = None


#: A policy: a function like a registered method's,
#: ``policy(instance, *, seed, time_limit, **options) -> Result``.
Policy = Callable[..., Result]


@dataclasses.dataclass
class _Totals:
    """What the run has accrued so far."""

    energy: float = 0.0
    tardiness: float = 0.0
    calls: int = 0
    late: int = 0
    preemptions: int = 0
    migrations: int = 0
    lost: float = 0.0
    opt_times: list[float] = dataclasses.field(default_factory=list)
    points: list[CapacityInstance] = dataclasses.field(default_factory=list)
    decisions: list[tuple[float, tuple[tuple[str, int, int], ...]]] = dataclasses.field(
        default_factory=list
    )


def simulate(
    nodes: Sequence[Node],
    jobs: Sequence[SubmittedJob],
    method: str | Policy,
    *,
    seed: int = 0,
    time_limit: float | None = None,
    energy_price_eur_per_kwh: float = 0.172,
    pue: float = 1.33,
    postponement_penalty: float = 100.0,
    work_conserving: bool = True,
    idle_horizon_s: float = 3600.0,
    restart_from_checkpoint: bool = True,
    keep_points_every: int | None = None,
    max_calls: int | None = None,
    max_events: int = 1_000_000,
    **options: Any,
) -> SimulationReport:
    """Run ``jobs`` through the cluster ``nodes`` with capacity method ``method``.

    Parameters
    ----------
    nodes, jobs
        The cluster and the submitted jobs (see :mod:`energyopt.capacity.generators`).
    method
        A registered capacity method (``"randomized-greedy"``, ``"fifo"``, ...), or a
        policy: a function called like a registered method's (:data:`Policy`); its
        ``name`` attribute (or function name) labels the report.
    seed
        Call k gets seed ``seed + k``: the run is deterministic for a seed.
    time_limit
        Per call, passed to the method.
    restart_from_checkpoint
        True: a moved or preempted job loses the epoch in progress (the issue's
        model). False: it keeps it (the paper's simulator ignores reconfiguration
        costs); the instances handed to the method say the same.
    keep_points_every
        Keep every k-th rescheduling point (as an instance) in the report.
    max_calls
        Stop after this many calls (to draw points cheaply): totals cover the time so far.
    **options
        Method options (``max_iterations=...``).

    Returns
    -------
    SimulationReport
    """
    nodes = tuple(nodes)
    pending = sorted(jobs, key=lambda s: (s.arrival_s, s.name))
    if not pending:
        raise ValueError("jobs: nothing to simulate")
    label = method if isinstance(method, str) else _policy_name(method)
    decide: Policy = method if callable(method) else functools.partial(solve, method=method)
    settings = {
        "energy_price_eur_per_kwh": energy_price_eur_per_kwh,
        "pue": pue,
        "postponement_penalty": postponement_penalty,
        "work_conserving": work_conserving,
        "idle_horizon_s": idle_horizon_s,
        "restart_from_checkpoint": restart_from_checkpoint,
    }
    loop = _EventLoop(nodes, pending, decide, label, settings, keep_points_every)
    now, tot = loop.run(seed, time_limit, options, max_calls, max_events)
    return SimulationReport(
        method=label,
        num_nodes=len(nodes),
        num_jobs=len(pending),
        energy_cost_eur=tot.energy,
        tardiness_cost_eur=tot.tardiness,
        makespan_s=now,
        calls=tot.calls,
        optimizer_time_s=tot.opt_times,
        late_jobs=tot.late,
        preemptions=tot.preemptions,
        migrations=tot.migrations,
        lost_epochs=tot.lost,
        points=tot.points,
        decisions=tot.decisions,
        restart_from_checkpoint=restart_from_checkpoint,
    )


@dataclasses.dataclass
class _EventLoop:
    """The simulation proper: rescheduling points, the method's calls, the cluster's run."""

    nodes: tuple[Node, ...]
    pending: list[SubmittedJob]
    decide: Policy
    label: str
    settings: dict[str, Any]
    keep_points_every: int | None

    def run(
        self,
        seed: int,
        time_limit: float | None,
        options: dict[str, Any],
        max_calls: int | None,
        max_events: int,
    ) -> tuple[float, _Totals]:
        """Simulate until every job ends (or ``max_calls``); the end time and the totals."""
        nodes, pending = self.nodes, self.pending
        price = self.settings["energy_price_eur_per_kwh"] * self.settings["pue"] / 3.6e6
        system: list[_State] = []
        now, nxt, tot = 0.0, 0, _Totals()
        for _ in range(max_events):
            if max_calls is not None and tot.calls >= max_calls:
                break
            while nxt < len(pending) and pending[nxt].arrival_s <= now:
                system.append(_State(pending[nxt], float(pending[nxt].epochs)))
                nxt += 1
            if not system and nxt == len(pending):
                break
            if system:
                self._call(system, now, seed, time_limit, options, tot)
            t_next = _next_event(system, nodes, pending, nxt, now, self.settings["idle_horizon_s"])
            _advance(system, nodes, now, t_next, price, tot)
            now = t_next
        else:
            raise RuntimeError(f"simulation did not end within {max_events} events")
        return now, tot

    def _call(
        self,
        system: list[_State],
        now: float,
        seed: int,
        time_limit: float | None,
        options: dict[str, Any],
        tot: _Totals,
    ) -> None:
        """Call the method at the rescheduling point ``now`` and apply its schedule."""
        name = f"{self.label} point {tot.calls} at t={now:.1f}s"
        inst = _point(self.nodes, system, now, name, self.settings)
        result = self.decide(inst, seed=seed + tot.calls, time_limit=time_limit, **options)
        if not result.has_solution:
            raise RuntimeError(
                f"{self.label} returned no schedule at t={now} s: "
                f"{result.termination.value} {result.message}"
            )
        if self.keep_points_every and tot.calls % self.keep_points_every == 0:
            tot.points.append(inst)
        tot.calls += 1
        tot.opt_times.append(result.runtime_s)
        _apply(system, result.solution.assignment, self.settings["restart_from_checkpoint"], tot)
        running = tuple((s.spec.name, s.running[0], s.running[1]) for s in system if s.running)
        tot.decisions.append((now, running))


def _policy_name(policy: Policy) -> str:
    return str(getattr(policy, "name", "") or getattr(policy, "__name__", "") or "policy")


def _point(
    nodes: tuple[Node, ...], system: list[_State], now: float, name: str, settings: dict
) -> CapacityInstance:
    """The rescheduling point at ``now``: the jobs in the system and where they run."""
    return CapacityInstance(
        nodes,
        tuple(
            Job(
                s.spec.name,
                s.spec.arrival_s,
                s.spec.due_s,
                s.spec.tardiness_weight_eur_per_s,
                s.remaining_epochs,
                s.spec.epoch_time_s,
                s.running,
            )
            for s in system
        ),
        now_s=now,
        name=name,
        source="simulated: rescheduling point of energyopt.capacity.simulator",
        **settings,
    )


def _apply(system: list[_State], assignment: Sequence[Any], restart: bool, tot: _Totals) -> None:
    """Apply a schedule: a moved or preempted job restarts from its last epoch checkpoint."""
    for s, a in zip(system, assignment):
        if a != s.running and s.running is not None:
            if restart:
                restart_at = float(math.ceil(s.remaining_epochs - EPOCH_TOL))
                tot.lost += restart_at - s.remaining_epochs
                s.remaining_epochs = restart_at
            if a is None:
                tot.preemptions += 1
            else:
                tot.migrations += 1
        s.running = a


def _next_event(
    system: list[_State],
    nodes: tuple[Node, ...],
    pending: list[SubmittedJob],
    nxt: int,
    now: float,
    idle_horizon_s: float,
) -> float:
    """The next arrival or the first job to end (after the idle horizon when all wait)."""
    ends = [
        (now + s.remaining_epochs * _epoch_time(s, nodes), k)
        for k, s in enumerate(system)
        if s.running is not None
    ]
    t_next = pending[nxt].arrival_s if nxt < len(pending) else math.inf
    if ends:
        t_next = min(t_next, min(ends)[0])
    elif system:  # jobs wait while nothing runs: reschedule after the idle horizon
        t_next = min(t_next, now + idle_horizon_s)
    return t_next


def _advance(
    system: list[_State],
    nodes: tuple[Node, ...],
    now: float,
    t_next: float,
    price: float,
    tot: _Totals,
) -> None:
    """Run the cluster from ``now`` to ``t_next``: energy, progress, completions."""
    dt = t_next - now
    busy = [0] * len(nodes)
    for s in system:
        if s.running is not None:
            busy[s.running[0]] += s.running[1]
    tot.energy += dt * price * sum(nd.power_w(u) for nd, u in zip(nodes, busy))
    finished = []
    for s in system:
        if s.running is None:
            continue
        s.remaining_epochs -= dt / _epoch_time(s, nodes)
        if s.remaining_epochs <= EPOCH_TOL * max(1.0, s.spec.epochs):
            finished.append(s)
    for s in finished:
        if t_next > s.spec.due_s:
            tot.late += 1
            tot.tardiness += s.spec.tardiness_weight_eur_per_s * (t_next - s.spec.due_s)
        system.remove(s)


def _epoch_time(s: _State, nodes: tuple[Node, ...]) -> float:
    n, g = s.running
    return s.spec.epoch_time_s[nodes[n].gpu_type][g - 1]
