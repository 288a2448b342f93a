"""ZeusGlobal and ZeusPerStage (Perseus 6.4): hand checks, never below the optimum, the
same plans as the straightforward reference (tests/pipeline/baselines/zeus_reference.py), and the
time limit."""

import dataclasses
import time
import types
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import energyopt
from energyopt.core.instance import load_instance
from energyopt.core.status import TerminationReason
from energyopt.pipeline import OptionTable, PemInstance, random_dag_instance, synthetic_instance
from energyopt.pipeline.baselines import zeus as zb
from energyopt.pipeline.baselines.zeus import (
    option_at_clock,
    zeus_global_plans,
    zeus_per_stage_plans,
)
from energyopt.pipeline.evaluator import PemSolution, evaluate, fastest_choice
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.generators import nonmonotone_instance
from energyopt.pipeline.paretoset import best_at
from energyopt.pipeline.schedules import Computation
from tests.pipeline.baselines import zeus_reference as ref
from tests.timing import assert_within, measured

METHODS = ("zeus-global", "zeus-per-stage", "zeus-global-power", "zeus-per-stage-power")
INSTANCE_FILES = sorted(
    (Path(__file__).resolve().parents[3] / "instances" / "pipeline").glob("*/*.json")
)
GPT3_8X96 = "instances/pipeline/paper/012-gpt3-175b-a100-1f1b-8x96-t1.json"


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
    assert [(p.makespan_s, p.objective) for p in res.frontier] == [
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
    assert [(p.makespan_s, p.objective) for p in res.frontier] == [
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
            _, exact = brute_force(inst, p.makespan_s)
            assert p.objective >= exact * (1 - 1e-9)


def test_perseus_dominates_zeus_on_a_synthetic_pipeline():
    inst = synthetic_instance(4, 8, 10, seed=0)
    perseus = energyopt.solve(inst, "perseus")
    for method in ("zeus-global", "zeus-per-stage"):
        for p in energyopt.solve(inst, method).frontier:
            best = energyopt.pipeline.best_at(inst, perseus.frontier, p.makespan_s)
            energy_at = best.objective + 80.0 * 4 * (p.makespan_s - best.makespan_s)
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
    assert [(p.makespan_s, p.objective) for p in res.frontier] == [
        pytest.approx((2.7, 27.0)),
        pytest.approx((4.5, 21.0)),
    ]


def test_power_limit_emulation_by_hand():
    from energyopt.pipeline.baselines.zeus import option_under_power_limit

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
        assert [(p.makespan_s, p.objective) for p in res.frontier] == [
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
    assert pytest.approx((12.0, 78.0)) in [(p.makespan_s, p.objective) for p in res.frontier]


@pytest.mark.parametrize("seed", range(6))
def test_zeus_power_variants_never_below_exact(seed):
    inst = random_dag_instance(7, 3, seed=seed, deadline_fraction=0.7)
    for method in ("zeus-global-power", "zeus-per-stage-power"):
        res = energyopt.solve(inst, method)
        for p in res.frontier:
            _, exact = brute_force(inst, p.makespan_s)
            assert p.objective >= exact * (1 - 1e-9)


# -- the same outputs as the reference ---------------------------------------------------


def _reference_plans(instance, method):
    """The method's plans by the reference (one selector call per computation and value)."""
    per_stage, power = zb.SWEEPS[method]
    values = zb.power_limit_values(instance) if power else zb.clock_values(instance)
    select = zb.option_under_power_limit if power else zb.option_at_clock
    return (ref.per_stage_plans if per_stage else ref.global_plans)(instance, values, select)


PLAN_FUNCTIONS = {
    "zeus-global": zb.zeus_global_plans,
    "zeus-per-stage": zb.zeus_per_stage_plans,
    "zeus-global-power": zb.zeus_global_power_plans,
    "zeus-per-stage-power": zb.zeus_per_stage_power_plans,
}


def _without_runtime(res):
    return dataclasses.replace(res, runtime_s=0.0)


def _assert_same_as_reference(instance, method):
    plans = _reference_plans(instance, method)
    assert PLAN_FUNCTIONS[method](instance) == plans
    points, pick = ref.sweep(instance, plans)
    res = energyopt.solve(instance, method)
    assert res.frontier == points
    assert res.solution == (None if pick is None else pick.solution)
    assert res.termination is (
        TerminationReason.INFEASIBLE if pick is None else TerminationReason.COMPLETED
    )
    assert res.extra["num_plans"] == len(plans)
    # Every other field: the sweep on the reference's plans, and a limit never reached
    # (the chunked sweep) changes nothing.
    note = zb.EMULATED if zb.SWEEPS[method][1] else ""
    expected = zb.sweep_result(instance, method, plans, note)
    assert _without_runtime(res) == dataclasses.replace(_without_runtime(expected), seed=None)
    limited = energyopt.solve(instance, method, time_limit=3600.0)
    assert _without_runtime(limited) == _without_runtime(res)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: p.stem)
def test_same_outputs_as_reference_on_stored_instances(path, method):
    _assert_same_as_reference(load_instance(path), method)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("seed", range(4))
def test_same_outputs_as_reference_on_generated_instances(seed, method):
    for inst in (
        random_dag_instance(9, 4, seed=seed, num_stages=4, deadline_fraction=0.6),
        synthetic_instance(3, 4, 6, seed=seed, deadline_s=None),
        nonmonotone_instance(3, 3, 12, seed=seed),
    ):
        _assert_same_as_reference(inst, method)


@st.composite
def tied_pipelines(draw):
    """Small 1F1B pipelines whose tables share few values: many ties in forward time,
    missing clocks, zero-time options and a random deadline."""
    S, M = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    clocks = (1400, 1300, 1200, 1000)
    tables = {}
    for s in range(S):
        for kind in ("forward", "backward"):
            picked = draw(st.lists(st.sampled_from(clocks), min_size=1, max_size=4, unique=True))
            k = len(picked)
            times = draw(st.lists(st.sampled_from((0.0, 1.0, 2.0, 3.0)), min_size=k, max_size=k))
            energies = draw(st.lists(st.sampled_from((1.0, 2.0, 4.0, 6.0)), min_size=k, max_size=k))
            tables[f"s{s}/{kind}"] = OptionTable(tuple(picked), tuple(times), tuple(energies))
    inst = PemInstance.from_schedule("1f1b", S, M, tables, draw(st.sampled_from((0.0, 1.0))))
    return inst.with_deadline(draw(st.sampled_from((None, 2.0, 6.0, 12.0, 30.0))))


@given(tied_pipelines(), st.sampled_from(METHODS))
def test_same_outputs_as_reference_with_ties(instance, method):
    _assert_same_as_reference(instance, method)


# -- the time limit -----------------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_time_limit_on_gpt3_8x96(method):
    inst = load_instance(GPT3_8X96)
    with measured() as used:
        res = energyopt.solve(inst, method, time_limit=0.2)
    assert_within(used, 0.2, method)
    assert res.objective is not None or res.termination is TerminationReason.INFEASIBLE
    assert res.termination in (TerminationReason.COMPLETED, TerminationReason.TIME_LIMIT)


@pytest.mark.parametrize("method", METHODS)
def test_runtime_counts_plan_generation(method):
    # Called directly, not through energyopt.solve (which times the call itself).
    inst = load_instance(GPT3_8X96)
    tick = time.perf_counter()
    res = zb.zeus_sweep(inst, method)
    wall = time.perf_counter() - tick
    assert 0.5 * wall <= res.runtime_s <= wall


def _ticking_clock(monkeypatch):
    """Replace the module's clock by one that advances 1 s per reading (from 0 s)."""
    now = iter(range(10**6))
    monkeypatch.setattr(zb, "time", types.SimpleNamespace(perf_counter=lambda: float(next(now))))


@pytest.mark.parametrize("method", METHODS)
def test_limit_during_plan_generation_gives_the_fastest_plan(method):
    inst = synthetic_instance(3, 4, 6, seed=1)
    fastest = fastest_choice(inst)
    for deadline in (None, evaluate(inst, fastest).iteration_time_s):
        res = energyopt.solve(inst.with_deadline(deadline), method, time_limit=1e-9)
        assert res.termination is TerminationReason.TIME_LIMIT
        assert res.solution == fastest and res.frontier == ()
        assert "0 plans evaluated" in res.message and res.extra["num_evaluated"] == 0
    late = inst.with_deadline(0.99 * evaluate(inst, fastest).iteration_time_s)
    res = energyopt.solve(late, method, time_limit=1e-9)
    assert res.termination is TerminationReason.INFEASIBLE and not res.has_solution


@pytest.mark.parametrize("method", METHODS)
def test_limit_mid_sweep_gives_the_best_of_the_evaluated_prefix(method, monkeypatch):
    monkeypatch.setattr(zb, "SWEEP_CHUNK", 4)
    inst = nonmonotone_instance(4, 6, 20, seed=3)
    plans = PLAN_FUNCTIONS[method](inst)
    assert len(plans) > 2 * zb.SWEEP_CHUNK  # else the prefix would be the whole sweep
    done = 2 * zb.SWEEP_CHUNK
    # Deadlines: one every plan meets, and the median makespan of the prefix's plans.
    spans = sorted(evaluate(inst, PemSolution(p)).iteration_time_s for p in plans[:done])
    for deadline in (None, spans[len(spans) // 2]):
        at = inst.with_deadline(deadline)
        points, pick = ref.sweep(at, plans[:done])
        _ticking_clock(monkeypatch)  # readings 0, 1: two chunks before the stop at 1.5 s
        res = zb.sweep_result(at, method, plans, start=0.0, stop_at=1.5)
        assert res.termination is TerminationReason.TIME_LIMIT
        assert res.frontier == points and res.solution == pick.solution
        assert f"{done} of {len(plans)} plans evaluated" in res.message
        assert res.extra["num_evaluated"] == done and res.extra["num_plans"] == len(plans)


def test_limit_mid_sweep_without_a_plan_meeting_the_deadline(monkeypatch):
    # ZeusGlobal on power limits starts at the lowest limit: its first plans are slow.
    inst = nonmonotone_instance(4, 6, 20, seed=3)
    plans = zb.zeus_global_power_plans(inst)
    fastest = fastest_choice(inst)
    at = inst.with_deadline(evaluate(inst, fastest).iteration_time_s)
    assert best_at(at, ref.sweep(at, plans[: zb.SWEEP_CHUNK])[0], at.deadline_s) is None
    _ticking_clock(monkeypatch)
    res = zb.sweep_result(at, "zeus-global-power", plans, zb.EMULATED, start=0.0, stop_at=0.5)
    assert res.termination is TerminationReason.TIME_LIMIT and res.solution == fastest
    assert res.message.endswith(zb.EMULATED)
    assert np.isclose(res.objective, evaluate(at, fastest).energy_j)
