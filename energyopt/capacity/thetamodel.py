"""The capacity problem at a fixed theta: a small pattern MILP (CAP-11 .. CAP-17).

formulations/capacity.md Section 8. Once theta, the time to the next rescheduling
point, is fixed at a value T, f_OBJ is linear: energy pi T (P^idle per powered node +
P^gpu per busy GPU), each configuration's tardiness, and each postponed job's
beta w_j max(0, T_c + T + Rmin_j - d_j). Configurations that end before T are out,
and one that ends at T must run (CAP-15). Identical nodes are counted per class and
packing pattern (:mod:`energyopt.capacity.patterns`), so the model has a few hundred
columns at N = 100 and no symmetry between nodes.

Each constraint family is built by its own function citing its equation. The model
is handed to HiGHS as arrays (``highspy``): it is rebuilt for every theta.
"""

from __future__ import annotations

import dataclasses
import math

import highspy
import numpy as np

from energyopt.capacity.instance import CapacityInstance
from energyopt.capacity.patterns import Aggregation, HostState, Move
from energyopt.core.highslp import csc_rows, highs_lp, quiet_highs, time_limit_options

INF = highspy.kHighsInf


@dataclasses.dataclass
class ThetaModel:
    """Columns and rows of the model at one theta (before it goes to HiGHS).

    Column maps give the model's variables: ``x`` by :class:`Move`, ``w`` by
    :class:`HostState`, ``p`` by job, ``v`` by (class, GPUs left, pattern), ``f``
    by GPU type. Costs are in EUR.
    """

    theta_s: float
    cost: list[float] = dataclasses.field(default_factory=list)
    upper: list[float] = dataclasses.field(default_factory=list)
    x: dict[Move, int] = dataclasses.field(default_factory=dict)
    w: dict[HostState, int] = dataclasses.field(default_factory=dict)
    p: dict[int, int] = dataclasses.field(default_factory=dict)
    v: dict[tuple[int, int, tuple[int, ...]], int] = dataclasses.field(default_factory=dict)
    f: dict[str, int] = dataclasses.field(default_factory=dict)
    rows: list[tuple[list[int], list[float], float, float]] = dataclasses.field(
        default_factory=list
    )

    def column(self, cost: float, upper: float = 1.0) -> int:
        self.cost.append(cost)
        self.upper.append(upper)
        return len(self.cost) - 1

    def row(self, terms: dict[int, float], lower: float, upper: float) -> None:
        self.rows.append((list(terms), list(terms.values()), lower, upper))


def build(
    instance: CapacityInstance, agg: Aggregation, theta_s: float, *, attained: bool = True
) -> ThetaModel:
    """The model of ``instance`` with theta fixed at ``theta_s`` (CAP-11 .. CAP-17).

    Parameters
    ----------
    attained
        True: some running job ends exactly at ``theta_s`` (CAP-15), the model
        P(T). False: some job runs and none ends before ``theta_s`` (CAP-15'), the
        relaxation P'(T) whose value bounds P(T') for every T' >= ``theta_s``.
    """
    m = ThetaModel(theta_s)
    columns(m, instance, agg)
    one_choice_per_job(m, instance, agg)
    one_state_per_host(m, agg)
    nodes_per_residual(m, agg)
    slots_per_size(m, agg)
    if attained:
        first_ending(m, agg)
    else:
        something_runs(m)
    if instance.work_conserving:
        work_conserving(m, instance, agg)
    return m


