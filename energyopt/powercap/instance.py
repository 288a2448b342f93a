"""The scheduling-event instance of the JCT-under-a-power-cap problem (PowerFlow 5.2).

At one scheduling event the cluster has ``G`` GPUs in nodes of ``r``; each active
job has remaining iterations, an age and a table of configurations (GPU count, SM
clock) with their predicted iteration time and power. The problem (PC-9..PC-15 of
``formulations/powercap.md``) picks one configuration per job.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from energyopt.core import validate as V
from energyopt.core.instance import InstanceBase, InstanceError, check, finite_nonneg

#: What an option's setting is (the first is the default, PowerFlow's SM clock).
KNOBS = ("sm_clock_mhz", "power_limit_w")
#: Option tables already validated, by (id, G); the value keeps the tuple alive so that
#: its id cannot be reused. The simulator shares one table per (workload, batch) across
#: thousands of events; re-checking it each time dominated the run time.
_CHECKED_TABLES: dict[tuple[int, int], tuple] = {}


@dataclasses.dataclass(frozen=True)
class _TableFacts:
    options: tuple
    index: dict
    has_one_gpu: bool
    max_gpus: int
    efficient: JobOption
    clocks: tuple[int, ...]


_FACTS: dict[int, _TableFacts] = {}


def _facts(options: tuple) -> _TableFacts:
    """Lookup index and summary of an option table, computed once per table object."""
    f = _FACTS.get(id(options))
    if f is not None and f.options is options:
        return f
    n_min = min(o.num_gpus for o in options)
    pool = [o for o in options if o.num_gpus == n_min]
    f = _TableFacts(
        options,
        {(o.num_gpus, o.sm_clock_mhz): o for o in options},
        any(o.num_gpus == 1 for o in options),
        max(o.num_gpus for o in options),
        min(pool, key=lambda o: (o.energy_per_iter_j, -o.sm_clock_mhz)),
        tuple(sorted({o.sm_clock_mhz for o in options})),
    )
    if len(_FACTS) > 20000:
        _FACTS.clear()
    _FACTS[id(options)] = f
    return f


def is_power_of_two(n: int) -> bool:
    return n >= 1 and (n & (n - 1)) == 0


@dataclasses.dataclass(frozen=True)
class JobOption:
    """One configuration of a job: GPUs, clock, predicted seconds per iteration, watts."""

    num_gpus: int
    sm_clock_mhz: int
    iter_time_s: float
    power_w: float

    @property
    def energy_per_iter_j(self) -> float:
        return self.iter_time_s * self.power_w


@dataclasses.dataclass(frozen=True)
class EventJob:
    """A job at the scheduling event.

    Attributes
    ----------
    name
        Identifier (unique within the instance).
    remaining_iterations
        Iterations left to train.
    age_s
        Seconds since the job's arrival (its JCT so far).
    options
        The configurations it may run in (GPU count a power of two, a supported clock).
    min_gpus
        0 for a preemptible job; otherwise it must get at least this many GPUs.
    workload, global_batch_size
        Informational.
    """

    name: str
    remaining_iterations: float
    age_s: float
    options: tuple[JobOption, ...]
    min_gpus: int = 0
    workload: str = ""
    global_batch_size: int = 0

    def option(self, num_gpus: int, sm_clock_mhz: int) -> JobOption | None:
        return _facts(self.options).index.get((num_gpus, sm_clock_mhz))

    @property
    def option_index(self) -> dict[tuple[int, int], JobOption]:
        """``(num_gpus, sm_clock_mhz) -> option`` (shared, do not modify)."""
        return _facts(self.options).index

    @property
    def clocks_mhz(self) -> tuple[int, ...]:
        """The job's supported clocks, ascending."""
        return _facts(self.options).clocks


