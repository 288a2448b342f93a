"""A plan from the convex-hull relaxation: round each duration down, then descend on slack.

The relaxation (:mod:`energyopt.pipeline.relaxation.hull`) gives a duration ``d_i`` per
computation that meets the deadline. Choosing for each computation its cheapest
option no slower than ``d_i`` keeps every path at most as long, so the rounded plan
meets the deadline too; only computations whose ``d_i`` fell between two hull
vertices pay more than the relaxation. Greedy slack descent then slows down
computations that the rounding left with slack. Not a method of any paper: it is
the incumbent that the relaxation bound is compared with, and a MIP start.
"""

from __future__ import annotations

import time

import numpy as np

from energyopt.pipeline.instance import PemInstance


class OptionArrays:
    """Option times and effective energies of every computation, padded to one width."""

    def __init__(self, instance: PemInstance) -> None:
        n = instance.num_computations
        width = max(len(t) for t in instance.option_times) if n else 1
        self.times = np.full((n, width), np.inf)
        self.eff = np.full((n, width), np.inf)
        for i in range(n):
            t = instance.option_times[i]
            self.times[i, : len(t)] = t
            self.eff[i, : len(t)] = instance.effective_energy(i)
        self.preds = instance.predecessors
        self.succs = instance.successors
        self.order = [int(v) for v in instance.topological_order]
        self.rows = np.arange(n)

    def round_down(self, durations: np.ndarray, tol: float) -> np.ndarray:
        """Per computation, the cheapest option no slower than ``durations + tol``."""
        fits = self.times <= durations[:, None] + tol
        # The fastest option always fits in a feasible relaxed plan; keep it as a fallback.
        fastest = np.argmin(self.times, axis=1)
        fits[self.rows, fastest] = True
        cost = np.where(fits, self.eff, np.inf)
        return np.argmin(cost, axis=1)

    def windows(self, choice: np.ndarray, deadline_s: float) -> tuple[np.ndarray, np.ndarray]:
        """Earliest start and latest finish of every computation under ``deadline_s``."""
        t = self.times[self.rows, choice].tolist()
        es = [0.0] * len(t)
        for v in self.order:
            p = self.preds[v]
            if p:
                es[v] = max(es[j] + t[j] for j in p)
        lf = [float(deadline_s)] * len(t)
        for v in reversed(self.order):
            s = self.succs[v]
            if s:
                lf[v] = min(lf[j] - t[j] for j in s)
        return np.asarray(es), np.asarray(lf)


def slack_descent_from(
    arrays: OptionArrays,
    choice: np.ndarray,
    deadline_s: float,
    time_limit: float | None = None,
    max_moves: int = 1_000_000,
) -> np.ndarray:
    """Repeatedly apply the option change with the largest saving that fits its slack.

    Each move keeps the plan within ``deadline_s``: the new time fits between the
    computation's earliest start and latest finish.
    """
    tick = time.perf_counter()
    choice = np.array(choice, dtype=np.int64)
    tol = 0.0  # moves keep the makespan within T itself, inside the evaluator's tolerance
    for _ in range(max_moves):
        if time_limit is not None and time.perf_counter() - tick > time_limit:
            break
        es, lf = arrays.windows(choice, deadline_s)
        room = lf - es + tol
        cur = arrays.eff[arrays.rows, choice]
        saving = np.where(arrays.times <= room[:, None], cur[:, None] - arrays.eff, -np.inf)
        flat = int(np.argmax(saving))
        i, k = divmod(flat, saving.shape[1])
        if not saving[i, k] > 1e-12 * max(1.0, abs(cur[i])):
            break
        choice[i] = k
    return choice


def rounded_plan(
    instance: PemInstance,
    durations: np.ndarray,
    deadline_s: float,
    time_limit: float | None = None,
    arrays: OptionArrays | None = None,
) -> tuple[int, ...] | None:
    """Round the relaxation's ``durations`` down and improve; ``None`` if it misses the deadline."""
    arrays = arrays if arrays is not None else OptionArrays(instance)
    d = np.asarray(durations, dtype=float)
    # The LP's durations meet T only up to its tolerance: if rounding them down
    # misses T, round strictly below them, and as a last resort start from the
    # fastest options (feasible whenever anything is).
    tol = 1e-9 * max(deadline_s, 1e-300)
    for choice in (arrays.round_down(d, tol), arrays.round_down(d, -tol), None):
        if choice is None:
            choice = np.argmin(np.where(np.isfinite(arrays.times), arrays.times, np.inf), axis=1)
        es, _ = arrays.windows(choice, deadline_s)
        finish = es + arrays.times[arrays.rows, choice]
        if finish.max(initial=0.0) <= deadline_s * (1 + 1e-12):
            choice = slack_descent_from(arrays, choice, deadline_s, time_limit)
            return tuple(int(k) for k in choice)
    return None
