"""Plots of energyopt results (matplotlib, ``pip install energyopt[plot]``).

Every function takes tidy pandas DataFrames, as returned (from
:meth:`Result.frontier_frame`, :func:`energyopt.bench.read_results`,
:func:`energyopt.bench.read_frontiers`, :func:`energyopt.compare`, ...) and an optional
matplotlib ``Axes``, draws on it and returns it. matplotlib is imported
when a function is first called, so ``import energyopt.plot`` costs nothing.

Labels are drawn as plain text: mathtext parsing is switched off for the names that
come from data (an instance named ``run $\\alpha_{1$`` is text, not a formula).

- :func:`frontier`: time-energy frontiers per method, proven bounds shaded.
- :func:`frontier_gaps`: each frontier's gap to the proven bound against time.
- :func:`performance_profile`: Dolan-Moré profiles of runtime or gap across instances.
- :func:`gap_heatmap`: gap to the best bound by instance and method.
- :func:`gap_distribution`: gaps per method, one dot per cell.
- :func:`capacity_simulation`: capacity cost and late jobs of simulated runs.
- :func:`powerflow_eta`: PowerFlow mean JCT against energy over eta, with baselines.
- :func:`zeus_regret`: cumulative regret and cost per recurrence of a tuning replay.
- :func:`regret_curves`: cumulative regret against the clairvoyant bound and the best
  fixed arm in hindsight (:mod:`energyopt.plot.regret`).
- :func:`profile_curves`: measured time and energy against the clock.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from energyopt.plot._axes import _axes, _legend, _plt, _text
from energyopt.plot.regret import regret_curves

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = [
    "capacity_simulation",
    "frontier",
    "frontier_gaps",
    "gap_distribution",
    "gap_heatmap",
    "performance_profile",
    "powerflow_eta",
    "profile_curves",
    "regret_curves",
    "zeus_regret",
]


def frontier(
    points: pd.DataFrame,
    ax: Axes | None = None,
    *,
    title: str = "",
    bound: pd.DataFrame | None = None,
    curves: pd.DataFrame | None = None,
) -> Axes:
    """Time-energy frontiers, one line per method; proven lower bounds shaded.

    Parameters
    ----------
    points
        Columns ``method``, ``deadline_s``, ``energy_j`` and optionally ``bound_j`` and
        ``seed`` (as :meth:`Result.frontier_frame` or
        :func:`energyopt.bench.read_frontiers` give them).
    bound
        The proven bound at any time (columns ``deadline_s``, ``bound_j``: e.g. the bound
        curve on a grid): drawn, with the region below it shaded (no plan lies there).
        Without it, the band between each method's energy and its points' bounds is
        shaded (the optimum lies in it).
    curves
        Each frontier's energy at many times (``method``, optionally ``seed``,
        ``deadline_s``, ``energy_j``): drawn as its line, the points as markers. Without
        it, the points are joined by straight lines (a frontier between two points is
        not one: it rises with the blocking energy, then drops).
    """
    ax = _axes(ax)
    if bound is not None and bound["bound_j"].notna().any():
        b = bound[bound["bound_j"].notna()].sort_values("deadline_s")
        low = float(np.nanmin(points["energy_j"])) if len(points) else float(b["bound_j"].min())
        floor = min(low, float(b["bound_j"].min()))
        ax.fill_between(b["deadline_s"], floor - 0.02 * abs(floor), b["bound_j"], color="grey",
                        alpha=0.25, label="below the proven bound (no plan)")  # fmt: skip
        ax.plot(b["deadline_s"], b["bound_j"], color="black", linewidth=0.8, label="proven bound")
    for label, pts, color in _marked_lines(ax, points, curves, "energy_j", 1.0, 3, 1.0):
        if bound is None and "bound_j" in pts and pts["bound_j"].notna().any():
            b = pts[pts["bound_j"].notna()]
            ax.fill_between(
                b["deadline_s"], b["bound_j"], b["energy_j"], color=color, alpha=0.2,
                label=f"{label}: bound to energy",
            )  # fmt: skip
    _text(ax, title=title, xlabel="iteration time (s)", ylabel="energy per iteration (J)")
    ax.grid(alpha=0.3)
    _legend(ax)
    return ax


def frontier_gaps(
    points: pd.DataFrame,
    ax: Axes | None = None,
    *,
    title: str = "",
    curves: pd.DataFrame | None = None,
) -> Axes:
    """Each frontier point's gap (percent) to its proven bound against its time.

    ``points``: :func:`energyopt.bench.read_frontiers`'s frame (or
    :meth:`Result.frontier_frame`'s): columns ``method``, ``deadline_s``, ``gap`` and
    optionally ``seed``. Points without a bound are left out (the frame counts them).
    ``curves`` (``method``, ``seed``, ``deadline_s``, ``gap``): the frontier's gap at
    many times, drawn as its line (the points are then markers only).
    """
    ax = _axes(ax)
    _marked_lines(ax, points, curves, "gap", 100.0, 2, 0.8)
    ax.set_ylim(bottom=0.0)
    _text(ax, title=title, xlabel="iteration time (s)", ylabel="gap to the proven bound (%)")
    ax.grid(alpha=0.3)
    _legend(ax)
    return ax


def _marked_lines(
    ax: Axes,
    points: pd.DataFrame,
    curves: pd.DataFrame | None,
    column: str,
    scale: float,
    markersize: float,
    linewidth: float,
) -> list[tuple[str, pd.DataFrame, Any]]:
    """Each label's points of ``column`` (times ``scale``) against ``deadline_s``: markers
    on the label's line in ``curves`` when it has one, else joined by straight lines.
    Rows without a value are left out. Returns (label, its points, its colour)."""
    lines = dict(_by_label(curves)) if curves is not None else {}
    out = []
    for label, pts in _by_label(points):
        pts = pts[pts[column].notna()].sort_values("deadline_s")
        line = lines.get(label)
        style = {"linestyle": "none"} if line is not None else {"linewidth": linewidth}
        (mark,) = ax.plot(pts["deadline_s"], scale * pts[column], marker="o",
                          markersize=markersize, label=label, **style)  # fmt: skip
        if line is not None:
            line = line[line[column].notna()].sort_values("deadline_s")
            ax.plot(line["deadline_s"], scale * line[column], color=mark.get_color(),
                    linewidth=linewidth)  # fmt: skip
        out.append((label, pts, mark.get_color()))
    return out


def _by_label(points: pd.DataFrame) -> list[tuple[str, pd.DataFrame]]:
    if "seed" not in points:
        return [(str(m), g) for m, g in points.groupby("method", sort=True)]
    out = []
    for (m, s), g in points.groupby(["method", "seed"], sort=True, dropna=False):
        out.append((str(m) if pd.isna(s) else f"{m} (seed {s})", g))
    return out


def performance_profile(
    cells: pd.DataFrame,
    metric: str = "runtime_s",
    ax: Axes | None = None,
    *,
    instance: str = "instance_id",
    title: str = "",
) -> Axes:
    """Dolan-Moré performance profile of ``metric`` across instances, one curve per method.

    For ``runtime_s`` a method's ratio on an instance is its runtime over the best
    method's runtime there, and the curve gives the fraction of instances with ratio
    <= tau (log scale). For a gap column (``metric`` containing ``gap``) ratios are
    undefined at gap 0, so the curve is the fraction of instances with gap <= tau
    (gap in percent). Cells without a value (failed, killed, no bound) count as never
    solved: the curve of a method that lost cells never reaches 1.

    Parameters
    ----------
    cells
        One row per (instance, method) cell with columns ``method``, ``instance`` and
        ``metric``; several seeds of a method on an instance are averaged.
    """
    ax = _axes(ax)
    table = cells.pivot_table(index=instance, columns="method", values=metric, aggfunc="mean")
    table = table.reindex(
        index=sorted(cells[instance].unique()), columns=sorted(cells["method"].unique())
    )
    n = len(table.index)
    is_gap = "gap" in metric
    if is_gap:
        values = 100.0 * table
        xlabel = "gap tau (%)"
    else:
        best = table.min(axis=1).replace(0.0, np.nan)
        values = table.div(best, axis=0).where(table.notna())
        values[table.eq(0.0)] = 1.0
        xlabel = f"{metric} ratio to the best method, tau (log)"
    finite = values.to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    top = float(finite.max()) if finite.size else 1.0
    lo = 0.0 if is_gap else 1.0
    hi = max(top * 1.05, lo + 1e-9) if is_gap else max(top * 1.2, 1.05)
    for method in values.columns:
        v = np.sort(values[method].to_numpy(dtype=float))
        v = v[np.isfinite(v)]
        xs = np.concatenate([[lo], v, [hi]])
        ys = np.concatenate([[0.0], np.arange(1, len(v) + 1) / max(n, 1), [len(v) / max(n, 1)]])
        ax.step(xs, ys, where="post", label=str(method))
    if not is_gap:
        ax.set_xscale("log")
    ax.set_ylim(0.0, 1.02)
    _text(ax, title=title, xlabel=xlabel, ylabel="fraction of instances")
    ax.grid(alpha=0.3)
    _legend(ax)
    return ax


def gap_heatmap(
    cells: pd.DataFrame,
    ax: Axes | None = None,
    *,
    gap: str = "gap_to_best_bound",
    instance: str = "instance",
    title: str = "",
) -> Axes:
    """Gap (percent) by instance (rows) and method (columns); grey where there is none."""
    table = cells.pivot_table(index=instance, columns="method", values=gap, aggfunc="mean")
    table = table.reindex(
        index=sorted(cells[instance].unique()), columns=sorted(cells["method"].unique())
    )
    ax = _axes(ax, figsize=(1.2 + 0.9 * len(table.columns), 1.0 + 0.3 * len(table.index)))
    data = np.ma.masked_invalid(100.0 * table.to_numpy(dtype=float))
    cmap = _plt().get_cmap("viridis").with_extremes(bad="#dddddd")
    im = ax.imshow(data, aspect="auto", cmap=cmap, vmin=0.0)
    ax.set_xticks(range(len(table.columns)))
    ax.set_xticklabels([str(c) for c in table.columns], rotation=45, ha="right", fontsize=7)
    ax.set_yticks(range(len(table.index)))
    ax.set_yticklabels([str(i) for i in table.index], fontsize=7)
    for t in [*ax.get_xticklabels(), *ax.get_yticklabels()]:
        t.set_parse_math(False)
    ax.figure.colorbar(im, ax=ax, label="gap to best bound (%)")
    _text(ax, title=title)
    return ax


def gap_distribution(
    cells: pd.DataFrame, ax: Axes | None = None, *, gap: str = "gap_to_best_bound", title: str = ""
) -> Axes:
    """Gaps (percent) per method, one dot per cell, with the median as a bar."""
    ax = _axes(ax)
    methods = sorted(cells["method"].unique())
    for i, m in enumerate(methods):
        g = 100.0 * cells.loc[cells["method"] == m, gap].dropna().to_numpy(dtype=float)
        if g.size:
            jitter = (np.arange(g.size) % 7 - 3) * 0.04
            ax.scatter(i + jitter, g, s=10, alpha=0.7)
            ax.hlines(np.median(g), i - 0.3, i + 0.3, color="black", linewidth=1)
    ax.set_xticks(range(len(methods)))
    ax.set_xticklabels(methods, rotation=45, ha="right", fontsize=7)
    for t in ax.get_xticklabels():
        t.set_parse_math(False)
    _text(ax, title=title, ylabel="gap to best bound (%)")
    ax.grid(alpha=0.3, axis="y")
    return ax


def capacity_simulation(reports: pd.DataFrame | list[Any], ax: Axes | None = None) -> Axes:
    """Capacity cost (energy + tardiness, EUR) and late jobs per method of simulated runs.

    ``reports``: :class:`energyopt.capacity.simulator.SimulationReport` objects or a
    frame of their ``summary()`` rows (``method``, ``energy_cost_eur``,
    ``tardiness_cost_eur``, ``late_jobs``).
    """
    frame = _summaries(reports)
    ax = _axes(ax)
    x = np.arange(len(frame))
    ax.bar(x, frame["energy_cost_eur"], label="energy cost (EUR)")
    ax.bar(x, frame["tardiness_cost_eur"], bottom=frame["energy_cost_eur"],
           label="tardiness cost (EUR)")  # fmt: skip
    ax.set_xticks(x)
    ax.set_xticklabels(frame["method"].astype(str), rotation=30, ha="right", fontsize=7)
    right = ax.twinx()
    right.plot(x, frame["late_jobs"], "kD", label="late jobs")
    right.set_ylabel("late jobs")
    right.set_ylim(bottom=0)
    _text(ax, title="capacity: cost and late jobs (simulated)", ylabel="cost (EUR)")
    _legend(ax)
    return ax


def _summaries(reports: pd.DataFrame | list[Any]) -> pd.DataFrame:
    if isinstance(reports, pd.DataFrame):
        return reports.reset_index(drop=True)
    return pd.DataFrame([r.summary() if hasattr(r, "summary") else r for r in reports])


def powerflow_eta(runs: pd.DataFrame, ax: Axes | None = None) -> Axes:
    """Mean JCT (s) against energy (J): PowerFlow over eta, baselines over clocks.

    ``runs``: the frame of :func:`energyopt.powercap.experiments.fig7_sweep` (columns
    ``policy``, ``knob``, ``value``, ``mean_jct_s``, ``energy_j``).
    """
    ax = _axes(ax)
    for policy, g in runs.groupby("policy", sort=True):
        g = g.sort_values("value")
        ax.plot(g["energy_j"] / 3.6e6, g["mean_jct_s"], marker="o", markersize=3,
                label=str(policy))  # fmt: skip
        if (g["knob"] == "eta").all():
            for _, r in g.iterrows():
                ax.annotate(f"{r['value']:g}", (r["energy_j"] / 3.6e6, r["mean_jct_s"]),
                            fontsize=6)  # fmt: skip
    _text(ax, title="powercap: mean JCT vs energy (simulated)", xlabel="energy (kWh)",
          ylabel="mean JCT (s)")  # fmt: skip
    ax.grid(alpha=0.3)
    _legend(ax)
    return ax


def zeus_regret(runs: pd.DataFrame, optimal_cost: float, ax: Axes | None = None) -> Axes:
    """Cumulative regret and cost per recurrence of a tuning replay.

    Parameters
    ----------
    runs
        One row per training run with ``recurrence`` and ``cost`` (the replay's
        ``ReplayLog.runs``; several attempts of a recurrence are summed), and optionally
        ``policy`` for several replays side by side.
    optimal_cost
        The cost of the best configuration in hindsight (one recurrence).
    """
    ax = _axes(ax)
    if "policy" not in runs:
        runs = runs.assign(policy="replay")
    right = ax.twinx()
    for policy, g in runs.groupby("policy", sort=True):
        per = g.groupby("recurrence")["cost"].sum().sort_index()
        regret = (per - optimal_cost).cumsum()
        ax.plot(per.index, regret, label=f"{policy}: cumulative regret")
        right.plot(per.index, per, linestyle=":", linewidth=0.8, label=f"{policy}: cost")
    right.axhline(optimal_cost, color="grey", linewidth=0.8)
    right.set_ylabel("cost per recurrence")
    _text(ax, title="tuning: regret and cost per recurrence", xlabel="recurrence",
          ylabel="cumulative regret")  # fmt: skip
    ax.grid(alpha=0.3)
    _legend(ax)
    return ax


def profile_curves(profile: pd.DataFrame, ax: Axes | None = None) -> Axes:
    """Time and energy against the knob (clock or power limit) of a measured profile.

    ``profile``: a profile table (:mod:`energyopt.profiles.schema`: ``knob``,
    ``knob_value``, ``operation``, ``time_s``, ``energy_j``). One line per operation
    (and stage where given); time on the left axis, energy dashed on the right.
    """
    ax = _axes(ax)
    right = ax.twinx()
    keys = ["operation", "stage"] if "stage" in profile else ["operation"]
    for key, g in profile.groupby(keys, sort=True):
        g = g.sort_values("knob_value")
        name = " ".join(str(k) for k in (key if isinstance(key, tuple) else (key,)))
        (line,) = ax.plot(g["knob_value"], g["time_s"], marker=".", label=f"{name}: time")
        right.plot(g["knob_value"], g["energy_j"], linestyle="--", color=line.get_color())
    knob = str(profile["knob"].iloc[0]) if len(profile) else "knob"
    right.set_ylabel("energy (J), dashed")
    _text(ax, title="profile: time and energy vs knob", xlabel=knob, ylabel="time (s)")
    ax.grid(alpha=0.3)
    _legend(ax)
    return ax
