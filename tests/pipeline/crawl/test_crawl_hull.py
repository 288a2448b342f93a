"""The crawl on the exact convex hull (``perseus`` default, ``pipeline/crawl/hullcrawl.py``).

Checked against the independent evaluator, the proven relaxation bound
(``relaxation.bound_curve``), brute force on small DAGs, and on profiles whose
clocks are not monotone in time (a lower clock can be faster, as in measured
profiles).
"""

import dataclasses

import numpy as np
import pytest

import energyopt
from energyopt.pipeline import (
    PemSolution,
    evaluate,
    fastest_choice,
    random_dag_instance,
    synthetic_instance,
)
from energyopt.pipeline.crawl.hullcrawl import exact_crawl
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.relaxation.hull import bound_curve
from tests.timing import assert_within, measured


def shuffled_clocks(inst, seed, noise=0.1):
    """``inst`` with every table's times and energies perturbed by up to ``noise`` (simulated).

    Neighbouring clocks then swap order in time or energy: the table is no longer
    monotone in MHz, as measured profiles are not.
    """
    rng = np.random.default_rng(seed)
    tables = {}
    for name, tb in inst.tables.items():
        k = len(tb.time_s)
        t = np.asarray(tb.time_s) * (1 + rng.uniform(-noise, noise, k))
        e = np.asarray(tb.energy_j) * (1 + rng.uniform(-noise, noise, k))
        tables[name] = OptionTable(tb.sm_clock_mhz, tuple(map(float, t)), tuple(map(float, e)))
    return dataclasses.replace(inst, tables=tables)


def non_monotone(inst_times):
    """True when some table has a lower clock strictly faster than a higher one."""
    for tb in inst_times.tables.values():
        order = np.argsort(tb.sm_clock_mhz)[::-1]
        if np.any(np.diff(np.asarray(tb.time_s)[order]) < 0):
            return True
    return False


CASES = [
    ("synthetic 3x4 k6", lambda: synthetic_instance(3, 4, 6, seed=5)),
    ("non-monotone 3x4 k6", lambda: shuffled_clocks(synthetic_instance(3, 4, 6, seed=5), 1)),
    ("non-monotone 4x6 k8", lambda: shuffled_clocks(synthetic_instance(4, 6, 8, seed=2), 3)),
    ("random dag", lambda: random_dag_instance(9, 4, seed=11, deadline_fraction=None)),
]


@pytest.fixture(scope="module", params=CASES, ids=[c[0] for c in CASES])
def crawled(request):
    inst = request.param[1]()
    return inst, energyopt.solve(inst, "perseus")


def test_generated_profiles_are_non_monotone():
    assert non_monotone(CASES[1][1]()) and non_monotone(CASES[2][1]())


def test_every_point_is_the_evaluators(crawled):
    inst, res = crawled
    assert res.has_solution or inst.deadline_s is None
    for p in res.frontier:
        ev = evaluate(inst, p.solution, None)
        assert ev.iteration_time_s == p.makespan_s
        assert ev.energy_j == p.objective


def test_frontier_is_monotone_and_reaches_t_min(crawled):
    inst, res = crawled
    T = np.array([p.makespan_s for p in res.frontier])
    C = np.array([p.objective for p in res.frontier]) - inst.p_blocking_w * inst.num_stages * T
    assert np.all(np.diff(T) > 0)
    assert np.all(np.diff(C) < 0)  # slower points cost strictly less effective energy
    t_fast = evaluate(inst, fastest_choice(inst), None).iteration_time_s
    assert T[0] == pytest.approx(t_fast, rel=1e-12)


def test_never_below_the_proven_bound(crawled):
    inst, res = crawled
    curve = bound_curve(inst)
    for p in res.frontier:
        assert p.objective >= curve.energy_bound(p.makespan_s) * (1 - 1e-9)


