"""A PowerFlow cluster simulation as an instance of the powercap family (issue 25, item 4).

A :class:`PowercapScenario` is a whole job trace on a cluster under one power cap: the
jobs (arrival, workload, batch size, requested GPUs, iterations), each (workload, batch
size)'s option table (seconds per iteration and watts for every GPU count and clock,
the simulator's truth), the cluster and the cap fraction eta (Eq. 19). Its methods are
the online policies, run by the event simulator (:mod:`energyopt.powercap.simulator`),
and ``offline-bound``, the time-indexed MILP (:mod:`energyopt.powercap.offline`) on the
same trace. The objective is the mean job completion time over the whole trace, which
:func:`evaluate_schedule` recomputes from the simulator's schedule alone.

It is stored as a powercap instance with ``"kind": "simulation"``
(``PowercapInstance.from_dict`` hands such a file to :meth:`PowercapScenario.from_dict`);
the event methods do not apply to it, nor the scenario methods to an event
(:func:`method_applies`, ``FamilyHooks.method_applies``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from energyopt.core.instance import InstanceBase, check, finite_nonneg
from energyopt.core.validate import number
from energyopt.powercap.instance import IterationModel, JobOption, is_power_of_two, option_table
from energyopt.powercap.simulator import Cluster
from energyopt.powercap.trace import Trace, TraceJob

#: What ``"kind"`` marks a scenario in a powercap instance file.
KIND = "simulation"
#: The methods that run on a scenario (and only there).
SCENARIO_METHODS = frozenset({"powerflow", "powerflow-printed", "offline-bound"})
#: Size limits checked before any work (jobs, and options per table).
MAX_JOBS = 5000
MAX_OPTIONS = 4096


class TableModel:
    """An ``IterationModel`` read from option tables: ``iteration(n, f, bs)`` gives
    ``(seconds per iteration, joules per iteration)`` for the tabled configurations."""

    def __init__(self, rows: Mapping[tuple[int, int, int], tuple[float, float]]) -> None:
        self.rows = dict(rows)

    def _one(self, n: float, f: float, bs: float) -> tuple[float, float]:
        key = (int(bs), int(n), int(f))
        if key not in self.rows:
            # An untabled configuration does not exist (infinitely slow, no power drawn).
            return math.inf, 0.0
        t, p = self.rows[key]
        return t, t * p

    def iteration(self, num_gpus: Any, sm_clock_mhz: Any, global_batch_size: Any) -> Any:
        n, f, b = np.broadcast_arrays(
            np.asarray(num_gpus, float), np.asarray(sm_clock_mhz, float), float(global_batch_size)
        )
        if n.ndim == 0:
            return self._one(float(n), float(f), float(b))
        pairs = [self._one(x, y, z) for x, y, z in zip(n.ravel(), f.ravel(), b.ravel())]
        return np.array([t for t, _ in pairs]), np.array([e for _, e in pairs])


def _table_key(workload: str, batch: int) -> str:
    return f"{workload}/{batch}"


@dataclasses.dataclass(frozen=True)
class PowercapScenario(InstanceBase):
    """A trace, its option tables, a cluster and a cap (see the module docstring).

    Attributes
    ----------
    name
        Display name.
    jobs
        The trace's jobs (:class:`~energyopt.powercap.trace.TraceJob`).
    tables
        ``"workload/batch"`` -> the options of that job kind (every GPU count up to
        the cluster and every clock; the simulator's truth).
    cluster
        GPUs, GPUs per node, clocks, idle power, P_max.
    eta
        Cap fraction: the cap is ``eta * G * P_max`` (Eq. 19).
    slot_s
        Slot length of the offline bound's time-indexed MILP.
    source
        Where the trace and tables come from (simulated inputs say so).
    """

    family: ClassVar[str] = "powercap"
    kind: ClassVar[str | None] = KIND

    name: str
    jobs: tuple[TraceJob, ...]
    tables: Mapping[str, tuple[JobOption, ...]]
    cluster: Cluster
    eta: float
    slot_s: float
    source: str = ""

    def __post_init__(self) -> None:
        self._validate()

    @property
    def power_cap_w(self) -> float:
        return self.eta * self.cluster.num_gpus * self.cluster.p_max_w

    @property
    def trace(self) -> Trace:
        return Trace(self.jobs, self.source)

    def models(self) -> dict[str, TableModel]:
        """The truth models, one per workload, from the tables."""
        rows: dict[str, dict[tuple[int, int, int], tuple[float, float]]] = {}
        for key, opts in self.tables.items():
            workload, batch = key.rsplit("/", 1)
            for o in opts:
                rows.setdefault(workload, {})[(int(batch), o.num_gpus, o.sm_clock_mhz)] = (
                    o.iter_time_s,
                    o.power_w,
                )
        return {w: TableModel(r) for w, r in rows.items()}

    def option(self, job: TraceJob, num_gpus: int, clock_mhz: int) -> JobOption | None:
        """The tabled option of ``job`` at (GPUs, clock), if any."""
        for o in self.tables[_table_key(job.workload, job.global_batch_size)]:
            if o.num_gpus == num_gpus and o.sm_clock_mhz == clock_mhz:
                return o
        return None

    def _validate(self) -> None:
        c = self.cluster
        check(isinstance(self.name, str), "name", self.name, "must be a string")
        check(0 < len(self.jobs) <= MAX_JOBS, "jobs", len(self.jobs), f"1 to {MAX_JOBS} jobs")
        number("eta", self.eta, minimum=0.0)
        check(0 < self.eta <= 1, "eta", self.eta, "must be in (0, 1]")
        number("slot_s", self.slot_s, minimum=0.0)
        check(self.slot_s > 0, "slot_s", self.slot_s, "must be positive")
        check(
            isinstance(c.num_gpus, int) and c.num_gpus > 0, "cluster.num_gpus", c.num_gpus, ">= 1"
        )
        check(
            isinstance(c.gpus_per_node, int)
            and c.gpus_per_node > 0
            and c.num_gpus % c.gpus_per_node == 0,
            "cluster.gpus_per_node",
            c.gpus_per_node,
            "a positive divisor of num_gpus",
        )
        finite_nonneg("cluster.idle_power_w", c.idle_power_w)
        check(number("cluster.p_max_w", c.p_max_w) > 0, "cluster.p_max_w", c.p_max_w, "> 0")
        self.trace.validate(c.num_gpus)
        for i, j in enumerate(self.jobs):
            key = _table_key(j.workload, j.global_batch_size)
            check(key in self.tables, f"jobs[{i}].workload", key, "no option table for it")
            check(
                any(o.num_gpus == j.requested_gpus for o in self.tables[key]),
                f"jobs[{i}].requested_gpus",
                j.requested_gpus,
                "no option with that GPU count",
            )
        for key, opts in self.tables.items():
            check(0 < len(opts) <= MAX_OPTIONS, f"tables[{key!r}]", len(opts), "1 to 4096 options")
            for k, o in enumerate(opts):
                f = f"tables[{key!r}][{k}]"
                check(
                    is_power_of_two(o.num_gpus) and o.num_gpus <= c.num_gpus,
                    f"{f}.num_gpus",
                    o.num_gpus,
                    "a power of two within the cluster",
                )
                check(
                    o.sm_clock_mhz in c.clocks_mhz,
                    f"{f}.sm_clock_mhz",
                    o.sm_clock_mhz,
                    "not a cluster clock",
                )
                check(
                    number(f"{f}.iter_time_s", o.iter_time_s) > 0,
                    f"{f}.iter_time_s",
                    o.iter_time_s,
                    "must be positive",
                )
                finite_nonneg(f"{f}.power_w", o.power_w)

    def to_dict(self) -> dict[str, Any]:
        c = self.cluster
        return {
            "family": "powercap",
            "version": 1,
            "kind": KIND,
            "name": self.name,
            "eta": float(self.eta),
            "slot_s": float(self.slot_s),
            "cluster": {
                "num_gpus": c.num_gpus,
                "gpus_per_node": c.gpus_per_node,
                "clocks_mhz": list(c.clocks_mhz),
                "idle_power_w": float(c.idle_power_w),
                "p_max_w": float(c.p_max_w),
            },
            # Floats throughout, so that the content hash survives a JSON round trip.
            "jobs": [
                {
                    **dataclasses.asdict(j),
                    "arrival_s": float(j.arrival_s),
                    "iterations": float(j.iterations),
                }
                for j in self.jobs
            ],
            "tables": {
                k: [
                    [o.num_gpus, o.sm_clock_mhz, float(o.iter_time_s), float(o.power_w)]
                    for o in opts
                ]
                for k, opts in sorted(self.tables.items())
            },
            "source": self.source,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PowercapScenario:
        check(data.get("kind") == KIND, "kind", data.get("kind"), f"must be {KIND!r}")
        cl = data["cluster"]
        for k in ("num_gpus", "gpus_per_node"):
            check(type(cl[k]) is int, f"cluster.{k}", cl[k], "must be an integer")
        cluster = Cluster(
            cl["num_gpus"],
            cl["gpus_per_node"],
            tuple(_int_list("cluster.clocks_mhz", cl["clocks_mhz"])),
            finite_nonneg("cluster.idle_power_w", cl["idle_power_w"]),
            number("cluster.p_max_w", cl["p_max_w"]),
        )
        check(isinstance(data["jobs"], list), "jobs", type(data["jobs"]).__name__, "a list")
        jobs = tuple(_job(i, j) for i, j in enumerate(data["jobs"]))
        check(isinstance(data["tables"], dict), "tables", type(data["tables"]).__name__, "object")
        tables = {str(k): _options(k, v) for k, v in data["tables"].items()}
        return cls(
            str(data.get("name", "")),
            jobs,
            tables,
            cluster,
            number("eta", data["eta"]),
            number("slot_s", data["slot_s"]),
            str(data.get("source", "")),
        )


def _int_list(field: str, raw: Any) -> list[int]:
    check(isinstance(raw, list) and raw, field, raw, "a non-empty list of integers")
    for k, v in enumerate(raw):
        check(type(v) is int, f"{field}[{k}]", v, "must be an integer")
    return list(raw)


def _job(i: int, raw: Any) -> TraceJob:
    f = f"jobs[{i}]"
    check(isinstance(raw, dict), f, type(raw).__name__, "must be an object")
    for k in ("global_batch_size", "requested_gpus"):
        check(type(raw[k]) is int and raw[k] > 0, f"{f}.{k}", raw[k], "a positive integer")
    return TraceJob(
        str(raw["name"]),
        finite_nonneg(f"{f}.arrival_s", raw["arrival_s"]),
        str(raw["workload"]),
        raw["global_batch_size"],
        raw["requested_gpus"],
        number(f"{f}.iterations", raw["iterations"]),
    )


def _options(key: str, raw: Any) -> tuple[JobOption, ...]:
    f = f"tables[{key!r}]"
    check(isinstance(raw, list), f, type(raw).__name__, "a list of [gpus, clock, s/iter, W]")
    out = []
    for k, row in enumerate(raw):
        check(isinstance(row, list) and len(row) == 4, f"{f}[{k}]", row, "[gpus, clock, s, W]")
        for m, name in ((0, "num_gpus"), (1, "sm_clock_mhz")):
            check(type(row[m]) is int, f"{f}[{k}].{name}", row[m], "must be an integer")
        out.append(
            JobOption(
                row[0],
                row[1],
                number(f"{f}[{k}].iter_time_s", row[2]),
                number(f"{f}[{k}].power_w", row[3]),
            )
        )
    return tuple(out)


def scenario_from_trace(
    trace: Trace,
    models: Mapping[str, IterationModel],
    cluster: Cluster,
    eta: float,
    *,
    slot_s: float,
    name: str = "",
) -> PowercapScenario:
    """A scenario from a trace and the models that are its truth (tabled for every job
    kind at every GPU count up to the cluster and every cluster clock)."""
    tables = {}
    for j in trace.jobs:
        key = _table_key(j.workload, j.global_batch_size)
        if key not in tables:
            tables[key] = option_table(
                models[j.workload], j.global_batch_size, cluster.num_gpus, cluster.clocks_mhz
            )
    return PowercapScenario(
        name, trace.jobs, tables, cluster, float(eta), float(slot_s), trace.source
    )


def method_applies(instance: Any, method: str) -> bool:
    """Scenario methods run on scenarios only, every other powercap method on events."""
    return (method in SCENARIO_METHODS) == isinstance(instance, PowercapScenario)


def _segment_power(
    sc: PowercapScenario, by_name: Mapping[str, TraceJob], cfg: Sequence[Any], where: str
) -> tuple[float, int, list[str]]:
    """(job power, GPUs, violations) of one segment's configuration."""
    bad, power, gpus = [], 0.0, 0
    for name, n, f in cfg:
        job = by_name.get(name)
        o = None if job is None else sc.option(job, n, f)
        if o is None:
            bad.append(f"{where}: job {name!r} at ({n} GPUs, {f} MHz) is not a tabled option")
            continue
        power += o.power_w
        gpus += n
    return power, gpus, bad


@dataclasses.dataclass(frozen=True)
class Schedule:
    """A simulation's decisions: ``(start_s, end_s, ((job, GPUs, clock), ...))`` per
    interval (the simulator's ``SimResult.segments``)."""

    segments: tuple[tuple[float, float, tuple[tuple[str, int, int], ...]], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"segments": [[a, b, [list(c) for c in cfg]] for a, b, cfg in self.segments]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Schedule:
        return cls(
            tuple(
                (float(a), float(b), tuple((str(j), int(n), int(f)) for j, n, f in cfg))
                for a, b, cfg in data["segments"]
            )
        )


@dataclasses.dataclass(frozen=True)
class ScenarioEvaluation:
    """The evaluator's figures for a schedule: the objective is the mean JCT."""

    feasible: bool
    violations: tuple[str, ...]
    mean_jct_s: float
    jct_s: Mapping[str, float]
    makespan_s: float
    max_job_power_w: float

    objective_unit = "s"

    @property
    def objective(self) -> float:
        return self.mean_jct_s

    def figures(self) -> dict[str, Any]:
        from energyopt.core.evaluation import Figure

        return {
            "makespan_s": Figure(self.makespan_s, "s"),
            "max_job_power_w": Figure(self.max_job_power_w, "W"),
        }


#: Relative slack of the checks (the simulator works in floating point).
RTOL = 1e-9


def evaluate_schedule(sc: PowercapScenario, schedule: Schedule) -> ScenarioEvaluation:
    """Recompute every job's completion from the schedule and the tables alone.

    Checks: intervals in time order and not overlapping; in each, at most G GPUs, job
    power within the cap ``eta G P_max`` (idle power is not part of the cap here, as in
    the offline bound), only tabled options, no job before its arrival or after its
    completion; every job completes. A job completes when the iterations done at its
    configurations' speeds reach its count.
    """
    by_name = {j.name: j for j in sc.jobs}
    left = {j.name: float(j.iterations) for j in sc.jobs}
    done: dict[str, float] = {}
    bad: list[str] = []
    last, peak = 0.0, 0.0
    for k, (t0, t1, cfg) in enumerate(schedule.segments):
        where = f"interval {k} [{t0:g}, {t1:g}] s"
        if not t0 >= last - RTOL * max(1.0, last) or not t1 >= t0:
            bad.append(f"{where}: out of time order")
        last = max(last, t1)
        power, gpus, why = _segment_power(sc, by_name, cfg, where)
        bad += why
        peak = max(peak, power)
        if gpus > sc.cluster.num_gpus:
            bad.append(f"{where}: {gpus} GPUs on a cluster of {sc.cluster.num_gpus}")
        if power > sc.power_cap_w * (1 + RTOL):
            bad.append(f"{where}: job power {power:.6g} W above the cap {sc.power_cap_w:.6g} W")
        for name, n, f in cfg:
            job, o = by_name.get(name), None
            if job is not None:
                o = sc.option(job, n, f)
            if o is None:
                continue
            if name in done:
                bad.append(f"{where}: job {name!r} runs after its completion")
                continue
            if t0 < job.arrival_s * (1 - RTOL) - RTOL:
                bad.append(f"{where}: job {name!r} runs before its arrival {job.arrival_s:g} s")
            need = left[name] * o.iter_time_s
            if need <= (t1 - t0) * (1 + RTOL) + RTOL:
                done[name] = t0 + need
                left[name] = 0.0
            else:
                left[name] -= (t1 - t0) / o.iter_time_s
    missing = [n for n in left if n not in done]
    if missing:
        bad.append(f"{len(missing)} job(s) never complete, e.g. {missing[0]!r}")
    jct = {n: done[n] - by_name[n].arrival_s for n in done}
    mean = sum(jct.values()) / len(jct) if jct and not missing else math.nan
    return ScenarioEvaluation(not bad, tuple(bad), mean, jct, last, peak)
