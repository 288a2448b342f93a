"""Large-neighbourhood search on the PEM MILP: small sub-MILPs around an incumbent.

On paper-size instances (8 stages x 48-96 microbatches, about 10 options per
computation) the relaxation's rounded plan is about 1 % above the hull bound and
HiGHS' full MILP improves it slowly. The search here (formulations/pem.md, Sec. 8)
repeatedly frees the computations of one *neighbourhood* -- those whose start in
the incumbent's earliest-start schedule falls in a window of the iteration, on all
stages or on a band of adjacent stages -- keeps every other computation at its
incumbent option, and solves that sub-MILP (Eqs. PEM-1..5 and PEM-7) with HiGHS,
started from the incumbent. Start times stay free everywhere, so a sub-MILP may
also move fixed computations in time. A plan replaces the incumbent only when the
independent evaluator finds it feasible and cheaper, so the search never gets
worse. The window grows while sub-MILPs are solved to optimality quickly and
shrinks when they hit their own time limit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import time

import highspy
import numpy as np

from energyopt.core.highslp import csc_rows, highs_lp, quiet_highs
from energyopt.core.timelimit import TimeBudget
from energyopt.pipeline.evaluator import evaluate
from energyopt.pipeline.exact.timewindows import time_windows
from energyopt.pipeline.instance import PemInstance

#: Least and largest neighbourhood, as a fraction of the deadline (the window's width).
MIN_WINDOW, MAX_WINDOW = 0.02, 0.6


class SubMilp:
    """The MILP of one instance at its deadline, re-solvable with most options fixed.

    Options are encoded incrementally (Eq. PEM-6): with computation ``i``'s options
    sorted by measured time, fastest first, the binary ``y_ik`` (``k >= 1``) means
    "option ``k`` or a slower one", so fixing an option, or keeping it within
    ``reach`` places, fixes a prefix and a suffix of the ``y_ik``. Times are in units
    of the deadline and energies in units of :func:`energyopt.pipeline.exact.solve.energy_unit`,
    so HiGHS' absolute tolerances are relative ones. Columns: the ``y_ik``, then the
    starts ``s_i``.
    """

    def __init__(self, instance: PemInstance) -> None:
        from energyopt.pipeline.exact.solve import energy_unit

        if instance.deadline_s is None or instance.deadline_s <= 0:
            raise ValueError("the neighbourhood search needs a positive deadline")
        self.instance = instance
        self.T = float(instance.deadline_s)
        self.energy_unit = energy_unit(instance, self.T)
        # Rank options by measured time, never by clock: measured profiles are noisy.
        self.order = [np.argsort(t, kind="stable") for t in instance.option_times]
        self.rank = [np.argsort(o, kind="stable") for o in self.order]
        self.times = [t[o] / self.T for t, o in zip(instance.option_times, self.order)]
        sizes = [len(t) - 1 for t in self.times]
        self.offset = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
        self.num_y = int(self.offset[-1])
        cost, lower, upper = self._columns()
        rows: list[tuple[list[int], list[float], float, float]] = []
        rows += self._nested()
        rows += self._precedence()
        rows += self._deadline()
        matrix = csc_rows([(r[0], r[1]) for r in rows], len(cost))
        row_lower = [r[2] for r in rows]
        row_upper = [r[3] for r in rows]
        self.lp = highs_lp(cost, lower, upper, matrix, row_lower, row_upper, self.num_y)
        self._cost, self._lower, self._upper = cost, lower, upper

    def _y(self, i: int) -> range:
        return range(self.offset[i], self.offset[i + 1])

    def _columns(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Objective (Eq. PEM-5 through PEM-6c) and bounds, with the windows of Eq. PEM-7."""
        inst, n, T = self.instance, self.instance.num_computations, self.T
        windows = time_windows(inst)
        es, tail, tmin = windows.earliest_start, windows.tail, windows.min_time
        cost = np.zeros(self.num_y + n)
        lower = np.zeros(self.num_y + n)
        upper = np.ones(self.num_y + n)
        for i in range(n):
            c = inst.effective_energy(i)[self.order[i]] / self.energy_unit
            cost[self._y(i)] = np.diff(c)
            # PEM-7: an option that cannot fit between its head and tail is never
            # chosen; options are sorted by time, so those are a suffix of the y_ik.
            room = (T - es[i] - tail[i]) / T + 1e-9
            upper[self._y(i)] = (self.times[i][1:] <= room).astype(float)
        lower[self.num_y :] = es / T
        upper[self.num_y :] = np.maximum(es / T, (T - tail - tmin) / T + 1e-9)
        return cost, lower, upper

    def _nested(self) -> list[tuple[list[int], list[float], float, float]]:
        """Eq. PEM-6b: ``y_ik >= y_i,k+1`` (a slower option implies every faster step)."""
        return [
            ([a, b], [1.0, -1.0], 0.0, highspy.kHighsInf)
            for i in range(self.instance.num_computations)
            for a, b in itertools.pairwise(self._y(i))
        ]

    def _duration(self, i: int) -> tuple[list[int], np.ndarray, float]:
        """Eqs. PEM-2, PEM-6c: ``d_i = t_i0 + sum_k (t_ik - t_i,k-1) y_ik``."""
        return list(self._y(i)), np.diff(self.times[i]), float(self.times[i][0])

    def _precedence(self) -> list[tuple[list[int], list[float], float, float]]:
        """Eq. PEM-3: ``s_j - s_i - sum_k (t_ik - t_i,k-1) y_ik >= t_i0`` for every edge."""
        s, rows = self.num_y, []
        for i, j in self.instance.edges:
            ys, dt, t0 = self._duration(i)
            rows.append(([s + j, s + i, *ys], [1.0, -1.0, *(-dt)], t0, highspy.kHighsInf))
        return rows

    def _deadline(self) -> list[tuple[list[int], list[float], float, float]]:
        """Eq. PEM-4: ``s_i + d_i <= T`` (= 1 in the model's units) for every sink."""
        s, rows = self.num_y, []
        for i, succ in enumerate(self.instance.successors):
            if not succ:
                ys, dt, t0 = self._duration(i)
                rows.append(([s + i, *ys], [1.0, *dt], -highspy.kHighsInf, 1.0 - t0))
        return rows

    def solve(
        self,
        choice: tuple[int, ...],
        free: np.ndarray,
        time_limit: float,
        seed: int = 0,
        reach: int | None = None,
    ) -> tuple[tuple[int, ...] | None, bool]:
        """Re-optimise the computations in ``free``; the others keep ``choice``.

        A freed computation may take options within ``reach`` places (in time order)
        of its current one (``None``: any). Returns the sub-MILP's plan (``None`` when
        HiGHS found none) and whether HiGHS proved it optimal for the neighbourhood.
        """
        lower, upper = self._lower.copy(), self._upper.copy()
        ranks = [int(self.rank[i][k]) for i, k in enumerate(choice)]
        for i, r in enumerate(ranks):
            first, end = self.offset[i], self.offset[i + 1]
            lo, hi = (
                (r, r)
                if not free[i]
                else (0, end - first)
                if reach is None
                else (r - reach, r + reach)
            )
            # y_ik (k = 1..) is 1 for k <= rank: ranks lo..hi stay open.
            lower[first : first + max(lo, 0)] = 1.0
            upper[first + max(hi, 0) : end] = 0.0
        self.lp.col_lower_, self.lp.col_upper_ = lower, upper
        h = quiet_highs(self.lp, seed=seed)
        # A fresh solver per sub-MILP: HiGHS' time limit counts from the object's first run.
        h.setOptionValue("time_limit", max(0.01, float(time_limit)))
        # Only plans cheaper than the incumbent matter: HiGHS prunes the rest at once.
        h.setOptionValue("objective_bound", self._objective(ranks) + 1e-9)
        with _quiet_stderr():
            h.run()
        if h.getInfo().primal_solution_status < 2:
            return None, False
        y = np.asarray(h.getSolution().col_value)[: self.num_y]
        plan = tuple(
            int(self.order[i][round(y[self._y(i)].sum())])
            for i in range(self.instance.num_computations)
        )
        return plan, h.getModelStatus() == highspy.HighsModelStatus.kOptimal

    def _objective(self, ranks: list[int]) -> float:
        """The model's objective (Eq. PEM-5 in increments) of the plan with these ranks."""
        cost, first = self._cost, self.offset
        return float(sum(cost[first[i] : first[i] + r].sum() for i, r in enumerate(ranks)))


