"""The Perseus frontier crawl (Perseus 4.2-4.3, Algorithms 1-3, Appendix E).

Algorithm 1: start from the minimal-energy schedule (every computation at the
longest planned duration of its cost model, i.e. its least effective-energy
option) and repeatedly shorten the iteration by one unit ``tau`` with the least
energy increase, until no cut of finite capacity is left (the fastest schedule).

Algorithm 2 (GetNextSchedule), one step:

1. edge-centric DAG: computation i is the edge ``2i -> 2i+1``; a precedence
   ``a -> b`` is the zero-duration edge ``2a+1 -> 2b``; a source and a sink close it;
2. keep the critical computations (earliest start == latest start) and the
   tight precedences between them (the Critical DAG);
3. flow bounds from Eq. 8 on computation edges, ``(0, inf)`` on the others;
4. minimum cut with lower bounds (:mod:`energyopt.pipeline.maxflow`: Algorithm 3,
   or the same cut with one maximum flow, the default);
5. speed up the cut's forward computations by one unit, slow down its backward
   ones by one unit.

Durations are integers in units of tau, so the longest paths (Dijkstra with
potentials, :class:`~energyopt.pipeline.dag.IntegerTimer`) and the critical test
are exact. Safeguards and additions the paper does not spell out:

- with Algorithm 3 the flow with lower bounds can be infeasible (the relaxed
  schedule is not optimal at its own time, which the exponential fit allows);
  the step then uses the speed-up-only cut (lower bounds 0), which always exists;
- slowing the backward computations of a cut can lengthen a near-critical path
  (slack 1) past the new makespan; the step is then taken without slowdowns,
  which shortens every critical path and lengthens nothing;
- with the ``hull`` model the capacities are constant between hull vertices, so
  when the same cut would be chosen again it is applied for several steps at
  once (identical to unit steps, see :func:`_repeat_steps`); every intermediate
  step is still a frontier point;
- grid rounding makes the last schedule measure a little slower than T_min (all
  fastest options); :func:`_finish_to_fastest` closes that gap with min-cut steps
  on the measured times.

All counted in ``stats``. Every schedule is converted to clocks (the slowest
Pareto-optimal option that meets the plan, Perseus 4.3) and scored with the
*measured* times and energies. The planned (modelled) time and energy of each
step stay in :class:`CrawlTrace`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from typing import Any

import numpy as np

from energyopt.core.instance import InstanceError
from energyopt.pipeline.costmodels import COST_MODELS, TabulatedCost, tabulate
from energyopt.pipeline.dag import CompactDag, IntegerTimer
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.maxflow import min_cut_one_flow, min_cut_with_lower_bounds
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
    """
    tick = time.perf_counter()
    _check_instance(instance, tau_s)
    if cost_model not in COST_MODELS:
        raise ValueError(f"cost_model = {cost_model!r}: expected one of {', '.join(COST_MODELS)}")
    if flow not in ("one", "algorithm3"):
        raise ValueError(f"flow = {flow!r}: expected 'one' or 'algorithm3'")
    model = _Model(instance, float(tau_s), cost_model, rounding)
    dag = CompactDag(instance)
    n = dag.n
    timer = IntegerTimer(dag, model.d_max)
    d = model.d_max.copy()
    L0 = int((timer.earliest_start(d) + d).max())
    L_min = int((timer.earliest_start(model.d_min) + model.d_min).max())
    expected_steps = L0 - L_min
    stats: dict[str, Any] = {
        "tau_s": float(tau_s),
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
    rows: list[np.ndarray] = [d.copy()]
    planned_T: list[int] = [L0]
    bar = None
    if progress or (progress is None and expected_steps * max(n, 1) > 3e5):
        from tqdm.auto import tqdm

        bar = tqdm(total=expected_steps, desc="perseus crawl", unit="step", leave=False)
    # AOA node ids: start(i) = 2i, end(i) = 2i + 1, source 2n, sink 2n + 1.
    comp_tail = 2 * np.arange(n)
    comp_head = comp_tail + 1
    et, eh = dag.edge_tail, dag.edge_head
    dep_tail = 2 * et + 1
    dep_head = 2 * eh
    num_nodes, s_id, t_id = 2 * n + 2, 2 * n, 2 * n + 1
    # The crawl builds valid bounds itself: skip the per-call input checks.
    cut_fn = (
        functools.partial(min_cut_one_flow, check=False)
        if flow == "one"
        else min_cut_with_lower_bounds
    )
    L_prev = None
    pending = None  # (durations before the last step, its speed-up-only durations)
    steps = 0
    try:
        while True:
            es = timer.earliest_start(d)
            ef = es + d
            L = int(ef.max())
            if pending is not None and L > L_prev - 1:
                # The last step's slowdowns lengthened a near-critical path: take the
                # step without them (shortens every critical path, lengthens nothing).
                stats["slowdown_reverted_steps"] += 1
                d = pending[1]
                es = timer.earliest_start(d)
                ef = es + d
                L = int(ef.max())
                rows[-1] = d.copy()
                planned_T[-1] = L
            pending = None
            if max_steps is not None and steps >= max_steps:
                stats["stopped"] = f"max_steps={max_steps}"
                break
            if time_limit is not None and time.perf_counter() - tick > time_limit:
                stats["stopped"] = f"time_limit={time_limit}"
                break
            crit = es + timer.tail(d) == L
            cidx = np.flatnonzero(crit)
            dmask = crit[et] & crit[eh] & (ef[et] == es[eh])
            src = cidx[es[cidx] == 0]
            snk = cidx[ef[cidx] == L]
            col = d[cidx] - model.d_min[cidx]
            tk = model.table_of[cidx]
            lower_c = model.lower[tk, col]
            upper_c = model.upper[tk, col]
            nd, ns, nk = int(dmask.sum()), len(src), len(snk)
            ct = np.concatenate(
                [comp_tail[cidx], dep_tail[dmask], np.full(ns, s_id), comp_head[snk]]
            )
            ch = np.concatenate([comp_head[cidx], dep_head[dmask], 2 * src, np.full(nk, t_id)])
            lower = np.concatenate([lower_c, np.zeros(nd + ns + nk)])
            upper = np.concatenate([upper_c, np.full(nd + ns + nk, math.inf)])
            cut = cut_fn(num_nodes, ct, ch, lower, upper, s_id, t_id)
            stats["max_flow_calls"] += 1
            lower_used = True
            if cut.status == "infeasible":
                stats["infeasible_flow_steps"] += 1
                lower_used = False
                cut = cut_fn(num_nodes, ct, ch, np.zeros_like(lower), upper, s_id, t_id)
                stats["max_flow_calls"] += 1
            if cut.status != "ok":
                stats["stopped"] = "no finite cut: fastest schedule reached"
                break
            side = cut.source_side
            nc = len(cidx)
            fwd = side[ct[:nc]] & ~side[ch[:nc]]
            bwd = ~side[ct[:nc]] & side[ch[:nc]]
            speed = cidx[fwd]
            slow = cidx[bwd] if lower_used else cidx[:0]
            # A backward-cut computation already at its slowest saves nothing (l = 0).
            slow = slow[d[slow] < model.d_max[slow]]
            if len(speed) == 0:
                stats["stopped"] = "no computation to speed up"
                break
            stats["cuts"] += 1
            r = np.zeros(n, dtype=np.int64)
            r[speed] = -1
            r[slow] = 1
            reps = 1
            if jump and cost_model == "hull":
                reps = _repeat_steps(timer, model, d, r, speed, slow, L)
                if max_steps is not None:
                    reps = max(1, min(reps, max_steps - steps))
            if reps == 1 and len(slow):
                r_fast = r.copy()
                r_fast[slow] = 0
                pending = (d, d + r_fast)
            for k in range(1, reps + 1):
                rows.append(d + k * r)
                planned_T.append(L - k)
            d = d + reps * r
            L_prev = L - reps + 1
            steps += reps
            if bar is not None:
                bar.update(min(reps, max(0, bar.total - bar.n)))
    finally:
        if bar is not None:
            bar.close()
    D = np.vstack(rows)
    choices = model.option[model.table_of[None, :], D - model.d_min[None, :]]
    complete = not stats["stopped"].startswith(("max_steps", "time_limit"))
    if complete:
        # finish: energyopt's min-cut steps to T_min; as printed: T_min's own schedule.
        extra_rows = (
            _finish_to_fastest(instance, dag, choices[-1]) if finish else [_all_fastest(instance)]
        )
        stats["finishing_steps"] = len(extra_rows)
        if extra_rows:
            choices = np.vstack([choices, np.asarray(extra_rows)])
            planned_T += [-1] * len(extra_rows)
            D = np.vstack([D, np.repeat(D[-1:], len(extra_rows), axis=0)])
    T_meas, E_meas = batch_evaluate(instance, choices, dag)
    pb, S = instance.p_blocking_w, instance.num_stages
    T_plan = np.asarray(planned_T, dtype=float) * tau_s
    T_plan[np.asarray(planned_T) < 0] = np.nan  # finishing steps have no planned time
    E_plan = model.cost[model.table_of[None, :], D - model.d_min[None, :]].sum(axis=1)
    E_plan = E_plan + pb * S * T_plan
    stats["steps"] = steps
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


def _finish_to_fastest(instance: PemInstance, dag: CompactDag, choice: np.ndarray) -> list:
    """Close the quantisation gap between the crawl's last schedule and T_min.

    Planned durations are whole units of tau, rounded up from the measured
    times, so when the crawl stops (every critical computation at its shortest
    planned duration) the measured makespan can still exceed the fastest
    iteration time T_min by up to the rounding of one path. This phase (not in
    the paper) repeats, on the *measured* times, a speed-up-only min-cut step:
    critical computations with capacity = extra effective energy per second of
    their next faster Pareto option; the cut's computations move one option
    faster. Each step moves at least one computation, so it ends, at T_min.
    """
    pb = instance.p_blocking_w
    names = sorted(instance.tables)
    which = {nm: k for k, nm in enumerate(names)}
    tab = np.asarray([which[c.table] for c in instance.computations])
    W = max(len(t) for t in instance.tables.values())
    Tm = np.zeros((len(names), W))
    Em = np.zeros((len(names), W))
    NF = np.full((len(names), W), -1, dtype=np.int64)  # next faster Pareto option
    NS = np.full((len(names), W), -1, dtype=np.int64)  # next slower Pareto option
    for k, nm in enumerate(names):
        tb = instance.tables[nm]
        Tm[k, : len(tb)] = tb.time_s
        Em[k, : len(tb)] = np.asarray(tb.energy_j) - pb * np.asarray(tb.time_s)
        keep, _ = tb.pareto(pb)  # fastest first
        for j in range(1, len(keep)):
            NF[k, keep[j]] = keep[j - 1]
            NS[k, keep[j - 1]] = keep[j]
    n = dag.n
    timer = IntegerTimer(dag, Tm[tab].max(axis=1))
    t_min = float((timer.earliest_start(Tm[tab].min(axis=1)) + Tm[tab].min(axis=1)).max())
    et, eh = dag.edge_tail, dag.edge_head
    x = np.asarray(choice, dtype=np.int64).copy()
    rows: list[np.ndarray] = []
    for _ in range(int((NF >= 0).sum()) * n + 1):
        t = Tm[tab, x]
        es = timer.earliest_start(t)
        ef = es + t
        L = float(ef.max())
        if L <= t_min * (1 + 1e-12):
            break
        tol = 1e-9 * L
        crit = es + timer.tail(t) >= L - tol
        cidx = np.flatnonzero(crit)
        dmask = crit[et] & crit[eh] & (es[eh] - ef[et] <= tol)
        src = cidx[es[cidx] <= tol]
        snk = cidx[ef[cidx] >= L - tol]
        xc, tc = x[cidx], tab[cidx]
        nf = NF[tc, xc]
        has = nf >= 0
        nxt = np.where(has, nf, xc)
        dt = np.maximum(t[cidx] - Tm[tc, nxt], 1e-12)
        de = np.maximum(Em[tc, nxt] - Em[tc, xc], 0.0)
        cap = np.where(has, de / dt, math.inf)
        # Slowing a computation down one option saves energy at this rate (Eq. 8's e-).
        ns = NS[tc, xc]
        slower = ns >= 0
        prv = np.where(slower, ns, xc)
        dts = np.maximum(Tm[tc, prv] - t[cidx], 1e-12)
        low = np.where(slower, np.maximum(Em[tc, xc] - Em[tc, prv], 0.0) / dts, 0.0)
        low = np.minimum(low, cap)
        m = len(cidx)
        ct = np.concatenate([2 * cidx, 2 * et[dmask] + 1, np.full(len(src), 2 * n), 2 * snk + 1])
        ch = np.concatenate([2 * cidx + 1, 2 * eh[dmask], 2 * src, np.full(len(snk), 2 * n + 1)])
        upper = np.concatenate([cap, np.full(len(ct) - m, math.inf)])
        lower = np.concatenate([low, np.zeros(len(ct) - m)])
        cut = min_cut_one_flow(2 * n + 2, ct, ch, lower, upper, 2 * n, 2 * n + 1)
        if cut.status != "ok":
            break
        side = cut.source_side
        move = side[ct[:m]] & ~side[ch[:m]] & has
        back = ~side[ct[:m]] & side[ch[:m]] & slower & (low > 0)
        if not move.any():
            break
        x_new = x.copy()
        x_new[cidx[move]] = nf[move]
        x_new[cidx[back]] = ns[back]
        if back.any():
            t_new = Tm[tab, x_new]
            if float((timer.earliest_start(t_new) + t_new).max()) >= L * (1 - 1e-12):
                x_new[cidx[back]] = xc[back]  # the slowdowns undid the gain: speed-ups only
        x = x_new
        rows.append(x.copy())
    return rows
