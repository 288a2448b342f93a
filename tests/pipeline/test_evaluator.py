import pytest

from energyopt.core.instance import InstanceError
from energyopt.pipeline import (
    PemSolution,
    evaluate,
    instance_from_perseus_profile,
    synthetic_instance,
)
from energyopt.pipeline.evaluator import uniform_clock_choice


def test_hand_checked_energy(fork):
    inst = fork()
    # p slow, q fast: makespan 1 + max(2, 1) = 3 s. Energy 10 + 12 + 20 = 42 J of compute,
    # blocking 5 W * (2 GPUs * 3 s - (1 + 2 + 1) s busy) = 10 J; total 52 J.
    ev = evaluate(inst, PemSolution((0, 1, 0)))
    assert ev.feasible
    assert ev.iteration_time_s == pytest.approx(3.0)
    assert ev.computation_energy_j == pytest.approx(42.0)
    assert ev.blocking_energy_j == pytest.approx(10.0)
    assert ev.energy_j == pytest.approx(52.0)
    assert list(ev.start_s) == [0.0, 1.0, 1.0]


def test_deadline_violation_and_no_deadline(fork):
    inst = fork()
    ev = evaluate(inst, PemSolution((0, 1, 1)))  # makespan 1 + 3 = 4 s > 3 s
    assert not ev.feasible and "exceeds the deadline" in ev.violations[0]
    # Without a deadline the energy counts to the makespan: 10+12+8 = 30 J compute,
    # 5 W * (2 * 4 - (1 + 2 + 3)) = 10 J blocking; 40 J.
    ev = evaluate(inst, PemSolution((0, 1, 1)), deadline_s=None)
    assert ev.feasible and ev.energy_j == pytest.approx(40.0)


def test_bad_solutions_are_clear_errors(fork):
    inst = fork()
    with pytest.raises(InstanceError, match="2 choices for 3"):
        evaluate(inst, PemSolution((0, 1)))
    with pytest.raises(InstanceError, match=r"choice\[2\] = 5"):
        evaluate(inst, PemSolution((0, 0, 5)))
    with pytest.raises(InstanceError, match=r"clocks\[1\] = 999"):
        PemSolution.from_clocks(inst, [None, 999, 1400])


def test_clock_round_trip():
    inst = synthetic_instance(2, 3, 4, seed=0)
    sol = uniform_clock_choice(inst, inst.options(0).sm_clock_mhz[1])
    assert PemSolution.from_clocks(inst, sol.clocks(inst)) == sol


def test_perseus_gpt3_all_max_clock(perseus_profile):
    # Perseus GPT-3 175B on A100 SXM, 1F1B, 8 stages, 12 microbatches, all at 1410 MHz:
    # the published data's README gives T = 2.8365 s and 7339 J with P_blocking = 83.64 W.
    inst = instance_from_perseus_profile(perseus_profile, 12, p_blocking_w=83.64)
    ev = evaluate(inst, uniform_clock_choice(inst, 1410))
    assert float(f"{ev.iteration_time_s:.5g}") == 2.8365
    assert float(f"{ev.energy_j:.4g}") == 7339


@pytest.mark.parametrize("deadline", [None, 0.9, 5.0])
def test_evaluate_many_equals_evaluate(deadline, fork):
    import numpy as np

    from energyopt.pipeline import random_dag_instance
    from energyopt.pipeline.evaluator import evaluate_many

    rng = np.random.default_rng(0)
    for inst in (
        synthetic_instance(3, 5, 4, seed=3),
        random_dag_instance(9, 3, seed=7),
        fork(),
    ):
        sizes = [len(t) for t in inst.option_times]
        choices = np.array([[rng.integers(k) for k in sizes] for _ in range(40)])
        batch = evaluate_many(inst, choices, deadline)
        for r, ch in enumerate(choices):
            ev = evaluate(inst, PemSolution(tuple(ch)), deadline)
            assert batch.iteration_time_s[r] == pytest.approx(ev.iteration_time_s, abs=1e-12)
            assert batch.energy_j[r] == pytest.approx(ev.energy_j, abs=1e-9)
            assert batch.feasible[r] == ev.feasible
    with pytest.raises(InstanceError, match=r"choices\[0\]\[0\] = 9"):
        evaluate_many(fork(), np.array([[9, 0, 0]]))


@pytest.mark.parametrize("dtype", ["int8", "int16", "int64", "uint16"])
def test_evaluate_many_scores_bit_for_bit_as_evaluate(dtype):
    import numpy as np

    from energyopt.pipeline import random_dag_instance
    from energyopt.pipeline.evaluator import evaluate_many

    # Dense random DAGs give levels with up to a dozen predecessors per computation;
    # the chunk of 7 splits the plans unevenly. Same roundings: equal, not approximate.
    rng = np.random.default_rng(5)
    for inst in (
        synthetic_instance(4, 8, 6, seed=1),
        random_dag_instance(30, 4, seed=2, edge_probability=0.6),
    ):
        sizes = [len(t) for t in inst.option_times]
        choices = np.array([[rng.integers(k) for k in sizes] for _ in range(25)], dtype=dtype)
        for deadline in (None, inst.deadline_s):
            batch = evaluate_many(inst, choices, deadline, chunk=7)
            for r, ch in enumerate(choices.tolist()):
                ev = evaluate(inst, PemSolution(tuple(ch)), deadline)
                assert batch.iteration_time_s[r] == ev.iteration_time_s
                assert batch.energy_j[r] == ev.energy_j
                assert batch.feasible[r] == ev.feasible


def test_evaluate_many_names_the_first_bad_index_in_row_order(fork):
    import numpy as np

    from energyopt.pipeline.evaluator import evaluate_many

    plans = np.array([[0, 0, 0], [0, 0, 7], [-1, 0, 0]], dtype=np.int16)
    with pytest.raises(InstanceError, match=r"choices\[1\]\[2\] = 7"):
        evaluate_many(fork(), plans)
    with pytest.raises(InstanceError, match=r"shape \(2, 2\)"):
        evaluate_many(fork(), np.zeros((2, 2), dtype=np.int64))
    assert evaluate_many(fork(), np.zeros((0, 3), dtype=np.int64)).energy_j.shape == (0,)
