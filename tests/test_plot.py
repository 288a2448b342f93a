"""energyopt.plot: every plot renders (Agg) and draws the data it was given."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import energyopt  # noqa: E402
import energyopt.plot as eplot  # noqa: E402
from energyopt.pipeline import synthetic_instance  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _render(ax) -> None:
    ax.figure.canvas.draw()  # raises on a bad label (mathtext) or bad data


def test_frontier_lines_and_shaded_bounds():
    inst = synthetic_instance(2, 2, 3, seed=1)
    exact = energyopt.solve(inst, "exact-frontier", time_limit=30)
    crawl = energyopt.solve(inst, "perseus")
    frame = pd.concat([exact.frontier_frame(), crawl.frontier_frame()])
    assert list(frame.columns) == ["method", "deadline_s", "energy_j", "bound_j", "gap"]
    ax = eplot.frontier(frame, title="run $\\alpha_{1$ cost")
    _render(ax)
    lines = {ln.get_label(): ln for ln in ax.lines}
    assert set(lines) == {"exact-frontier", "perseus"}
    xs, ys = lines["perseus"].get_data()
    ff = crawl.frontier_frame()
    assert np.allclose(xs, ff["deadline_s"]) and np.allclose(ys, ff["energy_j"])
    assert len(ax.collections) == 1  # only the exact frontier has bounds: one band


def _cells() -> pd.DataFrame:
    # Three instances, two methods; b fails on i3.
    return pd.DataFrame(
        {
            "instance_id": ["i1", "i1", "i2", "i2", "i3", "i3"],
            "instance": ["i1", "i1", "i2", "i2", "i3", "i3"],
            "method": ["a", "b"] * 3,
            "runtime_s": [1.0, 2.0, 4.0, 1.0, 1.0, np.nan],
            "gap_to_best_bound": [0.0, 0.1, 0.02, 0.0, 0.0, np.nan],
        }
    )


def test_performance_profile_of_runtime_is_dolan_more():
    ax = eplot.performance_profile(_cells(), "runtime_s")
    _render(ax)
    curves = {ln.get_label(): ln.get_data() for ln in ax.lines}
    # a: ratios 1, 4, 1 -> 2/3 of instances at tau = 1, all at tau = 4.
    xs, ys = curves["a"]
    assert list(xs[1:4]) == [1.0, 1.0, 4.0] and list(ys[1:4]) == pytest.approx([1 / 3, 2 / 3, 1])
    # b: ratios 2, 1 and a failure: never reaches 1.
    xs, ys = curves["b"]
    assert list(xs[1:3]) == [1.0, 2.0] and max(ys) == pytest.approx(2 / 3)


def test_performance_profile_of_gap_in_percent():
    ax = eplot.performance_profile(_cells(), "gap_to_best_bound")
    xs, ys = dict((ln.get_label(), ln.get_data()) for ln in ax.lines)["b"]
    assert list(xs[1:3]) == pytest.approx([0.0, 10.0]) and max(ys) == pytest.approx(2 / 3)


def test_gap_heatmap_and_distribution():
    cells = _cells()
    ax = eplot.gap_heatmap(cells)
    _render(ax)
    data = ax.images[0].get_array()
    assert data.shape == (3, 2)
    assert data[0, 1] == pytest.approx(10.0) and bool(data.mask[2, 1])
    ax = eplot.gap_distribution(cells)
    _render(ax)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "b"]


def test_family_plots_render_with_their_data():
    ax = eplot.capacity_simulation(
        pd.DataFrame(
            {
                "method": ["fifo", "rg"],
                "energy_cost_eur": [2.0, 1.5],
                "tardiness_cost_eur": [1.0, 0.0],
                "late_jobs": [3, 0],
            }
        )
    )
    _render(ax)
    assert [p.get_height() for p in ax.patches] == [2.0, 1.5, 1.0, 0.0]
    runs = pd.DataFrame(
        {
            "policy": ["powerflow", "powerflow", "fifo"],
            "knob": ["eta", "eta", "clock_mhz"],
            "value": [0.3, 0.5, 1005],
            "mean_jct_s": [100.0, 50.0, 80.0],
            "energy_j": [3.6e6, 7.2e6, 5e6],
        }
    )
    ax = eplot.powerflow_eta(runs)
    _render(ax)
    pf = next(ln for ln in ax.lines if ln.get_label() == "powerflow")
    assert list(pf.get_xdata()) == [1.0, 2.0] and list(pf.get_ydata()) == [100.0, 50.0]
    replay = pd.DataFrame({"recurrence": [0, 0, 1, 2], "cost": [3.0, 1.0, 2.0, 1.0]})
    ax = eplot.zeus_regret(replay, optimal_cost=1.0)
    _render(ax)
    (regret,) = [ln for ln in ax.lines if "regret" in ln.get_label()]
    assert list(regret.get_ydata()) == [3.0, 4.0, 4.0]  # (4-1), +(2-1), +(1-1)
    profile = pd.DataFrame(
        {
            "knob": "sm_clock_mhz",
            "knob_value": [1410, 1005, 1410, 1005],
            "operation": ["forward", "forward", "backward", "backward"],
            "time_s": [1.0, 1.4, 2.0, 2.8],
            "energy_j": [300.0, 250.0, 600.0, 500.0],
        }
    )
    ax = eplot.profile_curves(profile)
    _render(ax)
    fwd = next(ln for ln in ax.lines if ln.get_label() == "forward: time")
    assert list(fwd.get_xdata()) == [1005, 1410] and list(fwd.get_ydata()) == [1.4, 1.0]
