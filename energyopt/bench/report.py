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
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from energyopt.bench.escape import csv_frame, markdown_items, markdown_text
from energyopt.bench.frames import frontier_frame, read_results
from energyopt.bench.frontiers import (
    Readable,
    StoreFrontiers,
    read_frontier_results,
    store_frontiers,
)
from energyopt.bench.provenance import provenance
from energyopt.bench.sections import (
    family_sections,
    section_context,
    section_markdown,
    section_plot_names,
)
from energyopt.bench.store import ResultsStore
from energyopt.core.files import atomic_write, write_text
from energyopt.core.frontiergap import SHARE_LEVELS, share_key
from energyopt.core.gap import gap

#: A gap below minus this is an objective under a proven bound: a bug.
BUG_TOL = 1e-7


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
    frontier_runs: list[dict[str, Any]] = field(default_factory=list)
    """Per stored frontier (instance, method, seed): its summary against the bound
    (:func:`energyopt.core.frontiergap.frontier_summary`)."""
    provenance: list[tuple[str, str]] = field(default_factory=list)
    """(label, value): package version, git commit, date, CPU, solvers, time limits."""
    sections: dict[str, list[Any]] = field(default_factory=dict)
    """Family -> its own sections (``FamilyHooks.report_sections``)."""

    @property
    def cell_frame(self) -> pd.DataFrame:
        """The cells as a DataFrame (sorted by family, instance and method)."""
        return pd.DataFrame(self.cells)


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


def build_report(
    store_path: str | Path, *, plots: bool = True, bound_time_limit: float | None = None
) -> Report:
    """Read a store and compute per-cell gaps, the per family/method summary and plots.

    Every stored frontier point gets the best proven bound there
    (:func:`energyopt.bench.frontiers.store_frontiers`; ``bound_time_limit`` seconds per
    instance's bound curve).
    """
    cells = read_results(store_path)
    problems = list(cells.attrs["problems"])
    with ResultsStore(store_path, read_only=True) as store:
        runs = store.runs()
        sources = store.instance_sources()
        read = read_frontier_results(store)  # parsed once, for the cross-check and the bounds
        frontier_bugs = _frontier_bugs(store, read[0], problems)
        found = store_frontiers(store, bound_time_limit, read)
        versions = _cell_versions(store)
    frontier_points = frontier_frame(found)
    problems += found.problems
    bugs = _bugs(cells) + frontier_bugs + _below_bound(frontier_points)
    summary = _summary(cells)
    report = Report(
        cells=_records(cells),
        summary=_records(summary),
        bugs=sorted(set(bugs)),
        runs=runs,
        sources=sources,
        problems=problems,
        frontier_summary=_records(_frontier_summary(frontier_points)),
        frontier_runs=_frontier_runs(found),
        provenance=provenance(cells, runs, versions),
    )
    names = dict(zip(cells["instance_id"], cells["instance"]))
    report.sections = family_sections(store_path, names, problems)
    if plots:
        from energyopt.bench.reportplots import report_plots

        report.plots, report.plot_families = report_plots(
            cells, frontier_points, found, problems, report.sections
        )
    return report


def _cell_versions(store: ResultsStore) -> list[str]:
    """The distinct code versions the store recorded for its cells (none in older stores)."""
    import sqlite3

    try:
        return [r[0] or "" for r in store._db.execute("SELECT DISTINCT code_version FROM cells")]
    except sqlite3.OperationalError:  # a store written before cells recorded it
        return [""]


def _frontier_summary(points: pd.DataFrame) -> pd.DataFrame:
    """Per family and method: frontier points, how many carry a proven bound (the best
    available at each point), their gaps, and points below their bound."""
    rows = []
    for (family, method), g in points.groupby(["family", "method"], sort=True):
        gaps = g["gap"].dropna()
        rows.append(
            {
                "family": family,
                "method": method,
                "instances": int(g["instance_id"].nunique()),
                "points": len(g),
                "no_bound": int(g["bound_j"].isna().sum()),
                "with_bound_share": float(g["bound_j"].notna().mean()) if len(g) else None,
                "below_bound": int(g["below_bound"].sum()),
                "median_point_gap": float(gaps.median()) if len(gaps) else None,
                "max_point_gap": float(gaps.max()) if len(gaps) else None,
            }
        )
    return pd.DataFrame(rows)


