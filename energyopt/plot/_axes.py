"""Axes helpers shared by the :mod:`energyopt.plot` modules (below all of them, so that
``energyopt.plot`` and ``energyopt.plot.regret`` import them without importing each other)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes


def _plt() -> Any:
    """matplotlib.pyplot, with a clear error when the ``plot`` extra is missing."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("energyopt.plot needs matplotlib: pip install 'energyopt[plot]'") from exc
    return plt


def _axes(ax: Axes | None, figsize: tuple[float, float] = (6.0, 3.8)) -> Axes:
    if ax is not None:
        return ax
    _, ax = _plt().subplots(figsize=figsize, dpi=90)
    return ax


def _text(ax: Axes, **labels: str) -> None:
    """Set title/xlabel/ylabel as literal text (no mathtext)."""
    if "title" in labels:
        ax.set_title(labels["title"], fontsize=9, parse_math=False)
    if "xlabel" in labels:
        ax.set_xlabel(labels["xlabel"], parse_math=False)
    if "ylabel" in labels:
        ax.set_ylabel(labels["ylabel"], parse_math=False)


def _legend(ax: Axes) -> None:
    handles, labels = ax.get_legend_handles_labels()
    if handles:
        leg = ax.legend(handles, labels, fontsize=7)
        for t in leg.get_texts():
            t.set_parse_math(False)
