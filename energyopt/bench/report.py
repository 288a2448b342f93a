"""Gap reports from a results store: a self-contained HTML page, Markdown, CSV, plots.

For each instance the *best bound* is the largest useful proven lower bound any method
reported on it, and every method's gap is ``gap(objective, best bound)``
(:func:`energyopt.core.gap.gap`, the one definition). A bound <= 0 on a positive
objective proves nothing useful and counts as no bound. Cells with no bound are
counted, never folded into a mean gap. An objective below a proven bound is impossible;
the report flags it as a bug rather than printing a negative gap, and likewise any
frontier point below a proven exact frontier (:mod:`energyopt.bench.frontiers`).

The report is built from tidy DataFrames (:func:`energyopt.bench.frames.read_results`)
and rendered with Jinja2 (``templates/report.html.j2``); plots come from
:mod:`energyopt.plot`. A stored value of the wrong type (text as an objective, a JSON
array as a result, a frontier of the wrong shape) is listed under "unreadable cells"
and skipped; it never stops the report.
"""

from __future__ import annotations

import base64
import io
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from energyopt.bench.escape import csv_frame, markdown_items, markdown_text
from energyopt.bench.frames import read_frontiers, read_results
from energyopt.bench.sections import (
    bound_scope,
    family_sections,
    section_context,
    section_markdown,
    section_plot_names,
)
from energyopt.bench.store import ResultsStore
from energyopt.core.files import atomic_write, write_text
from energyopt.core.gap import gap

#: A gap below minus this is an objective under a proven bound: a bug.
BUG_TOL = 1e-7
#: At most this many frontier plots per family (the first instances, by display name).
MAX_FRONTIER_PLOTS = 24


@dataclass
class Report:
    """What :func:`build_report` computed (also written as files by :func:`write_report`)."""

    cells: list[dict[str, Any]]
    summary: list[dict[str, Any]]
    bugs: list[str]
    plots: dict[str, bytes] = field(default_factory=dict)
    """File name -> PNG bytes."""
    runs: list[dict[str, Any]] = field(default_factory=list)
    sources: dict[str, list[str]] = field(default_factory=dict)
    """Family -> where its instances come from (``source`` fields: simulated or measured)."""
    problems: list[str] = field(default_factory=list)
    """Stored values that could not be read (the cell or point is skipped)."""
    plot_families: dict[str, str] = field(default_factory=dict)
    """Plot file name -> the family it belongs to."""
    frontier_summary: list[dict[str, Any]] = field(default_factory=list)
    """Per family and method: frontier points, how many carry a proven bound, their gaps."""
    sections: dict[str, list[Any]] = field(default_factory=dict)
    """Family -> its own sections (``FamilyHooks.report_sections``)."""

    @property
    def cell_frame(self) -> pd.DataFrame:
        """The cells as a DataFrame (sorted by family, instance and method)."""
        return pd.DataFrame(self.cells)

    @property
    def summary_frame(self) -> pd.DataFrame:
        """The per family/method summary as a DataFrame."""
        return pd.DataFrame(self.summary)


def useful_bound(objective: float | None, bound: float | None) -> float | None:
    """``bound``, or ``None`` where it proves nothing: missing, or <= 0 under a positive
    objective (every objective here is a cost >= 0, so such a bound is trivial)."""
    if bound is None or (isinstance(bound, float) and math.isnan(bound)):
        return None
    if bound <= 0 and (objective is None or math.isnan(objective) or objective > 0):
        return None
    return bound


def cell_frame(store_path: str | Path) -> tuple[pd.DataFrame, list[str]]:
    """Cells with display names, useful bounds, best bounds and gaps to the best bound.

    Returns the frame and one line per cell with an unusable stored value.
    """
    cells = read_results(store_path)
    problems = [
        f"{r.family} {r.instance_name or r.instance_id} {r.method}: {r.problem} (skipped)"
        for r in cells.itertuples()
        if r.problem
    ]
    cells["instance"] = _display_names(cells)
    cells["failed"] = (cells["outcome"] != "finished") | (cells["termination"] == "error")
    cells["killed"] = cells["outcome"] == "killed"
    cells["solved"] = (
        (cells["outcome"] == "finished")
        & cells["status"].isin(["optimal", "feasible"])
        & cells["objective"].notna()
    )
    cells["useful_bound"] = [
        _nan(useful_bound(o, b)) for o, b in zip(cells["objective"], cells["bound"])
    ]
    # Bounds that hold per seed are shared by the cells of that seed only.
    cells["bound_scope"] = bound_scope(cells)
    key = ["family", "instance_id", "bound_scope"]
    cells["best_bound"] = cells.groupby(key)["useful_bound"].transform("max")
    best_obj = cells["objective"].where(cells["solved"])
    cells["best_objective"] = best_obj.groupby([cells[k] for k in key]).transform("min")
    cells["gap_to_best_bound"] = [
        _nan(gap(o, b)) if s and not math.isnan(b) else math.nan
        for o, b, s in zip(cells["objective"], cells["best_bound"], cells["solved"])
    ]
    return cells, problems


