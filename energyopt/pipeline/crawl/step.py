"""One step of the grid crawl (Perseus Algorithm 2, GetNextSchedule) and its state.

The cost model's grids (:class:`_Model`), the edge-centric DAG (step 1), the
Critical DAG with Eq. 8's flow bounds (steps 2-3, :func:`_critical_dag`), the
minimum cut (step 4, :func:`_min_cut_step`) and the move of the cut's
computations (step 5, :func:`_cut_computations`, :func:`_apply_cut`), for the
loop of :func:`energyopt.pipeline.crawl.grid.crawl`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, NamedTuple

import numpy as np

from energyopt.pipeline.crawl.costmodels import TabulatedCost, tabulate
from energyopt.pipeline.dag import CompactDag, IntegerTimer, critical_key
from energyopt.pipeline.instance import PemInstance


class _Model:
    """Per-computation views of the tabulated cost models."""

    def __init__(
        self, instance: PemInstance, tau_s: float, cost_model: str, rounding: str = "up"
    ) -> None:
        tabs: dict[str, TabulatedCost] = {}
        for name, table in instance.tables.items():
            tabs[name] = tabulate(
                table, instance.p_blocking_w, tau_s, cost_model, f"tables[{name!r}]", rounding
            )
        self.tables = tabs
        names = sorted(tabs)
        which = {nm: k for k, nm in enumerate(names)}
        self.table_of = np.asarray([which[c.table] for c in instance.computations])
        self.d_min = np.asarray([tabs[nm].d_min for nm in names])[self.table_of]
        self.d_max = np.asarray([tabs[nm].d_max for nm in names])[self.table_of]
        width = max(t.d_max - t.d_min + 1 for t in tabs.values())
        K = len(names)
        # Grids padded to one width: row = table, column = d - d_min of that table.
        self.cost = np.zeros((K, width))
        self.upper = np.full((K, width), math.inf)
        self.lower = np.zeros((K, width))
        self.option = np.zeros((K, width), dtype=np.int64)
        self.run_down = np.zeros((K, width), dtype=np.int64)
        self.run_up = np.zeros((K, width), dtype=np.int64)
        for k, nm in enumerate(names):
            t = tabs[nm]
            m = len(t.cost_j)
            self.cost[k, :m] = t.cost_j
            up = t.speedup_cost()
            lo = t.slowdown_saving()
            # Eq. 8: (0, e+) when slowest, (e-, inf) when fastest, (e-, e+) otherwise.
            # A non-convex fit can give e- > e+ or negative values; clip so l <= u.
            lo = np.maximum(lo, 0.0)
            up = np.maximum(up, lo)
            self.upper[k, :m] = up
            self.lower[k, :m] = lo
            self.option[k, :m] = t.option_at
            same = np.zeros(m, dtype=bool)
            same[1:] = np.isclose(up[1:], up[:-1], rtol=1e-9, atol=0) & np.isclose(
                lo[1:], lo[:-1], rtol=1e-9, atol=1e-15
            )
            for j in range(1, m):
                self.run_down[k, j] = self.run_down[k, j - 1] + 1 if same[j] else 0
            for j in range(m - 2, -1, -1):
                self.run_up[k, j] = self.run_up[k, j + 1] + 1 if same[j + 1] else 0


class _EdgeCentricDag:
    """Node ids of Algorithm 2's edge-centric DAG (step 1), fixed for the whole crawl.

    Computation ``i`` is the edge ``2i -> 2i+1``; the precedence ``a -> b`` of
    :class:`~energyopt.pipeline.dag.CompactDag` is the zero-duration edge
    ``2a+1 -> 2b``; node ``2n`` is the source and ``2n + 1`` the sink.

    Attributes
    ----------
    comp_tail, comp_head
        Start and end node of each computation.
    prec_from, prec_to
        The precedences as computation indices (``a``, ``b``).
    prec_tail, prec_head
        The precedences as node ids (``2a + 1``, ``2b``).
    num_nodes, source, sink
        ``2n + 2`` nodes, the source ``2n`` and the sink ``2n + 1``.
    """

    def __init__(self, dag: CompactDag) -> None:
        n = dag.n
        self.comp_tail = 2 * np.arange(n)
        self.comp_head = self.comp_tail + 1
        self.prec_from, self.prec_to = dag.edge_tail, dag.edge_head
        self.prec_tail = 2 * self.prec_from + 1
        self.prec_head = 2 * self.prec_to
        self.num_nodes, self.source, self.sink = 2 * n + 2, 2 * n, 2 * n + 1

    def edges(
        self, crit: np.ndarray, tight: np.ndarray, starts: np.ndarray, ends: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Tails and heads of a Critical DAG's edges, computation edges first.

        Parameters
        ----------
        crit
            Indices of the critical computations.
        tight
            Mask over the precedences: the tight ones between critical computations.
        starts, ends
            The critical computations that start at time 0 (joined to the source)
            and those that end at the makespan (joined to the sink).

        Returns
        -------
        tail, head
            Node ids of ``len(crit)`` computation edges, then the precedences, the
            source edges and the sink edges.
        """
        tail = np.concatenate(
            [
                self.comp_tail[crit],
                self.prec_tail[tight],
                np.full(len(starts), self.source),
                self.comp_head[ends],
            ]
        )
        head = np.concatenate(
            [
                self.comp_head[crit],
                self.prec_head[tight],
                2 * starts,
                np.full(len(ends), self.sink),
            ]
        )
        return tail, head


