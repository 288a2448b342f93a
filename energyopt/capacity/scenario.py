"""An ANDREAS cluster simulation as an instance of the capacity family (issue 25, item 4).

A :class:`CapacityScenario` is a whole stream of submitted jobs on a cluster: the
simulator (:mod:`energyopt.capacity.simulator`) calls a capacity method at every
rescheduling point and runs the cluster in between. Its methods are those online
policies (``online-fifo``, ``online-edf``, ``online-randomized-greedy``) and
``offline-bound``, a relaxation over the whole horizon (:func:`offline_bound`). The
objective is the cumulative cost of the trace, energy plus tardiness in EUR, which
:func:`evaluate_decisions` recomputes from the rescheduling decisions alone.

It is stored as a capacity instance with ``"kind": "simulation"``
(``CapacityInstance.from_dict`` hands such a file to :meth:`CapacityScenario.from_dict`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from energyopt.capacity.generators import SubmittedJob
from energyopt.capacity.instance import EPOCH_TOL, Node
from energyopt.core.instance import InstanceBase, check, finite_nonneg
from energyopt.core.validate import number

KIND = "simulation"
#: Policy run at every rescheduling point by each scenario method.
POLICIES = {
    "online-fifo": "fifo",
    "online-edf": "edf",
    "online-randomized-greedy": "randomized-greedy",
}
SCENARIO_METHODS = frozenset({*POLICIES, "offline-bound"})
MAX_JOBS = 5000


@dataclasses.dataclass(frozen=True)
class CapacityScenario(InstanceBase):
    """Nodes, submitted jobs and the cost settings of one simulated run."""

    family: ClassVar[str] = "capacity"
    kind: ClassVar[str | None] = KIND

    name: str
    nodes: tuple[Node, ...]
    jobs: tuple[SubmittedJob, ...]
    energy_price_eur_per_kwh: float = 0.172
    pue: float = 1.33
    restart_from_checkpoint: bool = True
    source: str = ""

    def __post_init__(self) -> None:
        check(0 < len(self.nodes), "nodes", len(self.nodes), "at least one node")
        check(0 < len(self.jobs) <= MAX_JOBS, "jobs", len(self.jobs), f"1 to {MAX_JOBS} jobs")
        check(
            number("energy_price_eur_per_kwh", self.energy_price_eur_per_kwh) > 0,
            "energy_price_eur_per_kwh",
            self.energy_price_eur_per_kwh,
            "must be positive",
        )
        check(number("pue", self.pue) >= 1, "pue", self.pue, "must be >= 1")
        check(
            isinstance(self.restart_from_checkpoint, bool),
            "restart_from_checkpoint",
            self.restart_from_checkpoint,
            "must be true or false",
        )
        types = {n.gpu_type: n.num_gpus for n in self.nodes}
        names = set()
        for i, j in enumerate(self.jobs):
            f = f"jobs[{i}]"
            check(j.name not in names, f"{f}.name", j.name, "duplicate job name")
            names.add(j.name)
            finite_nonneg(f"{f}.arrival_s", j.arrival_s)
            finite_nonneg(f"{f}.due_s", j.due_s)
            finite_nonneg(f"{f}.tardiness_weight_eur_per_s", j.tardiness_weight_eur_per_s)
            check(type(j.epochs) is int and j.epochs > 0, f"{f}.epochs", j.epochs, "int >= 1")
            check(
                any(t in types for t in j.epoch_time_s),
                f"{f}.epoch_time_s",
                sorted(j.epoch_time_s),
                "no GPU type of the cluster",
            )
            for t, row in j.epoch_time_s.items():
                for g, x in enumerate(row, 1):
                    check(
                        number(f"{f}.epoch_time_s[{t!r}][{g - 1}]", x) > 0,
                        f"{f}.epoch_time_s[{t!r}][{g - 1}]",
                        x,
                        "must be positive",
                    )

    @property
    def price_per_joule(self) -> float:
        """EUR per joule drawn (price per kWh times PUE)."""
        return self.energy_price_eur_per_kwh * self.pue / 3.6e6

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": "capacity",
            "version": 1,
            "kind": KIND,
            "name": self.name,
            "energy_price_eur_per_kwh": float(self.energy_price_eur_per_kwh),
            "pue": float(self.pue),
            "restart_from_checkpoint": self.restart_from_checkpoint,
            "nodes": [dataclasses.asdict(n) for n in self.nodes],
            "jobs": [
                {
                    **dataclasses.asdict(j),
                    "arrival_s": float(j.arrival_s),
                    "due_s": float(j.due_s),
                    "tardiness_weight_eur_per_s": float(j.tardiness_weight_eur_per_s),
                    "epoch_time_s": {k: [float(x) for x in v] for k, v in j.epoch_time_s.items()},
                }
                for j in self.jobs
            ],
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CapacityScenario:
        check(data.get("kind") == KIND, "kind", data.get("kind"), f"must be {KIND!r}")
        check(isinstance(data["nodes"], list), "nodes", type(data["nodes"]).__name__, "a list")
        check(isinstance(data["jobs"], list), "jobs", type(data["jobs"]).__name__, "a list")
        return cls(
            str(data.get("name", "")),
            tuple(_node(i, raw) for i, raw in enumerate(data["nodes"])),
            tuple(_job(i, raw) for i, raw in enumerate(data["jobs"])),
            number("energy_price_eur_per_kwh", data["energy_price_eur_per_kwh"]),
            number("pue", data["pue"]),
            data["restart_from_checkpoint"],
            str(data.get("source", "")),
        )


def _node(i: int, raw: Any) -> Node:
    f = f"nodes[{i}]"
    check(isinstance(raw, dict), f, type(raw).__name__, "must be an object")
    check(
        type(raw["num_gpus"]) is int and raw["num_gpus"] > 0,
        f"{f}.num_gpus",
        raw["num_gpus"],
        "a positive integer",
    )
    return Node(
        str(raw["name"]),
        str(raw["gpu_type"]),
        raw["num_gpus"],
        finite_nonneg(f"{f}.idle_power_w", raw["idle_power_w"]),
        finite_nonneg(f"{f}.gpu_power_w", raw["gpu_power_w"]),
    )


def _job(i: int, raw: Any) -> SubmittedJob:
    f = f"jobs[{i}]"
    check(isinstance(raw, dict), f, type(raw).__name__, "must be an object")
    table = raw["epoch_time_s"]
    check(isinstance(table, dict), f"{f}.epoch_time_s", table, "an object: GPU type -> list")
    rows = {}
    for t, row in table.items():
        check(isinstance(row, list) and row, f"{f}.epoch_time_s[{t!r}]", row, "a non-empty list")
        rows[str(t)] = tuple(number(f"{f}.epoch_time_s[{t!r}][{g}]", x) for g, x in enumerate(row))
    return SubmittedJob(
        str(raw["name"]),
        str(raw.get("kind", "")),
        number(f"{f}.arrival_s", raw["arrival_s"]),
        number(f"{f}.due_s", raw["due_s"]),
        number(f"{f}.tardiness_weight_eur_per_s", raw["tardiness_weight_eur_per_s"]),
        raw["epochs"],
        rows,
    )


def method_applies(instance: Any, method: str) -> bool:
    """Scenario methods run on scenarios only, every other capacity method on points."""
    return (method in SCENARIO_METHODS) == isinstance(instance, CapacityScenario)


@dataclasses.dataclass(frozen=True)
class Decisions:
    """A simulation's rescheduling decisions: ``(time_s, ((job, node, GPUs), ...))``."""

    points: tuple[tuple[float, tuple[tuple[str, int, int], ...]], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"points": [[t, [list(r) for r in run]] for t, run in self.points]}


