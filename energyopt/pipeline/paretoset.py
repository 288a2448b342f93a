"""Frontier bookkeeping shared by the PEM heuristics: dominance filter, deadline pick.

A PEM plan x has a makespan T(x) and an effective energy C(x) = sum of
``e - P_b t`` (Perseus Eq. 4); its energy at an iteration time T >= T(x) is
``C(x) + P_b * S * T`` (Eq. 3). The *Perseus frontier* is the set of plans not
dominated in (T(x), C(x)): for any iteration time T' (a deadline, or a straggler's
time) the best plan among them is the one of least C with T(x) <= T'. Points
dominated in (T(x), energy at T(x)) are a subset of those; see
:func:`energy_pareto`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

import numpy as np

from energyopt.core.result import FrontierPoint
from energyopt.pipeline.evaluator import PemSolution, evaluate_many
from energyopt.pipeline.instance import PemInstance


def pareto_indices(times: Sequence[float], energies: Sequence[float]) -> np.ndarray:
    """Indices of the points not dominated in (time, energy), fastest first.

    A point is kept when every faster-or-equal point has strictly more energy
    (relative tolerance 1e-12); of exact duplicates the first is kept.
    """
    t = np.asarray(times, dtype=float)
    e = np.asarray(energies, dtype=float)
    order = np.lexsort((np.arange(len(t)), e, t))
    es = e[order]
    # A kept point is below every earlier one (a skipped point is within the
    # tolerance of the best then, which only falls), so only the strict record
    # lows are candidates; NaN energies are never kept, nor counted as lows.
    earlier = np.fmin.accumulate(np.concatenate(([np.inf], es)))[:-1]
    cand = np.flatnonzero(es < earlier)
    return order[cand[_kept_lows(es[cand])]].astype(np.int64)


def _kept_lows(lows: np.ndarray) -> np.ndarray:
    """Positions kept among decreasing record lows, the tolerance applied in turn.

    After a kept low, the next one is kept while it beats the last beyond the
    tolerance; at the first that does not, the next kept is the first low beating
    the best beyond it (the lows fall: a binary search). Python steps: one per
    near tie, not one per point.
    """
    scale = np.where(np.isfinite(lows), np.abs(lows), 1.0)
    below = lows - 1e-12 * np.maximum(1.0, scale)  # to beat a best, a point must be under this
    ties = np.flatnonzero(lows[1:] >= below[:-1])  # the low after each of these is not kept
    rising = -lows
    keep, start = [], 0
    while start < len(lows):
        j = np.searchsorted(ties, start)
        stop = int(ties[j]) if j < len(ties) else len(lows) - 1
        keep.append(np.arange(start, stop + 1))
        start = int(np.searchsorted(rising, -below[stop], side="right"))
    return np.concatenate(keep) if keep else np.zeros(0, dtype=np.int64)


def frontier_points(
    instance: PemInstance,
    choices: np.ndarray,
    *,
    verify: bool = True,
    times_s: np.ndarray | None = None,
    energies_j: np.ndarray | None = None,
) -> tuple[FrontierPoint, ...]:
    """Perseus frontier of the plans in ``choices`` (rows of option indices).

    Every kept point is scored by :func:`energyopt.pipeline.evaluator.evaluate_many`
    (makespan, and energy with blocking up to the makespan) when ``verify``;
    otherwise by the same formulas on arrays (see ``dag.CompactDag.makespans``),
    or taken from ``times_s`` and ``energies_j`` when given (same formulas, e.g.
    from :class:`~energyopt.pipeline.crawl.trace.CrawlTrace`).
    """
    from energyopt.pipeline.dag import CompactDag

    choices = np.asarray(choices)
    if choices.dtype.kind not in "iu":  # any integer width is read as it is, not copied
        choices = choices.astype(np.int64)
    if choices.ndim != 2 or choices.shape[1] != instance.num_computations:
        raise ValueError(
            f"choices: shape {choices.shape}, expected (points, {instance.num_computations})"
        )
    if times_s is None or energies_j is None:
        T, E = batch_evaluate(instance, choices, CompactDag(instance))
    else:
        T, E = np.asarray(times_s, dtype=float), np.asarray(energies_j, dtype=float)
    C = E - instance.p_blocking_w * instance.num_stages * T
    keep = pareto_indices(T, C)
    if verify:
        T, E = _verified(instance, choices, keep, T, E)
    return tuple(
        FrontierPoint(t, e, PemSolution(plan))
        for t, e, plan in zip(T[keep].tolist(), E[keep].tolist(), _plan_tuples(choices, keep))
    )


def _plan_tuples(choices: np.ndarray, rows: np.ndarray) -> Iterator[tuple[int, ...]]:
    """The plans ``choices[rows]`` as tuples of ints, unpacked straight from their bytes.

    One pass over the rows' buffer, with no list per plan: the same tuples as
    ``tuple(choices[k].tolist())``.
    """
    plans = np.ascontiguousarray(np.take(choices, rows, axis=0))
    plans = plans.astype(plans.dtype.newbyteorder("="), copy=False)  # struct's "=": native
    code = _STRUCT_CODES[plans.dtype.itemsize]  # struct's "=" sizes: b 1, h 2, i 4, q 8 bytes
    code = code.upper() if plans.dtype.kind == "u" else code
    return struct.Struct(f"={plans.shape[1]}{code}").iter_unpack(plans.data)


_STRUCT_CODES = {1: "b", 2: "h", 4: "i", 8: "q"}


def _verified(
    instance: PemInstance, choices: np.ndarray, keep: np.ndarray, T: np.ndarray, E: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The evaluator's own batch scores of the plans ``keep`` (the others' are left unset).

    The evaluator's batch scoring is independent of the crawl's ``CompactDag``. It
    gets the plans in chunks, so the copies of the kept plans stay small rather
    than one large fresh array (same scores: each plan is scored on its own).
    """
    T, E = np.empty_like(T), np.empty_like(E)
    for lo in range(0, len(keep), _EVALUATOR_CHUNK):
        rows = keep[lo : lo + _EVALUATOR_CHUNK]
        ev = evaluate_many(instance, np.take(choices, rows, axis=0), None)
        T[rows], E[rows] = ev.iteration_time_s, ev.energy_j
    return T, E


