"""Every registered method of every family returns within its time limit plus a second.

The rule (README, "Time limits are limits") holds for exact methods and heuristics
alike; each runs here on the largest committed instance of its family, where most of
them cannot finish in the limit. A method may refuse an instance that is too large for
it (brute force), as long as it says so at once.

The limit is checked in a way that a loaded machine cannot break (``tests/timing.py``):
in wall time, or else in the method's own CPU time. The strict wall-clock check is the
``wallclock`` test below, which ``make test`` leaves out and
``benchmarks/time_limits.py`` runs.
"""

from __future__ import annotations

import dataclasses
import importlib
from pathlib import Path

import pytest

import energyopt
from energyopt.core.instance import load_instance
from energyopt.core.registry import families, family_hooks, methods
from energyopt.core.result import Result
from tests.timing import ALLOWANCE_S, assert_within, measured

ROOT = Path(__file__).resolve().parents[1]
LIMIT_S = 0.2
#: The committed instance that takes each family's methods longest.
LARGEST = {
    "capacity": "instances/capacity/paper/016-paper-s2-n100-point100.json",
    "pipeline": "instances/pipeline/paper/012-gpt3-175b-a100-1f1b-8x96-t1.json",
    "powercap": "instances/powercap/paper/004-random-event-j60-g64x8-eta0-8-seed104.json",
}


def _instance(family: str, method: str):
    if family == "tuning":
        from energyopt.tuning.suites import suite

        # 200,000 recurrences: a full replay takes minutes.
        return dataclasses.replace(suite("smoke")[0], recurrences=200_000)
    inst = load_instance(ROOT / LARGEST[family])
    applies = family_hooks(family).method_applies
    if applies is not None and not applies(inst, method):
        # A whole-trace simulation method: the family's largest simulation scenario.
        module = importlib.import_module(f"energyopt.{family}.simsuites")
        inst = module.scenario_suite("paper")[-1]
    return inst


CASES = [(f, m) for f in families() if f in (*LARGEST, "tuning") for m in sorted(methods(f))]


def _run(family: str, method: str):
    """(result or None when refused, usage) of one call with :data:`LIMIT_S`."""
    inst = _instance(family, method)
    res = None
    with measured() as used:
        try:
            res = energyopt.solve(inst, method, time_limit=LIMIT_S, seed=0)
        except ValueError as exc:  # refused as too large: must be said before any work
            assert "exceed" in str(exc) or "too" in str(exc), exc
    if isinstance(res, Result):
        # The reported runtime is the method's whole call, not a part of it.
        assert res.runtime_s <= used.wall_s + 1e-3
    return res, used


@pytest.mark.parametrize(("family", "method"), CASES, ids=[f"{f}-{m}" for f, m in CASES])
def test_method_returns_within_its_time_limit(family, method):
    _, used = _run(family, method)
    assert_within(used, LIMIT_S, method)


@pytest.mark.wallclock
@pytest.mark.parametrize(("family", "method"), CASES, ids=[f"{f}-{m}" for f, m in CASES])
def test_method_returns_within_its_time_limit_in_wall_time(family, method):
    # The contract in wall seconds alone: on an idle machine only (benchmarks/time_limits.py).
    res, used = _run(family, method)
    assert used.wall_s <= LIMIT_S + ALLOWANCE_S, f"{method} took {used.wall_s:.2f} s"
    if isinstance(res, Result):
        assert res.runtime_s >= 0.5 * used.wall_s - 0.05, (res.runtime_s, used.wall_s)
