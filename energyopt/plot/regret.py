"""Regret curves of replayed policies against two references (issue 25, item 3).

A tidy frame of cumulative regret per recurrence, one line per (method, reference):
solid against the clairvoyant lower bound (never below zero), dashed against the best
fixed arm in hindsight (negative where a policy beat every fixed arm so far). The
tuning family builds such a frame from its results
(:func:`energyopt.tuning.report.regret_frame`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pandas as pd

from energyopt.plot._axes import _axes, _legend, _text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

#: Line style of each reference.
STYLES = {"clairvoyant": "-", "hindsight": "--"}


def regret_curves(curves: pd.DataFrame, ax: Axes | None = None, *, title: str = "") -> Axes:
    """Cumulative regret against each reference, per recurrence and method.

    Parameters
    ----------
    curves
        Columns ``method``, ``reference`` (``"clairvoyant"`` or ``"hindsight"``),
        ``recurrence`` and ``regret`` (cumulative, in the objective's unit); rows of
        several seeds are averaged per recurrence.
    ax
        Axes to draw on (a new figure when None).
    title
        Title of the plot.
    """
    missing = {"method", "reference", "recurrence", "regret"} - set(curves.columns)
    if missing:
        raise KeyError(f"regret_curves needs the columns {sorted(missing)}")
    ax = _axes(ax)
    colors: dict[str, str] = {}
    for (method, reference), g in curves.groupby(["method", "reference"], sort=True):
        mean = g.groupby("recurrence")["regret"].mean().sort_index()
        (line,) = ax.plot(
            mean.index,
            mean.values,
            linestyle=STYLES.get(str(reference), ":"),
            color=colors.get(str(method)),
            label=f"{method} vs {reference}",
        )
        colors.setdefault(str(method), line.get_color())
    ax.axhline(0.0, color="grey", linewidth=0.8)
    _text(ax, title=title or "regret: solid vs clairvoyant bound, dashed vs best fixed arm",
          xlabel="recurrence", ylabel="cumulative regret")  # fmt: skip
    ax.grid(alpha=0.3)
    _legend(ax)
    return ax
