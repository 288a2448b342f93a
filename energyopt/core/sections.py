"""A family's own part of the gap report: text, a table and plots (issue 25, item 6).

A family whose results carry more than one objective and one bound (a tuning replay's
references and regret curves, a simulation's offline bound) describes that part of the
report as :class:`ReportSection` values, from ``FamilyHooks.report_sections``; the bench
(:mod:`energyopt.bench.sections`) renders them into the HTML and Markdown report without
knowing the family.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

from energyopt.core.gap import gap


@dataclasses.dataclass(frozen=True)
class SectionPlot:
    """One plot of a section: ``draw(ax)`` draws it on a matplotlib ``Axes``.

    ``name`` is its file name (``tuning-regret-<instance>.png``), unique in the report.
    """

    name: str
    draw: Callable[[Any], Any]


@dataclasses.dataclass(frozen=True)
class ReportSection:
    """A titled block of the report: paragraphs, one table (``head`` and ``rows`` of
    already formatted cells) and plots."""

    title: str
    paragraphs: tuple[str, ...] = ()
    head: tuple[str, ...] = ()
    rows: tuple[tuple[str, ...], ...] = ()
    plots: tuple[SectionPlot, ...] = ()

    def __post_init__(self) -> None:
        if any(len(r) != len(self.head) for r in self.rows):
            raise ValueError(f"section {self.title!r}: every row needs {len(self.head)} cells")


def _fmt(x: Any, unit: str) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.6g} {unit}".rstrip()


def simulation_section(
    results: Sequence[Any],
    names: Mapping[str, str],
    *,
    policies: Collection[str],
    unit: str,
    paragraphs: tuple[str, ...],
    extra: tuple[tuple[str, str, str], ...] = (),
    bound_method: str = "offline-bound",
    title: str = "Simulations against the offline bound",
) -> list[ReportSection]:
    """Each policy's whole-run objective beside the bound method's result on the same
    scenario: the bound and the gap, or why there is none.

    ``extra``: further columns ``(header, extra key, unit)`` from each policy's
    ``Result.extra``.
    """
    sims = [r for r in results if r.method in policies or r.method == bound_method]
    bounds = {r.instance_id: r for r in sims if r.method == bound_method}
    rows = []
    for r in sorted(sims, key=lambda r: (names.get(r.instance_id, r.instance_id), r.method)):
        if r.method == bound_method:
            continue
        b = bounds.get(r.instance_id)
        if b is None:
            said, value = f"no {bound_method} cell for this scenario", None
        elif b.bound is None:
            said, value = b.message or f"no bound ({b.termination.value})", None
        else:
            said, value = f"{_fmt(b.bound, unit)} ({b.termination.value})", b.bound
        g = gap(r.objective, value)  # None without either
        rows.append(
            (
                names.get(r.instance_id, r.instance_id[:8]),
                r.method,
                _fmt(r.objective, unit),
                *(_fmt(r.extra.get(key), u) for _, key, u in extra),
                said,
                "-" if g is None else f"{100 * g:.2f} %",
            )
        )
    if not rows:
        return []
    head = ("scenario", "policy", "objective", *(h for h, _, _ in extra), bound_method, "gap")
    return [ReportSection(title, paragraphs, head, tuple(rows))]
