"""The hull LP's optimal durations along the crawl, from event to event.

The event loop of the default crawl (:mod:`~energyopt.pipeline.crawl.hullcrawl`, whose
module doc gives the method): Phillips-Dessouky steps on the lower convex hull of
every option table, at integer times of a tiny ``quantum`` (default 0.1 us), each
step moving as far as its cut stays optimal:

1. start from every computation at its least effective-energy hull vertex;
2. per step, the critical computations and tight precedences (exact integer
   test), Eq. 8 flow bounds (speed-up cost = slope of the hull piece to the left,
   slowdown saving = slope to the right), the minimum cut with lower bounds
   (:func:`~energyopt.pipeline.crawl.maxflow.min_cut_one_flow`);
3. move the cut's forward computations faster and its backward ones slower by
   the largest ``delta`` at which the cut is still optimal: until a moving
   computation reaches a hull vertex (its capacity changes) or another path
   becomes critical (found by Newton steps on the makespan, which is convex in
   ``delta``).

Between two events the durations move linearly, so the LP's optimal durations
are known at every iteration time; :func:`sample_times` picks the times at which
:mod:`~energyopt.pipeline.crawl.hullcrawl` reads them back.
"""

from __future__ import annotations

import array
import dataclasses
import math
import time
from typing import Any

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.crawl.maxflow import _FINITE_TOTAL, _INF_INT
from energyopt.pipeline.dag import CompactDag, IntegerTimer, critical_key
from energyopt.pipeline.instance import PemInstance

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
        from energyopt.pipeline.relaxation.hull import lower_hull

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


def table_groups(table_of: np.ndarray, num_tables: int) -> list[tuple[int, np.ndarray]]:
    """(table, its computations in ascending order) for every table that has any."""
    groups = [(k, np.flatnonzero(table_of == k)) for k in range(num_tables)]
    return [(k, rows) for k, rows in groups if len(rows)]


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
    state = _State(hulls, hulls.d_max.copy())
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
    d0 = state.d.copy()
    es = timer.earliest_start(state.d)
    bar = _progress_bar(timer, hulls, es, state.d, n, progress)
    try:
        while True:
            if max_events is not None and stats["events"] >= max_events:
                stats["stopped"] = f"max_steps={max_events}"
                break
            if time_limit is not None and time.perf_counter() - tick > time_limit:
                stats["stopped"] = f"time_limit={time_limit}"
                break
            es = _step(timer, hulls, graph, es, state, stats, Ls, deltas, rates)
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
        Ls.append(int((es + state.d).max()))
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


class _State:
    """Durations of the crawl and what the flow bounds read from them, per computation.

    ``seg`` is the hull piece (last vertex at or before ``d``), ``at`` whether ``d`` is
    on that vertex, ``lower`` the slowdown saving (slope to the right) and ``upper``
    the speed-up cost (slope to the left; ``lower`` inside a piece). A step moves
    few computations, so :meth:`move` refreshes only theirs.
    """

    def __init__(self, hulls: _Hulls, d: np.ndarray) -> None:
        self.hulls = hulls
        self.d = d
        self.seg = hulls.num[hulls.table_of] - 1
        self.at = np.empty(len(d), dtype=bool)
        self.lower = np.empty(len(d))
        self.upper = np.empty(len(d))
        self._refresh(np.arange(len(d)))
        #: The critical set at the last event (``None`` before the first).
        self.crit: np.ndarray | None = None

    def _refresh(self, rows: np.ndarray) -> None:
        h = self.hulls
        tk, seg = h.table_of[rows], self.seg[rows]
        at = self.d[rows] == h.vt[tk, seg]
        lower = h.slope[tk, seg]
        self.at[rows] = at
        self.lower[rows] = lower
        self.upper[rows] = np.where(at, h.left[tk, seg], lower)

    def move(self, delta: int, r: np.ndarray, moved: np.ndarray) -> None:
        """Apply ``d += delta * r`` (``r`` nonzero exactly at ``moved``)."""
        self.d = self.d + delta * r
        self.seg[moved] = self.hulls.segment(moved, self.d[moved])
        self._refresh(moved)


