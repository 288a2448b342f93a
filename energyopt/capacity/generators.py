"""Synthetic clusters, job streams and rescheduling points (all labelled ``simulated``).

The distributions complete ANDREAS Section V-B, which gives the scales (N = 10..100
nodes, J = 10 N jobs, half the nodes with 2 V100 and half with 1 T4, or 4 V100 / 2 T4
in the second scenario, "mixed" arrival rates) but not the numbers; docs/capacity.md
and formulations/capacity.md (Section 6) list them. Nothing here is measured.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from energyopt.capacity.instance import CapacityInstance, Job, Node

#: Assumed node power (not measured): host idle power and per-busy-GPU power.
#: V100-PCIe TDP is 250 W and T4 TDP 70 W; the host figures are assumptions.
GPU_POWER_W = {"V100": 250.0, "T4": 70.0}
HOST_IDLE_POWER_W = {"V100": 200.0, "T4": 120.0}

#: GPUs per node in the paper's two scenarios: (V100 nodes, T4 nodes).
SCENARIOS = {1: (2, 1), 2: (4, 2)}

#: Job families of Section V (LSTM, EfficientNet, ConvolutionNet): seconds per epoch
#: on one V100 (uniform range), T4 slow-down factor range, speed-up exponent alpha
#: (time on g GPUs = t1 / g**alpha: sublinear).
JOB_TYPES = {
    "ConvolutionNet": ((20.0, 60.0), (2.0, 2.5), 0.8),
    "LSTM": ((60.0, 180.0), (2.5, 3.5), 0.6),
    "EfficientNet": ((120.0, 300.0), (3.0, 4.0), 0.85),
}
EPOCHS = (10, 50)
DUE_SLACK = (1.5, 4.0)
WEIGHT_EUR_PER_S = (1e-4, 5e-4)
#: "Mixed" arrival rate: the rate alternates between fast and slow phases of
#: PHASE_JOBS jobs, at these multiples of the base rate.
MIXED_RATES = (1.6, 0.4)
PHASE_JOBS = 10


def scenario_cluster(num_nodes: int, scenario: int = 1) -> tuple[Node, ...]:
    """Half the nodes with V100s and half with T4s (``SCENARIOS[scenario]`` GPUs each)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"scenario = {scenario!r}: expected one of {sorted(SCENARIOS)}")
    if num_nodes < 1:
        raise ValueError(f"num_nodes = {num_nodes!r}: must be >= 1")
    v100, t4 = SCENARIOS[scenario]
    nodes = []
    for n in range(num_nodes):
        kind, g = ("V100", v100) if n < (num_nodes + 1) // 2 else ("T4", t4)
        nodes.append(
            Node(f"{kind.lower()}-{n:03d}", kind, g, HOST_IDLE_POWER_W[kind], GPU_POWER_W[kind])
        )
    return tuple(nodes)


@dataclasses.dataclass(frozen=True)
class SubmittedJob:
    """A job as submitted: what the simulator turns into :class:`Job` states."""

    name: str
    kind: str
    arrival_s: float
    due_s: float
    tardiness_weight_eur_per_s: float
    epochs: int
    epoch_time_s: dict[str, tuple[float, ...]]


def epoch_table(
    t1_v100_s: float, t4_factor: float, alpha: float, max_gpus: dict[str, int]
) -> dict[str, tuple[float, ...]]:
    """Seconds per epoch on g = 1..G GPUs of each type: t1 / g**alpha (sublinear speed-up)."""
    base = {"V100": t1_v100_s, "T4": t1_v100_s * t4_factor}
    return {k: tuple(base[k] / g**alpha for g in range(1, max_gpus[k] + 1)) for k in max_gpus}