class _CapacityDag(NamedTuple):
    """One step's Critical DAG with Eq. 8's flow bounds (Algorithm 2, steps 2-3).

    Attributes
    ----------
    crit
        Indices of the critical computations; they own the first ``len(crit)`` edges.
    tail, head
        Node ids of every edge (see :meth:`_EdgeCentricDag.edges`).
    lower, upper
        Flow bounds: Eq. 8 on computation edges, ``(0, inf)`` on the others.
    crit_mask, key
        The critical computations as a mask, and the mask of everything that decides
        the edges (critical, starting at 0, ending at the makespan, tight): the next
        step's :func:`_critical_dag` starts from them.
    """

    crit: np.ndarray
    tail: np.ndarray
    head: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    crit_mask: np.ndarray | None = None
    key: np.ndarray | None = None


@dataclasses.dataclass
class _CrawlState:
    """Algorithm 1 between two steps: the current plan and every plan so far.

    Attributes
    ----------
    durations
        Planned duration of each computation, in units of tau.
    rows
        The durations of every schedule visited (minimal-energy schedule first).
    planned_units
        The planned makespan of each row, in units of tau.
    stats
        The counters :attr:`CrawlTrace.stats` reports.
    steps
        Unit steps taken (a repeated cut counts each repeat).
    previous_makespan
        Planned makespan before the last unit step: the step must end at least
        one unit below it.
    speedup_only
        The last step's durations without its slowdowns, while they may still have
        to be undone (:func:`_undo_slowdowns`); ``None`` otherwise.
    """

    durations: np.ndarray
    rows: list[np.ndarray]
    planned_units: list[int]
    stats: dict[str, Any]
    steps: int = 0
    previous_makespan: int = 0
    speedup_only: np.ndarray | None = None


def _undo_slowdowns(state: _CrawlState, timer: IntegerTimer) -> tuple[np.ndarray, np.ndarray, int]:
    """Time the current schedule; take the last step without slowdowns if they hurt.

    Slowing the backward computations of a cut can lengthen a near-critical path
    (slack 1) past the new makespan. The step is then taken without them, which
    shortens every critical path and lengthens nothing (counted in
    ``stats["slowdown_reverted_steps"]``).

    Parameters
    ----------
    state
        The crawl state; its last row is replaced when the slowdowns are undone.
    timer
        The longest-path timer.

    Returns
    -------
    es, ef, L
        Earliest start and finish of each computation and the planned makespan.
    """
    d = state.durations
    es = timer.earliest_start(d)
    ef = es + d
    L = int(ef.max())
    if state.speedup_only is not None and L > state.previous_makespan - 1:
        state.stats["slowdown_reverted_steps"] += 1
        d = state.durations = state.speedup_only
        es = timer.earliest_start(d)
        ef = es + d
        L = int(ef.max())
        state.rows[-1] = d.copy()
        state.planned_units[-1] = L
    state.speedup_only = None
    return es, ef, L


