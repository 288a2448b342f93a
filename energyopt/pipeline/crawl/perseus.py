"""The Perseus frontier crawl as registered PEM methods (``perseus``, ``perseus-exponential``).

The crawl (:mod:`energyopt.pipeline.crawl.grid`) produces schedules; here each is
scored with the measured times and energies, dominated plans are dropped, and
the plan for the instance's deadline is picked as the straggler lookup does
(least energy at the deadline among the plans that meet it, Perseus Eq. 2).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from energyopt.core.result import FrontierPoint, Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.pipeline.crawl.costmodels import remembered_fits
from energyopt.pipeline.crawl.grid import crawl as grid_crawl
from energyopt.pipeline.crawl.hullcrawl import exact_crawl
from energyopt.pipeline.crawl.repair import fast_end_trace, slow_end_trace
from energyopt.pipeline.crawl.trace import CrawlTrace
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.paretoset import batch_evaluate, best_at, energy_pareto, frontier_points
from energyopt.pipeline.relaxation.hull import HullRelaxation, bound_curve, certify_frontier
from energyopt.pipeline.relaxation.rounding import OptionArrays, rounded_plan
from energyopt.pipeline.results import pem_result

#: How the crawl runs: on the exact hull (energyopt's default) or on the grid of tau (Perseus).
CRAWLS = ("exact", "grid")


def perseus_frontier(
    instance: PemInstance,
    *,
    method: str = "perseus",
    tau_s: float = 1e-3,
    cost_model: str = "hull",
    crawl: str = "exact",
    time_limit: float | None = None,
    max_steps: int | None = None,
    progress: bool | None = None,
    verify: bool = True,
    jump: bool = True,
    rounding: str = "down",
    flow: str = "one",
    finish: bool = True,
    certify: bool = False,
    polish: int = 0,
    repair: bool = True,
) -> Result:
    """Crawl, score and filter; the Result's objective is at the instance's deadline.

    The steps, beside Perseus Sec. 4: the crawls to run (:func:`_crawl_runs`), the
    frontier crawls (:func:`_run_crawls`, Algorithm 1), the union of their plans
    (:func:`_merged_trace`), the frontier of the plans (:func:`_scored_frontier`,
    Eq. 4) and the plan for the deadline (:func:`_deadline_result`, Eq. 2).

    Parameters
    ----------
    instance
        The PEM instance; its deadline picks the Result's plan.
    method
        The method name the Result carries.
    tau_s, cost_model, crawl, rounding, jump, flow, finish
        ``crawl="exact"`` (default, hull model only): the crawl on the exact convex
        hull with clocks fitted to the LP's durations at every event and every
        ``tau_s`` (:mod:`energyopt.pipeline.crawl.hullcrawl`). ``crawl="grid"``: Perseus
        Algorithm 1 on the grid of ``tau_s`` (:func:`energyopt.pipeline.crawl.grid.crawl`,
        with ``rounding``, ``flow``, ``jump`` and ``finish``). The exponential model
        always crawls on the grid. ``cost_model="both"`` keeps the union of the hull
        crawl and the exponential grid crawl.
    time_limit, max_steps, progress
        Limits of the whole call and of each crawl's steps; the crawls' progress bar.
    verify
        Score the frontier's plans with the evaluator (:func:`frontier_points`).
    repair
        Add the two end repairs' plans to the hull crawl's (:func:`_repaired`).
    polish
        ``K > 0``: the relaxation's rounded plans join the crawl's
        (:func:`polished_plans`): energyopt's improvement, not part of the paper's crawl.
    certify
        Every frontier point gets the convex-hull relaxation's proven bound at its
        makespan, the Result's ``bound`` is the curve's at the deadline, and ``extra``
        the largest and median pointwise gaps (:func:`_certified`).

    Returns
    -------
    Result
        ``frontier``: the Perseus frontier (plans not dominated in makespan and
        effective energy, Eq. 4), each with its measured makespan and its energy at
        that makespan, fastest first. ``extra``: the crawl statistics, the number of
        points also undominated in (makespan, energy), the largest gap between a
        planned and a measured iteration time (:func:`_frontier_stats`).
    """
    tick = time.perf_counter()
    runs = _crawl_runs(cost_model, rounding, crawl)
    grid_options = {"jump": jump, "flow": flow, "finish": finish}
    traces = _run_crawls(instance, runs, tick, tau_s, time_limit, max_steps, progress, grid_options)
    if repair:
        traces, runs = _repaired(instance, traces, runs, tick, tau_s, time_limit, progress)
    trace = _merged_trace(traces, runs, cost_model, rounding)
    if _early(trace.stats["stopped"]):
        trace = _with_fastest_plan(instance, trace)
    trace, points = _scored_frontier(instance, trace, polish, verify, time_limit, tick)
    res = _deadline_result(instance, method, trace, points, time_limit)
    res = dataclasses.replace(res, runtime_s=time.perf_counter() - tick)
    if certify:
        res = _certified(instance, res, time_limit, tick)
    if res.status is SolutionStatus.OPTIMAL:  # never: heuristics prove nothing
        res = dataclasses.replace(res, status=SolutionStatus.FEASIBLE)
    return res


def _crawl_runs(cost_model: str, rounding: str, crawl: str) -> list[tuple[str, str]]:
    """The crawls to run, as ``(cost model, rounding)`` pairs; ``("exact", "-")`` is the hull crawl.

    ``"both"`` (of either option) runs one crawl per value. Raises ``ValueError``
    on an unknown option value.
    """
    if rounding not in ("up", "down", "both"):
        raise ValueError(f"rounding = {rounding!r}: expected 'up', 'down' or 'both'")
    if cost_model not in ("hull", "exponential", "both"):
        raise ValueError(f"cost_model = {cost_model!r}: expected 'hull', 'exponential' or 'both'")
    if crawl not in CRAWLS:
        raise ValueError(f"crawl = {crawl!r}: expected one of {', '.join(CRAWLS)}")
    runs = [
        (cm, rd)
        for cm in (("hull", "exponential") if cost_model == "both" else (cost_model,))
        for rd in (("down", "up") if rounding == "both" else (rounding,))
    ]
    if crawl == "exact" and "hull" in (cm for cm, _ in runs):
        # The exact crawl has no grid rounding: one hull run whatever ``rounding`` says.
        runs = [("exact", "-")] + [(cm, rd) for cm, rd in runs if cm != "hull"]
    return runs


def _run_crawls(
    instance: PemInstance,
    runs: list[tuple[str, str]],
    tick: float,
    tau_s: float,
    time_limit: float | None,
    max_steps: int | None,
    progress: bool | None,
    grid_options: dict[str, Any],
) -> list[CrawlTrace]:
    """One frontier crawl per run (Perseus Algorithm 1), sharing ``time_limit`` from ``tick``.

    ``grid_options`` (``jump``, ``flow``, ``finish``) go to the grid crawls.
    """
    traces = []
    crawl_limit = None if time_limit is None else _crawl_share(runs) * time_limit
    for k, (cm, rd) in enumerate(runs):
        elapsed = time.perf_counter() - tick
        left = None if crawl_limit is None else max(0.0, crawl_limit - elapsed)
        if left is not None:
            left /= len(runs) - k  # an equal share of what is left for each crawl to come
        if cm == "exact":
            traces.append(
                exact_crawl(
                    instance, tau_s=tau_s, time_limit=left, max_steps=max_steps, progress=progress
                )
            )
        else:
            traces.append(
                grid_crawl(
                    instance,
                    tau_s=tau_s,
                    cost_model=cm,
                    time_limit=left,
                    max_steps=max_steps,
                    progress=progress,
                    rounding=rd,
                    **grid_options,
                )
            )
    return traces


def _crawl_share(runs: list[tuple[str, str]]) -> float:
    """The share of the time limit the crawls of ``runs`` may spend stepping.

    After its steps a grid crawl finishes and scores every plan it made, and the
    union of the crawls' plans is verified: work that grows with the steps taken (a
    sixth of the stepping time for the exponential crawl on GPT-3 8x96, which ran
    0.8 s past a 5 s limit when it stepped for all of it): stepping for 80 % of the
    limit leaves room for it at any limit. A lone exact crawl keeps its own reserve
    (:func:`~energyopt.pipeline.crawl.hullcrawl.exact_crawl`).
    """
    if len(runs) == 1:
        return 1.0 if runs[0][0] == "exact" else 0.8
    return 0.6


def _repaired(
    instance: PemInstance,
    traces: list[CrawlTrace],
    runs: list[tuple[str, str]],
    tick: float,
    tau_s: float,
    time_limit: float | None,
    progress: bool | None,
) -> tuple[list[CrawlTrace], list[tuple[str, str]]]:
    """The crawls' traces and runs with the two repairs', after a complete hull crawl.

    When the one run is the hull crawl (``crawl="exact"``, ``cost_model="hull"``)
    and it was not stopped early, the plans of Perseus' exponential-model crawl
    over the slowest fifth of its makespans and from its plan a fifth of the way
    up from T_min join its own, where the clock fitting loses
    (:func:`~energyopt.pipeline.crawl.repair.slow_end_trace`,
    :func:`~energyopt.pipeline.crawl.repair.fast_end_trace`); they only add plans, so
    the frontier never gets worse. Within ``time_limit`` the repairs end by 85 %
    of it, so the union is still scored. The repairs read the hull crawl's
    ``repair_rows`` only (``CrawlTrace.repair_rows``).
    """
    if runs != [("exact", "-")] or _early(traces[0].stats["stopped"]):
        return traces, runs
    hull = traces[0]
    with remembered_fits():  # both repairs fit the same tables
        for name, repair in (("repair", slow_end_trace), ("repair-fast", fast_end_trace)):
            left = None
            if time_limit is not None:
                left = 0.85 * time_limit - (time.perf_counter() - tick)
            got = repair(instance, hull, tau_s=tau_s, time_limit=left, progress=progress)
            if got is not None:
                traces, runs = [*traces, got], [*runs, (name, "exponential")]
    return traces, runs


def _merged_trace(
    traces: list[CrawlTrace], runs: list[tuple[str, str]], cost_model: str, rounding: str
) -> CrawlTrace:
    """The union of the crawls' plans (the frontier keeps the best of each).

    The first crawl's trace when there is one; otherwise its statistics with the
    steps summed, one entry per run under ``"runs"`` and the first early stop. The
    plans are stacked in the narrowest of the crawls' integer types that holds them
    all (:func:`_stacked`).
    """
    trace = traces[0]
    if len(traces) == 1:
        return trace
    stopped = next((t.stats["stopped"] for t in traces if _early(t.stats["stopped"])), "")
    return dataclasses.replace(
        trace,
        repair_rows=None,
        choices=_stacked([t.choices for t in traces]),
        planned_time_s=np.concatenate([t.planned_time_s for t in traces]),
        planned_energy_j=np.concatenate([t.planned_energy_j for t in traces]),
        time_s=np.concatenate([t.time_s for t in traces]),
        energy_j=np.concatenate([t.energy_j for t in traces]),
        stats={
            **trace.stats,
            "cost_model": cost_model,
            "rounding": rounding,
            "stopped": stopped or trace.stats["stopped"],
            "steps": sum(t.stats["steps"] for t in traces),
            "runs": [
                {"cost_model": cm, "rounding": rd, "steps": t.stats["steps"]}
                for (cm, rd), t in zip(runs, traces)
            ],
        },
    )


def _stacked(blocks: list[np.ndarray]) -> np.ndarray:
    """The plans of ``blocks`` one after the other, in :func:`_plan_dtype` (same indices)."""
    return np.concatenate(blocks, dtype=_plan_dtype(blocks), casting="unsafe")


def _plan_dtype(blocks: list[np.ndarray]) -> np.dtype:
    """The narrowest of the blocks' integer types that holds every block's option indices.

    A crawl may keep its plans in a narrow type (int16) and the repair in int64: the
    union in int64 would be four times the memory, all written afresh.
    """
    for dtype in sorted({b.dtype for b in blocks}, key=lambda d: d.itemsize):
        info = np.iinfo(dtype)
        if all(
            np.can_cast(b.dtype, dtype)
            or b.size == 0
            or (info.min <= b.min() and b.max() <= info.max)
            for b in blocks
        ):
            return dtype
    return np.result_type(*blocks)


def _scored_frontier(
    instance: PemInstance,
    trace: CrawlTrace,
    polish: int,
    verify: bool,
    time_limit: float | None,
    tick: float,
) -> tuple[CrawlTrace, tuple[FrontierPoint, ...]]:
    """The plans (the polished ones added) and their Perseus frontier (Eq. 4).

    With ``polish = K > 0``, the relaxation's rounded plans at K iteration times
    (dense near the fastest, where the crawl is weakest) and at the deadline join
    the crawl's plans before the frontier is filtered (:func:`polished_plans`), and
    every plan is scored anew; otherwise the crawl's measured scores are used.
    """
    if polish <= 0:
        points = frontier_points(
            instance, trace.choices, verify=verify, times_s=trace.time_s, energies_j=trace.energy_j
        )
        return trace, points
    extra = polished_plans(instance, polish, time_limit, tick)
    trace = dataclasses.replace(
        trace,
        choices=_stacked([trace.choices, *extra]) if extra else trace.choices,
        stats={**trace.stats, "polished_plans": len(extra)},
    )
    return trace, frontier_points(instance, trace.choices, verify=verify)


def _deadline_result(
    instance: PemInstance,
    method: str,
    trace: CrawlTrace,
    points: tuple[FrontierPoint, ...],
    time_limit: float | None,
) -> Result:
    """The frontier's Result: the plan for the deadline (Perseus Eq. 2) and why the crawl stopped.

    The plan is the least energy at the deadline among the points that meet it
    (``INFEASIBLE`` when none does and the crawl completed); the message is the
    crawl's stop reason, with the caller's ``time_limit`` for a time stop.
    """
    pick = best_at(instance, points, instance.deadline_s)
    stopped = trace.stats["stopped"]
    if stopped.startswith("time_limit"):
        stopped = f"time_limit={time_limit}"  # the caller's limit, not one crawl's share
    early = _early(stopped)
    termination = (
        TerminationReason.TIME_LIMIT
        if stopped.startswith("time_limit")
        else TerminationReason.ITERATION_LIMIT
        if early
        else TerminationReason.COMPLETED
    )
    extra = _frontier_stats(instance, trace, points)
    if pick is None:
        res = pem_result(
            instance,
            method,
            None,
            termination=TerminationReason.INFEASIBLE if not early else termination,
            message="no plan on the frontier meets the deadline",
            extra=extra,
        )
    else:
        res = pem_result(
            instance, method, pick.solution.choice, termination=termination, extra=extra
        )
    return dataclasses.replace(res, frontier=points, message=stopped)


def _frontier_stats(
    instance: PemInstance, trace: CrawlTrace, points: tuple[FrontierPoint, ...]
) -> dict[str, Any]:
    """The Result's ``extra``: the crawl statistics and the frontier's counts.

    Adds the number of points that are also undominated in (makespan, energy), the
    number of schedules and the largest gap between a planned and a measured
    iteration time.
    """
    planned = trace.planned_time_s
    has_plan = np.isfinite(planned)
    over = trace.time_s[has_plan] - planned[has_plan]
    return {
        **trace.stats,
        "num_points": len(points),
        "num_energy_pareto_points": len(energy_pareto(points)),
        "num_schedules": len(trace.choices),
        "max_measured_minus_planned_s": float(over.max()) if over.size else 0.0,
        "source": instance.source,
    }


def _early(stopped: str) -> bool:
    return stopped.startswith(("max_steps", "time_limit"))


def _with_fastest_plan(instance: PemInstance, trace: CrawlTrace) -> CrawlTrace:
    """``trace`` and the plan running every computation at its fastest measured option.

    A crawl stopped before T_min still answers every deadline at or above T_min: that
    plan's makespan is T_min (fastest by measured time, never by clock).
    """
    fastest = np.array([[int(np.argmin(t)) for t in instance.option_times]], dtype=np.int64)
    T, E = batch_evaluate(instance, fastest, CompactDag(instance))
    return dataclasses.replace(
        trace,
        choices=_stacked([trace.choices, fastest]),
        planned_time_s=np.append(trace.planned_time_s, np.nan),
        planned_energy_j=np.append(trace.planned_energy_j, np.nan),
        time_s=np.append(trace.time_s, T),
        energy_j=np.append(trace.energy_j, E),
    )


def polished_plans(
    instance: PemInstance, count: int, time_limit: float | None, tick: float
) -> list[np.ndarray]:
    """Rounded relaxation plans (``pipeline/relaxation/rounding.py``) at ``count`` iteration times.

    ``count`` times evenly over the first quarter of the range from the fastest to
    the cheapest makespan (where the crawl loses most), ``count // 4`` over the
    rest, and the instance's deadline.
    Stops early at ``time_limit``; each plan meets its time, so the frontier only
    gains points.
    """
    relax = HullRelaxation(instance)
    arrays = OptionArrays(instance)
    lo, hi = relax.fastest_makespan_s, relax.cheapest_makespan_s
    near = lo + 0.25 * (hi - lo)
    times = [*np.linspace(lo, near, count), *np.linspace(near, hi, max(2, count // 4))[1:]]
    if instance.deadline_s is not None and lo <= instance.deadline_s <= hi:
        times.append(instance.deadline_s)
    plans = []
    for T in times:
        if time_limit is not None and time.perf_counter() - tick > time_limit:
            break
        got = relax.solve(T)
        if got is None:
            continue
        plan = rounded_plan(instance, got[1], T, arrays=arrays)
        if plan is not None:
            plans.append(np.asarray([plan], dtype=np.int64))
    return plans


def _certified(instance: PemInstance, res: Result, time_limit: float | None, tick: float) -> Result:
    """``res`` with relaxation bounds on its frontier points and at the deadline."""
    left = None if time_limit is None else max(0.0, time_limit - (time.perf_counter() - tick))
    curve = bound_curve(instance, time_limit=left)
    points, stats = certify_frontier(curve, res.frontier or ())
    bound = None
    if instance.deadline_s is not None and res.objective is not None:
        bound = curve.energy_bound(instance.deadline_s)
    return dataclasses.replace(
        res,
        frontier=points,
        bound=bound,
        runtime_s=time.perf_counter() - tick,
        extra={**res.extra, **stats},
    )
