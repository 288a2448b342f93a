"""The scheduling-event problem: hand-checked tiny events, greedy vs MILP vs brute force."""

from __future__ import annotations

import dataclasses

import pytest

import energyopt
from energyopt.core.gap import gap
from energyopt.core.instance import InstanceError
from energyopt.powercap import EventJob, JobOption, PowercapInstance, evaluate
from energyopt.powercap.suites import event_suite, random_event, suite

from .conftest import tiny_event


def test_tiny_event_by_hand():
    # Efficient one-GPU clocks: A 1.0*40 = 40 J/it < 0.5*90 = 45 -> 1000 MHz;
    #                           B 2.0*50 = 100 J/it < 1.2*95 = 114 -> 1000 MHz.
    # Queued JCT (PC-10): A 0 + 100 + 100*1.0 = 200 s; B 10 + 100 + 50*2.0 = 210 s.
    # Running JCT (PC-9): A(1,1000) 100, A(1,2000) 50, A(2,1000) 60, A(2,2000) 30;
    #                     B(1,1000) 10 + 100 = 110, B(1,2000) 10 + 60 = 70.
    # Cap 100 W; one GPU in use leaves one idle GPU at 10 W on the powered node.
    # Feasible: both queued 205; A(1,1000) 50 W -> 155; A(1,2000) 100 W -> 130;
    #   A(2,1000) 80 W -> 135; B(1,1000) 60 W -> 155; A(1,1000)+B(1,1000) 90 W -> 105;
    #   A(2,2000) 170 W, B(1,2000) 105 W, A(1,2000)+B 140 W, A+B(1,2000) 135 W break the cap.
    # Optimum: both at (1, 1000 MHz), mean JCT (100 + 110) / 2 = 105 s.
    inst = tiny_event()
    assert inst.power_cap_w == 100.0
    assert inst.queued_jct_s(0) == 200.0 and inst.queued_jct_s(1) == 210.0
    for method in ("highs", "bruteforce", "greedy"):
        r = energyopt.solve(inst, method)
        assert r.objective == pytest.approx(105.0), method
        assert r.solution.config == ((1, 1000), (1, 1000)), method
    r = energyopt.solve(inst, "highs")
    assert r.status.value == "optimal" and r.bound == pytest.approx(105.0)
    ev = evaluate(inst, ((1, 1000), (1, 1000)))
    assert ev.power_w == pytest.approx(90.0) and ev.idle_gpus == 0


def test_tiny_event_where_greedy_is_suboptimal():
    # Same event with B at 65 W on (1, 1000) and 120 W on (1, 2000): B's efficient clock
    # stays 1000 MHz (2.0*65 = 130 J/it < 1.2*120 = 144), queued JCT 210 s as before;
    # A(1,1000) + B(1,1000) = 105 W > 100 W and B(1,2000) alone = 130 W > 100 W.
    # Greedy: A and B both have a free start (energy change 0, JCT -100 s); the tie goes
    # to the least remaining time, 100 * 1.0 = 50 * 2.0 = 100 s, still tied, then to the
    # lower index: A(1,1000), 40 + 10 idle = 50 W. B's start
    # needs 40 + 65 = 105 W: refused. A 1 -> 2 GPUs (JCT -40 s, energy +800 J): 80 W, taken.
    # Clock raise A(2,2000) = 170 W: refused. Greedy: (60 + 210) / 2 = 135 s.
    # Optimum: A(1,2000) alone, 90 + 10 = 100 W, (50 + 210) / 2 = 130 s
    # (B alone: 65 + 10 = 75 W, (200 + 110) / 2 = 155 s).
    inst = tiny_event(b_power_1000_w=65.0, b_power_2000_w=120.0)
    g = energyopt.solve(inst, "greedy")
    h = energyopt.solve(inst, "highs")
    b = energyopt.solve(inst, "bruteforce")
    assert g.objective == pytest.approx(135.0)
    assert g.solution.config == ((2, 1000), (0, 0))
    assert h.objective == pytest.approx(130.0) == b.objective
    assert h.solution.config == ((1, 2000), (0, 0))
    assert gap(g.objective, h.bound) == pytest.approx(5.0 / 135.0)


