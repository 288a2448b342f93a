"""The PEM family's hooks: energy at an iteration time read off a frontier (the one definition)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from energyopt.core.registry import family_hooks
from energyopt.core.result import FrontierPoint
from energyopt.pipeline.exact.frontier import energy_at as old_home
from energyopt.pipeline.paretoset import energy_at


def test_energy_at_by_hand():
    # Points (makespan s, energy J) = (1, 10) and (2, 7), P_b * S = 1 W x 2 stages = 2 W:
    # E*(1.5) = 10 + 2 * 0.5 = 11 (only the first point is fast enough);
    # E*(2.0) = min(10 + 2 * 1, 7 + 0) = 7; nothing is feasible at 0.9 s.
    inst = SimpleNamespace(p_blocking_w=1.0, num_stages=2)
    pts = [FrontierPoint(1.0, 10.0), FrontierPoint(2.0, 7.0)]
    assert energy_at(inst, pts, 1.5) == pytest.approx(11.0)
    assert energy_at(inst, pts, 2.0) == pytest.approx(7.0)
    assert energy_at(inst, pts, 0.9) == float("inf")
    hooks = family_hooks("pipeline")
    assert hooks.frontier_objective_at(inst, pts, 3.0) == pytest.approx(9.0)  # 7 + 2 * 1
    assert old_home is energy_at


def test_pipeline_hooks_describe_the_family():
    hooks = family_hooks("pipeline")
    assert (hooks.name, hooks.objective_unit, hooks.has_frontiers) == ("pipeline", "J", True)
    assert "frontier" in hooks.plots
