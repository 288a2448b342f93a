"""The PEM instance: a DAG of computations, their options, and the blocking power."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from energyopt.core import validate as V
from energyopt.core.instance import InstanceBase, InstanceError, check, finite_nonneg
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.schedules import (
    BACKWARD,
    FORWARD,
    SCHEDULES,
    Computation,
    build_dag,
    stage_table,
)


@dataclasses.dataclass(frozen=True)
class FilterReport:
    """What :meth:`PemInstance.filter_dominated` removed, per option table."""

    kept: Mapping[str, int]
    dropped: Mapping[str, tuple[int | None, ...]]
    index: Mapping[str, tuple[int, ...]]
    """Per table, the original index of each kept option."""

    def to_original(self, instance: PemInstance, choice: tuple[int, ...]) -> tuple[int, ...]:
        """Map option indices of the filtered instance back to the original tables."""
        return tuple(self.index[c.table][k] for c, k in zip(instance.computations, choice))

    @property
    def num_dropped(self) -> int:
        return sum(len(v) for v in self.dropped.values())

    def __str__(self) -> str:
        lines = [f"dominance filter dropped {self.num_dropped} option(s)"]
        for name, clocks in self.dropped.items():
            if clocks:
                lines.append(f"  {name}: kept {self.kept[name]}, dropped clocks {list(clocks)}")
        return "\n".join(lines)


@dataclasses.dataclass(frozen=True, eq=False)
class PemInstance(InstanceBase):
    """Pipeline Energy Minimization (Perseus Section 4.1, Eqs. 1-5).

    Parameters
    ----------
    num_stages
        S, the number of pipeline stages (one GPU each).
    computations
        The DAG's nodes; a computation's index in this tuple is its id.
    edges
        Precedence pairs ``(i, j)``: j starts after i ends.
    tables
        Option tables by name; each computation names one.
    p_blocking_w
        Power a GPU draws while it waits (P_blocking, Perseus Eq. 4).
    deadline_s
        Iteration-time deadline T; ``None`` asks for the minimal-energy iteration.
    schedule
        ``"1f1b"`` or ``"gpipe"`` when the DAG was built from a schedule (then it
        is stored compactly), ``"explicit"`` otherwise.
    num_microbatches
        M, for schedule-built DAGs.
    name, source
        Free text: a label and where the options come from (``simulated`` for
        synthetic data).
    """

    family = "pipeline"

    num_stages: int
    computations: tuple[Computation, ...]
    edges: tuple[tuple[int, int], ...]
    tables: Mapping[str, OptionTable]
    p_blocking_w: float
    deadline_s: float | None = None
    schedule: str = "explicit"
    num_microbatches: int | None = None
    name: str = ""
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "tables", MappingProxyType(dict(self.tables)))
        object.__setattr__(self, "computations", tuple(self.computations))
        edges = tuple(
            (V.integer(f"edges[{k}][0]", a), V.integer(f"edges[{k}][1]", b))
            for k, (a, b) in enumerate(self.edges)
        )
        object.__setattr__(self, "edges", edges)
        self._validate()

    # -- construction -------------------------------------------------------------
    @classmethod
    def from_schedule(
        cls,
        schedule: str,
        num_stages: int,
        num_microbatches: int,
        tables: Mapping[str, OptionTable],
        p_blocking_w: float,
        deadline_s: float | None = None,
        name: str = "",
        source: str = "",
    ) -> PemInstance:
        """Instance of a synchronous schedule; ``tables`` keyed ``s{stage}/{forward|backward}``."""
        if schedule not in SCHEDULES:
            raise InstanceError(f"schedule = {schedule!r}: unknown; known: {', '.join(SCHEDULES)}")
        num_stages = V.integer("num_stages", num_stages, minimum=1)
        num_microbatches = V.integer("num_microbatches", num_microbatches, minimum=1)
        _check_schedule_size(num_stages, num_microbatches, tables)
        try:
            comps, edges = build_dag(schedule, num_stages, num_microbatches)
        except ValueError as exc:
            raise InstanceError(str(exc)) from None
        return cls(
            num_stages,
            comps,
            edges,
            tables,
            p_blocking_w,
            deadline_s,
            schedule,
            int(num_microbatches),
            name,
            source,
        )

    def with_deadline(self, deadline_s: float | None) -> PemInstance:
        """The same instance with another deadline."""
        return dataclasses.replace(self, deadline_s=deadline_s)

    def _validate(self) -> None:
        check(
            isinstance(self.num_stages, int) and self.num_stages >= 1,
            "num_stages",
            self.num_stages,
            "must be an integer >= 1",
        )
        object.__setattr__(self, "p_blocking_w", finite_nonneg("p_blocking_w", self.p_blocking_w))
        if self.deadline_s is not None:
            d = finite_nonneg("deadline_s", self.deadline_s)
            check(d > 0, "deadline_s", self.deadline_s, "must be positive")
            object.__setattr__(self, "deadline_s", d)
        check(len(self.computations) > 0, "computations", [], "the DAG has no computation")
        check(
            self.schedule in (*SCHEDULES, "explicit"),
            "schedule",
            self.schedule,
            f"must be one of {', '.join((*SCHEDULES, 'explicit'))}",
        )
        for name, table in self.tables.items():
            check(isinstance(table, OptionTable), f"tables[{name!r}]", table, "not an OptionTable")
            table.validate(f"tables[{name!r}]")
        n = len(self.computations)
        for i, c in enumerate(self.computations):
            check(
                isinstance(c.stage, int) and 0 <= c.stage < self.num_stages,
                f"computations[{i}].stage",
                c.stage,
                f"unknown stage (the instance has stages 0..{self.num_stages - 1})",
            )
            check(
                c.table in self.tables,
                f"computations[{i}].table",
                c.table,
                "no option table of that name",
            )
        for k, (a, b) in enumerate(self.edges):
            check(
                0 <= a < n and 0 <= b < n,
                f"edges[{k}]",
                (a, b),
                f"refers to a computation outside 0..{n - 1}",
            )
            check(a != b, f"edges[{k}]", (a, b), "a self-loop")
        order = _topological_order(n, self.edges)
        if order is None:
            raise InstanceError("edges: the graph has a cycle; a pipeline iteration must be a DAG")
        object.__setattr__(self, "_topo", order)
        if self.schedule == "explicit":
            _check_stages_ordered(self.computations, self.edges, order)

    # -- arrays used by the evaluator and the solvers -------------------------------
    @functools.cached_property
    def topological_order(self) -> np.ndarray:
        return np.asarray(self._topo, dtype=np.int64)

    @functools.cached_property
    def predecessors(self) -> tuple[tuple[int, ...], ...]:
        preds: list[list[int]] = [[] for _ in self.computations]
        for a, b in self.edges:
            preds[b].append(a)
        return tuple(tuple(p) for p in preds)

    @functools.cached_property
    def successors(self) -> tuple[tuple[int, ...], ...]:
        succ: list[list[int]] = [[] for _ in self.computations]
        for a, b in self.edges:
            succ[a].append(b)
        return tuple(tuple(s) for s in succ)

    @functools.cached_property
    def levels(self) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
        """Computations grouped by depth in the DAG, with padded predecessor indices.

        Each level is ``(nodes, preds)``: ``preds[r]`` lists the predecessors of
        ``nodes[r]``, padded with ``-1``. All predecessors lie in earlier levels, so
        a level's start times depend only on finished levels (used to evaluate many
        plans at once).
        """
        depth = np.zeros(self.num_computations, dtype=np.int64)
        for i in self.topological_order:
            p = self.predecessors[i]
            depth[i] = 1 + max((depth[j] for j in p), default=-1)
        out = []
        for d in range(int(depth.max()) + 1):
            nodes = np.flatnonzero(depth == d)
            width = max(1, max(len(self.predecessors[i]) for i in nodes))
            preds = np.full((len(nodes), width), -1, dtype=np.int64)
            for r, i in enumerate(nodes):
                preds[r, : len(self.predecessors[i])] = self.predecessors[i]
            out.append((nodes, preds))
        return tuple(out)

    def options(self, i: int) -> OptionTable:
        """Option table of computation ``i``."""
        return self.tables[self.computations[i].table]

    @functools.cached_property
    def option_times(self) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(self.options(i).time_s) for i in range(len(self.computations)))

    @functools.cached_property
    def option_energies(self) -> tuple[np.ndarray, ...]:
        return tuple(np.asarray(self.options(i).energy_j) for i in range(len(self.computations)))

    @property
    def num_computations(self) -> int:
        return len(self.computations)

    def effective_energy(self, i: int) -> np.ndarray:
        """``e - P_blocking * t`` of each option of computation ``i`` (Perseus Eq. 4)."""
        return self.option_energies[i] - self.p_blocking_w * self.option_times[i]

    # -- dominance filtering ----------------------------------------------------------
    def filter_dominated(self) -> tuple[PemInstance, FilterReport]:
        """Drop options that are slower and not cheaper in effective energy.

        The optimum is unchanged (an optimal choice never needs a dominated option),
        so exact methods may run on the filtered instance; the report says what went.
        """
        new_tables, kept, dropped, index = {}, {}, {}, {}
        for name, table in self.tables.items():
            keep, drop = table.pareto(self.p_blocking_w)
            new_tables[name] = table.subset(keep)
            kept[name] = len(keep)
            dropped[name] = tuple(table.sm_clock_mhz[k] for k in drop)
            index[name] = tuple(keep)
        inst = dataclasses.replace(self, tables=new_tables)
        report = FilterReport(
            MappingProxyType(kept), MappingProxyType(dropped), MappingProxyType(index)
        )
        return inst, report

    # -- JSON ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "family": self.family,
            "version": self.format_version,
            "name": self.name,
            "source": self.source,
            "num_stages": self.num_stages,
            "schedule": self.schedule,
            "num_microbatches": self.num_microbatches,
            "p_blocking_w": self.p_blocking_w,
            "deadline_s": self.deadline_s,
            "tables": {k: v.to_dict() for k, v in self.tables.items()},
        }
        if self.schedule == "explicit":
            data["computations"] = [dataclasses.asdict(c) for c in self.computations]
            data["edges"] = [list(e) for e in self.edges]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PemInstance:
        """Read an instance from its JSON object, strictly (``core.validate``).

        Sizes are checked against the option tables before any DAG is built: a
        schedule needs a forward and a backward table per stage, and at most
        :data:`MAX_COMPUTATIONS` computations are accepted (:data:`MAX_EXPLICIT_COMPUTATIONS`
        in an explicit DAG).
        """
        V.version(data)
        V.fields(data, "pipeline instance", required=("family",), optional=_OPTIONAL)
        if "tables" not in data:
            raise InstanceError("missing field 'tables'")
        tables_raw = V.mapping("tables", data["tables"])
        tables = {
            V.string("tables key", k): OptionTable.from_dict(v, f"tables[{k!r}]")
            for k, v in tables_raw.items()
        }
        schedule = V.choice("schedule", data.get("schedule", "explicit"), (*SCHEDULES, "explicit"))
        deadline = data.get("deadline_s")
        common = dict(
            tables=tables,
            p_blocking_w=V.number(
                "p_blocking_w", _required(data, "p_blocking_w"), minimum=0.0, maximum=MAX_POWER_W
            ),
            deadline_s=None if deadline is None else V.positive("deadline_s", deadline),
            name=V.string("name", data.get("name", ""), nonempty=False),
            source=V.string("source", data.get("source", ""), nonempty=False),
        )
        num_stages = V.integer("num_stages", _required(data, "num_stages"), minimum=1)
        if schedule != "explicit":
            M = V.integer("num_microbatches", _required(data, "num_microbatches"), minimum=1)
            for key in ("computations", "edges"):
                if key in data:
                    why = f"only an explicit DAG lists it (schedule = {schedule!r})"
                    raise V.fail(key, "...", why)
            return cls.from_schedule(schedule, num_stages, M, **common)
        comps_raw = V.sequence(
            "computations", _required(data, "computations"), max_length=MAX_EXPLICIT_COMPUTATIONS
        )
        comps = [_computation(k, c) for k, c in enumerate(comps_raw)]
        edges = _required(data, "edges")
        edges_raw = V.sequence("edges", edges, max_length=10 * MAX_EXPLICIT_COMPUTATIONS)
        edges = [_edge(k, e) for k, e in enumerate(edges_raw)]
        mb = data.get("num_microbatches")
        return cls(
            num_stages,
            tuple(comps),
            tuple(edges),
            schedule="explicit",
            num_microbatches=None if mb is None else V.integer("num_microbatches", mb, minimum=1),
            **common,
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PemInstance) and self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.instance_id)

    def __repr__(self) -> str:
        what = (
            self.schedule
            if self.schedule == "explicit"
            else f"{self.schedule} {self.num_stages}x{self.num_microbatches}"
        )
        return (
            f"PemInstance({self.name or what!r}, {self.num_computations} computations, "
            f"p_blocking_w={self.p_blocking_w}, deadline_s={self.deadline_s})"
        )


def _topological_order(n: int, edges: tuple[tuple[int, int], ...]) -> list[int] | None:
    indeg = [0] * n
    succ: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        succ[a].append(b)
        indeg[b] += 1
    stack = [i for i in range(n) if indeg[i] == 0]
    order = []
    while stack:
        i = stack.pop()
        order.append(i)
        for j in succ[i]:
            indeg[j] -= 1
            if indeg[j] == 0:
                stack.append(j)
    return order if len(order) == n else None


def _check_stages_ordered(
    computations: tuple[Computation, ...], edges: tuple[tuple[int, int], ...], order: list[int]
) -> None:
    """Each stage's computations must be totally ordered by the DAG (one GPU, one at a time).

    The blocking energy of Perseus Eq. 3, ``P_b (S T - sum of times)``, counts every
    second of a stage's GPU that no computation uses; two computations of one stage
    running at once would make it negative. Schedule-built DAGs order each stage by
    construction; an explicit DAG must say so with its edges (a path between every
    two computations of a stage).
    """
    succ: list[list[int]] = [[] for _ in computations]
    for a, b in edges:
        succ[a].append(b)
    reach = [0] * len(computations)  # bit j of reach[i]: a path from i to j
    for v in reversed(order):
        r = 0
        for w in succ[v]:
            r |= reach[w] | (1 << w)
        reach[v] = r
    last: dict[int, int] = {}
    for v in order:
        stage = computations[v].stage
        u = last.get(stage)
        if u is not None and not (reach[u] >> v) & 1:
            raise InstanceError(
                f"edges: computations {u} and {v} of stage {stage} are not ordered by the DAG; "
                "one GPU runs one computation at a time, so each stage's computations must lie "
                "on one path (Perseus Eq. 3)"
            )
        last[stage] = v


#: The most blocking power read from data (W): one GPU waiting draws well under 1 kW.
MAX_POWER_W = 10_000.0

_OPTIONAL = (
    "version",
    "name",
    "source",
    "num_stages",
    "schedule",
    "num_microbatches",
    "p_blocking_w",
    "deadline_s",
    "tables",
    "computations",
    "edges",
)

#: The largest schedule DAG accepted from data (GPT-3 8 x 96 has 1,536 computations;
#: 100,000 take ~2 s to build, a million ~25 s and gigabytes, before any method runs).
MAX_COMPUTATIONS = 100_000
#: The largest explicit DAG: its stage-order check keeps a reachability bit set per
#: computation, quadratic in their number (20,000 take ~0.1 s and ~25 MB).
MAX_EXPLICIT_COMPUTATIONS = 20_000


def _required(data: dict[str, Any], key: str) -> Any:
    if key not in data:
        raise InstanceError(f"missing field {key!r}")
    return data[key]


def _check_schedule_size(num_stages: int, num_microbatches: int, tables: Mapping) -> None:
    """Refuse a schedule that the tables cannot cover, or too big, before building it."""
    if 2 * num_stages > len(tables):
        raise InstanceError(
            f"num_stages = {num_stages}: the instance has {len(tables)} option tables, but a "
            "schedule needs a forward and a backward table per stage"
        )
    for s in range(num_stages):
        for kind in (FORWARD, BACKWARD):
            if stage_table(s, kind) not in tables:
                raise InstanceError(
                    f"num_stages = {num_stages}: no option table {stage_table(s, kind)!r} "
                    f"(a schedule needs 's{{stage}}/{FORWARD}' and 's{{stage}}/{BACKWARD}')"
                )
    size = 2 * num_stages * num_microbatches
    if size > MAX_COMPUTATIONS:
        raise InstanceError(
            f"num_microbatches = {num_microbatches}: {num_stages} stages x {num_microbatches} "
            f"microbatches x 2 = {size} computations, more than {MAX_COMPUTATIONS}"
        )


def _computation(k: int, raw: Any) -> Computation:
    c = V.mapping(f"computations[{k}]", raw)
    where = f"computations[{k}]"
    for key in ("stage", "kind", "table"):
        if key not in c:
            raise InstanceError(f"{where}: missing field {key!r}")
    mb = c.get("microbatch")
    return Computation(
        V.integer(f"{where}.stage", c["stage"], minimum=0),
        V.string(f"{where}.kind", c["kind"]),
        None if mb is None else V.integer(f"{where}.microbatch", mb, minimum=0),
        V.string(f"{where}.table", c["table"]),
    )


def _edge(k: int, raw: Any) -> tuple[int, int]:
    pair = V.sequence(f"edges[{k}]", raw)
    if len(pair) != 2:
        raise V.fail(f"edges[{k}]", raw, "must be a pair [from, to]")
    return (
        V.integer(f"edges[{k}][0]", pair[0], minimum=0),
        V.integer(f"edges[{k}][1]", pair[1], minimum=0),
    )
