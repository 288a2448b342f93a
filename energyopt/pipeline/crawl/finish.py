"""The crawl's end: from its last grid schedule to T_min, on the measured times.

Grid rounding makes the grid crawl's last schedule measure a little slower than
T_min (every computation at its fastest option); :func:`_finish_to_fastest`
closes that gap with speed-up min-cut steps on the measured times (energyopt's
addition), and :func:`_all_fastest` is T_min's own schedule (the end of
Algorithm 1 as printed).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from energyopt.pipeline.crawl.maxflow import min_cut_one_flow
from energyopt.pipeline.crawl.step import _EdgeCentricDag
from energyopt.pipeline.dag import CompactDag, IntegerTimer
from energyopt.pipeline.instance import PemInstance


def _all_fastest(instance: PemInstance) -> np.ndarray:
    """Every computation at its fastest option (the cheaper of ties): T_min's schedule.

    Algorithm 1 as printed stops when every critical computation is at its
    shortest *planned* duration, which grid rounding puts a little above its
    fastest measured time; the crawl's end, T_min (Perseus Sec. 4.1, every
    computation at the maximum clock), is this schedule.
    """
    pb = instance.p_blocking_w
    row = []
    for c in instance.computations:
        tb = instance.tables[c.table]
        t = np.asarray(tb.time_s, dtype=float)
        e = np.asarray(tb.energy_j, dtype=float) - pb * t
        row.append(int(np.lexsort((e, t))[0]))
    return np.asarray(row, dtype=np.int64)


class _MeasuredTables(NamedTuple):
    """The option tables as padded arrays, for the min-cut steps on measured times.

    Row ``k`` is the ``k``-th table by name; column ``j`` its option ``j``.

    Attributes
    ----------
    table_of
        Row of each computation's table.
    time_s, effective_j
        Measured time and effective energy ``e - P_b * t`` of each option.
    next_faster, next_slower
        The neighbouring option on the table's Pareto set (fastest first), ``-1``
        at either end and for dominated options.
    """

    table_of: np.ndarray
    time_s: np.ndarray
    effective_j: np.ndarray
    next_faster: np.ndarray
    next_slower: np.ndarray


def _measured_tables(instance: PemInstance) -> _MeasuredTables:
    """Pad every option table of ``instance`` to one width (see :class:`_MeasuredTables`).

    Parameters
    ----------
    instance
        The PEM instance.

    Returns
    -------
    _MeasuredTables
        Times, effective energies and Pareto neighbours per table and option.
    """
    pb = instance.p_blocking_w
    names = sorted(instance.tables)
    which = {nm: k for k, nm in enumerate(names)}
    tab = np.asarray([which[c.table] for c in instance.computations])
    W = max(len(t) for t in instance.tables.values())
    Tm = np.zeros((len(names), W))
    Em = np.zeros((len(names), W))
    NF = np.full((len(names), W), -1, dtype=np.int64)
    NS = np.full((len(names), W), -1, dtype=np.int64)
    for k, nm in enumerate(names):
        tb = instance.tables[nm]
        Tm[k, : len(tb)] = tb.time_s
        Em[k, : len(tb)] = np.asarray(tb.energy_j) - pb * np.asarray(tb.time_s)
        keep, _ = tb.pareto(pb)  # fastest first
        for j in range(1, len(keep)):
            NF[k, keep[j]] = keep[j - 1]
            NS[k, keep[j - 1]] = keep[j]
    return _MeasuredTables(tab, Tm, Em, NF, NS)


def _finish_to_fastest(instance: PemInstance, dag: CompactDag, choice: np.ndarray) -> list:
    """Close the quantisation gap between the crawl's last schedule and T_min.

    Planned durations are whole units of tau, rounded up from the measured
    times, so when the crawl stops (every critical computation at its shortest
    planned duration) the measured makespan can still exceed the fastest
    iteration time T_min by up to the rounding of one path. This phase (not in
    the paper) repeats, on the *measured* times, a speed-up-only min-cut step
    (:func:`_measured_cut_step`): critical computations with capacity = extra
    effective energy per second of their next faster Pareto option; the cut's
    computations move one option faster. Each step moves at least one
    computation, so it ends, at T_min.

    Parameters
    ----------
    instance, dag
        The instance and its DAG.
    choice
        Option index of each computation in the crawl's last schedule.

    Returns
    -------
    list
        The option indices of each finishing step's schedule, in order.
    """
    tables = _measured_tables(instance)
    times = tables.time_s[tables.table_of]
    timer = IntegerTimer(dag, times.max(axis=1))
    fastest = times.min(axis=1)
    t_min = float((timer.earliest_start(fastest) + fastest).max())
    graph = _EdgeCentricDag(dag)
    x = np.asarray(choice, dtype=np.int64).copy()
    rows: list[np.ndarray] = []
    for _ in range(int((tables.next_faster >= 0).sum()) * dag.n + 1):
        x_next = _measured_cut_step(tables, timer, graph, x, t_min)
        if x_next is None:
            break
        x = x_next
        rows.append(x.copy())
    return rows


def _measured_capacities(
    tables: _MeasuredTables, crit: np.ndarray, x: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Eq. 8's flow bounds on measured times, one Pareto option either way.

    Parameters
    ----------
    tables
        The padded option tables.
    crit
        Indices of the critical computations.
    x, t
        Option index and measured time of every computation.

    Returns
    -------
    faster, slower
        Each critical computation's next faster / slower Pareto option, ``-1`` if none.
    lower, upper
        ``e-``: effective energy saved per second by the next slower option (0 if
        none); ``e+``: extra effective energy per second of the next faster one
        (``inf`` if none). ``lower <= upper``.
    """
    xc, tc = x[crit], tables.table_of[crit]
    Tm, Em = tables.time_s, tables.effective_j
    faster = tables.next_faster[tc, xc]
    has = faster >= 0
    nxt = np.where(has, faster, xc)
    dt = np.maximum(t[crit] - Tm[tc, nxt], 1e-12)
    de = np.maximum(Em[tc, nxt] - Em[tc, xc], 0.0)
    upper = np.where(has, de / dt, math.inf)
    # Slowing a computation down one option saves energy at this rate (Eq. 8's e-).
    slower = tables.next_slower[tc, xc]
    has_slower = slower >= 0
    prv = np.where(has_slower, slower, xc)
    dts = np.maximum(Tm[tc, prv] - t[crit], 1e-12)
    lower = np.where(has_slower, np.maximum(Em[tc, xc] - Em[tc, prv], 0.0) / dts, 0.0)
    return faster, slower, np.minimum(lower, upper), upper


