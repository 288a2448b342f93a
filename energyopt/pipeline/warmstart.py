"""A quick feasible PEM solution to warm-start the exact models.

Greedy slack descent: start from the fastest options (the only choice that is
feasible whenever anything is), then repeatedly apply the single option change
with the largest effective-energy saving that fits in that computation's slack
(latest finish minus earliest start), until no change fits. Not a method of any
paper; it is only a MIP start.
"""

from __future__ import annotations

import numpy as np

from energyopt.pipeline.evaluator import PemSolution, fastest_choice
from energyopt.pipeline.instance import PemInstance


def slack_descent(
    instance: PemInstance, deadline_s: float, max_moves: int = 100_000
) -> PemSolution | None:
    """Greedy descent from the fastest choice; ``None`` when even that misses ``deadline_s``."""
    choice = list(fastest_choice(instance).choice)
    topo = instance.topological_order
    preds, succ = instance.predecessors, instance.successors
    times, eff = (
        instance.option_times,
        [instance.effective_energy(i) for i in range(instance.num_computations)],
    )
    n = instance.num_computations
    tol = 1e-12 * max(1.0, deadline_s)
    for _ in range(max_moves):
        t = np.array([times[i][choice[i]] for i in range(n)])
        es = np.zeros(n)
        for i in topo:
            es[i] = max((es[j] + t[j] for j in preds[i]), default=0.0)
        if (es + t).max() > deadline_s + tol:
            return None
        lf = np.full(n, float(deadline_s))
        for i in topo[::-1]:
            lf[i] = min((lf[j] - t[j] for j in succ[i]), default=float(deadline_s))
        best, move = 0.0, None
        for i in range(n):
            room = lf[i] - es[i] + tol
            cur = eff[i][choice[i]]
            for k, tk in enumerate(times[i]):
                saving = cur - eff[i][k]
                if tk <= room and saving > best + 1e-12:
                    best, move = saving, (i, k)
        if move is None:
            break
        choice[move[0]] = move[1]
    return PemSolution(tuple(choice))
