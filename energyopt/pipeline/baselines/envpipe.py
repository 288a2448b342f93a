"""EnvPipe's envelope frequency planner (EnvPipe 4.4, Algorithms 1-2), method ``envpipe``.

Three planners (``planner=``), the default being the authors' own code:

``"authors"`` (default; EnvPipe's ``DeepSpeed/deepspeed/runtime/pipe/reconfiguration.py``)
    1. The envelope is fixed by structure (:func:`structural_envelope`): every unit of
       the last stage and every stage's first forward and last backward run at the
       maximum clock; all others start at their energy-optimal clock (the bottom of
       the energy valley: least measured energy).
    2. Repeat: find the critical path; while it leaves the envelope, raise clocks on
       it. ``balanced``: every unit at the path's lowest MHz goes up one clock step
       (all at once); ``greedy``: the last unit of the path below the maximum goes
       up :data:`GREEDY_STEPS` steps. Options are ranked by MHz.
    Their critical-path search compares each unit's measured receive time with a
    threshold (a few times the receive time without a bubble); an instance holds no
    communication time, so the walk here is Algorithm 2's, which goes to the
    cross-stage predecessor exactly when the unit waited for it.
``"paper"`` (Algorithms 1-2 as printed)
    The envelope is Algorithm 2's critical path with every unit at the maximum
    clock; the loop ends when the critical path is the envelope, read as the
    makespan being back at the baseline (a tie ends it too); ``greedy`` sends the
    last unit of the path below the maximum straight to the maximum.
``"improved"``
    The paper's, with options ranked by measured time (:func:`ladder`): the
    "maximum clock" is the fastest option even where a lower clock runs faster.

Every iteration raises at least one clock, so the loop ends. The energy-optimal
clock is the one of least *raw* energy, as in EnvPipe's energy valley (EnvPipe does
not model blocking power). The Perseus authors' EnvPipe results on GPT-3 and Bloom
are the ``"authors"`` planner on 1F1B to the file's last digit (docs/pipeline.md).

The planner works on whatever schedule the instance holds. EnvPipe's own
scheduler (EnvPipe 4.3) is :func:`energyopt.pipeline.baselines.envpipe_scheduler.envpipe_schedule`,
which returns a rescheduled instance to run this planner on.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np

from energyopt.core.result import Result
from energyopt.core.status import TerminationReason
from energyopt.core.timelimit import TimeBudget
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.evaluator import evaluate
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.results import pem_result
from energyopt.pipeline.schedules import BACKWARD, FORWARD

POLICIES = ("balanced", "greedy")
RANKINGS = ("time", "clock")
#: ``"authors"``: EnvPipe's own implementation (its ``reconfiguration.py``), which the
#: Perseus authors' results reproduce; ``"paper"``: Algorithms 1-2 as printed;
#: ``"improved"``: as printed, ranking options by measured time (:func:`ladder`).
PLANNERS = ("authors", "paper", "improved")
#: Clock steps the authors' greedy policy raises a unit by at once (their
#: ``reconfigure_granularity * 3``, "to match the number of reconfigurations" of balanced).
GREEDY_STEPS = 3
#: Where units off the envelope start: ``"energy"``, the least measured energy;
#: ``"lowtime"``, as the Perseus authors' emulation script (:func:`valley_option`).
VALLEYS = ("energy", "lowtime")
#: The time unit of the authors' runs (lowtime's ``unit_time``), for ``valley="lowtime"``.
LOWTIME_UNIT_S = 1e-3
#: Relative slack when comparing a makespan with the baseline (float sums of one path).
_RTOL = 1e-12


def critical_path(
    instance: PemInstance, dag: CompactDag, times: list[float]
) -> tuple[list[int], float]:
    """EnvPipe Algorithm 2 on any DAG: walk back from the last unit to finish.

    At each unit the cursor moves to the predecessor that sets its start: the
    previous unit on the same GPU when its slack is smaller than the dependency
    delay of every cross-stage predecessor (line 9), otherwise the cross-stage
    predecessor that finishes last (lines 12-15). Returns the path, first unit
    first, and the makespan.
    """
    es, span = dag.earliest_start(times)
    finish = [s + t for s, t in zip(es, times)]
    end = max(range(dag.n), key=lambda v: (finish[v], -instance.computations[v].stage, v))
    path = [end]
    cur = end
    stage = [c.stage for c in instance.computations]
    while dag.preds[cur]:
        same = [p for p in dag.preds[cur] if stage[p] == stage[cur]]
        other = [p for p in dag.preds[cur] if stage[p] != stage[cur]]
        slack = min((es[cur] - finish[p] for p in same), default=np.inf)
        dep = min((es[cur] - finish[p] for p in other), default=np.inf)
        if slack < dep or not other:
            cur = min(same, key=lambda p: es[cur] - finish[p])
        else:
            cur = min(other, key=lambda p: es[cur] - finish[p])
        path.append(cur)
    path.reverse()
    return path, float(span)


def ladder(table: OptionTable, ranking: str) -> list[int]:
    """Option indices from the "lowest" to the "highest" clock, as the planner raises them.

    ``"time"``: by measured time, slowest first (ties: the dearer first), so the
    top is the fastest option and "one step up" is the next faster option.
    ``"clock"``: by SM clock in MHz (ties: the slower first), as the Perseus
    authors' emulation of EnvPipe does; the top is the maximum clock even where
    a lower clock measured faster. It needs every option's clock (a table of
    one option, such as a link's, needs none).
    """
    if ranking not in RANKINGS:
        raise ValueError(f"ranking = {ranking!r}: expected one of {', '.join(RANKINGS)}")
    k = range(len(table))
    if ranking == "time":
        return sorted(k, key=lambda i: (-table.time_s[i], -table.energy_j[i], i))
    if len(table) > 1 and any(f is None for f in table.sm_clock_mhz):
        raise ValueError("ranking = 'clock': an option table has options without an SM clock")
    return sorted(k, key=lambda i: (table.sm_clock_mhz[i], -table.time_s[i], i))


def structural_envelope(instance: PemInstance) -> set[int] | None:
    """EnvPipe's fixed envelope: the last stage, and every stage's first forward and last backward.

    The authors' implementation pins these units at the maximum clock (their
    ``ENVPIPE_TYPE_ENVELOPE``) instead of walking the all-maximum critical path. It
    needs a pipeline of forward and backward computations with microbatch indices;
    ``None`` when the instance has any other computation (a link, a general DAG node).
    """
    comps = instance.computations
    if not comps or any(c.kind not in (FORWARD, BACKWARD) or c.microbatch is None for c in comps):
        return None
    last_stage = max(c.stage for c in comps)
    last_mb = max((c.microbatch for c in comps if c.kind == BACKWARD), default=None)
    return {
        i
        for i, c in enumerate(comps)
        if c.stage == last_stage
        or (c.kind == FORWARD and c.microbatch == 0)
        or (c.kind == BACKWARD and c.microbatch == last_mb)
    }


def default_ranking(planner: str) -> str:
    """The option order of ``planner``: by MHz (authors, paper) or by measured time (improved)."""
    if planner not in PLANNERS:
        raise ValueError(f"planner = {planner!r}: expected one of {', '.join(PLANNERS)}")
    return "time" if planner == "improved" else "clock"


@dataclasses.dataclass
class _Planner:
    """The state of Algorithm 1: ladders, the envelope, the current choice ``x``."""

    instance: PemInstance
    policy: str
    ranking: str
    valley: str = "energy"
    planner: str = "paper"

    def __post_init__(self) -> None:
        inst = self.instance
        self.dag = CompactDag(inst)
        n = len(inst.computations)
        self.ladders = [ladder(inst.options(i), self.ranking) for i in range(n)]
        self.top = [lad[-1] for lad in self.ladders]
        self.rank = [{k: r for r, k in enumerate(lad)} for lad in self.ladders]
        self.envelope, self.t_base = critical_path(inst, self.dag, self.times(self.top))
        fixed = structural_envelope(inst) if self.planner == "authors" else None
        if fixed is not None:
            self.envelope = sorted(fixed)
        env = set(self.envelope)
        valley = [valley_option(inst.options(i), self.valley) for i in range(n)]
        self.x = [self.top[i] if i in env else valley[i] for i in range(n)]

    def done(self, path: list[int], span: float) -> bool:
        """Algorithm 1's loop test on the current critical path and makespan.

        The authors' implementation stops only when the path lies inside the envelope
        (``need_to_reconfigure``); the paper's when the path is the envelope, which we
        read as the makespan being back at the baseline (a tie ends it too).
        """
        if self.planner == "authors":
            return set(path) <= set(self.envelope)
        return self.at_baseline(span) or set(path) == set(self.envelope)

    def times(self, choice: list[int]) -> list[float]:
        t = self.instance.option_times
        return [float(t[i][k]) for i, k in enumerate(choice)]

    def at_baseline(self, span: float) -> bool:
        return span <= self.t_base * (1 + _RTOL)

    def reconfigure(self, path: list[int]) -> bool:
        """One step of ``ReconfigureCriticalPath``; False when the path is all at the top."""
        below = [v for v in path if self.x[v] != self.top[v]]
        if not below:
            return False
        if self.policy == "greedy":  # backwards from the end of the path
            v = below[-1]
            if self.planner == "authors":  # GREEDY_STEPS clock steps, at most to the top
                up = min(self.rank[v][self.x[v]] + GREEDY_STEPS, len(self.ladders[v]) - 1)
                self.x[v] = self.ladders[v][up]
            else:  # as printed: straight to the maximum
                self.x[v] = self.top[v]
            return True
        # balanced: the units at the path's lowest clock go up one step. By MHz when
        # ranking by clock (the authors' rule); otherwise by steps below the fastest option.
        level = {v: self._level(v) for v in below}
        lowest = min(level.values())
        for v in below:
            if level[v] == lowest:
                self.x[v] = self.ladders[v][self.rank[v][self.x[v]] + 1]
        return True

    def _level(self, v: int) -> float:
        if self.ranking == "clock":
            return float(self.instance.options(v).sm_clock_mhz[self.x[v]])
        return -float(len(self.ladders[v]) - 1 - self.rank[v][self.x[v]])

    def restore_baseline(self) -> None:
        """Put whole critical paths at the top until the baseline time is met.

        A path all at the top is no longer than the baseline's longest path, so
        each round that does not end the loop raises at least one unit: at most
        one round per computation, the worst case being the baseline itself.
        """
        for _ in range(len(self.x) + 1):
            path, span = critical_path(self.instance, self.dag, self.times(self.x))
            if self.at_baseline(span):
                return
            for v in path:
                self.x[v] = self.top[v]


def valley_option(table: OptionTable, valley: str = "energy") -> int:
    """The energy-optimal option, where units off the envelope start (EnvPipe 4.2).

    ``"energy"``: the least measured energy (ties: the faster). ``"lowtime"``: as
    in the Perseus authors' emulation, which starts every operation at lowtime's
    slowest candidate: among the options no other beats in both time and energy,
    times floored to :data:`LOWTIME_UNIT_S`, the slowest such unit, and in it the
    dearest option. It is a faster option than the least-energy one when two
    options of the valley lie within one unit.
    """
    if valley not in VALLEYS:
        raise ValueError(f"valley = {valley!r}: expected one of {', '.join(VALLEYS)}")
    t, e, k = table.time_s, table.energy_j, range(len(table))
    if valley == "energy":
        return min(k, key=lambda i: (e[i], t[i], i))
    pareto = [i for i in k if not any(t[j] < t[i] and e[j] < e[i] for j in k)]
    unit = {i: int(t[i] // LOWTIME_UNIT_S) for i in pareto}
    slowest = max(unit.values())
    return max((i for i in pareto if unit[i] == slowest), key=lambda i: (e[i], t[i], -i))


def outer_envelope(instance: PemInstance, ranking: str = "time") -> list[int]:
    """The outer envelope: Algorithm 2's critical path with every unit at its top option."""
    return list(_Planner(instance, "balanced", ranking).envelope)


