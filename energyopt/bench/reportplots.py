"""The gap report's plots (PNG), drawn with :mod:`energyopt.plot` from the report's frames.

Per family: the gap distribution, performance profiles and the gap heatmap of the cells.
Per instance with frontiers (at most :data:`MAX_FRONTIER_PLOTS` per family, by display
name): the frontiers of every method with the proven bound shaded under them, and each
frontier's gap to the bound against time; both drawn as the family's frontier function
on a grid of times (what the summary measures), with the frontier points as markers.
"""

from __future__ import annotations

import io
import sys
from typing import Any

import numpy as np
import pandas as pd

from energyopt.bench.frontiers import StoreFrontiers

#: At most this many instances per family get frontier plots (the first, by display name).
MAX_FRONTIER_PLOTS = 48


def report_plots(
    cells: pd.DataFrame,
    frontier_points: pd.DataFrame,
    found: StoreFrontiers,
    problems: list[str],
    sections: dict[str, list[Any]] | None = None,
) -> tuple[dict[str, bytes], dict[str, str]]:
    """(file name -> PNG bytes, file name -> family); a plot that fails is a problem line.

    ``sections``: the families' own report sections, whose plots are drawn too.
    """
    try:
        import matplotlib
    except ImportError:
        # Plots are optional (pip install energyopt[plot]); the tables do not need them.
        print("energyopt report: matplotlib not installed, no plots", file=sys.stderr)
        return {}, {}
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    import energyopt.plot as eplot

    plots: dict[str, bytes] = {}
    owner: dict[str, str] = {}

    def draw(name: str, family: str, fn: Any, *args: Any, **kwargs: Any) -> None:
        fig, ax = plt.subplots(figsize=(6, 3.8), dpi=90)
        try:
            fn(*args, ax=ax, **kwargs)
            fig.tight_layout()
            buf = io.BytesIO()
            fig.savefig(buf, format="png", metadata={"Software": None})
        except (ValueError, TypeError, KeyError, RuntimeError) as exc:
            problems.append(f"plot {name} skipped: {type(exc).__name__}: {exc}"[:300])
        else:
            plots[name] = buf.getvalue()
            owner[name] = family
        finally:
            plt.close(fig)

    for fam, fc in cells.groupby("family", sort=True):
        if fc["gap_to_best_bound"].notna().any():
            draw(f"{fam}-gaps.png", fam, eplot.gap_distribution, fc,
                 title=f"{fam}: gap to the best bound per cell")  # fmt: skip
            draw(f"{fam}-gap-heatmap.png", fam, eplot.gap_heatmap, fc,
                 title=f"{fam}: gap to the best bound (grey: none)")  # fmt: skip
            draw(f"{fam}-profile-gap.png", fam, eplot.performance_profile, fc,
                 "gap_to_best_bound", title=f"{fam}: performance profile of the gap")  # fmt: skip
        timed = fc[fc["solved"]]
        if len(timed):
            draw(f"{fam}-profile-runtime.png", fam, eplot.performance_profile, timed,
                 "runtime_s", title=f"{fam}: performance profile of the runtime")  # fmt: skip
    for item in _first_instances(found):
        pts = frontier_points[frontier_points["instance_id"] == item.instance_id]
        if pts.empty:
            continue
        bound = pd.DataFrame({"deadline_s": item.grid_s, "bound_j": item.grid_bound})
        curves = _curve_frame(item)
        iid, fam = item.instance_id, item.family
        draw(f"frontier-{iid}.png", fam, eplot.frontier, pts, bound=bound, curves=curves,
             title=f"frontiers and proven bound: {item.name}")  # fmt: skip
        if pts["gap"].notna().any():
            draw(f"frontier-{iid}-gapcurve.png", fam, eplot.frontier_gaps, pts, curves=curves,
                 title=f"gap to the proven bound: {item.name}")  # fmt: skip
    for fam, secs in (sections or {}).items():
        for p in (p for s in secs for p in s.plots):
            draw(p.name, fam, p.draw)
    return plots, owner


def _curve_frame(item: Any) -> pd.DataFrame | None:
    """Each frontier's objective and gap on the instance's grid (``None`` without one)."""
    from energyopt.core.gap import gap

    rows = []
    for res, values in item.curves():
        for t, e, b in zip(item.grid_s, values, item.grid_bound):
            if np.isfinite(e):
                g = gap(e, b) if np.isfinite(b) else None
                rows.append({"method": res.method, "seed": res.seed, "deadline_s": t,
                             "energy_j": e, "gap": np.nan if g is None else g})  # fmt: skip
    if not rows:
        return None
    frame = pd.DataFrame(rows)
    frame["seed"] = frame["seed"].astype("Int64")
    return frame


def _first_instances(found: StoreFrontiers) -> list[Any]:
    out = []
    by_family: dict[str, list[Any]] = {}
    for item in found.instances:
        by_family.setdefault(item.family, []).append(item)
    for fam in sorted(by_family):
        out += sorted(by_family[fam], key=lambda it: str(it.name))[:MAX_FRONTIER_PLOTS]
    return out
