"""PEM as a CP-SAT model with times scaled to integer ticks (``formulations/pem.md``, Sec. 4).

CP-SAT needs integers. Times become ticks of ``resolution_s`` seconds and
effective energies become integer units of ``energy_unit_j`` joules. Rounding is
done in two directions so that the method stays honest:

- the *primal* model rounds durations **up** and the deadline down, so every
  schedule it accepts also meets the deadline with the exact times; its solution
  is re-evaluated exactly by the evaluator;
- the *bound* model rounds durations and costs **down** (a relaxation of the
  exact problem), so its CP-SAT lower bound is a proven lower bound on the exact
  optimum. When all times are multiples of the resolution, the two models
  coincide and the method is exact.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from energyopt.core.cpsat import solve_with_cpsat
from energyopt.core.outcome import SolverOutcome
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.timewindows import time_windows


def _ticks(x: float, resolution: float, up: bool) -> int:
    q = x / resolution
    r = round(q)
    if abs(q - r) <= 1e-9 * max(1.0, abs(q)):  # exact multiples stay exact despite float noise
        return int(r)
    return int(math.ceil(q) if up else math.floor(q))


def _units(c: float, unit: float, primal: bool) -> int:
    # The primal model only needs a good ordering of costs; the bound model must not overstate them.
    q = c / unit
    return round(q) if primal or abs(q - round(q)) <= 1e-9 * max(1.0, abs(q)) else math.floor(q)


def build_cp_model(
    instance: PemInstance,
    deadline_s: float | None,
    *,
    resolution_s: float,
    energy_unit_j: float,
    round_up: bool,
    hint: tuple[int, ...] | None = None,
) -> tuple[Any, dict[str, Any]]:
    """The CP-SAT model (``round_up``: primal model, else the relaxation for the bound)."""
    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    n = instance.num_computations
    dur = [
        [_ticks(float(t), resolution_s, round_up) for t in instance.option_times[i]]
        for i in range(n)
    ]
    cost = [
        [_units(float(c), energy_unit_j, round_up) for c in instance.effective_energy(i)]
        for i in range(n)
    ]
    horizon = sum(max(d) for d in dur) + (0 if round_up else n)
    if deadline_s is not None:
        horizon = min(horizon, _ticks(deadline_s, resolution_s, up=False))
    x = [[model.new_bool_var(f"x_{i}_{k}") for k in range(len(dur[i]))] for i in range(n)]
    start = [model.new_int_var(0, horizon, f"s_{i}") for i in range(n)]
    d = [model.new_int_var(min(dur[i]), max(dur[i]), f"d_{i}") for i in range(n)]
    T = model.new_int_var(0, horizon, "T")
    for i in range(n):
        model.add_exactly_one(x[i])  # (PEM-1)
        model.add(d[i] == sum(dk * xk for dk, xk in zip(dur[i], x[i])))  # (PEM-2)
        if not instance.successors[i]:
            model.add(start[i] + d[i] <= T)  # (PEM-4)
    for a, b in instance.edges:
        model.add(start[b] >= start[a] + d[a])  # (PEM-3)
    pb_s = instance.p_blocking_w * instance.num_stages * resolution_s / energy_unit_j
    obj = sum(c * xk for i in range(n) for c, xk in zip(cost[i], x[i]))
    if deadline_s is None:
        # P_b S T in energy units per tick; floor keeps the bound model a relaxation.
        model.minimize(obj + _scaled_T_term(T, pb_s, round_up))
    else:
        model.minimize(obj)
    if hint is not None:
        for i, k in enumerate(hint):
            for kk, xk in enumerate(x[i]):
                model.add_hint(xk, kk == k)
    windows = time_windows(instance)
    # Earliest starts come from the exact times. With durations rounded down (the bound
    # model) a path of k computations can be up to k ticks shorter than its exact time,
    # so the window is loosened by n ticks there: otherwise it could cut off plans that
    # meet the deadline and the "bound" would exceed the optimum (found by the property
    # tests: 1000 units above an optimum of 0).
    loosen = 0 if round_up else n
    for i in range(n):
        es = _ticks(float(windows.earliest_start[i]), resolution_s, up=False)
        model.add(start[i] >= max(0, es - loosen))
    return model, {"x": x, "start": start, "T": T}


def _scaled_T_term(T: Any, pb_per_tick: float, round_up: bool) -> Any:
    # An integer coefficient for P_b S per tick; rounding down keeps the bound model a relaxation.
    coef = round(pb_per_tick) if round_up else math.floor(pb_per_tick + 1e-9)
    return coef * T


def solve_cpsat(
    instance: PemInstance,
    deadline_s: float | None,
    *,
    time_limit: float | None,
    seed: int | None,
    resolution_s: float,
    energy_unit_j: float,
    workers: int | None,
    hint: tuple[int, ...] | None,
    bound_model: bool,
    log: bool = False,
) -> tuple[SolverOutcome, tuple[int, ...] | None, float | None]:
    """Run the primal model (and the bound model when asked, sharing the time limit).

    ``log`` prints CP-SAT's search log (``log_search_progress``).

    Returns the primal outcome, the chosen options (or ``None``) and a proven lower
    bound on the exact optimum in joules (or ``None``).
    """
    budget = time_limit
    model, v = build_cp_model(
        instance,
        deadline_s,
        resolution_s=resolution_s,
        energy_unit_j=energy_unit_j,
        round_up=True,
        hint=hint,
    )
    t_primal = None if budget is None else (budget / 2 if bound_model else budget)
    outcome, solver = solve_with_cpsat(
        model, time_limit=t_primal, workers=workers, seed=seed, log=log
    )
    choice = None
    if solver is not None and outcome.objective is not None:
        choice = tuple(int(np.argmax([solver.boolean_value(xk) for xk in row])) for row in v["x"])
    bound = None
    exact_scaling = _scaling_is_exact(instance, deadline_s, resolution_s, energy_unit_j)
    if bound_model and not exact_scaling:
        rest = None if budget is None else max(0.1, budget - outcome.runtime_s)
        bmodel, _ = build_cp_model(
            instance,
            deadline_s,
            resolution_s=resolution_s,
            energy_unit_j=energy_unit_j,
            round_up=False,
            hint=choice,
        )
        b_out, _ = solve_with_cpsat(bmodel, time_limit=rest, workers=workers, seed=seed, log=log)
        if b_out.bound is not None and b_out.termination.value != "error":
            bound = _to_joules(instance, deadline_s, b_out.bound, energy_unit_j)
    elif exact_scaling and outcome.bound is not None and outcome.termination.value != "error":
        bound = _to_joules(instance, deadline_s, outcome.bound, energy_unit_j)
    return outcome, choice, bound


def _to_joules(instance: PemInstance, deadline_s: float | None, value: float, unit: float) -> float:
    const = 0.0 if deadline_s is None else instance.p_blocking_w * instance.num_stages * deadline_s
    return value * unit + const


def _scaling_is_exact(
    instance: PemInstance, deadline_s: float | None, res: float, unit: float
) -> bool:
    """True when every time, the deadline and every effective energy are on the integer grids."""

    def on_grid(x: float, step: float) -> bool:
        q = x / step
        return abs(q - round(q)) <= 1e-9 * max(1.0, abs(q))

    if deadline_s is None:
        pb_s = instance.p_blocking_w * instance.num_stages * res / unit
        if not on_grid(pb_s, 1.0):
            return False
    elif not on_grid(deadline_s, res):
        return False
    return all(on_grid(float(t), res) for ts in instance.option_times for t in ts) and all(
        on_grid(float(c), unit)
        for i in range(instance.num_computations)
        for c in instance.effective_energy(i)
    )
