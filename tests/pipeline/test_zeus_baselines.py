"""ZeusGlobal and ZeusPerStage (Perseus 6.4): hand checks and never below the optimum."""

import pytest

import energyopt
from energyopt.pipeline import OptionTable, PemInstance, random_dag_instance, synthetic_instance
from energyopt.pipeline.bruteforce import brute_force
from energyopt.pipeline.schedules import Computation
from energyopt.pipeline.zeusbaselines import (
    option_at_clock,
    zeus_global_plans,
    zeus_per_stage_plans,
)


def two_stage_instance():
    """Stage 0: forward F0 then backward B0; stage 1: forward F1, backward B1 (1F1B, M = 1).

    Forward tables: s0 (1 s, 10 J)@1400 / (2 s, 6 J)@1000; s1 (2 s, 20 J)@1400 / (3 s, 15 J)@1000.
    Backwards take twice the time and energy of their stage's forward. P_b = 0.
    """
    f0 = OptionTable((1400, 1000), (1.0, 2.0), (10.0, 6.0))
    f1 = OptionTable((1400, 1000), (2.0, 3.0), (20.0, 15.0))
    b0 = OptionTable((1400, 1000), (2.0, 4.0), (20.0, 12.0))
    b1 = OptionTable((1400, 1000), (4.0, 6.0), (40.0, 30.0))
    tables = {"s0/forward": f0, "s0/backward": b0, "s1/forward": f1, "s1/backward": b1}
    return PemInstance.from_schedule("1f1b", 2, 1, tables, 0.0)


def test_zeus_global_by_hand():
    inst = two_stage_instance()
    # DAG: F0 -> F1 -> B1 -> B0, a chain. At 1400: T = 1 + 2 + 4 + 2 = 9 s, E = 90 J;
    # at 1000: T = 2 + 3 + 6 + 4 = 15 s, E = 63 J.
    res = energyopt.solve(inst, "zeus-global")
    assert [(p.deadline_s, p.objective) for p in res.frontier] == [
        pytest.approx((9.0, 90.0)),
        pytest.approx((15.0, 63.0)),
    ]
    assert len(zeus_global_plans(inst)) == 2


def test_zeus_per_stage_by_hand():
    inst = two_stage_instance()
    # Forward times: s0 1 s / 2 s, s1 2 s / 3 s. The slowest stage's fastest is 2 s, so
    # theta in {2, 3}. theta = 2: s0 at 1000 (2 s), s1 at 1400 (2 s): T = 2 + 2 + 4 + 4 = 12 s,
    # E = 6 + 20 + 40 + 12 = 78 J. theta = 3: both at 1000: T = 15 s, E = 63 J. Plus the
    # starting point, all at 1400: T = 9 s, E = 90 J.
    plans = zeus_per_stage_plans(inst)
    assert len(plans) == 3
    res = energyopt.solve(inst, "zeus-per-stage")
    assert [(p.deadline_s, p.objective) for p in res.frontier] == [
        pytest.approx((9.0, 90.0)),
        pytest.approx((12.0, 78.0)),
        pytest.approx((15.0, 63.0)),
    ]
    # With a 13 s deadline theta = 2 is the best that meets it: 78 J (P_b = 0).
    assert energyopt.solve(inst.with_deadline(13.0), "zeus-per-stage").objective == 78.0
    assert energyopt.solve(inst.with_deadline(10.0), "zeus-per-stage").objective == 90.0
    assert not energyopt.solve(inst.with_deadline(8.0), "zeus-per-stage").has_solution


def test_option_at_clock_falls_back_to_the_next_faster_clock():
    table = OptionTable((1400, 1200, 900), (1.0, 1.2, 1.6), (9.0, 8.0, 7.5))
    assert option_at_clock(table, 1200) == 1
    assert option_at_clock(table, 1000) == 1  # 1200 is the slowest clock >= 1000
    assert option_at_clock(table, 1500) == 0  # nothing that fast: the fastest option


@pytest.mark.parametrize("seed", range(8))
def test_zeus_baselines_never_below_exact(seed):
    inst = random_dag_instance(7, 3, seed=seed, deadline_fraction=0.7)
    for method in ("zeus-global", "zeus-per-stage"):
        res = energyopt.solve(inst, method)
        if res.has_solution:
            _, exact = brute_force(inst, inst.deadline_s)
            assert res.objective >= exact * (1 - 1e-9)
        for p in res.frontier:
            _, exact = brute_force(inst, p.deadline_s)
            assert p.objective >= exact * (1 - 1e-9)


def test_perseus_dominates_zeus_on_a_synthetic_pipeline():
    inst = synthetic_instance(4, 8, 10, seed=0)
    perseus = energyopt.solve(inst, "perseus")
    for method in ("zeus-global", "zeus-per-stage"):
        for p in energyopt.solve(inst, method).frontier:
            best = energyopt.pipeline.best_at(inst, perseus.frontier, p.deadline_s)
            energy_at = best.objective + 80.0 * 4 * (p.deadline_s - best.deadline_s)
            assert energy_at <= p.objective * (1 + 1e-9)