@dataclasses.dataclass(frozen=True)
class ScenarioEvaluation:
    """The evaluator's figures: the objective is the cumulative cost (EUR)."""

    feasible: bool
    violations: tuple[str, ...]
    energy_cost_eur: float
    tardiness_cost_eur: float
    end_s: Mapping[str, float]

    objective_unit = "EUR"

    @property
    def objective(self) -> float:
        return self.energy_cost_eur + self.tardiness_cost_eur

    def figures(self) -> dict[str, Any]:
        from energyopt.core.evaluation import Figure

        return {
            "energy_cost_eur": Figure(self.energy_cost_eur, "EUR"),
            "tardiness_cost_eur": Figure(self.tardiness_cost_eur, "EUR"),
        }


#: Relative slack of the evaluator's time checks (the simulator works in floating point).
RTOL = 1e-9


def _check_run(
    sc: CapacityScenario, t: float, run: Sequence[Any], ended: Mapping[str, float], where: str
) -> tuple[dict[str, tuple[int, int]], list[str]]:
    """The configuration of each running job at a point, and what is wrong with it."""
    by_name = {j.name: j for j in sc.jobs}
    out, bad, busy = {}, [], [0] * len(sc.nodes)
    for name, n, g in run:
        job = by_name.get(name)
        ok_node = isinstance(n, int) and 0 <= n < len(sc.nodes)
        row = job.epoch_time_s.get(sc.nodes[n].gpu_type, ()) if job and ok_node else ()
        if job is None or not ok_node or not 1 <= g <= len(row):
            bad.append(f"{where}: job {name!r} on node {n} with {g} GPU(s) is no configuration")
            continue
        if name in ended:
            bad.append(f"{where}: job {name!r} runs after it ended")
        if job.arrival_s > t * (1 + RTOL) + RTOL:
            bad.append(f"{where}: job {name!r} runs before its arrival {job.arrival_s:g} s")
        out[name] = (n, g)
        busy[n] += g
    for n, u in enumerate(busy):
        if u > sc.nodes[n].num_gpus:
            bad.append(f"{where}: {u} GPUs busy on node {n} of {sc.nodes[n].num_gpus}")
    return out, bad


