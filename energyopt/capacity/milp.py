"""Capacity allocation as a MILP in Pyomo: the exact linearization of the MINLP.

``formulations/capacity.md`` Section 3. Each constraint family is built by its own
function that cites its equation (CAP-1 .. CAP-10).

Times (theta, y, q) are in units of the big-M Theta-bar (``m.time_unit`` seconds),
so that theta lies in [0, 1]; the objective is in EUR. HiGHS' tolerances are absolute:
with times of thousands of seconds in the big-M rows and a MIP feasibility tolerance
of 1e-9, HiGHS 1.12.0 (probing off, as under a time limit) proved a suboptimal MIP
start optimal (``benchmarks/highs_false_optimum.py``); :data:`HIGHS_OPTIONS` keeps
the tolerance at 1e-8, where no seed went wrong.
"""

from __future__ import annotations

import pyomo.environ as pyo
from pyomo.common.collections import ComponentMap

from energyopt.capacity.evaluator import Assignment
from energyopt.capacity.instance import CapacityInstance

#: HiGHS options for this model (see the module docstring): at a MIP feasibility
#: tolerance of 1e-9, the scaled model still ended in HiGHS "solve errors" on 20 of 30
#: seeds of ``tests/data/capacity-false-optimum.json``; at 1e-8, 0 of 30.
HIGHS_OPTIONS = {"mip_feasibility_tolerance": 1e-8, "primal_feasibility_tolerance": 1e-8}


def theta_max(instance: CapacityInstance) -> float:
    """Theta-bar: an upper bound on theta, the big-M of CAP-6..CAP-8."""
    longest = max(c[2] for confs in instance.configurations for c in confs)
    return max(instance.idle_horizon_s, longest)


def build_model(instance: CapacityInstance, time_unit: float | None = None) -> pyo.ConcreteModel:
    """The MILP of ``instance`` (work-conserving or not, as the instance says).

    ``time_unit`` (seconds) is Theta-bar unless given (1.0 builds the model in seconds,
    as before the scaling: the tests reproduce HiGHS' false optimum with it).

    Returns
    -------
    ConcreteModel
        With ``m.x[j, n, g]`` (job j runs on node n with g GPUs), ``m.p[j]``
        (postponed), ``m.theta`` and the objective ``m.cost`` in EUR.
    """
    m = pyo.ConcreteModel(name=f"capacity {instance.name}")
    m.J = pyo.RangeSet(0, instance.num_jobs - 1)
    m.N = pyo.RangeSet(0, instance.num_nodes - 1)
    m.K = pyo.Set(
        dimen=3,
        initialize=[(j, n, g) for j in m.J for (n, g, _) in instance.configurations[j]],
    )
    m.R = {(j, n, g): t for j in m.J for (n, g, t) in instance.configurations[j]}
    m.L = pyo.Set(
        dimen=2, initialize=[(n, k) for n in m.N for k in range(instance.nodes[n].num_gpus + 1)]
    )
    m.theta_max = theta_max(instance)
    m.time_unit = time_unit or (m.theta_max if m.theta_max > 0 else 1.0)
    m.x = pyo.Var(m.K, domain=pyo.Binary)
    m.p = pyo.Var(m.J, domain=pyo.Binary)
    m.theta = pyo.Var(bounds=(0.0, m.theta_max / m.time_unit))
    assignment(m, instance)
    capacity(m, instance)
    usage_levels(m, instance)
    energy_products(m, instance)
    first_ending(m, instance)
    postponement(m, instance)
    if instance.work_conserving:
        work_conserving(m, instance)
    objective(m, instance)
    return m