def _nan(x: float | None) -> float:
    return math.nan if x is None else float(x)


def _display_names(cells: pd.DataFrame) -> pd.Series:
    """Instance names, made unique within a family with a short id where two share one."""
    name = cells["instance_name"].where(cells["instance_name"] != "", cells["instance_id"])
    ids_per_name = cells.groupby(["family", name])["instance_id"].transform("nunique")
    short = cells["instance_id"].str.slice(0, 8)
    return name.where(ids_per_name <= 1, name + " [" + short + "]")


def _bugs(cells: pd.DataFrame) -> list[str]:
    bugs = []
    below = cells[cells["gap_to_best_bound"] < -BUG_TOL]
    for c in below.itertuples():
        bugs.append(
            f"{c.family} {c.instance}: {c.method} (seed {_seed(c.seed)}) objective "
            f"{c.objective!r} below the best proven bound {c.best_bound!r}"
        )
    per_instance = cells.groupby(["family", "instance_id", "bound_scope"]).agg(
        bound=("best_bound", "first"), best=("best_objective", "first")
    )
    for (fam, iid, _), r in per_instance.iterrows():
        if r.bound > r.best + BUG_TOL * max(1.0, abs(r.best)):
            bugs.append(
                f"{fam} instance {iid}: best proven bound {r.bound!r} above the best "
                f"objective {r.best!r}"
            )
    return bugs


def _seed(seed: Any) -> Any:
    return None if seed is None or pd.isna(seed) else int(seed)


