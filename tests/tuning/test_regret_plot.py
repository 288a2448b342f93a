"""Regret curves against the clairvoyant bound and the best fixed arm (issue 25, item 3)."""

from __future__ import annotations

import pytest

import energyopt
from energyopt.tuning.report import regret_frame
from energyopt.tuning.suites import suite

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_regret_frame_and_plot():
    import matplotlib.pyplot as plt

    from energyopt.plot import regret_curves

    inst = suite("smoke")[0]
    results = [energyopt.solve(inst, m, seed=0) for m in ("zeus", "default")]
    frame = regret_frame(results)
    T = inst.recurrences
    assert len(frame) == 2 * 2 * T  # two methods, two references, T recurrences
    clair = frame[frame["reference"] == "clairvoyant"]
    # Against the clairvoyant bound regret never decreases and never goes below 0.
    for _, g in clair.groupby("method"):
        r = g.sort_values("recurrence")["regret"].to_numpy()
        assert (r >= -1e-6).all() and (r[1:] >= r[:-1] - 1e-6).all()
    # The last point is the method's total minus the reference's total.
    z = results[0]
    last = clair[(clair["method"] == "zeus")]["regret"].iloc[-1]
    assert last == pytest.approx(z.objective - z.extra["clairvoyant_bound"])
    fig, ax = plt.subplots()
    regret_curves(frame, ax=ax)
    assert len(ax.get_lines()) == 4 + 1  # four curves and the zero line
    plt.close(fig)
    with pytest.raises(KeyError, match="regret"):
        regret_curves(frame.drop(columns="regret"))
