"""Compact arrays of a PEM DAG for the heuristics: longest paths, batch makespans.

The evaluator (:mod:`energyopt.pipeline.evaluator`) is the reference; these are
the same recurrences on plain lists and numpy arrays, fast enough to run once
per crawl step, and checked against the evaluator in the tests.
"""

from __future__ import annotations

import functools

import numpy as np

from energyopt.pipeline.instance import PemInstance


class CompactDag:
    """Topological order, predecessor lists and levels of a PEM instance's DAG."""

    def __init__(self, instance: PemInstance) -> None:
        self.n = instance.num_computations
        self.order = [int(v) for v in instance.topological_order]
        self.preds = [list(p) for p in instance.predecessors]
        self.succs = [list(s) for s in instance.successors]
        self.edge_tail = np.asarray([a for a, _ in instance.edges], dtype=np.int64)
        self.edge_head = np.asarray([b for _, b in instance.edges], dtype=np.int64)

    @functools.cached_property
    def levels(self) -> list[tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]]:
        """Per depth level: its nodes and, per predecessor slot j, (positions, preds)."""
        depth = [0] * self.n
        for v in self.order:
            depth[v] = max((depth[p] + 1 for p in self.preds[v]), default=0)
        depth_arr = np.asarray(depth)
        out = []
        for lev in range(int(depth_arr.max()) + 1 if self.n else 0):
            nodes = np.flatnonzero(depth_arr == lev)
            slots = []
            for j in range(max(len(self.preds[int(v)]) for v in nodes)):
                pos = [k for k, v in enumerate(nodes) if len(self.preds[int(v)]) > j]
                prd = [self.preds[int(nodes[k])][j] for k in pos]
                slots.append((np.asarray(pos, dtype=np.int64), np.asarray(prd, dtype=np.int64)))
            out.append((nodes, slots))
        return out

    def earliest_start(self, d: list) -> tuple[list, object]:
        """Earliest starts and makespan for durations ``d`` (list of numbers)."""
        es = [0] * self.n
        preds = self.preds
        span = 0
        for v in self.order:
            m = 0
            for p in preds[v]:
                x = es[p] + d[p]
                if x > m:
                    m = x
            es[v] = m
            m += d[v]
            if m > span:
                span = m
        return es, span

    def latest_finish(self, d: list, makespan: object) -> list:
        """Latest finishes that keep the makespan."""
        lf = [makespan] * self.n
        succs = self.succs
        for v in reversed(self.order):
            m = makespan
            for s in succs[v]:
                x = lf[s] - d[s]
                if x < m:
                    m = x
            lf[v] = m
        return lf

    @functools.cached_property
    def _level_preds(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per depth level: its nodes and their predecessors, padded with ``n``."""
        out = []
        for nodes, slots in self.levels:
            prd = np.full((len(nodes), max(len(slots), 1)), self.n, dtype=np.int64)
            for j, (pos, p) in enumerate(slots):
                prd[pos, j] = p
            out.append((nodes, prd))
        return out

    def makespans(self, times: np.ndarray, chunk: int = 512) -> np.ndarray:
        """Makespan of each row of ``times`` (points x computations), level by level.

        A start is the largest finish among its predecessors and 0 (the padding
        reads a row of zeros); the maximum is exact, so the order of the
        predecessors does not change a bit of it.
        """
        P = times.shape[0]
        out = np.zeros(P)
        for lo in range(0, P, chunk):
            # Computations x points: each level then reads and writes whole rows.
            tt = np.ascontiguousarray(times[lo : lo + chunk].T)
            finish = np.zeros((self.n + 1, tt.shape[1]))
            for nodes, prd in self._level_preds:
                finish[nodes] = finish[prd].max(axis=1) + tt[nodes]
            out[lo : lo + chunk] = finish[: self.n].max(axis=0) if self.n else 0.0
        return out


class IntegerTimer:
    """Earliest starts and tail lengths for integer durations, by Dijkstra with potentials.

    For durations ``d <= d_max`` the earliest starts ``pi`` under ``d_max`` are a
    feasible potential: on every edge ``u -> v``, ``pi[v] - pi[u] - d[u] >= 0``. With
    these non-negative reduced lengths, the shortest distance from a virtual
    source is ``pi[v] - es[v]``, so SciPy's compiled Dijkstra gives the longest
    paths of the DAG. The same trick on the reversed graph, with the tail lengths
    under ``d_max`` as potential, gives for each computation the longest path from
    its start to the end. Integer durations keep every value exact in floats.
    """

    def __init__(self, dag: CompactDag, d_max: np.ndarray) -> None:
        from scipy.sparse import csr_array

        n = dag.n
        self.n = n
        d_max = np.asarray(d_max)
        es_max, _ = dag.earliest_start(d_max.tolist())
        q = [0] * n  # longest path from the start of v to the end, under d_max
        dm = d_max.tolist()
        for v in reversed(dag.order):
            q[v] = dm[v] + max((q[s] for s in dag.succs[v]), default=0)
        self.pi = np.asarray(es_max, dtype=float)
        self.q = np.asarray(q, dtype=float)
        pi_ext = np.append(self.pi, 0.0)
        q_ext = np.append(self.q, 0.0)
        pairs = np.unique(np.stack([dag.edge_tail, dag.edge_head], axis=1), axis=0)
        pairs = pairs.reshape(-1, 2)
        roots = np.asarray([v for v in range(n) if not dag.preds[v]], dtype=np.int64)
        leaves = np.asarray([v for v in range(n) if not dag.succs[v]], dtype=np.int64)

        def graph(tail: np.ndarray, head: np.ndarray):
            order = np.lexsort((head, tail))
            tail, head = tail[order], head[order]
            g = csr_array((np.ones(len(tail)), (tail, head)), shape=(n + 1, n + 1))
            g.sort_indices()
            return g, tail, head

        self.fg, self.ft, self.fh = graph(
            np.concatenate([pairs[:, 0], np.full(len(roots), n)]),
            np.concatenate([pairs[:, 1], roots]),
        )
        self.fconst = pi_ext[self.fh] - pi_ext[self.ft]
        self.rg, self.rt, self.rh = graph(
            np.concatenate([pairs[:, 1], np.full(len(leaves), n)]),
            np.concatenate([pairs[:, 0], leaves]),
        )
        self.rconst = q_ext[self.rh] - q_ext[self.rt]
        # Durations plus a zero for the virtual node, rewritten by every call.
        self._d_ext = np.zeros(n + 1)

    def _nonneg(self, w: np.ndarray) -> np.ndarray:
        # Float durations equal to their bound can round to -1e-17; anything
        # larger means a duration above its bound, which the potentials forbid.
        low = float(w.min(initial=0.0))
        if low < 0:
            if low < -1e-9 * (1.0 + float(self.pi.max(initial=0.0))):
                raise ValueError("IntegerTimer: a duration exceeds the bound it was built for")
            np.maximum(w, 0.0, out=w)
        return w

    def _weights(self, g, const: np.ndarray, ends: np.ndarray, d: np.ndarray):
        """``g`` with its reduced lengths ``const - d[ends]`` written in place (``d[n] = 0``)."""
        buf = self._d_ext
        buf[: self.n] = d
        np.subtract(const, buf.take(ends), out=g.data)
        self._nonneg(g.data)
        return g

    def earliest_start(self, d: np.ndarray) -> np.ndarray:
        """Earliest start of every computation (float array of integers)."""
        from scipy.sparse.csgraph import dijkstra

        g = self._weights(self.fg, self.fconst, self.ft, d)
        dist = dijkstra(g, directed=True, indices=self.n)
        return self.pi - dist[: self.n]

    def critical(
        self,
        d: np.ndarray,
        es: np.ndarray,
        ef: np.ndarray,
        L: int,
        tail: np.ndarray,
        head: np.ndarray,
        tight: np.ndarray,
        known: np.ndarray | None,
    ) -> np.ndarray:
        """The critical computations (``es + tail == L``): ``known`` itself when it holds.

        A computation is critical exactly when it ends at ``L`` or has a tight
        precedence (``tight``, a mask over the precedences ``tail -> head``) to a
        critical one: its tail is its duration plus the longest tail after it, and a
        successor starts no earlier than it ends and ends no later than ``L``. On a
        DAG this recursion has one solution, so when ``known`` (the last step's set,
        which most steps keep) solves it, it is the critical set, found without the
        longest-path run for the tails.
        """
        if known is not None:
            solves = ef == L
            solves[tail[tight & known[head]]] = True
            if np.array_equal(solves, known):
                return known
        return es + self.tail(d) == L

    def tail(self, d: np.ndarray) -> np.ndarray:
        """Longest path from the start of every computation to the end (its own included)."""
        from scipy.sparse.csgraph import dijkstra

        g = self._weights(self.rg, self.rconst, self.rh, d)
        dist = dijkstra(g, directed=True, indices=self.n)
        return self.q - dist[: self.n]


def critical_key(
    crit: np.ndarray, es: np.ndarray, ef: np.ndarray, L: int, tight: np.ndarray
) -> np.ndarray:
    """One mask of what decides a step's flow network: the critical computations, those
    of them starting at 0 and ending at the makespan ``L``, and ``tight`` (the tight
    precedences between critical computations). Equal keys, equal networks."""
    return np.concatenate([crit, crit & (es == 0), crit & (ef == L), tight])
