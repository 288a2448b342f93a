"""Generated PEM instances: synthetic pipeline profiles and random small DAGs.

Everything here is simulated and says so in ``PemInstance.source``.
"""

from __future__ import annotations

import itertools

import numpy as np

from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.schedules import BACKWARD, FORWARD, Computation, stage_table

#: A100-like SM clock range (MHz) used by synthetic profiles.
SYNTHETIC_CLOCKS = (1410, 210)


def synthetic_table(
    rng: np.random.Generator,
    base_time_s: float,
    num_clocks: int,
    f_max: int = SYNTHETIC_CLOCKS[0],
    f_min: int = 810,
) -> OptionTable:
    """Options of one computation from a simple DVFS model (simulated, not measured).

    Time grows as the clock drops, with a memory-bound share that does not scale;
    power = static + dynamic * f * V(f)^2, voltage flat below a knee clock and
    linear above (the shape used by PowerFlow 4.2). Energy = power * time.
    """
    clocks = np.linspace(f_max, f_min, num_clocks).round().astype(int)
    mem_share = rng.uniform(0.1, 0.4)
    knee = f_min + (f_max - f_min) * rng.uniform(0.3, 0.6)
    static_w, dyn_w = rng.uniform(60, 90), rng.uniform(150, 250)
    times, energies = [], []
    for f in clocks:
        t = base_time_s * (mem_share + (1 - mem_share) * f_max / f)
        v = 1.0 if f <= knee else 1.0 + 0.5 * (f - knee) / (f_max - knee)
        p = static_w + dyn_w * (f / f_max) * v**2 / 2.25
        times.append(float(t))
        energies.append(float(p * t))
    return OptionTable(tuple(int(f) for f in clocks), tuple(times), tuple(energies))


def synthetic_instance(
    num_stages: int,
    num_microbatches: int,
    num_clocks: int = 10,
    *,
    schedule: str = "1f1b",
    seed: int = 0,
    p_blocking_w: float = 80.0,
    deadline_s: float | None = None,
) -> PemInstance:
    """A pipeline instance with simulated per-stage options (``source = simulated``).

    Stage forward times vary by +-20 % around 20 ms; a backward takes about twice
    its forward, as in transformer training.
    """
    rng = np.random.default_rng(seed)
    tables = {}
    for s in range(num_stages):
        fwd = 0.02 * rng.uniform(0.8, 1.2)
        tables[stage_table(s, FORWARD)] = synthetic_table(rng, fwd, num_clocks)
        tables[stage_table(s, BACKWARD)] = synthetic_table(
            rng, fwd * rng.uniform(1.8, 2.2), num_clocks
        )
    return PemInstance.from_schedule(
        schedule,
        num_stages,
        num_microbatches,
        tables,
        p_blocking_w,
        deadline_s,
        name=f"synthetic {schedule} {num_stages}x{num_microbatches} k{num_clocks} seed{seed}",
        source=f"simulated (energyopt.pipeline.generators.synthetic_instance, seed={seed})",
    )


def random_dag_instance(
    num_computations: int,
    max_options: int = 3,
    *,
    seed: int = 0,
    num_stages: int = 3,
    edge_probability: float = 0.3,
    p_blocking_w: float = 50.0,
    time_grid_s: float = 1e-3,
    energy_grid_j: float = 1e-3,
    deadline_fraction: float | None = 0.5,
) -> PemInstance:
    """A random explicit DAG with random options, for tests against brute force.

    Times are multiples of ``time_grid_s`` and energies of ``energy_grid_j`` (and so
    are the effective energies when ``p_blocking_w * time_grid_s`` is on the energy
    grid), so CP-SAT's scaling at that resolution is exact. Source: simulated.
    """
    rng = np.random.default_rng(seed)
    n = num_computations
    perm = rng.permutation(n)
    edges = [
        (int(perm[a]), int(perm[b]))
        for a in range(n)
        for b in range(a + 1, n)
        if rng.random() < edge_probability
    ]
    comps, tables = [], {}
    stages = [int(rng.integers(0, num_stages)) for _ in range(n)]
    # One GPU per stage runs one computation at a time: chain each stage's
    # computations in the random topological order (the instance checks this).
    rank = {int(v): r for r, v in enumerate(perm)}
    for stage in range(num_stages):
        members = sorted((i for i in range(n) if stages[i] == stage), key=rank.__getitem__)
        edges += [(a, b) for a, b in itertools.pairwise(members) if (a, b) not in edges]
    for i in range(n):
        k = int(rng.integers(1, max_options + 1))
        t = np.sort(rng.integers(5, 60, size=k)) * time_grid_s
        # Faster options cost more energy, with noise so that some are dominated.
        e = (
            (np.sort(rng.integers(10, 90, size=k))[::-1] + rng.integers(0, 25, size=k))
            * 1000
            * energy_grid_j
        )
        clocks = tuple(int(1400 - 100 * j) for j in range(k))
        name = f"c{i}"
        tables[name] = OptionTable(clocks, tuple(float(x) for x in t), tuple(float(x) for x in e))
        comps.append(Computation(stages[i], "compute", i, name))
    inst = PemInstance(
        num_stages,
        tuple(comps),
        tuple(edges),
        tables,
        p_blocking_w,
        name=f"random dag n{n} k{max_options} seed{seed}",
        source=f"simulated (energyopt.pipeline.generators.random_dag_instance, seed={seed})",
    )
    if deadline_fraction is None:
        return inst
    from energyopt.pipeline.evaluator import deadline_between

    T = deadline_between(inst, deadline_fraction)
    return inst.with_deadline(round(T / time_grid_s) * time_grid_s)