def _step(
    timer: IntegerTimer,
    hulls: _Hulls,
    graph: _CutGraph,
    es: np.ndarray,
    state: _State,
    stats: dict,
    Ls: list,
    deltas: list,
    rates: list,
) -> np.ndarray:
    """One event (module doc, steps 2-3): record it, move ``state``; return the new starts.

    ``stats["stopped"]`` is set when no step is left.
    """
    d = state.d
    n = len(d)
    ef = es + d
    L = int(ef.max())
    crit, tight = _critical(timer, graph.et, graph.eh, es, ef, d, L, state.crit)
    state.crit = crit
    side = graph.min_cut(crit, crit[graph.et] & crit[graph.eh] & tight, L, es, ef, state)
    stats["max_flow_calls"] += 1
    if side is None:
        stats["stopped"] = "no finite cut: fastest schedule reached"
        return es
    start_s, end_s = side[0 : 2 * n : 2], side[1 : 2 * n : 2]
    speed = np.flatnonzero(crit & start_s & ~end_s)
    slow = np.flatnonzero(crit & ~start_s & end_s & (state.lower > 0))
    if len(speed) == 0:
        stats["stopped"] = "no computation to speed up"
        return es
    r = np.zeros(n, dtype=np.int64)
    r[speed] = -1
    r[slow] = 1
    delta, es_next = _event_length(timer, hulls, state, r, speed, slow, L, stats)
    if delta == 0:
        # Integer rounding of a slowdown left no room: speed-ups only (always >= 1).
        stats["speed_only_events"] += 1
        r[slow] = 0
        slow = slow[:0]
        delta, es_next = _event_length(timer, hulls, state, r, speed, slow, L, stats)
    Ls.append(L)
    deltas.append(delta)
    rates.append(r.astype(np.int8))
    state.move(delta, r, np.flatnonzero(r))
    stats["events"] += 1
    return es_next