def test_zeus_per_stage_on_stage_without_forward():
    tables = {"x": OptionTable((1400, 1000), (1.0, 2.0), (5.0, 3.0))}
    comps = (Computation(0, "compute", 0, "x"), Computation(1, "compute", 0, "x"))
    inst = PemInstance(2, comps, ((0, 1),), tables, 1.0)
    # Start (both at their fastest, 1400) = theta 1 s; theta 2 s: both at 1000. Duplicates go.
    assert zeus_per_stage_plans(inst) == [(0, 0), (1, 1)]


def _non_monotone_instance(deadline_s=None):
    """One stage, F then B; measured times are not monotone in the clock (noise).

    F: 1400 (1.0 s, 10 J), 1300 (0.9 s, 9 J), 1200 (1.0 s, 12 J), 1000 (1.5 s, 7 J);
    B: 1400 (2.0 s, 20 J), 1300 (1.8 s, 18 J), 1200 (2.0 s, 24 J), 1000 (3.0 s, 14 J).
    P_b = 0.
    """
    clocks = (1400, 1300, 1200, 1000)
    tables = {
        "s0/forward": OptionTable(clocks, (1.0, 0.9, 1.0, 1.5), (10.0, 9.0, 12.0, 7.0)),
        "s0/backward": OptionTable(clocks, (2.0, 1.8, 2.0, 3.0), (20.0, 18.0, 24.0, 14.0)),
    }
    return PemInstance.from_schedule("1f1b", 1, 1, tables, 0.0, deadline_s)


def test_zeus_per_stage_ranks_by_measured_time_not_mhz():
    # Issue 12, item 9. Zeus' start is the fastest measured forward, 1300 (not 1400).
    # theta sweeps the forward times {0.9, 1.0, 1.5}: 0.9 -> 1300; 1.0 -> the slowest time
    # <= 1.0 at the least energy: 1400 (1.0 s, 10 J), not the lowest clock meeting it,
    # 1200 (1.0 s, 12 J), which the MHz rule picked; 1.5 -> 1000.
    inst = _non_monotone_instance(2.7)
    assert zeus_per_stage_plans(inst) == [(1, 1), (0, 0), (3, 3)]
    res = energyopt.solve(inst, "zeus-per-stage")
    # Plans: (2.7 s, 27 J), (3.0 s, 30 J) dominated, (4.5 s, 21 J).
    assert res.objective == pytest.approx(27.0)
    assert [(p.deadline_s, p.objective) for p in res.frontier] == [
        pytest.approx((2.7, 27.0)),
        pytest.approx((4.5, 21.0)),
    ]


def test_power_limit_emulation_by_hand():
    from energyopt.pipeline.zeusbaselines import option_under_power_limit

    # Mean powers: 1400 10 W, 1300 10 W, 1200 12 W, 1000 4.67 W. Under 12 W the fastest
    # is 1300 (0.9 s); under 10 W too; under 5 W only 1000 fits; under 1 W nothing fits:
    # the lowest-power option, 1000.
    f = _non_monotone_instance().tables["s0/forward"]
    assert option_under_power_limit(f, 12.0) == 1
    assert option_under_power_limit(f, 10.0) == 1
    assert option_under_power_limit(f, 5.0) == 3
    assert option_under_power_limit(f, 1.0) == 3


def test_zeus_power_limit_variants_by_hand():
    # Two limits matter: 10 W (F and B at 1300: 2.7 s, 27 J) and 4.67 W (both at 1000:
    # 4.5 s, 21 J); 1400 and 1200 are never run (1300 is faster at no more power).
    inst = _non_monotone_instance(3.0)
    for method in ("zeus-global-power", "zeus-per-stage-power"):
        res = energyopt.solve(inst, method)
        assert [(p.deadline_s, p.objective) for p in res.frontier] == [
            pytest.approx((2.7, 27.0)),
            pytest.approx((4.5, 21.0)),
        ], method
        assert res.objective == pytest.approx(27.0) and "emulated" in res.message


def test_zeus_per_stage_power_balances_stages():
    inst = two_stage_instance()
    # Mean powers: every option runs at 10 W except s1 forward at 1000 (5 W) and s1
    # backward at 1000 (5 W), s0 at 1000 (3 W). Forward times per stage under a limit:
    # s0: 1 s (>= 10 W), 2 s (3..10 W); s1: 2 s (>= 10 W), 3 s (5..10 W). theta = 2:
    # s0 at 3 W (2 s), s1 at 10 W (2 s): the clock plan at theta = 2 (12 s, 78 J).
    res = energyopt.solve(inst, "zeus-per-stage-power")
    assert pytest.approx((12.0, 78.0)) in [(p.deadline_s, p.objective) for p in res.frontier]


@pytest.mark.parametrize("seed", range(6))
def test_zeus_power_variants_never_below_exact(seed):
    inst = random_dag_instance(7, 3, seed=seed, deadline_fraction=0.7)
    for method in ("zeus-global-power", "zeus-per-stage-power"):
        res = energyopt.solve(inst, method)
        for p in res.frontier:
            _, exact = brute_force(inst, p.deadline_s)
            assert p.objective >= exact * (1 - 1e-9)
