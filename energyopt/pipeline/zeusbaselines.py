"""The two Zeus-derived baselines of Perseus 6.4, on SM clocks and on power limits.

- ZeusGlobal: one knob value for every computation, swept over all values.
- ZeusPerStage: one knob value per stage (a GPU's knob applies to its forward and
  backward), chosen to balance the stages' forward time: for a target forward
  time theta, every stage runs the value whose *measured* forward time is the
  largest one at most theta (ties: the shorter whole stage, then less energy); theta is swept
  over every stage forward time at or above the slowest stage's fastest. The
  sweep also holds Zeus' starting point, every stage at its fastest measured
  forward value (balancing slows the non-bottleneck stages, which can lengthen
  the iteration past it).

The knob is the SM clock (``zeus-global``, ``zeus-per-stage``: the profiles hold
clock-locked measurements) or, as Perseus 6.4 prints it, the GPU power limit
(``zeus-global-power``, ``zeus-per-stage-power``). Option tables hold no
power-limit measurements, so a power limit is *emulated*: under a limit P the
GPU's DVFS runs the fastest option (measured time; ties: less energy) whose mean
power ``e / t`` is at most P, or its lowest-power option when none fits (see
:func:`option_under_power_limit`). Nothing here ranks options by MHz: measured
profiles are not monotone in clock (a lower clock can be faster).

Each sweep gives plans; the frontier keeps those not dominated (see
:mod:`energyopt.pipeline.paretoset`) and the objective is the least energy at
the instance's deadline among plans that meet it.

A computation whose table lacks the requested clock is set to the nearest clock
above it (clock locking rounds up), or runs its fastest option when none is, so
explicit DAGs with uneven tables work too. The stage forward time of a stage
with no ``forward`` computation is the total time of its computations.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import numpy as np

from energyopt.core.result import Result
from energyopt.core.status import TerminationReason
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.paretoset import best_at, frontier_points
from energyopt.pipeline.results import pem_result
from energyopt.pipeline.schedules import FORWARD

#: Which option of a table a knob value selects.
Selector = Callable[[OptionTable, float], int]


def _fastest(table: OptionTable, candidates: Sequence[int]) -> int:
    """The candidate with the least measured time, then the least energy."""
    return min(candidates, key=lambda k: (table.time_s[k], table.energy_j[k]))


def option_at_clock(table: OptionTable, clock_mhz: float) -> int:
    """The option run at ``clock_mhz``: exact, else the nearest clock above, else the fastest."""
    clocks = [f if f is not None else 0 for f in table.sm_clock_mhz]
    if clock_mhz in clocks:
        return clocks.index(clock_mhz)
    above = [k for k, f in enumerate(clocks) if f >= clock_mhz]
    if above:
        return min(above, key=lambda k: clocks[k])
    return _fastest(table, range(len(clocks)))


def mean_power_w(table: OptionTable, k: int) -> float:
    """Mean power ``e / t`` of option ``k`` (0 W for a zero-time option)."""
    t = table.time_s[k]
    return table.energy_j[k] / t if t > 0 else 0.0


def option_under_power_limit(table: OptionTable, limit_w: float) -> int:
    """The option a GPU runs under power limit ``limit_w`` (emulated from clock measurements).

    The fastest option whose mean power is at most the limit (ties: less energy);
    when none fits, the option of least mean power (the GPU at its lowest clock).
    A real power cap may also switch clocks within a computation; the table
    cannot express that, so this is an emulation and says so.
    """
    power = [mean_power_w(table, k) for k in range(len(table))]
    fits = [k for k, p in enumerate(power) if p <= limit_w * (1 + 1e-12)]
    if fits:
        return _fastest(table, fits)
    return min(range(len(power)), key=lambda k: (power[k], table.time_s[k]))


def clock_values(instance: PemInstance) -> list[float]:
    """Every SM clock of the instance's tables (just the values swept; order is irrelevant)."""
    return sorted(
        {f for t in instance.tables.values() for f in t.sm_clock_mhz if f is not None}
    ) or [0]


def power_limit_values(instance: PemInstance) -> list[float]:
    """Every mean option power: the limits at which some computation's option changes."""
    return sorted({mean_power_w(t, k) for t in instance.tables.values() for k in range(len(t))})


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
    """One plan per target forward time theta (see the module docstring).

    Ties in forward time (several clocks or power limits run the forward alike) go to
    the value with the shorter whole stage, then the less stage energy: a power limit
    that does not slow the forward should not throttle the backward either.
    """
    S, comps = instance.num_stages, instance.computations
    stage = [[i for i, c in enumerate(comps) if c.stage == s] for s in range(S)]
    fwd = [[i for i in stage[s] if comps[i].kind == FORWARD] for s in range(S)]
    active = [s for s in range(S) if stage[s]]
    # Per stage and value: forward time (one forward computation's: all forwards of a
    # stage share a table; the stage total without forwards), whole-stage time and energy.
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
    # Zeus' starting point: every stage at its fastest measured forward value.
    plans = [plan({s: pick(s, everything, slowest=False) for s in active})]
    floor = max(ftime[s].min() for s in active)
    for theta in sorted({float(x) for s in active for x in ftime[s] if x >= floor}):
        # Balance: each stage at the slowest measured forward time that meets theta.
        stage_value = {
            s: pick(s, [j for j in everything if ftime[s, j] <= theta * (1 + 1e-12)], True)
            for s in active
        }
        plans.append(plan(stage_value))
    return list(dict.fromkeys(plans))


def zeus_global_plans(instance: PemInstance) -> list[tuple[int, ...]]:
    """ZeusGlobal on SM clocks: one plan per clock."""
    return global_plans(instance, clock_values(instance), option_at_clock)


def zeus_per_stage_plans(instance: PemInstance) -> list[tuple[int, ...]]:
    """ZeusPerStage on SM clocks: one plan per target forward time."""
    return per_stage_plans(instance, clock_values(instance), option_at_clock)


def zeus_global_power_plans(instance: PemInstance) -> list[tuple[int, ...]]:
    """ZeusGlobal on (emulated) power limits: one plan per limit."""
    return global_plans(instance, power_limit_values(instance), option_under_power_limit)


def zeus_per_stage_power_plans(instance: PemInstance) -> list[tuple[int, ...]]:
    """ZeusPerStage on (emulated) power limits: one plan per target forward time."""
    return per_stage_plans(instance, power_limit_values(instance), option_under_power_limit)


def sweep_result(
    instance: PemInstance, method: str, plans: list[tuple[int, ...]], note: str = ""
) -> Result:
    """Frontier of the sweep's plans and the best one at the deadline, as a scored result."""
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
            message="; ".join(m for m in ("no plan of the sweep meets the deadline", note) if m),
            extra=extra,
        )
    else:
        res = pem_result(
            instance,
            method,
            pick.solution.choice,
            termination=TerminationReason.COMPLETED,
            message=note,
            extra=extra,
        )
    return dataclasses.replace(res, frontier=points, runtime_s=time.perf_counter() - tick)


#: What the power-limit variants say in their result message.
EMULATED = "power limits emulated from clock-locked measurements (fastest option under the limit)"
