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
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from energyopt.core.cpsat import cpsat_version, solve_with_cpsat
from energyopt.core.outcome import SolverOutcome
from energyopt.core.result import Result
from energyopt.core.status import SolutionStatus, TerminationReason
from energyopt.core.timelimit import MIN_SOLVER_S
from energyopt.pipeline.exact.solve import within_solver_tolerance
from energyopt.pipeline.exact.timewindows import time_windows
from energyopt.pipeline.instance import PemInstance


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


#: Seconds to build one CP-SAT model (:func:`build_cp_model`) per option entry. Measured
#: on the paper instances after the dominance filter, from synthetic 4x8 (640 options)
#: to GPT-3 8x96 (45k options; 0.42-0.45 s primal, 0.35-0.37 s bound model): 9-11.6 us
#: per option for the primal model, 7-9.4 us for the bound model, linear in the options.
#: With a safety factor of 2 for loaded machines. A model is not built with less time left.
BUILD_S_PER_OPTION = 2.3e-5

#: The least time the bound model's CP-SAT solve is given once built.
_BOUND_SOLVE_FLOOR_S = 0.1


def build_seconds(instance: PemInstance) -> float:
    """Estimated seconds to build one CP-SAT model of ``instance`` (:data:`BUILD_S_PER_OPTION`)."""
    return BUILD_S_PER_OPTION * sum(len(t) for t in instance.option_times)


def _left(stop_at: float | None) -> float | None:
    return None if stop_at is None else stop_at - time.perf_counter()


def no_time_to_build(instance: PemInstance, stop_at: float | None) -> bool:
    """Whether the time left before ``stop_at`` cannot cover building one model."""
    left = _left(stop_at)
    return left is not None and left < build_seconds(instance)


class CpsatSolve(NamedTuple):
    """One primal solve (and bound solve) at one resolution."""

    outcome: SolverOutcome
    """The primal model's outcome."""
    choice: tuple[int, ...] | None
    bound: float | None
    """A proven lower bound on the exact optimum in joules, or ``None``."""
    bound_stopped: bool
    """Whether the time limit stopped the bound model (not built, or cut off)."""
    note: str = ""


def solve_cpsat(
    instance: PemInstance,
    deadline_s: float | None,
    *,
    stop_at: float | None,
    seed: int | None,
    resolution_s: float,
    energy_unit_j: float,
    workers: int | None,
    hint: tuple[int, ...] | None,
    bound_model: bool,
    log: bool = False,
    refine_on_miss: bool = False,
) -> CpsatSolve:
    """Run the primal model (and the bound model when asked) before ``stop_at``.

    ``stop_at`` is a ``time.perf_counter()`` value (``None``: no limit). The primal
    solve gets half the time left after its build, less the bound model's estimated
    build; the bound model is built only if the time left covers its build
    (:func:`build_seconds`). ``refine_on_miss``: the caller solves again at a finer
    resolution when the rounded-up model has no plan, so the bound model is skipped
    then (the finer one's bound is the one reported). ``log`` prints CP-SAT's search log.
    """
    exact_scaling = _scaling_is_exact(instance, deadline_s, resolution_s, energy_unit_j)
    two_models = bound_model and not exact_scaling
    scaling = {"resolution_s": resolution_s, "energy_unit_j": energy_unit_j}
    model, v = build_cp_model(instance, deadline_s, **scaling, round_up=True, hint=hint)
    left = _left(stop_at)
    t_primal = left
    if left is not None and two_models:
        t_primal = (left - build_seconds(instance)) / 2
    if t_primal is not None:
        t_primal = max(MIN_SOLVER_S, t_primal)
    solve_opts = {"workers": workers, "seed": seed, "log": log}
    outcome, solver = solve_with_cpsat(model, time_limit=t_primal, **solve_opts)
    choice = None
    if solver is not None and outcome.objective is not None:
        choice = tuple(int(np.argmax([solver.boolean_value(xk) for xk in row])) for row in v["x"])
    missed = outcome.termination is TerminationReason.INFEASIBLE and not exact_scaling
    if two_models and not (missed and refine_on_miss):
        if no_time_to_build(instance, stop_at):
            return CpsatSolve(
                outcome, choice, None, True, _no_time_note(instance, "build the bound model")
            )
        bmodel, _ = build_cp_model(instance, deadline_s, **scaling, round_up=False, hint=choice)
        left = _left(stop_at)
        rest = None if left is None else max(_BOUND_SOLVE_FLOOR_S, left)
        b_out, _ = solve_with_cpsat(bmodel, time_limit=rest, **solve_opts)
        cut = b_out.termination is TerminationReason.TIME_LIMIT
        return CpsatSolve(
            outcome,
            choice,
            _joules_bound(instance, deadline_s, b_out, energy_unit_j),
            cut,
            "the time limit stopped CP-SAT's bound model" if cut else "",
        )
    bound = None
    if exact_scaling:
        bound = _joules_bound(instance, deadline_s, outcome, energy_unit_j)
    return CpsatSolve(outcome, choice, bound, False)


