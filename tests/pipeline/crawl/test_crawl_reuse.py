"""The grid crawl's reuse between steps (issue 17): same cuts, same Critical DAGs, same plans."""

import functools
import importlib
import math

import numpy as np
import pytest

from energyopt.pipeline import random_dag_instance, synthetic_instance
from energyopt.pipeline.crawl.maxflow import OneFlowCutter, min_cut_one_flow
from energyopt.pipeline.dag import CompactDag, IntegerTimer

crawl_module = importlib.import_module("energyopt.pipeline.crawl.grid")
step_module = importlib.import_module("energyopt.pipeline.crawl.step")
finish_module = importlib.import_module("energyopt.pipeline.crawl.finish")


def _random_arcs(rng, n):
    pairs = sorted(
        {(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.5}
        | {(0, 1), (n - 2, n - 1)}
    )
    return np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])


def _random_bounds(rng, m):
    upper = rng.uniform(1, 10, m)
    upper[rng.random(m) < 0.2] = math.inf
    lower = np.where(rng.random(m) < 0.4, rng.uniform(0, 6, m), 0.0)
    lower = np.minimum(lower, np.where(np.isfinite(upper), upper, lower))
    free = rng.random(m) < 0.3
    lower[free], upper[free] = 0.0, math.inf
    return lower, upper


@pytest.mark.parametrize("seed", range(8))
def test_one_flow_cutter_gives_min_cut_one_flows_cut_on_every_call(seed):
    rng = np.random.default_rng(700 + seed)
    n = 7
    cutter = OneFlowCutter()
    calls = 0
    for _ in range(4):  # new arcs now and then, new bounds on every call
        tail, head = _random_arcs(rng, n)
        for _ in range(6):
            lower, upper = _random_bounds(rng, len(tail))
            got = cutter(n, tail, head, lower, upper, 0, n - 1)
            want = min_cut_one_flow(n, tail, head, lower, upper, 0, n - 1)
            calls += 1
            assert got.status == want.status
            if want.status == "ok":
                np.testing.assert_array_equal(got.source_side, want.source_side)
    # Networks are kept between calls, and rebuilt at least once per new set of arcs.
    assert 4 <= cutter.builds < calls


def test_one_flow_cutter_adds_an_arc_when_a_node_term_appears():
    # 0 -> 1 -> 2 with (0, inf) arcs: no node terms, so the first network has none.
    tail, head = np.array([0, 1]), np.array([1, 2])
    cutter = OneFlowCutter()
    free = cutter(3, tail, head, np.zeros(2), np.full(2, math.inf), 0, 2)
    assert free.status == "infinite" and cutter.builds == 1
    # A lower bound on an arc that had none gives its ends node terms: arcs are added.
    lower, upper = np.array([0.0, 2.0]), np.array([math.inf, 5.0])
    got = cutter(3, tail, head, lower, upper, 0, 2)
    want = min_cut_one_flow(3, tail, head, lower, upper, 0, 2)
    assert cutter.builds == 1
    np.testing.assert_array_equal(got.source_side, want.source_side)
    assert got.source_side.tolist() == [True, True, False]


def _chain(m, rng):
    # Computation arcs 2j -> 2j + 1 with bounds, joined by (0, inf) arcs 2j + 1 -> 2j + 2,
    # from the source 2m to the sink 2m + 1: every start merges into the end before it.
    tail = np.concatenate([2 * np.arange(m), 2 * np.arange(m - 1) + 1, [2 * m, 2 * m - 1]])
    head = np.concatenate([2 * np.arange(m) + 1, 2 * np.arange(1, m), [0, 2 * m + 1]])
    upper = np.concatenate([rng.uniform(1, 10, m), np.full(m + 1, math.inf)])
    lower = np.concatenate([rng.uniform(0, 1, m) * upper[:m], np.zeros(m + 1)])
    lower[:m][rng.random(m) < 0.3] = 0.0
    # Some at their fastest (no upper bound), never free: a free one would merge too.
    upper[:m][(rng.random(m) < 0.1) & (lower[:m] > 0)] = math.inf
    return tail, head, lower, upper