def assignment(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-1) Each job runs in exactly one configuration or is postponed."""
    by_job: dict[int, list[tuple[int, int, int]]] = {j: [] for j in m.J}
    for k in m.K:
        by_job[k[0]].append(k)
    m.by_job = by_job
    m.assignment = pyo.Constraint(
        m.J, rule=lambda m, j: sum(m.x[k] for k in by_job[j]) + m.p[j] == 1
    )


def capacity(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-2) u_n = sum of the GPUs of the jobs on node n, at most G_n (GPUs are dedicated)."""
    on_node: dict[int, list[tuple[int, int, int]]] = {n: [] for n in m.N}
    for k in m.K:
        on_node[k[1]].append(k)
    m.u = pyo.Expression(m.N, rule=lambda m, n: sum(k[2] * m.x[k] for k in on_node[n]))
    m.capacity = pyo.Constraint(m.N, rule=lambda m, n: m.u[n] <= instance.nodes[n].num_gpus)


def usage_levels(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-5) One binary z[n, k] per usage level k = 0..G_n: sum_k z = 1, sum_k k z = u_n."""
    m.z = pyo.Var(m.L, domain=pyo.Binary)
    levels = {n: range(instance.nodes[n].num_gpus + 1) for n in m.N}
    m.one_level = pyo.Constraint(m.N, rule=lambda m, n: sum(m.z[n, k] for k in levels[n]) == 1)
    m.level_is_usage = pyo.Constraint(
        m.N, rule=lambda m, n: sum(k * m.z[n, k] for k in levels[n]) == m.u[n]
    )


def energy_products(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-6a..d) y[n, k] = theta * z[n, k], exact because z is binary and 0 <= theta <= Theta.

    Level 0 costs nothing (the node is off), so only k >= 1 gets a product. In time
    units of Theta (``m.time_unit``) the big-M is 1.
    """
    busy = [(n, k) for (n, k) in m.L if k >= 1]
    m.Lb = pyo.Set(dimen=2, initialize=busy)
    M = m.theta_max / m.time_unit
    m.y = pyo.Var(m.Lb, bounds=(0.0, M))
    m.y_le_z = pyo.Constraint(m.Lb, rule=lambda m, n, k: m.y[n, k] <= M * m.z[n, k])
    m.y_le_theta = pyo.Constraint(m.Lb, rule=lambda m, n, k: m.y[n, k] <= m.theta)
    m.y_ge = pyo.Constraint(m.Lb, rule=lambda m, n, k: m.y[n, k] >= m.theta - M * (1 - m.z[n, k]))


def first_ending(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-7a..f) theta is the remaining time of the first running job to end, H if none runs.

    s[j, n, g] selects the first-ending job's configuration and e the "nothing runs"
    case: (a) s <= x, (b) sum s + e = 1, (c) e <= p_j, (d) theta >= sum R s + H e,
    (e) theta <= R of each running job's configuration, (f) theta <= H when e = 1.
    Times in units of Theta (``m.time_unit``): M = 1.
    """
    U = m.time_unit
    M, H = m.theta_max / U, instance.idle_horizon_s / U
    m.s = pyo.Var(m.K, domain=pyo.Binary)
    m.e = pyo.Var(domain=pyo.Binary)
    m.select_running = pyo.Constraint(m.K, rule=lambda m, j, n, g: m.s[j, n, g] <= m.x[j, n, g])
    m.select_one = pyo.Constraint(expr=sum(m.s[k] for k in m.K) + m.e == 1)
    m.none_runs = pyo.Constraint(m.J, rule=lambda m, j: m.e <= m.p[j])
    m.theta_lower = pyo.Constraint(expr=m.theta >= sum(m.R[k] / U * m.s[k] for k in m.K) + H * m.e)
    m.theta_upper = pyo.Constraint(
        m.J,
        rule=lambda m, j: m.theta <= sum(m.R[k] / U * m.x[k] for k in m.by_job[j]) + M * m.p[j],
    )
    m.theta_idle = pyo.Constraint(expr=m.theta <= H + M * (1 - m.e))


def postponement(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-8) q_j >= T_c + theta + Rmin_j - d_j - M_j (1 - p_j), q_j >= 0.

    q_j is the worst-case tardiness of a postponed job; its cost beta w_j q_j
    pushes it down to max(0, .) when p_j = 1 and to 0 when p_j = 0. In time units
    of Theta (``m.time_unit``), like theta.
    """
    now, U = instance.now_s, m.time_unit
    rmin = instance.min_restart_time_s
    # (T_c + Rmin_j - d_j) / U, summed in seconds first: now and d_j may be large and close.
    slack = {j: (now + float(rmin[j]) - instance.jobs[j].due_s) / U for j in m.J}
    big = {j: max(0.0, m.theta_max / U + slack[j]) for j in m.J}
    m.q = pyo.Var(m.J, bounds=lambda m, j: (0.0, big[j]))
    m.postponed_tardiness = pyo.Constraint(
        m.J,
        rule=lambda m, j: m.q[j] >= m.theta + slack[j] - big[j] * (1 - m.p[j]),
    )