def evaluate_decisions(sc: CapacityScenario, decisions: Decisions) -> ScenarioEvaluation:
    """Recompute the run's cost from its rescheduling decisions and the tables alone.

    Between two points each running job trains at its configuration's epoch time; a job
    whose configuration changes (or that is stopped) restarts from its last whole epoch
    when ``restart_from_checkpoint``; nodes draw ``idle + busy * per-GPU`` while a GPU is
    busy; a job ending after its due time pays ``w_j`` per second late. Checks: points
    in time order, configurations that exist, GPUs within each node, no job before its
    arrival or after its end, every job ends.
    """
    by_name = {j.name: j for j in sc.jobs}
    left = {j.name: float(j.epochs) for j in sc.jobs}
    ended: dict[str, float] = {}
    running: dict[str, tuple[int, int]] = {}
    bad: list[str] = []
    energy = 0.0
    pts = decisions.points
    for k, (t, run) in enumerate(pts):
        where = f"point {k} (t = {t:g} s)"
        if k and t < pts[k - 1][0]:
            bad.append(f"{where}: before the previous point")
        new, why = _check_run(sc, t, run, ended, where)
        bad += why
        for name, cfg in running.items():
            if new.get(name) != cfg and sc.restart_from_checkpoint and name not in ended:
                left[name] = float(math.ceil(left[name] - EPOCH_TOL))
        running = new
        t_next = pts[k + 1][0] if k + 1 < len(pts) else math.inf
        energy += _run_until(sc, by_name, running, left, ended, t, t_next)
    missing = [j.name for j in sc.jobs if j.name not in ended]
    if missing:
        bad.append(f"{len(missing)} job(s) never end, e.g. {missing[0]!r}")
    tardy = sum(
        by_name[n].tardiness_weight_eur_per_s * max(0.0, e - by_name[n].due_s)
        for n, e in ended.items()
    )
    return ScenarioEvaluation(not bad, tuple(bad), energy * sc.price_per_joule, tardy, ended)


def _run_until(
    sc: CapacityScenario,
    by_name: Mapping[str, SubmittedJob],
    running: dict[str, tuple[int, int]],
    left: dict[str, float],
    ended: dict[str, float],
    t: float,
    t_next: float,
) -> float:
    """Run the cluster from ``t`` to ``t_next`` (piece by piece as jobs end); joules."""
    joules = 0.0
    active = {n: c for n, c in running.items() if n not in ended}
    while active and t < t_next:
        tau = {
            n: by_name[n].epoch_time_s[sc.nodes[c[0]].gpu_type][c[1] - 1] for n, c in active.items()
        }
        first = min(t + left[n] * tau[n] for n in active)
        stop = min(first, t_next)
        busy = [0] * len(sc.nodes)
        for n, g in active.values():
            busy[n] += g
        joules += (stop - t) * sum(nd.power_w(u) for nd, u in zip(sc.nodes, busy))
        for n in list(active):
            left[n] -= (stop - t) / tau[n]
            if left[n] <= EPOCH_TOL * max(1.0, by_name[n].epochs):
                ended[n] = stop
                del active[n]
        t = stop
    return joules
