"""The large-neighbourhood search (``pipeline/exact/lns.py``, method ``lns``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import energyopt
from energyopt.core.instance import load_instance
from energyopt.core.status import TerminationReason
from energyopt.pipeline import random_dag_instance
from energyopt.pipeline.evaluator import evaluate, fastest_choice
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.exact.lns import SubMilp, neighbourhood_search
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.schedules import Computation
from tests.timing import assert_within, loaded, measured

PAPER = Path(__file__).resolve().parents[3] / "instances" / "pipeline" / "paper"


def _chain(deadline_s: float) -> PemInstance:
    # One stage, a -> b, no blocking power. a: (1 s, 10 J) or (2 s, 6 J);
    # b: (1 s, 8 J) or (3 s, 3 J).
    tables = {
        "a": OptionTable((1410, 1000), (1.0, 2.0), (10.0, 6.0)),
        "b": OptionTable((1410, 1000), (1.0, 3.0), (8.0, 3.0)),
    }
    comps = (Computation(0, "compute", 0, "a"), Computation(0, "compute", 1, "b"))
    return PemInstance(1, comps, ((0, 1),), tables, 0.0, deadline_s=deadline_s)


@pytest.mark.parametrize(
    ("deadline_s", "optimum_j"),
    [
        (2.0, 18.0),  # only (1 s, 1 s) fits: 10 + 8
        (3.0, 14.0),  # (2 s, 1 s) = 6 + 8 beats (1 s, 1 s) = 18; (1 s, 3 s) takes 4 s
        (4.0, 13.0),  # (1 s, 3 s) = 10 + 3 beats (2 s, 1 s) = 14; (2 s, 3 s) takes 5 s
    ],
)
def test_sub_milp_with_everything_free_is_the_optimum(deadline_s, optimum_j):
    inst = _chain(deadline_s)
    start = fastest_choice(inst).choice
    plan, proven = SubMilp(inst).solve(start, np.ones(2, dtype=bool), time_limit=10.0)
    assert proven
    assert evaluate(inst, plan).energy_j == pytest.approx(optimum_j)


def test_sub_milp_with_everything_fixed_returns_the_incumbent():
    inst = random_dag_instance(8, 3, seed=3)
    start = fastest_choice(inst).choice
    plan, proven = SubMilp(inst).solve(start, np.zeros(8, dtype=bool), time_limit=10.0)
    assert proven and plan == start


def test_sub_milp_keeps_freed_options_within_reach():
    inst = random_dag_instance(10, 3, seed=5, deadline_fraction=1.0)
    model = SubMilp(inst)
    start = fastest_choice(inst).choice
    plan, _ = model.solve(start, np.ones(10, dtype=bool), time_limit=10.0, reach=1)
    for i, (a, b) in enumerate(zip(start, plan, strict=True)):
        assert abs(int(model.rank[i][a]) - int(model.rank[i][b])) <= 1
    # Without the limit some computation moves two places here, so the limit bound.
    free, _ = model.solve(start, np.ones(10, dtype=bool), time_limit=10.0)
    moved = [
        abs(int(model.rank[i][a]) - int(model.rank[i][b]))
        for i, (a, b) in enumerate(zip(start, free, strict=True))
    ]
    assert max(moved) >= 2


@pytest.mark.parametrize("seed", range(8))
def test_lns_against_brute_force(seed):
    inst = random_dag_instance(9, 3, seed=seed)
    _, opt = brute_force(inst, inst.deadline_s)
    r = energyopt.solve(inst, "lns", time_limit=30, seed=seed, max_idle=10)
    rounding = energyopt.solve(inst, "relaxation-rounding", time_limit=30)
    assert r.objective is not None and r.objective >= opt - 1e-6 * max(1.0, opt)
    assert r.bound is not None and r.bound <= opt + 1e-6 * max(1.0, opt)
    # The search starts from the rounded plan and only accepts improvements.
    assert r.objective <= rounding.objective + 1e-9


def test_lns_without_a_deadline_gives_a_plan_and_a_valid_bound():
    inst = random_dag_instance(8, 3, seed=2).with_deadline(None)
    _, opt = brute_force(inst, None)
    r = energyopt.solve(inst, "lns", time_limit=30, max_idle=5)
    assert r.objective >= opt - 1e-6 * max(1.0, opt)
    assert r.bound <= opt + 1e-6 * max(1.0, opt)


def test_search_improves_a_paper_instance_and_keeps_its_time_limit():
    inst, _ = load_instance(PAPER / "002-synthetic-1f1b-8x48-k10-seed0.json").filter_dominated()
    start = fastest_choice(inst).choice
    with measured() as used:
        plan, stats = neighbourhood_search(inst, start, time_limit=3.0, seed=0)
    assert_within(used, 3.0, "neighbourhood_search")
    assert evaluate(inst, plan).feasible
    assert stats.sub_milps >= stats.improvements
    if not loaded(used):  # how far the search gets in 3 s depends on the machine's load
        assert evaluate(inst, plan).energy_j < evaluate(inst, start).energy_j
        assert stats.improvements >= 1


def test_lns_method_returns_within_its_time_limit_on_8x96():
    inst = load_instance(PAPER / "003-synthetic-1f1b-8x96-k10-seed0.json")
    with measured() as used:
        r = energyopt.solve(inst, "lns", time_limit=4)
    assert_within(used, 4.0, "lns")
    assert r.termination is TerminationReason.TIME_LIMIT
    assert r.objective is not None, r.message
    assert r.bound is not None or loaded(used), f"no bound although the method ran: {used}"
    assert r.bound is None or r.bound < r.objective


def test_search_gives_cut_off_sub_milps_more_time_once_all_options_are_open():
    inst, _ = load_instance(PAPER / "002-synthetic-1f1b-8x48-k10-seed0.json").filter_dominated()
    start = fastest_choice(inst).choice
    # Sub-MILPs of 0.02 s over a fifth of an 8 x 48 iteration are cut off: every idle
    # streak of 2 then doubles their limit.
    _, stats = neighbourhood_search(
        inst, start, time_limit=3.0, seed=0, window=0.2, sub_time_limit=0.02, max_idle=2
    )
    assert stats.reach is None
    assert stats.sub_time_limit >= 0.04
    assert stats.solved_to_optimality < stats.sub_milps
