"""EnvPipe's scheduler (EnvPipe 4.3): forwards moved up front so usable bubbles follow backwards.

*Initialization* is synchronous 1F1B, the schedule with the fewest units on the
critical path (only the envelope). *Rescheduling* moves forward units up front
(EnvPipe Fig. 4(b): FP4-FP6 on GPU2), which leaves the bubbles behind backward
units, where the frequency planner can stretch them. In a stage's order that is
one more *warm-up* forward before its first backward (1F1B: ``min(S - s - 1, M)``,
:func:`energyopt.pipeline.schedules.warmup_order`). The paper's conditions:

I.  data dependencies are never broken: only each stage's own order changes;
II. every forward moved up holds one more activation until its backward:
    ``max_inflight`` caps the activations a stage holds (``None``: no cap; the
    paper measures the memory, the instance does not hold it).

The paper computes "how many FPs can be rescheduled and stretched" from the
bubbles' slack but gives no formula. The rule here: greedily, one forward at a
time, make the move (one more warm-up forward on one stage) that most lowers
the energy of the EnvPipe frequency plan (:func:`energyopt.pipeline.baselines.envpipe.envpipe_plan`,
scored by the evaluator) without making the all-maximum-clock iteration slower
than 1F1B's (EnvPipe preserves performance); stop when no move lowers it. Taking
every forward that fits instead (all forwards first) spreads the bubbles less
evenly and saves less (EnvPipe 4.3: "the usable bubble must be evenly
distributed"); docs/pipeline.md has the figures.
"""

from __future__ import annotations

from typing import Any

from energyopt.core import validate as V
from energyopt.core.timelimit import TimeBudget
from energyopt.pipeline.baselines.envpipe import envpipe_plan
from energyopt.pipeline.evaluator import evaluate
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.schedules import dag_edges, warmup_order

#: Relative slack when comparing iteration times (float sums along one path).
_RTOL = 1e-12


def rescheduled(instance: PemInstance, warmups: list[int]) -> PemInstance:
    """The 1F1B ``instance`` with ``warmups[s]`` forwards before stage s's first backward.

    The computations keep their indices (a choice means the same clocks in both
    instances); only the edges change. The schedule becomes ``"explicit"``.
    """
    _check_1f1b(instance, None)
    M = int(instance.num_microbatches)
    if len(warmups) != instance.num_stages:
        raise ValueError(f"warmups = {warmups!r}: one count per stage ({instance.num_stages})")
    warmups = [V.integer(f"warmups[{s}]", w, minimum=0, maximum=M) for s, w in enumerate(warmups)]
    orders = [warmup_order(M, w) for w in warmups]
    tag = ",".join(map(str, warmups))
    return PemInstance(
        instance.num_stages,
        instance.computations,
        dag_edges(instance.computations, orders),
        dict(instance.tables),
        instance.p_blocking_w,
        instance.deadline_s,
        name=f"{instance.name} envpipe-scheduled warmup={tag}".strip(),
        source=instance.source,
    )


def _check_1f1b(instance: PemInstance, max_inflight: int | None) -> int | None:
    if instance.schedule != "1f1b" or instance.num_microbatches is None:
        raise ValueError(
            f"schedule = {instance.schedule!r}: the EnvPipe scheduler starts from 1f1b"
        )
    if max_inflight is None:
        return None
    return V.integer("max_inflight", max_inflight, minimum=1)


def envpipe_warmups(
    instance: PemInstance,
    *,
    policy: str = "balanced",
    ranking: str | None = None,
    valley: str = "energy",
    planner: str = "authors",
    max_inflight: int | None = None,
    time_limit: float | None = None,
) -> tuple[list[int], dict]:
    """Warm-up forwards per stage chosen by the EnvPipe scheduler, and statistics.

    ``policy``, ``ranking``, ``valley`` and ``planner`` are the frequency planner's
    (:func:`envpipe_plan`).
    At ``time_limit`` seconds the search stops with the best warm-ups so far
    (``stats["stopped"]``); 1F1B itself is always a valid answer.
    """
    budget = TimeBudget(time_limit)
    cap = _check_1f1b(instance, max_inflight)
    S, M = instance.num_stages, int(instance.num_microbatches)
    warm = [min(S - s - 1, M) for s in range(S)]
    energy, t_base = _score(instance, warm, (policy, ranking, None, valley, planner))
    stats = {"1f1b_energy_j": energy, "1f1b_time_s": t_base, "moves": 0, "stopped": ""}
    while True:
        best = None
        for s in range(S):
            # A stage with w warm-up forwards holds min(w + 1, M) activations at once.
            if warm[s] >= M or (cap is not None and min(warm[s] + 2, M) > cap):
                continue
            if budget.expired():
                stats["stopped"] = f"time limit {time_limit} s"
                return warm, {**stats, "energy_j": energy}
            trial = [*warm[:s], warm[s] + 1, *warm[s + 1 :]]
            e, t = _score(instance, trial, (policy, ranking, None, valley, planner))
            no_slower = t <= t_base * (1 + _RTOL)
            if no_slower and e < (energy if best is None else best[0]) * (1 - _RTOL):
                best = (e, trial)
        if best is None:
            return warm, {**stats, "energy_j": energy}
        energy, warm = best
        stats["moves"] += 1


def _score(instance: PemInstance, warm: list[int], planner: tuple) -> tuple[float, float]:
    """Energy and iteration time of the EnvPipe plan on the rescheduled instance (evaluator).

    ``planner``: :func:`envpipe_plan`'s arguments after the instance.
    """
    work = rescheduled(instance, warm).with_deadline(None)
    choice, _ = envpipe_plan(work, *planner)
    ev = evaluate(work, choice, None)
    return ev.energy_j, ev.iteration_time_s


def envpipe_schedule(instance: PemInstance, **options: Any) -> PemInstance:
    """The 1F1B ``instance`` rescheduled by EnvPipe's scheduler (EnvPipe 4.3).

    Run ``envpipe`` (or any method, for comparison) on the result: EnvPipe with
    its scheduler is ``energyopt.solve(envpipe_schedule(inst), "envpipe")``.
    ``options`` are :func:`envpipe_warmups`' keywords (``policy``, ``ranking``,
    ``valley``, ``planner``, ``max_inflight``, ``time_limit``).
    """
    warm, _ = envpipe_warmups(instance, **options)
    return rescheduled(instance, warm)
