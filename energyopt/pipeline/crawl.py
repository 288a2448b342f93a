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
4. minimum cut with lower bounds (:mod:`energyopt.pipeline.maxflow`: Algorithm 3,
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
  (:class:`~energyopt.pipeline.maxflow.OneFlowCutter`); both give exactly what a
  fresh computation gives.

All counted in ``stats``. Every schedule is converted to clocks (the slowest
Pareto-optimal option that meets the plan, Perseus 4.3) and scored with the
*measured* times and energies. The planned (modelled) time and energy of each
step stay in :class:`CrawlTrace`.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, NamedTuple

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.costmodels import COST_MODELS, TabulatedCost, tabulate
from energyopt.pipeline.dag import CompactDag, IntegerTimer, critical_key
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.maxflow import OneFlowCutter, min_cut_one_flow, min_cut_with_lower_bounds
from energyopt.pipeline.paretoset import batch_evaluate

#: Crawls expected to run longer than this show a progress bar.
PROGRESS_AFTER_S = 1.0


@dataclasses.dataclass
class CrawlTrace:
    """Everything the crawl produced, before dominance filtering.

    Attributes
    ----------
    choices
        One row of option indices per schedule (minimal-energy schedule first).
    planned_time_s, planned_energy_j
        The crawl's own view of each schedule: planned makespan (integer units
        times tau) and modelled effective energy plus ``P_b * S * T``.
    time_s, energy_j
        Measured: makespan and energy (blocking up to the makespan) of the clocks.
    """

    choices: np.ndarray
    planned_time_s: np.ndarray
    planned_energy_j: np.ndarray
    time_s: np.ndarray
    energy_j: np.ndarray
    stats: dict[str, Any]


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
        (:func:`~energyopt.pipeline.maxflow.min_cut_one_flow`, same cut);
        ``"algorithm3"``: Perseus Algorithm 3 as printed (two maximum flows,
        speed-up-only fallback when no feasible flow exists).
    rounding
        ``"down"`` (as ``lowtime``; default) or ``"up"`` (Perseus 4.3 read
        literally): how measured times map to the grid of tau (see
        :func:`~energyopt.pipeline.costmodels.tabulate`). Either way every plan is
        scored with its measured times; ``"down"`` gave the better frontiers here.
    finish
        Close the rounding gap to T_min after the last cut (:func:`_finish_to_fastest`,
        energyopt's addition; ``False`` for Algorithm 1 as printed, which then ends on
        T_min's own schedule, every computation at its fastest option).
    start
        Option indices of a plan to start from instead of the minimal-energy
        schedule (energyopt's addition, for the fast-end repair of
        :mod:`~energyopt.pipeline.repair`): each computation starts at its option's
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
