"""Generated PEM instances: synthetic pipeline profiles and random small DAGs.

Everything here is simulated and says so in ``PemInstance.source``.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

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


def noisy_table(
    rng: np.random.Generator,
    table: OptionTable,
    time_noise: float = 0.004,
    energy_noise: float = 0.008,
    throttle: float = 0.0,
) -> OptionTable:
    """``table`` as a measurement would give it: not monotone in clock (simulated).

    Each time and energy is multiplied by ``1 + noise`` (normal, relative standard
    deviations ``time_noise`` and ``energy_noise``), as repeated profiling of
    one computation varies by a fraction of a percent, about the time difference
    of two neighbouring clocks 15 MHz apart. With ``throttle > 0`` the clocks of
    the top fifth of the range run no faster than the bottom of that fifth, and
    up to ``throttle`` slower at the maximum clock, at the power of their clock,
    as under a power or thermal limit: the maximum clock is then slower, and
    dearer, than lower ones.
    """
    clocks = np.asarray([f or 0 for f in table.sm_clock_mhz], dtype=float)
    t = np.asarray(table.time_s, dtype=float)
    e = np.asarray(table.energy_j, dtype=float)
    t_new = t.copy()
    if throttle > 0 and len(t) > 1:
        top, low = clocks.max(), clocks.min()
        knee = top - 0.2 * (top - low)
        above = clocks > knee
        if above.any() and (~above).any():
            t_knee = t[~above][np.argmax(clocks[~above])]
            frac = (clocks[above] - knee) / (top - knee)
            t_new[above] = t_knee * (1 + throttle * frac)
    power = e / np.maximum(t, 1e-300)
    t_new = t_new * (1 + time_noise * rng.standard_normal(len(t)))
    e_new = power * t_new * (1 + energy_noise * rng.standard_normal(len(e)))
    return OptionTable(
        table.sm_clock_mhz,
        tuple(float(x) for x in np.maximum(t_new, 1e-9)),
        tuple(float(x) for x in np.maximum(e_new, 0.0)),
    )


def nonmonotone_instance(
    num_stages: int,
    num_microbatches: int,
    num_clocks: int = 38,
    *,
    schedule: str = "1f1b",
    seed: int = 0,
    p_blocking_w: float = 70.38,
    time_noise: float = 0.004,
    energy_noise: float = 0.008,
    throttle: float = 0.02,
    deadline_s: float | None = None,
) -> PemInstance:
    """A pipeline with measured-looking, non-monotone stage profiles (``source = simulated``).

    Each stage's forward and backward tables come from the DVFS model of
    :func:`synthetic_table` at ``num_clocks`` clocks 15 MHz apart from 1740 MHz
    down (an A40's range), with measurement noise and throttling at the top
    (:func:`noisy_table`), so that a lower clock is often faster, or cheaper, than
    a higher one, as in published profiles. The blocking power defaults to the
    A40's 70.38 W. Simulated: for tests of methods that must not rank by MHz.
    """
    rng = np.random.default_rng(seed)
    f_max = 1740
    f_min = f_max - 15 * (num_clocks - 1)
    if f_min < 1:
        raise ValueError(f"num_clocks = {num_clocks}: too many clocks 15 MHz apart below 1740 MHz")

    def measured(rng: np.random.Generator, base_s: float) -> OptionTable:
        clean = synthetic_table(rng, base_s, num_clocks, f_max=f_max, f_min=f_min)
        return noisy_table(rng, clean, time_noise, energy_noise, throttle)

    tables = _stage_tables(rng, num_stages, measured)
    return _simulated(
        "nonmonotone", schedule, num_stages, num_microbatches, num_clocks, seed, tables,
        p_blocking_w, deadline_s,
    )  # fmt: skip


def _stage_tables(
    rng: np.random.Generator,
    num_stages: int,
    table: Callable[[np.random.Generator, float], OptionTable],
) -> dict[str, OptionTable]:
    """Forward and backward tables per stage: forward about 20 ms (+-20 %), backward 1.8-2.2x."""
    tables = {}
    for s in range(num_stages):
        fwd = 0.02 * rng.uniform(0.8, 1.2)
        tables[stage_table(s, FORWARD)] = table(rng, fwd)
        tables[stage_table(s, BACKWARD)] = table(rng, fwd * rng.uniform(1.8, 2.2))
    return tables


def _simulated(
    kind: str,
    schedule: str,
    num_stages: int,
    num_microbatches: int,
    num_clocks: int,
    seed: int,
    tables: dict[str, OptionTable],
    p_blocking_w: float,
    deadline_s: float | None,
) -> PemInstance:
    """The schedule's instance, named and sourced as simulated by ``{kind}_instance``."""
    return PemInstance.from_schedule(
        schedule,
        num_stages,
        num_microbatches,
        tables,
        p_blocking_w,
        deadline_s,
        name=f"{kind} {schedule} {num_stages}x{num_microbatches} k{num_clocks} seed{seed}",
        source=f"simulated (energyopt.pipeline.generators.{kind}_instance, seed={seed})",
    )


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
    tables = _stage_tables(rng, num_stages, lambda r, t: synthetic_table(r, t, num_clocks))
    return _simulated(
        "synthetic", schedule, num_stages, num_microbatches, num_clocks, seed, tables,
        p_blocking_w, deadline_s,
    )  # fmt: skip


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