def envpipe_plan(
    instance: PemInstance,
    policy: str = "balanced",
    ranking: str | None = None,
    time_limit: float | None = None,
    valley: str = "energy",
    planner: str = "authors",
) -> tuple[tuple[int, ...], dict]:
    """The EnvPipe choice (option index per computation) and planner statistics.

    ``planner`` (:data:`PLANNERS`): ``"authors"`` (default) as EnvPipe's own code: the
    envelope fixed by structure (:func:`structural_envelope`), options by MHz, the loop
    ends when the critical path lies inside the envelope, greedy raises
    :data:`GREEDY_STEPS` steps; ``"paper"``: Algorithms 1-2 as printed (the envelope
    walked, the loop ends at the baseline time, greedy to the maximum); ``"improved"``:
    the paper's with options by measured time. ``ranking`` (:func:`ladder`) overrides
    the planner's order (``None``: :func:`default_ranking`). ``valley``
    (:func:`valley_option`) picks where units off the envelope start.

    At ``time_limit`` seconds the loop stops (``stats["stopped"]``) and every unit
    of the current critical path goes to the top, path after path, until the
    iteration is back at the baseline time: the plan returned always keeps it.
    """
    budget = TimeBudget(time_limit)
    if policy not in POLICIES:
        raise ValueError(f"policy = {policy!r}: expected one of {', '.join(POLICIES)}")
    ranking = default_ranking(planner) if ranking is None else ranking
    plan = _Planner(instance, policy, ranking, valley, planner)
    iterations, stopped = 0, ""
    while True:
        path, span = critical_path(instance, plan.dag, plan.times(plan.x))
        if plan.done(path, span):
            break
        if budget.expired():
            stopped = f"time limit {time_limit} s"
            plan.restore_baseline()
            break
        if not plan.reconfigure(path):
            break
        iterations += 1
    return tuple(plan.x), {
        "iterations": iterations,
        "envelope_size": len(plan.envelope),
        "baseline_time_s": plan.t_base,
        "policy": policy,
        "planner": planner,
        "ranking": ranking,
        "valley": valley,
        "stopped": stopped,
    }


