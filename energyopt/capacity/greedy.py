"""ANDREAS Randomized Greedy (Algorithm 1 of Section IV-B and the rules around it).

Read beside the paper; formulations/capacity.md Section 5 lists every choice made
where the paper is silent. In short:

* jobs sorted by pressure (Eq. 2), highest first; in randomized iterations, each job
  swaps with its successor with probability ``swap_probability * w_ref / w_j``
  (inversely proportional to its tardiness weight);
* D_j = configurations that meet the due date; the rule's choice is the cheapest one
  of D_j (cost t_jng * c_ng) when D_j is non-empty, else the fastest configuration;
  in randomized iterations the choice is drawn among the rule's candidates with
  probability inversely proportional to the rule's score (cost, or time);
* identical nodes give one configuration (node class, g); ASSIGN places the job on
  the open node of that class with the fewest free GPUs that fit, else on a closed one;
* ASSIGN_TO_SUBOPTIMAL walks the rule's candidates and then the other configurations
  (fastest first) for one that fits on an open node, then for one that fits on any
  node; a job is postponed only when nothing fits (so the greedy is work-conserving);
* iteration 0 is the plain greedy (no randomness); MaxIt iterations keep the best f_OBJ.
"""

from __future__ import annotations

import bisect
import dataclasses
import random

from energyopt.capacity.evaluator import Assignment
from energyopt.capacity.instance import CapacityInstance


@dataclasses.dataclass(frozen=True)
class _Config:
    """A configuration of one job: ``g`` GPUs on one of ``nodes`` (a node class)."""

    cls: int  # node class id, or -1 - n for "keep running on node n"
    g: int
    time_s: float
    cost_eur: float
    tardiness_eur: float = 0.0  # w_j max(0, T_c + time_s - d_j)


@dataclasses.dataclass
class GreedyTrace:
    """What the search did: the best f_OBJ after each iteration, and how often it improved."""

    best_per_iteration: list[float]
    improvements: int


def _node_classes(instance: CapacityInstance) -> tuple[list[int], list[list[int]]]:
    ids: dict[tuple, int] = {}
    of_node = []
    for node in instance.nodes:
        of_node.append(ids.setdefault(node.node_class, len(ids)))
    members: list[list[int]] = [[] for _ in ids]
    for n, c in enumerate(of_node):
        members[c].append(n)
    return of_node, members


def _job_configs(
    instance: CapacityInstance, of_node: list[int], members: list[list[int]]
) -> list[tuple[list[_Config], list[float], list[_Config]]]:
    """Per job: the rule's candidates (best first), their cumulative 1/score, the fallback order."""
    out = []
    now = instance.now_s
    for j, job in enumerate(instance.jobs):
        confs: list[_Config] = []
        for c, nodes in enumerate(members):
            node = instance.nodes[nodes[0]]
            if node.gpu_type not in job.epoch_time_s:
                continue
            for g in range(1, node.num_gpus + 1):
                t = instance.restart_epochs(j) * job.epoch_time_s[node.gpu_type][g - 1]
                confs.append(_Config(c, g, t, t * instance.cost_rate_eur_per_s(nodes[0], g)))
        if job.running is not None:
            n, g = job.running
            t = instance.remaining_time_s(j, n, g)
            confs.append(_Config(-1 - n, g, t, t * instance.cost_rate_eur_per_s(n, g)))
        w = job.tardiness_weight_eur_per_s
        confs = [
            dataclasses.replace(c, tardiness_eur=w * max(0.0, now + c.time_s - job.due_s))
            for c in confs
        ]
        due = [c for c in confs if now + c.time_s < job.due_s]  # D_j (Alg. 1 line 8)
        if due:
            rule = sorted(due, key=lambda c: (c.cost_eur, c.time_s))
            scores = [c.cost_eur for c in rule]
        else:
            rule = sorted(confs, key=lambda c: (c.time_s, c.cost_eur))
            scores = [c.time_s for c in rule]
        weights, acc = [], 0.0
        for s in scores:
            acc += 1.0 / max(s, 1e-12)
            weights.append(acc)
        rest = sorted((c for c in confs if c not in rule), key=lambda c: (c.time_s, c.cost_eur))
        out.append((rule, weights, rule + rest))
    return out


def _place(
    conf: _Config,
    open_only: bool,
    free: list[int],
    cap: list[int],
    buckets: list[list[dict[int, None]]],
) -> int | None:
    """The node for ``conf``: an open node of its class with the fewest free GPUs that fit,
    else (unless ``open_only``) a closed node of its class; ``None`` when none fits."""
    g = conf.g
    if conf.cls < 0:  # keep running where it runs
        n = -1 - conf.cls
        if free[n] >= g and (not open_only or free[n] < cap[n]):
            return n
        return None
    levels = buckets[conf.cls]
    top = len(levels) - 1
    for f in range(g, top):  # open nodes, best fit first
        if levels[f]:
            return next(iter(levels[f]))  # the node longest at that level
    if not open_only and top >= g and levels[top]:
        return next(iter(levels[top]))
    return None


