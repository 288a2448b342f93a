"""Independent evaluator of a replay, and the exact optimum over a trace.

:func:`evaluate` recomputes every run's energy, time and cost (Eq. 2) from its
decisions (batch size, power limit, sampled path, epochs trained, profiled or
not) and the instance tables alone, and checks that the runs are a legal replay.
:func:`exact_reference` enumerates every (b, p) of the trace (Eqs. 6-7):

* ``c_star``: the smallest expected cost of one recurrence,
  ``min_{b,p} mean_r Epochs_r(b) * EpochCost(b, p)`` over the batch sizes whose
  every recorded run reaches the target within ``max_epochs`` -- the optimum of
  Eq. 4 in expectation and the reference of the regret of Eq. 9;
* ``c_floor``: ``min_{b,p,r} Epochs_r(b) * EpochCost(b, p)`` over all runs that
  reach the target -- every recurrence of every replay ends with such a run and
  no run costs less than its epochs at the best limit (a profiled first epoch
  costs the mean over limits, which is no less), so ``T * c_floor`` is a proven
  lower bound on the realized cumulative cost of any policy.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import ClassVar

from energyopt.core.evaluation import Figure
from energyopt.tuning.cost import energy_time_cost, epoch_cost
from energyopt.tuning.instance import TuningInstance
from energyopt.tuning.replay import Run

#: Relative tolerance between a replay's own cost figures and the evaluator's.
COST_RTOL = 1e-9


@dataclasses.dataclass(frozen=True)
class Evaluation:
    """The evaluator's figures for a replay."""

    feasible: bool
    violations: tuple[str, ...]
    total_cost: float
    total_energy_j: float
    total_time_s: float
    recurrence_cost: tuple[float, ...]
    recurrence_energy_j: tuple[float, ...]
    recurrence_time_s: tuple[float, ...]
    run_cost: tuple[float, ...]

    #: The objective's unit (:class:`energyopt.core.evaluation.Evaluation`).
    objective_unit: ClassVar[str] = "J"

    @property
    def objective(self) -> float:
        """The tuning objective: ``total_cost``, the cumulative cost (Eq. 4)."""
        return self.total_cost

    def figures(self) -> dict[str, Figure]:
        return {
            "total_energy_j": Figure(self.total_energy_j, "J"),
            "total_time_s": Figure(self.total_time_s, "s"),
        }


def run_figures(inst: TuningInstance, run: Run) -> tuple[float, float, float]:
    """(energy_j, time_s, cost) of one run, from the tables.

    Energy per epoch is ``t(b, p) * AvgPower(b, p)`` (Eq. 1); a profiled run's first
    epoch is the mean over P (Eq. 13); the cost is Eq. 2.
    """
    i, j = inst.index_of_batch(run.batch_size), inst.index_of_power(run.power_limit_w)
    t_run = inst.epoch_time_s[i][j]
    e_run = t_run * inst.avg_power_w[i][j]
    if run.profiled:
        # First epoch sliced evenly over every power limit of P.
        n = len(inst.power_limits_w)
        t_first = sum(inst.epoch_time_s[i]) / n
        e_first = sum(inst.epoch_time_s[i][k] * inst.avg_power_w[i][k] for k in range(n)) / n
    else:
        t_first, e_first = t_run, e_run
    time_s = t_first + (run.epochs - 1) * t_run
    energy_j = e_first + (run.epochs - 1) * e_run
    return energy_j, time_s, energy_time_cost(energy_j, time_s, inst.eta, inst.max_power_w)


