"""The two Zeus-derived baselines of Perseus 6.4: ``zeus-global`` and ``zeus-per-stage``.

- ZeusGlobal: one clock for every computation, swept over all clocks.
- ZeusPerStage: one clock per stage (a GPU's knob applies to its forward and
  backward), chosen to balance the stages' forward time: for a target forward
  time theta, every stage runs at its slowest clock whose forward time is at
  most theta; theta is swept over every stage forward time that some stage
  reaches. The sweep also holds Zeus' starting point, every GPU at its maximum
  clock (balancing slows the non-bottleneck stages, which can lengthen the
  iteration past the all-maximum time).

Each sweep gives plans; the frontier keeps those not dominated (see
:mod:`energyopt.pipeline.paretoset`) and the objective is the least energy at
the instance's deadline among plans that meet it.

A computation whose table lacks the requested clock uses its slowest option
at a clock at or above it (its fastest when none is), so explicit DAGs with
uneven tables work too. The stage forward time of a stage with no ``forward``
computation is the total time of its computations.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from energyopt.core.result import Result
from energyopt.core.status import TerminationReason
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.paretoset import best_at, frontier_points
from energyopt.pipeline.results import pem_result
from energyopt.pipeline.schedules import FORWARD


def option_at_clock(table: OptionTable, clock_mhz: int) -> int:
    """The option run at ``clock_mhz``: exact, else the slowest at a higher clock."""
    clocks = [f if f is not None else 0 for f in table.sm_clock_mhz]
    if clock_mhz in clocks:
        return clocks.index(clock_mhz)
    above = [k for k, f in enumerate(clocks) if f >= clock_mhz]
    if above:
        return min(above, key=lambda k: clocks[k])
    return int(np.argmin(table.time_s))


def _all_clocks(instance: PemInstance) -> list[int]:
    return sorted(
        {f for t in instance.tables.values() for f in t.sm_clock_mhz if f is not None},
        reverse=True,
    ) or [0]


def zeus_global_plans(instance: PemInstance) -> list[tuple[int, ...]]:
    """One plan per clock: every computation at that clock."""
    return [
        tuple(option_at_clock(instance.options(i), f) for i in range(instance.num_computations))
        for f in _all_clocks(instance)
    ]


def zeus_per_stage_plans(instance: PemInstance) -> list[tuple[int, ...]]:
    """One plan per target forward time theta (see module doc)."""
    clocks = _all_clocks(instance)
    S = instance.num_stages
    comps = instance.computations
    fwd = [[i for i, c in enumerate(comps) if c.stage == s and c.kind == FORWARD] for s in range(S)]
    members = [fwd[s] or [i for i, c in enumerate(comps) if c.stage == s] for s in range(S)]
    # Forward time of stage s at clock f: one forward computation's time (all
    # forwards of a stage share a table), or the stage total without forwards.
    ftime = np.zeros((S, len(clocks)))
    for s in range(S):
        idx = members[s][:1] if fwd[s] else members[s]
        for j, f in enumerate(clocks):
            ftime[s, j] = sum(
                instance.option_times[i][option_at_clock(instance.options(i), f)] for i in idx
            )
    # The sweep starts where Zeus starts: every GPU at its maximum clock (no balancing).
    plans = [tuple(option_at_clock(instance.options(i), clocks[0]) for i in range(len(comps)))]
    active = [s for s in range(S) if members[s]]
    if not active:
        return zeus_global_plans(instance)
    floor = max(ftime[s].min() for s in active)
    for theta in sorted({float(v) for s in active for v in ftime[s] if v >= floor}):
        stage_clock = {}
        for s in active:
            ok = [j for j in range(len(clocks)) if ftime[s, j] <= theta * (1 + 1e-12)]
            # slowest clock meeting theta (clocks are sorted fastest first)
            stage_clock[s] = clocks[max(ok)] if ok else clocks[0]
        plans.append(
            tuple(
                option_at_clock(instance.options(i), stage_clock.get(c.stage, clocks[0]))
                for i, c in enumerate(comps)
            )
        )
    return plans


def sweep_result(instance: PemInstance, method: str, plans: list[tuple[int, ...]]) -> Result:
    tick = time.perf_counter()
    points = frontier_points(instance, np.asarray(plans))
    pick = best_at(instance, points, instance.deadline_s)
    extra = {"num_plans": len(plans), "num_points": len(points), "source": instance.source}
    if pick is None:
        res = pem_result(
            instance,
            method,
            None,
            termination=TerminationReason.INFEASIBLE,
            message="no plan of the sweep meets the deadline",
            extra=extra,
        )
    else:
        res = pem_result(
            instance,
            method,
            pick.solution.choice,
            termination=TerminationReason.COMPLETED,
            extra=extra,
        )
    return dataclasses.replace(res, frontier=points, runtime_s=time.perf_counter() - tick)
