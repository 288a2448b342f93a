"""exact-frontier finds breakpoints however close together (issue 12, item 2)."""

import pytest

import energyopt
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.schedules import Computation


def one(times, energies, deadline, p_blocking_w=0.0):
    clocks = tuple(1000 - 10 * k for k in range(len(times)))
    table = OptionTable(clocks, tuple(times), tuple(energies))
    return PemInstance(
        1, (Computation(0, "forward", 0, "a"),), (), {"a": table}, p_blocking_w, deadline
    )


def test_breakpoints_closer_than_a_microsecond():
    # Options (1 s, 300 J), (1.000002 s, 250 J), (1.0000024 s, 200 J); at 1.0000021 s the
    # middle one is the only one that fits and is cheaper than the first: 250 J.
    inst = one((1.0, 1.0000020, 1.0000024), (300.0, 250.0, 200.0), 1.0000021)
    r = energyopt.solve(inst, "exact-frontier")
    assert r.status is SolutionStatus.OPTIMAL and r.objective == pytest.approx(250.0)
    assert [p.objective for p in r.frontier] == pytest.approx([300.0, 250.0, 200.0])


def test_half_a_microsecond_above_the_deadline():
    # (1 s, 2 J) or (1.0000005 s, 1 J) with a 1 s deadline: the fast option, 2 J.
    r = energyopt.solve(one((1.0, 1.0000005), (2.0, 1.0), 1.0), "exact-frontier")
    assert r.termination is TerminationReason.OPTIMAL and r.objective == pytest.approx(2.0)


def test_tenth_of_a_microsecond_times_agree_with_highs():
    inst = one((1e-7, 2e-7, 3e-7), (3.0, 2.0, 1.5), 2.5e-7)
    r = energyopt.solve(inst, "exact-frontier")
    h = energyopt.solve(inst, "highs")
    assert r.objective == pytest.approx(h.objective) == pytest.approx(2.0)
    assert len(r.frontier) == 3


def test_zero_duration_options():
    r = energyopt.solve(one((0.0, 0.0), (2.0, 1.0), 1.0), "exact-frontier")
    assert r.status is SolutionStatus.OPTIMAL and r.objective == pytest.approx(1.0)
    r = energyopt.solve(one((0.0, 1.0), (2.0, 1.0), 0.5), "exact-frontier")
    assert r.status is SolutionStatus.OPTIMAL and r.objective == pytest.approx(2.0)


def test_all_option_energies_zero():
    # Found by tests/properties: with every option energy 0 the MILP's energy unit was
    # 1e-300 and the blocking term overflowed (solver objective -inf). Chain of two 1 s
    # computations (the second may take 2 s), P_b = 1 W, one stage: energy P_b (T - sum t)
    # = 0 at T = 2 (both fast) and at T = 3 (second slow).
    tables = {
        "a": OptionTable((1400,), (1.0,), (0.0,)),
        "b": OptionTable((1400, 1300), (1.0, 2.0), (0.0, 0.0)),
    }
    comps = (Computation(0, "compute", 0, "a"), Computation(0, "compute", 1, "b"))
    inst = PemInstance(1, comps, ((0, 1),), tables, 1.0, 2.0)
    r = energyopt.solve(inst, "highs")
    assert r.status is SolutionStatus.OPTIMAL and r.objective == pytest.approx(0.0)
    r = energyopt.solve(inst, "exact-frontier")
    assert [(p.makespan_s, p.objective) for p in r.frontier] == [
        pytest.approx((2.0, 0.0)),
        pytest.approx((3.0, 0.0)),
    ]
