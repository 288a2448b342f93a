"""Random small capacity points with repeated node classes (tests of the aggregation)."""

from __future__ import annotations

import dataclasses

import numpy as np

from energyopt.capacity import CapacityInstance, Job, Node
from energyopt.capacity.generators import epoch_table

# Node classes drawn from a small menu, so that classes have several members; two GPU
# types, 1-, 2- and 4-GPU nodes of one type (classes of one type with different G).
MENU = (
    ("V100", 2, 100.0, 200.0),
    ("V100", 1, 100.0, 200.0),
    ("V100", 4, 150.0, 250.0),
    ("T4", 2, 60.0, 70.0),
)


def menu_point(seed: int, num_nodes: int, num_jobs: int, work_conserving: bool):
    """A small point of repeated node classes; most running jobs anchored (fractional)."""
    rng = np.random.default_rng(seed)
    nodes = tuple(
        Node(f"n{i}", *MENU[int(k)]) for i, k in enumerate(rng.integers(0, len(MENU), num_nodes))
    )
    cap: dict[str, int] = {}
    for node in nodes:
        cap[node.gpu_type] = max(cap.get(node.gpu_type, 0), node.num_gpus)
    free = [node.num_gpus for node in nodes]
    jobs = []
    for j in range(num_jobs):
        t1 = float(rng.choice([20.0, 40.0, 60.0, 100.0]))  # repeated times: ties in theta
        table = epoch_table(t1, float(rng.choice([1.5, 2.0])), float(rng.choice([0.5, 0.8])), cap)
        if len(cap) > 1 and rng.random() < 0.25:  # a job for one GPU type only
            table.pop(sorted(cap)[int(rng.integers(len(cap)))])
        epochs = int(rng.integers(1, 4))
        remaining, running = float(epochs), None
        options = [
            (n, g)
            for n, node in enumerate(nodes)
            if node.gpu_type in table
            for g in range(1, free[n] + 1)
        ]
        if options and rng.random() < 0.6:
            running = options[int(rng.integers(len(options)))]
            free[running[0]] -= running[1]
            if rng.random() < 0.7:  # anchored: its progress stays on its node
                remaining -= float(rng.choice([0.25, 0.5]))
        fastest = remaining * min(min(v) for v in table.values())
        due = 100.0 + float(rng.uniform(0.3, 3.0)) * fastest
        weight = float(rng.choice([1e-4, 5e-4, 1e-3]))
        jobs.append(Job(f"j{j}", 0.0, due, weight, remaining, table, running))
    return CapacityInstance(
        nodes,
        tuple(jobs),
        now_s=100.0,
        work_conserving=work_conserving,
        idle_horizon_s=float(rng.choice([200.0, 1000.0])),
        restart_from_checkpoint=bool(rng.random() < 0.8),
        name=f"menu-point-{seed}",
    )


def homogenized(inst: CapacityInstance) -> CapacityInstance:
    """``inst`` with every node of a GPU type made identical (one class per type).

    Each node gets its type's largest GPU count, which every running job and epoch
    table of ``random_point`` already fits, and the powers of the type's first node.
    """
    first: dict[str, Node] = {}
    size: dict[str, int] = {}
    for node in inst.nodes:
        first.setdefault(node.gpu_type, node)
        size[node.gpu_type] = max(size.get(node.gpu_type, 0), node.num_gpus)
    nodes = tuple(
        dataclasses.replace(
            first[n.gpu_type],
            name=n.name,
            num_gpus=size[n.gpu_type],
        )
        for n in inst.nodes
    )
    return dataclasses.replace(inst, nodes=nodes)
