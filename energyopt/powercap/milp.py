"""Exact MILP of one scheduling event (formulations/powercap.md, PC-17..PC-21).

A multiple-choice knapsack over the precomputed configurations: one binary per
(job, configuration) plus one per queued job, a GPU budget, an integer count of
powered nodes, and the power cap with the idle GPUs of powered nodes.
"""

from __future__ import annotations

import pyomo.environ as pyo
from pyomo.common.collections import ComponentMap

from energyopt.powercap.instance import PowercapInstance


def _choices(inst: PowercapInstance) -> list[tuple[int, int]]:
    """(job, option index) pairs allowed by min_gpus; option index -1 is "queued"."""
    out = []
    for j, job in enumerate(inst.jobs):
        if job.min_gpus == 0:
            out.append((j, -1))
        out.extend((j, k) for k, o in enumerate(job.options) if o.num_gpus >= job.min_gpus)
    return out


def add_variables(m: pyo.ConcreteModel, inst: PowercapInstance) -> None:
    """x[j, k] = 1 when job j runs in option k (k = -1: queued); y = powered nodes."""
    m.C = pyo.Set(initialize=_choices(inst), dimen=2)
    m.J = pyo.RangeSet(0, len(inst.jobs) - 1)
    m.x = pyo.Var(m.C, domain=pyo.Binary)
    m.y = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, inst.num_nodes))


def _gpus(inst: PowercapInstance, j: int, k: int) -> int:
    return 0 if k < 0 else inst.jobs[j].options[k].num_gpus


def add_one_choice(m: pyo.ConcreteModel, inst: PowercapInstance) -> None:
    """PC-17: each job takes exactly one configuration (or the queue)."""
    m.one_choice = pyo.Constraint(m.J, rule=lambda m, j: sum(m.x[c] for c in m.C if c[0] == j) == 1)


def add_gpu_budget(m: pyo.ConcreteModel, inst: PowercapInstance) -> None:
    """PC-18: at most G GPUs in use."""
    m.gpu_budget = pyo.Constraint(expr=sum(_gpus(inst, *c) * m.x[c] for c in m.C) <= inst.num_gpus)


def add_powered_nodes(m: pyo.ConcreteModel, inst: PowercapInstance) -> None:
    """PC-19: the powered nodes hold the GPUs in use (``r y >= U``).

    Buddy placement realises ``y = ceil(U / r)`` (5.3); a larger y only adds idle
    power, so at the optimum y is that minimum whenever the cap binds.
    """
    m.powered_nodes = pyo.Constraint(
        expr=inst.gpus_per_node * m.y >= sum(_gpus(inst, *c) * m.x[c] for c in m.C)
    )


def add_power_cap(m: pyo.ConcreteModel, inst: PowercapInstance) -> None:
    """PC-20 (Eq. 19): job power plus idle GPUs of powered nodes within ``eta G P_max``."""
    job_power = sum(inst.jobs[j].options[k].power_w * m.x[j, k] for (j, k) in m.C if k >= 0)
    used = sum(_gpus(inst, *c) * m.x[c] for c in m.C)
    idle = inst.gpus_per_node * m.y - used
    m.power_cap = pyo.Constraint(expr=job_power + inst.idle_power_w * idle <= inst.power_cap_w)


def add_objective(m: pyo.ConcreteModel, inst: PowercapInstance) -> None:
    """PC-21 (Eq. 18): the mean predicted JCT (PC-9, PC-10)."""

    def jct(j: int, k: int) -> float:
        if k < 0:
            return inst.queued_jct_s(j)
        return inst.jct_s(j, inst.jobs[j].options[k])

    m.mean_jct = pyo.Objective(
        expr=sum(jct(*c) * m.x[c] for c in m.C) / len(inst.jobs), sense=pyo.minimize
    )


def build_model(inst: PowercapInstance) -> pyo.ConcreteModel:
    """The event MILP, one function per constraint family."""
    m = pyo.ConcreteModel(name=f"powercap {inst.name}")
    add_variables(m, inst)
    add_one_choice(m, inst)
    add_gpu_budget(m, inst)
    add_powered_nodes(m, inst)
    add_power_cap(m, inst)
    add_objective(m, inst)
    return m


def read_config(m: pyo.ConcreteModel, inst: PowercapInstance) -> tuple[tuple[int, int], ...]:
    """The chosen (num_gpus, sm_clock_mhz) per job; (0, 0) when queued."""
    out: list[tuple[int, int]] = [(0, 0)] * len(inst.jobs)
    for j, k in m.C:
        if pyo.value(m.x[j, k]) > 0.5 and k >= 0:
            o = inst.jobs[j].options[k]
            out[j] = (o.num_gpus, o.sm_clock_mhz)
    return tuple(out)


def warm_start_values(
    m: pyo.ConcreteModel, inst: PowercapInstance, config: tuple[tuple[int, int], ...]
) -> ComponentMap:
    """MIP start from a decision (e.g. the greedy's)."""
    vals = ComponentMap()
    for j, k in m.C:
        n, f = config[j]
        if k < 0:
            vals[m.x[j, k]] = 1.0 if n == 0 else 0.0
        else:
            o = inst.jobs[j].options[k]
            vals[m.x[j, k]] = 1.0 if (o.num_gpus, o.sm_clock_mhz) == (n, f) else 0.0
    used = sum(n for n, _ in config)
    vals[m.y] = float(-(-used // inst.gpus_per_node))
    return vals
