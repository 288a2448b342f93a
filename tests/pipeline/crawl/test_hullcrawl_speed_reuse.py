"""The shortcuts of the exact crawl's plan fitting give the values of the plain recurrences.

``pipeline/crawl/hullpath.py`` and ``pipeline/crawl/clockfit.py`` reuse earliest starts between
the clock passes, sum event steps in place, group computations by table and write
hull vertex times in place (issue 17). Each is checked here against the straightforward
computation it replaces, value for value.
"""

import numpy as np
import pytest

from energyopt.pipeline import random_dag_instance, synthetic_instance
from energyopt.pipeline.crawl.clockfit import ClockFitter
from energyopt.pipeline.crawl.hullpath import hull_path
from energyopt.pipeline.dag import CompactDag
from tests.pipeline.crawl import crawl_reference as ref

INSTANCES = [
    synthetic_instance(3, 4, 5, seed=1),
    random_dag_instance(15, 4, seed=3),
    random_dag_instance(24, 5, seed=7, edge_probability=0.15),
]


@pytest.mark.parametrize("inst", INSTANCES)
def test_relax_with_known_starts_matches_recomputed(inst):
    dag = CompactDag(inst)
    fitter = ClockFitter(inst, dag)
    rng = np.random.default_rng(0)
    pos = ref.random_positions(fitter, rng, 9)
    t = ref.times_of(fitter, pos)
    es = ref.plain_starts(dag, t)
    T = (es + t).max(axis=0) * rng.uniform(1.0, 1.3, 9)
    fresh = ref.relax(fitter, pos.copy(), T, passes=3)
    known = ref.relax(fitter, pos.copy(), T, passes=3, t=t.copy(), es=es)
    np.testing.assert_array_equal(fresh, known)
    assert np.any(fresh != pos), "the relaxation should move some clock for this test to bite"


@pytest.mark.parametrize("inst", INSTANCES)
def test_event_durations_match_step_by_step_sums(inst):
    path = hull_path(inst)
    k1 = len(path.L)
    got = ref.event_durations(path, 0, k1, path.d0)
    want = [path.d0.copy()]
    for k in range(k1 - 1):
        want.append(want[-1] + int(path.delta[k]) * path.rate[k].astype(np.int64))
    np.testing.assert_array_equal(got, np.asarray(want))
    assert got.dtype == np.int64
    # From a later event, and a single row when the range holds one event.
    np.testing.assert_array_equal(ref.event_durations(path, k1 - 1, k1, want[-1]), [want[-1]])


@pytest.mark.parametrize("inst", INSTANCES)
def test_exact_seconds_puts_vertex_times_back(inst):
    path = hull_path(inst)
    dq = ref.event_durations(path, 0, len(path.L), path.d0).T
    dq = np.concatenate([dq, dq + 1], axis=1)  # vertices and points just past them
    got = ref.exact_seconds(path, dq)
    h = path.hulls
    for v in range(dq.shape[0]):
        q, exact = h.q[h.table_of[v]], h.exact[h.table_of[v]]
        for j in range(dq.shape[1]):
            hit = np.flatnonzero(q == dq[v, j])
            want = exact[hit[0]] if len(hit) else dq[v, j] * path.quantum_s
            assert got[v, j] == want
