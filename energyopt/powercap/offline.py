"""Offline time-indexed MILP bound for small traces (formulations/powercap.md, PC-22..PC-28).

Time is cut into slots of ``slot_s`` seconds. In each slot a job spends a fraction
of the slot in each configuration (continuous ``w``), the slot averages of the GPU
count and of the job power stay within ``G`` and the cap, a job cannot run before
its arrival, and binary ``y[j, k]`` says job j has finished by the end of slot k.
A job finishing in slot k completes no earlier than ``k * slot_s``.

Every schedule the simulator can produce with the same performance tables and a
power cap respected at every instant (any online policy, any switching times, no
profiling overhead) maps to a feasible point of this model whose objective is at
most its mean JCT (idle power and placement are dropped, which only loosens it).
So the MILP optimum -- and HiGHS' proven dual bound on it -- is a lower bound on the
mean JCT of every such policy on that trace. It is a bound, not a schedule.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import pyomo.environ as pyo

from energyopt.core.highs import solve_with_highs
from energyopt.core.status import TerminationReason
from energyopt.powercap.instance import IterationModel, JobOption, option_table
from energyopt.powercap.simulator import Cluster
from energyopt.powercap.trace import Trace


@dataclasses.dataclass(frozen=True)
class OfflineBound:
    """Result of the offline MILP.

    ``bound`` is the proven lower bound on the mean JCT of any cap-respecting policy
    (HiGHS' dual bound; ``None`` if HiGHS failed). ``relaxed_objective`` is the MILP
    incumbent (a relaxed schedule, not achievable in general).
    """

    bound: float | None
    relaxed_objective: float | None
    termination: TerminationReason
    num_slots: int
    slot_s: float
    runtime_s: float
    message: str = ""


def efficient_options(opts: tuple[JobOption, ...]) -> list[JobOption]:
    """Drop options dominated by another with no more GPUs, no more power and no less speed.

    Dropping a dominated option leaves the bound valid: any use of it can be replaced
    by its dominator without breaking a constraint or slowing the job.
    """
    keep = []
    for o in opts:
        dominated = any(
            p is not o
            and p.num_gpus <= o.num_gpus
            and p.power_w <= o.power_w
            and p.iter_time_s <= o.iter_time_s
            and (p.num_gpus, p.power_w, p.iter_time_s) != (o.num_gpus, o.power_w, o.iter_time_s)
            for p in opts
        )
        if not dominated:
            keep.append(o)
    return keep


def add_slot_fractions(m, jobs, opts, arrivals, slot_s, K) -> None:
    """PC-22: time fractions ``w[j, k, o]`` in [0, 1]; at most the slot after arrival."""
    m.W = pyo.Set(
        initialize=[(j, k, o) for j in jobs for k in range(K) for o in range(len(opts[j]))],
        dimen=3,
    )
    m.w = pyo.Var(m.W, bounds=(0, 1))

    def avail(m, j, k):
        frac = min(1.0, max(0.0, ((k + 1) * slot_s - arrivals[j]) / slot_s))
        return sum(m.w[j, k, o] for o in range(len(opts[j]))) <= frac

    m.available = pyo.Constraint(jobs, range(K), rule=avail)


def add_slot_resources(m, jobs, opts, K, cluster: Cluster, cap_w: float) -> None:
    """PC-23, PC-24: slot-average GPUs within G and job power within the cap."""
    m.gpus = pyo.Constraint(
        range(K),
        rule=lambda m, k: (
            sum(opts[j][o].num_gpus * m.w[j, k, o] for j in jobs for o in range(len(opts[j])))
            <= cluster.num_gpus
        ),
    )
    m.power = pyo.Constraint(
        range(K),
        rule=lambda m, k: (
            sum(opts[j][o].power_w * m.w[j, k, o] for j in jobs for o in range(len(opts[j])))
            <= cap_w
        ),
    )


def add_completion(m, jobs, opts, iterations, slot_s, K, finish_by_horizon: bool = True) -> None:
    """PC-25, PC-26: ``y`` monotone, finished by the last slot, progress covers the work.

    Without ``finish_by_horizon`` (PC-25') a job may stay unfinished at the horizon;
    PC-27 then charges it at least ``K D - A_j``, which any schedule that finishes it
    later also pays, so the bound holds for every makespan.
    """
    m.y = pyo.Var(jobs, range(K), domain=pyo.Binary)
    m.monotone = pyo.Constraint(jobs, range(K - 1), rule=lambda m, j, k: m.y[j, k] <= m.y[j, k + 1])
    if finish_by_horizon:
        m.finished = pyo.Constraint(jobs, rule=lambda m, j: m.y[j, K - 1] == 1)

    def progress(m, j, k):
        done = sum(
            m.w[j, t, o] * slot_s / opts[j][o].iter_time_s
            for t in range(k + 1)
            for o in range(len(opts[j]))
        )
        return done >= iterations[j] * m.y[j, k]

    m.progress = pyo.Constraint(jobs, range(K), rule=progress)


def add_jct(m, jobs, opts, arrivals, iterations, slot_s, K) -> None:
    """PC-27, PC-28: JCT at least (completion slot start - arrival) and the fastest run."""
    fastest = {j: iterations[j] * min(o.iter_time_s for o in opts[j]) for j in jobs}
    m.jct = pyo.Var(jobs, bounds=lambda m, j: (fastest[j], None))
    m.jct_slot = pyo.Constraint(
        jobs,
        rule=lambda m, j: m.jct[j] >= slot_s * sum(1 - m.y[j, k] for k in range(K)) - arrivals[j],
    )
    m.mean_jct = pyo.Objective(expr=sum(m.jct[j] for j in jobs) / len(jobs), sense=pyo.minimize)


def offline_bound(
    trace: Trace,
    cluster: Cluster,
    models: Mapping[str, IterationModel],
    eta: float,
    *,
    slot_s: float,
    horizon_s: float,
    time_limit: float | None = 60.0,
    finish_by_horizon: bool = True,
) -> OfflineBound:
    """Lower bound on the mean JCT of any online policy under the cap ``eta G P_max``.

    Parameters
    ----------
    trace
        A small trace (a few jobs).
    cluster, models
        The cluster and the performance tables the simulator uses as truth.
    eta
        Cap fraction (Eq. 19).
    slot_s, horizon_s
        Slot length and the horizon; with ``finish_by_horizon`` the horizon must allow
        every job to finish (e.g. the makespan of a simulated policy), else the MILP is
        infeasible, and the bound covers the schedules that finish by it.
    finish_by_horizon
        PC-25's ``y[j, K-1] = 1``. Without it (PC-25') the bound covers every schedule,
        whatever its makespan; the horizon then only sets how tight it is.
    """
    trace.validate(cluster.num_gpus)
    K = math.ceil(horizon_s / slot_s)
    jobs = list(range(len(trace.jobs)))
    opts = [
        efficient_options(
            option_table(
                models[t.workload], t.global_batch_size, cluster.num_gpus, cluster.clocks_mhz
            )
        )
        for t in trace.jobs
    ]
    arrivals = [t.arrival_s for t in trace.jobs]
    iterations = [t.iterations for t in trace.jobs]
    cap = eta * cluster.num_gpus * cluster.p_max_w
    m = pyo.ConcreteModel(name="powercap offline")
    add_slot_fractions(m, jobs, opts, arrivals, slot_s, K)
    add_slot_resources(m, jobs, opts, K, cluster, cap)
    add_completion(m, jobs, opts, iterations, slot_s, K, finish_by_horizon)
    add_jct(m, jobs, opts, arrivals, iterations, slot_s, K)
    out = solve_with_highs(m, time_limit=time_limit, rel_gap=1e-6)
    bound = out.bound
    if out.termination is TerminationReason.INFEASIBLE:
        msg = "infeasible: the horizon is too short for the cap, lengthen horizon_s"
    else:
        msg = out.message
    return OfflineBound(
        bound if out.termination is not TerminationReason.INFEASIBLE else None,
        out.objective,
        out.termination,
        K,
        slot_s,
        out.runtime_s,
        msg,
    )
