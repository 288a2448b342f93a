"""The families' own report sections (``FamilyHooks.report_sections``), read and rendered.

:func:`family_sections` hands each family its finished results from a store and gets
back :class:`~energyopt.core.sections.ReportSection` values; :func:`section_context` and
:func:`section_markdown` turn one into what the HTML template and the Markdown report
show. :func:`bound_scope` says which cells share a best bound: all cells of an instance,
or, for a family whose bounds hold per seed (``FamilyHooks.seeded_bound``), the cells
of one instance and seed. Nothing here names a family.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from energyopt.bench.store import ResultsStore
from energyopt.core.sections import ReportSection

#: Errors a family's section code may raise on a result it cannot use (stored by another
#: version, or by hand): the section is skipped with a line under "unreadable cells".
_SECTION_ERRORS = (ValueError, TypeError, KeyError, AttributeError, IndexError)


def _hooks(family: str) -> Any:
    from energyopt.core.registry import family_hooks

    try:
        return family_hooks(family)
    except (KeyError, ValueError):
        return None


def bound_scope(cells: pd.DataFrame) -> pd.Series:
    """Per cell: the seed where its family's bounds hold per seed, else -1 (one scope per
    instance). Group by ``(family, instance_id, scope)`` to take best bounds."""
    seeded = {f: bool(getattr(_hooks(f), "seeded_bound", False)) for f in cells["family"].unique()}
    scope = [
        int(s) if seeded.get(f) and not pd.isna(s) else -1
        for f, s in zip(cells["family"], cells["seed"])
    ]
    return pd.Series(scope, index=cells.index, dtype="int64")


def family_sections(
    store_path: str | Path, names: Mapping[str, str], problems: list[str]
) -> dict[str, list[ReportSection]]:
    """Family -> the sections its hooks build from its finished results in the store.

    ``names``: instance id -> display name. A result or section that cannot be read
    adds a line to ``problems`` and is skipped.
    """
    import json

    from energyopt.core.result import Result

    results: dict[str, list[Result]] = {}
    with ResultsStore(store_path, read_only=True) as store:
        families = {str(r["family"]) for r in store.rows(["family"])}
        # Only the families with a section are parsed (a frontier result can be 70 MB).
        wanted = {f for f in families if getattr(_hooks(f), "report_sections", None)}
        rows = store.rows(["cell_key", "family", "result_json"]) if wanted else []
        for row in (r for r in rows if r["family"] in wanted and r["result_json"]):
            try:
                data = json.loads(row["result_json"])
                results.setdefault(str(row["family"]), []).append(Result.from_dict(data))
            except (*_SECTION_ERRORS, json.JSONDecodeError) as exc:
                problems.append(f"{row['cell_key']}: not a result ({type(exc).__name__})")
    out: dict[str, list[ReportSection]] = {}
    for family, rs in sorted(results.items()):
        try:
            out[family] = list(_hooks(family).report_sections(rs, names))
        except _SECTION_ERRORS as exc:
            problems.append(f"{family} report section skipped: {type(exc).__name__}: {exc}")
    return out


def section_context(section: ReportSection, plots: Mapping[str, bytes]) -> dict[str, Any]:
    """What the HTML template shows of a section (its plots that were drawn, embedded)."""
    return {
        "title": section.title,
        "paragraphs": list(section.paragraphs),
        "table": {"head": list(section.head), "rows": [(list(r), "") for r in section.rows]},
        "plots": [
            {"name": p.name, "data": base64.b64encode(plots[p.name]).decode("ascii")}
            for p in section.plots
            if p.name in plots
        ],
    }


def section_markdown(section: ReportSection, plots: Mapping[str, bytes]) -> list[str]:
    """The section as Markdown lines (plots linked from ``plots/``)."""
    md = [f"### {section.title}", ""]
    for p in section.paragraphs:
        md += [p, ""]
    if section.head:
        md.append("| " + " | ".join(section.head) + " |")
        md.append("|" + "|".join("---" for _ in section.head) + "|")
        md += ["| " + " | ".join(c.replace("|", "\\|") for c in r) + " |" for r in section.rows]
        md.append("")
    drawn = [p.name for p in section.plots if p.name in plots]
    if drawn:
        md += [f"![{n}](plots/{n})" for n in drawn] + [""]
    return md


def section_plot_names(sections: Mapping[str, list[ReportSection]]) -> set[str]:
    """Every plot file name the sections own (kept out of the families' plot galleries)."""
    return {p.name for secs in sections.values() for s in secs for p in s.plots}
