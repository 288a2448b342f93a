"""Fig. 7 helpers: JCT ratios at equal energy, the plot, the event gap table."""

from __future__ import annotations

import pandas as pd
import pytest

from energyopt.powercap.experiments import event_gap_table, jct_ratios, plot_fig7
from energyopt.powercap.suites import suite


def _df():
    rows = [
        ("powerflow", 100.0, 50.0),
        ("powerflow", 120.0, 30.0),
        ("fifo", 90.0, 200.0),  # less energy than any PowerFlow run: not compared
        ("fifo", 110.0, 150.0),  # PowerFlow with <= 110 J: 50 s -> 3.0x
        ("fifo", 130.0, 60.0),  # PowerFlow with <= 130 J: best 30 s -> 2.0x
        ("afs", 125.0, 27.0),  # 27 / 30 = 0.9x
    ]
    df = pd.DataFrame(rows, columns=["policy", "energy_j", "mean_jct_s"])
    return df.assign(value=range(len(df)))


def test_jct_ratios_by_hand():
    t = jct_ratios(_df()).set_index("baseline")
    assert t.loc["fifo", "runs"] == 3 and t.loc["fifo", "compared"] == 2
    assert t.loc["fifo", "max_ratio"] == pytest.approx(3.0)
    assert t.loc["fifo", "min_ratio"] == pytest.approx(2.0)
    assert t.loc["afs", "max_ratio"] == pytest.approx(0.9)
    assert t.loc["fifo", "paper_max_ratio"] == 3.39
    assert t.loc["las", "compared"] == 0


def test_plot_writes_a_file(tmp_path):
    path = plot_fig7(_df(), str(tmp_path / "fig7.png"))
    assert (tmp_path / "fig7.png").stat().st_size > 1000
    assert path.endswith("fig7.png")


def test_gap_table_never_negative():
    t = event_gap_table(suite("smoke")[:2], time_limit=10)
    assert len(t) == 2
    assert (t["gap_greedy"] >= 0).all()
    assert (t["milp_termination"] == "optimal").all()
    assert (t["greedy_jct_s"] >= t["milp_bound_s"] * (1 - 1e-9)).all()
