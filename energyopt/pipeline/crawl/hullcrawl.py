"""The crawl on the exact convex hull, from event to event (energyopt's default crawl).

Perseus Algorithm 1 shortens the iteration one unit ``tau`` at a time on a grid
of ``tau``. With the convex-hull cost model (:mod:`~energyopt.pipeline.crawl.costmodels`)
that is the Phillips-Dessouky parametric solution of the hull's linear program
(the relaxation of :mod:`~energyopt.pipeline.relaxation.hull`), sampled on the grid,
with every option time rounded to the grid first. The rounding is what costs:
a plan on the grid runs slower than planned (or, rounded up, faster and dearer),
by a few milliseconds over a long critical path, which is up to 0.6 % of energy
next to the fastest iteration time where the frontier is steep.

Here the same Phillips-Dessouky steps run on the hull at (nearly) exact times,
integers of a tiny ``quantum`` (default 0.1 us), and each step moves as far as
its cut stays optimal (:mod:`~energyopt.pipeline.crawl.hullpath` lists the steps).
Between two events the durations move linearly, so the hull LP's optimal
durations are known at *every* iteration time. The crawl turns them into clocks
at every event and every ``tau`` (:mod:`~energyopt.pipeline.crawl.clockfit`), twice:
each computation runs the slowest Pareto option that fits in its window, the slack
going to the earliest computations first, or (every duration rounded down first) to
the latest; so every plan meets its sample time with *measured* times.

The event loop is :mod:`~energyopt.pipeline.crawl.hullpath`, the clock fitting
:mod:`~energyopt.pipeline.crawl.clockfit`; this module samples the path, fits the
clocks and adds the plans between neighbouring frontier points.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.crawl.clockfit import ClockFitter, transpose_into
from energyopt.pipeline.crawl.hullpath import (
    QUANTUM_S,
    HullPath,
    _Hulls,
    hull_path,
    sample_times,
)
from energyopt.pipeline.crawl.trace import CrawlTrace
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.paretoset import BATCH_ROWS, batch_evaluate

#: The dtype of the default crawl's plans (``CrawlTrace.choices``): option indices.
PLAN_DTYPE = np.int16
#: Plans fitted per sample: :meth:`ClockFitter.fit_rows` and :meth:`ClockFitter.fit_down_rows`.
FITS = 2


def fastest_makespan(instance: PemInstance, dag: CompactDag) -> float:
    """T_min: the makespan with every computation at its fastest measured option."""
    fast = [float(np.min(t)) for t in instance.option_times]
    _, span = dag.earliest_start(fast)
    return float(span)


@dataclasses.dataclass
class _Samples:
    """The crawl's plans with their planned and measured scores (:func:`_crawl_samples`)."""

    plans: np.ndarray
    planned_s: np.ndarray
    lp_cost: np.ndarray
    time_s: np.ndarray
    energy_j: np.ndarray
    fitter: ClockFitter
    first_fit: np.ndarray
    """Per plan: whether :meth:`ClockFitter.fit_rows` made it (else ``fit_down_rows``)."""