def columns(m: ThetaModel, instance: CapacityInstance, agg: Aggregation) -> None:
    """(CAP-17) The variables and their objective coefficients at theta = T.

    x (a move, allowed when it ends at or after T): tardiness + pi T g P^gpu;
    w (a host state, allowed when its kept jobs end at or after T): their tardiness
    and GPU energy; p_j: beta w_j max(0, T_c + T + Rmin_j - d_j); v (a class's node
    with r GPUs left running pattern q): pi T P^idle when the node is on (a kept job
    or a non-empty pattern); f_t (every node of type t full): 0.
    """
    T, pi = m.theta_s, instance.eur_per_joule
    for mv in agg.moves:
        if mv.time_s >= T:
            gpu_w = agg.classes[mv.cls].gpu_power_w
            m.x[mv] = m.column(mv.tardiness_eur + pi * T * mv.g * gpu_w)
    for states in agg.host_states:
        for s in states:
            keeps = [agg.keeps[j] for j in s.kept]
            if all(k.time_s >= T for k in keeps):
                gpu_w = agg.classes[agg.class_of_node[s.node]].gpu_power_w
                m.w[s] = m.column(sum(k.tardiness_eur + pi * T * k.g * gpu_w for k in keeps))
    beta, rmin = instance.postponement_penalty, instance.min_restart_time_s
    for j, job in enumerate(instance.jobs):
        late = instance.now_s + T + float(rmin[j]) - job.due_s
        m.p[j] = m.column(beta * job.tardiness_weight_eur_per_s * max(0.0, late))
    for c, cls in enumerate(agg.classes):
        for r in range(cls.num_gpus + 1):
            for q in agg.patterns[c, r]:
                on = r < cls.num_gpus or sum(q) > 0
                m.v[c, r, q] = m.column(pi * T * cls.idle_power_w if on else 0.0, len(cls.nodes))
    if instance.work_conserving:
        for t in sorted({cls.gpu_type for cls in agg.classes}):
            m.f[t] = m.column(0.0)


def one_choice_per_job(m: ThetaModel, instance: CapacityInstance, agg: Aggregation) -> None:
    """(CAP-11) Each job moves to one (class, g), stays (a host state keeping it), or waits."""
    terms: list[dict[int, float]] = [{m.p[j]: 1.0} for j in range(instance.num_jobs)]
    for mv, col in m.x.items():
        terms[mv.job][col] = 1.0
    for s, col in m.w.items():
        for j in s.kept:
            terms[j][col] = 1.0
    for t in terms:
        m.row(t, 1.0, 1.0)


def one_state_per_host(m: ThetaModel, agg: Aggregation) -> None:
    """(CAP-12) Each host node is in exactly one state (a subset of its anchored jobs stays)."""
    for states in agg.host_states:
        m.row({m.w[s]: 1.0 for s in states if s in m.w}, 1.0, 1.0)


def nodes_per_residual(m: ThetaModel, agg: Aggregation) -> None:
    """(CAP-13) Per class and r: nodes running a pattern in r GPUs = nodes with r GPUs left.

    Those are the host nodes whose state leaves r GPUs, plus, for r = G_c, the class's
    free nodes.
    """
    hosts: dict[tuple[int, int], list[int]] = {}
    for s, col in m.w.items():  # grouped once: a pass per (c, r) is quadratic at N = 100
        hosts.setdefault((agg.class_of_node[s.node], s.residual), []).append(col)
    for c, cls in enumerate(agg.classes):
        for r in range(cls.num_gpus + 1):
            terms = {m.v[c, r, q]: 1.0 for q in agg.patterns[c, r]}
            terms.update({col: -1.0 for col in hosts.get((c, r), ())})
            free = len(cls.free_nodes) if r == cls.num_gpus else 0
            m.row(terms, free, free)


def slots_per_size(m: ThetaModel, agg: Aggregation) -> None:
    """(CAP-14) Per class and g: jobs moved to g GPUs of the class = g-GPU slots of its patterns."""
    moved: dict[tuple[int, int], list[int]] = {}
    for mv, col in m.x.items():  # grouped once: a pass per (c, g) is quadratic at N = 100
        moved.setdefault((mv.cls, mv.g), []).append(col)
    for c, cls in enumerate(agg.classes):
        for g in range(1, cls.num_gpus + 1):
            terms = {col: 1.0 for col in moved.get((c, g), ())}
            for r in range(cls.num_gpus + 1):
                for q in agg.patterns[c, r]:
                    if len(q) >= g and q[g - 1]:
                        terms[m.v[c, r, q]] = -float(q[g - 1])
            m.row(terms, 0.0, 0.0)


