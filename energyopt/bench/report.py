"""Gap reports from a results store: Markdown, a self-contained HTML page, CSV, plots.

For each instance the *best bound* is the largest proven lower bound any method
reported on it, and every method's gap is ``gap(objective, best bound)``
(:func:`energyopt.core.gap.gap`, the one definition). An objective below a proven
bound is impossible; the report flags it as a bug rather than printing a negative gap,
and likewise any PEM frontier point below a proven exact frontier
(:mod:`energyopt.bench.frontiers`).
"""

from __future__ import annotations

import base64
import html
import io
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from energyopt.bench.frontiers import frontier_contradictions
from energyopt.bench.store import ResultsStore
from energyopt.core.gap import gap

#: A gap below minus this is an objective under a proven bound: a bug.
BUG_TOL = 1e-7
#: At most this many frontier plots (the first instances, in key order).
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


def build_report(store_path: str | Path, *, plots: bool = True) -> Report:
    """Read a store and compute per-cell gaps, the per family/method summary and plots."""
    with ResultsStore(store_path) as store:
        cells = store.rows()
        runs = store.runs()
        sources = store.instance_sources()
        frontiers = _frontiers(store) if plots else {}
        frontier_bugs = frontier_contradictions(store)
    # Best proven bound and best objective per instance, across all methods and seeds.
    best_bound: dict[tuple[str, str], float] = {}
    best_obj: dict[tuple[str, str], float] = {}
    for c in cells:
        k = (c["family"], c["instance_id"])
        if c["bound"] is not None:
            best_bound[k] = max(best_bound.get(k, -math.inf), c["bound"])
        if _solved(c):
            best_obj[k] = min(best_obj.get(k, math.inf), c["objective"])
    bugs = []
    for c in cells:
        k = (c["family"], c["instance_id"])
        c["best_bound"] = best_bound.get(k)
        c["best_objective"] = best_obj.get(k)
        c["gap_to_best_bound"] = gap(c["objective"], c["best_bound"]) if _solved(c) else None
        c["failed"] = c["outcome"] != "finished" or c["termination"] == "error"
        g = c["gap_to_best_bound"]
        if g is not None and g < -BUG_TOL:
            bugs.append(
                f"{c['family']} {c['instance_name'] or c['instance_id']}: {c['method']} "
                f"(seed {c['seed']}) objective {c['objective']!r} below the best proven bound "
                f"{c['best_bound']!r}"
            )
    for k in best_bound:
        if k in best_obj and best_bound[k] > best_obj[k] + BUG_TOL * max(1.0, abs(best_obj[k])):
            bugs.append(
                f"{k[0]} instance {k[1]}: best proven bound {best_bound[k]!r} above the best "
                f"objective {best_obj[k]!r}"
            )
    bugs += frontier_bugs
    summary = _summary(cells)
    report = Report(
        cells=cells, summary=summary, bugs=sorted(set(bugs)), runs=runs, sources=sources
    )
    if plots:
        report.plots = _plots(frontiers)
    return report


