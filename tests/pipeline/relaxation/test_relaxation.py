"""The convex-hull relaxation: hand-checked bounds, never above brute force, certified frontiers."""

import math

import numpy as np
import pytest

import energyopt
from energyopt.core.status import TerminationReason
from energyopt.pipeline import random_dag_instance, synthetic_instance
from energyopt.pipeline.evaluator import evaluate, fastest_choice
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.relaxation.hull import bound_curve, lower_hull, relaxation_bound
from energyopt.pipeline.schedules import Computation
from tests.timing import assert_within, loaded, measured


def chain(deadline_s):
    # One stage, a -> b, P_b = 10 W. a: (1 s, 50 J) or (2 s, 30 J); b: (1 s, 40 J) or (3 s, 20 J).
    tables = {
        "a": OptionTable((1000, 500), (1.0, 2.0), (50.0, 30.0)),
        "b": OptionTable((1000, 500), (1.0, 3.0), (40.0, 20.0)),
    }
    comps = (Computation(0, "forward", 0, "a"), Computation(0, "backward", 0, "b"))
    return PemInstance(1, comps, ((0, 1),), tables, 10.0, deadline_s)


def test_lower_hull_drops_dominated_and_concave_points():
    # (1, 10), (2, 4), (3, 3), (4, 0): (3, 3) lies above the chord (2, 4)-(4, 0) (which is
    # 2 at t = 3); (5, 1) is slower and costlier than (4, 0).
    t, c = lower_hull(np.array([3.0, 1.0, 2.0, 4.0, 5.0]), np.array([3.0, 10.0, 4.0, 0.0, 1.0]))
    assert t.tolist() == [1.0, 2.0, 4.0] and c.tolist() == [10.0, 4.0, 0.0]


@pytest.mark.parametrize(
    "deadline, bound",
    [
        # Effective energies e - 10 t: a (1 s, 40 J) - (2 s, 10 J), slope -30 J/s;
        # b (1 s, 30 J) - (3 s, -10 J), slope -20 J/s. With d_a + d_b <= T the LP gives
        # the time above 2 s to a first (it saves more per second).
        # T = 3: d_a = 2, d_b = 1: 10 + 30 = 40, plus P_b S T = 30: 70 (the optimum, 70).
        (3.0, 70.0),
        # T = 3.5: d_a = 2, d_b = 1.5: 10 + (30 - 10) = 30, plus 35: 65. The optimum is
        # 75 (a slow, b fast: 40 + 35), so the LP is strictly below it here.
        (3.5, 65.0),
        # T = 5: both at their cheapest: 10 - 10 = 0, plus 50: 50 (the optimum).
        (5.0, 50.0),
    ],
)
def test_hand_checked_bounds(deadline, bound):
    assert relaxation_bound(chain(deadline)) == pytest.approx(bound, abs=1e-7)
    curve = bound_curve(chain(None))
    assert curve.energy_bound(deadline) == pytest.approx(bound, abs=1e-7)
    assert curve.energy_bound(1.9) is None  # below the fastest makespan, 2 s


@pytest.mark.parametrize("seed", range(40))
def test_bound_never_exceeds_brute_force(seed):
    inst = random_dag_instance(
        4 + seed % 6, 3, seed=seed, num_stages=1 + seed % 3, deadline_fraction=None
    )
    curve = bound_curve(inst)
    fastest = evaluate(inst, fastest_choice(inst), None).iteration_time_s
    for factor in (1.0, 1.07, 1.3, 2.0):
        T = fastest * factor
        _, opt = brute_force(inst, T)
        one = relaxation_bound(inst, T)
        assert one <= opt + 1e-7 * max(1.0, abs(opt))
        assert curve.energy_bound(T) <= opt + 1e-7 * max(1.0, abs(opt))


@pytest.mark.parametrize("seed", range(12))
def test_off_grid_and_mixed_scale_bounds_stay_valid(seed):
    rng = np.random.default_rng(seed)
    inst = random_dag_instance(6, 3, seed=seed, num_stages=2, deadline_fraction=None)
    scale = 10.0 ** rng.integers(-6, 4, size=len(inst.tables))
    tables = {
        name: OptionTable(
            t.sm_clock_mhz,
            tuple(x * s * (1 + 1e-3 * rng.random()) for x in t.time_s),
            tuple(e * s for e in t.energy_j),
        )
        for (name, t), s in zip(inst.tables.items(), scale)
    }
    inst = PemInstance(inst.num_stages, inst.computations, inst.edges, tables, 3.0)
    T = evaluate(inst, fastest_choice(inst), None).iteration_time_s * 1.2
    _, opt = brute_force(inst, T)
    assert relaxation_bound(inst, T) <= opt + 1e-7 * max(1.0, abs(opt))


def test_mixed_time_scales_highs_matches_brute_force():
    # Issue 12, item 1: a microsecond computation before a kilosecond one. The evaluator
    # accepts 2000.000002 s at a 2000.000001 s deadline (relative tolerance 1e-9), so the
    # optimum takes both cheap options: 0.5 J + 5e5 J.
    tables = {
        "a": OptionTable((1000, 500), (1e-6, 2e-6), (1.0, 0.5)),
        "b": OptionTable((1000, 500), (1e3, 2e3), (1e6, 5e5)),
    }
    comps = (Computation(0, "forward", 0, "a"), Computation(0, "backward", 0, "b"))
    inst = PemInstance(1, comps, ((0, 1),), tables, 0.0, 2000.000001)
    brute = energyopt.solve(inst, "bruteforce")
    r = energyopt.solve(inst, "highs")
    assert brute.objective == pytest.approx(500000.5)
    assert r.objective == pytest.approx(brute.objective, rel=1e-12)
    assert r.bound <= brute.objective + 1e-6