#: Plans per call of the evaluator in :func:`frontier_points` (it scores them in chunks).
_EVALUATOR_CHUNK = 4096


#: Plans per chunk of :func:`batch_evaluate` (keeps the matrices small).
BATCH_ROWS = 512


def batch_evaluate(
    instance: PemInstance, choices: np.ndarray, dag, makespans_s: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Makespans and energies (blocking up to the makespan) of many plans at once.

    ``makespans_s``: the plans' makespans when already known (the same recurrence).
    The energies sum each plan's options as numpy sums its row: pairwise where the
    rows are contiguous (C order), term after term where ``choices`` is stored by
    computation (a transposed array): the last bits of the sum follow that layout.
    """
    names = sorted(instance.tables)
    which = {nm: k for k, nm in enumerate(names)}
    tab = np.asarray([which[c.table] for c in instance.computations])
    width = max(len(t) for t in instance.tables.values())
    t_opt = np.zeros((len(names), width))
    e_opt = np.zeros((len(names), width))
    for k, nm in enumerate(names):
        tb = instance.tables[nm]
        t_opt[k, : len(tb)] = tb.time_s
        e_opt[k, : len(tb)] = tb.energy_j
    S, pb = instance.num_stages, instance.p_blocking_w
    T = np.zeros(len(choices))
    E = np.zeros(len(choices))
    rows = choices.flags.c_contiguous
    base = tab * width
    for lo in range(0, len(choices), BATCH_ROWS):  # chunks keep the matrices small
        hi = lo + BATCH_ROWS
        ch = choices[lo:hi]
        if rows:  # one flat gather; the result is C-ordered as the 2-D gather's would be
            idx = ch + base
            times, energies = np.take(t_opt, idx), np.take(e_opt, idx)
        else:
            times, energies = t_opt[tab[None, :], ch], e_opt[tab[None, :], ch]
        T[lo:hi] = dag.makespans(times) if makespans_s is None else makespans_s[lo:hi]
        E[lo:hi] = energies.sum(axis=1) + pb * (S * T[lo:hi] - times.sum(axis=1))
    return T, E


def energy_pareto(points: Sequence[FrontierPoint]) -> tuple[FrontierPoint, ...]:
    """The points not dominated in (makespan, energy at the makespan)."""
    idx = pareto_indices([p.makespan_s for p in points], [p.objective for p in points])
    return tuple(points[int(k)] for k in idx)


def best_at(
    instance: PemInstance, points: Sequence[FrontierPoint], iteration_time_s: float | None
) -> FrontierPoint | None:
    """The point of least energy at ``iteration_time_s`` among those that meet it.

    ``None`` as the time means "no deadline": the point of least energy at its own
    makespan. Returns ``None`` when no point is fast enough.
    """
    if not points:
        return None
    pb_s = instance.p_blocking_w * instance.num_stages
    if iteration_time_s is None:
        return min(points, key=lambda p: p.objective)
    ok = [p for p in points if p.makespan_s <= iteration_time_s * (1 + 1e-9)]
    if not ok:
        return None
    # Energy at T' = C + P_b S T': least C wins.
    return min(ok, key=lambda p: p.objective - pb_s * p.makespan_s)


def energy_at(
    instance: PemInstance, points: Sequence[FrontierPoint], iteration_time_s: float
) -> float:
    """Least energy the frontier ``points`` give at ``iteration_time_s``: the one definition.

    A point (makespan m, energy E at m) also serves any iteration time T >= m, at
    ``E + P_b S (T - m)`` (its GPUs wait the extra time at the blocking power,
    Perseus Eq. 3); the best such point is :func:`best_at`'s. Returns ``inf``
    when no point is fast enough.
    """
    best = best_at(instance, points, iteration_time_s)
    if best is None:
        return float("inf")
    pb_s = instance.p_blocking_w * instance.num_stages
    return best.objective + pb_s * (iteration_time_s - best.makespan_s)
