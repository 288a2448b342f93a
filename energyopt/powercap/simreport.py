"""The powercap family's report section: each policy's simulation against the offline
bound on the same trace (issue 25, items 4 and 6)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from energyopt.core.gap import gap
from energyopt.core.sections import ReportSection
from energyopt.powercap.scenario import SCENARIO_METHODS

BOUND_METHOD = "offline-bound"


def _fmt(x: Any, unit: str = "") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.6g}{unit}"


def _gap_text(objective: float | None, bound: float | None) -> str:
    if bound is None or objective is None:
        return "-"
    return f"{100 * gap(objective, bound):.2f} %"


def _bound_text(b: Any) -> tuple[float | None, str]:
    """(bound, what to say about it) from the offline-bound result of a scenario."""
    if b is None:
        return None, "no offline-bound cell for this scenario"
    if b.bound is not None:
        return b.bound, f"{b.termination.value}: {_fmt(b.bound, ' s')}"
    return None, b.message or f"no bound ({b.termination.value})"


def report_sections(results: Sequence[Any], names: Mapping[str, str]) -> list[ReportSection]:
    """One table: per scenario and policy, the mean JCT, the offline bound and the gap."""
    sims = [r for r in results if r.method in SCENARIO_METHODS]
    if not sims:
        return []
    bounds = {r.instance_id: r for r in sims if r.method == BOUND_METHOD}
    rows = []
    for r in sorted(sims, key=lambda r: (names.get(r.instance_id, r.instance_id), r.method)):
        if r.method == BOUND_METHOD:
            continue
        bound, said = _bound_text(bounds.get(r.instance_id))
        rows.append(
            (
                names.get(r.instance_id, r.instance_id[:8]),
                r.method,
                _fmt(r.objective, " s"),
                _fmt(r.extra.get("energy_j"), " J"),
                said,
                _gap_text(r.objective, bound),
            )
        )
    text = (
        "Each scenario is a whole job trace run by the event simulator under one power "
        "cap; the objective is the mean job completion time over the trace, recomputed "
        "from the schedule. The offline bound is the time-indexed MILP on the same trace "
        "(formulations/powercap.md, PC-22..PC-28 with PC-25'): a lower bound on the mean "
        "JCT of every policy that respects the cap, whatever it knows in advance. Where "
        "the table gives no bound, the reason is stated (the MILP's size at that scale, "
        "or HiGHS found none in the time limit).",
        "Simulated: synthetic Alibaba-like traces and the simulated GPU's option tables.",
    )
    head = ("scenario", "policy", "mean JCT", "energy (simulated)", "offline bound", "gap")
    return [
        ReportSection(
            title="Simulations against the offline bound",
            paragraphs=text,
            head=head,
            rows=tuple(rows),
        )
    ]
