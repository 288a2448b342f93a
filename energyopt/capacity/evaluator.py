"""The independent capacity-allocation evaluator: f_OBJ from the decisions alone.

Every capacity method is scored here (formulations/capacity.md, CAP-0). Nothing in
this module looks at solver output other than the configuration of each job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from energyopt.capacity.instance import CapacityInstance
from energyopt.core.evaluation import Figure
from energyopt.core.instance import InstanceError

Assignment = tuple[tuple[int, int] | None, ...]


@dataclasses.dataclass(frozen=True)
class CapacitySolution:
    """Per job, ``(node index, gpus)`` to run on from now, or ``None`` (postponed)."""

    assignment: Assignment

    def to_dict(self) -> dict[str, Any]:
        return {"assignment": [None if a is None else list(a) for a in self.assignment]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CapacitySolution:
        raw = data["assignment"]
        out: list[tuple[int, int] | None] = []
        for k, a in enumerate(raw):
            if a is None:
                out.append(None)
            elif isinstance(a, (list, tuple)) and len(a) == 2:
                out.append((int(a[0]), int(a[1])))
            else:
                raise InstanceError(f"assignment[{k}] = {a!r}: expected null or [node, gpus]")
        return cls(tuple(out))

    @property
    def postponed(self) -> tuple[int, ...]:
        return tuple(j for j, a in enumerate(self.assignment) if a is None)


@dataclasses.dataclass(frozen=True)
class CapacityEvaluation:
    """What the evaluator computes (all costs in EUR).

    Attributes
    ----------
    feasible
        Valid configurations, GPU capacity respected, and (work-conserving variant)
        no job postponed while one of its configurations fits.
    violations
        Why not, one line each.
    theta_s
        Time to the next rescheduling point: the remaining time of the first job to
        end, or the instance's idle horizon when nothing runs.
    busy_gpus
        Busy GPUs per node.
    energy_cost_eur, tardiness_cost_eur, postponement_cost_eur
        The three terms of f_OBJ (CAP-0).
    objective
        Their sum, f_OBJ.
    """

    feasible: bool
    violations: tuple[str, ...]
    theta_s: float
    busy_gpus: tuple[int, ...]
    energy_cost_eur: float
    tardiness_cost_eur: float
    postponement_cost_eur: float
    postponed: int = 0
    """Jobs postponed to the next rescheduling point."""

    #: The objective's unit (:class:`energyopt.core.evaluation.Evaluation`).
    objective_unit: ClassVar[str] = "EUR"

    @property
    def objective(self) -> float:
        return self.energy_cost_eur + self.tardiness_cost_eur + self.postponement_cost_eur

    def figures(self) -> dict[str, Figure]:
        return {
            "theta_s": Figure(self.theta_s, "s"),
            "energy_cost_eur": Figure(self.energy_cost_eur, "EUR"),
            "tardiness_cost_eur": Figure(self.tardiness_cost_eur, "EUR"),
            "postponement_cost_eur": Figure(self.postponement_cost_eur, "EUR"),
            "postponed": Figure(self.postponed),
        }


def evaluate(
    instance: CapacityInstance, solution: CapacitySolution | Sequence[tuple[int, int] | None]
) -> CapacityEvaluation:
    """Check ``solution`` and compute f_OBJ (formulations/capacity.md, CAP-0).

    Parameters
    ----------
    instance
        The rescheduling point.
    solution
        A :class:`CapacitySolution` or the assignment sequence itself.

    Returns
    -------
    CapacityEvaluation
        Costs are computed even for an infeasible solution (when the configurations
        are at least valid), so that a caller can see what went wrong.
    """
    assignment = solution.assignment if isinstance(solution, CapacitySolution) else solution
    assignment = tuple(assignment)
    violations: list[str] = []
    if len(assignment) != instance.num_jobs:
        raise InstanceError(f"assignment: {len(assignment)} entries for {instance.num_jobs} jobs")
    busy = [0] * instance.num_nodes
    times: list[float | None] = []
    for j, a in enumerate(assignment):
        if a is None:
            times.append(None)
            continue
        n, g = a
        if not (0 <= n < instance.num_nodes):
            raise InstanceError(f"assignment[{j}] = {a!r}: node index outside the cluster")
        node = instance.nodes[n]
        if node.gpu_type not in instance.jobs[j].epoch_time_s:
            raise InstanceError(
                f"assignment[{j}] = {a!r}: job {instance.jobs[j].name!r} has no profile "
                f"on {node.gpu_type}"
            )
        if not (1 <= g <= node.num_gpus):
            raise InstanceError(
                f"assignment[{j}] = {a!r}: node {node.name!r} has {node.num_gpus} GPUs"
            )
        busy[n] += g
        times.append(instance.remaining_time_s(j, n, g))
    for n, u in enumerate(busy):
        if u > instance.nodes[n].num_gpus:
            violations.append(
                f"node {instance.nodes[n].name!r}: {u} GPUs assigned, it has "
                f"{instance.nodes[n].num_gpus}"
            )
    if instance.work_conserving:
        for j, a in enumerate(assignment):
            if a is not None:
                continue
            # g = 1 is the smallest configuration: it fits wherever a GPU is free.
            free = [n for n in instance.compatible_nodes[j] if busy[n] < instance.nodes[n].num_gpus]
            if free:
                violations.append(
                    f"job {instance.jobs[j].name!r} postponed while node "
                    f"{instance.nodes[free[0]].name!r} has a free GPU (work-conserving)"
                )
    energy, tardiness, postponement, theta = objective_terms(instance, assignment, times, busy)
    return CapacityEvaluation(
        feasible=not violations,
        violations=tuple(violations),
        theta_s=theta,
        busy_gpus=tuple(busy),
        energy_cost_eur=energy,
        tardiness_cost_eur=tardiness,
        postponement_cost_eur=postponement,
        postponed=sum(a is None for a in assignment),
    )


def objective_terms(
    instance: CapacityInstance,
    assignment: Assignment,
    times: Sequence[float | None],
    busy: Sequence[int],
) -> tuple[float, float, float, float]:
    """(energy, tardiness, postponement, theta) of a checked assignment (CAP-0).

    ``times[j]`` is R_j of the job's configuration (``None`` when postponed) and
    ``busy[n]`` the busy GPUs of node n; callers that built the assignment
    themselves (the greedy) use this directly, everything else goes through
    :func:`evaluate`.
    """
    running = [t for t in times if t is not None]
    theta = min(running) if running else instance.idle_horizon_s
    rate = sum(instance.nodes[n].power_w(u) for n, u in enumerate(busy))
    energy = theta * rate * instance.eur_per_joule
    now = instance.now_s
    tardiness = 0.0
    postponement = 0.0
    beta = instance.postponement_penalty
    min_restart = instance.min_restart_time_s
    for j, t in enumerate(times):
        job = instance.jobs[j]
        if t is not None:
            tardiness += job.tardiness_weight_eur_per_s * max(0.0, now + t - job.due_s)
        else:
            late = now + theta + float(min_restart[j]) - job.due_s
            postponement += beta * job.tardiness_weight_eur_per_s * max(0.0, late)
    return energy, tardiness, postponement, theta
