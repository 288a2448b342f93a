"""Repair of the hull crawl's frontier at its two ends, where the clock fitting loses.

The hull crawl (:mod:`~energyopt.pipeline.crawl.hullcrawl`) plans on the lower convex
hull of each computation's (time, effective energy) options and fits clocks to
the LP's durations. Near the cheapest plan the LP's durations fall between hull
vertices with Pareto options above the hull in between (slow clocks differ
little in energy); the fitting then mixes neighbouring clocks in topological
order, and a plan that runs whole chains at one option in between (as Perseus'
crawl on the exponential model does, and the authors' ``lowtime``) can be a
little cheaper at the same iteration time: by up to 0.012 % on the GPT-3 A100
profile at 8 x 12, 83-88 % of the way from T_min to the cheapest plan.

The repair is local in time: Perseus Algorithm 1 on the exponential model
(:func:`energyopt.pipeline.crawl.grid.crawl`), from the cheapest plan down over only
the slowest ``share`` of the hull crawl's range of makespans, a bounded number
of ``tau`` steps. Its plans only join the hull crawl's, so the frontier never
gets worse; the union is filtered as every crawl's is.

Near the fastest plan the fitting loses again, where many computations are
critical and the LP's durations fall between fast hull vertices: on GPT-3 at
8 x 96 by up to 0.156 % against the exponential-model crawl, 2 to 13 % of the
way from T_min. The fast-end repair (:func:`fast_end_trace`) runs the same
crawl from the hull crawl's best plan ``FAST_SHARE`` of the way up from T_min
down to T_min. A crawl over the whole range (``cost_model="both"``) costs the
range's full number of steps; the two ends together cost ``SLOW_SHARE +
FAST_SHARE`` of it.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.crawl.grid import crawl as grid_crawl
from energyopt.pipeline.crawl.trace import CrawlTrace
from energyopt.pipeline.instance import PemInstance

#: Share of the hull crawl's range of makespans, from its slowest plan, that the repair covers.
SLOW_SHARE = 0.2
#: Share of the range, from T_min up, that the fast-end repair covers.
FAST_SHARE = 0.2


def _start_rows(trace: CrawlTrace) -> np.ndarray:
    """The rows of ``trace`` a repair reads: its ``repair_rows`` (all when ``None``).

    The hull crawl names its ``fit_rows`` plans and their gap plans, so that the
    repairs run as they did before it kept a second fitting's plans too.
    """
    if trace.repair_rows is None:
        return np.arange(len(trace.time_s))
    return trace.repair_rows


def repair_steps(trace: CrawlTrace, tau_s: float, share: float = SLOW_SHARE) -> int:
    """Steps of ``tau_s`` that cover the slowest ``share`` of ``trace``'s makespans (0: none).

    Each step of the exponential-model crawl shortens the plan by one ``tau_s``,
    so the count covers ``share`` of the range between the fastest and the
    slowest measured makespan of the crawl's plans.
    """
    T = np.asarray(trace.time_s, dtype=float)[_start_rows(trace)]
    T = T[np.isfinite(T)]
    if len(T) < 2 or share <= 0:
        return 0
    return math.ceil(share * float(T.max() - T.min()) / tau_s)


def slow_end_trace(
    instance: PemInstance,
    trace: CrawlTrace,
    *,
    tau_s: float = 1e-3,
    share: float = SLOW_SHARE,
    time_limit: float | None = None,
    progress: bool | None = None,
) -> CrawlTrace | None:
    """Plans of the exponential-model crawl over the slow end of ``trace`` (module doc).

    Parameters
    ----------
    instance
        The PEM instance the hull crawl ran on.
    trace
        The hull crawl's trace; its measured makespans set the range.
    tau_s
        The grid crawl's unit time (s), the hull crawl's sampling step.
    share
        Share of the range, from the slowest plan, to cover (0 turns the repair off).
    time_limit
        Seconds the repair may take; it stops early (keeping its plans so far).
    progress
        The grid crawl's progress bar.

    Returns
    -------
    CrawlTrace or None
        The repair's measured plans (``None`` when there is no range to cover, or the
        exponential model cannot be fitted to the instance's tables), with
        ``stats["stopped"]`` cleared: reaching its step budget is the repair's plan,
        not an early stop of the method; ``stats["repair"]`` says how far it went.
    """
    steps = repair_steps(trace, tau_s, share)
    if steps <= 0 or (time_limit is not None and time_limit <= 0):
        return None
    info = {"share": share, "max_steps": steps}
    return _exponential_crawl(instance, tau_s, time_limit, progress, info, max_steps=steps)


def fast_end_trace(
    instance: PemInstance,
    trace: CrawlTrace,
    *,
    tau_s: float = 1e-3,
    share: float = FAST_SHARE,
    time_limit: float | None = None,
    progress: bool | None = None,
) -> CrawlTrace | None:
    """Plans of the exponential-model crawl from ``trace``'s plan ``share`` up from T_min.

    The start is the plan of ``trace`` with the least energy at the makespan
    ``T_min + share * (T_max - T_min)`` (blocking up to it) among those not
    slower; the crawl runs from it to T_min (module doc). Parameters and return
    value as :func:`slow_end_trace`.
    """
    rows = _start_rows(trace)
    T = np.asarray(trace.time_s, dtype=float)[rows]
    E = np.asarray(trace.energy_j, dtype=float)[rows]
    ok = np.isfinite(T) & np.isfinite(E)
    if ok.sum() < 2 or share <= 0 or (time_limit is not None and time_limit <= 0):
        return None
    target = T[ok].min() + share * float(T[ok].max() - T[ok].min())
    fits = np.flatnonzero(ok & (T <= target))
    blocking = instance.p_blocking_w * instance.num_stages
    best = fits[np.argmin(E[fits] + blocking * (target - T[fits]))]
    start = tuple(int(k) for k in trace.choices[rows[best]])
    info = {"share": share, "start_time_s": float(T[best])}
    return _exponential_crawl(instance, tau_s, time_limit, progress, info, start=start)


def _exponential_crawl(
    instance: PemInstance,
    tau_s: float,
    time_limit: float | None,
    progress: bool | None,
    info: dict,
    **bounds: object,
) -> CrawlTrace | None:
    """The exponential-model grid crawl within ``bounds`` (``max_steps`` or ``start``), as
    a repair's trace: ``stats["repair"]`` is ``info`` with how far it went, and
    ``stats["stopped"]`` is cleared. ``None`` where the model cannot be fitted."""
    try:
        got = grid_crawl(
            instance,
            tau_s=tau_s,
            cost_model="exponential",
            time_limit=time_limit,
            progress=progress,
            **bounds,
        )
    except InstanceError:
        # The exponential model cannot be fitted to some table (e.g. a few options in
        # no exponential shape): the hull crawl's frontier stands alone, as without repair.
        return None
    repaired = {
        **info,
        "steps": got.stats["steps"],
        "plans": len(got.choices),
        "stopped": got.stats["stopped"],
    }
    return dataclasses.replace(got, stats={**got.stats, "stopped": "", "repair": repaired})
