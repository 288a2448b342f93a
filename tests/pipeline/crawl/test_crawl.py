"""Perseus frontier crawl: max flow with lower bounds, cost models, hand and brute-force checks."""

import importlib
import itertools
import math

import numpy as np
import pytest

import energyopt
from energyopt.core.instance import InstanceError
from energyopt.pipeline import (
    OptionTable,
    PemInstance,
    PemSolution,
    evaluate,
    random_dag_instance,
    straggler_lookup,
    synthetic_instance,
)
from energyopt.pipeline.crawl.costmodels import lower_convex_hull, tabulate
from energyopt.pipeline.crawl.maxflow import MinCut, min_cut_with_lower_bounds
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.paretoset import batch_evaluate, pareto_indices
from energyopt.pipeline.schedules import Computation

crawl_module = importlib.import_module("energyopt.pipeline.crawl.grid")
crawl = crawl_module.crawl


# -- maximum flow with lower bounds (Algorithm 3) ------------------------------------------
def _cut_value(side, tail, head, lower, upper):
    fwd = side[tail] & ~side[head]
    bwd = ~side[tail] & side[head]
    return float(upper[fwd].sum() - lower[bwd].sum())


def _brute_min_cut(n, tail, head, lower, upper, s, t):
    best = math.inf
    others = [v for v in range(n) if v not in (s, t)]
    for bits in itertools.product([False, True], repeat=len(others)):
        side = np.zeros(n, dtype=bool)
        side[s] = True
        side[others] = bits
        best = min(best, _cut_value(side, tail, head, lower, upper))
    return best


def _feasible_flow_exists(n, tail, head, lower, upper, s, t):
    # Brute force over the LP would be heavy; use scipy's linprog on the circulation.
    from scipy.optimize import linprog

    m = len(tail)
    A = np.zeros((n, m + 1))
    for k in range(m):
        A[tail[k], k] -= 1
        A[head[k], k] += 1
    A[s, m] += 1  # t -> s return edge
    A[t, m] -= 1
    ub = [(lo, None if math.isinf(u) else u) for lo, u in zip(lower, upper)] + [(0, None)]
    res = linprog(np.zeros(m + 1), A_eq=A, b_eq=np.zeros(n), bounds=ub, method="highs")
    return res.status == 0


def test_min_cut_hand_example():
    # s=0 -> 1 -> t=3 and s -> 2 -> t; edge 1->2 too.
    # Capacities (l, u): 0->1 (0, 4), 1->3 (0, 1), 0->2 (0, 2), 2->3 (0, 5), 1->2 (0, 3).
    # Cuts: {0}: 4 + 2 = 6; {0,1}: 1 + 2 + 3 = 6; {0,2}: 4 + 5 = 9; {0,1,2}: 1 + 5 = 6.
    # Max flow: 0-1-3 carries 1, 0-2-3 carries 2, 0-1-2-3 carries 3 -> 6. Min cut value 6.
    tail = np.array([0, 1, 0, 2, 1])
    head = np.array([1, 3, 2, 3, 2])
    lower = np.zeros(5)
    upper = np.array([4.0, 1.0, 2.0, 5.0, 3.0])
    cut = min_cut_with_lower_bounds(4, tail, head, lower, upper, 0, 3)
    assert cut.status == "ok"
    assert _cut_value(cut.source_side, tail, head, lower, upper) == pytest.approx(6.0)


def test_min_cut_lower_bound_makes_backward_edge_pay():
    # s=0 -> 1 (0, 10), 1 -> t=3 (0, 10), 0 -> 2 (0, 10), 2 -> 3 (0, 10), 2 -> 1 (l=4, u=inf).
    # Cut {0, 1}: forward 1->3 and 0->2 = 20, backward 2->1 gives -4 -> 16.
    # Cut {0}: 0->1 + 0->2 = 20. Cut {0, 2}: 0->1 + 2->3 + 2->1 (inf) = inf.
    # Cut {0, 1, 2}: 1->3 + 2->3 = 20. Minimum: 16 with edge 2->1 crossing backward.
    tail = np.array([0, 1, 0, 2, 2])
    head = np.array([1, 3, 2, 3, 1])
    lower = np.array([0, 0, 0, 0, 4.0])
    upper = np.array([10, 10, 10, 10, math.inf])
    cut = min_cut_with_lower_bounds(4, tail, head, lower, upper, 0, 3)
    assert cut.status == "ok"
    assert _cut_value(cut.source_side, tail, head, lower, upper) == pytest.approx(16.0)