def _summary(cells: pd.DataFrame) -> pd.DataFrame:
    """Per family, method and time limit: counts, gaps over cells with a gap, runtimes."""
    rows = []
    keys = ["family", "method", "time_limit_s"]
    for (family, method, tl), cs in cells.groupby(keys, sort=True, dropna=False):
        gaps = cs["gap_to_best_bound"].dropna()
        own = [gap(o, b) for o, b in zip(cs["objective"], cs["useful_bound"]) if not math.isnan(b)]
        own = [g for g in own if g is not None]
        rt = cs["runtime_s"].dropna()
        rows.append(
            {
                "family": family,
                "method": method,
                "time_limit_s": None if pd.isna(tl) else float(tl),
                "instances": int(cs["instance_id"].nunique()),
                "cells": len(cs),
                "solved": int(cs["solved"].sum()),
                "proven_optimal": int((cs["status"] == "optimal").sum()),
                "with_bound": int(cs["useful_bound"].notna().sum()),
                "with_gap": len(gaps),
                "no_bound": int((cs["solved"] & cs["gap_to_best_bound"].isna()).sum()),
                "failed": int(cs["failed"].sum()),
                "killed": int(cs["killed"].sum()),
                "mean_gap_to_best_bound": float(gaps.mean()) if len(gaps) else None,
                "max_gap_to_best_bound": float(gaps.max()) if len(gaps) else None,
                "mean_own_gap": float(np.mean(own)) if own else None,
                "mean_runtime_s": float(rt.mean()) if len(rt) else None,
                "max_runtime_s": float(rt.max()) if len(rt) else None,
            }
        )
    return pd.DataFrame(rows)


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as dictionaries with ``None`` (not ``NaN``/``pd.NA``) for missing values."""
    out = []
    for rec in frame.to_dict("records"):
        out.append({k: (None if _missing(v) else _plain(v)) for k, v in rec.items()})
    return out


def _missing(v: Any) -> bool:
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def _plain(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v


def build_report(store_path: str | Path, *, plots: bool = True) -> Report:
    """Read a store and compute per-cell gaps, the per family/method summary and plots."""
    cells, problems = cell_frame(store_path)
    frontier_points, frontier_problems = read_frontiers(store_path)
    problems += frontier_problems
    with ResultsStore(store_path, read_only=True) as store:
        runs = store.runs()
        sources = store.instance_sources()
        frontier_bugs = _frontier_bugs(store, problems)
    bugs = _bugs(cells) + frontier_bugs
    summary = _summary(cells)
    report = Report(
        cells=_records(cells),
        summary=_records(summary),
        bugs=sorted(set(bugs)),
        runs=runs,
        sources=sources,
        problems=problems,
        frontier_summary=_records(_frontier_summary(frontier_points)),
    )
    names = dict(zip(cells["instance_id"], cells["instance"]))
    report.sections = family_sections(store_path, names, problems)
    if plots:
        report.plots, report.plot_families = _plots(
            cells, frontier_points, problems, report.sections
        )
    return report


def _frontier_summary(points: pd.DataFrame) -> pd.DataFrame:
    """Per family and method: frontier points and the gaps of those with a proven bound
    (a bound per point, e.g. the relaxation's bound curve); points without one are counted."""
    rows = []
    for (family, method), g in points.groupby(["family", "method"], sort=True):
        gaps = [gap(e, b) for e, b in zip(g["energy_j"], g["bound_j"]) if not math.isnan(b)]
        gaps = [x for x in gaps if x is not None]
        rows.append(
            {
                "family": family,
                "method": method,
                "instances": int(g["instance_id"].nunique()),
                "points": len(g),
                "no_bound": len(g) - len(gaps),
                "median_point_gap": float(np.median(gaps)) if gaps else None,
                "max_point_gap": max(gaps) if gaps else None,
            }
        )
    return pd.DataFrame(rows)


def _frontier_bugs(store: ResultsStore, problems: list[str]) -> list[str]:
    from energyopt.bench.frontiers import frontier_contradictions

    try:
        return frontier_contradictions(store)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        # A malformed stored result; read_frontiers has named the cell.
        problems.append(f"frontier cross-check skipped: {type(exc).__name__}: {_short(exc)}")
        return []


# -- plots ----------------------------------------------------------------------------


def _plots(
    cells: pd.DataFrame,
    frontier_points: pd.DataFrame,
    problems: list[str],
    sections: dict[str, list[Any]] | None = None,
) -> tuple[dict[str, bytes], dict[str, str]]:
    """PNG plots per family: gap distribution, performance profiles, heatmap, frontiers."""
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
            problems.append(f"plot {name} skipped: {type(exc).__name__}: {_short(exc)}")
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
    names = cells.drop_duplicates("instance_id").set_index("instance_id")
    for (fam, iid), pts in _first_frontiers(frontier_points, names):
        label = names["instance"].get(iid, iid)
        draw(f"frontier-{iid}.png", fam, eplot.frontier, pts, title=f"frontier: {label}")
    for fam, secs in (sections or {}).items():
        for p in (p for s in secs for p in s.plots):
            draw(p.name, fam, p.draw)
    return plots, owner


def _first_frontiers(points: pd.DataFrame, names: pd.DataFrame) -> list[Any]:
    if points.empty:
        return []
    out = []
    for fam, fp in points.groupby("family", sort=True):
        iids = sorted(fp["instance_id"].unique(), key=lambda i: str(names["instance"].get(i, i)))
        for iid in iids[:MAX_FRONTIER_PLOTS]:
            out.append(((fam, iid), fp[fp["instance_id"] == iid]))
    return out


# -- output ---------------------------------------------------------------------------

#: (header, key) of the per-instance table; the objective's header gets the unit.
CELL_COLUMNS = (
    ("instance", "instance"),
    ("method", "method"),
    ("seed", "seed"),
    ("outcome", "outcome"),
    ("termination", "termination"),
    ("status", "status"),
    ("objective", "objective"),
    ("own bound", "useful_bound"),
    ("best bound", "best_bound"),
    ("gap to best bound", "gap_to_best_bound"),
    ("runtime (s)", "runtime_s"),
)
FRONTIER_COLUMNS = (
    ("method", "method"),
    ("instances", "instances"),
    ("frontier points", "points"),
    ("no bound", "no_bound"),
    ("median gap at a point", "median_point_gap"),
    ("max gap at a point", "max_point_gap"),
)
SUMMARY_COLUMNS = (
    ("method", "method"),
    ("time limit (s)", "time_limit_s"),
    ("instances", "instances"),
    ("cells", "cells"),
    ("solved", "solved"),
    ("proven optimal", "proven_optimal"),
    ("failed", "failed"),
    ("killed", "killed"),
    ("no bound", "no_bound"),
    ("mean gap to best bound", "mean_gap_to_best_bound"),
    ("max gap to best bound", "max_gap_to_best_bound"),
    ("mean runtime (s)", "mean_runtime_s"),
    ("max runtime (s)", "max_runtime_s"),
)

INTRO = (
    "Gap = (objective - best bound) / max(|objective|, |best bound|) "
    "(energyopt.core.gap.gap), where the best bound of an instance is the largest proven "
    "lower bound any method reported on it; a bound <= 0 on a positive objective counts "
    "as no bound. Mean and max gaps are over the cells with a gap; the cells without one "
    "are counted in 'no bound'. Objectives are the families' evaluators' values. "
    "'proven optimal' counts cells whose method proved its solution optimal."
)


def _fmt(key: str, v: Any) -> str:
    if v is None or _missing(v):
        return "-"
    if "gap" in key:
        return f"{100 * v:.4f} %"
    if key.endswith("runtime_s"):
        return f"{v:.3f}"
    if isinstance(v, float):
        return f"{v:.8g}"
    return str(v)


def objective_unit(family: str) -> str:
    """The unit of a family's objective, from the family's hooks when it declares one."""
    try:
        from energyopt.core import registry
    except ImportError:  # pragma: no cover
        return ""
    hook = getattr(registry, "family_hooks", None)
    if hook is None:
        return ""
    try:
        return str(getattr(hook(family), "objective_unit", "") or "")
    except (KeyError, ValueError, TypeError):
        return ""


def _table(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...], unit: str) -> dict:
    head = [f"{h} ({unit})" if unit and "objective" in h else h for h, _ in columns]
    body = [[_fmt(k, r.get(k)) for _, k in columns] for r in rows]
    flags = [_flag(r) for r in rows]
    return {"head": head, "rows": list(zip(body, flags))}