@contextlib.contextmanager
def _quiet_stderr():
    """Silence file descriptor 2 while HiGHS runs.

    HiGHS 1.12 writes a debugging line ("transformNewIntegerFeasibleSolution") to
    stderr from its MIP solver even with ``output_flag`` off; a search prints it
    dozens of times. The sub-MILP's outcome is read from its status, not its output.
    """
    try:
        saved = os.dup(2)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


@dataclasses.dataclass
class SearchStats:
    """What the search did: sub-MILPs solved, improvements, and the final window."""

    sub_milps: int = 0
    improvements: int = 0
    solved_to_optimality: int = 0
    window: float = 0.0
    reach: int | None = None
    sub_time_limit: float = 0.0


def neighbourhood_search(
    instance: PemInstance,
    start: tuple[int, ...],
    *,
    time_limit: float | None,
    seed: int | None = None,
    window: float = 0.15,
    sub_time_limit: float = 3.0,
    max_idle: int = 60,
    reach: int | None = None,
) -> tuple[tuple[int, ...], SearchStats]:
    """Improve the feasible plan ``start`` of ``instance`` (with a deadline) by sub-MILPs.

    After ``max_idle`` sub-MILPs in a row that did not improve the incumbent, freed
    computations may reach one option further (``reach`` + 1, then any option) and the
    window starts again at ``window``. Once any option is open, such a streak doubles
    the sub-MILPs' time limit if one of them was cut off by it (there was more to
    search), and ends the search if all were solved to optimality (nothing better in
    any neighbourhood drawn). The search also stops at ``time_limit`` seconds, and,
    without one, where the time limit would double.
    """
    stop_at = TimeBudget(time_limit).stop_at
    best, incumbent = tuple(start), evaluate(instance, start)
    stats = SearchStats(window=window, reach=reach, sub_time_limit=sub_time_limit)
    if stop_at is not None and stop_at - time.perf_counter() < 0.05:
        return best, stats  # no time for a sub-MILP: building the model would overrun
    model = SubMilp(instance)
    rng = np.random.default_rng(seed)
    stages = np.array([c.stage for c in instance.computations])
    idle, cut_off = 0, False
    widest = max(len(t) for t in instance.option_times)
    while True:
        if idle >= max_idle:
            if not _escalate(stats, widest, cut_off and stop_at is not None):
                break
            stats.window, idle, cut_off = window, 0, False
        left = None if stop_at is None else stop_at - time.perf_counter()
        if left is not None and left < 0.05:
            break
        free = _neighbourhood(rng, instance, incumbent.start_s, stages, stats.window)
        limit = stats.sub_time_limit if left is None else min(stats.sub_time_limit, left)
        plan, proven = model.solve(
            best, free, limit, seed=int(rng.integers(2**31 - 1)), reach=stats.reach
        )
        stats.sub_milps += 1
        stats.solved_to_optimality += proven
        cut_off |= not proven
        # Solved quickly: a larger neighbourhood is affordable; cut off: a smaller one.
        stats.window = float(
            np.clip(stats.window * (1.1 if proven else 0.8), MIN_WINDOW, MAX_WINDOW)
        )
        found = None if plan is None else evaluate(instance, plan)
        if (
            found is not None
            and found.feasible
            and found.energy_j < incumbent.energy_j * (1 - 1e-12)
        ):
            best, incumbent = plan, found
            stats.improvements += 1
            idle, cut_off = 0, False
        else:
            idle += 1
    return best, stats