@pytest.mark.parametrize("seed", range(6))
def test_never_below_brute_force_on_non_monotone_dags(seed):
    inst = shuffled_clocks(random_dag_instance(7, 4, seed=seed, deadline_fraction=0.5), seed, 0.2)
    res = energyopt.solve(inst, "perseus")
    for p in res.frontier:
        _, best = brute_force(inst, p.makespan_s)
        assert p.objective >= best * (1 - 1e-9)


@pytest.mark.parametrize("cost_model", ["hull", "both"])
def test_time_limit_returns_incumbent_within_a_second(cost_model):
    inst = synthetic_instance(8, 64, 10, seed=1)
    with measured() as used:
        res = energyopt.solve(
            inst, "perseus", time_limit=0.3, progress=False, cost_model=cost_model
        )
    assert_within(used, 0.3, "perseus")
    assert res.termination.value == "time_limit"
    assert res.message == "time_limit=0.3"  # the caller's limit, not one crawl's share
    assert res.frontier  # the points found so far, measured
    first = res.frontier[-1]  # the cheapest schedule is the crawl's start
    assert evaluate(inst, first.solution, None).energy_j == first.objective


def test_event_crawl_samples_every_tau_between_events():
    inst = synthetic_instance(3, 4, 6, seed=5)
    trace = exact_crawl(inst, tau_s=1e-3)
    k = trace.stats["samples"]  # the samples first, then the gap-filling plans
    planned = trace.planned_time_s[:k]
    assert trace.stats["events"] >= 1 and np.all(np.isfinite(planned))
    assert len(trace.choices) == k + trace.stats["gap_plans"]
    # Between the cheapest and the fastest planned makespans no gap exceeds tau.
    gaps = np.diff(np.unique(planned))
    assert gaps.max() <= 1e-3 * (1 + 1e-9)
    # Every plan meets its planned makespan with measured times (the fitter's promise).
    assert np.all(trace.time_s <= trace.planned_time_s * (1 + 1e-9) + 1e-12)


@pytest.mark.parametrize("schedule", ["1f1b", "gpipe"])
def test_printed_crawl_ends_on_the_all_fastest_plan(schedule):
    # Regression: with planned durations rounded up to tau the printed crawl stopped a
    # rounding above T_min, so a deadline of exactly T_min had no plan ("infeasible").
    inst = synthetic_instance(4, 8, 10, seed=0, schedule=schedule)
    t_min = evaluate(inst, fastest_choice(inst), None).iteration_time_s
    res = energyopt.solve(inst.with_deadline(t_min), "perseus-printed")
    assert res.has_solution
    assert res.frontier[0].makespan_s == pytest.approx(t_min, rel=1e-12)
    assert res.objective == evaluate(inst, PemSolution(res.solution.choice), None).energy_j


def test_stopped_before_any_event_returns_the_cheapest_plan():
    # Regression: a crawl stopped before its first event (cold start under a short time
    # limit) returned no plan at all; its starting plan is always a frontier point.
    inst = synthetic_instance(3, 4, 6, seed=5)
    res = energyopt.solve(inst, "perseus", max_steps=0)
    assert res.termination.value == "iteration_limit"
    assert len(res.frontier) >= 1
    cheapest = energyopt.solve(inst, "perseus").frontier[-1]
    assert res.frontier[-1].objective == pytest.approx(cheapest.objective, rel=1e-12)


def test_a_crawl_stopped_early_still_meets_the_deadline():
    # 8x48 at its fastest makespan: a 0.05 s crawl cannot reach T_min, but the
    # all-fastest plan (added when a crawl stops early) meets the deadline exactly.
    from pathlib import Path

    import energyopt

    root = Path(__file__).resolve().parents[3] / "instances/pipeline/paper"
    inst = energyopt.load_instance(root / "002-synthetic-1f1b-8x48-k10-seed0.json")
    for cost_model in ("hull", "both"):
        r = energyopt.solve(inst, "perseus", time_limit=0.05, cost_model=cost_model)
        assert r.termination.value == "time_limit"
        assert r.objective is not None, cost_model
        assert min(p.makespan_s for p in r.frontier) <= inst.deadline_s * (1 + 1e-9)
