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
    def levels(self) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per depth level: nodes, and their in-edges as (pred, position-in-level) arrays."""
        depth = [0] * self.n
        for v in self.order:
            depth[v] = max((depth[p] + 1 for p in self.preds[v]), default=0)
        depth_arr = np.asarray(depth)
        out = []
        for lev in range(int(depth_arr.max()) + 1 if self.n else 0):
            nodes = np.flatnonzero(depth_arr == lev)
            pos = {int(v): k for k, v in enumerate(nodes)}
            pt, ph = [], []
            for v in nodes:
                for p in self.preds[int(v)]:
                    pt.append(p)
                    ph.append(pos[int(v)])
            out.append((nodes, np.asarray(pt, dtype=np.int64), np.asarray(ph, dtype=np.int64)))
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

    def makespans(self, times: np.ndarray) -> np.ndarray:
        """Makespan of each row of ``times`` (points x computations), level by level."""
        P = times.shape[0]
        finish = np.zeros_like(times)
        for nodes, pt, ph in self.levels:
            start = np.zeros((P, len(nodes)))
            if len(pt):
                # max over in-edges, scattered onto the level's nodes
                np.maximum.at(start, (slice(None), ph), finish[:, pt])
            finish[:, nodes] = start + times[:, nodes]
        return finish.max(axis=1) if self.n else np.zeros(P)