def _measured_cut_step(
    tables: _MeasuredTables,
    timer: IntegerTimer,
    graph: _EdgeCentricDag,
    x: np.ndarray,
    t_min: float,
) -> np.ndarray | None:
    """One min-cut step of :func:`_finish_to_fastest` on the measured times.

    The Critical DAG is found with a relative tolerance of 1e-9 of the makespan
    (measured times are not integers). The cut's forward computations move one
    Pareto option faster, its backward ones (with a positive ``e-``) one slower,
    unless the slowdowns keep the makespan from falling: then speed-ups only.

    Parameters
    ----------
    tables, timer, graph
        The padded option tables, a longest-path timer and the edge-centric DAG.
    x
        Option index of every computation.
    t_min
        The all-fastest makespan, in seconds.

    Returns
    -------
    numpy.ndarray or None
        The next option indices; ``None`` at T_min or when no cut speeds anything up.
    """
    t = tables.time_s[tables.table_of, x]
    es = timer.earliest_start(t)
    ef = es + t
    L = float(ef.max())
    if L <= t_min * (1 + 1e-12):
        return None
    tol = 1e-9 * L
    crit_mask = es + timer.tail(t) >= L - tol
    crit = np.flatnonzero(crit_mask)
    tight = crit_mask[graph.prec_from] & crit_mask[graph.prec_to]
    tight &= es[graph.prec_to] - ef[graph.prec_from] <= tol
    starts = crit[es[crit] <= tol]
    ends = crit[ef[crit] >= L - tol]
    faster, slower, low, cap = _measured_capacities(tables, crit, x, t)
    m = len(crit)
    ct, ch = graph.edges(crit, tight, starts, ends)
    upper = np.concatenate([cap, np.full(len(ct) - m, math.inf)])
    lower = np.concatenate([low, np.zeros(len(ct) - m)])
    cut = min_cut_one_flow(graph.num_nodes, ct, ch, lower, upper, graph.source, graph.sink)
    if cut.status != "ok":
        return None
    side = cut.source_side
    move = side[ct[:m]] & ~side[ch[:m]] & (faster >= 0)
    back = ~side[ct[:m]] & side[ch[:m]] & (slower >= 0) & (low > 0)
    if not move.any():
        return None
    x_new = x.copy()
    x_new[crit[move]] = faster[move]
    x_new[crit[back]] = slower[back]
    if back.any():
        t_new = tables.time_s[tables.table_of, x_new]
        if float((timer.earliest_start(t_new) + t_new).max()) >= L * (1 - 1e-12):
            x_new[crit[back]] = x[crit][back]  # the slowdowns undid the gain: speed-ups only
    return x_new
