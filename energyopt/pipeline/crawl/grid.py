"""The Perseus frontier crawl (Perseus 4.2-4.3, Algorithms 1-3, Appendix E).

Algorithm 1: start from the minimal-energy schedule (every computation at the
longest planned duration of its cost model, i.e. its least effective-energy
option) and repeatedly shorten the iteration by one unit ``tau`` with the least
energy increase, until no cut of finite capacity is left (the fastest schedule).

Algorithm 2 (GetNextSchedule), one step:

1. edge-centric DAG: computation i is the edge ``2i -> 2i+1``; a precedence
   ``a -> b`` is the zero-duration edge ``2a+1 -> 2b``; a source and a sink close it
   (:class:`_EdgeCentricDag`);
2. keep the critical computations (earliest start == latest start) and the
   tight precedences between them (the Critical DAG, :func:`_critical_dag`);
3. flow bounds from Eq. 8 on computation edges, ``(0, inf)`` on the others;
4. minimum cut with lower bounds (:mod:`energyopt.pipeline.crawl.maxflow`: Algorithm 3,
   or the same cut with one maximum flow, the default; :func:`_min_cut_step`);
5. speed up the cut's forward computations by one unit, slow down its backward
   ones by one unit (:func:`_cut_computations`, :func:`_apply_cut`).

:func:`crawl` runs the loop (:func:`_crawl_steps`) on a :class:`_CrawlState` and
scores every schedule at the end (:func:`_finish_and_score`).

Durations are integers in units of tau, so the longest paths (Dijkstra with
potentials, :class:`~energyopt.pipeline.dag.IntegerTimer`) and the critical test
are exact. Safeguards and additions the paper does not spell out:

- with Algorithm 3 the flow with lower bounds can be infeasible (the relaxed
  schedule is not optimal at its own time, which the exponential fit allows);
  the step then uses the speed-up-only cut (lower bounds 0), which always exists;
- slowing the backward computations of a cut can lengthen a near-critical path
  (slack 1) past the new makespan; the step is then taken without slowdowns,
  which shortens every critical path and lengthens nothing (:func:`_undo_slowdowns`);
- with the ``hull`` model the capacities are constant between hull vertices, so
  when the same cut would be chosen again it is applied for several steps at
  once (identical to unit steps, see :func:`_repeat_steps`); every intermediate
  step is still a frontier point;
- grid rounding makes the last schedule measure a little slower than T_min (all
  fastest options); :func:`_finish_to_fastest` closes that gap with min-cut steps
  on the measured times.
- between two steps the Critical DAG rarely changes: the last step's critical set
  is tried first (:meth:`~energyopt.pipeline.dag.IntegerTimer.critical`) and,
  with ``flow="one"``, one flow network is kept
  (:class:`~energyopt.pipeline.crawl.maxflow.OneFlowCutter`); both give exactly what a
  fresh computation gives.

All counted in ``stats``. Every schedule is converted to clocks (the slowest
Pareto-optimal option that meets the plan, Perseus 4.3) and scored with the
*measured* times and energies. The planned (modelled) time and energy of each
step stay in :class:`CrawlTrace`.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.crawl.costmodels import COST_MODELS
from energyopt.pipeline.crawl.finish import _all_fastest, _finish_to_fastest
from energyopt.pipeline.crawl.maxflow import OneFlowCutter, min_cut_with_lower_bounds
from energyopt.pipeline.crawl.step import (
    _apply_cut,
    _CrawlState,
    _critical_dag,
    _cut_computations,
    _EdgeCentricDag,
    _min_cut_step,
    _Model,
    _undo_slowdowns,
)
from energyopt.pipeline.crawl.trace import CrawlTrace
from energyopt.pipeline.dag import CompactDag, IntegerTimer
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.paretoset import batch_evaluate

#: Crawls expected to run longer than this show a progress bar.
PROGRESS_AFTER_S = 1.0


def _check_instance(instance: PemInstance, tau_s: float) -> None:
    if not isinstance(instance, PemInstance):
        raise InstanceError(f"instance: expected a PemInstance, got {type(instance).__name__}")
    if not (isinstance(tau_s, (int, float)) and math.isfinite(tau_s) and tau_s > 0):
        raise InstanceError(f"tau_s = {tau_s!r}: must be a positive number of seconds")
    for name, table in instance.tables.items():
        if len(table) == 0:
            raise InstanceError(f"tables[{name!r}]: no options")
        for k, t in enumerate(table.time_s):
            if not (math.isfinite(t) and t >= 0):
                raise InstanceError(f"tables[{name!r}].time_s[{k}] = {t!r}: must be >= 0")


def _check_options(cost_model: str, flow: str) -> None:
    """Reject an unknown ``cost_model`` or ``flow`` with a ``ValueError``."""
    if cost_model not in COST_MODELS:
        raise ValueError(f"cost_model = {cost_model!r}: expected one of {', '.join(COST_MODELS)}")
    if flow not in ("one", "algorithm3"):
        raise ValueError(f"flow = {flow!r}: expected 'one' or 'algorithm3'")


def crawl(
    instance: PemInstance,
    *,
    tau_s: float = 1e-3,
    cost_model: str = "hull",
    max_steps: int | None = None,
    time_limit: float | None = None,
    progress: bool | None = None,
    jump: bool = True,
    flow: str = "one",
    rounding: str = "down",
    finish: bool = True,
    start: tuple[int, ...] | None = None,
) -> CrawlTrace:
    """Run Algorithm 1 and return every schedule it visits, measured.

    Parameters
    ----------
    instance
        The PEM instance (its deadline is ignored here).
    tau_s
        The unit time tau of one step, in seconds.
    cost_model
        ``"hull"`` (piecewise-linear lower convex hull) or ``"exponential"``.
    max_steps, time_limit
        Stop early after this many steps / seconds (``stats["stopped"]`` says so).
    progress
        Show a tqdm bar; ``None``: only when the crawl is expected to take > 1 s.
    jump
        Apply a repeated cut for several steps at once (``hull`` model only).
    flow
        ``"one"``: the minimum cut with lower bounds by one maximum flow
        (:func:`~energyopt.pipeline.crawl.maxflow.min_cut_one_flow`, same cut);
        ``"algorithm3"``: Perseus Algorithm 3 as printed (two maximum flows,
        speed-up-only fallback when no feasible flow exists).
    rounding
        ``"down"`` (as ``lowtime``; default) or ``"up"`` (Perseus 4.3 read
        literally): how measured times map to the grid of tau (see
        :func:`~energyopt.pipeline.crawl.costmodels.tabulate`). Either way every plan is
        scored with its measured times; ``"down"`` gave the better frontiers here.
    finish
        Close the rounding gap to T_min after the last cut (:func:`_finish_to_fastest`,
        energyopt's addition; ``False`` for Algorithm 1 as printed, which then ends on
        T_min's own schedule, every computation at its fastest option).
    start
        Option indices of a plan to start from instead of the minimal-energy
        schedule (energyopt's addition, for the fast-end repair of
        :mod:`~energyopt.pipeline.crawl.repair`): each computation starts at its option's
        time on the grid, rounded as ``rounding`` says and clipped to the model's range.
    """
    tick = time.perf_counter()
    _check_instance(instance, tau_s)
    _check_options(cost_model, flow)
    model = _Model(instance, float(tau_s), cost_model, rounding)
    dag = CompactDag(instance)
    timer = IntegerTimer(dag, model.d_max)
    d = _start_durations(instance, model, start, tau_s, rounding)
    L0 = _planned_makespan(timer, d)
    expected_steps = L0 - _planned_makespan(timer, model.d_min)
    stats = _start_stats(float(tau_s), cost_model, flow, rounding, expected_steps)
    state = _CrawlState(d, [d.copy()], [L0], stats)
    bar = _progress_bar(progress, expected_steps, dag.n)
    try:
        _crawl_steps(
            state,
            model,
            timer,
            _EdgeCentricDag(dag),
            _cut_function(flow),
            repeat_cuts=jump and cost_model == "hull",
            max_steps=max_steps,
            time_limit=time_limit,
            tick=tick,
            bar=bar,
        )
    finally:
        if bar is not None:
            bar.close()
    return _finish_and_score(instance, dag, model, state, tau_s, finish, tick)


def _start_durations(
    instance: PemInstance,
    model: _Model,
    start: tuple[int, ...] | None,
    tau_s: float,
    rounding: str,
) -> np.ndarray:
    """Grid durations of the plan ``start`` (option indices), as :func:`tabulate` rounds.

    Without ``start``, Algorithm 1's start: the minimal-energy schedule, every
    duration at its longest.
    """
    if start is None:
        return model.d_max.copy()
    n = instance.num_computations
    if len(start) != n:
        raise ValueError(f"start: {len(start)} option indices for {n} computations")
    t = np.empty(n)
    for i, (c, k) in enumerate(zip(instance.computations, start)):
        times = instance.tables[c.table].time_s
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < len(times):
            raise ValueError(f"start[{i}] = {k!r}: not an option of table {c.table!r}")
        t[i] = times[k]
    q = t / tau_s
    units = np.floor(q + 1e-9) if rounding == "down" else np.ceil(q - 1e-9)
    return np.clip(units.astype(np.int64), model.d_min, model.d_max)


def _planned_makespan(timer: IntegerTimer, d: np.ndarray) -> int:
    """The makespan, in units of tau, of the integer durations ``d``."""
    return int((timer.earliest_start(d) + d).max())


def _start_stats(
    tau_s: float, cost_model: str, flow: str, rounding: str, expected_steps: int
) -> dict[str, Any]:
    """The crawl's options and zeroed counters, as :attr:`CrawlTrace.stats` starts.

    Parameters
    ----------
    tau_s, cost_model, flow, rounding
        The options of :func:`crawl`, recorded as given.
    expected_steps
        Unit steps from the minimal-energy makespan to the all-fastest planned one.

    Returns
    -------
    dict
        The counters that the steps increment; ``"stopped"`` stays ``""`` until
        the crawl ends.
    """
    return {
        "tau_s": tau_s,
        "cost_model": cost_model,
        "flow": flow,
        "rounding": rounding,
        "infeasible_flow_steps": 0,
        "slowdown_reverted_steps": 0,
        "max_flow_calls": 0,
        "cuts": 0,
        "expected_steps": expected_steps,
        "stopped": "",
    }


def _progress_bar(progress: bool | None, expected_steps: int, n: int) -> Any:
    """A tqdm bar over the expected steps, or ``None`` for a short or silent crawl."""
    if progress or (progress is None and expected_steps * max(n, 1) > 3e5):
        from tqdm.auto import tqdm

        return tqdm(total=expected_steps, desc="perseus crawl", unit="step", leave=False)
    return None


def _cut_function(flow: str) -> Any:
    """The minimum-cut routine of ``flow`` (Algorithm 2, step 4)."""
    if flow == "one":
        # The same cut as min_cut_one_flow (valid bounds, no checks), keeping its flow
        # network between steps: the Critical DAG rarely changes from one step to the next.
        return OneFlowCutter()
    return min_cut_with_lower_bounds


def _crawl_steps(
    state: _CrawlState,
    model: _Model,
    timer: IntegerTimer,
    graph: _EdgeCentricDag,
    cut_fn: Any,
    *,
    repeat_cuts: bool,
    max_steps: int | None,
    time_limit: float | None,
    tick: float,
    bar: Any,
) -> None:
    """Algorithm 1's loop: one GetNextSchedule step (Algorithm 2) after another.

    Parameters
    ----------
    state
        Starts at the minimal-energy schedule; every step appends its schedules.
    model, timer, graph
        The cost model's grids, the longest-path timer and the edge-centric DAG.
    cut_fn
        The minimum-cut routine (:func:`_cut_function`).
    repeat_cuts
        Apply a repeated cut for several steps at once (:func:`_repeat_steps`).
    max_steps, time_limit, tick
        Stop after this many steps, or ``time_limit`` seconds after ``tick``.
    bar
        A progress bar to advance, or ``None``.

    Notes
    -----
    Ends with ``state.stats["stopped"]`` set to the reason.
    """
    stats = state.stats
    capacity_dag = None
    while True:
        es, ef, L = _undo_slowdowns(state, timer)
        if max_steps is not None and state.steps >= max_steps:
            stats["stopped"] = f"max_steps={max_steps}"
            return
        if time_limit is not None and time.perf_counter() - tick > time_limit:
            stats["stopped"] = f"time_limit={time_limit}"
            return
        capacity_dag = _critical_dag(model, timer, graph, state.durations, es, ef, L, capacity_dag)
        cut, lower_used = _min_cut_step(cut_fn, capacity_dag, graph, stats)
        if cut.status != "ok":
            stats["stopped"] = "no finite cut: fastest schedule reached"
            return
        speed, slow = _cut_computations(cut, capacity_dag, model, state.durations, lower_used)
        if len(speed) == 0:
            stats["stopped"] = "no computation to speed up"
            return
        stats["cuts"] += 1
        reps = _apply_cut(state, model, timer, speed, slow, L, repeat_cuts, max_steps)
        if bar is not None:
            bar.update(min(reps, max(0, bar.total - bar.n)))


def _finish_and_score(
    instance: PemInstance,
    dag: CompactDag,
    model: _Model,
    state: _CrawlState,
    tau_s: float,
    finish: bool,
    tick: float,
) -> CrawlTrace:
    """Convert every schedule to clocks, add the finishing steps, and measure them.

    When the crawl was not stopped by a limit, it ends at T_min: by
    :func:`_finish_to_fastest` (``finish``) or, as printed, on T_min's own
    schedule (:func:`_all_fastest`). Finishing steps have no planned time (NaN).

    Parameters
    ----------
    instance, dag, model
        The instance, its DAG and the cost model's grids.
    state
        The ended crawl.
    tau_s
        The unit time, in seconds.
    finish, tick
        The option of :func:`crawl`, and when it started (for ``runtime_s``).

    Returns
    -------
    CrawlTrace
        Planned and measured time and energy of every schedule.
    """
    stats = state.stats
    # Grid columns (d - d_min) of every schedule, for both the options and the costs.
    cols = np.vstack(state.rows) - model.d_min[None, :]
    choices = model.option[model.table_of[None, :], cols]
    planned_units = state.planned_units
    if not stats["stopped"].startswith(("max_steps", "time_limit")):
        extra_rows = (
            _finish_to_fastest(instance, dag, choices[-1]) if finish else [_all_fastest(instance)]
        )
        stats["finishing_steps"] = len(extra_rows)
        if extra_rows:
            choices = np.vstack([choices, np.asarray(extra_rows)])
            planned_units = planned_units + [-1] * len(extra_rows)
            # Finishing steps have no planned durations: the last plan stands in (time NaN).
            cols = np.vstack([cols, np.repeat(cols[-1:], len(extra_rows), axis=0)])
    T_meas, E_meas = batch_evaluate(instance, choices, dag)
    T_plan = np.asarray(planned_units, dtype=float) * tau_s
    T_plan[np.asarray(planned_units) < 0] = np.nan
    E_plan = model.cost[model.table_of[None, :], cols].sum(axis=1)
    E_plan = E_plan + instance.p_blocking_w * instance.num_stages * T_plan
    stats["steps"] = state.steps
    stats["runtime_s"] = time.perf_counter() - tick
    return CrawlTrace(choices, T_plan, E_plan, T_meas, E_meas, stats)