def _critical_dag(
    model: _Model,
    timer: IntegerTimer,
    graph: _EdgeCentricDag,
    d: np.ndarray,
    es: np.ndarray,
    ef: np.ndarray,
    L: int,
    previous: _CapacityDag | None = None,
) -> _CapacityDag:
    """The Critical DAG of the durations ``d`` with Eq. 8's bounds (Algorithm 2, 2-3).

    A computation is critical when its earliest start equals its latest start
    (exact: integer durations); a precedence is kept when both ends are critical
    and it is tight (no slack between them).

    Parameters
    ----------
    model, timer, graph
        The cost model's grids, the longest-path timer and the edge-centric DAG.
    d, es, ef, L
        Durations, earliest starts and finishes, and makespan (units of tau).
    previous
        The last step's Critical DAG, if any: its critical set is tried first
        (:meth:`~energyopt.pipeline.dag.IntegerTimer.critical`), and its edges are
        reused when nothing that decides them changed.

    Returns
    -------
    _CapacityDag
        The critical edges with ``(e-, e+)`` on computations and ``(0, inf)`` elsewhere.
    """
    tight_all = ef[graph.prec_from] == es[graph.prec_to]
    known = previous.crit_mask if previous is not None else None
    crit_mask = timer.critical(d, es, ef, L, graph.prec_from, graph.prec_to, tight_all, known)
    tight = crit_mask[graph.prec_from] & crit_mask[graph.prec_to] & tight_all
    key = critical_key(crit_mask, es, ef, L, tight)
    if previous is not None and np.array_equal(key, previous.key):
        crit, tail, head = previous.crit, previous.tail, previous.head
    else:
        crit = np.flatnonzero(crit_mask)
        starts = crit[es[crit] == 0]
        ends = crit[ef[crit] == L]
        tail, head = graph.edges(crit, tight, starts, ends)
    col = d[crit] - model.d_min[crit]
    table = model.table_of[crit]
    others = len(tail) - len(crit)
    lower = np.concatenate([model.lower[table, col], np.zeros(others)])
    upper = np.concatenate([model.upper[table, col], np.full(others, math.inf)])
    return _CapacityDag(crit, tail, head, lower, upper, crit_mask, key)


def _min_cut_step(
    cut_fn: Any, capacity_dag: _CapacityDag, graph: _EdgeCentricDag, stats: dict[str, Any]
) -> tuple[Any, bool]:
    """Minimum cut of the Capacity DAG (Algorithm 2, step 4).

    With Algorithm 3 the flow with lower bounds can be infeasible (the relaxed
    schedule is not optimal at its own time, which the exponential fit allows);
    the step then uses the speed-up-only cut (lower bounds 0), which always exists.

    Parameters
    ----------
    cut_fn
        The minimum-cut routine (:func:`_cut_function`).
    capacity_dag
        The step's Critical DAG with its bounds.
    graph
        The edge-centric DAG (node count, source and sink).
    stats
        Counts ``max_flow_calls`` and ``infeasible_flow_steps``.

    Returns
    -------
    cut, lower_used
        The :class:`~energyopt.pipeline.maxflow.MinCut`, and whether it honoured
        the lower bounds (so its backward computations may slow down).
    """
    g, c = graph, capacity_dag
    cut = cut_fn(g.num_nodes, c.tail, c.head, c.lower, c.upper, g.source, g.sink)
    stats["max_flow_calls"] += 1
    if cut.status != "infeasible":
        return cut, True
    stats["infeasible_flow_steps"] += 1
    cut = cut_fn(g.num_nodes, c.tail, c.head, np.zeros_like(c.lower), c.upper, g.source, g.sink)
    stats["max_flow_calls"] += 1
    return cut, False