@dataclasses.dataclass(frozen=True, eq=False)
class PowercapInstance(InstanceBase):
    """One scheduling event of PowerFlow (Eqs. 18-19 with network packing, 5.3).

    Parameters
    ----------
    num_gpus
        G, the GPUs of the cluster.
    gpus_per_node
        r, GPUs per node (a power of two dividing G).
    eta
        Power-cap fraction; the cap is ``eta * G * p_max_w`` (Eq. 19).
    p_max_w
        P_max, mean GPU power of a training job at the highest clock.
    idle_power_w
        Power of an idle GPU on a powered node; nodes with no job are shut down.
    wait_estimate_s
        Waiting time charged to a job given no GPU at this event (PC-10).
    jobs
        The active jobs.
    name, source
        A label; where the option tables come from (``simulated ...`` when so).
    knob
        What an option's setting is: ``sm_clock_mhz`` (the SM clock, PowerFlow's knob)
        or ``power_limit_w`` (a power limit in watts, for jobs profiled over power
        limits: :mod:`energyopt.powercap.measured`). The methods treat the setting as
        an ordered label either way.
    """

    family = "powercap"

    num_gpus: int
    gpus_per_node: int
    eta: float
    p_max_w: float
    idle_power_w: float
    wait_estimate_s: float
    jobs: tuple[EventJob, ...]
    name: str = ""
    source: str = ""
    knob: str = "sm_clock_mhz"

    def __post_init__(self) -> None:
        object.__setattr__(self, "jobs", tuple(self.jobs))
        self._validate()

    @property
    def power_cap_w(self) -> float:
        """Eq. 19: ``eta * G * P_max``."""
        return self.eta * self.num_gpus * self.p_max_w

    @property
    def num_nodes(self) -> int:
        return self.num_gpus // self.gpus_per_node

    def efficient_option(self, j: int) -> JobOption:
        """The one-GPU configuration of job ``j`` with the least energy per iteration.

        Its clock is the "most energy-efficient GPU frequency" where Algorithm 1
        starts; ties go to the higher clock. (A job without one-GPU options uses its
        smallest GPU count.)
        """
        return self._efficient[j]

    @functools.cached_property
    def _efficient(self) -> tuple[JobOption, ...]:
        return tuple(_facts(job.options).efficient for job in self.jobs)

    def queued_jct_s(self, j: int) -> float:
        """PC-10: JCT of job ``j`` given no GPU now.

        Age, plus the stated waiting estimate, plus its remaining iterations on one
        GPU at its most energy-efficient clock (where it would restart).
        """
        job = self.jobs[j]
        t1 = self.efficient_option(j).iter_time_s
        return job.age_s + self.wait_estimate_s + job.remaining_iterations * t1

    def jct_s(self, j: int, option: JobOption) -> float:
        """PC-9: predicted JCT of job ``j`` in ``option``: age + remaining * T_iter."""
        job = self.jobs[j]
        return job.age_s + job.remaining_iterations * option.iter_time_s

    def _validate(self) -> None:
        """Check the cluster, the power figures and every job; normalise the floats."""
        self._validate_cluster()
        self._validate_power()
        V.choice("knob", self.knob, KNOBS)
        check(len(self.jobs) > 0, "jobs", [], "no job at the event")
        names: set[str] = set()
        for i, job in enumerate(self.jobs):
            f = f"jobs[{i}]"
            check(job.name not in names, f"{f}.name", job.name, "duplicate job name")
            names.add(job.name)
            _validate_job(f, job, self.num_gpus)

    def _validate_cluster(self) -> None:
        """G GPUs in nodes of r, r a power of two dividing G (buddy placement, 5.3)."""
        g, r = self.num_gpus, self.gpus_per_node
        check(isinstance(g, int) and g >= 1, "num_gpus", g, "must be an integer >= 1")
        check(
            isinstance(r, int) and is_power_of_two(r),
            "gpus_per_node",
            r,
            "must be a power of two (buddy placement, 5.3)",
        )
        check(g % r == 0, "num_gpus", g, f"must be a multiple of gpus_per_node = {r}")

    def _validate_power(self) -> None:
        """The cap fraction, P_max, idle power and the waiting estimate, as floats."""
        eta = finite_nonneg("eta", self.eta)
        check(eta > 0, "eta", self.eta, "must be positive (the cap is eta * G * P_max)")
        # A fraction of the cluster's peak power (Eq. 19): above 1 the cap never binds.
        check(eta <= 1, "eta", self.eta, "must lie in (0, 1] (a fraction of G * P_max)")
        object.__setattr__(self, "eta", eta)
        pmax = finite_nonneg("p_max_w", self.p_max_w)
        check(pmax > 0, "p_max_w", self.p_max_w, "must be positive")
        object.__setattr__(self, "p_max_w", pmax)
        idle = finite_nonneg("idle_power_w", self.idle_power_w)
        # An idle GPU draws less than a training job at the highest clock; a larger value
        # is a unit error, and would dwarf every job's power in the cap (Eq. 19).
        check(idle <= pmax, "idle_power_w", self.idle_power_w, f"must be <= p_max_w = {pmax:g}")
        object.__setattr__(self, "idle_power_w", idle)
        object.__setattr__(
            self, "wait_estimate_s", finite_nonneg("wait_estimate_s", self.wait_estimate_s)
        )

    def to_dict(self) -> dict[str, Any]:
        # The default knob is not written: files from before the field stay byte-identical.
        knob = {} if self.knob == KNOBS[0] else {"knob": self.knob}
        return {
            "family": self.family,
            "version": self.format_version,
            "name": self.name,
            "source": self.source,
            "num_gpus": self.num_gpus,
            "gpus_per_node": self.gpus_per_node,
            "eta": self.eta,
            "p_max_w": self.p_max_w,
            "idle_power_w": self.idle_power_w,
            "wait_estimate_s": self.wait_estimate_s,
            **knob,
            "jobs": [
                {
                    "name": j.name,
                    "workload": j.workload,
                    "global_batch_size": j.global_batch_size,
                    "remaining_iterations": j.remaining_iterations,
                    "age_s": j.age_s,
                    "min_gpus": j.min_gpus,
                    "options": [
                        [o.num_gpus, o.sm_clock_mhz, o.iter_time_s, o.power_w] for o in j.options
                    ],
                }
                for j in self.jobs
            ],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PowercapInstance:
        """Read an event from its JSON object, strictly (``core.validate``).

        A simulation scenario (``"kind": "simulation"``) is another type,
        :class:`~energyopt.powercap.scenario.PowercapScenario`, which
        :func:`energyopt.load_instance` picks by that field."""
        data = V.mapping("instance", data)
        V.version(data)
        V.fields(data, "powercap instance", required=_REQUIRED, optional=_OPTIONAL)
        num_gpus = V.integer("num_gpus", data["num_gpus"], minimum=1)
        jobs = [
            _job_from_json(i, raw)
            for i, raw in enumerate(V.sequence("jobs", data["jobs"], nonempty=True))
        ]
        return cls(
            num_gpus,
            V.integer("gpus_per_node", data["gpus_per_node"], minimum=1),
            V.positive("eta", data["eta"]),
            V.positive("p_max_w", data["p_max_w"]),
            V.nonneg("idle_power_w", data["idle_power_w"]),
            V.nonneg("wait_estimate_s", data["wait_estimate_s"]),
            tuple(jobs),
            V.string("name", data.get("name", ""), nonempty=False),
            V.string("source", data.get("source", ""), nonempty=False),
            V.choice("knob", data.get("knob", KNOBS[0]), KNOBS),
        )


def _validate_job(f: str, job: EventJob, g: int) -> None:
    """One job at the event: its progress, its GPU floor and its option table."""
    rem = finite_nonneg(f"{f}.remaining_iterations", job.remaining_iterations)
    check(rem > 0, f"{f}.remaining_iterations", rem, "must be positive")
    finite_nonneg(f"{f}.age_s", job.age_s)
    check(
        isinstance(job.min_gpus, int) and job.min_gpus >= 0,
        f"{f}.min_gpus",
        job.min_gpus,
        "must be an integer >= 0",
    )
    check(
        job.min_gpus <= g,
        f"{f}.min_gpus",
        job.min_gpus,
        f"job {job.name!r} needs more GPUs than the cluster has ({g})",
    )
    check(len(job.options) > 0, f"{f}.options", [], "no configuration")
    _validate_options_once(f, job, g)
    facts = _facts(job.options)
    check(
        facts.max_gpus >= max(job.min_gpus, 1),
        f"{f}.min_gpus",
        job.min_gpus,
        f"job {job.name!r} has no configuration with that many GPUs",
    )
    if job.min_gpus == 0:
        check(
            facts.has_one_gpu,
            f"{f}.options",
            "...",
            "a preemptible job needs a one-GPU configuration (its queued JCT, PC-10)",
        )


def _validate_options_once(f: str, job: EventJob, g: int) -> None:
    """Check the job's option table against ``G``, unless this very table already was."""
    if _CHECKED_TABLES.get((id(job.options), g)) is job.options:
        return
    seen: set[tuple[int, int]] = set()
    for k, o in enumerate(job.options):
        _validate_option(f"{f}.options[{k}]", job.name, o, g, seen)
    if len(_CHECKED_TABLES) > 20000:
        _CHECKED_TABLES.clear()
    _CHECKED_TABLES[(id(job.options), g)] = job.options


def _validate_option(fo: str, job_name: str, o: JobOption, g: int, seen: set) -> None:
    """One configuration: a power-of-two GPU count within G, positive time, no duplicate."""
    check(
        isinstance(o.num_gpus, int) and is_power_of_two(o.num_gpus),
        f"{fo}.num_gpus",
        o.num_gpus,
        "must be a power of two >= 1 (network packing, 5.3)",
    )
    check(
        o.num_gpus <= g,
        f"{fo}.num_gpus",
        o.num_gpus,
        f"job {job_name!r}: more GPUs than the cluster has ({g})",
    )
    t = finite_nonneg(f"{fo}.iter_time_s", o.iter_time_s)
    check(t > 0, f"{fo}.iter_time_s", o.iter_time_s, "must be positive")
    finite_nonneg(f"{fo}.power_w", o.power_w)
    key = (o.num_gpus, o.sm_clock_mhz)
    check(key not in seen, f"{fo}", key, "duplicate (num_gpus, sm_clock_mhz)")
    seen.add(key)


_REQUIRED = (
    "family",
    "num_gpus",
    "gpus_per_node",
    "eta",
    "p_max_w",
    "idle_power_w",
    "wait_estimate_s",
    "jobs",
)
_OPTIONAL = ("version", "name", "source", "knob")
_JOB_REQUIRED = ("name", "remaining_iterations", "age_s", "options")
_JOB_OPTIONAL = ("min_gpus", "workload", "global_batch_size")


def _job_from_json(i: int, raw: Any) -> EventJob:
    f = f"jobs[{i}]"
    job = V.mapping(f, raw)
    V.fields(job, f, required=_JOB_REQUIRED, optional=_JOB_OPTIONAL)
    options = []
    for k, o in enumerate(V.sequence(f"{f}.options", job["options"], nonempty=True)):
        fo = f"{f}.options[{k}]"
        if not isinstance(o, list | tuple) or len(o) != 4:
            raise V.fail(fo, o, "expected [num_gpus, sm_clock_mhz, iter_time_s, power_w]")
        options.append(
            JobOption(
                V.integer(f"{fo}[0] (num_gpus)", o[0], minimum=1),
                V.integer(f"{fo}[1] (sm_clock_mhz)", o[1], minimum=1, maximum=None),
                V.positive(f"{fo}[2] (iter_time_s)", o[2]),
                V.nonneg(f"{fo}[3] (power_w)", o[3]),
            )
        )
    return EventJob(
        V.string(f"{f}.name", job["name"]),
        V.positive(f"{f}.remaining_iterations", job["remaining_iterations"]),
        V.nonneg(f"{f}.age_s", job["age_s"]),
        tuple(options),
        V.integer(f"{f}.min_gpus", job.get("min_gpus", 0), minimum=0),
        V.string(f"{f}.workload", job.get("workload", ""), nonempty=False),
        V.integer(f"{f}.global_batch_size", job.get("global_batch_size", 0), minimum=0),
    )


class IterationModel(Protocol):
    """Anything with ``iteration(num_gpus, sm_clock_mhz, global_batch_size) -> (s, J)``."""

    def iteration(self, num_gpus: Any, sm_clock_mhz: Any, global_batch_size: Any) -> Any: ...


@dataclasses.dataclass(frozen=True)
class EventJobInput:
    """What the builder needs to know about a job at an event (see :func:`event_instance`)."""

    name: str
    workload: str
    global_batch_size: int
    remaining_iterations: float
    age_s: float = 0.0
    min_gpus: int = 0
    max_gpus: int | None = None


def option_table(
    model: IterationModel,
    global_batch_size: int,
    num_gpus: int,
    clocks_mhz: Sequence[int],
    *,
    max_gpus: int | None = None,
) -> tuple[JobOption, ...]:
    """All configurations of a job: powers of two up to ``min(G, max_gpus, batch)``, every clock.

    Power is ``E_iter / T_iter`` (PowerFlow 5.2: ``P = E_iter / T_iter``).
    """
    cap = min(num_gpus, max_gpus or num_gpus, max(1, int(global_batch_size)))
    ns = [1 << k for k in range(int(math.log2(cap)) + 1)]
    nn, ff = np.meshgrid(np.array(ns, float), np.array(clocks_mhz, float), indexing="ij")
    t, e = model.iteration(nn.ravel(), ff.ravel(), float(global_batch_size))
    t, e = np.broadcast_to(t, nn.size), np.broadcast_to(e, nn.size)
    return tuple(
        JobOption(int(n), int(f), float(ti), float(ei / ti))
        for n, f, ti, ei in zip(nn.ravel(), ff.ravel(), t, e)
    )


def p_max_from_models(
    models: Mapping[str, IterationModel],
    clocks_mhz: Sequence[int],
    batch_sizes: Mapping[str, Sequence[int]] | None = None,
) -> float:
    """P_max of Eq. 19: mean one-GPU power over the workloads at the highest clock."""
    f = max(clocks_mhz)
    powers = []
    for name, m in models.items():
        for bs in (batch_sizes or {}).get(name, (32,)):
            t, e = m.iteration(1.0, float(f), float(bs))
            powers.append(float(e) / float(t))
    return float(np.mean(powers))


def event_instance(
    jobs: Sequence[EventJobInput],
    models: Mapping[str, IterationModel],
    *,
    num_gpus: int,
    gpus_per_node: int,
    eta: float,
    p_max_w: float,
    clocks_mhz: Sequence[int],
    idle_power_w: float,
    wait_estimate_s: float = 0.0,
    name: str = "",
    source: str = "",
) -> PowercapInstance:
    """Build an event instance with each job's option table predicted by ``models``."""
    ev = []
    for i, spec in enumerate(jobs):
        if spec.workload not in models:
            raise InstanceError(
                f"jobs[{i}].workload = {spec.workload!r}: no model (known: {sorted(models)})"
            )
        if spec.min_gpus > num_gpus:
            raise InstanceError(
                f"jobs[{i}].min_gpus = {spec.min_gpus!r}: job {spec.name!r} needs more GPUs "
                f"than the cluster has ({num_gpus})"
            )
        opts = option_table(
            models[spec.workload],
            spec.global_batch_size,
            num_gpus,
            clocks_mhz,
            max_gpus=spec.max_gpus,
        )
        ev.append(
            EventJob(
                spec.name,
                float(spec.remaining_iterations),
                float(spec.age_s),
                opts,
                int(spec.min_gpus),
                spec.workload,
                int(spec.global_batch_size),
            )
        )
    return PowercapInstance(
        num_gpus,
        gpus_per_node,
        eta,
        p_max_w,
        idle_power_w,
        wait_estimate_s,
        tuple(ev),
        name,
        source,
    )