def _frontier_runs(found: StoreFrontiers) -> list[dict[str, Any]]:
    """One row per stored frontier: its summary against the best proven bound."""
    rows = []
    for item in found.instances:
        for _, res in item.frontiers:
            s = res.frontier_summary or {}
            rows.append({"family": item.family, "instance": item.name, "method": res.method,
                         "seed": res.seed, **s})  # fmt: skip
    rows.sort(key=lambda r: (r["family"], str(r["instance"]), r["method"], r["seed"] or 0))
    return rows


def _below_bound(points: pd.DataFrame) -> list[str]:
    """A frontier point below its proven bound is a bug (in the method or the bound)."""
    return [
        f"{p.family} {p.instance}: {p.method} (seed {_seed(p.seed)}) frontier point "
        f"({p.deadline_s!r} s, {p.energy_j!r}) below its proven bound {p.bound_j!r}"
        for p in points[points["below_bound"]].itertuples()
    ]


def _frontier_bugs(store: ResultsStore, readable: Readable, problems: list[str]) -> list[str]:
    from energyopt.bench.frontiers import frontier_contradictions

    try:
        return frontier_contradictions(store, readable)
    except (TypeError, ValueError, KeyError, AttributeError, IndexError) as exc:
        # A malformed stored result; read_frontiers has named the cell.
        problems.append(f"frontier cross-check skipped: {type(exc).__name__}: {_short(exc)}")
        return []


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
    ("proven by", "proven_by"),
    ("gap to best bound", "gap_to_best_bound"),
    ("runtime (s)", "runtime_s"),
)
FRONTIER_COLUMNS = (
    ("method", "method"),
    ("instances", "instances"),
    ("frontier points", "points"),
    ("no bound", "no_bound"),
    ("below bound", "below_bound"),
    ("median gap at a point", "median_point_gap"),
    ("max gap at a point", "max_point_gap"),
)
#: (header, key) of the frontier summary table, one row per stored frontier.
FRONTIER_RUN_COLUMNS = (
    ("instance", "instance"),
    ("method", "method"),
    ("seed", "seed"),
    ("points", "points"),
    ("with bound", "points_with_bound"),
    ("below bound", "below_bound"),
    ("max gap", "gap_max"),
    ("mean gap", "gap_mean"),
    ("median gap", "gap_median"),
    *((f"time within {100 * x:g} %", share_key(x)) for x in SHARE_LEVELS),
    ("area ratio", "area_ratio"),
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


FRONTIER_INTRO = (
    "Every frontier point is compared with the best proven lower bound at its iteration "
    "time: the exact frontier stored for the instance where there is one, else the hull "
    "relaxation's bound curve (computed once per instance), or the point's own bound where "
    "larger. 'time within x %' is the share of a frontier's time range where it is within "
    "x % of the bound; 'area ratio' is the area between frontier and bound over the area "
    "under the bound (both on 201 evenly spaced times). A point below its bound is a bug."
)


def _fmt(key: str, v: Any) -> str:
    if v is None or _missing(v):
        return "-"
    if "gap" in key or key.startswith("within_") or key.endswith(("_share", "_ratio")):
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
                "frontier_runs": _table(
                    [r for r in report.frontier_runs if r["family"] == fam],
                    FRONTIER_RUN_COLUMNS,
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
        "provenance": report.provenance,
        "frontier_intro": FRONTIER_INTRO,
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
    md += [f"- {k}: {markdown_text(str(v))}" for k, v in report.provenance] + [""]
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
            md += ["### Frontiers", "", FRONTIER_INTRO, "", _markdown(fam["frontiers"]), ""]
            md += ["#### Each frontier against the bound", "", _markdown(fam["frontier_runs"]), ""]
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
        "useful_bound", "best_bound", "proven_by", "gap_to_best_bound", "runtime_s", "wall_s",
        "solver",
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