@pytest.mark.parametrize("seed", range(12))
def test_greedy_never_beats_milp_and_milp_matches_bruteforce(seed):
    clocks = (795, 1110, 1530)
    inst = random_event(
        3 + seed % 3,
        8,
        4 if seed % 2 else 8,
        (0.25, 0.5, 0.8, 1.0)[seed % 4],
        seed=seed,
        clocks_mhz=clocks,
        max_gpus=4,
    )
    g = energyopt.solve(inst, "greedy")
    h = energyopt.solve(inst, "highs")
    b = energyopt.solve(inst, "bruteforce")
    assert h.termination.value == "optimal"
    assert h.objective == pytest.approx(b.objective, rel=1e-9)
    assert h.bound <= b.objective * (1 + 1e-9)
    # A heuristic below a proven optimum is a bug.
    assert g.objective >= h.bound * (1 - 1e-9)
    assert gap(g.objective, h.bound) >= 0


def test_smoke_suite_every_method():
    from energyopt.powercap.scenario import method_applies

    for inst in event_suite("smoke"):
        names = [m for m in energyopt.methods("powercap") if method_applies(inst, m)]
        results = {m: energyopt.solve(inst, m) for m in names}
        opt = results["bruteforce"].objective
        for m, r in results.items():
            assert r.objective is not None, (m, r.message)
            assert r.objective >= opt * (1 - 1e-9)
        assert results["highs"].objective == pytest.approx(opt)


def test_suite_names():
    # five simulated events, then the four from measured profiles (data or library copies)
    names = [i.name for i in event_suite("paper")]
    assert len(names) == 9 and sum(n.startswith("measured-") for n in names) == 4
    assert len(suite("paper")) == 9 + 3  # the events, then the simulation scenarios
    with pytest.raises(ValueError, match="unknown suite"):
        suite("large")


def test_infeasible_cap_is_an_explicit_result():
    # B must run (min_gpus 1); its cheapest option is 50 W + 10 W idle = 60 W,
    # above the cap 0.25 * 2 * 100 = 50 W.
    inst = dataclasses.replace(tiny_event(), eta=0.25)
    jobs = (inst.jobs[0], dataclasses.replace(inst.jobs[1], min_gpus=1))
    inst = dataclasses.replace(inst, jobs=jobs)
    for method in ("highs", "greedy", "bruteforce"):
        r = energyopt.solve(inst, method)
        assert r.termination.value == "infeasible", method
        assert r.objective is None and r.solution is None
        assert r.message


def test_job_needing_more_gpus_than_exist():
    inst = tiny_event()
    big = EventJob("C", 10.0, 0.0, (JobOption(4, 1000, 1.0, 100.0),), min_gpus=4)
    with pytest.raises(InstanceError, match=r"min_gpus = 4.*more GPUs than the cluster has \(2\)"):
        dataclasses.replace(inst, jobs=(*inst.jobs, big))
    opt = EventJob("C", 10.0, 0.0, (JobOption(1, 1000, 1.0, 50), JobOption(4, 1000, 1.0, 100.0)))
    with pytest.raises(InstanceError, match=r"options\[1\]\.num_gpus = 4"):
        dataclasses.replace(inst, jobs=(*inst.jobs, opt))


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"eta": 0.0}, "eta = 0.0"),
        ({"eta": float("nan")}, "eta"),
        ({"gpus_per_node": 3}, "gpus_per_node = 3"),
        ({"num_gpus": 3}, "num_gpus = 3"),
        ({"jobs": ()}, "jobs"),
        # P_max = 100 W: an idle GPU cannot draw more than a job at the highest clock.
        ({"idle_power_w": 100.5}, r"idle_power_w = 100.5: must be <= p_max_w = 100"),
        ({"idle_power_w": 1e16}, "too large"),
    ],
)
def test_bad_instances(change, match):
    with pytest.raises(InstanceError, match=match):
        dataclasses.replace(tiny_event(), **change)


def test_non_power_of_two_option():
    inst = tiny_event()
    bad = EventJob("C", 10.0, 0.0, (JobOption(1, 1000, 1.0, 50), JobOption(3, 1000, 1.0, 90)))
    with pytest.raises(InstanceError, match="power of two"):
        PowercapInstance(4, 2, 0.5, 100.0, 10.0, 0.0, (*inst.jobs, bad))


