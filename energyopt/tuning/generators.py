"""Synthetic recurring jobs (generated, not measured) for tests and suites.

The model is deliberately simple and says so in ``source``:

* epoch time at MAXPOWER: ``N * (a + c / b)`` (per-iteration overhead amortized
  over the batch);
* power demand ``D(b) = idle + (peak - idle) * b / (b + b_half)``; under a limit
  ``p < D(b)`` the GPU draws ``p`` and slows down by ``(D(b) / p) ** 0.8``;
* epochs to target ``E(b) = e_min * (1 + k * log2(b / b_opt) ** 2)`` with
  log-normal noise per training run; runs whose epochs exceed ``fail_epochs``
  never reach the target (NaN in the trace format).
"""

from __future__ import annotations

import math

import numpy as np

from energyopt.tuning.instance import TuningInstance


def synthetic_instance(
    seed: int = 0,
    *,
    batch_sizes: tuple[int, ...] = (8, 16, 32, 64, 128, 256, 512),
    power_limits_w: tuple[float, ...] = (100.0, 150.0, 200.0, 250.0),
    default_batch_size: int | None = None,
    runs_per_batch: int = 4,
    eta: float = 0.5,
    beta: float | None = 2.0,
    recurrences: int = 0,
    max_epochs: int = 60,
) -> TuningInstance:
    """A generated :class:`TuningInstance` (deterministic for ``seed``)."""
    rng = np.random.default_rng(seed)
    pmax = max(power_limits_w)
    n = 50_000
    a = rng.uniform(2e-4, 6e-4)
    c = rng.uniform(5e-3, 2e-2)
    idle, peak = 0.3 * pmax, rng.uniform(0.9, 1.1) * pmax
    b_half = rng.choice(batch_sizes[1:-1]) if len(batch_sizes) > 2 else batch_sizes[0]
    b_opt = batch_sizes[int(rng.integers(1, max(2, len(batch_sizes) - 1)))]
    e_min, k = rng.uniform(5, 15), rng.uniform(0.05, 0.2)
    fail_epochs = 4.0 * e_min
    times, powers, paths = [], [], []
    for b in batch_sizes:
        t_max = n * (a + c / b)
        demand = idle + (peak - idle) * b / (b + b_half)
        row_t, row_p = [], []
        for p in power_limits_w:
            if p < demand:
                row_t.append(t_max * (demand / p) ** 0.8)
                row_p.append(0.97 * p)
            else:
                row_t.append(t_max)
                row_p.append(demand)
        times.append(tuple(row_t))
        powers.append(tuple(row_p))
        mean_e = e_min * (1 + k * math.log2(b / b_opt) ** 2)
        runs = []
        for _ in range(runs_per_batch):
            e = max(1, round(mean_e * math.exp(rng.normal(0, 0.08))))
            runs.append(None if e > fail_epochs or e > max_epochs else int(e))
        paths.append(tuple(runs))
    b0 = default_batch_size
    if b0 is None:
        b0 = batch_sizes[len(batch_sizes) // 2]
    return TuningInstance(
        name=f"synthetic-{seed}",
        gpu="simulated",
        batch_sizes=tuple(batch_sizes),
        power_limits_w=tuple(power_limits_w),
        default_batch_size=int(b0),
        epoch_time_s=tuple(times),
        avg_power_w=tuple(powers),
        target_epochs=tuple(paths),
        eta=eta,
        beta=beta,
        recurrences=recurrences,
        max_epochs=max_epochs,
        source={
            "kind": "generated (synthetic model, not measured)",
            "generator": "energyopt.tuning.generators.synthetic_instance",
            "seed": seed,
        },
    )
