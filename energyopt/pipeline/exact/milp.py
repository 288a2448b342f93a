"""PEM as a MILP in Pyomo (``formulations/pem.md``), solved with HiGHS.

Each constraint family is built by its own function that cites its equation.
"""

from __future__ import annotations

from typing import Any

import pyomo.environ as pyo
from pyomo.common.collections import ComponentMap

from energyopt.pipeline.exact.timewindows import time_windows as _time_windows
from energyopt.pipeline.instance import PemInstance

FORMULATIONS = ("incremental", "assignment")


def build_model(
    instance: PemInstance,
    deadline_s: float | None,
    formulation: str = "incremental",
    time_windows: bool = True,
) -> pyo.ConcreteModel:
    """The PEM MILP of ``instance`` at ``deadline_s`` (``None``: iteration time free).

    Parameters
    ----------
    formulation
        ``"assignment"``: one binary per option (Eqs. PEM-1, PEM-2).
        ``"incremental"``: one binary per step to a slower option (Eqs. PEM-6a..c);
        the same LP relaxation, but branching splits an option range in two, which
        HiGHS exploits much better (see ``benchmarks/pem_exact.py``).
    time_windows
        Add the valid time-window bounds and eliminations (Eq. PEM-7).

    Returns
    -------
    ConcreteModel
        With ``m.x[i, k]`` (option k chosen for computation i; a binary or an
        expression in the incremental formulation), ``m.start[i]``, ``m.T``.
    """
    if formulation not in FORMULATIONS:
        raise ValueError(f"formulation = {formulation!r}: expected one of {FORMULATIONS}")
    m = pyo.ConcreteModel(name=f"PEM {instance.name}")
    m.I = pyo.RangeSet(0, instance.num_computations - 1)
    m.IK = pyo.Set(
        dimen=2, initialize=[(i, k) for i in m.I for k in range(len(instance.option_times[i]))]
    )
    m.formulation = formulation
    windows = _time_windows(instance)
    _iteration_time(m, instance, deadline_s, windows)
    if formulation == "assignment":
        m.x = pyo.Var(m.IK, domain=pyo.Binary)
        option_choice(m, instance)
    else:
        incremental_choice(m, instance)
    _duration(m, instance)
    _start_times(m, instance, windows if time_windows else None, deadline_s)
    precedence(m, instance)
    deadline(m, instance)
    time_window_eliminations(m, instance, windows, deadline_s if time_windows else None)
    objective(m, instance)
    return m


def _iteration_time(
    m: pyo.ConcreteModel, instance: PemInstance, deadline_s: float | None, windows: Any
) -> None:
    if deadline_s is not None:
        m.T = pyo.Param(initialize=float(deadline_s), mutable=False)
    else:
        slowest = sum(float(t.max()) for t in instance.option_times)
        m.T = pyo.Var(bounds=(windows.makespan_lb, slowest))


def option_choice(m: pyo.ConcreteModel, instance: PemInstance) -> None:
    """(PEM-1) Each computation runs exactly one of its options."""
    m.option_choice = pyo.Constraint(
        m.I, rule=lambda m, i: sum(m.x[i, k] for k in range(len(instance.option_times[i]))) == 1
    )


def incremental_choice(m: pyo.ConcreteModel, instance: PemInstance) -> None:
    """(PEM-6a) y[i,k] = 1 when computation i runs option k or a slower one (k >= 1),
    (PEM-6b) y[i,k] >= y[i,k+1], and (PEM-6c) x[i,k] = y[i,k] - y[i,k+1] with y[i,0] = 1.

    Options are indexed fastest first (ties by effective energy), so y is monotone.
    """
    order = {
        i: sorted(
            range(len(instance.option_times[i])),
            key=lambda k, i=i: (instance.option_times[i][k], -k),
        )
        for i in m.I
    }
    m.option_rank = order
    steps = [(i, r) for i in m.I for r in range(1, len(order[i]))]
    m.Y = pyo.Set(dimen=2, initialize=steps)
    m.y = pyo.Var(m.Y, domain=pyo.Binary)

    def y(i: int, r: int) -> Any:
        if r == 0:
            return 1
        if r >= len(order[i]):
            return 0
        return m.y[i, r]

    m.incremental_order = pyo.Constraint(
        [(i, r) for (i, r) in steps if r + 1 < len(order[i])],
        rule=lambda m, i, r: m.y[i, r] >= m.y[i, r + 1],
    )
    rank = {(i, k): r for i in m.I for r, k in enumerate(order[i])}
    m.x = pyo.Expression(m.IK, rule=lambda m, i, k: y(i, rank[i, k]) - y(i, rank[i, k] + 1))