def _critical(
    timer: IntegerTimer,
    et: np.ndarray,
    eh: np.ndarray,
    es: np.ndarray,
    ef: np.ndarray,
    d: np.ndarray,
    L: int,
    known: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray]:
    """Critical computations (``known`` itself when it still holds,
    :meth:`~energyopt.pipeline.dag.IntegerTimer.critical`) and tight edges
    (``ef[tail] == es[head]``)."""
    tight = ef[et] == es[eh]
    return timer.critical(d, es, ef, L, et, eh, tight, known), tight


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
    as in :func:`~energyopt.pipeline.crawl.maxflow.min_cut_one_flow`: a computation arc
    carries ``u - l`` (zero inside a hull piece, where ``l = u``), and its lower
    bound ``l`` becomes the node terms ``s -> 2i + 1`` and ``2i -> t`` of capacity
    ``l``. The source side is what the source reaches in the residual graph of a
    maximum flow, which is the smallest source side of a minimum cut: the same
    set for every maximum flow and every order of the arcs, and arcs of capacity
    zero (never in a residual graph) do not change it.

    Two exact reductions (issue 17). Between two events the critical computations
    and tight precedences rarely change, only the bounds do: while they stay, one
    ``SimpleMaxFlow`` keeps its arcs and each step only rewrites the capacities,
    zero ones included. And a start whose only arc in is one tight precedence
    ``2j + 1 -> 2k`` is merged into that end (:meth:`_build`): it is on the
    smallest source side exactly when the end is (were it there alone, dropping
    it would cost nothing, giving a smaller minimum cut; the infinite arc gives
    the converse). The merged node's node terms ``s -> v`` (lower bounds in) and
    ``v -> t`` (out) are netted, which lowers every cut by the same amount. Every
    cut is infinite exactly when infinite arcs lead from the source to the sink;
    the merge keeps such a path, and the flow along it alone reaches ``_INF_INT``.
    """

    def __init__(self, dag: CompactDag) -> None:
        n = dag.n
        self.n = n
        self.et, self.eh = dag.edge_tail, dag.edge_head
        self.dep_tail, self.dep_head = 2 * self.et + 1, 2 * self.eh
        self.s, self.t = 2 * n, 2 * n + 1
        self._key = np.zeros(0, dtype=bool)
        self._flow: Any = None
        self._cidx = np.zeros(0, dtype=np.int64)
        self._caps = np.zeros(0, dtype=np.int64)
        self._arc_ids = np.zeros(0, dtype=np.int32)
        self._label = np.arange(2 * n + 2)
        # Critical positions with an unmerged start, with a merged one, each of these
        # one's group (end), and the positions of the groups' ends.
        self._unmerged = np.zeros(0, dtype=np.int64)
        self._merged = np.zeros(0, dtype=np.int64)
        self._group_of = np.zeros(0, dtype=np.int64)
        self._group_end = np.zeros(0, dtype=np.int64)

    def _build(self, key: np.ndarray) -> None:
        """A flow network for ``key``: critical, starting at 0 and ending at the makespan
        (each a mask over the computations), then tight precedences (a mask over edges).

        Arc layout: ``m`` computation arcs, ``m`` arcs ``s -> end`` (``m`` critical
        computations), arcs ``start -> t`` for unmerged starts, one arc ``end -> t``
        per end holding merged starts, then the infinite arcs; a merged start is
        relabelled to its end.
        """
        from ortools.graph.python import max_flow

        n, s, t = self.n, self.s, self.t
        cidx, src, snk = (np.flatnonzero(key[k * n : (k + 1) * n]) for k in range(3))
        dt, dh = self.dep_tail[key[3 * n :]], self.dep_head[key[3 * n :]]
        # Arcs into a start: its tight precedences, and s -> start when it starts at 0.
        indeg = np.bincount(np.concatenate([dh, 2 * src]), minlength=2 * n + 2)
        merge = indeg[dh] == 1
        label = np.arange(2 * n + 2)
        label[dh[merge]] = dt[merge]
        starts = label[2 * cidx]
        moved = starts != 2 * cidx  # critical computations whose start is merged
        # Each merged start's end, and those ends' positions among the critical ones.
        ends, self._group_of = np.unique(starts[moved], return_inverse=True)
        self._merged, self._group_end = np.flatnonzero(moved), np.searchsorted(cidx, ends // 2)
        self._unmerged = np.flatnonzero(~moved)
        m, k = len(cidx), len(self._unmerged) + len(ends)
        tails = np.concatenate(
            [
                starts,
                np.full(m, s),
                2 * cidx[~moved],
                ends,
                dt[~merge],
                np.full(len(src), s),
                2 * snk + 1,
            ]
        )
        heads = np.concatenate(
            [2 * cidx + 1, 2 * cidx + 1, np.full(k, t), dh[~merge], 2 * src, np.full(len(snk), t)]
        )
        self._cidx, self._label = cidx, label
        self._caps = np.full(len(tails), _INF_INT, dtype=np.int64)
        self._arc_ids = np.arange(len(tails), dtype=np.int32)
        self._flow = max_flow.SimpleMaxFlow()
        self._flow.add_arcs_with_capacity(tails, heads, self._caps)
        self._key = key

    def _capacities(self, lo: np.ndarray, up: np.ndarray) -> None:
        """Write the capacities for the bounds ``lo``, ``up`` of the critical computations."""
        finite = np.isfinite(up)
        span = np.where(finite, up - lo, 0.0)
        total = float(2.0 * lo.sum() + span.sum())
        scale = _FINITE_TOTAL / total if total > 0 else 1.0
        m, u, caps = len(lo), len(self._unmerged), self._caps
        caps[:m] = np.rint(span * scale)
        caps[:m][~finite] = _INF_INT
        lo_i = np.rint(lo * scale).astype(np.int64)
        caps[m : 2 * m] = lo_i
        caps[2 * m : 2 * m + u] = lo_i[self._unmerged]
        if len(self._merged):
            # Lower bounds out of each merged node (exact: integers below 2**53) and into it.
            w = lo_i[self._merged]
            out = np.bincount(self._group_of, weights=w, minlength=len(self._group_end))
            out = out.astype(np.int64)
            into = lo_i[self._group_end]
            caps[2 * m + u : 2 * m + u + len(out)] = np.maximum(out - into, 0)
            caps[m + self._group_end] = np.maximum(into - out, 0)

    def min_cut(
        self,
        crit: np.ndarray,
        dmask: np.ndarray,
        L: int,
        es: np.ndarray,
        ef: np.ndarray,
        state: _State,
    ) -> np.ndarray | None:
        """Source-side mask of a minimum cut, or ``None`` when every cut is infinite.

        ``crit`` and ``dmask``: the critical computations and tight precedences
        between them; ``state`` holds the flow bounds.
        """
        key = critical_key(crit, es, ef, L, dmask)
        if len(key) != len(self._key) or not (key == self._key).all():
            self._build(key)
        cidx = self._cidx
        self._capacities(state.lower[cidx], state.upper[cidx])
        g = self._flow
        g.set_arcs_capacity(self._arc_ids, self._caps)
        if g.solve(self.s, self.t) != g.OPTIMAL:
            raise ArithmeticError("max flow did not solve to optimality")
        if g.optimal_flow() >= _INF_INT:
            return None
        side = np.zeros(2 * self.n + 2, dtype=bool)
        # The binding returns a list of ints: array.array reads it three times faster
        # than numpy does.
        side[np.frombuffer(array.array("q", g.get_source_side_min_cut()), dtype=np.int64)] = True
        return side[self._label]


def _event_length(
    timer: IntegerTimer,
    hulls: _Hulls,
    state: _State,
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
    d, seg, tk = state.d, state.seg, hulls.table_of
    ts, ss = tk[speed], seg[speed]
    # Faster: to the vertex on the left (the previous one when already at a vertex).
    stop = hulls.vt[ts, np.maximum(ss - state.at[speed], 0)]
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
