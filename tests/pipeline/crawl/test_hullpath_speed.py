"""The event loop's shortcuts give the values of the plain computations they replace.

``pipeline/crawl/hullpath.py`` keeps the last critical set when it still solves the
critical recursion (no tail longest path), keeps one flow network while the
critical set and tight precedences stay (capacities rewritten, zero ones
included), merges a start whose only arc in is one tight precedence into that
end (node terms netted), refreshes the flow bounds of moved computations only, and
``pipeline/dag.py``'s ``IntegerTimer`` writes its Dijkstra weights in place
(issue 17). Each is checked here at every event against the straightforward
computation, value for value.
"""

import numpy as np
import pytest

from energyopt.pipeline import random_dag_instance, synthetic_instance
from energyopt.pipeline.crawl import hullpath
from energyopt.pipeline.crawl.maxflow import _FINITE_TOTAL, _INF_INT
from energyopt.pipeline.dag import CompactDag, IntegerTimer

INSTANCES = [
    synthetic_instance(3, 4, 5, seed=1),
    synthetic_instance(4, 6, 6, seed=2),
    random_dag_instance(15, 4, seed=3),
    random_dag_instance(24, 5, seed=7, edge_probability=0.15),
    random_dag_instance(30, 4, seed=11),
]


def _plain_min_cut(graph, crit, es, ef, L, lower, upper):
    """The cut of one step on a network built afresh, zero capacities left out."""
    from ortools.graph.python import max_flow

    et, eh = graph.et, graph.eh
    cidx = np.flatnonzero(crit)
    dmask = crit[et] & crit[eh] & (ef[et] == es[eh])
    src, snk = cidx[es[cidx] == 0], cidx[ef[cidx] == L]
    lo, up = lower[cidx], upper[cidx]
    finite = np.isfinite(up)
    span = np.where(finite, up - lo, 0.0)
    total = float(2.0 * lo.sum() + span.sum())
    scale = _FINITE_TOTAL / total if total > 0 else 1.0
    lo_i = np.rint(lo * scale).astype(np.int64)
    span_i = np.rint(span * scale).astype(np.int64)
    span_i[~finite] = _INF_INT
    arcs = [(2 * i, 2 * i + 1, c) for i, c in zip(cidx, span_i) if c > 0]
    arcs += [(2 * a + 1, 2 * b, _INF_INT) for a, b in zip(et[dmask], eh[dmask])]
    arcs += [(graph.s, 2 * i, _INF_INT) for i in src] + [
        (2 * i + 1, graph.t, _INF_INT) for i in snk
    ]
    for i, c in zip(cidx, lo_i):
        if c > 0:
            arcs += [(graph.s, 2 * i + 1, c), (2 * i, graph.t, c)]
    g = max_flow.SimpleMaxFlow()
    for a, b, c in arcs:
        g.add_arc_with_capacity(int(a), int(b), int(c))
    assert g.solve(graph.s, graph.t) == g.OPTIMAL
    if g.optimal_flow() >= _INF_INT:
        return None
    side = np.zeros(2 * graph.n + 2, dtype=bool)
    side[list(g.get_source_side_min_cut())] = True
    return side


def _plain_bounds(hulls, d):
    """Piece, on-vertex flag and flow bounds of every computation from ``d`` alone."""
    tk = hulls.table_of
    seg = hulls.segment(np.arange(len(d)), d)
    at = d == hulls.vt[tk, seg]
    lower = hulls.slope[tk, seg]
    return seg, at, lower, np.where(at, hulls.left[tk, seg], lower)