@pytest.mark.parametrize("seed", range(6))
def test_one_flow_cutter_merges_chains_to_the_same_cut(seed):
    rng = np.random.default_rng(900 + seed)
    m = 12
    cutter = OneFlowCutter()
    for _ in range(5):
        tail, head, lower, upper = _chain(m, rng)
        got = cutter(2 * m + 2, tail, head, lower, upper, 2 * m, 2 * m + 1)
        want = min_cut_one_flow(2 * m + 2, tail, head, lower, upper, 2 * m, 2 * m + 1)
        assert got.status == want.status
        if want.status == "ok":
            np.testing.assert_array_equal(got.source_side, want.source_side)
    # The starts (and the first one into the source) merged: about half the nodes.
    assert cutter.builds == 1 and len(cutter._merged) == m


def test_one_flow_cutter_leaves_a_cycle_of_free_arcs_unmerged():
    # 1 -> 2 -> 3 -> 1 each the only arc into its head: pointer jumping never settles.
    tail = np.array([0, 1, 2, 3, 0, 2])
    head = np.array([4, 2, 3, 1, 5, 5])
    lower = np.array([0.0, 0.0, 0.0, 0.0, 1.0, 0.5])
    upper = np.array([3.0, math.inf, math.inf, math.inf, 2.0, 4.0])
    cutter = OneFlowCutter()
    got = cutter(6, tail, head, lower, upper, 0, 5)
    want = min_cut_one_flow(6, tail, head, lower, upper, 0, 5)
    assert len(cutter._merged) == 0 and got.status == want.status
    np.testing.assert_array_equal(got.source_side, want.source_side)


def _fresh_capacity_dag(model, timer, graph, d):
    es = timer.earliest_start(d)
    ef = es + d
    return step_module._critical_dag(model, timer, graph, d, es, ef, int(ef.max()))


@pytest.mark.parametrize("seed", range(6))
def test_critical_dag_from_the_last_steps_equals_a_fresh_one(seed):
    inst = random_dag_instance(14, 4, seed=seed)
    model = step_module._Model(inst, 1e-3, "hull", "down")
    dag = CompactDag(inst)
    timer = IntegerTimer(dag, model.d_max)
    graph = step_module._EdgeCentricDag(dag)
    rng = np.random.default_rng(seed)
    previous = None
    for _ in range(30):
        d = rng.integers(model.d_min, model.d_max + 1)
        if rng.random() < 0.5:  # a guessed critical set, mostly wrong, must be rejected
            guess = rng.random(dag.n) < 0.5
            previous = step_module._CapacityDag(*([np.zeros(0)] * 5), guess, None)
        es = timer.earliest_start(d)
        ef = es + d
        L = int(ef.max())
        got = step_module._critical_dag(model, timer, graph, d, es, ef, L, previous)
        want = _fresh_capacity_dag(model, timer, graph, d)
        for name in ("crit", "tail", "head", "lower", "upper", "crit_mask", "key"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        previous = got


@pytest.mark.parametrize(
    "inst, cost_model",
    [
        (synthetic_instance(4, 8, 10, seed=1), "exponential"),
        (synthetic_instance(3, 6, 6, seed=2), "hull"),
        (random_dag_instance(20, 4, seed=5), "exponential"),
    ],
)
def test_crawl_with_reuse_visits_the_plans_of_the_step_by_step_crawl(monkeypatch, inst, cost_model):
    got = crawl_module.crawl(inst, cost_model=cost_model, progress=False)
    # The crawl as it was: a new flow network and a fresh Critical DAG at every step.
    fresh = functools.partial(min_cut_one_flow, check=False)
    monkeypatch.setattr(crawl_module, "_cut_function", lambda flow: fresh)
    step = step_module._critical_dag
    monkeypatch.setattr(
        crawl_module,
        "_critical_dag",
        lambda model, timer, graph, d, es, ef, L, previous=None: step(
            model, timer, graph, d, es, ef, L
        ),
    )
    want = crawl_module.crawl(inst, cost_model=cost_model, progress=False)
    for name in ("choices", "planned_time_s", "planned_energy_j", "time_s", "energy_j"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    drop = ("runtime_s",)
    assert {k: v for k, v in got.stats.items() if k not in drop} == {
        k: v for k, v in want.stats.items() if k not in drop
    }