def job_stream(
    nodes: tuple[Node, ...], num_jobs: int, seed: int, load: float = 0.8
) -> tuple[SubmittedJob, ...]:
    """``num_jobs`` jobs with mixed-rate Poisson arrivals sized to ``load`` of the cluster.

    The base rate makes the expected GPU work of the arrivals, in V100-seconds on
    one GPU, equal ``load`` times the cluster's V100-equivalent GPUs per second.
    """
    if num_jobs < 1:
        raise ValueError(f"num_jobs = {num_jobs!r}: must be >= 1")
    if not load > 0:
        raise ValueError(f"load = {load!r}: must be positive")
    rng = np.random.default_rng(seed)
    max_gpus: dict[str, int] = {}
    for node in nodes:
        max_gpus[node.gpu_type] = max(max_gpus.get(node.gpu_type, 0), node.num_gpus)
    kinds = list(JOB_TYPES)
    mean_t4 = np.mean([np.mean(v[1]) for v in JOB_TYPES.values()])
    capacity = sum(n.num_gpus * (1.0 if n.gpu_type == "V100" else 1.0 / mean_t4) for n in nodes)
    mean_work = np.mean([np.mean(v[0]) for v in JOB_TYPES.values()]) * np.mean(EPOCHS)
    base_rate = load * capacity / mean_work
    t = 0.0
    jobs = []
    for i in range(num_jobs):
        rate = base_rate * MIXED_RATES[(i // PHASE_JOBS) % len(MIXED_RATES)]
        t += float(rng.exponential(1.0 / rate))
        kind = kinds[int(rng.integers(len(kinds)))]
        (t_lo, t_hi), (f_lo, f_hi), alpha = JOB_TYPES[kind]
        table = epoch_table(
            float(rng.uniform(t_lo, t_hi)), float(rng.uniform(f_lo, f_hi)), alpha, max_gpus
        )
        epochs = int(rng.integers(EPOCHS[0], EPOCHS[1] + 1))
        fastest = epochs * min(min(v) for v in table.values())
        due = t + float(rng.uniform(*DUE_SLACK)) * fastest
        weight = float(rng.uniform(*WEIGHT_EUR_PER_S))
        jobs.append(SubmittedJob(f"{kind}-{i:04d}", kind, t, due, weight, epochs, table))
    return tuple(jobs)


def random_point(
    seed: int,
    num_nodes: int = 2,
    num_jobs: int = 3,
    max_gpus: int = 2,
    running_fraction: float = 0.5,
    work_conserving: bool = True,
) -> CapacityInstance:
    """A small random rescheduling point (tests, brute force): random cluster and jobs.

    Some jobs run (with fractional progress); due dates lie around the jobs' fastest
    times so that tardiness and postponement both matter.
    """
    rng = np.random.default_rng(seed)
    types = ("V100", "T4")
    nodes = []
    for n in range(num_nodes):
        kind = types[int(rng.integers(2))]
        g = int(rng.integers(1, max_gpus + 1))
        nodes.append(
            Node(f"n{n}", kind, g, float(rng.uniform(50, 250)), float(rng.uniform(50, 300)))
        )
    cap = {}
    for node in nodes:
        cap[node.gpu_type] = max(cap.get(node.gpu_type, 0), node.num_gpus)
    free = [node.num_gpus for node in nodes]
    now = float(rng.uniform(0, 1000))
    jobs = []
    for j in range(num_jobs):
        table = epoch_table(
            float(rng.uniform(20, 200)),
            float(rng.uniform(1.5, 4)),
            float(rng.uniform(0.5, 0.95)),
            cap,
        )
        if rng.random() < 0.2 and len(cap) > 1:  # a job that runs on one GPU type only
            table.pop(types[int(rng.integers(2))], None)
            if not any(k in cap for k in table):
                table = epoch_table(50.0, 2.0, 0.8, cap)
        epochs = int(rng.integers(1, 6))
        running = None
        remaining = float(epochs)
        if rng.random() < running_fraction:
            options = [
                (n, g)
                for n, node in enumerate(nodes)
                if node.gpu_type in table
                for g in range(1, free[n] + 1)
            ]
            if options:
                running = options[int(rng.integers(len(options)))]
                free[running[0]] -= running[1]
                remaining = epochs - float(rng.uniform(0.05, 0.95))
        fastest = remaining * min(min(v) for v in table.values())
        due = now + float(rng.uniform(0.3, 3.0)) * fastest
        jobs.append(
            Job(
                f"j{j}",
                now - float(rng.uniform(0, 500)),
                due,
                float(rng.uniform(1e-4, 1e-3)),
                remaining,
                table,
                running,
            )
        )
    return CapacityInstance(
        tuple(nodes),
        tuple(jobs),
        now_s=now,
        work_conserving=work_conserving,
        idle_horizon_s=float(rng.uniform(300, 3000)),
        name=f"random-point-{seed}",
        source=(
            f"simulated: energyopt.capacity.generators.random_point(seed={seed}, "
            f"num_nodes={num_nodes}, num_jobs={num_jobs}, max_gpus={max_gpus}, "
            f"running_fraction={running_fraction})"
        ),
    )
