"""The powercap family's report section: each policy's simulation against the offline
bound on the same trace (issue 25, items 4 and 6)."""

from __future__ import annotations

import functools

from energyopt.core.sections import simulation_section
from energyopt.powercap.simcells import POLICIES

TEXT = (
    "Each scenario is a whole job trace run by the event simulator under one power cap; "
    "the objective is the mean job completion time over the trace, recomputed from the "
    "schedule. offline-bound is the time-indexed MILP on the same trace "
    "(formulations/powercap.md, PC-22..PC-28 with PC-25'): a lower bound on the mean JCT "
    "of every policy that respects the cap, whatever it knows in advance. Where it gives "
    "no bound the reason is stated (the MILP's size at that scale, or none found in the "
    "time limit).",
    "Simulated: synthetic Alibaba-like traces and the simulated GPU's option tables.",
)


#: The family's report section (``FamilyHooks.report_sections``): each policy's run
#: beside the offline bound on the same scenario, and the gap.
report_sections = functools.partial(
    simulation_section,
    policies=POLICIES,
    unit="s",
    paragraphs=TEXT,
    extra=(("energy (simulated)", "energy_j", "J"),),
)
