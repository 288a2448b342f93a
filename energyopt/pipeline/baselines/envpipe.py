"""EnvPipe's envelope frequency planner (EnvPipe 4.4, Algorithms 1-2), method ``envpipe``.

1. Run every computation at the maximum clock and walk its critical path
   (EnvPipe Algorithm 2): the *outer envelope*.
2. Computations off the envelope go to their energy-optimal clock (the bottom
   of the energy valley: least measured energy), envelope computations stay at
   the maximum clock.
3. Repeat (Algorithm 1): find the critical path; while it is not the envelope,
   raise clocks on it. ``balanced`` (EnvPipe's default): every unit on the path
   at the lowest clock among the path's units goes up one clock step.
   ``greedy``: the last unit of the path not at the maximum clock goes to the
   maximum.

It stops when the critical path is the envelope, i.e. when the iteration is as
fast as with all maximum clocks (the planner's goal: no slowdown); the test is
on the makespan, so a tie between the envelope and another path of the same
length ends the loop too. Every iteration raises at least one clock, so the
loop ends. The energy-optimal clock is the one of least *raw* energy, as in
EnvPipe's energy valley (EnvPipe does not model blocking power).

"Maximum clock", "lowest clock" and "one clock step up" need an order of the
options (:func:`ladder`). ``ranking="time"`` (default) orders them by measured
time, so the maximum is the fastest option; ``ranking="clock"`` orders them by
MHz, as the Perseus authors' EnvPipe emulation does (+15 MHz per step). They
agree where time falls with the clock (GPT-3 on A100); on measured profiles
where a lower clock runs faster they do not (docs/pipeline.md, EnvPipe).

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

POLICIES = ("balanced", "greedy")
RANKINGS = ("time", "clock")
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


@dataclasses.dataclass
class _Planner:
    """The state of Algorithm 1: ladders, the envelope, the current choice ``x``."""

    instance: PemInstance
    policy: str
    ranking: str
    valley: str = "energy"

    def __post_init__(self) -> None:
        inst = self.instance
        self.dag = CompactDag(inst)
        n = len(inst.computations)
        self.ladders = [ladder(inst.options(i), self.ranking) for i in range(n)]
        self.top = [lad[-1] for lad in self.ladders]
        self.rank = [{k: r for r, k in enumerate(lad)} for lad in self.ladders]
        self.envelope, self.t_base = critical_path(inst, self.dag, self.times(self.top))
        env = set(self.envelope)
        valley = [valley_option(inst.options(i), self.valley) for i in range(n)]
        self.x = [self.top[i] if i in env else valley[i] for i in range(n)]

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
        if self.policy == "greedy":  # backwards from the end of the path, to the maximum
            self.x[below[-1]] = self.top[below[-1]]
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
    ranking: str = "time",
    time_limit: float | None = None,
    valley: str = "energy",
) -> tuple[tuple[int, ...], dict]:
    """The EnvPipe choice (option index per computation) and planner statistics.

    ``ranking`` (:func:`ladder`): ``"time"`` (default) reads "the maximum clock" and
    "raise the clock" as the fastest measured option and the next faster one;
    ``"clock"`` ranks by MHz as the Perseus authors' emulation does. ``valley``
    (:func:`valley_option`) picks where units off the envelope start.

    At ``time_limit`` seconds the loop stops (``stats["stopped"]``) and every unit
    of the current critical path goes to the top, path after path, until the
    iteration is back at the baseline time: the plan returned always keeps it.
    """
    budget = TimeBudget(time_limit)
    if policy not in POLICIES:
        raise ValueError(f"policy = {policy!r}: expected one of {', '.join(POLICIES)}")
    plan = _Planner(instance, policy, ranking, valley)
    iterations, stopped = 0, ""
    while True:
        path, span = critical_path(instance, plan.dag, plan.times(plan.x))
        if plan.at_baseline(span) or set(path) == set(plan.envelope):
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
        "ranking": ranking,
        "valley": valley,
        "stopped": stopped,
    }


def envpipe_result(
    instance: PemInstance,
    policy: str,
    method: str,
    ranking: str = "time",
    time_limit: float | None = None,
    valley: str = "energy",
) -> Result:
    """Plan, score with the evaluator and wrap as a :class:`Result`.

    Infeasible when the instance's deadline is below the plan's (baseline)
    iteration time; ``time_limit`` ends with termination ``time_limit`` and the
    plan restored to the baseline time (:func:`envpipe_plan`).
    """
    tick = time.perf_counter()
    choice, stats = envpipe_plan(instance, policy, ranking, time_limit, valley)
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