@pytest.mark.parametrize("inst", INSTANCES)
def test_every_step_matches_the_plain_computations(inst, monkeypatch):
    seen = {"kept": 0, "tails": 0, "reused": 0, "built": 0, "merged": 0}
    real_critical, real_move = hullpath._critical, hullpath._State.move
    real_cut, real_build = hullpath._CutGraph.min_cut, hullpath._CutGraph._build

    def critical(timer, et, eh, es, ef, d, L, known):
        crit, tight = real_critical(timer, et, eh, es, ef, d, L, known)
        np.testing.assert_array_equal(crit, es + timer.tail(d) == L)
        np.testing.assert_array_equal(tight, ef[et] == es[eh])
        seen["kept" if crit is known else "tails"] += 1
        return crit, tight

    def min_cut(self, crit, dmask, L, es, ef, state):
        built = seen["built"]
        side = real_cut(self, crit, dmask, L, es, ef, state)
        seen["reused"] += seen["built"] == built
        want = _plain_min_cut(self, crit, es, ef, L, state.lower, state.upper)
        assert (side is None) == (want is None)
        if side is not None:
            np.testing.assert_array_equal(side, want)
        return side

    def build(self, key):
        seen["built"] += 1
        real_build(self, key)
        seen["merged"] += int((self._label != np.arange(len(self._label))).sum())

    def move(self, delta, r, moved):
        real_move(self, delta, r, moved)
        for got, want in zip(
            (self.seg, self.at, self.lower, self.upper), _plain_bounds(self.hulls, self.d)
        ):
            np.testing.assert_array_equal(got, want)

    monkeypatch.setattr(hullpath, "_critical", critical)
    monkeypatch.setattr(hullpath._CutGraph, "min_cut", min_cut)
    monkeypatch.setattr(hullpath._CutGraph, "_build", build)
    monkeypatch.setattr(hullpath._State, "move", move)
    hullpath.hull_path(inst)
    # Both sides of each shortcut ran, so the comparisons above bite.
    assert min(seen.values()) > 0, seen


def test_critical_falls_back_when_the_known_set_is_wrong():
    inst = random_dag_instance(30, 4, seed=11)
    hulls = hullpath._Hulls(inst, hullpath.QUANTUM_S)
    dag = CompactDag(inst)
    timer = IntegerTimer(dag, hulls.d_max)
    d = hulls.d_min + (hulls.d_max - hulls.d_min) // 3
    es = timer.earliest_start(d)
    ef = es + d
    L = int(ef.max())
    plain = es + timer.tail(d) == L
    et, eh = dag.edge_tail, dag.edge_head
    crit, _ = hullpath._critical(timer, et, eh, es, ef, d, L, plain)
    assert crit is plain
    for flip in (np.flatnonzero(plain)[0], np.flatnonzero(~plain)[0]):
        wrong = plain.copy()
        wrong[flip] = not wrong[flip]
        crit, _ = hullpath._critical(timer, et, eh, es, ef, d, L, wrong)
        assert crit is not wrong
        np.testing.assert_array_equal(crit, plain)


@pytest.mark.parametrize("inst", INSTANCES[2:])
def test_integer_timer_matches_the_node_by_node_recurrences(inst):
    dag = CompactDag(inst)
    rng = np.random.default_rng(5)
    d_max = rng.integers(1, 50, size=dag.n)
    timer = IntegerTimer(dag, d_max)
    # Integers and floats, one after the other: nothing of a call may leak into the next.
    for d in (d_max, rng.integers(0, 50, size=dag.n) % (d_max + 1), d_max * rng.random(dag.n)):
        es, span = dag.earliest_start(d.tolist())
        tail = span - (np.asarray(dag.latest_finish(d.tolist(), span)) - d)
        if d.dtype.kind == "i":  # exact in floats
            np.testing.assert_array_equal(timer.earliest_start(d), es)
            np.testing.assert_array_equal(timer.tail(d), tail)
        else:
            np.testing.assert_allclose(timer.earliest_start(d), es, rtol=0, atol=1e-9)
            np.testing.assert_allclose(timer.tail(d), tail, rtol=0, atol=1e-9)
    with pytest.raises(ValueError, match="exceeds the bound"):
        timer.earliest_start(d_max + 1)