def _flag(row: dict[str, Any]) -> str:
    if row.get("killed") or row.get("outcome") == "killed":
        return "killed"
    if row.get("failed") is True or (isinstance(row.get("failed"), int) and row["failed"] > 0):
        return "failed"
    return ""


def _markdown(table: dict) -> str:
    lines = [
        "| " + " | ".join(map(markdown_text, table["head"])) + " |",
        "|" + "|".join("---" for _ in table["head"]) + "|",
    ]
    for cells, flag in table["rows"]:
        cells = [markdown_text(c) for c in cells]
        if flag:
            cells[0] = f"{cells[0]} **{flag}**"
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _context(report: Report, store_name: str) -> dict[str, Any]:
    families = []
    for fam in sorted({r["family"] for r in report.summary}):
        unit = objective_unit(fam)
        summary = [r for r in report.summary if r["family"] == fam]
        cells = [c for c in report.cells if c["family"] == fam]
        own = section_plot_names(report.sections)
        fam_plots = [
            n
            for n, f in report.plot_families.items()
            if f == fam and n in report.plots and n not in own
        ]
        families.append(
            {
                "name": fam,
                "unit": unit,
                "sources": [_source_text(t) for t in report.sources.get(fam, [])],
                "summary": _table(summary, SUMMARY_COLUMNS, unit),
                "cells": _table(cells, CELL_COLUMNS, unit),
                "frontiers": _table(
                    [r for r in report.frontier_summary if r["family"] == fam],
                    FRONTIER_COLUMNS,
                    "",
                ),
                "plots": [
                    {"name": n, "data": base64.b64encode(report.plots[n]).decode("ascii")}
                    for n in sorted(fam_plots, key=_plot_order)
                ],
                "sections": [
                    section_context(s, report.plots) for s in report.sections.get(fam, [])
                ],
            }
        )
    failures = [
        f"{c['family']} {c['instance']} {c['method']} seed {c['seed']}: {c['outcome']}: "
        f"{_short(c['message'])}"
        for c in report.cells
        if c["failed"]
    ]
    return {
        "store_name": store_name,
        "intro": INTRO,
        "n_cells": len(report.cells),
        "runs": report.runs,
        "bugs": report.bugs,
        "problems": report.problems,
        "families": families,
        "failures": failures,
    }


