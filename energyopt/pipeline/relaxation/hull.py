"""The convex-hull relaxation of PEM: a proven lower bound on the energy at every deadline.

Replace each computation's option table by the lower convex hull of its points
(time, effective energy ``e - P_b t``) and let its duration vary continuously
between the fastest option and the cheapest one (``formulations/pem.md``,
Sec. 7, Eqs. PEM-R1..R5). Every plan of the MILP is a point of this LP, so its
optimum ``L(T)`` is a lower bound on the least effective energy of any plan with
makespan at most ``T``, and ``L(T) + P_b S T`` bounds the energy (Perseus Eq. 4).

``L`` is convex and nonincreasing in ``T`` (a parametric right-hand side), so each
LP solved at a deadline ``T_k`` yields, through its dual, an affine function that
lies below ``L`` everywhere (Eq. PEM-R6). :func:`bound_curve` solves the LP at a
few deadlines, chosen by the sandwich method until the tangents meet the LP
values within a tolerance, and the maximum of those tangents is a lower bound at
*every* deadline: one curve certifies a whole frontier.

The bound is computed from the dual values by weak duality (Eq. PEM-R6), not
from the solver's objective, so LP tolerances can only make it weaker, never
invalid.

The LP is built once with arrays and solved with ``highspy`` directly; changing
the deadline is a change of one column's bounds, which HiGHS re-solves from the
previous basis.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
import time

import highspy
import numpy as np

from energyopt.core.gap import gap
from energyopt.core.highslp import csc_rows, highs_lp, quiet_highs
from energyopt.core.result import FrontierPoint
from energyopt.pipeline.evaluator import DEADLINE_RTOL
from energyopt.pipeline.instance import PemInstance

#: Relative distance between the LP value and the tangents at which the sandwich
#: refinement of :func:`bound_curve` stops on an interval.
CURVE_RTOL = 1e-6


def accepted_makespan(deadline_s: float) -> float:
    """The longest makespan the evaluator accepts at ``deadline_s``: ``T (1 + DEADLINE_RTOL)``.

    Every bound at a deadline is taken there (the relaxation's ``L`` at this makespan),
    so that it holds for every plan the evaluator accepts, not only those finishing by
    ``T`` itself (``../shared/repro/pem-bound-tolerance.json``: at its fastest makespan a
    bound taken at ``T`` was 83.62 J while an accepted plan costs 68.36 J).
    """
    return deadline_s * (1 + DEADLINE_RTOL)


def lower_hull(times: np.ndarray, costs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices of the nonincreasing lower convex hull of the points ``(times, costs)``.

    Only the part that falls with time matters: a computation may always run a
    faster option than its planned duration (finishing early never delays anyone),
    so the relaxed cost of a duration ``d`` is the least hull cost at or before ``d``.

    Returns
    -------
    (t, c)
        Vertices with ``t`` strictly increasing and ``c`` strictly decreasing; the
        first is the fastest option (cheapest among equally fast ones), the last the
        cheapest option (fastest among equally cheap ones). Times within a relative
        1e-9 of each other count as one time, at the lower cost (still a relaxation).
    """
    order = np.lexsort((costs, times))
    pts: list[tuple[float, float]] = []
    for k in order:
        t, c = float(times[k]), float(costs[k])
        if pts and c >= pts[-1][1]:
            continue  # slower and not cheaper: dominated (Pareto filter)
        if pts and t - pts[-1][0] <= 1e-9 * abs(t):
            # Times equal up to rounding: a near-vertical segment would make the LP
            # ill-conditioned; the faster time with the lower cost bounds both.
            t = pts.pop()[0]
        # Drop the last vertex while it lies on or above the chord to the new point.
        while len(pts) >= 2:
            (t1, c1), (t2, c2) = pts[-2], pts[-1]
            if (c2 - c1) * (t - t1) >= (c - c1) * (t2 - t1):
                pts.pop()
            else:
                break
        pts.append((t, c))
    arr = np.asarray(pts, dtype=float)
    return arr[:, 0], arr[:, 1]


class LpTimeLimit(Exception):
    """The hull relaxation's LP was stopped by its time limit (:meth:`HullRelaxation.solve`)."""


@dataclasses.dataclass(frozen=True)
class Tangent:
    """A valid lower bound ``L(T) >= offset + slope * T`` from the LP's dual at ``at_s``."""

    at_s: float
    offset: float
    slope: float
    lp_value: float
    """The LP's own optimum at ``at_s`` (the solver's number; not used as a bound)."""

    def __call__(self, deadline_s: float) -> float:
        return self.offset + self.slope * deadline_s


class HullRelaxation:
    """The convex-hull LP of one PEM instance, re-solvable at any deadline.

    Columns: duration ``d_i``, relaxed effective energy ``z_i``, start ``s_i`` per
    computation, and the deadline ``T`` as one column fixed by its bounds.
    """

    def __init__(self, instance: PemInstance) -> None:
        self.instance = instance
        n = instance.num_computations
        self.n = n
        hulls = {}
        for name, table in instance.tables.items():
            t = np.asarray(table.time_s, dtype=float)
            c = np.asarray(table.energy_j, dtype=float) - instance.p_blocking_w * t
            hulls[name] = lower_hull(t, c)
        self.hull = [hulls[c.table] for c in instance.computations]
        self.t_min = np.array([h[0][0] for h in self.hull])
        self.t_cheap = np.array([h[0][-1] for h in self.hull])
        self.fastest_makespan_s = _longest_path(instance, self.t_min)
        self.cheapest_makespan_s = _longest_path(instance, self.t_cheap)
        # HiGHS' tolerances are absolute: the LP is solved in units that make the
        # slowest makespan and the largest cost 1 (results are converted back).
        self.time_unit = self.cheapest_makespan_s if self.cheapest_makespan_s > 0 else 1.0
        biggest = max((float(np.abs(h[1]).max()) for h in self.hull), default=0.0)
        self.energy_unit = biggest if biggest > 0 else 1.0
        self._shull = [(t / self.time_unit, c / self.energy_unit) for t, c in self.hull]
        self._build()

    # -- the LP (formulations/pem.md, Sec. 7) ---------------------------------------
    def _build(self) -> None:
        n = self.n
        self.col_d, self.col_z, self.col_s, self.col_T = 0, n, 2 * n, 3 * n
        lo = np.zeros(3 * n + 1)
        hi = np.zeros(3 * n + 1)
        cost = np.zeros(3 * n + 1)
        # Eq. PEM-R1: minimise the relaxed effective energy.
        cost[self.col_z : self.col_z + n] = 1.0
        # Eq. PEM-R2: each duration between the fastest and the cheapest hull vertex.
        lo[:n] = [h[0][0] for h in self._shull]
        hi[:n] = [h[0][-1] for h in self._shull]
        # z_i lies between the cheapest and the fastest vertex's cost (implied by R3).
        lo[n : 2 * n] = [h[1][-1] for h in self._shull]
        hi[n : 2 * n] = [h[1][0] for h in self._shull]
        # Starts: every plan has an earliest-start schedule starting before the
        # slowest makespan (1 in LP units), so this box cuts no plan off.
        lo[2 * n : 3 * n], hi[2 * n : 3 * n] = 0.0, self.cheapest_makespan_s / self.time_unit
        lo[-1] = hi[-1] = self.cheapest_makespan_s / self.time_unit
        rows: list[tuple[list[int], list[float], float]] = []
        rows += self._hull_rows()
        rows += self._precedence_rows()
        rows += self._deadline_rows()
        self.row_lower = np.array([r[2] for r in rows], dtype=float)
        self._cost, self._lo, self._hi = cost, lo, hi
        self._matrix = csc_rows([(r[0], r[1]) for r in rows], 3 * n + 1)
        # HiGHS gets no upper bound on z (the objective pushes z down anyway): boxes
        # narrower than its tolerances made it report feasible LPs infeasible. The weak
        # dual (Eq. PEM-R6) still uses the box, which every plan's z lies in.
        hi_lp = hi.copy()
        hi_lp[n : 2 * n] = highspy.kHighsInf
        self.highs = _highs_lp(cost, lo, hi_lp, self.row_lower, self._matrix)

    def _hull_rows(self) -> list[tuple[list[int], list[float], float]]:
        """Eq. PEM-R3: ``z_i >= c_k + a_k (d_i - t_k)`` for each hull segment ``k``."""
        rows = []
        for i, (t, c) in enumerate(self._shull):
            for k in range(len(t) - 1):
                slope = (c[k + 1] - c[k]) / (t[k + 1] - t[k])
                # z_i - slope * d_i >= c_k - slope * t_k
                rows.append(([self.col_z + i, self.col_d + i], [1.0, -slope], c[k] - slope * t[k]))
        return rows

    def _precedence_rows(self) -> list[tuple[list[int], list[float], float]]:
        """Eq. PEM-R4: ``s_j >= s_i + d_i`` for every edge ``(i, j)`` (Perseus Eq. 1)."""
        s, d = self.col_s, self.col_d
        return [([s + j, s + i, d + i], [1.0, -1.0, -1.0], 0.0) for i, j in self.instance.edges]

    def _deadline_rows(self) -> list[tuple[list[int], list[float], float]]:
        """Eq. PEM-R5: ``s_i + d_i <= T`` for every computation without successors."""
        s, d, T = self.col_s, self.col_d, self.col_T
        succ = self.instance.successors
        return [([T, s + i, d + i], [1.0, -1.0, -1.0], 0.0) for i in range(self.n) if not succ[i]]

    # -- solving -------------------------------------------------------------------
    def solve(
        self, deadline_s: float, time_limit: float | None = None
    ) -> tuple[Tangent, np.ndarray] | None:
        """Solve at ``deadline_s``; ``None`` when no plan meets it (even relaxed).

        Returns the tangent (Eq. PEM-R6) and the LP's durations ``d``. Raises
        :class:`LpTimeLimit` when HiGHS stops at ``time_limit`` seconds (the LP of
        GPT-3 8x96 takes about 0.6 s): its iterate then gives neither a bound nor a plan.
        """
        if deadline_s < self.fastest_makespan_s * (1 - 1e-12) - 1e-15:
            return None
        T = max(float(deadline_s), self.fastest_makespan_s)
        Tu = T / self.time_unit
        self.highs.changeColBounds(self.col_T, Tu, Tu)
        # HiGHS' clock counts from this object's first run, so the limit is offset by it.
        limit = math.inf if time_limit is None else self.highs.getRunTime() + max(time_limit, 0.01)
        self.highs.setOptionValue("time_limit", limit)
        if not self._run(time_limit):
            self.highs.clearSolver()  # retry from scratch once
            if not self._run(time_limit):
                return None
        sol = self.highs.getSolution()
        y = np.asarray(sol.row_dual, dtype=float)
        x = np.asarray(sol.col_value, dtype=float)
        eu, tu = self.energy_unit, self.time_unit
        lp_value = float(self.highs.getInfo().objective_function_value) * eu
        offset, slope = self._weak_dual(y)
        return Tangent(T, offset * eu, slope * eu / tu, lp_value), x[: self.n] * tu

    def _run(self, time_limit: float | None) -> bool:
        """Run HiGHS: whether it solved the LP; :class:`LpTimeLimit` when its time ran out
        (the retry from scratch included: running out is no proof of infeasibility)."""
        self.highs.run()
        status = self.highs.getModelStatus()
        if status == highspy.HighsModelStatus.kTimeLimit:
            raise LpTimeLimit(f"hull relaxation LP stopped at its {time_limit:.3g} s limit")
        return status == highspy.HighsModelStatus.kOptimal

    def _weak_dual(self, y: np.ndarray) -> tuple[float, float]:
        """Eq. PEM-R6: the Lagrangian bound of multipliers ``y`` as ``offset + slope T``.

        Every row reads ``a_r x >= b_r``, so any ``y >= 0`` gives
        ``c x >= b y + sum_j min(r_j l_j, r_j u_j)`` with ``r = c - A^T y`` over the
        column box; only ``T``'s term depends on the deadline.
        """
        y = np.maximum(y, 0.0)
        r = self._cost - self._matrix.T @ y
        lo, hi = self._lo[:-1], self._hi[:-1]
        rr = r[:-1]
        box = np.minimum(rr * lo, rr * hi)
        offset = math.fsum(self.row_lower * y) + math.fsum(box)
        # Rounding in the sums above is far below this margin.
        offset -= 1e-12 * (math.fsum(np.abs(self.row_lower * y)) + math.fsum(np.abs(box)) + 1.0)
        return offset, float(r[-1])


def _longest_path(instance: PemInstance, durations: np.ndarray) -> float:
    finish = np.zeros(instance.num_computations)
    preds = instance.predecessors
    for i in instance.topological_order:
        p = preds[i]
        finish[i] = (max(finish[j] for j in p) if p else 0.0) + durations[i]
    return float(finish.max()) if len(finish) else 0.0


def _highs_lp(cost, lo, hi, row_lower, matrix) -> highspy.Highs:
    upper = np.full(len(row_lower), highspy.kHighsInf)
    h = quiet_highs(highs_lp(cost, lo, hi, matrix, row_lower, upper))
    # Rounding reads the LP's durations: keep them feasible to well below the
    # evaluator's deadline tolerance (1e-9 relative; the LP's time unit is ~T).
    h.setOptionValue("primal_feasibility_tolerance", 1e-10)
    h.setOptionValue("dual_feasibility_tolerance", 1e-10)
    return h


@dataclasses.dataclass(frozen=True)
class BoundCurve:
    """A proven lower bound on the energy of a PEM instance at every deadline.

    ``energy_bound(T)`` is ``max_k tangent_k(T') + P_b S T`` with ``T' = T (1 +
    DEADLINE_RTOL)`` (Eqs. PEM-R6, PEM-R7): it bounds every plan the evaluator accepts at
    ``T`` (:func:`accepted_makespan`); it is ``None`` where no plan is accepted.
    :meth:`makespan_bounds` bounds a plan counted at its own makespan (no deadline).
    """

    tangents: tuple[Tangent, ...]
    fastest_makespan_s: float
    cheapest_makespan_s: float
    blocking_w_per_s: float
    """``P_b S``: the energy that each second of iteration time adds."""
    lp_solves: int
    runtime_s: float

    def effective_bound(self, deadline_s: float) -> float | None:
        """Lower bound on the least effective energy of any plan accepted at ``deadline_s``."""
        T = accepted_makespan(deadline_s)
        if not self.reaches(T):
            return None
        # L is nonincreasing: past the cheapest makespan it is constant.
        T = min(T, self.cheapest_makespan_s)
        return max(tg(T) for tg in self.tangents)

    def energy_bound(self, deadline_s: float) -> float | None:
        """Lower bound on the energy (Perseus Eq. 4) of any plan accepted at ``deadline_s``."""
        eff = self.effective_bound(deadline_s)
        return None if eff is None else eff + self.blocking_w_per_s * deadline_s

    def reaches(self, makespan_s: float | np.ndarray) -> bool | np.ndarray:
        """Whether some plan finishes by ``makespan_s`` (the fastest makespan, up to rounding)."""
        return makespan_s >= self.fastest_makespan_s * (1 - 1e-12) - 1e-15

    def energy_bounds(self, deadlines_s: np.ndarray) -> np.ndarray:
        """:meth:`energy_bound` at every deadline of ``deadlines_s``, bit for bit: the same
        floating-point operations, vectorized; ``NaN`` where it is ``None``."""
        T = np.asarray(deadlines_s, dtype=float)
        accepted = accepted_makespan(T)
        out = self._envelope(accepted) + self.blocking_w_per_s * T
        return np.where(self.reaches(accepted), out, np.nan)

    def makespan_bounds(self, makespans_s: np.ndarray) -> np.ndarray:
        """Lower bounds on the energy of plans counted at their own makespan (no deadline):
        ``L(m) + P_b S m``, no tolerance, for makespans at least the fastest one."""
        m = np.asarray(makespans_s, dtype=float)
        return self._envelope(m) + self.blocking_w_per_s * m

    def _envelope(self, T: np.ndarray) -> np.ndarray:
        offsets, slopes = self.lines
        clipped = np.minimum(T, self.cheapest_makespan_s)
        return (offsets[None, :] + slopes[None, :] * clipped[:, None]).max(axis=1)

    @functools.cached_property
    def lines(self) -> tuple[np.ndarray, np.ndarray]:
        """The tangents' offsets and slopes as arrays (built once per curve, read-only)."""
        offsets = np.array([tg.offset for tg in self.tangents], dtype=float)
        slopes = np.array([tg.slope for tg in self.tangents], dtype=float)
        offsets.flags.writeable = slopes.flags.writeable = False
        return offsets, slopes


def bound_curve(
    instance: PemInstance,
    rtol: float = CURVE_RTOL,
    max_solves: int = 2000,
    time_limit: float | None = None,
    relaxation: HullRelaxation | None = None,
) -> BoundCurve:
    """Sandwich the LP bound over all deadlines (Eq. PEM-R7).

    Starts from the tangents at the fastest and cheapest makespans and bisects
    at the intersection of neighbouring tangents until the LP value there is
    within ``rtol`` (relative to the energy) of the tangents, ``max_solves`` LPs
    are solved, or ``time_limit`` seconds pass. Stopping early only loosens the
    curve: every tangent is a valid bound.
    """
    tick = time.perf_counter()
    relax = relaxation if relaxation is not None else HullRelaxation(instance)
    pbs = instance.p_blocking_w * instance.num_stages
    lo, hi = relax.fastest_makespan_s, relax.cheapest_makespan_s
    tangents: list[Tangent] = []
    for T in (lo, hi) if hi > lo else (lo,):
        got = relax.solve(T)
        if got is not None:
            tangents.append(got[0])
    solves = len(tangents)
    stack = [(0, 1)] if len(tangents) == 2 else []
    while stack and solves < max_solves:
        if time_limit is not None and time.perf_counter() - tick > time_limit:
            break
        a, b = stack.pop()
        ta, tb = tangents[a], tangents[b]
        if ta.slope == tb.slope:
            continue
        x = (tb.offset - ta.offset) / (ta.slope - tb.slope)
        if not (ta.at_s < x < tb.at_s):
            continue
        below = max(ta(x), tb(x))
        got = relax.solve(x)
        solves += 1
        if got is None:
            continue
        tx = got[0]
        scale = abs(tx.lp_value + pbs * x) + 1e-12
        if tx(x) - below <= rtol * scale:
            continue
        tangents.append(tx)
        k = len(tangents) - 1
        stack += [(a, k), (k, b)]
    tangents.sort(key=lambda tg: tg.at_s)
    return BoundCurve(tuple(tangents), lo, hi, pbs, solves, runtime_s=time.perf_counter() - tick)


def curve_or_none(instance: PemInstance, time_limit: float | None = None) -> BoundCurve | None:
    """:func:`bound_curve`, or ``None`` when its first LPs ran out of ``time_limit``."""
    try:
        return bound_curve(instance, time_limit=time_limit)
    except LpTimeLimit:
        return None


def certify_frontier(
    curve: BoundCurve, points: tuple[FrontierPoint, ...]
) -> tuple[tuple[FrontierPoint, ...], dict[str, float | None]]:
    """Give every frontier point the curve's bound at its makespan, and gap statistics.

    A point's energy is counted at its own makespan ``T``; any plan finishing by
    ``T`` uses at least ``curve.energy_bound(T)`` there, so that is its proven bound.
    """
    out = tuple(dataclasses.replace(p, bound=curve.energy_bound(p.makespan_s)) for p in points)
    gaps = [g for g in (gap(p.objective, p.bound) for p in out) if g is not None]
    stats = {
        "frontier_gap_max": max(gaps) if gaps else None,
        "frontier_gap_median": float(np.median(gaps)) if gaps else None,
        "bound_curve_lp_solves": curve.lp_solves,
        "bound_curve_runtime_s": curve.runtime_s,
    }
    return out, stats


def relaxation_bound(instance: PemInstance, deadline_s: float | None = ...) -> float | None:  # type: ignore[assignment]
    """Energy lower bound at one deadline (the instance's own by default).

    Without a deadline the bound is over all iteration times: the minimum over
    ``T`` of ``L(T) + P_b S T``, attained at a tangent point of the curve.
    """
    if deadline_s is ...:
        deadline_s = instance.deadline_s
    relax = HullRelaxation(instance)
    if deadline_s is not None:
        T = accepted_makespan(deadline_s)
        got = relax.solve(T)
        if got is None:
            return None
        return got[0](max(T, relax.fastest_makespan_s)) + (
            instance.p_blocking_w * instance.num_stages * deadline_s
        )
    curve = bound_curve(instance, relaxation=relax)
    return least_energy_bound(curve)[1]


def upper_envelope(offsets: np.ndarray, slopes: np.ndarray) -> np.ndarray:
    """Indices of the lines ``offset + slope T`` that form their maximum, by increasing slope.

    Sorting by slope (then offset) and keeping a stack gives the envelope in
    O(k log k). Of lines with equal slopes only the highest can be on it (one of
    them when they coincide). A line that touches the envelope at one point only
    (three lines through one point) is dropped: the crossing of its neighbours is
    that point.
    """
    stack: list[int] = []
    for k in np.lexsort((offsets, slopes)):
        if stack and slopes[stack[-1]] == slopes[k]:
            stack.pop()  # sorted by offset within a slope: line k is at least as high
        while len(stack) >= 2 and _crossing(offsets, slopes, stack[-2], stack[-1]) >= (
            _crossing(offsets, slopes, stack[-1], k)
        ):
            stack.pop()
        stack.append(int(k))
    return np.array(stack, dtype=int)


def _crossing(offsets: np.ndarray, slopes: np.ndarray, a: int, b: int) -> float:
    # Python floats, as the tangents hold them: bit for bit the crossing of the two tangents
    # (and a crossing too far out to represent is inf, outside every range, not a warning).
    oa, ob, sa, sb = float(offsets[a]), float(offsets[b]), float(slopes[a]), float(slopes[b])
    return (ob - oa) / (sa - sb)


def curve_breakpoints(curve: BoundCurve) -> list[float]:
    """Where the convex, piecewise linear energy bound can take its minimum.

    ``max_k tangent_k(T) + P_b S T`` bends only where the tangents' upper envelope
    bends (two tangents cross *on* the envelope), so its minimum over ``T`` lies at
    such a crossing or at an end of the range: O(k) points (:func:`upper_envelope`),
    not every pairwise crossing.
    """
    lo, hi = curve.fastest_makespan_s, curve.cheapest_makespan_s
    offsets, slopes = curve.lines
    env = upper_envelope(offsets, slopes)
    points = {lo, hi}
    for a, b in itertools.pairwise(env):
        x = _crossing(offsets, slopes, int(a), int(b))
        if lo <= x <= hi:
            points.add(x)
    return sorted(points)


def least_energy_bound(curve: BoundCurve) -> tuple[float, float]:
    """The ``T`` minimising the curve's energy bound (Eq. PEM-R7), and that minimum.

    Evaluated at :func:`curve_breakpoints`; ties go to the smallest ``T``. In exact
    arithmetic that is the minimum over all pairwise crossings too: every crossing
    at the minimum lies in the minimising interval, whose left end is an envelope
    breakpoint or the fastest makespan. Tangents through the same point cross there
    at values that differ by rounding only, so the crossings of the tangents that
    are active at the minimum (within rounding) are evaluated as well: the minimum
    is then the one of all pairwise crossings bit for bit. Only on a piece of slope
    exactly ``-P_b S`` (a flat minimum, where every point is a tie of exact arithmetic)
    can the pairwise minimum lie elsewhere in the flat piece, decided by rounding;
    the bound is the same up to rounding there and ``T`` is the piece's left end.
    """
    points = np.array(curve_breakpoints(curve))
    values = curve.makespan_bounds(points)
    best = int(np.lexsort((points, values))[0])
    points = np.concatenate([points, _active_crossings(curve, float(points[best]))])
    values = np.concatenate([values, curve.makespan_bounds(points[len(values) :])])
    best = int(np.lexsort((points, values))[0])
    return float(points[best]), float(values[best])


def _active_crossings(curve: BoundCurve, T: float) -> np.ndarray:
    """Pairwise crossings in the range of the tangents within rounding of the maximum at ``T``."""
    offsets, slopes = curve.lines
    at = offsets + slopes * min(T, curve.cheapest_makespan_s)
    scale = float(np.max(np.abs(offsets) + np.abs(slopes) * T))
    active = np.flatnonzero(at >= at.max() - 64 * np.finfo(float).eps * scale)
    lo, hi = curve.fastest_makespan_s, curve.cheapest_makespan_s
    out = []
    for i, a in enumerate(active):
        for b in active[i + 1 :]:
            if slopes[a] != slopes[b]:
                x = _crossing(offsets, slopes, int(a), int(b))
                if lo <= x <= hi:
                    out.append(x)
    return np.array(out, dtype=float)