def work_conserving(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-9) A postponed job leaves every node it could run on full: u_n >= G_n p_j."""
    pairs = [(j, n) for j in m.J for n in instance.compatible_nodes[j]]
    m.work_conserving = pyo.Constraint(
        pairs, rule=lambda m, j, n: m.u[n] >= instance.nodes[n].num_gpus * m.p[j]
    )


def objective(m: pyo.ConcreteModel, instance: CapacityInstance) -> None:
    """(CAP-10) Energy sum_n sum_k E_nk y_nk + tardiness sum a_jng x + beta sum w_j q_j.

    In EUR, with y and q in units of ``m.time_unit`` seconds.
    """
    price, U = instance.eur_per_joule, m.time_unit
    energy = sum(price * instance.nodes[n].power_w(k) * U * m.y[n, k] for (n, k) in m.Lb)
    now = instance.now_s
    tard = sum(
        instance.jobs[j].tardiness_weight_eur_per_s
        * max(0.0, now + m.R[j, n, g] - instance.jobs[j].due_s)
        * m.x[j, n, g]
        for (j, n, g) in m.K
    )
    beta = instance.postponement_penalty
    post = sum(beta * instance.jobs[j].tardiness_weight_eur_per_s * U * m.q[j] for j in m.J)
    m.cost = pyo.Objective(expr=energy + tard + post, sense=pyo.minimize)


def read_assignment(m: pyo.ConcreteModel, instance: CapacityInstance) -> Assignment:
    """The configuration (or ``None``) of each job in the loaded solution."""
    out: list[tuple[int, int] | None] = []
    for j in m.J:
        chosen = [(n, g) for (_, n, g) in m.by_job[j] if pyo.value(m.x[j, n, g]) > 0.5]
        out.append(chosen[0] if chosen else None)
    return tuple(out)


def warm_start_values(
    m: pyo.ConcreteModel, instance: CapacityInstance, assign: Assignment
) -> ComponentMap:
    """Variable values of a known solution (in the model's scaled units), for HiGHS' MIP start."""
    values = ComponentMap()
    busy = [0] * instance.num_nodes
    times = {}
    for j, a in enumerate(assign):
        values[m.p[j]] = 1.0 if a is None else 0.0
        if a is not None:
            busy[a[0]] += a[1]
            times[j] = instance.remaining_time_s(j, a[0], a[1])
    for k in m.K:
        values[m.x[k]] = 1.0 if assign[k[0]] == (k[1], k[2]) else 0.0
    first = min(times, key=times.get) if times else None
    theta = times[first] if first is not None else instance.idle_horizon_s
    for k in m.K:
        values[m.s[k]] = 1.0 if first == k[0] and assign[k[0]] == (k[1], k[2]) else 0.0
    values[m.e] = 1.0 if first is None else 0.0
    U = m.time_unit
    values[m.theta] = theta / U
    for n, k in m.L:
        values[m.z[n, k]] = 1.0 if busy[n] == k else 0.0
    for n, k in m.Lb:
        values[m.y[n, k]] = theta / U if busy[n] == k else 0.0
    rmin = instance.min_restart_time_s
    for j in m.J:
        late = instance.now_s + theta + float(rmin[j]) - instance.jobs[j].due_s
        values[m.q[j]] = max(0.0, late) / U if assign[j] is None else 0.0
    return values
