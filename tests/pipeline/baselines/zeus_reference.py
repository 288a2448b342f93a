"""The Zeus baselines' plan generation and sweep as first written, for the tests.

One selector call per computation and knob value, Python loops throughout: the
straightforward definition that :mod:`energyopt.pipeline.baselines.zeus` must match
plan for plan, in the same order, with the same frontier and pick.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from energyopt.core.result import FrontierPoint
from energyopt.pipeline.baselines.zeus import Selector
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.paretoset import best_at, frontier_points
from energyopt.pipeline.schedules import FORWARD


def global_plans(
    instance: PemInstance, values: Sequence[float], select: Selector
) -> list[tuple[int, ...]]:
    """One plan per knob value: every computation at that value (duplicates removed)."""
    plans = (
        tuple(select(instance.options(i), v) for i in range(instance.num_computations))
        for v in values
    )
    return list(dict.fromkeys(plans))


def per_stage_plans(
    instance: PemInstance, values: Sequence[float], select: Selector
) -> list[tuple[int, ...]]:
    """One plan per target forward time theta (Zeus' start first), duplicates removed."""
    S, comps = instance.num_stages, instance.computations
    stage = [[i for i, c in enumerate(comps) if c.stage == s] for s in range(S)]
    fwd = [[i for i in stage[s] if comps[i].kind == FORWARD] for s in range(S)]
    active = [s for s in range(S) if stage[s]]
    ftime, stime, senergy = (np.zeros((S, len(values))) for _ in range(3))
    for s in active:
        for j, v in enumerate(values):
            ks = {i: select(instance.options(i), v) for i in stage[s]}
            t = {i: float(instance.option_times[i][k]) for i, k in ks.items()}
            ftime[s, j] = t[fwd[s][0]] if fwd[s] else sum(t.values())
            stime[s, j] = sum(t.values())
            senergy[s, j] = sum(float(instance.option_energies[i][k]) for i, k in ks.items())

    def plan(stage_value: dict[int, float]) -> tuple[int, ...]:
        return tuple(select(instance.options(i), stage_value[c.stage]) for i, c in enumerate(comps))

    def pick(s: int, candidates: list[int], slowest: bool) -> float:
        sign = -1.0 if slowest else 1.0
        return values[
            min(candidates, key=lambda j: (sign * ftime[s, j], stime[s, j], senergy[s, j]))
        ]

    everything = list(range(len(values)))
    plans = [plan({s: pick(s, everything, slowest=False) for s in active})]
    floor = max(ftime[s].min() for s in active)
    for theta in sorted({float(x) for s in active for x in ftime[s] if x >= floor}):
        stage_value = {
            s: pick(s, [j for j in everything if ftime[s, j] <= theta * (1 + 1e-12)], True)
            for s in active
        }
        plans.append(plan(stage_value))
    return list(dict.fromkeys(plans))


def sweep(
    instance: PemInstance, plans: list[tuple[int, ...]]
) -> tuple[tuple[FrontierPoint, ...], FrontierPoint | None]:
    """The sweep's frontier and its best point at the instance's deadline."""
    points = frontier_points(instance, np.asarray(plans))
    return points, best_at(instance, points, instance.deadline_s)
