"""The frames of a store as returned fit every plot; every frontier point carries a bound."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import energyopt.bench as bench  # noqa: E402
import energyopt.plot as eplot  # noqa: E402
from energyopt.bench.runner import plan_cells, run_bench  # noqa: E402
from energyopt.pipeline import synthetic_instance  # noqa: E402

METHODS = ["highs", "exact-frontier", "perseus", "zeus-global", "envpipe"]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("frames")
    files = []
    for seed in (0, 1):
        path = tmp / f"syn{seed}.json"
        synthetic_instance(2, 2, 3, seed=seed).to_json(path)
        files.append(path)
    path = tmp / "r.sqlite"
    run_bench(plan_cells(files=files, methods=METHODS, time_limit_s=30), path, jobs=1,
              progress=False)  # fmt: skip
    return path


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_read_results_fits_every_cell_plot(store):
    cells = bench.read_results(store)
    assert isinstance(cells, pd.DataFrame) and cells.attrs["problems"] == []
    for col in ("best_bound", "gap_to_best_bound", "proven_by", "instance", "useful_bound"):
        assert col in cells
    # highs proves each optimum: every solved cell has a gap against it, named by highs.
    assert cells["gap_to_best_bound"].notna().all()
    assert set(cells["proven_by"]) == {"highs (seed 0)"} or all(
        "highs" in p for p in cells["proven_by"]
    )
    for draw in (
        lambda: eplot.gap_heatmap(cells),
        lambda: eplot.gap_distribution(cells),
        lambda: eplot.performance_profile(cells, "gap_to_best_bound"),
        lambda: eplot.performance_profile(cells, "runtime_s"),
    ):
        draw().figure.canvas.draw()


def test_read_frontiers_is_one_frame_with_a_bound_at_every_point(store):
    points = bench.read_frontiers(store)
    assert isinstance(points, pd.DataFrame) and points.attrs["problems"] == []
    assert {"bound_j", "gap", "below_bound"} <= set(points.columns)
    assert set(points["method"]) == {"exact-frontier", "perseus", "zeus-global"}
    assert points["bound_j"].notna().all()
    assert not points["below_bound"].any()
    assert (points["gap"] >= -1e-9).all()
    for _, pts in points.groupby("instance_id"):
        ax = eplot.frontier(pts)
        ax.figure.canvas.draw()
        ax = eplot.frontier_gaps(pts)
        ax.figure.canvas.draw()
        drawn = {ln.get_label() for ln in ax.lines}
        assert {"perseus (seed 0)", "zeus-global (seed 0)"} <= drawn


def test_an_exact_frontier_in_the_store_is_the_bound(store):
    points = bench.read_frontiers(store)
    # The exact frontier's own points are bounded by its own solves: gap 0 where closed.
    exact = points[points["method"] == "exact-frontier"]
    assert np.median(exact["gap"]) == pytest.approx(0.0, abs=1e-9)


def test_smoke_report_bounds_every_heuristic_frontier_point(tmp_path):
    """Issue 25's done-when, on the smoke suite's pipeline cells (the demo's report)."""
    from energyopt.bench.report import make_report
    from energyopt.core.registry import methods

    path = tmp_path / "smoke.sqlite"
    cells = plan_cells(suite="smoke", families=["pipeline"], time_limit_s=30)
    run_bench(cells, path, jobs=2, progress=False)
    report = make_report(path, tmp_path / "report")
    points = bench.read_frontiers(path)
    registered = methods("pipeline")
    heuristics = [m for m in points["method"].unique() if not registered[m].exact]
    assert heuristics
    for m in heuristics:
        pts = points[points["method"] == m]
        assert pts["bound_j"].notna().mean() >= 0.99, m
    assert not points["below_bound"].any()
    assert not [b for b in report.bugs if "below its proven bound" in b]
    for iid in points["instance_id"].unique():
        assert f"frontier-{iid}-gapcurve.png" in report.plots
        assert f"frontier-{iid}.png" in report.plots
    assert dict(report.provenance)["cells computed by"].startswith("0.")
    md = (tmp_path / "report" / "summary.md").read_text()
    assert "Each frontier against the bound" in md and "- energyopt version:" in md
