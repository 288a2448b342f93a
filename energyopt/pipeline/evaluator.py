"""The independent PEM evaluator: iteration time and energy from the choices alone.

Every PEM method is scored here. Nothing in this module looks at solver output
other than the option chosen for each computation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from energyopt.core.evaluation import Figure
from energyopt.core.instance import InstanceError
from energyopt.pipeline.instance import PemInstance

#: Relative tolerance on the deadline: solvers work in floating point.
DEADLINE_RTOL = 1e-9


@dataclasses.dataclass(frozen=True)
class PemSolution:
    """One option index per computation (index into that computation's option table)."""

    choice: tuple[int, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"choice": list(self.choice)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PemSolution:
        return cls(tuple(int(k) for k in data["choice"]))

    @classmethod
    def from_clocks(cls, instance: PemInstance, clocks: Sequence[int | None]) -> PemSolution:
        """From an SM clock per computation (``None`` for single-option computations)."""
        if len(clocks) != instance.num_computations:
            raise InstanceError(
                f"clocks: {len(clocks)} given for {instance.num_computations} computations"
            )
        choice = []
        for i, f in enumerate(clocks):
            table = instance.options(i)
            if f is None and len(table) == 1:
                choice.append(0)
                continue
            try:
                choice.append(table.sm_clock_mhz.index(f))
            except ValueError:
                raise InstanceError(
                    f"clocks[{i}] = {f!r}: not an option of {instance.computations[i].name} "
                    f"(table {instance.computations[i].table!r})"
                ) from None
        return cls(tuple(choice))

    def clocks(self, instance: PemInstance) -> list[int | None]:
        return [instance.options(i).sm_clock_mhz[k] for i, k in enumerate(self.choice)]


@dataclasses.dataclass(frozen=True)
class PemEvaluation:
    """What the evaluator computes.

    Attributes
    ----------
    feasible
        Valid choices and an iteration time within the deadline.
    iteration_time_s
        Makespan: the longest path through the DAG with the chosen times.
    horizon_s
        T in the energy formula: the deadline, or the makespan without one.
    computation_energy_j
        Sum of the chosen options' energies.
    blocking_energy_j
        ``P_blocking * (S * T - sum of chosen times)`` (Perseus Eqs. 3-4).
    energy_j
        Their sum: the PEM objective.
    start_s
        Earliest start of each computation.
    violations
        Why the solution is infeasible (empty when feasible).
    """

    feasible: bool
    iteration_time_s: float
    horizon_s: float
    computation_energy_j: float
    blocking_energy_j: float
    energy_j: float
    start_s: np.ndarray
    violations: tuple[str, ...] = ()

    #: The objective's unit (:class:`energyopt.core.evaluation.Evaluation`).
    objective_unit: ClassVar[str] = "J"

    @property
    def objective(self) -> float:
        """The PEM objective: ``energy_j``."""
        return self.energy_j

    def figures(self) -> dict[str, Figure]:
        return {"iteration_time_s": Figure(self.iteration_time_s, "s")}


def evaluate(
    instance: PemInstance,
    solution: PemSolution | Sequence[int],
    deadline_s: float | None = ...,  # type: ignore[assignment]
) -> PemEvaluation:
    """Iteration time and energy of ``solution`` on ``instance``.

    Parameters
    ----------
    instance
        The PEM instance.
    solution
        A :class:`PemSolution` or a sequence of option indices.
    deadline_s
        Overrides the instance's deadline; ``None`` means "no deadline" (the energy
        is counted up to the makespan). By default the instance's own deadline.
    """
    choice = solution.choice if isinstance(solution, PemSolution) else tuple(solution)
    if deadline_s is ...:
        deadline_s = instance.deadline_s
    n = instance.num_computations
    violations: list[str] = []
    if len(choice) != n:
        raise InstanceError(f"solution: {len(choice)} choices for {n} computations")
    times = np.empty(n)
    energies = np.empty(n)
    for i, k in enumerate(choice):
        t_opts = instance.option_times[i]
        if not (0 <= int(k) < len(t_opts)):
            raise InstanceError(
                f"solution.choice[{i}] = {k!r}: {instance.computations[i].name} has "
                f"{len(t_opts)} option(s)"
            )
        times[i] = t_opts[k]
        energies[i] = instance.option_energies[i][k]
    start = np.zeros(n)
    finish = np.zeros(n)
    preds = instance.predecessors
    for i in instance.topological_order:
        p = preds[i]
        s = max(finish[j] for j in p) if p else 0.0
        start[i] = s
        finish[i] = s + times[i]
    makespan = float(finish.max())
    horizon = makespan
    if deadline_s is not None:
        if makespan > deadline_s * (1 + DEADLINE_RTOL):
            violations.append(
                f"iteration time {makespan:.9g} s exceeds the deadline {deadline_s:.9g} s"
            )
        horizon = max(float(deadline_s), makespan)
    comp_e = float(energies.sum())
    block_e = instance.p_blocking_w * (instance.num_stages * horizon - float(times.sum()))
    return PemEvaluation(
        feasible=not violations,
        iteration_time_s=makespan,
        horizon_s=horizon,
        computation_energy_j=comp_e,
        blocking_energy_j=block_e,
        energy_j=comp_e + block_e,
        start_s=start,
        violations=tuple(violations),
    )


@dataclasses.dataclass(frozen=True)
class PemBatchEvaluation:
    """:func:`evaluate_many` results, one entry per plan."""

    feasible: np.ndarray
    iteration_time_s: np.ndarray
    energy_j: np.ndarray


def evaluate_many(
    instance: PemInstance,
    choices: np.ndarray,
    deadline_s: float | None = ...,  # type: ignore[assignment]
    chunk: int = 512,
) -> PemBatchEvaluation:
    """:func:`evaluate` for many plans at once (rows of option indices).

    The same formulas on arrays: start times level by level through the DAG
    (``PemInstance.levels``), then the energy with blocking up to the deadline (or
    to each plan's makespan without one). Tested equal to :func:`evaluate`.
    ``choices`` of any signed integer width are read as they are (not copied);
    ``chunk`` plans are scored at a time (each plan on its own: any ``chunk``
    gives the same scores).
    """
    if deadline_s is ...:
        deadline_s = instance.deadline_s
    choices = _checked_choices(instance, choices)
    t_flat, e_flat, base = _option_arrays(instance)
    levels = _LevelOrder(instance)
    makespan = np.empty(len(choices))
    energy = np.empty(len(choices))
    for lo in range(0, len(choices), chunk):
        idx = choices[lo : lo + chunk] + base
        # C-ordered (plan, computation) like the 2-D gather: numpy sums each row
        # pairwise, so the sums below keep their last bits whatever the chunk.
        t = np.take(t_flat, idx)
        span = makespan[lo : lo + chunk]
        span[:] = levels.makespans(t)
        horizon = span if deadline_s is None else np.maximum(float(deadline_s), span)
        energy[lo : lo + chunk] = np.take(e_flat, idx).sum(axis=1) + instance.p_blocking_w * (
            instance.num_stages * horizon - t.sum(axis=1)
        )
    feasible = (
        np.ones(len(choices), dtype=bool)
        if deadline_s is None
        else makespan <= float(deadline_s) * (1 + DEADLINE_RTOL)
    )
    return PemBatchEvaluation(feasible, makespan, energy)


def _checked_choices(instance: PemInstance, choices: np.ndarray) -> np.ndarray:
    """``choices`` as a signed integer array, after checking its shape and every index.

    Raises :class:`InstanceError` naming the first bad entry (in row order).
    """
    choices = np.asarray(choices)
    if choices.dtype.kind != "i":  # unsigned would not add to the signed offsets
        choices = choices.astype(np.int64)
    n = instance.num_computations
    if choices.ndim != 2 or choices.shape[1] != n:
        raise InstanceError(f"choices: shape {choices.shape}, expected (plans, {n})")
    sizes = np.array([len(t) for t in instance.option_times])
    # Column extremes first: no plan-sized temporaries unless an index is bad.
    if len(choices) and ((choices.min(axis=0) < 0) | (choices.max(axis=0) >= sizes)).any():
        bad = (choices < 0) | (choices >= sizes[None, :])
        r, i = map(int, np.argwhere(bad)[0])
        raise InstanceError(
            f"choices[{r}][{i}] = {choices[r, i]}: {instance.computations[i].name} has "
            f"{sizes[i]} option(s)"
        )
    return choices


def _option_arrays(instance: PemInstance) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every computation's option times and energies, flat, and each computation's offset.

    Option ``k`` of computation ``i`` sits at ``base[i] + k`` (rows padded with zeros
    to the widest table).
    """
    n = instance.num_computations
    sizes = [len(t) for t in instance.option_times]
    width = max(sizes)
    t_opt = np.zeros((n, width))
    e_opt = np.zeros((n, width))
    for i in range(n):
        t_opt[i, : sizes[i]] = instance.option_times[i]
        e_opt[i, : sizes[i]] = instance.option_energies[i]
    return t_opt.ravel(), e_opt.ravel(), np.arange(n, dtype=np.int64) * width


class _LevelOrder:
    """The DAG's levels (``PemInstance.levels``) as consecutive rows, for many plans' makespans.

    Computation ``order[r]`` gets row ``r``: a level's computations are a slice of
    rows, and its padded predecessor lists become row numbers (the padding ``-1``
    the row ``n``, an all-zero finish). The plans run along the rows, so every step
    reads and writes whole contiguous rows.
    """

    def __init__(self, instance: PemInstance) -> None:
        n = instance.num_computations
        self.order = np.concatenate([nodes for nodes, _ in instance.levels])
        row = np.empty(n, dtype=np.int64)
        row[self.order] = np.arange(n)
        self.steps: list[tuple[slice, list[np.ndarray]]] = []
        start = 0
        for nodes, preds in instance.levels:
            rows = np.where(preds < 0, n, row[preds])
            self.steps.append((slice(start, start + len(nodes)), list(rows.T)))
            start += len(nodes)

    def makespans(self, times: np.ndarray) -> np.ndarray:
        """Longest path of each plan, given its times (rows: plans, columns: computations).

        Each finish is the latest predecessor's finish (zero for none) plus the
        computation's own time: the :func:`evaluate` recurrence, the same roundings.
        """
        by_row = times.T[self.order]
        finish = np.zeros((len(self.order) + 1, len(times)))
        for rows, preds in self.steps:
            out = finish[rows]
            if len(preds) == 1:
                np.add(finish[preds[0]], by_row[rows], out=out)
                continue
            np.maximum(finish[preds[0]], finish[preds[1]], out=out)
            for p in preds[2:]:
                np.maximum(out, finish[p], out=out)
            out += by_row[rows]
        return finish[:-1].max(axis=0)


def fastest_choice(instance: PemInstance) -> PemSolution:
    """Every computation at its fastest option (ties: least energy)."""
    return PemSolution(
        tuple(
            int(np.lexsort((instance.option_energies[i], instance.option_times[i]))[0])
            for i in range(instance.num_computations)
        )
    )


def uniform_clock_choice(instance: PemInstance, clock_mhz: int) -> PemSolution:
    """Every computation at ``clock_mhz`` (single-option computations at their only option)."""
    return PemSolution.from_clocks(
        instance,
        [
            None
            if len(instance.options(i)) == 1 and instance.options(i).sm_clock_mhz[0] is None
            else clock_mhz
            for i in range(instance.num_computations)
        ],
    )


def min_energy_choice(instance: PemInstance) -> PemSolution:
    """Every computation at its least effective-energy option (ties: fastest).

    Its makespan is the slowest iteration time worth considering: beyond it the
    energy only grows with P_b S T (the start of the Perseus frontier crawl).
    """
    return PemSolution(
        tuple(
            int(np.lexsort((instance.option_times[i], instance.effective_energy(i)))[0])
            for i in range(instance.num_computations)
        )
    )


def deadline_between(instance: PemInstance, fraction: float = 0.5) -> float:
    """``T_fast + fraction * (T_min_energy - T_fast)``: a deadline between the extremes."""
    t_fast = evaluate(instance, fastest_choice(instance), None).iteration_time_s
    t_slow = evaluate(instance, min_energy_choice(instance), None).iteration_time_s
    return t_fast + fraction * (t_slow - t_fast)