def _suboptimal(
    fallback: list[_Config],
    free: list[int],
    cap: list[int],
    buckets: list[list[dict[int, None]]],
) -> tuple[_Config, int] | None:
    """ASSIGN_TO_SUBOPTIMAL: the first configuration of ``fallback`` that fits on an open
    node, else the first that fits on a closed one; ``None`` when nothing fits.

    One pass doing what ``_place(conf, True)`` then ``_place(conf, False)`` over the list
    would do.
    """
    closed = None
    for conf in fallback:
        g = conf.g
        if conf.cls < 0:
            n = -1 - conf.cls
            if free[n] >= g:
                if free[n] < cap[n]:
                    return conf, n
                if closed is None:
                    closed = (conf, n)
            continue
        levels = buckets[conf.cls]
        top = len(levels) - 1
        for f in range(g, top):
            if levels[f]:
                return conf, next(iter(levels[f]))
        if closed is None and top >= g and levels[top]:
            closed = (conf, next(iter(levels[top])))
    return closed


def randomized_greedy(
    instance: CapacityInstance,
    max_iterations: int = 1000,
    seed: int = 0,
    swap_probability: float = 0.5,
) -> tuple[Assignment, float, GreedyTrace]:
    """Algorithm 1: ``max_iterations`` randomized constructions, the best f_OBJ kept.

    Parameters
    ----------
    instance
        The rescheduling point (the greedy ignores ``work_conserving``: its own
        schedules always are).
    max_iterations
        MaxIt_RG (1000 in the paper). Iteration 0 is the deterministic greedy.
    seed
        Seed of the random draws: the same seed gives the same schedule.
    swap_probability
        Swap probability of the job with the smallest positive tardiness weight;
        a job of weight w swaps with ``swap_probability * w_ref / w``.

    Returns
    -------
    (assignment, f_OBJ, trace)
        f_OBJ as the greedy computed it; callers re-score with the evaluator.
    """
    if max_iterations < 1:
        raise ValueError(f"max_iterations = {max_iterations!r}: must be >= 1")
    if not 0.0 <= swap_probability <= 1.0:
        raise ValueError(f"swap_probability = {swap_probability!r}: must be in [0, 1]")
    rng = random.Random(seed)
    of_node, members = _node_classes(instance)
    per_job = _job_configs(instance, of_node, members)
    jobs = instance.jobs
    J = instance.num_jobs
    now, beta, price = instance.now_s, instance.postponement_penalty, instance.eur_per_joule
    weights = [job.tardiness_weight_eur_per_s for job in jobs]
    positive = [w for w in weights if w > 0]
    w_ref = min(positive) if positive else 1.0
    swap_p = [swap_probability * w_ref / max(w, w_ref) for w in weights]
    pressure = [now + float(instance.min_time_s[j]) - jobs[j].due_s for j in range(J)]  # Eq. 2
    base_order = sorted(range(J), key=lambda j: (-pressure[j], j))
    rmin = [float(x) for x in instance.min_restart_time_s]
    cap = [node.num_gpus for node in instance.nodes]
    idle_w = [node.idle_power_w for node in instance.nodes]
    gpu_w = [node.gpu_power_w for node in instance.nodes]
    running = [job.running for job in jobs]
    keep: list[_Config | None] = [None] * J
    for j, (_, _, fallback) in enumerate(per_job):
        for conf in fallback:
            if conf.cls < 0:
                keep[j] = conf
    postpone_base = [
        (beta * jobs[j].tardiness_weight_eur_per_s, now + rmin[j] - jobs[j].due_s) for j in range(J)
    ]

    best_assign: Assignment | None = None
    best_cost = float("inf")
    trace = GreedyTrace([], 0)
    for it in range(max_iterations):
        randomized = it > 0
        order = list(base_order)
        if randomized:
            for k in range(J - 1):
                if rng.random() < swap_p[order[k]]:
                    order[k], order[k + 1] = order[k + 1], order[k]
        free = list(cap)
        # buckets[c][f]: nodes of class c with f free GPUs (insertion-ordered), for best fits.
        buckets: list[list[dict[int, None]]] = [
            [{} for _ in range(cap[m[0]])] + [dict.fromkeys(m)] for m in members
        ]
        assign: list[tuple[int, int] | None] = [None] * J
        theta = float("inf")
        tardiness = rate = 0.0

        for j in order:
            rule, cum, fallback = per_job[j]
            if randomized and len(rule) > 1:
                pick = rule[bisect.bisect_right(cum, rng.random() * cum[-1])]
            else:
                pick = rule[0]
            conf, n = pick, _place(pick, False, free, cap, buckets)  # ASSIGN (Alg. 1 line 10)
            if n is None:  # ASSIGN_TO_SUBOPTIMAL (line 12)
                found = _suboptimal(fallback, free, cap, buckets)
                if found is None:
                    continue  # nothing fits anywhere: postponed
                conf, n = found
            g = conf.g
            c = of_node[n]
            level = free[n]
            del buckets[c][level][n]
            free[n] = level - g
            buckets[c][level - g][n] = None
            a = (n, g)
            assign[j] = a
            if a == running[j]:  # a class configuration on its own node is a "keep"
                conf = keep[j]
            if level == cap[n]:  # the node opens
                rate += idle_w[n]
            rate += g * gpu_w[n]
            if conf.time_s < theta:
                theta = conf.time_s
            tardiness += conf.tardiness_eur
        if theta == float("inf"):
            theta = instance.idle_horizon_s
        cost = theta * rate * price + tardiness
        for j in range(J):
            if assign[j] is None:
                bw, late = postpone_base[j]
                if late + theta > 0:
                    cost += bw * (late + theta)
        if cost < best_cost:  # Alg. 1 lines 18-20
            best_cost, best_assign = cost, tuple(assign)
            trace.improvements += 1
        trace.best_per_iteration.append(best_cost)
    assert best_assign is not None
    return best_assign, best_cost, trace
