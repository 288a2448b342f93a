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

The option a knob value selects depends on the table alone, so plans are built
from one selector call per (table, value) (:func:`option_matrix`). Under a time
limit (:func:`zeus_sweep`) the result is the best plan among those scored before
it ran out (see :func:`sweep_result`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import TerminationReason
from energyopt.core.timelimit import TimeBudget
from energyopt.pipeline.evaluator import evaluate, fastest_choice
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.paretoset import batch_evaluate, best_at, frontier_points
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


def option_matrix(
    instance: PemInstance,
    values: Sequence[float],
    select: Selector,
    stop_at: float | None = None,
) -> np.ndarray | None:
    """The option each table runs at each knob value (tables x values), ``select`` once each.

    The option depends on the table alone, so computations sharing a table share
    it: one selector call per (table, value) rather than per (computation, value).
    Rows follow ``instance.tables``' order (see :func:`table_rows`). ``None`` when
    ``time.perf_counter()`` passes ``stop_at`` first (checked after each table).
    """
    out = np.zeros((len(instance.tables), len(values)), dtype=np.int64)
    for r, table in enumerate(instance.tables.values()):
        if stop_at is not None and time.perf_counter() >= stop_at:
            return None
        out[r] = [select(table, v) for v in values]
    return out


def table_rows(instance: PemInstance) -> np.ndarray:
    """Each computation's row in :func:`option_matrix` (the position of its table)."""
    row = {name: r for r, name in enumerate(instance.tables)}
    return np.asarray([row[c.table] for c in instance.computations], dtype=np.int64)


def unique_plans(plans: np.ndarray) -> np.ndarray:
    """The rows of ``plans`` without repeats, each at its first occurrence, in order."""
    if len(plans) == 0:
        return plans
    # np.unique sorts stably when asked for indices: each index is a first occurrence.
    _, first = np.unique(plans, axis=0, return_index=True)
    return plans[np.sort(first)]


def global_plan_array(
    instance: PemInstance,
    values: Sequence[float],
    select: Selector,
    stop_at: float | None = None,
) -> np.ndarray | None:
    """:func:`global_plans` as an array (plans x computations); ``None`` past ``stop_at``."""
    options = option_matrix(instance, values, select, stop_at)
    if options is None:
        return None
    return unique_plans(np.ascontiguousarray(options[table_rows(instance)].T))


def global_plans(
    instance: PemInstance, values: Sequence[float], select: Selector
) -> list[tuple[int, ...]]:
    """One plan per knob value: every computation at that value (duplicates removed)."""
    return [tuple(p) for p in global_plan_array(instance, values, select).tolist()]


def _stage_measures(
    instance: PemInstance, options: np.ndarray, rows: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per stage and value: forward time, whole-stage time and stage energy (stages x values).

    A stage's forward time is one forward computation's (a stage's forwards share a
    table), or the stage total when it has none. The totals are Python sums in
    computation order, the definition's own rounding; stages without computations
    stay 0.
    """
    S, V = instance.num_stages, options.shape[1]
    ftime, stime, senergy = (np.zeros((S, V)) for _ in range(3))
    comps = instance.computations
    width = max(len(table) for table in instance.tables.values())
    t_tab, e_tab = np.zeros((len(instance.tables), width)), np.zeros((len(instance.tables), width))
    for r, table in enumerate(instance.tables.values()):
        t_tab[r, : len(table)], e_tab[r, : len(table)] = table.time_s, table.energy_j
    for s in range(S):
        members = [i for i, c in enumerate(comps) if c.stage == s]
        if not members:
            continue
        tabs = rows[members][:, None]
        ks = options[tabs[:, 0]]  # members x values
        t, e = t_tab[tabs, ks], e_tab[tabs, ks]
        stime[s] = [sum(col) for col in t.T.tolist()]
        senergy[s] = [sum(col) for col in e.T.tolist()]
        forward = [r for r, i in enumerate(members) if comps[i].kind == FORWARD]
        ftime[s] = t[forward[0]] if forward else stime[s]
    return ftime, stime, senergy


def _balanced_values(
    ftime: np.ndarray, stime: np.ndarray, senergy: np.ndarray, active: list[int]
) -> np.ndarray:
    """Value index per plan and stage: Zeus' start, then one row per target theta.

    A stage's choice for theta is the first value, in the order (slowest forward,
    shorter stage, less energy, index), whose forward time meets theta: the order's
    suffix found by a binary search. Inactive stages keep index 0 (nothing reads it).
    """
    index = np.arange(ftime.shape[1])
    floor = max(ftime[s].min() for s in active)
    measured = ftime[active]
    thetas = np.unique(measured[measured >= floor])
    limits = thetas * (1 + 1e-12)
    out = np.zeros((1 + len(thetas), ftime.shape[0]), dtype=np.int64)
    for s in active:
        out[0, s] = np.lexsort((index, senergy[s], stime[s], ftime[s]))[0]
        order = np.lexsort((index, senergy[s], stime[s], -ftime[s]))
        # -ftime ascends along the order: the first value whose ftime <= limit, per theta.
        out[1:, s] = order[np.searchsorted(-ftime[s][order], -limits, side="left")]
    return out


def per_stage_plan_array(
    instance: PemInstance,
    values: Sequence[float],
    select: Selector,
    stop_at: float | None = None,
) -> np.ndarray | None:
    """:func:`per_stage_plans` as an array (plans x computations); ``None`` past ``stop_at``."""
    options = option_matrix(instance, values, select, stop_at)
    if options is None:
        return None
    rows = table_rows(instance)
    stage = np.asarray([c.stage for c in instance.computations], dtype=np.int64)
    active = sorted(set(stage.tolist()))
    chosen = _balanced_values(*_stage_measures(instance, options, rows), active)
    return unique_plans(options[rows[None, :], chosen[:, stage]])


def per_stage_plans(
    instance: PemInstance, values: Sequence[float], select: Selector
) -> list[tuple[int, ...]]:
    """One plan per target forward time theta (see the module docstring).

    Ties in forward time (several clocks or power limits run the forward alike) go to
    the value with the shorter whole stage, then the less stage energy: a power limit
    that does not slow the forward should not throttle the backward either.
    """
    return [tuple(p) for p in per_stage_plan_array(instance, values, select).tolist()]


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


#: Plans scored per step of a sweep under a time limit (the deadline is checked between).
SWEEP_CHUNK = 16


def _evaluated_prefix(
    instance: PemInstance, plans: np.ndarray, stop_at: float
) -> tuple[int, np.ndarray, np.ndarray]:
    """Makespans and energies of the plans scored before ``stop_at``: (count, T, E).

    Chunks of :data:`SWEEP_CHUNK` rows; each plan's scores do not depend on the
    chunk it is in (see :func:`~energyopt.pipeline.paretoset.batch_evaluate`).
    """
    from energyopt.pipeline.dag import CompactDag

    dag = CompactDag(instance)
    T, E = np.zeros(len(plans)), np.zeros(len(plans))
    done = 0
    while done < len(plans) and time.perf_counter() < stop_at:
        hi = min(done + SWEEP_CHUNK, len(plans))
        T[done:hi], E[done:hi] = batch_evaluate(instance, plans[done:hi], dag)
        done = hi
    return done, T[:done], E[:done]


def _cut_short(
    instance: PemInstance,
    method: str,
    pick: FrontierPoint | None,
    done: int,
    plans: np.ndarray | None,
    note: str,
    extra: dict[str, Any],
) -> Result:
    """The result of a sweep stopped by its time limit after ``done`` plans.

    The best evaluated plan at the deadline; when none meets it (or none was
    evaluated), every computation at its fastest option if that meets it, else
    ``infeasible`` (then no plan does). The message says how many of how many plans
    were evaluated, then ``note``.
    """
    if plans is None:
        message = "time limit reached while generating the plans: 0 plans evaluated"
    else:
        message = f"time limit reached: {done} of {len(plans)} plans evaluated"
    extra = {**extra, "num_evaluated": done}
    choice, termination = None, TerminationReason.TIME_LIMIT
    if pick is not None:
        choice = pick.solution.choice
    elif evaluate(instance, fastest_choice(instance)).feasible:
        choice = fastest_choice(instance).choice
        message += "; none of them meets the deadline: every computation at its fastest"
    else:
        termination = TerminationReason.INFEASIBLE
        message += "; no plan meets the deadline (even with every computation at its fastest)"
    message = "; ".join(m for m in (message, note) if m)
    return pem_result(
        instance, method, choice, termination=termination, message=message, extra=extra
    )


def _sweep_points(
    instance: PemInstance, choices: np.ndarray | None, stop_at: float | None
) -> tuple[int, tuple[FrontierPoint, ...]]:
    """How many plans were scored before ``stop_at``, and the frontier of those."""
    if stop_at is None:
        return len(choices), frontier_points(instance, choices)
    if choices is None:
        return 0, ()
    done, T, E = _evaluated_prefix(instance, choices, stop_at)
    if done == 0:
        return 0, ()
    return done, frontier_points(instance, choices[:done], times_s=T, energies_j=E)


def sweep_result(
    instance: PemInstance,
    method: str,
    plans: Sequence[tuple[int, ...]] | np.ndarray | None,
    note: str = "",
    *,
    start: float | None = None,
    stop_at: float | None = None,
) -> Result:
    """Frontier of the sweep's plans and the best one at the deadline, as a scored result.

    Parameters
    ----------
    instance, method
        The instance and the method name the result carries.
    plans
        The sweep's plans, or ``None`` when their generation ran past ``stop_at``.
    note
        Appended to the result's message (e.g. :data:`EMULATED`).
    start
        ``time.perf_counter()`` at the method's call, from which ``runtime_s``
        counts (default: now).
    stop_at
        ``time.perf_counter()`` value at which the sweep stops: the result is then
        the best at the deadline among the plans scored so far, with termination
        ``time_limit`` (see :func:`_cut_short`). ``None``: no limit.
    """
    tick = time.perf_counter() if start is None else start
    choices = None if plans is None else np.asarray(plans)
    done, points = _sweep_points(instance, choices, stop_at)
    pick = best_at(instance, points, instance.deadline_s)
    extra = {
        "num_plans": 0 if choices is None else len(choices),
        "num_points": len(points),
        "source": instance.source,
    }
    if choices is None or done < len(choices):
        res = _cut_short(instance, method, pick, done, choices, note, extra)
    elif pick is None:
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

#: Each Zeus method's sweep: (one value per stage, power limits rather than clocks).
SWEEPS = {
    "zeus-global": (False, False),
    "zeus-per-stage": (True, False),
    "zeus-global-power": (False, True),
    "zeus-per-stage-power": (True, True),
}


def zeus_sweep(instance: PemInstance, method: str, time_limit: float | None = None) -> Result:
    """Run the Zeus baseline ``method`` (a key of :data:`SWEEPS`) within ``time_limit``.

    The clock starts here: plan generation and the sweep share the limit, and
    ``runtime_s`` covers both. Past the limit the result is the best plan at the
    deadline among those evaluated, with termination ``time_limit`` (see
    :func:`sweep_result`).
    """
    budget = TimeBudget(time_limit)
    per_stage, power = SWEEPS[method]
    values = power_limit_values(instance) if power else clock_values(instance)
    select = option_under_power_limit if power else option_at_clock
    build = per_stage_plan_array if per_stage else global_plan_array
    plans = build(instance, values, select, budget.stop_at)
    note = EMULATED if power else ""
    return sweep_result(instance, method, plans, note, start=budget.start, stop_at=budget.stop_at)
