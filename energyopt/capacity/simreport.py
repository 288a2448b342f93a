"""The capacity family's report section: each online policy's simulated run against the
offline relaxation on the same job stream (issue 25, items 4 and 6)."""

from __future__ import annotations

import functools

from energyopt.capacity.scenario import POLICIES
from energyopt.core.sections import simulation_section

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


#: The family's report section (``FamilyHooks.report_sections``): each policy's run
#: beside the offline bound on the same scenario, and the gap.
report_sections = functools.partial(
    simulation_section,
    policies=POLICIES,
    unit="EUR",
    paragraphs=TEXT,
    extra=(("late jobs", "late_jobs", ""),),
)
