"""Straggler lookup on a Perseus frontier (Perseus 3.1, Eq. 2).

When another pipeline (a straggler) needs T' per iteration, a non-straggler gains
nothing by finishing before T_opt = min(T*, T'), where T* is the iteration time
of the minimal-energy plan: it slows down to T_opt and then blocks (drawing
P_blocking on every stage) until T'. The plan is looked up on the frontier.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from energyopt.core.instance import InstanceError
from energyopt.core.result import FrontierPoint, Result
from energyopt.pipeline.evaluator import PemEvaluation, PemSolution, evaluate
from energyopt.pipeline.instance import PemInstance


@dataclasses.dataclass(frozen=True)
class StragglerPlan:
    """The plan for a straggler time ``T'``.

    Attributes
    ----------
    t_straggler_s, t_star_s, t_opt_s
        T', T* (least-energy point of the frontier, Eq. 4 sense) and
        T_opt = min(T*, T') (Eq. 2).
    solution
        The frontier plan chosen: least effective energy among those with
        makespan <= T_opt.
    evaluation
        The evaluator's score with the horizon T' (blocking until the straggler
        finishes included); ``evaluation.energy_j`` is the energy of one iteration.
    """

    t_straggler_s: float
    t_star_s: float
    t_opt_s: float
    solution: PemSolution
    evaluation: PemEvaluation


def straggler_lookup(
    instance: PemInstance,
    frontier: Result | Sequence[FrontierPoint],
    t_straggler_s: float,
) -> StragglerPlan:
    """Plan at T_opt = min(T*, T') from a frontier (Perseus Eq. 2).

    Parameters
    ----------
    instance
        The instance the frontier was computed on.
    frontier
        A frontier :class:`Result` (e.g. of method ``perseus``) or its points.
    t_straggler_s
        T', the straggler's iteration time in seconds. Below the frontier's
        fastest time this pipeline is itself the slowest: its fastest plan is
        returned, evaluated at its own makespan.
    """
    points = frontier.frontier if isinstance(frontier, Result) else tuple(frontier)
    if not points:
        raise InstanceError("frontier: no points to look up")
    if not (isinstance(t_straggler_s, (int, float)) and math.isfinite(t_straggler_s)):
        raise InstanceError(f"t_straggler_s = {t_straggler_s!r}: must be a finite number")
    if t_straggler_s <= 0:
        raise InstanceError(f"t_straggler_s = {t_straggler_s!r}: must be positive")
    pbs = instance.p_blocking_w * instance.num_stages
    # Effective energy C = E(T) - P_b S T is what Eq. 4 minimises; T* is its argmin.
    star = min(points, key=lambda p: (p.objective - pbs * p.makespan_s, p.makespan_s))
    t_opt = min(star.makespan_s, float(t_straggler_s))
    ok = [p for p in points if p.makespan_s <= t_opt * (1 + 1e-9)]
    if not ok:
        pick = min(points, key=lambda p: p.makespan_s)
        ev = evaluate(instance, pick.solution, None)
    else:
        pick = min(ok, key=lambda p: p.objective - pbs * p.makespan_s)
        ev = evaluate(instance, pick.solution, max(float(t_straggler_s), pick.makespan_s))
    return StragglerPlan(float(t_straggler_s), star.makespan_s, t_opt, pick.solution, ev)
