"""Exhaustive PEM search for small instances: the reference the exact models are tested on."""

from __future__ import annotations

import itertools
import math

import numpy as np

from energyopt.core.validate import count_text
from energyopt.pipeline.instance import PemInstance

MAX_COMBINATIONS = 5_000_000


def brute_force(
    instance: PemInstance, deadline_s: float | None, chunk: int = 200_000
) -> tuple[tuple[int, ...] | None, float]:
    """Try every combination of options, vectorized over chunks of combinations.

    Returns the best choice (``None`` if no combination meets the deadline) and its
    energy. Raises ``ValueError`` beyond :data:`MAX_COMBINATIONS` combinations.
    """
    sizes = [len(t) for t in instance.option_times]
    total = math.prod(sizes)
    if total > MAX_COMBINATIONS:
        raise ValueError(
            f"{count_text(total)} combinations: brute force is limited to "
            f"{count_text(MAX_COMBINATIONS)} "
            "(use the 'highs' or 'cpsat' method)"
        )
    n = instance.num_computations
    topo = instance.topological_order
    preds = instance.predecessors
    S, pb = instance.num_stages, instance.p_blocking_w
    best_choice, best_energy = None, math.inf
    combos = itertools.product(*[range(k) for k in sizes])
    tol = 1e-9
    while True:
        block = np.array(list(itertools.islice(combos, chunk)), dtype=np.int64).reshape(-1, n)
        if block.shape[0] == 0:
            break
        t = np.column_stack([instance.option_times[i][block[:, i]] for i in range(n)])
        e = np.column_stack([instance.option_energies[i][block[:, i]] for i in range(n)])
        finish = np.zeros_like(t)
        for i in topo:
            start = np.max(finish[:, list(preds[i])], axis=1) if preds[i] else 0.0
            finish[:, i] = start + t[:, i]
        makespan = finish.max(axis=1)
        if deadline_s is None:
            horizon = makespan
            ok = np.ones(len(block), dtype=bool)
        else:
            horizon = np.full(len(block), float(deadline_s))
            ok = makespan <= deadline_s * (1 + tol)
        energy = e.sum(axis=1) + pb * (S * horizon - t.sum(axis=1))
        energy[~ok] = np.inf
        j = int(np.argmin(energy))
        if energy[j] < best_energy:
            best_energy, best_choice = float(energy[j]), tuple(int(v) for v in block[j])
    return best_choice, best_energy
