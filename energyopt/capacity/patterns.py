"""Node classes, host nodes and packing patterns: the aggregation of the ``patterns`` method.

formulations/capacity.md Section 8. Nodes of one class (GPU type, GPU count, powers)
are interchangeable for every job except one that keeps its progress on its own
node: a running job whose current configuration is faster than a restart from its
checkpoint is *anchored* to that node. Nodes that hold anchored jobs (*host* nodes)
are modelled one by one, by the subset of their anchored jobs that stay; every other
node is only counted, per class. What a node runs besides its kept jobs is a
*packing pattern*: a multiset of GPU counts that fits in the GPUs left.

Nothing here calls a solver; :mod:`energyopt.capacity.thetamodel` builds the model.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator

from energyopt.capacity.instance import CapacityInstance

#: A packing pattern: entry ``g - 1`` is how many jobs of ``g`` GPUs it holds.
Pattern = tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class NodeClass:
    """Identical nodes: same GPU type, GPU count and powers."""

    gpu_type: str
    num_gpus: int
    idle_power_w: float
    gpu_power_w: float
    nodes: tuple[int, ...]
    free_nodes: tuple[int, ...]
    """The members that host no anchored job."""


@dataclasses.dataclass(frozen=True)
class Move:
    """Job ``job`` on ``g`` GPUs of any node of class ``cls``, from its checkpoint.

    For a job that is not anchored this is every configuration of the class with ``g``
    GPUs, its own included (they all take the same time).
    """

    job: int
    cls: int
    g: int
    time_s: float
    tardiness_eur: float


@dataclasses.dataclass(frozen=True)
class Keep:
    """An anchored job staying in its configuration ``(node, g)``, progress kept."""

    job: int
    node: int
    g: int
    time_s: float
    tardiness_eur: float


@dataclasses.dataclass(frozen=True)
class HostState:
    """One choice for a host node: the anchored jobs that stay, and the GPUs left."""

    node: int
    kept: tuple[int, ...]
    residual: int


@dataclasses.dataclass(frozen=True)
class Aggregation:
    """The instance seen by class: what every fixed-theta model is built from."""

    classes: tuple[NodeClass, ...]
    class_of_node: tuple[int, ...]
    moves: tuple[Move, ...]
    keeps: dict[int, Keep]
    """By job: the anchored jobs."""
    host_states: tuple[tuple[HostState, ...], ...]
    """Per host node, every subset of its anchored jobs that may stay."""
    patterns: dict[tuple[int, int], tuple[Pattern, ...]]
    """By (class, GPUs left): every pattern that fits, the empty one first."""


def node_classes(instance: CapacityInstance, hosts: set[int]) -> tuple[NodeClass, ...]:
    """Group the nodes by :attr:`Node.node_class`, in order of first appearance."""
    members: dict[tuple, list[int]] = {}
    for n, node in enumerate(instance.nodes):
        members.setdefault(node.node_class, []).append(n)
    return tuple(
        NodeClass(*key, nodes=tuple(ns), free_nodes=tuple(n for n in ns if n not in hosts))
        for key, ns in members.items()
    )


def anchored_jobs(instance: CapacityInstance) -> dict[int, Keep]:
    """Running jobs whose own configuration takes another time than a restart there.

    With the checkpoint loss (CAP-0: R uses ceil(e_j) off the current configuration)
    that is every running job with a fractional epoch left; without it, none.
    """
    out = {}
    for j, job in enumerate(instance.jobs):
        if job.running is None:
            continue
        n, g = job.running
        if instance.epochs_on(j, n, g) == instance.restart_epochs(j):
            continue
        t = instance.remaining_time_s(j, n, g)
        out[j] = Keep(j, n, g, t, _tardiness(instance, j, t))
    return out


def moves(instance: CapacityInstance, classes: tuple[NodeClass, ...]) -> Iterator[Move]:
    """Every (job, class, g) configuration from the job's checkpoint (CAP-0's R_jng)."""
    for j, job in enumerate(instance.jobs):
        epochs = instance.restart_epochs(j)
        for c, cls in enumerate(classes):
            times = job.epoch_time_s.get(cls.gpu_type)
            if times is None:
                continue
            for g in range(1, cls.num_gpus + 1):
                # The evaluator's product (instance.remaining_time_s), bit for bit.
                t = epochs * times[g - 1]
                yield Move(j, c, g, t, _tardiness(instance, j, t))


def packings(capacity: int, max_size: int) -> tuple[Pattern, ...]:
    """Every multiset of GPU counts 1..``max_size`` with total at most ``capacity``.

    Returned as counts per size, the empty pattern first. A 4-GPU node has 12
    (nothing, 1, 2, 3, 4, 1+1, 1+2, 1+3, 2+2, 1+1+1, 1+1+2, 1+1+1+1).
    """
    ranges = [range(capacity // g + 1) for g in range(1, max_size + 1)]
    out = [
        counts
        for counts in itertools.product(*ranges)
        if sum(g * m for g, m in enumerate(counts, start=1)) <= capacity
    ]
    out.sort(key=lambda counts: (sum(counts), counts))
    return tuple(out)


def host_states(
    instance: CapacityInstance, keeps: dict[int, Keep]
) -> tuple[tuple[HostState, ...], ...]:
    """Per host node, one state per subset of its anchored jobs (the empty one first)."""
    on_node: dict[int, list[int]] = {}
    for j, k in keeps.items():
        on_node.setdefault(k.node, []).append(j)
    out = []
    for n in sorted(on_node):
        jobs = on_node[n]
        states = []
        for size in range(len(jobs) + 1):
            for kept in itertools.combinations(jobs, size):
                used = sum(keeps[j].g for j in kept)
                states.append(HostState(n, kept, instance.nodes[n].num_gpus - used))
        out.append(tuple(states))
    return tuple(out)


def aggregate(instance: CapacityInstance) -> Aggregation:
    """The classes, configurations, host states and patterns of ``instance``."""
    keeps = anchored_jobs(instance)
    classes = node_classes(instance, {k.node for k in keeps.values()})
    class_of_node = [0] * instance.num_nodes
    for c, cls in enumerate(classes):
        for n in cls.nodes:
            class_of_node[n] = c
    patterns = {
        (c, r): packings(r, cls.num_gpus)
        for c, cls in enumerate(classes)
        for r in range(cls.num_gpus + 1)
    }
    return Aggregation(
        classes=classes,
        class_of_node=tuple(class_of_node),
        moves=tuple(moves(instance, classes)),
        keeps=keeps,
        host_states=host_states(instance, keeps),
        patterns=patterns,
    )


def theta_candidates(agg: Aggregation) -> list[float]:
    """Every value theta can take while a job runs: the distinct remaining times, ascending."""
    times = {m.time_s for m in agg.moves} | {k.time_s for k in agg.keeps.values()}
    return sorted(times)


def _tardiness(instance: CapacityInstance, j: int, time_s: float) -> float:
    """w_j max(0, T_c + R - d_j): the evaluator's tardiness of a running job (CAP-0)."""
    job = instance.jobs[j]
    return job.tardiness_weight_eur_per_s * max(0.0, instance.now_s + time_s - job.due_s)
