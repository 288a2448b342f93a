"""Exhaustive search over every combination of configurations (tiny events only)."""

from __future__ import annotations

import math

from energyopt.core.validate import count_text
from energyopt.powercap.evaluator import evaluate
from energyopt.powercap.instance import PowercapInstance

#: Refuse instances with more combinations than this.
MAX_COMBINATIONS = 2_000_000


def brute_force(
    instance: PowercapInstance,
) -> tuple[tuple[tuple[int, int], ...] | None, float | None]:
    """The optimal decision and its mean JCT, or ``(None, None)`` when none is feasible.

    Every job's choices are its options with at least ``min_gpus`` GPUs plus the
    queue (preemptible jobs); each combination is scored by the evaluator.
    """
    choices = []
    for job in instance.jobs:
        c = [(0, 0)] if job.min_gpus == 0 else []
        c += [(o.num_gpus, o.sm_clock_mhz) for o in job.options if o.num_gpus >= job.min_gpus]
        choices.append(c)
    total = math.prod(len(c) for c in choices)
    if total > MAX_COMBINATIONS:
        raise ValueError(
            f"brute force: {count_text(total)} combinations exceed "
            f"{count_text(MAX_COMBINATIONS)}; use a smaller instance"
        )
    best, best_val = None, math.inf
    g = instance.num_gpus

    def rec(j: int, used: int, acc: list[tuple[int, int]]) -> None:
        nonlocal best, best_val
        if j == len(choices):
            ev = evaluate(instance, acc)
            if ev.feasible and ev.mean_jct_s < best_val - 1e-12:
                best, best_val = tuple(acc), ev.mean_jct_s
            return
        for c in choices[j]:
            if used + c[0] <= g:  # prune on GPUs; the evaluator checks the rest
                acc.append(c)
                rec(j + 1, used + c[0], acc)
                acc.pop()

    rec(0, 0, [])
    return (best, best_val) if best is not None else (None, None)
