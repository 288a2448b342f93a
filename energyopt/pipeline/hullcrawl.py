"""The crawl on the exact convex hull, from event to event (energyopt's default crawl).

Perseus Algorithm 1 shortens the iteration one unit ``tau`` at a time on a grid
of ``tau``. With the convex-hull cost model (:mod:`~energyopt.pipeline.costmodels`)
that is the Phillips-Dessouky parametric solution of the hull's linear program
(the relaxation of :mod:`~energyopt.pipeline.relaxation`), sampled on the grid,
with every option time rounded to the grid first. The rounding is what costs:
a plan on the grid runs slower than planned (or, rounded up, faster and dearer),
by a few milliseconds over a long critical path, which is up to 0.6 % of energy
next to the fastest iteration time where the frontier is steep.

Here the same Phillips-Dessouky steps run on the hull at (nearly) exact times,
integers of a tiny ``quantum`` (default 0.1 us), and each step moves as far as
its cut stays optimal:

1. start from every computation at its least effective-energy hull vertex;
2. per step, the critical computations and tight precedences (exact integer
   test), Eq. 8 flow bounds (speed-up cost = slope of the hull piece to the left,
   slowdown saving = slope to the right), the minimum cut with lower bounds
   (:func:`~energyopt.pipeline.maxflow.min_cut_one_flow`);
3. move the cut's forward computations faster and its backward ones slower by
   the largest ``delta`` at which the cut is still optimal: until a moving
   computation reaches a hull vertex (its capacity changes) or another path
   becomes critical (found by Newton steps on the makespan, which is convex in
   ``delta``).

Between two events the durations move linearly, so the hull LP's optimal
durations are known at *every* iteration time. :func:`sample_plans` turns
them into clocks at any set of times (by default every ``tau``): each
computation runs the slowest Pareto option that fits in its window (the
earliest start given its predecessors' clocks, and the latest finish under the
LP's durations), in topological order, then a second pass gives leftover slack
back in reverse order. Every plan meets its sample time with *measured* times,
and the rounding carries the slack of one computation to the next, so a chain of
equal computations mixes two neighbouring clocks where the LP sits between them.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.crawl import CrawlTrace
from energyopt.pipeline.dag import CompactDag, IntegerTimer
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.maxflow import _FINITE_TOTAL, _INF_INT
from energyopt.pipeline.paretoset import batch_evaluate

#: Time unit of the exact crawl, in seconds: hull vertex times are rounded up to it.
QUANTUM_S = 1e-7


@dataclasses.dataclass
class HullPath:
    """The hull LP's optimal durations along the crawl, event by event.

    Between events ``k`` and ``k + 1`` the planned makespan falls from ``L[k]`` to
    ``L[k] - delta[k]`` (in quanta) and the durations are
    ``d[k] + (L[k] - T) * rate[k]`` for ``T`` in that range.

    Attributes
    ----------
    d0
        Durations at the first event (quanta, every computation at its cheapest vertex).
    L, delta
        Planned makespan at each event and how far it falls before the next.
    rate
        ``-1`` (faster), ``+1`` (slower) or ``0`` per computation and event (int8).
    quantum_s
        Seconds per quantum.
    stats
        Counters (events, maximum flows, Newton steps, ...).
    """

    d0: np.ndarray
    L: np.ndarray
    delta: np.ndarray
    rate: np.ndarray
    quantum_s: float
    stats: dict[str, Any]
    hulls: _Hulls


class _Hulls:
    """Lower convex hulls of every table in quanta, padded to one width."""

    def __init__(self, instance: PemInstance, quantum_s: float) -> None:
        from energyopt.pipeline.relaxation import lower_hull

        names = sorted(instance.tables)
        which = {nm: k for k, nm in enumerate(names)}
        self.table_of = np.asarray([which[c.table] for c in instance.computations], dtype=np.int64)
        hulls, exact = [], []
        for nm in names:
            tb = instance.tables[nm]
            t = np.asarray(tb.time_s, dtype=float)
            c = np.asarray(tb.energy_j, dtype=float) - instance.p_blocking_w * t
            ht, hc = lower_hull(t, c)
            # Up, so that a plan of exactly a vertex's duration fits that vertex's option.
            q = np.ceil(ht / quantum_s - 1e-6).astype(np.int64)
            keep = np.concatenate([[True], q[1:] > q[:-1]])  # distinct after rounding
            hulls.append((q[keep], hc[keep]))
            exact.append(ht[keep])
        W = max(len(q) for q, _ in hulls)
        K = len(names)
        self.vt = np.full((K, W + 1), np.iinfo(np.int64).max // 4, dtype=np.int64)
        self.num = np.asarray([len(q) for q, _ in hulls], dtype=np.int64)
        # slope[k, j]: effective energy saved per quantum slower on piece j (0 past the last).
        self.slope = np.zeros((K, W + 1))
        self.left = np.full((K, W + 1), math.inf)  # slope of the piece left of vertex j
        for k, (q, c) in enumerate(hulls):
            m = len(q)
            self.vt[k, :m] = q
            if m > 1:
                s = (c[:-1] - c[1:]) / (q[1:] - q[:-1])
                self.slope[k, : m - 1] = s
                self.left[k, 1:m] = s
        tk = self.table_of
        self.d_min = self.vt[tk, 0]
        self.d_max = self.vt[tk, self.num[tk] - 1]
        self.vc = [c for _, c in hulls]
        self.q = [q for q, _ in hulls]
        self.exact = exact
        self.groups = table_groups(tk, K)

    def segment(self, rows: np.ndarray, d: np.ndarray) -> np.ndarray:
        """Index of the last vertex at or before ``d`` for computations ``rows``."""
        return (self.vt[self.table_of[rows]] <= d[:, None]).sum(axis=1) - 1


def _check(instance: PemInstance, quantum_s: float) -> None:
    if not isinstance(instance, PemInstance):
        raise InstanceError(f"instance: expected a PemInstance, got {type(instance).__name__}")
    if not (isinstance(quantum_s, float) and math.isfinite(quantum_s) and quantum_s > 0):
        raise InstanceError(f"quantum_s = {quantum_s!r}: must be a positive number of seconds")


def hull_path(
    instance: PemInstance,
    *,
    quantum_s: float = QUANTUM_S,
    time_limit: float | None = None,
    tick: float | None = None,
    max_events: int | None = None,
    progress: bool | None = None,
) -> HullPath:
    """Run the event-to-event crawl (module doc) and return the LP's durations along it.

    Stops early after ``max_events`` events or at ``time_limit`` seconds after
    ``tick`` (``stats["stopped"]`` says so); the events found so far are still a
    valid path from the cheapest schedule. ``progress``: a tqdm bar over the
    makespan range (``None``: only on large instances).
    """
    tick = time.perf_counter() if tick is None else tick
    _check(instance, quantum_s)
    hulls = _Hulls(instance, quantum_s)
    dag = CompactDag(instance)
    n = dag.n
    timer = IntegerTimer(dag, hulls.d_max)
    graph = _CutGraph(dag)
    d = hulls.d_max.copy()
    seg = hulls.num[hulls.table_of] - 1
    stats: dict[str, Any] = {
        "quantum_s": quantum_s,
        "events": 0,
        "max_flow_calls": 0,
        "newton_steps": 0,
        "speed_only_events": 0,
        "stopped": "",
    }
    Ls: list[int] = []
    deltas: list[int] = []
    rates: list[np.ndarray] = []
    d0 = d.copy()
    es = timer.earliest_start(d)
    bar = _progress_bar(timer, hulls, es, d, n, progress)
    try:
        while True:
            if max_events is not None and stats["events"] >= max_events:
                stats["stopped"] = f"max_steps={max_events}"
                break
            if time_limit is not None and time.perf_counter() - tick > time_limit:
                stats["stopped"] = f"time_limit={time_limit}"
                break
            es, d = _step(timer, hulls, graph, es, d, seg, stats, Ls, deltas, rates)
            if stats["stopped"]:
                break
            if bar is not None:
                bar.update(int(deltas[-1]))
    finally:
        if bar is not None:
            bar.close()
    if stats["stopped"].startswith("no finite") or not Ls:
        # The final schedule itself (or, stopped before any event, the cheapest one):
        # a zero-length event at its makespan.
        Ls.append(int((es + d).max()))
        deltas.append(0)
        rates.append(np.zeros(n, dtype=np.int8))
    stats["runtime_s"] = time.perf_counter() - tick
    return HullPath(
        d0,
        np.asarray(Ls, dtype=np.int64),
        np.asarray(deltas, dtype=np.int64),
        np.vstack(rates) if rates else np.zeros((0, n), dtype=np.int8),
        quantum_s,
        stats,
        hulls,
    )


def _step(
    timer: IntegerTimer,
    hulls: _Hulls,
    graph: _CutGraph,
    es: np.ndarray,
    d: np.ndarray,
    seg: np.ndarray,
    stats: dict,
    Ls: list,
    deltas: list,
    rates: list,
) -> tuple[np.ndarray, np.ndarray]:
    """One event (module doc, steps 2-3): record it; return the new starts and durations.

    ``seg`` is updated in place; ``stats["stopped"]`` is set when no step is left.
    """
    n, tk = len(d), hulls.table_of
    ef = es + d
    L = int(ef.max())
    crit = es + timer.tail(d) == L
    at_vertex = d == hulls.vt[tk, seg]
    lower = hulls.slope[tk, seg]
    upper = np.where(at_vertex, hulls.left[tk, seg], lower)
    side = graph.min_cut(crit, es, ef, L, lower, upper)
    stats["max_flow_calls"] += 1
    if side is None:
        stats["stopped"] = "no finite cut: fastest schedule reached"
        return es, d
    start_s, end_s = side[0 : 2 * n : 2], side[1 : 2 * n : 2]
    speed = np.flatnonzero(crit & start_s & ~end_s)
    slow = np.flatnonzero(crit & ~start_s & end_s & (lower > 0))
    if len(speed) == 0:
        stats["stopped"] = "no computation to speed up"
        return es, d
    r = np.zeros(n, dtype=np.int64)
    r[speed] = -1
    r[slow] = 1
    delta, es_next = _event_length(timer, hulls, d, seg, r, speed, slow, L, stats)
    if delta == 0:
        # Integer rounding of a slowdown left no room: speed-ups only (always >= 1).
        stats["speed_only_events"] += 1
        r[slow] = 0
        delta, es_next = _event_length(timer, hulls, d, seg, r, speed, slow[:0], L, stats)
    Ls.append(L)
    deltas.append(delta)
    rates.append(r.astype(np.int8))
    d = d + delta * r
    moved = np.flatnonzero(r)
    seg[moved] = hulls.segment(moved, d[moved])
    stats["events"] += 1
    return es_next, d


def _progress_bar(
    timer: IntegerTimer, hulls: _Hulls, es: np.ndarray, d: np.ndarray, n: int, progress
):
    """A tqdm bar over the planned makespan range (quanta), or ``None``."""
    L0 = int((es + d).max())
    L_min = int((timer.earliest_start(hulls.d_min) + hulls.d_min).max())
    if not (progress or (progress is None and n > 2000)):
        return None
    from tqdm.auto import tqdm

    return tqdm(total=L0 - L_min, desc="perseus crawl", unit="q", leave=False)


class _CutGraph:
    """The flow network of one crawl step, built from arrays prepared once.

    Nodes: start ``2i`` and end ``2i + 1`` of computation ``i``, source ``2n``, sink
    ``2n + 1``. The minimum cut with lower bounds is found with one maximum flow
    as in :func:`~energyopt.pipeline.maxflow.min_cut_one_flow`: a computation arc
    carries ``u - l`` (left out when zero, as inside a hull piece, where ``l = u``),
    and its lower bound ``l`` becomes the node terms ``s -> 2i + 1`` and
    ``2i -> t`` of capacity ``l``.
    """

    def __init__(self, dag: CompactDag) -> None:
        n = dag.n
        self.n = n
        self.et, self.eh = dag.edge_tail, dag.edge_head
        self.dep_tail, self.dep_head = 2 * self.et + 1, 2 * self.eh
        self.s, self.t = 2 * n, 2 * n + 1
        self.idx = np.arange(n)

    def min_cut(
        self,
        crit: np.ndarray,
        es: np.ndarray,
        ef: np.ndarray,
        L: int,
        lower: np.ndarray,
        upper: np.ndarray,
    ) -> np.ndarray | None:
        """Source-side mask of a minimum cut, or ``None`` when every cut is infinite."""
        from ortools.graph.python import max_flow

        et, eh = self.et, self.eh
        cidx = np.flatnonzero(crit)
        dmask = crit[et] & crit[eh] & (ef[et] == es[eh])
        src = cidx[es[cidx] == 0]
        snk = cidx[ef[cidx] == L]
        lo, up = lower[cidx], upper[cidx]
        finite = np.isfinite(up)
        span = np.where(finite, up - lo, 0.0)
        total = float(2.0 * lo.sum() + span.sum())
        scale = _FINITE_TOTAL / total if total > 0 else 1.0
        lo_i = np.rint(lo * scale).astype(np.int64)
        span_i = np.rint(span * scale).astype(np.int64)
        span_i[~finite] = _INF_INT
        arc = span_i > 0
        tl = lo_i > 0
        ca, cl = cidx[arc], cidx[tl]
        tails = np.concatenate(
            [
                2 * ca,
                self.dep_tail[dmask],
                np.full(len(src), self.s),
                2 * snk + 1,
                np.full(len(cl), self.s),
                2 * cl,
            ]
        )
        heads = np.concatenate(
            [
                2 * ca + 1,
                self.dep_head[dmask],
                2 * src,
                np.full(len(snk), self.t),
                2 * cl + 1,
                np.full(len(cl), self.t),
            ]
        )
        nd = int(dmask.sum()) + len(src) + len(snk)
        caps = np.concatenate([span_i[arc], np.full(nd, _INF_INT), lo_i[tl], lo_i[tl]])
        g = max_flow.SimpleMaxFlow()
        g.add_arcs_with_capacity(tails, heads, caps)
        if g.solve(self.s, self.t) != g.OPTIMAL:
            raise ArithmeticError("max flow did not solve to optimality")
        if g.optimal_flow() >= _INF_INT:
            return None
        side = np.zeros(2 * self.n + 2, dtype=bool)
        side[np.asarray(g.get_source_side_min_cut(), dtype=np.int64)] = True
        return side


def _event_length(
    timer: IntegerTimer,
    hulls: _Hulls,
    d: np.ndarray,
    seg: np.ndarray,
    r: np.ndarray,
    speed: np.ndarray,
    slow: np.ndarray,
    L: int,
    stats: dict,
) -> tuple[int, np.ndarray]:
    """Largest ``delta`` for which the cut stays optimal (module doc, step 3).

    ``g(delta) = makespan(d + delta r) + delta - L`` is convex (a maximum of linear
    functions of ``delta``), zero at 0 and never negative (every critical path
    crosses the cut forward once more than backward), so the steps keep their cut
    exactly on ``[0, delta*]``. From the vertex limit, Newton steps on ``g`` (its
    slope from the last unit) reach ``delta*`` from above. Returns ``delta*`` and
    the earliest starts at ``d + delta* r``.
    """
    tk = hulls.table_of
    ts, ss = tk[speed], seg[speed]
    at = d[speed] == hulls.vt[ts, ss]
    # Faster: to the vertex on the left (the previous one when already at a vertex).
    stop = np.where(at, hulls.vt[ts, np.maximum(ss - 1, 0)], hulls.vt[ts, ss])
    lim = int((d[speed] - stop).min())
    if len(slow):
        lim = min(lim, int((hulls.vt[tk[slow], seg[slow] + 1] - d[slow]).min()))
    memo: dict[int, tuple[int, np.ndarray]] = {}

    def g(x: int) -> int:
        if x not in memo:
            dx = d + x * r
            es = timer.earliest_start(dx)
            memo[x] = (int((es + dx).max()) + x - L, es)
            stats["newton_steps"] += 1
        return memo[x][0]

    hi = lim
    for _ in range(64):
        gh = g(hi)
        if gh == 0:
            return hi, memo[hi][1]
        slope = gh - g(hi - 1)
        hi = hi // 2 if slope <= 0 else max(hi - -(-gh // slope), 0)
        if hi == 0:
            return 0, memo[0][1] if 0 in memo else timer.earliest_start(d)
    lo = 0  # bisection as a last resort: g(lo) == 0 < g(hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if g(mid) == 0:
            lo = mid
        else:
            hi = mid
    return lo, memo[lo][1] if lo in memo else timer.earliest_start(d + lo * r)


class ClockFitter:
    """Planned durations to clocks, for many plans at once (module doc, last paragraph).

    Arrays are laid out computations x plans, so that each computation's row is
    contiguous: the passes go over the DAG's levels, and all plans move together.
    """

    def __init__(self, instance: PemInstance, dag: CompactDag | None = None) -> None:
        dag = dag if dag is not None else CompactDag(instance)
        n = dag.n
        self.n = n
        self.levels = [nodes for nodes, _ in dag.levels]
        mp = max((len(p) for p in dag.preds), default=0)
        ms = max((len(s) for s in dag.succs), default=0)
        # Padded neighbour lists; row n is a sentinel (finish 0 / latest start T).
        self.pred = np.full((n, max(mp, 1)), n, dtype=np.int64)
        self.succ = np.full((n, max(ms, 1)), n, dtype=np.int64)
        for v in range(n):
            self.pred[v, : len(dag.preds[v])] = dag.preds[v]
            self.succ[v, : len(dag.succs[v])] = dag.succs[v]
        names = sorted(instance.tables)
        which = {nm: k for k, nm in enumerate(names)}
        self.table_of = [which[c.table] for c in instance.computations]
        self.times: list[np.ndarray] = []
        self.index: list[np.ndarray] = []
        self.inverse: list[np.ndarray] = []  # option index -> Pareto position (-1: none)
        for nm in names:
            tb = instance.tables[nm]
            keep, _ = tb.pareto(instance.p_blocking_w)  # fastest first, dearest first
            idx = np.asarray(keep, dtype=np.int64)
            self.times.append(np.asarray(tb.time_s, dtype=float)[idx])
            self.index.append(idx)
            inv = np.full(len(tb), -1, dtype=np.int64)
            inv[idx] = np.arange(len(idx))
            self.inverse.append(inv)
        tk = np.asarray(self.table_of, dtype=np.int64)
        # Computations of one table move together: one gather per table, not per node.
        self.groups = table_groups(tk, len(names))
        # Per level: (position in the level, computation, its Pareto times) for the passes.
        self.level_items = [
            [(j, v, self.times[tk[v]]) for j, v in enumerate(nodes.tolist())]
            for nodes in self.levels
        ]

    def fit(
        self,
        durations_s: np.ndarray,
        cap_s: np.ndarray | None = None,
        passes: int = 2,
    ) -> np.ndarray:
        """Pareto positions (computations x plans) meeting each column's planned makespan.

        ``durations_s`` is computations x plans (seconds). Each plan meets, with
        measured times, the makespan of its planned durations, or ``cap_s`` where
        that is smaller (at least the fastest makespan). The first pass bounds the
        windows by the latest finishes under the planned durations; a computation
        whose window is shorter than its fastest option runs that option (by
        induction over the topological order every finish then stays at most its
        latest finish under the fastest options, so the plan still meets ``cap_s``).
        Further passes (``passes`` in all, alternating direction) give each
        computation the slack the plan itself leaves it. Map the result to option
        indices with :meth:`options`.
        """
        n, P = durations_s.shape
        fin = np.zeros((n + 1, P))
        for nodes in self.levels:
            fin[nodes] = fin[self.pred[nodes]].max(axis=1) + durations_s[nodes]
        T = fin[:n].max(axis=0)
        if cap_s is not None:
            T = np.minimum(T, cap_s)
        pos = np.zeros((n, P), dtype=np.int64)
        t = np.zeros((n, P))
        es = np.empty((n, P))
        self._forward(pos, t, self._latest_finish(durations_s, T), T, es_out=es)
        return self.relax(pos, T, passes - 1, t, es)

    def relax(
        self,
        pos: np.ndarray,
        T: np.ndarray,
        passes: int = 2,
        t: np.ndarray | None = None,
        es: np.ndarray | None = None,
    ) -> np.ndarray:
        """Give slack back to plans (Pareto positions, updated in place) within ``T``.

        Alternates a pass from the last computations backwards with one from the
        first forwards; each computation takes the slowest option that fits
        between its earliest start and its latest finish under the plan itself,
        never a faster one, so each pass keeps the plan within ``T``. ``t`` and
        ``es``, when given, are the plan's durations and earliest starts.
        """
        if t is None:
            t = self.times_of(pos)
        for k in range(passes):
            if k % 2 == 0:
                self._backward(pos, t, T, es)
                es = None  # the backward pass changed the durations
            else:
                es = np.empty(pos.shape)
                self._forward(pos, t, self._latest_finish(t, T), T, floor=True, es_out=es)
        return pos

    def times_of(self, pos: np.ndarray) -> np.ndarray:
        t = np.empty(pos.shape)
        for kt, rows in self.groups:
            t[rows] = self.times[kt][pos[rows]]
        return t

    def options(self, pos: np.ndarray) -> np.ndarray:
        """Option indices (into the instance's tables) of Pareto positions."""
        out = np.empty_like(pos)
        for kt, rows in self.groups:
            out[rows] = self.index[kt][pos[rows]]
        return out

    def positions(self, options: np.ndarray) -> np.ndarray:
        """Pareto positions of option indices (computations x plans); Pareto options only."""
        out = np.empty_like(options)
        for kt, rows in self.groups:
            out[rows] = self.inverse[kt][options[rows]]
        if np.any(out < 0):
            raise ValueError("positions: a plan uses an option that is not Pareto-optimal")
        return out

    def _latest_finish(self, durations: np.ndarray, T: np.ndarray) -> np.ndarray:
        n, P = durations.shape
        start = np.empty((n + 1, P))
        start[n] = T
        lf = np.empty((n, P))
        for nodes in reversed(self.levels):
            lf[nodes] = np.minimum(start[self.succ[nodes]].min(axis=1), T)
            start[nodes] = lf[nodes] - durations[nodes]
        return lf

    def _forward(
        self,
        pos: np.ndarray,
        t: np.ndarray,
        lf: np.ndarray,
        T: np.ndarray,
        floor: bool = False,
        es_out: np.ndarray | None = None,
    ) -> None:
        """Earliest-first pass: each computation the slowest option ending by ``lf``.

        The earliest starts of the new plan go to ``es_out`` when given.
        """
        n, P = pos.shape
        fin = np.zeros((n + 1, P))
        room = np.empty(P)
        for nodes, items in zip(self.levels, self.level_items):
            es = fin[self.pred[nodes]].max(axis=1)
            for j, v, tv in items:
                np.subtract(lf[v], es[j], out=room)
                _slowest_fitting(tv, room, pos[v] if floor else 0, pos[v], t[v])
            fin[nodes] = es + t[nodes]
            if es_out is not None:
                es_out[nodes] = es

    def _backward(
        self, pos: np.ndarray, t: np.ndarray, T: np.ndarray, es: np.ndarray | None = None
    ) -> None:
        """Latest-first pass: each computation the slack left between its neighbours.

        ``es``: the earliest starts under ``t`` when known (computed otherwise).
        """
        n, P = pos.shape
        if es is None:
            fin = np.zeros((n + 1, P))
            es = np.empty((n, P))
            for nodes in self.levels:
                es[nodes] = fin[self.pred[nodes]].max(axis=1)
                fin[nodes] = es[nodes] + t[nodes]
        start = np.empty((n + 1, P))
        start[n] = T
        room = np.empty(P)
        for nodes, items in zip(reversed(self.levels), reversed(self.level_items)):
            lf = np.minimum(start[self.succ[nodes]].min(axis=1), T)
            for j, v, tv in items:
                np.subtract(lf[j], es[v], out=room)
                _slowest_fitting(tv, room, pos[v], pos[v], t[v])
            start[nodes] = lf - t[nodes]


def table_groups(table_of: np.ndarray, num_tables: int) -> list[tuple[int, np.ndarray]]:
    """(table, its computations in ascending order) for every table that has any."""
    groups = [(k, np.flatnonzero(table_of == k)) for k in range(num_tables)]
    return [(k, rows) for k, rows in groups if len(rows)]


def _slowest_fitting(
    times: np.ndarray, room: np.ndarray, floor, pos_out: np.ndarray, t_out: np.ndarray
) -> None:
    """Pareto position (fastest first) of the slowest option within ``room``, per plan.

    A slower Pareto option is cheaper in effective energy, so this is also the
    cheapest that fits; never below ``floor`` (the fastest is the fallback). Writes
    into the rows ``pos_out`` and ``t_out`` (views, plain integer indexing): the
    passes call this once per computation, so it makes no temporary copies.
    """
    room *= 1 + 1e-12
    p = times.searchsorted(room, side="right")
    p -= 1
    np.maximum(p, floor, out=pos_out)
    np.take(times, pos_out, out=t_out)


def sample_times(path: HullPath, tau_s: float) -> tuple[np.ndarray, np.ndarray]:
    """Sample makespans (quanta) and their events: every event start and every tau."""
    g = max(1, round(tau_s / path.quantum_s))
    hi = path.L
    lo = path.L - path.delta
    first = -(-(lo + 1) // g) * g  # the first grid time above each event's end
    count = np.maximum((hi - 1 - first) // g + 1, 0)  # grid times in (lo, hi)
    ks = np.repeat(np.arange(len(hi)), count + 1)
    # Per event: its start, then its grid times from the top down.
    offs = np.arange(len(ks)) - np.repeat(np.cumsum(count + 1) - (count + 1), count + 1)
    top = np.repeat(first + (count - 1) * g, count + 1)
    T = np.where(offs == 0, hi[ks], top - (offs - 1) * g)
    return ks, T


def event_durations(path: HullPath, k0: int, k1: int, d_start: np.ndarray) -> np.ndarray:
    """Durations (quanta) at the starts of events ``k0 .. k1 - 1`` from those at ``k0``."""
    delta = path.delta[k0 : k1 - 1]
    out = np.empty((len(delta) + 1, len(d_start)), dtype=np.int64)
    out[0] = d_start
    np.multiply(delta[:, None], path.rate[k0 : k1 - 1], out=out[1:])
    # Integers: the running sum in place is exact, whatever the order of the additions.
    return np.cumsum(out, axis=0, out=out)


def exact_seconds(path: HullPath, dq: np.ndarray) -> np.ndarray:
    """Durations in seconds (computations x plans); a duration at a hull vertex is
    that vertex's exact time rather than its rounded-up quanta."""
    ds = dq * path.quantum_s
    h = path.hulls
    for kt, rows in h.groups:
        vals = dq[rows]
        pos = np.minimum(np.searchsorted(h.q[kt], vals), len(h.q[kt]) - 1)
        hit = h.q[kt][pos] == vals
        r, c = np.nonzero(hit)
        ds[rows[r], c] = h.exact[kt][pos[r, c]]
    return ds


def fastest_makespan(instance: PemInstance, dag: CompactDag) -> float:
    """T_min: the makespan with every computation at its fastest measured option."""
    fast = [float(np.min(t)) for t in instance.option_times]
    _, span = dag.earliest_start(fast)
    return float(span)


def crawl_plans(
    instance: PemInstance,
    path: HullPath,
    tau_s: float,
    *,
    chunk: int = 1024,
    dag: CompactDag | None = None,
    deadline: float | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clocks at every event and every ``tau_s`` along ``path``.

    Returns the plans (rows of option indices), their planned makespans (s) and the
    hull LP's effective energy at them (J). Stops adding chunks of plans after
    ``deadline`` (a ``time.perf_counter`` value).
    """
    dag = dag if dag is not None else CompactDag(instance)
    k, T_q = sample_times(path, tau_s)
    fitter = ClockFitter(instance, dag)
    t_min = fastest_makespan(instance, dag)
    last = len(path.L) - 1 if path.stats["stopped"].startswith("no finite") else -1
    rows, lp_cost = [], []
    d_k = path.d0.copy()
    k_at = 0  # d_k: durations at the start of event k_at
    for lo in range(0, len(k), chunk):
        if deadline is not None and rows and time.perf_counter() > deadline:
            break
        kk, tq = k[lo : lo + chunk], T_q[lo : lo + chunk]
        k0, k1 = int(kk[0]), int(kk[-1]) + 1
        if k0 > k_at:
            d_k = d_k + path.delta[k_at:k0] @ path.rate[k_at:k0].astype(np.int64)
            k_at = k0
        starts = event_durations(path, k0, k1, d_k)  # events k0 .. k1 - 1
        rel = kk - k0
        dq = starts[rel].T + (path.L[kk] - tq)[None, :] * path.rate[kk].T.astype(np.int64)
        cap = np.where(kk == last, t_min, np.inf)
        rows.append(fitter.options(fitter.fit(exact_seconds(path, dq), cap)).T)
        lp_cost.append(_hull_cost(path.hulls, dq))
    plans = np.vstack(rows) if rows else np.zeros((0, instance.num_computations), dtype=np.int64)
    cost = np.concatenate(lp_cost) if lp_cost else np.zeros(0)
    return plans, T_q[: len(plans)] * path.quantum_s, cost


def _hull_cost(hulls: _Hulls, dq: np.ndarray) -> np.ndarray:
    """Hull effective energy of durations ``dq`` (computations x plans), summed per plan."""
    out = np.zeros(dq.shape[1])
    for kt, rows in hulls.groups:
        out += np.interp(dq[rows], hulls.q[kt], hulls.vc[kt]).sum(axis=0)
    return out


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
    only before 75 %. ``stats["stopped"]`` says when the crawl stopped early.
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
    plans, planned_T, lp_cost = crawl_plans(
        instance, path, float(tau_s), dag=dag, deadline=deadline
    )
    stats = {**path.stats, "tau_s": float(tau_s), "cost_model": "hull", "crawl": "exact"}
    if stats["stopped"].startswith("time_limit"):
        stats["stopped"] = f"time_limit={time_limit}"  # the caller's limit, not the events'
    stats["steps"] = stats["events"]
    stats["samples"] = len(plans)
    if len(plans) < len(sample_times(path, float(tau_s))[0]) and not stats["stopped"]:
        stats["stopped"] = f"time_limit={time_limit}"
    T_meas, E_meas = batch_evaluate(instance, plans, dag)
    planned_E = lp_cost + instance.p_blocking_w * instance.num_stages * planned_T
    late = time_limit is not None and time.perf_counter() - tick > 0.75 * time_limit
    if not _early(stats["stopped"]) and not late:
        rows, target = gap_plans(instance, ClockFitter(instance, dag), plans, T_meas, E_meas)
        # One copy of all the plans, not one for the gap plans and another for the union.
        plans, n_crawl = np.vstack([plans, *rows]), len(plans)
        extra = plans[n_crawl:]
        T_x, E_x = batch_evaluate(instance, extra, dag)
        planned_T = np.concatenate([planned_T, target])
        planned_E = np.concatenate([planned_E, np.full(len(extra), np.nan)])
        T_meas, E_meas = np.concatenate([T_meas, T_x]), np.concatenate([E_meas, E_x])
        stats["gap_plans"] = len(extra)
    stats["runtime_s"] = time.perf_counter() - tick
    return CrawlTrace(plans, planned_T, planned_E, T_meas, E_meas, stats)


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
    up to just below ``m_(k+1)`` (:meth:`ClockFitter.relax`), is never worse there
    and often better. Returns the new plans in chunks (plans x computations, not yet
    stacked) and the times they were relaxed to.
    """
    from energyopt.pipeline.paretoset import pareto_indices

    C = E_j - instance.p_blocking_w * instance.num_stages * T_s
    keep = pareto_indices(T_s, C)
    if len(keep) < 2:
        return [], T_s[:0]
    target = T_s[keep[1:]] * (1 - 1e-12)
    rows = []
    for lo in range(0, len(keep) - 1, chunk):
        pos = fitter.positions(plans[keep[:-1][lo : lo + chunk]].T)
        rows.append(fitter.options(fitter.relax(pos, target[lo : lo + chunk])).T)
    return rows, target