def first_ending(m: ThetaModel, agg: Aggregation) -> None:
    """(CAP-15) A running job ends exactly at T: theta is the minimum, attained.

    The times are compared exactly: T is one of them, computed by the same product.
    """
    T = m.theta_s
    terms = {col: 1.0 for mv, col in m.x.items() if mv.time_s == T}
    for s, col in m.w.items():
        if any(agg.keeps[j].time_s == T for j in s.kept):
            terms[col] = 1.0
    m.row(terms, 1.0, INF)


def something_runs(m: ThetaModel) -> None:
    """(CAP-15') The relaxation: some job runs (none ends before T, by the columns)."""
    terms = {col: 1.0 for col in m.x.values()}
    terms.update({col: 1.0 for s, col in m.w.items() if s.kept})
    m.row(terms, 1.0, INF)


def work_conserving(m: ThetaModel, instance: CapacityInstance, agg: Aggregation) -> None:
    """(CAP-16) A job waits only if every node of every GPU type it runs on is full.

    p_j <= f_t for each type t of j's profile, and f_t = 1 forbids every pattern that
    leaves a GPU free on a node of type t (sum of such v <= N_c (1 - f_t)).
    """
    for j, job in enumerate(instance.jobs):
        for t in job.epoch_time_s:
            if t in m.f:
                m.row({m.p[j]: 1.0, m.f[t]: -1.0}, -INF, 0.0)
    for c, cls in enumerate(agg.classes):
        n_c = float(len(cls.nodes))
        terms = {
            m.v[c, r, q]: 1.0
            for r in range(cls.num_gpus + 1)
            for q in agg.patterns[c, r]
            if sum(g * k for g, k in enumerate(q, start=1)) < r
        }
        terms[m.f[cls.gpu_type]] = n_c
        m.row(terms, -INF, n_c)


@dataclasses.dataclass(frozen=True)
class Solved:
    """What HiGHS returned: ``objective`` and ``bound`` in EUR (``inf``: infeasible)."""

    status: str
    """``optimal``, ``infeasible``, ``time_limit`` or ``other``."""
    objective: float
    bound: float
    values: np.ndarray | None


def solve(
    m: ThetaModel,
    *,
    integral: bool,
    time_limit: float | None,
    rel_gap: float = 1e-6,
    scale: float = 1.0,
) -> Solved:
    """Solve the model (``integral``: the MILP; else its LP relaxation) with HiGHS, one thread.

    Costs are divided by ``scale`` (the incumbent's order of magnitude) so that HiGHS'
    absolute tolerances are relative to the objective.
    """
    h = _highs(m, integral, scale)
    if time_limit is not None:
        for key, value in time_limit_options(time_limit).items():
            h.setOptionValue(key, value)
    h.setOptionValue("mip_rel_gap", float(rel_gap))
    h.run()
    status = h.getModelStatus()
    info = h.getInfo()
    if status == highspy.HighsModelStatus.kInfeasible:
        return Solved("infeasible", math.inf, math.inf, None)
    has_solution = info.primal_solution_status == 2  # kSolutionStatusFeasible
    objective = info.objective_function_value * scale if has_solution else math.inf
    values = np.asarray(h.getSolution().col_value) if has_solution else None
    if status == highspy.HighsModelStatus.kOptimal:
        bound = info.mip_dual_bound * scale if integral else objective
        return Solved("optimal", objective, min(bound, objective), values)
    bound = info.mip_dual_bound * scale if integral else -math.inf
    if not math.isfinite(bound):
        bound = -math.inf
    name = "time_limit" if status == highspy.HighsModelStatus.kTimeLimit else "other"
    return Solved(name, objective, bound, values)


def _highs(m: ThetaModel, integral: bool, scale: float) -> highspy.Highs:
    num_cols = len(m.cost)
    lp = highs_lp(
        np.asarray(m.cost) / scale,
        np.zeros(num_cols),
        np.asarray(m.upper, dtype=float),
        csc_rows([(row[0], row[1]) for row in m.rows], num_cols),
        np.array([row[2] for row in m.rows], dtype=float),
        np.array([row[3] for row in m.rows], dtype=float),
        num_integer=num_cols if integral else 0,
    )
    return quiet_highs(lp)
