"""A family's own part of the gap report: text, a table and plots (issue 25, item 6).

A family whose results carry more than one objective and one bound (a tuning replay's
references and regret curves, a simulation's offline bound) describes that part of the
report as :class:`ReportSection` values, from ``FamilyHooks.report_sections``; the bench
(:mod:`energyopt.bench.sections`) renders them into the HTML and Markdown report without
knowing the family.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any


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