def _crawl_samples(
    instance: PemInstance,
    path: HullPath,
    tau_s: float,
    *,
    chunk: int = 1024,
    dag: CompactDag | None = None,
    deadline: float | None = None,
    out: np.ndarray | None = None,
) -> _Samples:
    """Clocks at every event and every ``tau_s`` along ``path``, with their scores.

    Each sample's LP durations become two plans (:data:`FITS`): per chunk of samples
    the plans of :meth:`ClockFitter.fit_rows`, then those of
    :meth:`ClockFitter.fit_down_rows`, so a planned makespan appears twice.
    The plans (rows of option indices), their planned makespans (s), the hull LP's
    effective energy at them (J) and their measured makespans and energies. Stops
    adding chunks of plans after ``deadline`` (a ``time.perf_counter`` value).

    ``out``, when given, is where the plans go (integers, a row per sample at least);
    the plans are then its first rows. The energies are :func:`batch_evaluate`'s
    for these plans stored by computation, as the crawl stored them
    (:meth:`ClockFitter.sums_in_order`, :func:`_last_alone`).
    """
    dag = dag if dag is not None else CompactDag(instance)
    k, T_q = sample_times(path, tau_s)
    fitter = ClockFitter(instance, dag)
    table_rows = _TableRows(path.hulls, fitter)
    t_min = fastest_makespan(instance, dag)
    last = len(path.L) - 1 if path.stats["stopped"].startswith("no finite") else -1
    shape = (FITS * len(k), instance.num_computations)
    plans = out if out is not None else np.empty(shape, np.int64)
    planned, lp_cost, T_meas, E_meas, first, done = [], [], [], [], [], 0
    d_k, k_at, starts = path.d0, 0, None  # d_k: durations at the start of event k_at
    for lo in range(0, len(k), chunk):
        if deadline is not None and done and time.perf_counter() > deadline:
            break
        kk, tq = k[lo : lo + chunk], T_q[lo : lo + chunk]
        k0, k1 = int(kk[0]), int(kk[-1]) + 1
        d_k, k_at = _durations_at(path, k0, k_at, d_k, starts), k0
        starts = _event_starts(path, k0, k1, d_k)  # events k0 .. k1 - 1
        ds, cost, guess = _lp_rows(path, starts, kk, tq, table_rows)
        cap = np.where(kk == last, t_min, np.inf)
        fits = ((fitter.fit_rows, guess, True), (fitter.fit_down_rows, guess.copy(), False))
        for fit, g, is_first in fits:  # each fit overwrites its guess
            pos, t = fit(ds, cap, guess=g)
            rows = plans[done : done + len(kk)]
            T, E = _scored_rows(instance, fitter, pos, t, rows)
            planned.append(tq)
            first.append(np.full(len(kk), is_first))
            lp_cost.append(cost)
            T_meas.append(T)
            E_meas.append(E)
            done += len(kk)
    got = _Samples(
        plans[:done],
        _joined(planned) * path.quantum_s,
        *map(_joined, (lp_cost, T_meas, E_meas)),
        fitter,
        np.concatenate(first) if first else np.zeros(0, dtype=bool),
    )
    _last_alone(instance, dag, got)
    return got