def test_min_cut_infeasible_and_infinite():
    # A chain s -> a (u = 1) -> t with l = 5 on a -> t: no flow meets the lower bound.
    inf_case = min_cut_with_lower_bounds(
        3, np.array([0, 1]), np.array([1, 2]), np.array([0, 5.0]), np.array([1.0, 9.0]), 0, 2
    )
    assert inf_case.status == "infeasible"
    # A chain of infinite edges: every cut is infinite.
    chain = min_cut_with_lower_bounds(
        3, np.array([0, 1]), np.array([1, 2]), np.zeros(2), np.array([math.inf, math.inf]), 0, 2
    )
    assert chain.status == "infinite"
    with pytest.raises(ValueError, match="0 <= lower <= upper"):
        min_cut_with_lower_bounds(2, [0], [1], [2.0], [1.0], 0, 1)


@pytest.mark.parametrize("seed", range(12))
def test_min_cut_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 6
    pairs = [(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.6]
    pairs += [(0, 1), (n - 2, n - 1)]
    pairs = sorted(set(pairs))
    tail = np.array([a for a, _ in pairs])
    head = np.array([b for _, b in pairs])
    upper = rng.uniform(1, 10, len(pairs))
    upper[rng.random(len(pairs)) < 0.2] = math.inf
    lower = np.where(rng.random(len(pairs)) < 0.4, rng.uniform(0, 1, len(pairs)), 0.0)
    lower = np.minimum(lower, np.where(np.isfinite(upper), upper, lower))
    cut = min_cut_with_lower_bounds(n, tail, head, lower, upper, 0, n - 1)
    best = _brute_min_cut(n, tail, head, lower, upper, 0, n - 1)
    feasible = _feasible_flow_exists(n, tail, head, lower, upper, 0, n - 1)
    if not feasible:
        assert cut.status == "infeasible"
    elif math.isinf(best):
        assert cut.status == "infinite"
    else:
        assert cut.status == "ok"
        value = _cut_value(cut.source_side, tail, head, lower, upper)
        assert value == pytest.approx(best, rel=1e-9, abs=1e-9)


# -- cost models ----------------------------------------------------------------------------
def hull_table():
    # (t, e) with P_b = 0: (1, 10), (2, 6), (2.5, 5.8), (3, 5), (4, 4.8); clocks 1400..1000.
    # Chord (2, 6) -> (3, 5) is 5.5 at t = 2.5 < 5.8, so (2.5, 5.8) is Pareto but not on the hull.
    return OptionTable(
        (1400, 1300, 1200, 1100, 1000), (1.0, 2.0, 2.5, 3.0, 4.0), (10.0, 6.0, 5.8, 5.0, 4.8)
    )


def test_lower_convex_hull_and_tabulation():
    t = np.array([1.0, 2.0, 2.5, 3.0, 4.0])
    e = np.array([10.0, 6.0, 5.8, 5.0, 4.8])
    assert list(lower_convex_hull(t, e)) == [0, 1, 3, 4]
    tab = tabulate(hull_table(), 0.0, 0.5, "hull")
    # Grid: d = 2..8 units of 0.5 s, i.e. t = 1, 1.5, ..., 4.
    assert (tab.d_min, tab.d_max) == (2, 8)
    # Hull values: 10, 8 (mid of 10 and 6), 6, 5.5, 5, 4.9, 4.8.
    np.testing.assert_allclose(tab.cost_j, [10, 8, 6, 5.5, 5, 4.9, 4.8])
    # Slowest option that meets the plan: t=1.5 -> option 0 (1 s); t=2.5 -> option 2 (2.5 s).
    assert list(tab.option_at) == [0, 0, 1, 2, 3, 3, 4]
    # Eq. 8 ingredients: e+ = e(d-1) - e(d) and e- = e(d) - e(d+1).
    np.testing.assert_allclose(tab.speedup_cost()[1:], [2, 2, 0.5, 0.5, 0.1, 0.1])
    np.testing.assert_allclose(tab.slowdown_saving()[:-1], [2, 2, 0.5, 0.5, 0.1, 0.1])


def test_exponential_fit_recovers_exponential_data():
    t = np.linspace(1.0, 2.0, 8)
    e = 30.0 * np.exp(-2.0 * t) + 4.0
    table = OptionTable(tuple(range(1400, 1400 - 8 * 50, -50)), tuple(t), tuple(e))
    tab = tabulate(table, 0.0, 0.01, "exponential")
    a, b, c = tab.fit
    assert (a, b, c) == pytest.approx((30.0, -2.0, 4.0), rel=1e-4)


# -- the crawl on hand-checked instances ----------------------------------------------------
def series_instance(p_blocking_w=1.0):
    """A (stage 0) -> B (stage 1), S = 2.

    A: (1 s, 10 J) at 1400 MHz or (2 s, 4 J) at 1000 MHz;
    B: (1 s, 10 J) at 1400 MHz or (2 s, 6 J) at 1000 MHz.
    """
    tables = {
        "A": OptionTable((1400, 1000), (1.0, 2.0), (10.0, 4.0)),
        "B": OptionTable((1400, 1000), (1.0, 2.0), (10.0, 6.0)),
    }
    comps = (Computation(0, "compute", 0, "A"), Computation(1, "compute", 0, "B"))
    return PemInstance(2, comps, ((0, 1),), tables, p_blocking_w)


def test_crawl_series_by_hand():
    inst = series_instance()
    # Effective energies (P_b = 1 W): A 9 J fast / 2 J slow (7 J per second saved by the slow
    # clock), B 9 J / 4 J (5 J/s). Start: both slow, T = 4 s, C = 6 J, E = C + P_b S T = 14 J.
    # Step 1: speeding B costs 5 < 7: T = 3, C = 2 + 9 = 11, E = 11 + 6 = 17 J.
    # Step 2: only A left: T = 2, C = 18, E = 18 + 4 = 22 J.
    res = energyopt.solve(inst, "perseus", tau_s=1.0)
    assert [p.solution.choice for p in res.frontier] == [(0, 0), (1, 0), (1, 1)]
    assert [(p.makespan_s, p.objective) for p in res.frontier] == [
        pytest.approx((2.0, 22.0)),
        pytest.approx((3.0, 17.0)),
        pytest.approx((4.0, 14.0)),
    ]
    # No deadline: the least-energy plan (14 J at 4 s).
    assert res.objective == pytest.approx(14.0)
    # Deadline 3.5 s: best plan is (A slow, B fast), C = 11, E = 11 + 1 * 2 * 3.5 = 18 J.
    res = energyopt.solve(inst.with_deadline(3.5), "perseus", tau_s=1.0)
    assert res.objective == pytest.approx(18.0)
    assert res.solution.choice == (1, 0)


def test_straggler_lookup_by_hand():
    inst = series_instance()
    res = energyopt.solve(inst, "perseus", tau_s=1.0)
    # T* = 4 s (least C = 6 J). T' = 3.5: T_opt = 3.5, plan (A slow, B fast), 11 + 2 * 3.5 = 18 J.
    plan = straggler_lookup(inst, res, 3.5)
    assert (plan.t_star_s, plan.t_opt_s) == (4.0, 3.5)
    assert plan.solution.choice == (1, 0)
    assert plan.evaluation.energy_j == pytest.approx(18.0)
    # T' = 5 > T*: run the least-energy plan (T_opt = 4) and block until 5: 6 + 2 * 5 = 16 J.
    plan = straggler_lookup(inst, res, 5.0)
    assert plan.t_opt_s == 4.0 and plan.evaluation.energy_j == pytest.approx(16.0)
    # T' below the fastest time: this pipeline is the straggler; fastest plan, 22 J at 2 s.
    plan = straggler_lookup(inst, res.frontier, 1.5)
    assert plan.solution.choice == (0, 0) and plan.evaluation.energy_j == pytest.approx(22.0)
    with pytest.raises(InstanceError, match="t_straggler_s"):
        straggler_lookup(inst, res, -1.0)


def _exact_energy(inst, deadline):
    _, energy = brute_force(inst, deadline)
    return energy


@pytest.mark.parametrize("seed", range(10))
def test_crawl_never_below_exact_on_random_dags(seed):
    inst = random_dag_instance(7, 3, seed=seed, deadline_fraction=0.5)
    for method in ("perseus", "perseus-exponential"):
        res = energyopt.solve(inst, method)
        assert res.has_solution
        exact = _exact_energy(inst, inst.deadline_s)
        assert res.objective >= exact * (1 - 1e-9)
        for p in res.frontier:
            assert p.objective >= _exact_energy(inst, p.makespan_s) * (1 - 1e-9)


def test_crawl_close_to_exact_frontier_on_synthetic_pipeline():
    # 1F1B 2 x 2, 4 clocks: 8 computations, 4^8 = 65536 plans for brute force.
    inst = synthetic_instance(2, 2, 4, seed=3)
    res = energyopt.solve(inst, "perseus")
    gaps = []
    for p in res.frontier:
        exact = _exact_energy(inst, p.makespan_s)
        assert p.objective >= exact * (1 - 1e-9)
        gaps.append(p.objective / exact - 1)
    # Measured: every point within 1 % of the optimum at its own iteration time.
    assert max(gaps) < 0.01


def test_batch_evaluation_matches_evaluator():
    inst = synthetic_instance(3, 4, 5, seed=2)
    trace = crawl(inst, progress=False, rounding="up")
    T, E = batch_evaluate(inst, trace.choices, CompactDag(inst))
    np.testing.assert_allclose(T, trace.time_s)
    for k in range(0, len(trace.choices), 7):
        ev = evaluate(inst, PemSolution(tuple(int(x) for x in trace.choices[k])), None)
        assert ev.iteration_time_s == pytest.approx(T[k], rel=1e-12)
        assert ev.energy_j == pytest.approx(E[k], rel=1e-12)
    # Rounding up: measured times never exceed the planned ones.
    planned = trace.planned_time_s
    ok = np.isfinite(planned)
    assert np.all(trace.time_s[ok] <= planned[ok] + 1e-12)


def test_crawl_ends_at_the_fastest_iteration_time():
    inst = synthetic_instance(4, 6, 8, seed=1)
    res = energyopt.solve(inst, "perseus")
    t_fast = evaluate(inst, energyopt.pipeline.fastest_choice(inst), None).iteration_time_s
    assert res.frontier[0].makespan_s == pytest.approx(t_fast, rel=1e-12)
    times = [p.makespan_s for p in res.frontier]
    assert times == sorted(times)
    idx = pareto_indices(times, [p.objective - 80.0 * 4 * p.makespan_s for p in res.frontier])
    assert len(idx) == len(res.frontier)


def test_algorithm3_and_one_flow_give_the_same_frontier():
    inst = synthetic_instance(3, 4, 6, seed=7)
    a = crawl(inst, flow="one", progress=False)
    b = crawl(inst, flow="algorithm3", progress=False)
    np.testing.assert_allclose(np.sort(a.energy_j), np.sort(b.energy_j), rtol=1e-9)


def test_jumps_give_the_same_frontier_as_unit_steps():
    inst = synthetic_instance(3, 5, 4, seed=4)
    a = crawl(inst, jump=True, progress=False)
    b = crawl(inst, jump=False, progress=False)
    np.testing.assert_allclose(np.sort(a.energy_j), np.sort(b.energy_j), rtol=1e-9)


# -- robustness -----------------------------------------------------------------------------
def test_crawl_refuses_malformed_inputs():
    inst = series_instance()
    with pytest.raises(InstanceError, match="tau_s"):
        crawl(inst, tau_s=0.0)
    with pytest.raises(InstanceError, match="tau_s"):
        crawl(inst, tau_s=float("nan"))
    with pytest.raises(ValueError, match="cost_model"):
        crawl(inst, cost_model="cubic")
    with pytest.raises(InstanceError, match="PemInstance"):
        crawl({"family": "pipeline"})
    tables = dict(inst.tables)
    comps = inst.computations
    with pytest.raises(InstanceError, match="cycle"):
        PemInstance(2, comps, ((0, 1), (1, 0)), tables, 1.0)
    with pytest.raises(InstanceError, match="no option table"):
        PemInstance(2, (*comps, Computation(0, "compute", 1, "missing")), ((0, 1),), tables, 1.0)
    with pytest.raises(InstanceError, match=r"time_s\[0\]"):
        PemInstance(
            2, comps, ((0, 1),), {**tables, "A": OptionTable((1400,), (-1.0,), (3.0,))}, 1.0
        )
    zero = {**tables, "A": OptionTable((1400,), (0.0,), (3.0,))}
    with pytest.raises(InstanceError, match="takes 0 s"):
        crawl(PemInstance(2, comps, ((0, 1),), zero, 1.0))


def test_crawl_survives_infeasible_flows(monkeypatch):
    calls = {"n": 0}
    real = crawl_module.min_cut_with_lower_bounds

    def refuse_lower_bounds(n, tail, head, lower, upper, s, t):
        calls["n"] += 1
        if np.asarray(lower).sum() > 0:
            return MinCut("infeasible")
        return real(n, tail, head, lower, upper, s, t)

    monkeypatch.setattr(crawl_module, "min_cut_with_lower_bounds", refuse_lower_bounds)
    inst = synthetic_instance(2, 3, 4, seed=0)
    trace = crawl(inst, progress=False, flow="algorithm3")
    assert trace.stats["infeasible_flow_steps"] > 0
    assert trace.stats["stopped"].startswith("no finite cut")
    assert calls["n"] < 10 * trace.stats["expected_steps"] + 10


def test_progress_bar_and_limits(capsys):
    inst = synthetic_instance(2, 3, 4, seed=0)
    crawl(inst, progress=True)
    assert "perseus crawl" in capsys.readouterr().err
    trace = crawl(inst, max_steps=3, progress=False)
    assert trace.stats["steps"] <= 3 and trace.stats["stopped"] == "max_steps=3"
    res = energyopt.solve(inst, "perseus", max_steps=3)
    assert res.termination.value == "iteration_limit"


@pytest.mark.parametrize("seed", range(12))
def test_one_flow_cut_is_a_minimum_cut(seed):
    from energyopt.pipeline.crawl.maxflow import min_cut_one_flow

    rng = np.random.default_rng(100 + seed)
    n = 6
    pairs = sorted(
        {(a, b) for a in range(n) for b in range(a + 1, n) if rng.random() < 0.6}
        | {(0, 1), (n - 2, n - 1)}
    )
    tail = np.array([a for a, _ in pairs])
    head = np.array([b for _, b in pairs])
    upper = rng.uniform(1, 10, len(pairs))
    upper[rng.random(len(pairs)) < 0.2] = math.inf
    lower = np.where(rng.random(len(pairs)) < 0.5, rng.uniform(0, 6, len(pairs)), 0.0)
    lower = np.minimum(lower, np.where(np.isfinite(upper), upper, lower))
    # Some (0, inf) arcs.
    free = rng.random(len(pairs)) < 0.3
    lower[free], upper[free] = 0.0, math.inf
    cut = min_cut_one_flow(n, tail, head, lower, upper, 0, n - 1)
    best = _brute_min_cut(n, tail, head, lower, upper, 0, n - 1)
    if math.isinf(best):
        assert cut.status == "infinite"
    else:
        # Also when no feasible flow exists (a negative minimum): one flow still finds it.
        assert cut.status == "ok"
        value = _cut_value(cut.source_side, tail, head, lower, upper)
        assert value == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_rounding_down_tabulation():
    # tau = 0.4 s on the hull table: times 1, 2, 2.5, 3, 4 round down to 2, 5, 6, 7, 10 units.
    tab = tabulate(hull_table(), 0.0, 0.4, "hull", rounding="down")
    assert (tab.d_min, tab.d_max) == (2, 10)
    # A plan of 5 units (2.0 s) runs option 1 (2.0 s); 6 units (2.4 s) runs option 2 (2.5 s,
    # rounded to 2.4 s): a measured time may exceed its plan by less than tau.
    assert tab.option_at[5 - 2] == 1 and tab.option_at[6 - 2] == 2
    with pytest.raises(ValueError, match="rounding"):
        tabulate(hull_table(), 0.0, 0.4, "hull", rounding="sideways")


def test_union_of_crawls_is_at_least_as_good_as_each():
    inst = synthetic_instance(3, 5, 6, seed=8)
    both = energyopt.solve(inst, "perseus", cost_model="both", rounding="both", crawl="grid")
    assert len(both.extra["runs"]) == 4
    for cm in ("hull", "exponential"):
        for rd in ("up", "down"):
            one = energyopt.solve(inst, "perseus", cost_model=cm, rounding=rd, crawl="grid")
            for p in one.frontier:
                best = energyopt.pipeline.best_at(inst, both.frontier, p.makespan_s)
                at = best.objective + 80.0 * 3 * (p.makespan_s - best.makespan_s)
                assert at <= p.objective * (1 + 1e-12)
