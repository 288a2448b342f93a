"""Property tests of the whole-run simulations (issue 25, item 4): random small job
streams; every online policy's cost, recomputed by the scenario's evaluator, is at
least the offline bound, and the bound is the least of the per-job relaxation (CAP-B3)
checked against SciPy's LP solver."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import energyopt
from energyopt.capacity.generators import SubmittedJob
from energyopt.capacity.instance import Node
from energyopt.capacity.offline import job_bound, job_configurations
from energyopt.capacity.scenario import CapacityScenario


@st.composite
def streams(draw):
    nodes = tuple(
        Node(f"n{i}", t, draw(st.integers(1, 3)), draw(st.floats(0, 300)), draw(st.floats(10, 400)))
        for i, t in enumerate(draw(st.lists(st.sampled_from(["A", "B"]), min_size=1, max_size=2)))
    )
    jobs = []
    for k in range(draw(st.integers(1, 4))):
        t1 = draw(st.floats(5, 200))
        table = {
            t: tuple(
                t1 * draw(st.floats(0.5, 2)) / g ** draw(st.floats(0.3, 1.0)) for g in (1, 2, 3)
            )
            for t in ("A", "B")
        }
        arrival = draw(st.floats(0, 500))
        jobs.append(
            SubmittedJob(
                f"j{k}",
                "x",
                arrival,
                arrival + draw(st.floats(0, 3000)),
                draw(st.floats(0, 1e-3)),
                draw(st.integers(1, 6)),
                table,
            )
        )
    return CapacityScenario("hyp", nodes, tuple(jobs), source="hypothesis")


@settings(max_examples=40, deadline=None)
@given(streams())
def test_policies_never_below_the_offline_bound(sc):
    bound = energyopt.solve(sc, "offline-bound").bound
    for method in ("online-fifo", "online-edf", "online-randomized-greedy"):
        r = energyopt.solve(sc, method, seed=0)
        assert r.objective is not None, r.message
        assert r.objective >= bound * (1 - 1e-9) - 1e-12, (method, r.objective, bound)


@settings(max_examples=40, deadline=None)
@given(streams())
def test_job_bound_is_the_linear_program_optimum(sc):
    # CAP-B3 solved by SciPy's HiGHS LP: variables (f_c, s), min sum f_c e_c + w s,
    # s >= a + sum f_c t_c - d, sum f_c = 1, f, s >= 0 (f_c = x_c / E_j).
    from scipy.optimize import linprog

    for job in sc.jobs:
        configs = job_configurations(sc, job)
        t = [c[0] for c in configs]
        e = [c[1] for c in configs]
        n = len(configs)
        res = linprog(
            c=[*e, job.tardiness_weight_eur_per_s],
            A_ub=[[*t, -1.0]],
            b_ub=[job.due_s - job.arrival_s],
            A_eq=[[1.0] * n + [0.0]],
            b_eq=[1.0],
            bounds=[(0, None)] * (n + 1),
            method="highs",
        )
        assert res.status == 0
        assert job_bound(sc, job) == pytest.approx(res.fun, rel=1e-7, abs=1e-12)
