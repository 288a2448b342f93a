"""EnvPipe envelope planner: a hand-checked instance, no slowdown, never below the optimum."""

import pytest

import energyopt
from energyopt.pipeline import (
    OptionTable,
    PemInstance,
    evaluate,
    random_dag_instance,
    synthetic_instance,
)
from energyopt.pipeline.bruteforce import brute_force
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.envpipe import critical_path, envpipe_plan
from energyopt.pipeline.schedules import Computation


def side_branch_instance():
    """A (s0) -> E (s0) -> C (s0), A -> B (s1) -> C; S = 2, P_b = 10 W.

    A, B, C: (1.0 s, 10 J) at 1400 MHz or (1.5 s, 9 J) at 800 MHz.
    E: (0.5 s, 5 J) at 1400, (0.9 s, 3.5 J) at 1100, (1.2 s, 3 J) at 800 MHz.
    """
    big = OptionTable((1400, 800), (1.0, 1.5), (10.0, 9.0))
    tables = {
        "A": big,
        "B": big,
        "C": big,
        "E": OptionTable((1400, 1100, 800), (0.5, 0.9, 1.2), (5.0, 3.5, 3.0)),
    }
    comps = (
        Computation(0, "compute", 0, "A"),
        Computation(1, "compute", 0, "B"),
        Computation(0, "compute", 1, "C"),
        Computation(0, "compute", 2, "E"),
    )
    edges = ((0, 3), (3, 2), (0, 1), (1, 2))
    return PemInstance(2, comps, edges, tables, 10.0)


def test_envpipe_by_hand():
    inst = side_branch_instance()
    # All at 1400 MHz: A ends at 1, B at 2, E at 1.5; C starts at max(2, 1.5) = 2, T = 3 s.
    # Walk from C: same-GPU slack (E) 0.5 >= dependency delay (B) 0 -> B, then A.
    dag = CompactDag(inst)
    path, span = critical_path(inst, dag, [1.0, 1.0, 1.0, 0.5])
    assert path == [0, 1, 2] and span == pytest.approx(3.0)
    # Off the envelope, E goes to its valley (800 MHz, 1.2 s): E ends at 2.2, T = 3.2 s, and
    # the path is A, E, C. Balanced raises E one step (1100 MHz, 0.9 s): E ends at 1.9 <= 2,
    # T = 3 s again: done. Energy 10 + 10 + 10 + 3.5 = 33.5 J of compute, blocking
    # 10 W * (2 * 3 s - (1 + 1 + 1 + 0.9) s) = 21 J: 54.5 J.
    choice, stats = envpipe_plan(inst, "balanced")
    assert choice == (0, 0, 0, 1) and stats["iterations"] == 1
    res = energyopt.solve(inst, "envpipe")
    assert res.objective == pytest.approx(54.5)
    assert res.extra["iteration_time_s"] == pytest.approx(3.0)
    # Greedy puts E straight back at 1400 MHz: 35 J + 10 * (6 - 3.5) = 60 J (= all at max).
    res = energyopt.solve(inst, "envpipe-greedy")
    assert res.solution.choice == (0, 0, 0, 0)
    assert res.objective == pytest.approx(60.0)
    with pytest.raises(ValueError, match="policy"):
        envpipe_plan(inst, "lazy")


@pytest.mark.parametrize("policy", ["balanced", "greedy"])
def test_envpipe_keeps_the_max_clock_iteration_time(policy):
    inst = synthetic_instance(4, 8, 10, seed=5)
    choice, stats = envpipe_plan(inst, policy)
    ev = evaluate(inst, choice, None)
    assert ev.iteration_time_s <= stats["baseline_time_s"] * (1 + 1e-12)
    base = evaluate(inst, energyopt.pipeline.fastest_choice(inst), None)
    assert ev.energy_j <= base.energy_j


@pytest.mark.parametrize("seed", range(8))
def test_envpipe_never_below_exact(seed):
    inst = random_dag_instance(7, 3, seed=seed, deadline_fraction=None)
    for method in ("envpipe", "envpipe-greedy"):
        choice, _ = envpipe_plan(inst, "balanced" if method == "envpipe" else "greedy")
        T = evaluate(inst, choice, None).iteration_time_s
        res = energyopt.solve(inst.with_deadline(T), method)
        _, exact = brute_force(inst, T)
        assert res.objective >= exact * (1 - 1e-9)


def test_envpipe_reports_infeasible_deadline():
    inst = side_branch_instance().with_deadline(2.5)  # faster than all-max (3 s)
    res = energyopt.solve(inst, "envpipe")
    assert not res.has_solution and res.termination.value == "infeasible"
