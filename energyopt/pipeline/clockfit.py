"""Planned durations to clocks, for many plans at once.

The hull LP (:mod:`~energyopt.pipeline.hullpath`) gives every computation a
planned duration that usually falls between two measured options. The fitter
turns durations into clocks: each computation runs the slowest Pareto option
that fits in its window (the earliest start given its predecessors' clocks, and
the latest finish under the planned durations), in topological order, then a
second pass gives leftover slack back in reverse order. Every plan meets its
sample time with *measured* times, and the rounding carries the slack of one
computation to the next, so a chain of equal computations mixes two neighbouring
clocks where the LP sits between them. Options are ranked by measured time,
never by clock.
"""

from __future__ import annotations

import numpy as np

from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.instance import PemInstance


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
