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
"""

from __future__ import annotations

import time

import numpy as np

from energyopt.core.result import Result
from energyopt.core.status import TerminationReason
from energyopt.pipeline.dag import CompactDag
from energyopt.pipeline.evaluator import evaluate
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.results import pem_result

POLICIES = ("balanced", "greedy")


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


def envpipe_plan(instance: PemInstance, policy: str = "balanced") -> tuple[tuple[int, ...], dict]:
    """The EnvPipe choice (option index per computation) and planner statistics."""
    if policy not in POLICIES:
        raise ValueError(f"policy = {policy!r}: expected one of {', '.join(POLICIES)}")
    n = instance.num_computations
    dag = CompactDag(instance)
    # Ladders: option indices from the slowest *measured* time to the fastest (ties: the
    # cheaper first). On measured profiles a lower clock can run faster than a higher
    # one, so "the maximum clock" and "raise the clock" are read as the fastest option
    # and the next faster one; on monotone profiles (GPT-3) this is the clock order.
    ladders = []
    for i in range(n):
        tb = instance.options(i)
        ladders.append(sorted(range(len(tb)), key=lambda k: (-tb.time_s[k], -tb.energy_j[k], k)))
    top = [lad[-1] for lad in ladders]
    rank = [{k: r for r, k in enumerate(lad)} for lad in ladders]
    t_opt = instance.option_times
    times_max = [float(t_opt[i][top[i]]) for i in range(n)]
    envelope, t_base = critical_path(instance, dag, times_max)
    env = set(envelope)
    valley = [int(np.argmin(instance.option_energies[i])) for i in range(n)]
    x = [top[i] if i in env else valley[i] for i in range(n)]
    iterations = 0
    while True:
        times = [float(t_opt[i][x[i]]) for i in range(n)]
        path, span = critical_path(instance, dag, times)
        if span <= t_base * (1 + 1e-12) or set(path) == env:
            break
        below = [v for v in path if x[v] != top[v]]
        if not below:  # the path is all at maximum clocks: as fast as it gets
            break
        iterations += 1
        if policy == "balanced":
            # Raise the computations furthest below their fastest option by one step
            # (the paper's "lowest frequency on the critical path").
            depth = {v: len(ladders[v]) - 1 - rank[v][x[v]] for v in below}
            deepest = max(depth.values())
            for v in below:
                if depth[v] == deepest:
                    x[v] = ladders[v][rank[v][x[v]] + 1]
        else:
            x[below[-1]] = top[below[-1]]
    return tuple(x), {
        "iterations": iterations,
        "envelope_size": len(envelope),
        "baseline_time_s": t_base,
        "policy": policy,
    }


def envpipe_result(instance: PemInstance, policy: str, method: str) -> Result:
    tick = time.perf_counter()
    choice, stats = envpipe_plan(instance, policy)
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
        res = pem_result(
            instance, method, choice, termination=TerminationReason.COMPLETED, extra=stats
        )
    import dataclasses

    return dataclasses.replace(res, runtime_s=time.perf_counter() - tick)