def _duration(m: pyo.ConcreteModel, instance: PemInstance) -> None:
    """(PEM-2) The duration of a computation is the time of its chosen option."""
    m.duration = pyo.Expression(
        m.I,
        rule=lambda m, i: sum(float(t) * m.x[i, k] for k, t in enumerate(instance.option_times[i])),
    )


def _start_times(
    m: pyo.ConcreteModel, instance: PemInstance, windows: Any, deadline_s: float | None
) -> None:
    if windows is None:
        m.start = pyo.Var(m.I, bounds=(0, None))
        return
    ub = None if deadline_s is None else windows.latest_start(deadline_s)

    def bounds(m: pyo.ConcreteModel, i: int) -> tuple[float, float | None]:
        lo = float(windows.earliest_start[i])
        return (lo, None if ub is None else max(lo, float(ub[i])))

    m.start = pyo.Var(m.I, bounds=bounds)


def precedence(m: pyo.ConcreteModel, instance: PemInstance) -> None:
    """(PEM-3) A computation starts after each predecessor ends."""
    m.precedence = pyo.Constraint(
        list(instance.edges), rule=lambda m, a, b: m.start[b] >= m.start[a] + m.duration[a]
    )


def deadline(m: pyo.ConcreteModel, instance: PemInstance) -> None:
    """(PEM-4) Every computation ends by the iteration time T (only sinks need it)."""
    sinks = [i for i in m.I if not instance.successors[i]]
    m.deadline = pyo.Constraint(sinks, rule=lambda m, i: m.start[i] + m.duration[i] <= m.T)


def time_window_eliminations(
    m: pyo.ConcreteModel, instance: PemInstance, windows: Any, deadline_s: float | None
) -> None:
    """(PEM-7) Options that cannot fit between earliest start and fastest tail are off."""
    if deadline_s is None:
        m.time_window = pyo.Constraint([], rule=lambda m, i, k: pyo.Constraint.Skip)
        return
    allowed = windows.allowed(instance, deadline_s)
    banned = [
        (i, k) for i in m.I for k in range(len(instance.option_times[i])) if k not in allowed[i]
    ]
    m.time_window = pyo.Constraint(banned, rule=lambda m, i, k: m.x[i, k] == 0)


def objective(m: pyo.ConcreteModel, instance: PemInstance) -> None:
    """(PEM-5) Minimize sum_i e_i + P_b (S T - sum_i t_i): effective energies plus P_b S T."""
    pb, S = instance.p_blocking_w, instance.num_stages
    eff = {i: instance.effective_energy(i) for i in m.I}
    m.energy = pyo.Objective(
        expr=sum(float(eff[i][k]) * m.x[i, k] for (i, k) in m.IK) + pb * S * m.T,
        sense=pyo.minimize,
    )


def read_choice(m: pyo.ConcreteModel, instance: PemInstance) -> tuple[int, ...]:
    """The option chosen for each computation in the loaded solution."""
    choice = []
    for i in m.I:
        vals = [pyo.value(m.x[i, k]) for k in range(len(instance.option_times[i]))]
        choice.append(max(range(len(vals)), key=vals.__getitem__))
    return tuple(choice)


def warm_start_values(
    m: pyo.ConcreteModel, instance: PemInstance, choice: tuple[int, ...], start: Any
) -> ComponentMap:
    """Variable values of a known solution (a Pyomo ``ComponentMap``), for HiGHS' MIP start."""
    values: Any = ComponentMap()
    if m.formulation == "assignment":
        for i, k in m.IK:
            values[m.x[i, k]] = 1.0 if choice[i] == k else 0.0
    else:
        for i, r in m.Y:
            values[m.y[i, r]] = 1.0 if m.option_rank[i].index(choice[i]) >= r else 0.0
    for i in m.I:
        values[m.start[i]] = float(start[i])
    if not isinstance(m.T, pyo.Param):
        values[m.T] = float(max(start[i] + instance.option_times[i][choice[i]] for i in m.I))
    return values