def _joules_bound(
    instance: PemInstance, deadline_s: float | None, outcome: SolverOutcome, unit: float
) -> float | None:
    """``outcome``'s bound in joules at the deadline; ``None`` when it has none or failed."""
    if outcome.bound is None or outcome.termination is TerminationReason.ERROR:
        return None
    return _to_joules(instance, deadline_s, outcome.bound, unit)


class CpsatRun(NamedTuple):
    """The solves of :func:`solve_refining` and how they ended."""

    solve: CpsatSolve | None
    """The last solve; ``None`` when no time was left to build the first model."""
    resolution_s: float
    """The last solve's resolution (the one asked for when nothing was solved)."""
    missed: bool
    """Whether the rounded-up model found no plan at a deadline the exact times may meet."""
    stopped: bool
    """Whether the time limit stopped the run before it ended by itself."""
    notes: tuple[str, ...]


def solve_refining(
    instance: PemInstance,
    deadline_s: float | None,
    *,
    stop_at: float | None,
    resolution_s: float,
    **options: Any,
) -> CpsatRun:
    """:func:`solve_cpsat`, refining the resolution tenfold while the rounded-up model misses.

    A miss is the primal model proving that no plan with times rounded up meets the
    deadline while the scaling is not exact; refinement stops at 1e8 ticks per
    deadline. No model is built when the time left before ``stop_at`` cannot cover
    the build (:func:`build_seconds`), so the run stays within its time limit.
    ``options`` are :func:`solve_cpsat`'s other keywords.
    """
    if no_time_to_build(instance, stop_at):
        return CpsatRun(None, resolution_s, False, True, (_no_time_note(instance, "build"),))
    notes: list[str] = []
    resolution = resolution_s
    while True:
        finer = resolution / 10
        last_try = deadline_s is None or deadline_s / finer > 1e8
        got = solve_cpsat(
            instance,
            deadline_s,
            stop_at=stop_at,
            resolution_s=resolution,
            refine_on_miss=not last_try,
            **options,
        )
        missed = got.outcome.termination is TerminationReason.INFEASIBLE and not (
            _scaling_is_exact(instance, deadline_s, resolution, options["energy_unit_j"])
        )
        if got.note:
            notes.append(got.note)
        if not missed or last_try:
            limited = got.outcome.termination is TerminationReason.TIME_LIMIT
            return CpsatRun(got, resolution, missed, limited or got.bound_stopped, tuple(notes))
        if no_time_to_build(instance, stop_at):
            notes.append(f"no plan with times rounded up to {resolution:g} s")
            notes.append(_no_time_note(instance, f"refine to {finer:g} s"))
            return CpsatRun(got, resolution, True, True, tuple(notes))
        notes.append(f"no plan with times rounded up to {resolution:g} s; refined to {finer:g} s")
        resolution = finer


def run_outcome(run: CpsatRun) -> SolverOutcome:
    """The last primal outcome; a time limit with nothing found when no model was built."""
    if run.solve is not None:
        return run.solve.outcome
    return SolverOutcome(
        TerminationReason.TIME_LIMIT, SolutionStatus.NONE, None, None, 0.0, "cp-sat",
        cpsat_version(),
    )  # fmt: skip