def test_highs_starts_from_the_relaxation_and_reports_both_bounds():
    inst = synthetic_instance(4, 8, 10, seed=1)
    inst = inst.with_deadline(evaluate(inst, fastest_choice(inst), None).iteration_time_s * 1.05)
    r = energyopt.solve(inst, "highs", time_limit=60)  # ample: not a time-limit test
    lp = r.extra["relaxation_bound_j"]
    assert lp is not None and lp <= r.bound + 1e-9 and r.bound <= r.objective + 1e-6
    rr = energyopt.solve(inst, "relaxation-rounding")
    assert rr.bound == pytest.approx(lp) and rr.objective >= r.objective - 1e-6


def test_highs_time_limit_covers_model_building():
    inst = synthetic_instance(8, 48, 10, seed=0)
    inst = inst.with_deadline(evaluate(inst, fastest_choice(inst), None).iteration_time_s * 1.1)
    with measured() as used:
        r = energyopt.solve(inst, "highs", time_limit=1.0)
    assert_within(used, 1.0, "highs")
    assert r.termination in (TerminationReason.TIME_LIMIT, TerminationReason.OPTIMAL)
    assert r.objective is not None, r.message
    # The relaxation's LP gives the bound when it finishes within the limit, which a
    # loaded machine may not let it do.
    assert r.bound is not None or loaded(used), f"no bound although the method ran: {used}"
    assert r.bound is None or r.bound <= r.objective


def test_certified_crawl_frontier():
    inst = random_dag_instance(7, 3, seed=3, num_stages=2, deadline_fraction=0.5)
    r = energyopt.solve(inst, "perseus", certify=True)
    assert r.bound is not None and r.bound <= r.objective
    for p in r.frontier:
        _, opt = brute_force(inst, p.makespan_s)
        tol = 1e-7 * max(1.0, abs(opt))
        assert p.bound <= opt + tol and opt <= p.objective + tol
    assert 0.0 <= r.extra["frontier_gap_max"] < 1 and math.isfinite(r.extra["frontier_gap_median"])


def test_formulation_doc_and_code_cite_the_same_relaxation_equations():
    import inspect
    import re
    from pathlib import Path

    from energyopt.pipeline.relaxation import hull as relaxation

    doc = (Path(__file__).resolve().parents[3] / "formulations" / "pem.md").read_text()
    tag = re.compile(r"PEM-R(\d)")
    assert {m.group(1) for m in tag.finditer(doc)} == set("1234567")
    code = {m.group(1) for m in tag.finditer(inspect.getsource(relaxation))}
    assert code == set("1234567")


def test_cpsat_refines_its_resolution_instead_of_giving_up():
    # Issue 12, item 4: off-grid times at the tightest deadline. Rounded up to 0.1 ms,
    # 0.12345 ms + 0.33333 ms becomes 0.2 ms + 0.4 ms > 0.45678 ms; at 1e-8 s both are exact.
    tables = {
        "a": OptionTable((1000, 500), (1.2345e-4, 2e-4), (1.0, 0.6)),
        "b": OptionTable((1000, 500), (3.3333e-4, 5e-4), (2.0, 1.5)),
    }
    comps = (Computation(0, "forward", 0, "a"), Computation(0, "backward", 0, "b"))
    inst = PemInstance(1, comps, ((0, 1),), tables, 50.0, 1.2345e-4 + 3.3333e-4)
    r = energyopt.solve(inst, "cpsat", time_limit=20)
    brute = energyopt.solve(inst, "bruteforce")
    assert r.objective == pytest.approx(brute.objective)
    assert "refined" in r.message and r.termination is not TerminationReason.UNKNOWN


def test_polished_crawl_frontier_is_never_worse():
    from energyopt.pipeline import best_at

    inst = synthetic_instance(4, 8, 10, seed=2)
    inst = inst.with_deadline(evaluate(inst, fastest_choice(inst), None).iteration_time_s * 1.02)
    plain = energyopt.solve(inst, "perseus", progress=False)
    polished = energyopt.solve(inst, "perseus", progress=False, polish=8)
    assert polished.extra["polished_plans"] >= 8
    pbs = inst.p_blocking_w * inst.num_stages
    for p in plain.frontier:
        q = best_at(inst, polished.frontier, p.makespan_s)
        assert q.objective + pbs * (p.makespan_s - q.makespan_s) <= p.objective * (1 + 1e-12)
    assert polished.objective <= plain.objective


class _StatusSequence:
    """A HiGHS object whose runs end with the given statuses, in turn (else it is the real one)."""

    def __init__(self, highs, statuses):
        self._highs, self._statuses = highs, list(statuses)

    def getModelStatus(self):
        return self._statuses.pop(0)

    def __getattr__(self, name):
        return getattr(self._highs, name)


def test_a_retry_that_runs_out_of_time_is_a_time_limit_not_infeasibility():
    import highspy

    from energyopt.pipeline.relaxation.hull import HullRelaxation, LpTimeLimit

    inst = synthetic_instance(2, 3, 4, seed=0)
    relax = HullRelaxation(inst)
    status = highspy.HighsModelStatus
    relax.highs = _StatusSequence(relax.highs, [status.kNotset, status.kTimeLimit])
    with pytest.raises(LpTimeLimit):
        relax.solve(relax.cheapest_makespan_s, time_limit=10.0)
    relax.highs = _StatusSequence(relax.highs._highs, [status.kNotset, status.kInfeasible])
    assert relax.solve(relax.cheapest_makespan_s, time_limit=10.0) is None