def _cut_computations(
    cut: Any, capacity_dag: _CapacityDag, model: _Model, d: np.ndarray, lower_used: bool
) -> tuple[np.ndarray, np.ndarray]:
    """The computations to speed up and to slow down (Algorithm 2, step 5).

    Parameters
    ----------
    cut
        A minimum cut with status ``"ok"``.
    capacity_dag
        The Critical DAG it cuts.
    model, d
        The cost model's grids and the current durations.
    lower_used
        Whether the cut honoured the lower bounds; if not, nothing slows down.

    Returns
    -------
    speed, slow
        Forward-cut computations, and backward-cut ones that can still slow down
        (one already at its slowest saves nothing: ``l = 0``).
    """
    side = cut.source_side
    crit = capacity_dag.crit
    nc = len(crit)
    tail_side = side[capacity_dag.tail[:nc]]
    head_side = side[capacity_dag.head[:nc]]
    speed = crit[tail_side & ~head_side]
    slow = crit[~tail_side & head_side] if lower_used else crit[:0]
    slow = slow[d[slow] < model.d_max[slow]]
    return speed, slow


def _apply_cut(
    state: _CrawlState,
    model: _Model,
    timer: IntegerTimer,
    speed: np.ndarray,
    slow: np.ndarray,
    L: int,
    repeat_cuts: bool,
    max_steps: int | None,
) -> int:
    """Move the cut's computations one unit, or several when the cut repeats.

    Every repeat is recorded as its own schedule, at makespan ``L - k``. A single
    step with slowdowns keeps its speed-up-only durations, for
    :func:`_undo_slowdowns` to fall back on.

    Parameters
    ----------
    state
        The crawl state, advanced in place.
    model, timer
        The cost model's grids and the longest-path timer.
    speed, slow
        Computations one unit faster and one unit slower per step.
    L
        The planned makespan before the step.
    repeat_cuts, max_steps
        Whether to repeat the cut (:func:`_repeat_steps`), never past ``max_steps``.

    Returns
    -------
    int
        How many unit steps were taken.
    """
    d = state.durations
    r = np.zeros(len(d), dtype=np.int64)
    r[speed] = -1
    r[slow] = 1
    reps = 1
    if repeat_cuts:
        reps = _repeat_steps(timer, model, d, r, speed, slow, L)
        if max_steps is not None:
            reps = max(1, min(reps, max_steps - state.steps))
    if reps == 1 and len(slow):
        r_fast = r.copy()
        r_fast[slow] = 0
        state.speedup_only = d + r_fast
    for k in range(1, reps + 1):
        state.rows.append(d + k * r)
        state.planned_units.append(L - k)
    state.durations = d + reps * r
    state.previous_makespan = L - reps + 1
    state.steps += reps
    return reps


def _repeat_steps(
    timer: IntegerTimer,
    model: _Model,
    d: np.ndarray,
    r: np.ndarray,
    speed: np.ndarray,
    slow: np.ndarray,
    L: int,
) -> int:
    """How many unit steps the same cut makes, as Algorithm 1 would take them.

    While the capacities of the cut's computations stay on the same linear piece
    of their cost model, and no other path becomes critical, a unit step finds
    the same Capacity DAG and therefore a cut of the same value. The makespan
    after k repeats, plus k, is convex in k and never below L (each critical path
    loses exactly one unit per repeat), so it equals L for every k up to the
    largest k at which it still equals L: found by bisection on the makespan.
    """
    cap = 1 + int(
        min(
            model.run_down[model.table_of[speed], d[speed] - model.d_min[speed]].min(initial=10**9),
            model.run_up[model.table_of[slow], d[slow] - model.d_min[slow]].min(initial=10**9),
        )
    )
    # Durations must stay inside their grids.
    if len(speed):
        cap = min(cap, int((d[speed] - model.d_min[speed]).min()))
    if len(slow):
        cap = min(cap, int((model.d_max[slow] - d[slow]).min()))
    cap = max(cap, 1)

    def ok(k: int) -> bool:
        dk = d + k * r
        return int((timer.earliest_start(dk) + dk).max()) == L - k

    if cap == 1 or ok(cap):
        return cap
    lo, hi = 1, cap  # ok(lo) holds, ok(hi) fails
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            lo = mid
        else:
            hi = mid
    return lo