def _short(message: Any, limit: int = 240) -> str:
    text = " ".join(str(message or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _solved(c: dict[str, Any]) -> bool:
    return (
        c["outcome"] == "finished"
        and c["status"] in ("optimal", "feasible")
        and c["objective"] is not None
    )


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _summary(cells: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, Any], list[dict[str, Any]]] = {}
    for c in cells:
        groups.setdefault((c["family"], c["method"], c["time_limit_s"]), []).append(c)
    rows = []
    for (family, method, tl), cs in sorted(groups.items(), key=lambda kv: str(kv[0])):
        solved = [c for c in cs if _solved(c)]
        gaps = [c["gap_to_best_bound"] for c in solved if c["gap_to_best_bound"] is not None]
        own = [c["gap"] for c in solved if c["gap"] is not None]
        runtimes = [c["runtime_s"] for c in cs if c["runtime_s"] is not None]
        rows.append(
            {
                "family": family,
                "method": method,
                "time_limit_s": tl,
                "instances": len({c["instance_id"] for c in cs}),
                "cells": len(cs),
                "solved": len(solved),
                "proven_optimal": sum(c["status"] == "optimal" for c in cs),
                "with_bound": sum(c["bound"] is not None for c in cs),
                "failed": sum(c["failed"] for c in cs),
                "killed": sum(c["outcome"] == "killed" for c in cs),
                "mean_gap_to_best_bound": _mean(gaps),
                "max_gap_to_best_bound": max(gaps) if gaps else None,
                "mean_own_gap": _mean(own),
                "mean_runtime_s": _mean(runtimes),
                "max_runtime_s": max(runtimes) if runtimes else None,
            }
        )
    return rows


# -- frontier plots -----------------------------------------------------------------


def _frontiers(store: ResultsStore) -> dict[tuple[str, str], dict[str, list[tuple[float, float]]]]:
    """(instance id, instance name) -> method -> [(deadline_s, energy_j)] for PEM results."""
    names = {
        r["instance_id"]: r["instance_name"] for r in store.rows(["instance_id", "instance_name"])
    }
    out: dict[tuple[str, str], dict[str, list[tuple[float, float]]]] = {}
    for res in store.iter_results():
        if res.get("family") != "pipeline" or not res.get("frontier"):
            continue
        pts = [(p["deadline_s"], p["objective"]) for p in res["frontier"]]
        label = (
            res["method"] if res.get("seed") is None else f"{res['method']} (seed {res['seed']})"
        )
        iid = res["instance_id"]
        out.setdefault((iid, names.get(iid, "")), {})[label] = sorted(pts)
    return out


def _plots(
    frontiers: dict[tuple[str, str], dict[str, list[tuple[float, float]]]],
) -> dict[str, bytes]:
    if not frontiers:
        return {}
    try:
        import matplotlib
    except ImportError:
        # Plots are optional (pip install energyopt[plot]); the tables do not need them.
        print("energyopt report: matplotlib not installed, no frontier plots", file=sys.stderr)
        return {}

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plots = {}
    for iid, name in sorted(frontiers)[:MAX_FRONTIER_PLOTS]:
        fig, ax = plt.subplots(figsize=(6, 3.8), dpi=90)
        for label, pts in sorted(frontiers[(iid, name)].items()):
            xs, ys = zip(*pts)
            ax.plot(xs, ys, marker="o", markersize=3, linewidth=1, label=label)
        ax.set_xlabel("iteration time (s)")
        ax.set_ylabel("energy per iteration (J)")
        ax.set_title(f"PEM frontier: {name or iid}", fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", metadata={"Software": None})
        plt.close(fig)
        plots[f"frontier-{iid}.png"] = buf.getvalue()
    return plots


# -- output ---------------------------------------------------------------------------

_CELL_COLUMNS = (
    ("instance", "instance_name"),
    ("method", "method"),
    ("seed", "seed"),
    ("outcome", "outcome"),
    ("termination", "termination"),
    ("status", "status"),
    ("objective", "objective"),
    ("own bound", "bound"),
    ("best bound", "best_bound"),
    ("gap to best bound", "gap_to_best_bound"),
    ("runtime_s", "runtime_s"),
)
_SUMMARY_COLUMNS = (
    ("method", "method"),
    ("time limit (s)", "time_limit_s"),
    ("instances", "instances"),
    ("cells", "cells"),
    ("solved", "solved"),
    ("proven optimal", "proven_optimal"),
    ("failed", "failed"),
    ("killed", "killed"),
    ("mean gap to best bound", "mean_gap_to_best_bound"),
    ("max gap to best bound", "max_gap_to_best_bound"),
    ("mean runtime (s)", "mean_runtime_s"),
    ("max runtime (s)", "max_runtime_s"),
)


def _fmt(key: str, v: Any) -> str:
    if v is None:
        return "-"
    if "gap" in key:
        return f"{100 * v:.4f}%"
    if key.endswith("runtime_s"):
        return f"{v:.3f}"
    if isinstance(v, float):
        return f"{v:.8g}"
    return str(v)


def _table_rows(
    rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]
) -> list[list[str]]:
    out = []
    for r in rows:
        cells = []
        for _, k in columns:
            v = r.get(k)
            if k == "instance_name" and not v:
                v = r["instance_id"]
            cells.append(_fmt(k, v))
        out.append(cells)
    return out


def _markdown_table(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> str:
    head = [h for h, _ in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    for r in _table_rows(rows, columns):
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in r) + " |")
    return "\n".join(lines)


def _html_table(rows: list[dict[str, Any]], columns: tuple[tuple[str, str], ...]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h, _ in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>"
        for r in _table_rows(rows, columns)
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_INTRO = (
    "Gap = (objective - best bound) / max(|objective|, |best bound|) "
    "(energyopt.core.gap.gap), where the best bound of an instance is the largest proven "
    "lower bound any method reported on it. Objectives are the families' evaluators' values. "
    "'proven optimal' counts cells whose method proved its solution optimal."
)


def _source_lines(sources: list[str], limit: int = 8) -> list[str]:
    """Markdown bullets: where the instances come from (at most ``limit`` distinct)."""
    lines = [f"- instance source: {_short(src, 200)}" for src in sources[:limit]]
    if len(sources) > limit:
        lines.append(f"- ... and {len(sources) - limit} more sources")
    return lines


def write_report(report: Report, out_dir: str | Path, *, store_name: str = "") -> dict[str, Path]:
    """Write ``summary.md``, ``index.html`` (plots embedded), ``cells.csv``, ``plots/*.png``."""
    import csv

    out = Path(out_dir)
    (out / "plots").mkdir(parents=True, exist_ok=True)
    families = sorted({r["family"] for r in report.summary})
    md = [f"# Gap report{f': {store_name}' if store_name else ''}", "", _INTRO, ""]
    md.append(
        f"{len(report.cells)} cells from {len(report.runs)} run(s): "
        + ", ".join(r["run_id"] for r in report.runs)
    )
    md.append("")
    if report.bugs:
        md += ["## Contradictions (bugs)", ""] + [f"- {b}" for b in report.bugs] + [""]
    for fam in families:
        md += [f"## {fam}", ""]
        md += _source_lines(report.sources.get(fam, []))
        md += ["", "### Per method", ""]
        md.append(
            _markdown_table([r for r in report.summary if r["family"] == fam], _SUMMARY_COLUMNS)
        )
        md += ["", "### Per instance", ""]
        md.append(_markdown_table([c for c in report.cells if c["family"] == fam], _CELL_COLUMNS))
        md.append("")
        fam_plots = [n for n in report.plots if fam == "pipeline"]
        if fam_plots:
            md += ["### Frontiers", ""] + [f"![{n}](plots/{n})" for n in fam_plots] + [""]
    failures = [c for c in report.cells if c["failed"]]
    if failures:
        md += ["## Failed cells", ""]
        md += [
            f"- {c['family']} {c['instance_name'] or c['instance_id']} {c['method']} "
            f"seed {c['seed']}: {c['outcome']}: {_short(c['message'])}"
            for c in failures
        ]
        md.append("")
    paths = {"markdown": out / "summary.md", "html": out / "index.html", "csv": out / "cells.csv"}
    paths["markdown"].write_text("\n".join(md) + "\n")

    h = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>energyopt gap report {html.escape(store_name)}</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:90em}"
        "table{border-collapse:collapse;margin:1em 0;font-size:0.85em}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "th{background:#eee}.bug{color:#b00}</style></head><body>",
        f"<h1>Gap report {html.escape(store_name)}</h1><p>{html.escape(_INTRO)}</p>",
        f"<p>{len(report.cells)} cells from {len(report.runs)} run(s).</p>",
    ]
    if report.bugs:
        h.append("<h2 class='bug'>Contradictions (bugs)</h2><ul>")
        h += [f"<li class='bug'>{html.escape(b)}</li>" for b in report.bugs]
        h.append("</ul>")
    for fam in families:
        h.append(f"<h2>{html.escape(fam)}</h2><ul>")
        h += [
            f"<li>{html.escape(line[2:])}</li>"
            for line in _source_lines(report.sources.get(fam, []))
        ]
        h.append("</ul><h3>Per method</h3>")
        h.append(_html_table([r for r in report.summary if r["family"] == fam], _SUMMARY_COLUMNS))
        h.append("<h3>Per instance</h3>")
        h.append(_html_table([c for c in report.cells if c["family"] == fam], _CELL_COLUMNS))
        if fam == "pipeline" and report.plots:
            h.append("<h3>Frontiers</h3>")
            for name, png in report.plots.items():
                data = base64.b64encode(png).decode()
                h.append(f"<img alt='{html.escape(name)}' src='data:image/png;base64,{data}'>")
    if failures:
        h.append("<h2>Failed cells</h2><ul>")
        h += [
            f"<li>{html.escape(c['family'])} {html.escape(c['instance_name'] or c['instance_id'])} "
            f"{html.escape(c['method'])} seed {c['seed']}: {html.escape(c['outcome'])}: "
            f"{html.escape(_short(c['message']))}</li>"
            for c in failures
        ]
        h.append("</ul>")
    h.append("</body></html>")
    paths["html"].write_text("\n".join(h) + "\n")

    cols = [
        "family", "suite", "instance_id", "instance_name", "method", "seed", "time_limit_s",
        "outcome", "termination", "status", "objective", "bound", "best_bound",
        "gap_to_best_bound", "runtime_s", "wall_s", "solver", "solver_version", "run_id",
    ]  # fmt: skip
    with paths["csv"].open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
        w.writeheader()
        w.writerows(report.cells)
    for name, png in report.plots.items():
        (out / "plots" / name).write_bytes(png)
    return paths


def make_report(store_path: str | Path, out_dir: str | Path, *, plots: bool = True) -> Report:
    """:func:`build_report` then :func:`write_report`."""
    report = build_report(store_path, plots=plots)
    write_report(report, out_dir, store_name=Path(store_path).name)
    return report
