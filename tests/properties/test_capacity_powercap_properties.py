"""Property-based audit of the capacity and powercap families (issue 12).

Random small rescheduling points and scheduling events (both variants, caps from
tight to loose): the MILP equals brute force, no bound exceeds the optimum,
``optimal`` only with a closed gap, and no heuristic falls below the optimum or
answers ``infeasible`` where brute force finds a solution.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

import energyopt
from energyopt.capacity.generators import random_point
from energyopt.core.gap import gap
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.powercap.suites import random_event


def _tol(x: float) -> float:
    return 1e-7 * max(1.0, abs(x))


def _check_against(reference, result, method: str) -> None:
    opt = reference.objective
    assert result.termination is not TerminationReason.ERROR, (method, result.message)
    if opt is not None and method != "bruteforce":
        assert result.termination is not TerminationReason.INFEASIBLE, method
    if result.objective is not None:
        assert result.objective >= opt - _tol(opt), method
    if result.bound is not None and opt is not None:
        assert result.bound <= opt + _tol(opt), method
    if result.status is SolutionStatus.OPTIMAL:
        assert gap(result.objective, result.bound) <= 1e-4, method


@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(1, 3),
    jobs=st.integers(1, 4),
    running=st.sampled_from([0.0, 0.5, 1.0]),
    work_conserving=st.booleans(),
)
def test_capacity_methods_against_brute_force(seed, nodes, jobs, running, work_conserving):
    inst = random_point(
        seed, nodes, jobs, max_gpus=2, running_fraction=running, work_conserving=work_conserving
    )
    brute = energyopt.solve(inst, "bruteforce")
    assert brute.status is SolutionStatus.OPTIMAL
    h = energyopt.solve(inst, "highs", time_limit=120)
    assert h.objective is not None and abs(h.objective - brute.objective) <= _tol(brute.objective)
    for method in ("highs", "randomized-greedy", "fifo", "edf", "priority"):
        r = h if method == "highs" else energyopt.solve(inst, method, seed=seed)
        _check_against(brute, r, method)


@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 4),
    eta=st.sampled_from([0.2, 0.3, 0.5, 0.8, 1.0]),
    per_node=st.sampled_from([4, 8]),
    wait=st.sampled_from([None, 0.0]),
)
def test_powercap_methods_against_brute_force(seed, jobs, eta, per_node, wait):
    import dataclasses

    inst = random_event(jobs, 8, per_node, eta, seed=seed, clocks_mhz=(795, 1110, 1530), max_gpus=4)
    if wait is not None:  # the degenerate waiting estimate of issue 12, item 5
        inst = dataclasses.replace(inst, wait_estimate_s=wait)
    brute = energyopt.solve(inst, "bruteforce")
    if brute.objective is None:
        return  # the cap is below every configuration: nothing to compare
    for method in ("highs", "greedy", "greedy-printed"):
        _check_against(brute, energyopt.solve(inst, method, time_limit=120), method)


def _random_capacity_assignment(inst, rng):
    """Any assignment (feasible or not): a random compatible (node, gpus) or postponed."""
    out = []
    for j in range(inst.num_jobs):
        nodes = inst.compatible_nodes[j]
        if not nodes or rng.random() < 0.3:
            out.append(None)
            continue
        n = int(rng.choice(nodes))
        out.append((n, int(rng.integers(1, inst.nodes[n].num_gpus + 1))))
    return tuple(out)


@given(
    seed=st.integers(0, 10_000),
    nodes=st.integers(1, 3),
    jobs=st.integers(1, 5),
    running=st.sampled_from([0.0, 0.5, 1.0]),
    work_conserving=st.booleans(),
)
def test_capacity_evaluator_agrees_with_an_independent_recomputation(
    seed, nodes, jobs, running, work_conserving
):
    import math

    import numpy as np

    from energyopt.capacity.evaluator import evaluate

    inst = random_point(
        seed, nodes, jobs, max_gpus=2, running_fraction=running, work_conserving=work_conserving
    )
    a = _random_capacity_assignment(inst, np.random.default_rng(seed))
    ev = evaluate(inst, a)
    # CAP-0 by hand (formulations/capacity.md, Sec. 2).
    busy = [0] * inst.num_nodes
    times = {}
    for j, x in enumerate(a):
        if x is not None:
            busy[x[0]] += x[1]
            times[j] = inst.remaining_time_s(j, *x)
    theta = min(times.values()) if times else inst.idle_horizon_s
    power = sum(node.power_w(u) for node, u in zip(inst.nodes, busy) if u >= 1)
    energy = inst.eur_per_joule * theta * power
    tard = sum(
        inst.jobs[j].tardiness_weight_eur_per_s * max(0.0, inst.now_s + t - inst.jobs[j].due_s)
        for j, t in times.items()
    )
    post = inst.postponement_penalty * sum(
        job.tardiness_weight_eur_per_s
        * max(0.0, inst.now_s + theta + inst.min_restart_time_s[j] - job.due_s)
        for j, job in enumerate(inst.jobs)
        if a[j] is None
    )
    full = all(u <= node.num_gpus for node, u in zip(inst.nodes, busy))
    idle = any(
        a[j] is None and any(busy[n] < inst.nodes[n].num_gpus for n in inst.compatible_nodes[j])
        for j in range(inst.num_jobs)
    )
    assert ev.feasible == (full and not (work_conserving and idle))
    for got, want in ((ev.energy_cost_eur, energy), (ev.tardiness_cost_eur, tard)):
        assert math.isclose(got, want, rel_tol=1e-12, abs_tol=1e-12)
    assert math.isclose(ev.postponement_cost_eur, post, rel_tol=1e-12, abs_tol=1e-12)


@given(
    seed=st.integers(0, 10_000),
    jobs=st.integers(1, 5),
    eta=st.sampled_from([0.2, 0.5, 1.0]),
    per_node=st.sampled_from([2, 4, 8]),
)
def test_powercap_evaluator_agrees_with_an_independent_recomputation(seed, jobs, eta, per_node):
    import math

    import numpy as np

    from energyopt.powercap.evaluator import evaluate

    inst = random_event(jobs, 8, per_node, eta, seed=seed, clocks_mhz=(795, 1110, 1530), max_gpus=4)
    rng = np.random.default_rng(seed)
    config = []
    for job in inst.jobs:
        if job.min_gpus == 0 and rng.random() < 0.3:
            config.append((0, 0))
        else:
            o = job.options[int(rng.integers(len(job.options)))]
            config.append((o.num_gpus, o.sm_clock_mhz))
    ev = evaluate(inst, config)
    # PC-9/PC-10 and PC-13..PC-15 by hand.
    jct, power, used = [], 0.0, 0
    for j, (job, (n, f)) in enumerate(zip(inst.jobs, config)):
        if n == 0:
            jct.append(inst.queued_jct_s(j))
            continue
        o = next(o for o in job.options if (o.num_gpus, o.sm_clock_mhz) == (n, f))
        jct.append(job.age_s + job.remaining_iterations * o.iter_time_s)
        power += o.power_w
        used += n
    r = inst.gpus_per_node
    power += inst.idle_power_w * (math.ceil(used / r) * r - used)
    assert math.isclose(ev.mean_jct_s, sum(jct) / len(jct), rel_tol=1e-12)
    assert math.isclose(ev.power_w, power, rel_tol=1e-12, abs_tol=1e-9)
    fits = used <= inst.num_gpus and power <= inst.power_cap_w * (1 + 1e-9) + 1e-9
    min_ok = all(n >= job.min_gpus for job, (n, _) in zip(inst.jobs, config))
    assert ev.feasible == (fits and min_ok)
