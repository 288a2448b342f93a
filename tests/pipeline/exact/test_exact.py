"""Exact PEM methods: hand-checked optima, and MILP = CP-SAT = brute force on random DAGs."""

import pytest

import energyopt
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.pipeline import OptionTable, PemInstance, random_dag_instance, synthetic_instance
from energyopt.pipeline.evaluator import deadline_between
from energyopt.pipeline.schedules import Computation

EXACT = [("highs", {}), ("highs", {"formulation": "assignment"}), ("cpsat", {}), ("bruteforce", {})]


@pytest.mark.parametrize("method,opts", EXACT)
@pytest.mark.parametrize(
    "deadline,energy,choice",
    [
        # T = 3: q must be fast (1 + 3 > 3); p slow fits (1 + 2 = 3): 5 + 2 + 15 + 10*3 = 52 J.
        (3.0, 52.0, (0, 1, 0)),
        # T = 4: both slow: 5 + 2 - 7 + 10*4 = 40 J (p fast, q slow: 5 + 15 - 7 + 40 = 53 J).
        (4.0, 40.0, (0, 1, 1)),
        # T = 2: only both fast fit: 5 + 15 + 15 + 10*2 = 55 J.
        (2.0, 55.0, (0, 0, 0)),
        # No deadline: the best over T is 40 J at T = 4 (52 J at 3, 55 J at 2, 53 J at 4).
        (None, 40.0, (0, 1, 1)),
    ],
)
def test_hand_checked_fork(method, opts, deadline, energy, choice, fork):
    r = energyopt.solve(fork(deadline), method, **opts)
    assert r.termination is TerminationReason.OPTIMAL, r.message
    assert r.status is SolutionStatus.OPTIMAL
    assert r.objective == pytest.approx(energy)
    assert r.bound == pytest.approx(energy, rel=1e-6)
    assert r.solution.choice == choice


@pytest.mark.parametrize("method,opts", EXACT)
def test_infeasible_deadline(method, opts, fork):
    # The fastest makespan is 2 s, so 1.5 s cannot be met.
    r = energyopt.solve(fork(1.5), method, **opts)
    assert r.termination is TerminationReason.INFEASIBLE
    assert r.status is SolutionStatus.NONE and r.objective is None


def test_chain_hand_checked():
    # One stage, a -> b, P_b = 10 W, T = 3 s. a: (1 s, 50 J) or (2 s, 30 J); b: (1 s, 40 J) or
    # (3 s, 20 J). Feasible: (fast, fast) 90 J + 10 W * (3 - 2) s = 100 J; (slow, fast) 70 J +
    # 10 * (3 - 3) = 70 J; b slow makes the makespan >= 4 s. Optimum 70 J.
    tables = {
        "a": OptionTable((1000, 500), (1.0, 2.0), (50.0, 30.0)),
        "b": OptionTable((1000, 500), (1.0, 3.0), (40.0, 20.0)),
    }
    inst = PemInstance(
        1,
        (Computation(0, "forward", 0, "a"), Computation(0, "backward", 0, "b")),
        ((0, 1),),
        tables,
        10.0,
        3.0,
    )
    for method, opts in EXACT:
        r = energyopt.solve(inst, method, **opts)
        assert r.objective == pytest.approx(70.0) and r.solution.choice == (1, 0)


@pytest.mark.parametrize("seed", range(50))
def test_random_dags_milp_equals_cpsat_equals_bruteforce(seed):
    # Up to 12 computations with up to 3 options; times on a 1 ms grid and energies on a
    # 1 mJ grid, so CP-SAT's scaling (0.1 ms, 1 mJ) is exact and must agree to the joule.
    n = 4 + seed % 9
    inst = random_dag_instance(
        n,
        3,
        seed=seed,
        num_stages=1 + seed % 3,
        deadline_fraction=[0.0, 0.3, 0.5, 0.8, 1.0][seed % 5],
    )
    ref = energyopt.solve(inst, "bruteforce")
    assert ref.termination is TerminationReason.OPTIMAL
    for method, opts in EXACT[:3]:
        r = energyopt.solve(inst, method, **opts)
        assert r.status is SolutionStatus.OPTIMAL, (method, opts, r.message)
        assert r.objective == pytest.approx(ref.objective, rel=1e-9, abs=1e-6), (method, opts)
        assert r.bound <= ref.objective + 1e-6


def test_cpsat_off_grid_is_honest():
    # Synthetic times are not on the 0.1 ms grid: CP-SAT's solution is feasible, its bound
    # is below the true optimum (HiGHS), and it does not claim optimality unless the gap closes.
    inst = synthetic_instance(2, 3, 5, seed=4)
    inst = inst.with_deadline(deadline_between(inst, 0.5))
    opt = energyopt.solve(inst, "highs")
    cp = energyopt.solve(inst, "cpsat", resolution_s=1e-3)
    assert cp.has_solution
    assert cp.objective >= opt.objective - 1e-6
    assert cp.bound <= opt.objective + 1e-6
    if cp.gap:
        assert cp.status is SolutionStatus.FEASIBLE


