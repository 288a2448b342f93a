"""Every relaxation bound at a deadline holds for every plan the evaluator accepts there.

The evaluator accepts a makespan up to ``T (1 + DEADLINE_RTOL)``; a bound taken at ``T``
itself was above such a plan (``data/pem-bound-tolerance.json``, from the audit's repro).
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from energyopt.core.instance import load_instance
from energyopt.core.result import FrontierPoint
from energyopt.pipeline.evaluator import evaluate
from energyopt.pipeline.relaxation.hull import bound_curve, certify_frontier, relaxation_bound

REPRO = Path(__file__).parent / "data" / "pem-bound-tolerance.json"
#: The fastest makespan of the repro (every computation at its fastest option).
T_FAST = 0.11067491197138096


def _least_accepted_energy(instance, deadline_s: float) -> tuple[float, tuple[int, ...]]:
    """Brute force over all 3*3*4*3*4 = 432 plans: the cheapest one accepted at the deadline."""
    best = (float("inf"), ())
    for choice in itertools.product(*(range(len(t)) for t in instance.option_times)):
        ev = evaluate(instance, choice, deadline_s)
        if ev.feasible and ev.energy_j < best[0]:
            best = (ev.energy_j, choice)
    return best


def test_bounds_at_the_fastest_makespan_hold_for_accepted_plans():
    inst = load_instance(REPRO)
    opt, choice = _least_accepted_energy(inst, T_FAST)
    # The audit's plan is accepted (makespan 0.11067491207, 9e-10 relative above T) at
    # 68.36 J; bounds taken at T itself gave 83.62 J.
    audit = evaluate(inst, (1, 0, 0, 1, 0), T_FAST)
    assert audit.feasible
    assert opt <= audit.energy_j == pytest.approx(68.3554, abs=1e-3)
    curve = bound_curve(inst)
    assert curve.energy_bound(T_FAST) <= opt
    assert curve.energy_bounds([T_FAST])[0] <= opt
    assert relaxation_bound(inst, T_FAST) <= opt
    (point,), _ = certify_frontier(curve, (FrontierPoint(T_FAST, opt, choice),))
    assert point.bound <= opt


def test_curve_bounds_hold_at_every_makespan_of_the_repro():
    inst = load_instance(REPRO)
    curve = bound_curve(inst)
    times = sorted({
        evaluate(inst, c, None).iteration_time_s
        for c in itertools.product(*(range(len(t)) for t in inst.option_times))
    })  # fmt: skip
    for T in times:
        opt, _ = _least_accepted_energy(inst, T)
        assert curve.energy_bound(T) <= opt * (1 + 1e-12), T