def _scored_rows(
    instance: PemInstance, fitter: ClockFitter, pos: np.ndarray, t: np.ndarray, out: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Fitted positions as plans written into ``out``, with measured makespans and energies."""
    idx = fitter.option_rows(pos, out)
    T = fitter.makespans_rows(t)
    e_sum, t_sum = fitter.sums_in_order(pos, t, idx)
    return T, e_sum + instance.p_blocking_w * (instance.num_stages * T - t_sum)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    return np.concatenate(parts) if parts else np.zeros(0)


def _last_alone(instance: PemInstance, dag: CompactDag, got: _Samples) -> None:
    """Rescore the last plan when :func:`batch_evaluate` gives it a chunk of its own.

    A single plan is one contiguous row however the plans are stored, so numpy
    sums it pairwise, not term after term (:func:`batch_evaluate`).
    """
    if len(got.plans) % BATCH_ROWS == 1:
        T, E = batch_evaluate(instance, got.plans[-1:], dag)
        got.time_s[-1], got.energy_j[-1] = T[0], E[0]


def _durations_at(
    path: HullPath, k0: int, k_at: int, d_k: np.ndarray, starts: np.ndarray | None
) -> np.ndarray:
    """Durations (quanta) at the start of event ``k0 >= k_at``.

    ``d_k`` are those at event ``k_at``; ``starts``, when given, those at the
    events from ``k_at`` on (the last chunk's :func:`_event_starts`), so that only
    the events past them are added up (integers: exact in any order).
    """
    if k0 == k_at:
        return d_k
    if starts is not None:
        events = starts.shape[1]
        if k0 - k_at < events:
            return starts[:, k0 - k_at]
        d_k, k_at = starts[:, -1], k_at + events - 1
    return d_k + path.delta[k_at:k0] @ path.rate[k_at:k0].astype(np.int64)


def _event_starts(path: HullPath, k0: int, k1: int, d_start: np.ndarray) -> np.ndarray:
    """Durations (quanta) at the starts of events ``k0 .. k1 - 1`` from those at ``k0``.

    Computations x events: each computation's running sum is one contiguous row
    (a running sum down the columns of events x computations is several times
    slower). Integers: exact in any order.
    """
    out = np.empty((len(d_start), k1 - k0), dtype=np.int64)
    out[:, 0] = d_start
    transpose_into(path.rate[k0 : k1 - 1], out[:, 1:])
    out[:, 1:] *= path.delta[k0 : k1 - 1]
    return np.cumsum(out, axis=1, out=out)


class _TableRows:
    """The computations grouped by table (each group's rows ascending), for the LP's side.

    The hull lookups of a table then work on one block of rows; ``to_levels``
    takes such arrays to the fitter's level order. ``guess[kt][j]`` is the flat
    position (:mod:`~energyopt.pipeline.crawl.clockfit`) of hull vertex j's option (the
    slowest option within its time), a first guess of the option the fitter picks
    for a duration at that vertex.
    """

    def __init__(self, hulls: _Hulls, fitter: ClockFitter) -> None:
        self.order = np.concatenate([rows for _, rows in hulls.groups])
        ends = np.cumsum([len(rows) for _, rows in hulls.groups]).tolist()
        self.blocks = [
            (kt, slice(lo, hi)) for (kt, _), lo, hi in zip(hulls.groups, [0, *ends[:-1]], ends)
        ]
        where = np.empty(len(self.order), dtype=np.int64)
        where[self.order] = np.arange(len(self.order))
        self.to_levels = where[fitter.order]
        self.times, self.width = fitter.times, fitter.width
        self.where = where  # each computation's row in ``order``
        self.level_of = fitter.rank  # each computation's row in level order
        self.guess = [
            np.maximum(fitter.times[kt].searchsorted(hulls.exact[kt], side="right") - 1, 0)
            + kt * fitter.width
            for kt in range(len(hulls.q))
        ]


def _lp_rows(
    path: HullPath, starts: np.ndarray, kk: np.ndarray, tq: np.ndarray, rows: _TableRows
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The LP's durations at sample makespans ``tq`` of events ``kk`` in seconds, their
    hull effective energy summed per plan, and a guess of each one's flat position.

    Computations x samples; seconds and guesses in the fitter's level order.
    ``starts`` holds the durations (quanta) at the starts of events ``kk[0]`` on
    (:func:`_event_starts`).
    A duration at a hull vertex is that vertex's exact time rather than its
    rounded-up quanta; the energy sums each table's computations in the instance's
    order, table after table (the plans' LP cost). Within an event only the few
    computations with a nonzero rate move, so the hull is looked up at the events'
    starts (fewer than the samples, :func:`_at_event_starts`), each sample takes its
    event's values, and the moving durations are looked up on their own
    (:func:`_moving`).
    """
    rel = kk - int(kk[0])
    ds, vc, guess = _at_event_starts(path, starts, rows)
    # Samples x its event's values (each event's column repeated for its samples, in
    # order); ds and guess to level order first (fewer columns).
    per_event = np.bincount(rel, minlength=starts.shape[1])
    ds = np.repeat(np.take(ds, rows.to_levels, axis=0), per_event, axis=1)
    guess = np.repeat(np.take(guess, rows.to_levels, axis=0), per_event, axis=1)
    vc = np.repeat(vc, per_event, axis=1)
    s, c, dq = _moving(path, starts, int(kk[0]), rel, path.L[kk] - tq)
    table = path.hulls.table_of[c]
    for kt in np.unique(table).tolist():
        m = table == kt
        ds_m, vc_m, guess_m = _at_vertices(path, rows, kt, dq[m])
        ds[rows.level_of[c[m]], s[m]] = ds_m
        guess[rows.level_of[c[m]], s[m]] = guess_m
        vc[rows.where[c[m]], s[m]] = vc_m
    cost = np.zeros(len(kk))
    for _, block in rows.blocks:
        cost += vc[block].sum(axis=0)
    return ds, cost, guess


def _at_event_starts(
    path: HullPath, starts: np.ndarray, rows: _TableRows
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`_at_vertices` of the durations ``starts`` (computations x events), in
    table order (rows ``rows.order``).

    A computation's duration changes at few events, so each run of equal durations
    along a row is looked up once, at its first event (the runs in row-major order:
    each table's runs are one slice of them), and its values spread over the run.
    """
    st = np.take(starts, rows.order, axis=0)
    n, E = st.shape
    new = np.empty(st.shape, dtype=bool)
    new[:, 0] = True
    np.not_equal(st[:, 1:], st[:, :-1], out=new[:, 1:])
    flat = new.ravel()
    heads = np.flatnonzero(flat)
    run = np.cumsum(flat).reshape(n, E)
    run -= 1
    vals = st.ravel()[heads]
    ds, vc = np.empty(len(heads)), np.empty(len(heads))
    guess = np.empty(len(heads), dtype=np.int64)
    cuts = np.searchsorted(heads, [block.start * E for _, block in rows.blocks] + [n * E])
    for (kt, _), lo, hi in zip(rows.blocks, cuts[:-1].tolist(), cuts[1:].tolist()):
        ds[lo:hi], vc[lo:hi], guess[lo:hi] = _at_vertices(path, rows, kt, vals[lo:hi])
    return np.take(ds, run), np.take(vc, run), np.take(guess, run)


def _at_vertices(
    path: HullPath, rows: _TableRows, kt: int, vals: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Durations ``vals`` (quanta) of table ``kt``: seconds, hull energy and guess each.

    Nearly every duration sits at a vertex, where the hull's value is the vertex's
    own (``np.interp`` at ``x = xp[j]`` gives ``fp[j]`` exactly), so only the
    others are interpolated. The guess is the slowest option within the duration:
    the vertex's own option, or for a duration between vertices, searched.
    """
    h = path.hulls
    q = h.q[kt]
    at = np.searchsorted(q, vals)
    np.minimum(at, len(q) - 1, out=at)
    off = q[at] != vals
    ds = h.exact[kt][at]
    ds[off] = between = vals[off] * path.quantum_s
    vc = h.vc[kt][at]
    vc[off] = np.interp(vals[off], q, h.vc[kt])
    guess = rows.guess[kt][at]
    fit = rows.times[kt].searchsorted(between, side="right") - 1
    guess[off] = np.maximum(fit, 0) + kt * rows.width
    return ds, vc, guess


def _moving(
    path: HullPath, starts: np.ndarray, k0: int, rel: np.ndarray, x: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The durations that differ from their event's start: samples, computations, quanta.

    ``starts``: the durations at the starts of events ``k0`` on; ``rel``: each
    sample's event counted from ``k0`` (nondecreasing); ``x``: how far (quanta)
    each sample lies below its event's start. A duration moves where its
    computation's rate in the event is nonzero and ``x > 0``.
    """
    rate = path.rate[k0 : k0 + starts.shape[1]]
    e, c = np.nonzero(rate)
    first = np.searchsorted(rel, e, side="left")
    count = np.searchsorted(rel, e, side="right") - first
    # Each (event, computation) pair once per sample of its event.
    s = np.arange(int(count.sum())) + np.repeat(first - (np.cumsum(count) - count), count)
    e, c = np.repeat(e, count), np.repeat(c, count)
    keep = x[s] != 0
    s, e, c = s[keep], e[keep], c[keep]
    return s, c, starts[c, e] + rate[e, c] * x[s]


def _early(stopped: str) -> bool:
    return stopped.startswith(("max_steps", "time_limit"))


def exact_crawl(
    instance: PemInstance,
    *,
    tau_s: float = 1e-3,
    quantum_s: float = QUANTUM_S,
    time_limit: float | None = None,
    max_steps: int | None = None,
    progress: bool | None = None,
) -> CrawlTrace:
    """The crawl on the exact hull (module doc): plans at every event and every ``tau_s``.

    ``max_steps`` bounds the number of events. Within ``time_limit`` seconds the
    crawl stops early (events until 50 % of it), and clocks are fitted for as many
    samples as time allows (until 65 %, at least one chunk); the gap plans are added
    only before 75 %. ``stats["stopped"]`` says when the crawl stopped early. The
    trace's plans are 16-bit option indices (:data:`PLAN_DTYPE`).
    """
    tick = time.perf_counter()
    if not (isinstance(tau_s, (int, float)) and math.isfinite(tau_s) and tau_s > 0):
        raise InstanceError(f"tau_s = {tau_s!r}: must be a positive number of seconds")
    dag = CompactDag(instance)
    # With a time limit, the events get half of it and the clocks until 65 %: the rest is
    # for the gap plans and for scoring, so a stopped crawl still returns its points.
    path = hull_path(
        instance,
        quantum_s=quantum_s,
        time_limit=None if time_limit is None else 0.5 * time_limit,
        tick=tick,
        max_events=max_steps,
        progress=progress,
    )
    deadline = None if time_limit is None else tick + 0.65 * time_limit
    # One array for the crawl's plans and the gap plans after them (at most one per
    # crawl plan): no copies of the plans to stack them. 16-bit option indices: a
    # quarter of the fresh memory (ClockFitter checks that every index fits).
    samples = FITS * len(sample_times(path, float(tau_s))[0])
    # The samples, then at most one gap plan per sample twice (:func:`_gap_plans_of_both`);
    # rows never written cost no memory.
    store = np.empty((3 * samples, instance.num_computations), dtype=PLAN_DTYPE)
    got = _crawl_samples(instance, path, float(tau_s), dag=dag, deadline=deadline, out=store)
    plans, planned_T, lp_cost = got.plans, got.planned_s, got.lp_cost
    stats = {**path.stats, "tau_s": float(tau_s), "cost_model": "hull", "crawl": "exact"}
    if stats["stopped"].startswith("time_limit"):
        stats["stopped"] = f"time_limit={time_limit}"  # the caller's limit, not the events'
    stats["steps"] = stats["events"]
    stats["samples"] = len(plans)
    if len(plans) < samples and not stats["stopped"]:
        stats["stopped"] = f"time_limit={time_limit}"
    T_meas, E_meas = got.time_s, got.energy_j
    planned_E = lp_cost + instance.p_blocking_w * instance.num_stages * planned_T
    late = time_limit is not None and time.perf_counter() - tick > 0.75 * time_limit
    first_rows = np.flatnonzero(got.first_fit)
    if not _early(stats["stopped"]) and not late:
        n_crawl = len(plans)
        target, spans, n_first = _gap_plans_of_both(instance, got, store, n_crawl)
        first_rows = np.concatenate([first_rows, n_crawl + np.arange(n_first)])
        plans = store[: n_crawl + len(target)]
        extra = plans[n_crawl:]
        T_x, E_x = batch_evaluate(instance, extra, dag, makespans_s=spans)
        planned_T = np.concatenate([planned_T, target])
        planned_E = np.concatenate([planned_E, np.full(len(extra), np.nan)])
        T_meas, E_meas = np.concatenate([T_meas, T_x]), np.concatenate([E_meas, E_x])
        stats["gap_plans"] = len(extra)
    stats["runtime_s"] = time.perf_counter() - tick
    return CrawlTrace(plans, planned_T, planned_E, T_meas, E_meas, stats, first_rows)


def _gap_plans_of_both(
    instance: PemInstance, got: _Samples, store: np.ndarray, n_crawl: int
) -> tuple[np.ndarray, np.ndarray, int]:
    """Gap plans (:func:`gap_plans`) of the frontier of all plans and of the ``fit_rows`` plans'.

    Written into ``store`` after the ``n_crawl`` samples, the ``fit_rows`` frontier's
    first; returns the targets, the new makespans and how many are the ``fit_rows``
    frontier's. That set is what the crawl relaxed before it kept the
    ``fit_down_rows`` plans too: the new points change which point is whose
    neighbour, so without it a point relaxed before could go missing (on synthetic
    4 x 8 one was 0.17 % cheaper than the frontier without it). A pair of
    neighbours that both frontiers share is relaxed once.
    """
    first = np.flatnonzero(got.first_fit)
    src1, dst1 = _neighbours(instance, got.time_s[first], got.energy_j[first])
    src1, dst1 = first[src1], first[dst1]
    src, dst = _neighbours(instance, got.time_s, got.energy_j)
    shared = np.isin(src1 * len(got.plans) + dst1, src * len(got.plans) + dst)
    src1, dst1 = src1[~shared], dst1[~shared]
    target = got.time_s[np.concatenate([dst1, dst])] * (1 - 1e-12)
    rows = np.concatenate([src1, src])
    spans = _relaxed_rows(got.fitter, got.plans, rows, target, store[n_crawl:])
    return target, spans, len(src1)


def _neighbours(
    instance: PemInstance, T_s: np.ndarray, E_j: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Each frontier point (Perseus Eq. 4) and the next slower one, as two index arrays."""
    from energyopt.pipeline.paretoset import pareto_indices

    keep = pareto_indices(T_s, E_j - instance.p_blocking_w * instance.num_stages * T_s)
    keep = np.asarray(keep, dtype=np.int64)
    return keep[:-1], keep[1:]


def _relaxed_rows(
    fitter: ClockFitter,
    plans: np.ndarray,
    rows: np.ndarray,
    target: np.ndarray,
    out: np.ndarray,
    chunk: int = 1024,
) -> np.ndarray:
    """Plans ``rows`` relaxed to ``target`` (:meth:`ClockFitter.relax_options`) into ``out``;
    returns their makespans."""
    spans = np.empty(len(rows))
    for lo in range(0, len(rows), chunk):
        hi = min(lo + chunk, len(rows))
        spans[lo:hi] = fitter.relax_options(plans[rows[lo:hi]], target[lo:hi], out[lo:hi])
    return spans


def gap_plans(
    instance: PemInstance,
    fitter: ClockFitter,
    plans: np.ndarray,
    T_s: np.ndarray,
    E_j: np.ndarray,
    chunk: int = 1024,
) -> tuple[list[np.ndarray], np.ndarray]:
    """Plans between neighbouring frontier points: each point relaxed to the next one's time.

    Between the makespans ``m_k < m_(k+1)`` of two neighbouring frontier points the
    frontier's energy is point k's plus blocking; point k's plan, given the slack
    up to just below ``m_(k+1)`` (:meth:`ClockFitter.relax_options`), is never worse there
    and often better. Returns the new plans (plans x computations, in one chunk)
    and the times they were relaxed to.
    """
    out = np.empty(plans.shape, dtype=np.int64)
    target, _ = _relaxed_gaps(instance, fitter, plans, T_s, E_j, out, chunk)
    return ([out[: len(target)]] if len(target) else []), target


def _relaxed_gaps(
    instance: PemInstance,
    fitter: ClockFitter,
    plans: np.ndarray,
    T_s: np.ndarray,
    E_j: np.ndarray,
    out: np.ndarray,
    chunk: int = 1024,
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gap_plans` into the first rows of ``out``: the targets and the new makespans."""
    src, dst = _neighbours(instance, T_s, E_j)
    target = T_s[dst] * (1 - 1e-12)
    return target, _relaxed_rows(fitter, plans, src, target, out, chunk)