def test_time_limit_is_a_result():
    inst = synthetic_instance(4, 8, 10, seed=1)
    inst = inst.with_deadline(deadline_between(inst, 0.5))
    r = energyopt.solve(inst, "cpsat", time_limit=0.2, bound_model=False)
    # A time limit is a result with a status, never an error or an exception.
    assert r.termination is not TerminationReason.ERROR, r.message
    assert r.has_solution == (r.objective is not None)
    if r.has_solution and r.bound is not None:
        assert r.bound <= r.objective + 1e-6


def test_bruteforce_refuses_large_instances():
    r = energyopt.solve(synthetic_instance(4, 8, 10, seed=1), "bruteforce")
    assert r.termination is TerminationReason.ERROR and "combinations" in r.message


def test_exact_frontier_fork(fork):
    # Breakpoints: T = 4 -> 40 J (minimal energy), T = 3 -> 52 J, T = 2 -> 55 J.
    r = energyopt.solve(fork(None), "exact-frontier")
    pts = [(p.makespan_s, p.objective) for p in r.frontier]
    assert pts == [
        pytest.approx((2.0, 55.0)),
        pytest.approx((3.0, 52.0)),
        pytest.approx((4.0, 40.0)),
    ]
    assert r.objective == pytest.approx(40.0)


@pytest.mark.parametrize("seed", range(3))
def test_exact_frontier_matches_bruteforce(seed):
    inst = random_dag_instance(6, 3, seed=100 + seed, deadline_fraction=None)
    r = energyopt.solve(inst, "exact-frontier")
    assert r.termination is TerminationReason.OPTIMAL
    for p in r.frontier:
        ref = energyopt.solve(inst.with_deadline(p.makespan_s), "bruteforce")
        assert p.objective == pytest.approx(ref.objective, abs=1e-6)


def test_energy_at_uses_blocking_power_after_a_point(fork):
    from energyopt.pipeline.exact.frontier import energy_at

    r = energyopt.solve(fork(None), "exact-frontier")
    # Between breakpoints the energy grows with P_b S = 10 W: at 2.5 s the 2 s point
    # (55 J) waits 0.5 s more: 55 + 10 * 0.5 = 60 J.
    assert energy_at(fork(None), r.frontier, 2.5) == pytest.approx(60.0)
    assert energy_at(fork(None), r.frontier, 3.0) == pytest.approx(52.0)
    assert energy_at(fork(None), r.frontier, 1.0) == float("inf")
    # And it agrees with the exact optimum at that deadline.
    assert energy_at(fork(None), r.frontier, 2.5) == pytest.approx(
        energyopt.solve(fork(2.5), "bruteforce").objective
    )


@pytest.mark.parametrize("seed", range(4))
def test_exact_frontier_at_a_late_deadline_equals_the_direct_optimum(seed):
    # Past the least-energy point of E(T) a choice with lower effective energy and a longer
    # makespan can win: the frontier must reach up to the least-C choice's makespan.
    inst = random_dag_instance(7, 3, seed=200 + seed, deadline_fraction=1.0)
    r = energyopt.solve(inst, "exact-frontier")
    ref = energyopt.solve(inst, "bruteforce")
    assert r.objective == pytest.approx(ref.objective, abs=1e-6)
    assert r.bound == pytest.approx(ref.objective, abs=1e-6)


def test_time_limited_highs_without_deadline_is_scored_at_the_makespan():
    # A time-limited incumbent may leave the free iteration time T above its makespan; the
    # energy is counted to the makespan, and that must not be mistaken for a mismatch.
    inst = synthetic_instance(8, 16, 10, seed=0)
    r = energyopt.solve(inst, "highs", time_limit=10)  # loaded CI machines need more than 3 s
    assert r.has_solution, r.message  # HiGHS' own heuristics find one within seconds
    assert r.bound is None or r.bound <= r.objective + 1e-6
    assert r.extra["iteration_time_s"] > 0


def test_bound_within_highs_tolerance_of_a_zero_optimum():
    # Found by the property tests: every energy 0, blocking 2 W, deadline = the fastest
    # makespan, so the optimum is 0 J; HiGHS' bound came back 2e-6 J above it (1e-7 of
    # the model's energy unit P_b S T = 22 J), which the scorer refused.
    tables = {
        "t0": OptionTable((1400, 1300, 1200), (1e-6, 1e-6, 2e-6), (0.0, 0.0, 0.0)),
        "t1": OptionTable((1400, 1300), (10.0, 10.0), (0.0, 0.0)),
        "t2": OptionTable((1400,), (1.0,), (0.0,)),
    }
    comps = tuple(Computation(0, "compute", i, f"t{i}") for i in range(3))
    inst = PemInstance(
        num_stages=1,
        computations=comps,
        edges=((0, 1), (1, 2)),
        tables=tables,
        p_blocking_w=2.0,
        deadline_s=11.000001,
        schedule="explicit",
    )
    r = energyopt.solve(inst, "highs", time_limit=60)
    assert r.objective == 0.0
    assert r.bound is not None and r.bound <= 1e-6
