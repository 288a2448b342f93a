"""Independent evaluator of a scheduling-event decision (formulations/powercap.md PC-9..PC-15).

It recomputes feasibility and the mean predicted JCT from the chosen (GPU count,
clock) per job alone, and checks that buddy placement packs the chosen GPU counts
into ``ceil(U / r)`` nodes (the powered nodes whose idle GPUs count in the power).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from energyopt.core.evaluation import Figure
from energyopt.core.instance import InstanceError
from energyopt.powercap.instance import PowercapInstance, is_power_of_two
from energyopt.powercap.placement import packs_into

#: Relative tolerance on the power cap: solvers work in floating point.
CAP_RTOL = 1e-9


@dataclasses.dataclass(frozen=True)
class PowercapSolution:
    """Per job ``(num_gpus, sm_clock_mhz)``; ``(0, 0)`` leaves the job queued."""

    config: tuple[tuple[int, int], ...]

    def to_dict(self) -> dict[str, Any]:
        return {"config": [list(c) for c in self.config]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PowercapSolution:
        return cls(tuple((int(n), int(f)) for n, f in data["config"]))


@dataclasses.dataclass(frozen=True)
class PowercapEvaluation:
    """What the evaluator computes.

    Attributes
    ----------
    feasible
        All constraints PC-11..PC-15 hold.
    mean_jct_s
        PC-9/PC-10 averaged over the jobs: the objective (Eq. 18).
    jct_s
        Predicted JCT of each job.
    gpus_used, powered_nodes, idle_gpus
        U, ``ceil(U / r)`` and ``r * ceil(U / r) - U``.
    job_power_w, idle_power_w, power_w
        Power of the jobs, of the idle GPUs on powered nodes, and their sum.
    power_cap_w
        ``eta * G * P_max``.
    violations
        Why the decision is infeasible (empty when feasible).
    """

    feasible: bool
    mean_jct_s: float
    jct_s: tuple[float, ...]
    gpus_used: int
    powered_nodes: int
    idle_gpus: int
    job_power_w: float
    idle_power_w: float
    power_w: float
    power_cap_w: float
    violations: tuple[str, ...] = ()

    #: The objective's unit (:class:`energyopt.core.evaluation.Evaluation`).
    objective_unit: ClassVar[str] = "s"

    @property
    def objective(self) -> float:
        """The powercap objective: ``mean_jct_s`` (Eq. 18)."""
        return self.mean_jct_s

    def figures(self) -> dict[str, Figure]:
        return {
            "power_w": Figure(self.power_w, "W"),
            "power_cap_w": Figure(self.power_cap_w, "W"),
            "gpus_used": Figure(self.gpus_used),
            "powered_nodes": Figure(self.powered_nodes),
        }


def evaluate(
    instance: PowercapInstance, solution: PowercapSolution | Sequence[tuple[int, int]]
) -> PowercapEvaluation:
    """Feasibility and mean predicted JCT of ``solution`` on ``instance``."""
    config = solution.config if isinstance(solution, PowercapSolution) else tuple(solution)
    if len(config) != len(instance.jobs):
        raise InstanceError(f"solution: {len(config)} configurations for {len(instance.jobs)} jobs")
    violations: list[str] = []
    jct: list[float] = []
    used = 0
    job_power = 0.0
    sizes = []
    for j, (job, (n, f)) in enumerate(zip(instance.jobs, config)):
        n, f = int(n), int(f)
        if n == 0:
            if job.min_gpus > 0:
                violations.append(f"job {job.name!r} must run (min_gpus = {job.min_gpus})")
            jct.append(instance.queued_jct_s(j))
            continue
        if not is_power_of_two(n):  # PC-12
            violations.append(f"job {job.name!r}: {n} GPUs is not a power of two")
        if n < job.min_gpus:
            violations.append(f"job {job.name!r}: {n} GPUs < min_gpus = {job.min_gpus}")
        opt = job.option(n, f)
        if opt is None:  # PC-11
            unit = "W" if instance.knob == "power_limit_w" else "MHz"
            violations.append(f"job {job.name!r}: ({n} GPUs, {f} {unit}) is not one of its options")
            jct.append(math.inf)
            continue
        used += n
        sizes.append(n)
        job_power += opt.power_w
        jct.append(instance.jct_s(j, opt))
    r = instance.gpus_per_node
    nodes = -(-used // r)
    idle = nodes * r - used
    if used > instance.num_gpus:  # PC-13
        violations.append(f"{used} GPUs used, the cluster has {instance.num_gpus}")
    else:
        # Packing into ceil(U / r) nodes is placing on a cluster of just those nodes,
        # checked block by block: the cost follows the jobs, not the GPUs (a cluster or
        # a job of 10^7 GPUs evaluates as fast as one of 8).
        if not packs_into(sizes, nodes, r):
            violations.append("buddy placement does not pack the jobs into ceil(U / r) nodes")
    idle_w = instance.idle_power_w * idle  # PC-14
    power = job_power + idle_w
    cap = instance.power_cap_w
    if power > cap * (1 + CAP_RTOL) + 1e-9:  # PC-15
        violations.append(f"power {power:.6g} W exceeds the cap {cap:.6g} W")
    return PowercapEvaluation(
        feasible=not violations,
        mean_jct_s=sum(jct) / len(jct),
        jct_s=tuple(jct),
        gpus_used=used,
        powered_nodes=nodes,
        idle_gpus=idle,
        job_power_w=job_power,
        idle_power_w=idle_w,
        power_w=power,
        power_cap_w=cap,
        violations=tuple(violations),
    )