def _escalate(stats: SearchStats, widest: int, more_time: bool) -> bool:
    """Widen the search after a streak without improvement; ``False``: stop searching.

    First ``reach`` grows (to ``None``, any option, once it covers the widest table);
    then, while ``more_time`` (a sub-MILP of the streak was cut off, and the search has
    a time limit), the sub-MILPs' time limit doubles.
    """
    if stats.reach is not None:
        stats.reach = None if stats.reach + 1 >= widest - 1 else stats.reach + 1
        return True
    if more_time:
        stats.sub_time_limit *= 2.0
        return True
    return False


def _neighbourhood(
    rng: np.random.Generator,
    instance: PemInstance,
    start: np.ndarray,
    stages: np.ndarray,
    window: float,
) -> np.ndarray:
    """Computations starting in a random window of the iteration, on all stages or on a band.

    Every other draw is a band of about half the stages with a window twice as wide,
    so both neighbourhoods free about as many computations. ``start``: the incumbent's
    earliest starts.
    """
    T = float(instance.deadline_s)
    band = rng.random() < 0.5 and instance.num_stages > 1
    width = window * T * (2.0 if band else 1.0)
    a = rng.uniform(-width / 2, T - width / 2)
    free = (start >= a) & (start < a + width)
    if band:
        size = max(1, instance.num_stages // 2)
        first = int(rng.integers(0, instance.num_stages - size + 1))
        free &= (stages >= first) & (stages < first + size)
    return free
