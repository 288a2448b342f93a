"""Exhaustive search over every assignment: the reference the MILP is tested against."""

from __future__ import annotations

import itertools
import math

from energyopt.capacity.evaluator import Assignment, evaluate
from energyopt.capacity.instance import CapacityInstance
from energyopt.core.validate import count_text

MAX_COMBINATIONS = 200_000


def brute_force(instance: CapacityInstance) -> tuple[Assignment, float]:
    """Try every (configuration or postponed) per job; return the best feasible one.

    Each candidate is scored by :func:`~energyopt.capacity.evaluator.evaluate`, so
    the reference shares nothing with the MILP but the evaluator. Raises
    ``ValueError`` beyond :data:`MAX_COMBINATIONS` assignments.
    """
    choices = [[None, *[(n, g) for (n, g, _) in confs]] for confs in instance.configurations]
    total = math.prod(len(c) for c in choices)
    if total > MAX_COMBINATIONS:
        raise ValueError(
            f"{count_text(total)} assignments: brute force is limited to "
            f"{count_text(MAX_COMBINATIONS)} "
            "(use the 'highs' method)"
        )
    best: Assignment | None = None
    best_cost = math.inf
    for combo in itertools.product(*choices):
        # Cheap capacity pre-check: most combinations overfill a node.
        used = [0] * instance.num_nodes
        ok = True
        for a in combo:
            if a is not None:
                used[a[0]] += a[1]
                if used[a[0]] > instance.nodes[a[0]].num_gpus:
                    ok = False
                    break
        if not ok:
            continue
        ev = evaluate(instance, combo)
        if ev.feasible and ev.objective < best_cost:
            best, best_cost = combo, ev.objective
    if best is None:  # cannot happen: filling free GPUs greedily is always feasible
        raise RuntimeError(f"{instance.name}: brute force found no feasible assignment")
    return best, best_cost