def test_evaluator_rejects_bad_decisions():
    inst = tiny_event()
    assert not evaluate(inst, ((2, 2000), (0, 0))).feasible  # 170 W > 100 W
    ev = evaluate(inst, ((2, 1000), (1, 1000)))  # 3 GPUs on a 2-GPU cluster
    assert not ev.feasible and any("GPUs used" in v for v in ev.violations)
    assert not evaluate(inst, ((1, 1500), (0, 0))).feasible  # not an option
    with pytest.raises(InstanceError, match="2 jobs"):
        evaluate(inst, ((1, 1000),))


def test_json_round_trip(tmp_path):
    inst = suite("smoke")[1]
    path = tmp_path / "event.json"
    inst.to_json(path)
    back = energyopt.load_instance(path)
    assert back.instance_id == inst.instance_id
    assert energyopt.solve(back, "highs").objective == pytest.approx(
        energyopt.solve(inst, "highs").objective
    )
    text = path.read_text().replace('"num_gpus": 8', '"num_gpus": 8.5', 1)
    path.write_text(text)
    with pytest.raises(InstanceError, match=r"event.json: num_gpus = 8.5"):
        energyopt.load_instance(path)


def test_result_checks_catch_solver_bugs():
    from energyopt.core.registry import EvaluationMismatchError
    from energyopt.core.status import TerminationReason
    from energyopt.powercap.methods import powercap_result

    inst = tiny_event()
    ok = powercap_result(
        inst,
        "x",
        ((1, 1000), (1, 1000)),
        termination=TerminationReason.OPTIMAL,
        solver_objective=105.0,
        bound=105.0,
    )
    assert ok.objective == pytest.approx(105.0)
    with pytest.raises(EvaluationMismatchError, match="rejected by the evaluator"):
        powercap_result(inst, "x", ((2, 2000), (0, 0)), termination=TerminationReason.OPTIMAL)
    with pytest.raises(EvaluationMismatchError, match="solver objective"):
        powercap_result(
            inst,
            "x",
            ((1, 1000), (1, 1000)),
            termination=TerminationReason.OPTIMAL,
            solver_objective=100.0,
        )
    with pytest.raises(EvaluationMismatchError, match="bound"):
        powercap_result(
            inst, "x", ((1, 1000), (1, 1000)), termination=TerminationReason.OPTIMAL, bound=110.0
        )


@pytest.mark.parametrize("k", range(4))
def test_greedy_starts_queued_jobs_when_waiting_costs_nothing(k):
    # Issue 12, item 5: with w = 0 a start step gains nothing by itself; the greedy used
    # to start no queued job at all (7551 s against the optimum 4402 s on smoke[0]).
    import dataclasses

    from energyopt.powercap import suites

    inst = dataclasses.replace(suites.suite("smoke")[k], wait_estimate_s=0.0)
    g = energyopt.solve(inst, "greedy")
    h = energyopt.solve(inst, "highs")
    assert g.solution is not None and any(n > 0 for n, _ in g.solution.config)
    assert g.objective >= h.objective - 1e-6
    assert g.objective <= 1.15 * h.objective


@pytest.mark.parametrize("k", range(4))
def test_greedy_slows_non_preemptible_jobs_to_fit_the_cap(k):
    # Issue 12, item 6: non-preemptible jobs started at their most efficient clock could
    # break the cap although a slower clock fits; the greedy answered "infeasible".
    import dataclasses

    from energyopt.powercap import suites

    inst = suites.suite("smoke")[k]
    jobs = tuple(dataclasses.replace(j, min_gpus=1) for j in inst.jobs[: inst.num_gpus])
    inst = dataclasses.replace(inst, jobs=jobs)
    # The cap: the least power of one GPU per job, plus idle GPUs, and 1 % to spare.
    low = sum(min(o.power_w for o in j.options if o.num_gpus == 1) for j in jobs)
    r = inst.gpus_per_node
    idle = inst.idle_power_w * (-(-len(jobs) // r) * r - len(jobs))
    inst = dataclasses.replace(inst, eta=1.01 * (low + idle) / (inst.num_gpus * inst.p_max_w))
    h = energyopt.solve(inst, "highs")
    g = energyopt.solve(inst, "greedy")
    assert h.objective is not None
    assert g.objective is not None and g.objective >= h.objective - 1e-6
