"""The capacity-allocation problem at one rescheduling point (ANDREAS Section IV-A).

A cluster of nodes (GPU type, number of GPUs, power), the jobs in the system
(remaining epochs, profiled time per epoch, due date, tardiness weight, current
configuration when running) and the prices. ``formulations/capacity.md`` states the
model; the equations it numbers (CAP-*) are cited by the code.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from energyopt.core import validate as V
from energyopt.core.instance import InstanceBase, check, finite_nonneg

#: Joules per kilowatt-hour: prices are in EUR/kWh, powers in W, times in s.
J_PER_KWH = 3.6e6
#: Fractional epochs below this count as none (floating-point progress).
EPOCH_TOL = 1e-9
#: The most GPUs a node may have (a node's epoch-time table lists every count up to it).
MAX_GPUS_PER_NODE = 4096


@dataclasses.dataclass(frozen=True)
class Node:
    """A node: ``num_gpus`` GPUs of ``gpu_type``.

    Power is ``idle_power_w + u * gpu_power_w`` while ``u >= 1`` of its GPUs are busy;
    a node without a busy GPU is off and draws nothing (formulations/capacity.md, CAP-0).
    """

    name: str
    gpu_type: str
    num_gpus: int
    idle_power_w: float
    gpu_power_w: float

    def power_w(self, busy_gpus: int) -> float:
        """Node power with ``busy_gpus`` GPUs in use (0 W when none is)."""
        return 0.0 if busy_gpus <= 0 else self.idle_power_w + busy_gpus * self.gpu_power_w

    @property
    def node_class(self) -> tuple[str, int, float, float]:
        """Nodes with the same class are interchangeable for jobs that do not run on them."""
        return (self.gpu_type, self.num_gpus, self.idle_power_w, self.gpu_power_w)


@dataclasses.dataclass(frozen=True)
class Job:
    """A training job in the system.

    Parameters
    ----------
    name
        Label.
    arrival_s
        Submission time (FIFO order).
    due_s
        Due date d_j.
    tardiness_weight_eur_per_s
        w_j: cost of each second of tardiness.
    remaining_epochs
        Epochs still to run. A running job may have a fractional part: the progress
        since its last epoch checkpoint, kept only if it keeps its configuration.
    epoch_time_s
        Profiled seconds per epoch by GPU type; entry ``g - 1`` is the time on ``g``
        GPUs of that type. A type missing here is one the job cannot run on.
    running
        ``(node index, gpus)`` of its current configuration, ``None`` when waiting.
    """

    name: str
    arrival_s: float
    due_s: float
    tardiness_weight_eur_per_s: float
    remaining_epochs: float
    epoch_time_s: Mapping[str, tuple[float, ...]]
    running: tuple[int, int] | None = None

    @property
    def restart_epochs(self) -> float:
        """Epochs left when the job restarts from its last checkpoint (moved or preempted)."""
        return float(math.ceil(self.remaining_epochs - EPOCH_TOL))


@dataclasses.dataclass(frozen=True, eq=False)
class CapacityInstance(InstanceBase):
    """Capacity allocation at one rescheduling point (ANDREAS Sec. IV-A, Eq. 1).

    Parameters
    ----------
    nodes, jobs
        The cluster and the jobs in the system (running or waiting).
    now_s
        T_c, the current time.
    energy_price_eur_per_kwh
        Electricity price (0.172 in the paper).
    pue
        Power usage effectiveness multiplying every node's power (1.33 in the paper).
    postponement_penalty
        beta, the factor on the worst-case tardiness of a postponed job (100 in the paper).
    work_conserving
        When true a job may be postponed only if no configuration of it fits in the
        free GPUs of any node (CAP-9).
    idle_horizon_s
        theta when no job runs: the time to the next rescheduling point then.
    restart_from_checkpoint
        True (the default, and the issue's model): a job that changes configuration
        loses the fraction of the epoch in progress. False: moves are free, the
        assumption of the paper's simulator ("reconfiguration costs ... not
        considered by our simulator", Sec. V-C).
    name, source
        Label, and where the data come from (generator and seed, or ``simulated ...``).
    """

    family = "capacity"

    nodes: tuple[Node, ...]
    jobs: tuple[Job, ...]
    now_s: float = 0.0
    energy_price_eur_per_kwh: float = 0.172
    pue: float = 1.33
    postponement_penalty: float = 100.0
    work_conserving: bool = True
    idle_horizon_s: float = 3600.0
    restart_from_checkpoint: bool = True
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))
        jobs = []
        for j in self.jobs:
            table = MappingProxyType(
                {str(k): tuple(float(t) for t in v) for k, v in dict(j.epoch_time_s).items()}
            )
            run = None
            if j.running is not None:
                where = f"jobs[{len(jobs)}].running"
                run = (V.integer(where, j.running[0]), V.integer(where, j.running[1]))
            jobs.append(dataclasses.replace(j, epoch_time_s=table, running=run))
        object.__setattr__(self, "jobs", tuple(jobs))
        self._validate()

    # -- validation -----------------------------------------------------------------
    def _validate(self) -> None:
        check(len(self.nodes) > 0, "nodes", [], "the cluster has no node")
        check(len(self.jobs) > 0, "jobs", [], "no job in the system")
        for n, node in enumerate(self.nodes):
            _validate_node(node, f"nodes[{n}]")
        self._validate_scalars()
        max_gpus: dict[str, int] = {}
        for node in self.nodes:
            max_gpus[node.gpu_type] = max(max_gpus.get(node.gpu_type, 0), node.num_gpus)
        used = [0] * len(self.nodes)
        for i, job in enumerate(self.jobs):
            f = f"jobs[{i}]"
            _validate_job(job, f, max_gpus)
            # Every job in the system at a rescheduling point has arrived by then.
            check(
                job.arrival_s <= self.now_s,
                f"{f}.arrival_s",
                job.arrival_s,
                f"after the rescheduling point now_s = {self.now_s:g} (not arrived yet)",
            )
            if job.running is not None:
                n, g = self._validate_running(job, f)
                used[n] += g
        for n, u in enumerate(used):
            check(
                u <= self.nodes[n].num_gpus,
                f"nodes[{n}]",
                self.nodes[n].name,
                f"running jobs use {u} GPUs of {self.nodes[n].num_gpus}",
            )

    def _validate_scalars(self) -> None:
        """Prices, PUE, names, times and switches of the point (normalised in place)."""
        for k in ("energy_price_eur_per_kwh", "pue", "postponement_penalty"):
            object.__setattr__(self, k, finite_nonneg(k, getattr(self, k)))
        # A data centre's power usage effectiveness is >= 1 (facility / IT power).
        check(self.pue >= 1.0, "pue", self.pue, "must be >= 1 (facility power / IT power)")
        V.unique("nodes[].name", [n.name for n in self.nodes])
        V.unique("jobs[].name", [j.name for j in self.jobs])
        object.__setattr__(self, "now_s", _finite("now_s", self.now_s))
        h = finite_nonneg("idle_horizon_s", self.idle_horizon_s)
        check(h > 0, "idle_horizon_s", self.idle_horizon_s, "must be positive")
        object.__setattr__(self, "idle_horizon_s", h)
        for k in ("restart_from_checkpoint", "work_conserving"):
            check(isinstance(getattr(self, k), bool), k, getattr(self, k), "must be true or false")

    def _validate_running(self, job: Job, f: str) -> tuple[int, int]:
        """The running configuration ``(n, g)`` of ``job`` (field ``f``), checked."""
        n, g = job.running
        where = list(job.running)
        check(
            0 <= n < len(self.nodes),
            f"{f}.running",
            where,
            f"node index outside 0..{len(self.nodes) - 1}",
        )
        node = self.nodes[n]
        check(
            1 <= g <= node.num_gpus,
            f"{f}.running",
            where,
            f"node {node.name!r} has {node.num_gpus} GPUs",
        )
        check(
            node.gpu_type in job.epoch_time_s,
            f"{f}.running",
            where,
            f"the job has no epoch time on {node.gpu_type}",
        )
        return n, g

    # -- derived data used by the evaluator and every method ------------------------
    @property
    def num_jobs(self) -> int:
        return len(self.jobs)

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @functools.cached_property
    def eur_per_joule(self) -> float:
        """Price of one joule drawn by a node, PUE included."""
        return self.energy_price_eur_per_kwh * self.pue / J_PER_KWH

    def cost_rate_eur_per_s(self, n: int, gpus: int) -> float:
        """c_ng: cost per second of node ``n`` with ``gpus`` GPUs in use (0 when off)."""
        return self.nodes[n].power_w(gpus) * self.eur_per_joule

    def remaining_time_s(self, j: int, n: int, g: int) -> float:
        """R_j(n, g): time to finish job ``j`` on node ``n`` with ``g`` GPUs from now.

        The current configuration keeps the progress since the last checkpoint; any
        other one (a move or a restart) starts from the last checkpoint (CAP-0).
        """
        job = self.jobs[j]
        t = job.epoch_time_s[self.nodes[n].gpu_type][g - 1]
        return self.epochs_on(j, n, g) * t

    def epochs_on(self, j: int, n: int, g: int) -> float:
        """Epochs job ``j`` has left in configuration (n, g): all of them unless it keeps
        its configuration, from the last checkpoint otherwise (CAP-0)."""
        job = self.jobs[j]
        if job.running == (n, g) or not self.restart_from_checkpoint:
            return job.remaining_epochs
        return job.restart_epochs

    def restart_epochs(self, j: int) -> float:
        """Epochs job ``j`` has left in any configuration but its current one."""
        job = self.jobs[j]
        return job.restart_epochs if self.restart_from_checkpoint else job.remaining_epochs

    @functools.cached_property
    def configurations(self) -> tuple[tuple[tuple[int, int, float], ...], ...]:
        """Per job, every (node, gpus, R_j(n, g)) it can run on: the set K_j."""
        out = []
        for j, job in enumerate(self.jobs):
            # Inlined remaining_time_s (a hot path in the simulator): same numbers.
            restart, keep = self.restart_epochs(j), job.running
            confs = []
            for n, node in enumerate(self.nodes):
                times = job.epoch_time_s.get(node.gpu_type)
                if times is None:
                    continue
                for g in range(1, node.num_gpus + 1):
                    epochs = job.remaining_epochs if keep == (n, g) else restart
                    confs.append((n, g, epochs * times[g - 1]))
            out.append(tuple(confs))
        return tuple(out)

    @functools.cached_property
    def instance_id(self) -> str:
        """Content hash (see ``InstanceBase.instance_id``), computed once: the instance is
        immutable, and the simulator asks for it at every call."""
        return InstanceBase.instance_id.fget(self)

    @functools.cached_property
    def compatible_nodes(self) -> tuple[tuple[int, ...], ...]:
        """Per job, the nodes whose GPU type it has a profile for."""
        return tuple(
            tuple(n for n, node in enumerate(self.nodes) if node.gpu_type in job.epoch_time_s)
            for job in self.jobs
        )

    @functools.cached_property
    def max_gpus_by_type(self) -> dict[str, int]:
        """The largest GPU count of a node of each GPU type."""
        out: dict[str, int] = {}
        for node in self.nodes:
            out[node.gpu_type] = max(out.get(node.gpu_type, 0), node.num_gpus)
        return out

    @functools.cached_property
    def min_restart_time_s(self) -> np.ndarray:
        """min over (n, g) of the job's time from its last checkpoint: the postponed case."""
        out = np.empty(self.num_jobs)
        cap = self.max_gpus_by_type
        for j, job in enumerate(self.jobs):
            best = min(min(v[: cap[k]]) for k, v in job.epoch_time_s.items() if k in cap)
            out[j] = self.restart_epochs(j) * best
        return out

    @functools.cached_property
    def min_time_s(self) -> np.ndarray:
        """min over (n, g) of R_j(n, g): the fastest configuration (pressure, Eq. 2)."""
        out = self.min_restart_time_s.copy()
        for j, job in enumerate(self.jobs):
            if job.running is not None:
                out[j] = min(out[j], self.remaining_time_s(j, *job.running))
        return out

    def with_variant(self, work_conserving: bool) -> CapacityInstance:
        """The same point with the other postponement rule."""
        return dataclasses.replace(self, work_conserving=bool(work_conserving))

    # -- JSON -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "version": self.format_version,
            "name": self.name,
            "source": self.source,
            "now_s": self.now_s,
            "energy_price_eur_per_kwh": self.energy_price_eur_per_kwh,
            "pue": self.pue,
            "postponement_penalty": self.postponement_penalty,
            "work_conserving": self.work_conserving,
            "idle_horizon_s": self.idle_horizon_s,
            "restart_from_checkpoint": self.restart_from_checkpoint,
            "nodes": [dataclasses.asdict(n) for n in self.nodes],
            "jobs": [
                {
                    "name": j.name,
                    "arrival_s": j.arrival_s,
                    "due_s": j.due_s,
                    "tardiness_weight_eur_per_s": j.tardiness_weight_eur_per_s,
                    "remaining_epochs": j.remaining_epochs,
                    "epoch_time_s": {k: list(v) for k, v in j.epoch_time_s.items()},
                    "running": None if j.running is None else list(j.running),
                }
                for j in self.jobs
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CapacityInstance:
        """Read a rescheduling point from its JSON object, strictly (``core.validate``).

        A simulation scenario (``"kind": "simulation"``) is another type,
        :class:`~energyopt.capacity.scenario.CapacityScenario`, which
        :func:`energyopt.load_instance` picks by that field."""
        data = V.mapping("instance", data)
        V.version(data)
        nodes = [
            _node_from_json(n, raw)
            for n, raw in enumerate(V.sequence("nodes", V.required(data, "nodes"), nonempty=True))
        ]
        jobs = [
            _job_from_json(i, raw)
            for i, raw in enumerate(V.sequence("jobs", V.required(data, "jobs"), nonempty=True))
        ]
        V.fields(data, "capacity instance", required=_REQUIRED, optional=_OPTIONAL)
        return cls(
            tuple(nodes),
            tuple(jobs),
            now_s=V.number("now_s", data.get("now_s", 0.0)),
            energy_price_eur_per_kwh=V.nonneg(
                "energy_price_eur_per_kwh", data.get("energy_price_eur_per_kwh", 0.172)
            ),
            pue=V.number("pue", data.get("pue", 1.33), minimum=1.0),
            postponement_penalty=V.nonneg(
                "postponement_penalty", data.get("postponement_penalty", 100.0)
            ),
            work_conserving=V.boolean("work_conserving", data.get("work_conserving", True)),
            idle_horizon_s=V.positive("idle_horizon_s", data.get("idle_horizon_s", 3600.0)),
            restart_from_checkpoint=V.boolean(
                "restart_from_checkpoint", data.get("restart_from_checkpoint", True)
            ),
            name=V.string("name", data.get("name", ""), nonempty=False),
            source=V.string("source", data.get("source", ""), nonempty=False),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CapacityInstance) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.instance_id)

    def __repr__(self) -> str:
        running = sum(j.running is not None for j in self.jobs)
        return (
            f"CapacityInstance({self.name or self.instance_id!r}, {self.num_nodes} nodes, "
            f"{self.num_jobs} jobs ({running} running), now_s={self.now_s}, "
            f"work_conserving={self.work_conserving})"
        )


def _finite(field: str, value: Any) -> float:
    return V.number(field, value)


_REQUIRED = ("family", "nodes", "jobs")
_OPTIONAL = (
    "version",
    "name",
    "source",
    "now_s",
    "energy_price_eur_per_kwh",
    "pue",
    "postponement_penalty",
    "work_conserving",
    "idle_horizon_s",
    "restart_from_checkpoint",
)
_NODE_FIELDS = ("name", "gpu_type", "num_gpus", "idle_power_w", "gpu_power_w")
_JOB_FIELDS = (
    "name",
    "arrival_s",
    "due_s",
    "tardiness_weight_eur_per_s",
    "remaining_epochs",
    "epoch_time_s",
)


def _node_from_json(n: int, raw: Any) -> Node:
    f = f"nodes[{n}]"
    node = V.mapping(f, raw)
    V.fields(node, f, required=_NODE_FIELDS)
    return Node(
        V.string(f"{f}.name", node["name"]),
        V.string(f"{f}.gpu_type", node["gpu_type"]),
        V.integer(f"{f}.num_gpus", node["num_gpus"], minimum=1, maximum=MAX_GPUS_PER_NODE),
        V.nonneg(f"{f}.idle_power_w", node["idle_power_w"]),
        V.nonneg(f"{f}.gpu_power_w", node["gpu_power_w"]),
    )


def _job_from_json(i: int, raw: Any) -> Job:
    f = f"jobs[{i}]"
    job = V.mapping(f, raw)
    V.fields(job, f, required=_JOB_FIELDS, optional=("running",))
    table = {}
    for gpu_type, times in V.mapping(f"{f}.epoch_time_s", job["epoch_time_s"]).items():
        ff = f"{f}.epoch_time_s[{gpu_type!r}]"
        values = V.sequence(ff, times, nonempty=True, max_length=MAX_GPUS_PER_NODE)
        table[gpu_type] = tuple(V.positive(f"{ff}[{g}]", t) for g, t in enumerate(values))
    run = job.get("running")
    if run is not None:
        pair = V.sequence(f"{f}.running", run)
        if len(pair) != 2:
            raise V.fail(f"{f}.running", run, "expected null or [node index, gpus]")
        run = (
            V.integer(f"{f}.running[0] (node index)", pair[0], minimum=0),
            V.integer(f"{f}.running[1] (gpus)", pair[1], minimum=1),
        )
    return Job(
        V.string(f"{f}.name", job["name"]),
        V.number(f"{f}.arrival_s", job["arrival_s"]),
        V.number(f"{f}.due_s", job["due_s"]),
        V.nonneg(f"{f}.tardiness_weight_eur_per_s", job["tardiness_weight_eur_per_s"]),
        V.positive(f"{f}.remaining_epochs", job["remaining_epochs"]),
        table,
        run,
    )


def _validate_node(node: Node, f: str) -> None:
    """One node (field ``f``): an integer GPU count >= 1, a GPU type, finite powers."""
    check(isinstance(node, Node), f, node, "not a Node")
    check(
        isinstance(node.num_gpus, int) and not isinstance(node.num_gpus, bool),
        f"{f}.num_gpus",
        node.num_gpus,
        "must be an integer",
    )
    check(node.num_gpus >= 1, f"{f}.num_gpus", node.num_gpus, "must be >= 1")
    check(
        isinstance(node.gpu_type, str) and node.gpu_type != "",
        f"{f}.gpu_type",
        node.gpu_type,
        "must be a non-empty string",
    )
    object.__setattr__(node, "idle_power_w", finite_nonneg(f"{f}.idle_power_w", node.idle_power_w))
    object.__setattr__(node, "gpu_power_w", finite_nonneg(f"{f}.gpu_power_w", node.gpu_power_w))


def _validate_job(job: Job, f: str, max_gpus: dict[str, int]) -> None:
    """One job (field ``f``): finite times and weight, epochs > 0, a runnable profile."""
    check(isinstance(job, Job), f, job, "not a Job")
    object.__setattr__(job, "arrival_s", _finite(f"{f}.arrival_s", job.arrival_s))
    object.__setattr__(job, "due_s", _finite(f"{f}.due_s", job.due_s))
    object.__setattr__(
        job,
        "tardiness_weight_eur_per_s",
        finite_nonneg(f"{f}.tardiness_weight_eur_per_s", job.tardiness_weight_eur_per_s),
    )
    ep = finite_nonneg(f"{f}.remaining_epochs", job.remaining_epochs)
    check(ep > EPOCH_TOL, f"{f}.remaining_epochs", job.remaining_epochs, "must be > 0")
    object.__setattr__(job, "remaining_epochs", ep)
    runnable = False
    for gpu_type, times in job.epoch_time_s.items():
        ff = f"{f}.epoch_time_s[{gpu_type!r}]"
        for g, t in enumerate(times):
            tt = finite_nonneg(f"{ff}[{g}]", t)
            check(tt > 0, f"{ff}[{g}]", t, "must be positive")
        if gpu_type in max_gpus:
            check(
                len(times) >= max_gpus[gpu_type],
                ff,
                list(times),
                f"needs a time for 1..{max_gpus[gpu_type]} GPUs "
                f"(a {gpu_type} node has {max_gpus[gpu_type]})",
            )
            runnable = True
    check(
        runnable,
        f"{f}.epoch_time_s",
        sorted(job.epoch_time_s),
        f"no GPU type of the cluster ({', '.join(sorted(max_gpus))})",
    )
