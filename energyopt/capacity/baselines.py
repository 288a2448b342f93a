"""First-principle baselines of ANDREAS Section V-B: FIFO, EDF and priority scheduling.

They never change a running job's configuration (no preemption, no migration, the
reason the paper gives for their higher cost). Waiting jobs are taken in the
policy's order and each gets the fastest configuration that fits in the free GPUs
(an open node preferred, then the node with the fewest free GPUs that fit); a job
that fits nowhere waits. The resulting schedules are work-conserving.
"""

from __future__ import annotations

from collections.abc import Callable

from energyopt.capacity.evaluator import Assignment
from energyopt.capacity.instance import CapacityInstance, Job

#: Policy name -> sort key of a waiting job (smallest first); ties by job index.
POLICIES: dict[str, Callable[[Job], float]] = {
    "fifo": lambda job: job.arrival_s,
    "edf": lambda job: job.due_s,
    "priority": lambda job: -job.tardiness_weight_eur_per_s,
}


def first_principle(instance: CapacityInstance, policy: str) -> Assignment:
    """The schedule of ``policy`` (``"fifo"``, ``"edf"`` or ``"priority"``)."""
    if policy not in POLICIES:
        raise ValueError(f"policy = {policy!r}: expected one of {', '.join(POLICIES)}")
    key = POLICIES[policy]
    free = [node.num_gpus for node in instance.nodes]
    assign: list[tuple[int, int] | None] = [None] * instance.num_jobs
    for j, job in enumerate(instance.jobs):
        if job.running is not None:
            n, g = job.running
            assign[j] = (n, g)
            free[n] -= g
    waiting = sorted(
        (j for j, job in enumerate(instance.jobs) if job.running is None),
        key=lambda j: (key(instance.jobs[j]), j),
    )
    for j in waiting:
        candidates = [
            (t, 0 if free[n] < instance.nodes[n].num_gpus else 1, free[n] - g, n, g)
            for (n, g, t) in instance.configurations[j]
            if g <= free[n]
        ]
        if candidates:
            *_, n, g = min(candidates)
            assign[j] = (n, g)
            free[n] -= g
    return tuple(assign)