def _source_text(text: str) -> str:
    """A ``source`` field for reading: structured sources (JSON objects) as ``key: value``."""
    import json

    try:
        data = json.loads(text)
    except (TypeError, ValueError, RecursionError):
        return text
    if not isinstance(data, dict):
        return text
    return "; ".join(f"{k}: {v}" for k, v in data.items())


def _plot_order(name: str) -> tuple[int, str]:
    order = ("-gaps", "-profile-gap", "-profile-runtime", "-gap-heatmap")
    for i, tag in enumerate(order):
        if tag in name:
            return i, name
    return len(order), name


def _short(message: Any, limit: int = 240) -> str:
    text = " ".join(str(message or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def render_html(report: Report, store_name: str = "") -> str:
    """The report as one self-contained HTML page (plots embedded as data URIs)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("energyopt.bench", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
    )
    return env.get_template("report.html.j2").render(**_context(report, store_name))


def render_markdown(report: Report, store_name: str = "") -> str:
    """The report as Markdown (plots linked from ``plots/``)."""
    ctx = _context(report, store_name)
    md = [f"# Gap report{f': {markdown_text(store_name)}' if store_name else ''}", "", INTRO, ""]
    md += [f"{ctx['n_cells']} cells from {len(report.runs)} run(s): "
           + ", ".join(markdown_text(r["run_id"]) for r in report.runs), ""]  # fmt: skip
    if report.bugs:
        md += ["## Contradictions (bugs)", "", *markdown_items(report.bugs), ""]
    if report.problems:
        md += ["## Unreadable cells (skipped)", "", *markdown_items(report.problems), ""]
    for fam in ctx["families"]:
        md += [f"## {markdown_text(fam['name'])}", ""]
        md += [f"- instance source: {markdown_text(_short(s, 200))}" for s in fam["sources"][:8]]
        md += ["", "### Per method", "", _markdown(fam["summary"]), ""]
        if fam["frontiers"]["rows"]:
            md += ["### Frontiers", "", _markdown(fam["frontiers"]), ""]
        for sec in report.sections.get(fam["name"], []):
            md += section_markdown(sec, report.plots)
        md += ["### Per instance", "", _markdown(fam["cells"]), ""]
        if fam["plots"]:
            md += ["### Plots", ""] + [f"![{p['name']}](plots/{p['name']})" for p in fam["plots"]]
            md.append("")
    if ctx["failures"]:
        md += ["## Failed cells", "", *markdown_items(ctx["failures"]), ""]
    return "\n".join(md) + "\n"


def write_report(report: Report, out_dir: str | Path, *, store_name: str = "") -> dict[str, Path]:
    """Write ``summary.md``, ``index.html`` (plots embedded), ``cells.csv``, ``plots/*.png``."""
    out = Path(out_dir)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    paths = {"markdown": out / "summary.md", "html": out / "index.html", "csv": out / "cells.csv"}
    write_text(paths["markdown"], render_markdown(report, store_name), "report")
    write_text(paths["html"], render_html(report, store_name), "report")
    cols = [
        "family", "suite", "instance_id", "instance_name", "instance", "method", "seed",
        "time_limit_s", "outcome", "termination", "status", "objective", "bound",
        "useful_bound", "best_bound", "gap_to_best_bound", "runtime_s", "wall_s", "solver",
        "solver_version", "run_id",
    ]  # fmt: skip
    cells = csv_frame(pd.DataFrame(report.cells, columns=cols))  # no spreadsheet formulas
    with atomic_write(paths["csv"], "report") as handle:
        cells.to_csv(handle, index=False, lineterminator="\n")
    for name, png in report.plots.items():
        (out / "plots" / name).write_bytes(png)
    return paths


def make_report(store_path: str | Path, out_dir: str | Path, *, plots: bool = True) -> Report:
    """:func:`build_report` then :func:`write_report`."""
    report = build_report(store_path, plots=plots)
    write_report(report, out_dir, store_name=Path(store_path).name)
    return report
