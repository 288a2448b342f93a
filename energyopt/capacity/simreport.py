"""The capacity family's report section: each online policy's simulated run against the
offline relaxation on the same job stream (issue 25, items 4 and 6)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from energyopt.capacity.scenario import POLICIES
from energyopt.core.sections import ReportSection, simulation_section

TEXT = (
    "Each scenario is a whole stream of submitted jobs: the simulator calls the policy at "
    "every rescheduling point (an arrival or an end) and runs the cluster in between; the "
    "objective is the cumulative energy and tardiness cost of the stream, recomputed from "
    "the decisions. offline-bound is a relaxation over the whole horizon "
    "(formulations/capacity.md, CAP-B1..CAP-B3: each job alone, node idle power dropped), "
    "a lower bound on every policy's cost, whatever it knows in advance; it is loose where "
    "idle power or contention dominate the cost.",
    "Simulated: synthetic jobs and assumed node powers.",
)


def report_sections(results: Sequence[Any], names: Mapping[str, str]) -> list[ReportSection]:
    """Per scenario and policy: cumulative cost, late jobs, the offline bound, the gap."""
    return simulation_section(
        results,
        names,
        policies=POLICIES,
        bound_method="offline-bound",
        unit="EUR",
        title="Simulations against the offline bound",
        paragraphs=TEXT,
        extra=(("late jobs", "late_jobs", ""),),
    )