def _no_time_note(instance: PemInstance, what: str) -> str:
    options = sum(len(t) for t in instance.option_times)
    return (
        f"no time left to {what}: a CP-SAT model of {options} options takes about "
        f"{build_seconds(instance):.2g} s to build"
    )


def reported_plan(
    instance: PemInstance,
    run: CpsatRun,
    start: tuple[int, ...] | None,
    energy: Callable[[tuple[int, ...]], float],
) -> tuple[tuple[int, ...] | None, TerminationReason, list[str]]:
    """The plan to report, the termination, and notes for the message.

    ``start`` is the relaxation's rounded plan (or ``None``). It stands in when
    CP-SAT has no plan (no model built, or the rounded-up times miss the deadline)
    and replaces CP-SAT's plan when it is better: CP-SAT's incumbent at the time
    limit, or even its optimum, which is optimal for times rounded up to the
    resolution, not for the instance. ``energy(plan)`` is the evaluator's energy of a
    plan, from the evaluations the method scores with.
    """
    notes = list(run.notes)
    stop = TerminationReason.TIME_LIMIT
    if run.solve is None:
        notes.append("reporting the relaxation's rounded plan" if start else "no plan found")
        return start, stop, notes
    if run.missed and start is not None:
        notes.append("reporting the relaxation's rounded plan")
        return start, stop if run.stopped else TerminationReason.COMPLETED, notes
    if run.missed:
        if not run.stopped:
            notes.append("no plan found with the finest resolution tried; use the 'highs' method")
        return None, stop if run.stopped else TerminationReason.UNKNOWN, notes
    choice, termination = run.solve.choice, run.solve.outcome.termination
    if start is not None and _better(energy, start, choice):
        if choice is None:
            why = "CP-SAT found no plan before the time limit; reporting the relaxation's"
        elif termination is stop:
            why = "CP-SAT stopped at the time limit; the relaxation's"
        else:  # optimal for times rounded up to the resolution only
            why = "CP-SAT's optimum for the rounded times is worse than the relaxation's"
        notes.append(f"{why} rounded plan" + ("" if choice is None else " is better"))
        choice = start
    return choice, termination, notes


def _better(
    energy: Callable[[tuple[int, ...]], float],
    plan: tuple[int, ...],
    than: tuple[int, ...] | None,
) -> bool:
    return than is None or energy(plan) < energy(than)


def best_bound(
    instance: PemInstance,
    cpsat_bound: float | None,
    lp_bound: float | None,
    choice: tuple[int, ...] | None,
    energy: Callable[[tuple[int, ...]], float],
) -> float | None:
    """The larger of CP-SAT's bound and the hull relaxation's, both in joules at the deadline.

    Both are proven lower bounds on the least energy of a plan meeting the deadline
    (energy counted to the deadline, Perseus Eq. 4): CP-SAT's from the bound model
    (durations and costs rounded down) plus ``P_b S T``, the relaxation's from weak
    duality (Eq. PEM-R6) plus ``P_b S T``. The relaxation's is capped at ``choice``'s
    energy within HiGHS' tolerance (:func:`energyopt.pipeline.exact.solve.within_solver_tolerance`).
    """
    if lp_bound is not None and choice is not None:
        lp_bound = within_solver_tolerance(instance, lp_bound, energy(choice))
    known = [b for b in (cpsat_bound, lp_bound) if b is not None]
    return max(known) if known else None


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


def pem_status(res: Result, stopped: bool = False) -> Result:
    """CP-SAT's ``optimal`` is the rounded model's: optimal for PEM only when the gap is 0.

    ``stopped``: the time limit stopped the method; a result that is not optimal
    then ends with ``time_limit`` (not ``completed``).
    """
    if res.termination is TerminationReason.OPTIMAL:
        if res.gap == 0.0:
            return replace(res, status=SolutionStatus.OPTIMAL)
        # Optimal for the rounded model only: the gap is what the time scaling costs.
        return replace(
            res,
            termination=TerminationReason.COMPLETED,
            message="; ".join(
                [m for m in (res.message,) if m]
                + ["optimal for the model with times rounded to the resolution"]
            ),
        )
    if stopped and res.termination is TerminationReason.COMPLETED:
        return replace(res, termination=TerminationReason.TIME_LIMIT)
    return res