def evaluate(inst: TuningInstance, runs: Sequence[Run]) -> Evaluation:
    """Check a replay and recompute its costs.

    Checks: each run's batch size, power limit and path exist; ``1 <= epochs <=
    max_epochs``; a run reached the target iff it trained exactly its path's
    target epochs; the runs of each recurrence end with its only successful run;
    there are ``inst.recurrences`` recurrences; a batch size is profiled at most
    once, on its earliest run.
    """
    bad: list[str] = []
    per_rec: dict[int, list[Run]] = {}
    costs, energy, time_ = [], 0.0, 0.0
    first_start: dict[int, float] = {}
    profiled_at: dict[int, list[float]] = {}
    for k, r in enumerate(runs):
        where = f"run {k} (recurrence {r.recurrence}, b={r.batch_size}, p={r.power_limit_w:g} W)"
        if r.batch_size not in inst.batch_sizes:
            bad.append(f"{where}: batch size not in B")
            continue
        if float(r.power_limit_w) not in inst.power_limits_w:
            bad.append(f"{where}: power limit not in P")
            continue
        paths = inst.target_epochs[inst.index_of_batch(r.batch_size)]
        if not 0 <= r.path < len(paths):
            bad.append(f"{where}: path {r.path} not among the {len(paths)} recorded runs")
            continue
        if not (isinstance(r.epochs, int) and 1 <= r.epochs <= inst.max_epochs):
            bad.append(f"{where}: epochs = {r.epochs!r} outside [1, {inst.max_epochs}]")
            continue
        target = paths[r.path]
        reaches = target is not None and target == r.epochs
        if r.reached != reaches:
            bad.append(
                f"{where}: reached = {r.reached} but path target {target}, epochs {r.epochs}"
            )
        if target is not None and r.epochs > target:
            bad.append(f"{where}: trained {r.epochs} epochs past the target epoch {target}")
        e, t, c = run_figures(inst, r)
        if abs(c - r.cost) > COST_RTOL * max(1.0, abs(c)):
            bad.append(f"{where}: replay cost {r.cost!r} but the tables give {c!r}")
        costs.append(c)
        energy += e
        time_ += t
        per_rec.setdefault(r.recurrence, []).append(r)
        first_start[r.batch_size] = min(first_start.get(r.batch_size, math.inf), r.start_s)
        if r.profiled:
            profiled_at.setdefault(r.batch_size, []).append(r.start_s)
    for b, starts in profiled_at.items():
        if len(starts) > 1:
            bad.append(f"batch size {b} profiled {len(starts)} times")
        elif starts[0] > first_start[b]:
            bad.append(f"batch size {b} profiled on a run that is not its first")
    if sorted(per_rec) != list(range(inst.recurrences)):
        bad.append(
            f"recurrences with runs {sorted(per_rec)[:5]}...: expected 0..{inst.recurrences - 1}"
        )
    rc, re, rt = [], [], []
    for t in sorted(per_rec):
        rs = per_rec[t]
        if not rs[-1].reached or any(x.reached for x in rs[:-1]):
            bad.append(f"recurrence {t}: must end with its one run that reaches the target")
        figs = [run_figures(inst, x) for x in rs]
        re.append(sum(f[0] for f in figs))
        rt.append(sum(f[1] for f in figs))
        rc.append(sum(f[2] for f in figs))
    return Evaluation(
        feasible=not bad,
        violations=tuple(bad),
        total_cost=sum(costs),
        total_energy_j=energy,
        total_time_s=time_,
        recurrence_cost=tuple(rc),
        recurrence_energy_j=tuple(re),
        recurrence_time_s=tuple(rt),
        run_cost=tuple(costs),
    )


@dataclasses.dataclass(frozen=True)
class ExactReference:
    """The exhaustive optimum over the trace (see the module docstring)."""

    batch_size: int
    power_limit_w: float
    c_star: float
    """Expected cost of one recurrence at (batch_size, power_limit_w): the optimum."""
    c_floor: float
    """Cheapest single successful run in the trace: a lower bound per recurrence."""
    expected_cost: dict[tuple[int, float], float]
    """Expected recurrence cost of every (b, p) whose runs all reach the target."""
    best_power_limit_w: dict[int, float]
    """Eq. 7's minimizer for every batch size."""


def exact_reference(inst: TuningInstance) -> ExactReference:
    """Every (b, p) of the trace: the optimum (Eq. 10) of Eqs. 6-7 and the floor (Eq. 11)."""
    expected: dict[tuple[int, float], float] = {}
    best_p: dict[int, float] = {}
    floor = math.inf
    for i, b in enumerate(inst.batch_sizes):
        ec = {
            p: epoch_cost(
                inst.epoch_time_s[i][j], inst.avg_power_w[i][j], inst.eta, inst.max_power_w
            )
            for j, p in enumerate(inst.power_limits_w)
        }
        best_p[b] = min(ec, key=lambda p: (ec[p], -p))
        paths = inst.target_epochs[i]
        ok = [e for e in paths if e is not None and e <= inst.max_epochs]
        if ok:
            floor = min(floor, min(ok) * ec[best_p[b]])
        if len(ok) == len(paths):
            mean_epochs = sum(ok) / len(ok)
            for p, c in ec.items():
                expected[(b, p)] = mean_epochs * c
    if not expected:
        raise ValueError(f"{inst.name}: no batch size reaches the target in every recorded run")
    (b, p) = min(expected, key=lambda k: (expected[k], k[0], -k[1]))
    return ExactReference(b, p, expected[(b, p)], floor, expected, best_p)


def expected_recurrence_cost(inst: TuningInstance, batch_size: int, power_limit_w: float) -> float:
    """Expected cost of one recurrence that always runs (b, p), without early stopping.

    Each run samples a recorded path; a path that misses the target within
    ``max_epochs`` trains ``max_epochs`` and the run is retried. With a miss
    probability q the expected number of missed runs is ``q / (1 - q)``, so the cost
    is ``(mean epochs of the paths that reach + q / (1 - q) max_epochs) EpochCost(b, p)``;
    ``inf`` when no path reaches the target. (The replay gives up after
    ``MAX_TRIES`` runs; its chance is ``q ** MAX_TRIES``, left out.)
    """
    i, j = inst.index_of_batch(batch_size), inst.index_of_power(power_limit_w)
    c = epoch_cost(inst.epoch_time_s[i][j], inst.avg_power_w[i][j], inst.eta, inst.max_power_w)
    paths = inst.target_epochs[i]
    ok = [e for e in paths if e is not None and e <= inst.max_epochs]
    if not ok:
        return math.inf
    q = 1 - len(ok) / len(paths)
    return (sum(ok) / len(ok) + q / (1 - q) * inst.max_epochs) * c