def envpipe_result(
    instance: PemInstance,
    policy: str,
    method: str,
    ranking: str | None = None,
    time_limit: float | None = None,
    valley: str = "energy",
    planner: str = "authors",
) -> Result:
    """Plan, score with the evaluator and wrap as a :class:`Result`.

    Infeasible when the instance's deadline is below the plan's (baseline)
    iteration time; ``time_limit`` ends with termination ``time_limit`` and the
    plan restored to the baseline time (:func:`envpipe_plan`).
    """
    tick = time.perf_counter()
    choice, stats = envpipe_plan(instance, policy, ranking, time_limit, valley, planner)
    ev = evaluate(instance, choice)
    stats["source"] = instance.source
    if not ev.feasible:
        res = pem_result(
            instance,
            method,
            None,
            termination=TerminationReason.INFEASIBLE,
            message=f"EnvPipe plan misses the deadline: {'; '.join(ev.violations)}",
            extra={**stats, "plan_time_s": ev.iteration_time_s},
        )
    else:
        done = TerminationReason.TIME_LIMIT if stats["stopped"] else TerminationReason.COMPLETED
        res = pem_result(instance, method, choice, evaluation=ev, termination=done, extra=stats)
    return dataclasses.replace(res, runtime_s=time.perf_counter() - tick)
