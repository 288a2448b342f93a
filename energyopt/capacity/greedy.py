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

On clusters of more than ``LOOP_CLASSES`` node classes the iterations run side by side
with numpy (:mod:`energyopt.capacity.greedy_batch`), with the same decisions, f_OBJ and
trace as the loop below; with a deadline they run in batches, none started after it.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import operator
import random
from itertools import compress, count, repeat, starmap

from energyopt.capacity import greedy_batch
from energyopt.capacity.evaluator import Assignment
from energyopt.capacity.instance import CapacityInstance
from energyopt.core.timelimit import TimeBudget


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
    stopped_at_deadline: bool = False
    """Whether the deadline ended the search before ``max_iterations``."""


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
    # Per class: its GPU type and c_ng for g = 1..G (the same for every job).
    classes = [
        (
            instance.nodes[nodes[0]].gpu_type,
            [
                instance.cost_rate_eur_per_s(nodes[0], g)
                for g in range(1, instance.nodes[nodes[0]].num_gpus + 1)
            ],
        )
        for nodes in members
    ]
    for j, job in enumerate(instance.jobs):
        w, due_s = job.tardiness_weight_eur_per_s, job.due_s
        restart = instance.restart_epochs(j)
        confs: list[_Config] = []
        for c, (gpu_type, rates) in enumerate(classes):
            if gpu_type not in job.epoch_time_s:
                continue
            times = job.epoch_time_s[gpu_type]
            for g, rate in enumerate(rates, start=1):
                t = restart * times[g - 1]
                confs.append(_Config(c, g, t, t * rate, w * max(0.0, now + t - due_s)))
        if job.running is not None:
            n, g = job.running
            t = instance.remaining_time_s(j, n, g)
            confs.append(
                _Config(
                    -1 - n,
                    g,
                    t,
                    t * instance.cost_rate_eur_per_s(n, g),
                    w * max(0.0, now + t - due_s),
                )
            )
        due = [c for c in confs if now + c.time_s < due_s]  # D_j (Alg. 1 line 8)
        if due:
            rule = sorted(due, key=lambda c: (c.cost_eur, c.time_s))
            scores = [c.cost_eur for c in rule]
            rest = [c for c in confs if not now + c.time_s < due_s]
        else:
            rule = sorted(confs, key=lambda c: (c.time_s, c.cost_eur))
            scores = [c.time_s for c in rule]
            rest = []
        weights, acc = [], 0.0
        for s in scores:
            acc += 1.0 / max(s, 1e-12)
            weights.append(acc)
        rest.sort(key=lambda c: (c.time_s, c.cost_eur))
        out.append((rule, weights, rule + rest))
    return out


# The search loop below runs J * MaxIt times per call, so it works on plain tuples and
# lists built once per call: a configuration is ``(cls, g, time_s, tardiness_eur)`` with
# ``cls`` as in _Config. Per node class c, ``buckets[c][f]`` lists the nodes of c with f
# free GPUs, longest at that level first (a node that changes level goes to the end);
# ``buckets[c][G_c]`` holds the closed nodes, and full nodes are in no list (no
# configuration uses 0 GPUs). One integer ``mask`` says which lists are non-empty: bit
# ``offset[c] + f`` for 1 <= f <= G_c. Where ASSIGN and ASSIGN_TO_SUBOPTIMAL put a job
# (which configuration, which class and level) depends only on ``mask``, on how the
# job's own node fits it (``own``) and on the rule's pick, so it is computed once per
# such key and job (_Placements) and remembered for the rest of the call; each iteration
# only reads the node itself, the first of its list.


def _fit(
    conf: tuple[int, int, float, float],
    open_only: bool,
    mask: int,
    own: int,
    offset: list[int],
    top: list[int],
) -> tuple[int, int] | None:
    """Where ``conf`` fits: ``(c, f)`` for the list ``buckets[c][f]`` (an open node of
    its class with the fewest free GPUs that fit, else, unless ``open_only``, a closed
    one), ``(-1, n)`` for a running job's own node ``n``; ``None`` when it fits nowhere.
    ``own``: 0 when the own node has fewer free GPUs than the job runs on, else 1 when it
    is open, 2 when closed."""
    cls, g = conf[0], conf[1]
    if cls < 0:  # keep running where it runs
        if own == 1 or (own == 2 and not open_only):
            return -1, -1 - cls
        return None
    o, t = offset[cls], top[cls]
    for f in range(g, t):  # open nodes, best fit first
        if mask >> (o + f) & 1:
            return cls, f
    if not open_only and t >= g and mask >> (o + t) & 1:
        return cls, t
    return None


def _assign(
    pick: tuple[int, int, float, float],
    fallback: tuple[tuple[int, int, float, float], ...],
    *state,
) -> tuple[tuple[int, int, float, float], int, int] | None:
    """ASSIGN the rule's choice ``pick`` (Alg. 1 line 10), else ASSIGN_TO_SUBOPTIMAL
    (line 12): the first configuration of ``fallback`` that fits on an open node, else the
    first that fits on any node. ``(conf, c, f)`` as in _fit; ``None`` when nothing fits
    (the job is postponed). ``state``: the arguments of _fit after ``open_only``."""
    where = _fit(pick, False, *state)
    if where is not None:
        return (pick, *where)
    for open_only in (True, False):
        for conf in fallback:
            where = _fit(conf, open_only, *state)
            if where is not None:
                return (conf, *where)
    return None


class _Placements(dict):
    """Where one job goes, by key ``(mask * 3 + own) * len(rule) + i`` (``i``: the index
    of the rule's pick): ``(c, f, g, time_s, tardiness_eur, opens)``, the list
    ``buckets[c][f]`` or, with f = -1, the job's own node (of class c), and whether that
    node is closed (it opens); ``()`` when the job is postponed. Filled on first use: the
    value depends on the key alone.

    On heterogeneous clusters (many node classes) almost every key is new, so the
    ASSIGN_TO_SUBOPTIMAL walk is done on bit masks instead of :func:`_fit` calls: entry k
    of ``fallback`` fits on an open node iff ``mask & open_bits[k]`` (bits of its class's
    open levels with >= g free GPUs), on any node iff ``mask & any_bits[k]`` (the closed
    level too); the job's own configuration (bits 0) by ``own``. The first fitting entry
    is the same as :func:`_assign`'s, found at C speed (``map``/``compress``), and a pass
    that the union of the bits rules out is skipped."""

    def __init__(self, rule, fallback, offset, top, own_class):
        super().__init__()
        self.rule, self.fallback, self.offset, self.top = rule, fallback, offset, top
        self.own_class = own_class
        self.keep_at = next((k for k, c in enumerate(fallback) if c[0] < 0), len(fallback))
        self.open_bits = tuple(_level_bits(c, offset, top, closed=False) for c in fallback)
        self.any_bits = tuple(_level_bits(c, offset, top, closed=True) for c in fallback)
        self.any_open = functools.reduce(operator.or_, self.open_bits, 0)
        self.any_any = functools.reduce(operator.or_, self.any_bits, 0)

    def __missing__(self, key: int) -> tuple:
        state, i = divmod(key, len(self.rule))
        mask, own = divmod(state, 3)
        value = self[key] = self.place(i, mask, own)
        return value

    def place(self, i: int, mask: int, own: int) -> tuple:
        """The value of key ``(mask * 3 + own) * len(rule) + i`` (computed, not looked up)."""
        k, _ = self.first_fit(i, mask, own)
        if k < 0:
            value = ()  # nothing fits: postponed
        else:
            conf = self.fallback[k]
            if conf[0] < 0:  # the own node, closed when own is 2
                c, f, opens = self.own_class, -1, own == 2
            else:  # the open level with the fewest free GPUs that fit, else a closed node
                c, bits = conf[0], mask & self.open_bits[k]
                f = (bits & -bits).bit_length() - 1 - self.offset[c] if bits else self.top[c]
                opens = f == self.top[c]
            value = (c, f, conf[1], conf[2], conf[3], opens)
        return value

    def first_fit(self, i: int, mask: int, own: int) -> tuple[int, bool]:
        """:func:`_assign` on bit masks: the index in ``fallback`` of where the job goes
        (-1: nowhere), and whether it was found on open nodes only. The rule's pick ``i``
        is ``fallback[i]`` (the rule's candidates come first in ``fallback``)."""
        keep_at = self.keep_at
        if i == keep_at:
            if own:  # the own node fits it (open or closed)
                return i, False
        elif mask & self.any_bits[i]:
            return i, False
        n = len(self.fallback)
        passes = (
            (True, self.open_bits, self.any_open, own == 1),
            (False, self.any_bits, self.any_any, own != 0),
        )
        for open_only, bits, union, keep_fits in passes:
            k = n
            if mask & union:  # some class entry fits: the first one
                k = next(compress(count(), map(mask.__and__, bits)), n)
            if keep_fits and keep_at < k:
                k = keep_at
            if k < n:
                return k, open_only
        return -1, False


#: Clusters of at most this many node classes run the Python loop (_iteration), where a
#: job goes being remembered per key (mask, own, pick); on more classes the iterations run
#: side by side with numpy (greedy_batch), whose cost does not depend on the number of
#: classes. The loop's does (more keys are new): on 100 nodes, 100 jobs and MaxIt 1000
#: it took 0.06 s on 2 classes, 0.07 s on 4, 0.1 s on 8 and 0.7 s on 100, the batch
#: 0.04-0.05 s from 2 classes up (benchmarks/capacity_speed.py --class-sweep,
#: docs/capacity.md). The loop is kept for 1-2 classes (the paper's scenarios), where it
#: is as fast or faster.
LOOP_CLASSES = 2


def _level_bits(conf, offset: list[int], top: list[int], closed: bool) -> int:
    """The bits of ``mask`` that let the class configuration ``conf`` fit (see _fit):
    its class's open levels with >= g free GPUs, and with ``closed`` the closed level;
    0 for a running job's own configuration (decided by ``own``)."""
    cls, g = conf[0], conf[1]
    if cls < 0:
        return 0
    o, t = offset[cls], top[cls]
    bits = sum(1 << (o + f) for f in range(g, t))
    return bits | (1 << (o + t)) if closed and t >= g else bits


@dataclasses.dataclass
class _Search:
    """Everything an iteration of :func:`randomized_greedy` reads, computed once per call.

    Lists are indexed by job (``per_job``, ``swap_p``, ``postpone_base``), node (``cap``,
    ``idle_w``, ``gpu_rate``, ``bit0``) or node class (``top``, ``members``).
    """

    instance: CapacityInstance
    per_job: list[tuple]
    """Per job: the rule's cumulative 1/score and its total, the rule's length, the
    memo key's stride and own-node terms, the remembered placements (_Placements), the
    node and g it runs on, and its "keep" time and tardiness."""
    swap_p: list[float]
    base_order: list[int]
    postpone_base: list[tuple[float, float]]
    cap: list[int]
    idle_w: list[float]
    gpu_rate: list[list[float]]
    top: list[int]
    members: list[list[int]]
    bit0: list[int]
    all_closed: int
    n_swaps: int
    n_draws: int


def _per_job(
    instance: CapacityInstance, of_node: list[int], members: list[list[int]], offset: list[int]
) -> list[tuple]:
    """The per-job entries of :class:`_Search`."""
    jobs, N = instance.jobs, len(instance.nodes)
    cap = [node.num_gpus for node in instance.nodes]
    top = [cap[m[0]] for m in members]

    def as_tuple(c: _Config) -> tuple[int, int, float, float]:
        return (c.cls, c.g, c.time_s, c.tardiness_eur)

    per_job = []
    for j, (rule, cum, fallback) in enumerate(_job_configs(instance, of_node, members)):
        n_rule = len(rule)
        keep = next((c for c in fallback if c.cls < 0), None)
        if keep is not None:
            # own: how the job's own node, with f free GPUs, fits the job (see _fit).
            run_n, run_g = jobs[j].running
            own = [0 if f < run_g else 1 if f < cap[run_n] else 2 for f in range(cap[run_n] + 1)]
            keep_t, keep_tard = keep.time_s, keep.tardiness_eur
        else:  # not running: read the spare entry of `free` (always 0), own 0
            run_n, run_g, own = N, -1, [0]
            keep_t = keep_tard = 0.0
        rule_t, fallback_t = tuple(map(as_tuple, rule)), tuple(map(as_tuple, fallback))
        per_job.append(
            (
                cum,
                cum[-1],
                n_rule,
                3 * n_rule,
                tuple(x * n_rule for x in own),
                _Placements(rule_t, fallback_t, offset, top, of_node[run_n] if run_n < N else -1),
                run_n,
                run_g,
                keep_t,
                keep_tard,
            )
        )
    return per_job


def _order_terms(
    instance: CapacityInstance, swap_probability: float
) -> tuple[list[float], list[int], list[tuple[float, float]]]:
    """Per job its swap probability, the pressure order (Eq. 2) and the postponement terms
    ``(beta w_j, T_c + min restart time - d_j)``."""
    jobs, J = instance.jobs, instance.num_jobs
    now, beta = instance.now_s, instance.postponement_penalty
    weights = [job.tardiness_weight_eur_per_s for job in jobs]
    positive = [w for w in weights if w > 0]
    w_ref = min(positive) if positive else 1.0
    pressure = [now + float(instance.min_time_s[j]) - jobs[j].due_s for j in range(J)]  # Eq. 2
    rmin = [float(x) for x in instance.min_restart_time_s]
    return (
        [swap_probability * w_ref / max(w, w_ref) for w in weights],
        sorted(range(J), key=lambda j: (-pressure[j], j)),
        [
            (beta * jobs[j].tardiness_weight_eur_per_s, now + rmin[j] - jobs[j].due_s)
            for j in range(J)
        ],
    )


def _search(instance: CapacityInstance, swap_probability: float) -> _Search:
    """The data of one call of :func:`randomized_greedy` (pressure order, Eq. 2; swaps)."""
    of_node, members = _node_classes(instance)
    J = instance.num_jobs
    cap = [node.num_gpus for node in instance.nodes]
    gpu_w = [node.gpu_power_w for node in instance.nodes]
    top = [cap[m[0]] for m in members]  # G_c
    offset = [sum(t + 1 for t in top[:c]) for c in range(len(members))]
    per_job = _per_job(instance, of_node, members, offset)
    swap_p, base_order, postpone_base = _order_terms(instance, swap_probability)
    # A randomized iteration draws J - 1 numbers for the swaps, then one per job with more
    # than one candidate: the same count whatever the order, so an iteration's draws are
    # taken in one go (the same calls in the same order), and a job the search never
    # reaches (the cluster is full) has still consumed its draw.
    n_swaps = max(J - 1, 0)
    return _Search(
        instance=instance,
        per_job=per_job,
        swap_p=swap_p,
        base_order=base_order,
        postpone_base=postpone_base,
        cap=cap,
        idle_w=[node.idle_power_w for node in instance.nodes],
        gpu_rate=[[g * w for g in range(G + 1)] for G, w in zip(cap, gpu_w)],
        top=top,
        members=members,
        bit0=[1 << offset[c] for c in of_node],  # bit f of node n's class: bit0[n] << f
        all_closed=sum(1 << (o + t) for o, t in zip(offset, top)),
        n_swaps=n_swaps,
        n_draws=n_swaps + sum(1 for p in per_job if p[2] > 1),
    )


def _iteration(
    sd: _Search, swaps: list[float], draws: list[float] | None
) -> tuple[float, list[int], list[int]]:
    """One construction: the jobs in (swapped) pressure order, each placed by its rule.

    ``swaps[k] < swap_p[job]`` swaps the job at position k with the next one (the last
    entry is inf); ``draws`` (``None`` in iteration 0) picks each job's candidate.
    Returns f_OBJ and, per job, its node (-1: postponed) and GPUs.
    """
    per_job, swap_p, gpu_rate = sd.per_job, sd.swap_p, sd.gpu_rate
    idle_w, bit0, bisect_right, inf = sd.idle_w, sd.bit0, bisect.bisect_right, float("inf")
    J = len(per_job)
    k = sd.n_swaps  # the next draw of a configuration
    free = [*sd.cap, 0]  # and a spare entry, for jobs that do not run
    buckets = [[[] for _ in range(t)] + [list(m)] for t, m in zip(sd.top, sd.members)]
    mask = sd.all_closed
    node_of, gpus_of = [-1] * J, [0] * J
    theta = inf
    tardiness = rate = 0.0
    postponed = False  # whether a job may be left without a node
    # The swaps (Section 5, choice 2): position k is final once visited and position
    # k + 1 still holds base_order[k + 1] then, so the loop carries the job that moves on
    # (`cur`) and reads base_order[k + 1] (`nxt`); -1 is the position after the end.
    cur = sd.base_order[0] if J else -1
    for r, nxt in zip(swaps, [*sd.base_order[1:], -1]):
        if r < swap_p[cur]:
            j = nxt  # cur swaps with nxt and moves on
        else:
            j, cur = cur, nxt
        cum, tot, n_rule, stride, own, placements, run_n, run_g, keep_t, keep_tard = per_job[j]
        if draws is not None and n_rule > 1:
            i = bisect_right(cum, draws[k] * tot)
            k += 1
        else:
            i = 0
        f = free[run_n]  # the own node's free GPUs (the spare 0 when not running)
        where = placements[mask * stride + own[f] + i]
        if not where:
            postponed = True
            continue  # nothing fits anywhere: postponed
        c, level, g, t, tard, opens = where
        levels = buckets[c]
        if level >= 0:  # the node longest at that level
            nodes = levels[level]
            n = nodes[0]
            del nodes[0]
            if n == run_n and g == run_g:  # a class configuration on its own node: a keep
                t, tard = keep_t, keep_tard
        else:  # the job's own node
            n, level = run_n, f
            nodes = levels[f]
            nodes.remove(n)
        # Node n goes from `level` free GPUs to `rest`.
        rest = level - g
        free[n] = rest
        if not nodes:
            mask ^= bit0[n] << level
        if opens:  # the node opens
            rate += idle_w[n]
        if rest:
            nodes = levels[rest]
            if not nodes:
                mask |= bit0[n] << rest
            nodes.append(n)
        node_of[j] = n
        gpus_of[j] = g
        rate += gpu_rate[n][g]  # g * gpu_w[n]
        if t < theta:
            theta = t
        tardiness += tard
        if not mask:  # no node has a free GPU: every job not yet placed is postponed
            postponed = True
            break
    return _cost(sd, theta, rate, tardiness, node_of if postponed else None), node_of, gpus_of


def _cost(
    sd: _Search, theta: float, rate: float, tardiness: float, node_of: list[int] | None
) -> float:
    """f_OBJ of a construction; ``node_of`` when some job may be postponed."""
    if theta == float("inf"):
        theta = sd.instance.idle_horizon_s
    cost = theta * rate * sd.instance.eur_per_joule + tardiness
    if node_of is not None:
        for j in [j for j in range(len(node_of)) if node_of[j] < 0]:  # by index
            bw, late = sd.postpone_base[j]
            if late + theta > 0:
                cost += bw * (late + theta)
    return cost


def randomized_greedy(
    instance: CapacityInstance,
    max_iterations: int = 1000,
    seed: int = 0,
    swap_probability: float = 0.5,
    budget: TimeBudget | None = None,
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
    budget
        Once it is spent no new iteration starts (the first, deterministic one always
        runs); the trace says when it stopped one. On more than ``LOOP_CLASSES`` node
        classes no new batch of iterations starts after it; each batch is sized to take
        about half the time left.

    Returns
    -------
    (assignment, f_OBJ, trace)
        f_OBJ as the greedy computed it; callers re-score with the evaluator.
    """
    if max_iterations < 1:
        raise ValueError(f"max_iterations = {max_iterations!r}: must be >= 1")
    if not 0.0 <= swap_probability <= 1.0:
        raise ValueError(f"swap_probability = {swap_probability!r}: must be in [0, 1]")
    of_node, members = _node_classes(instance)
    if len(members) > LOOP_CLASSES:  # many node classes: iterations side by side (numpy)
        tables = greedy_batch.tables(
            instance, of_node, members, *_order_terms(instance, swap_probability)
        )
        nodes, gpus, best, improvements, stopped = greedy_batch.batch_search(
            instance, tables, max_iterations, seed, budget
        )
        assignment = tuple([None if n < 0 else (n, g) for n, g in zip(nodes, gpus)])
        return assignment, best[-1], GreedyTrace(best, improvements, stopped)
    draw = random.Random(seed).random
    sd = _search(instance, swap_probability)
    inf = float("inf")
    best_assign: Assignment | None = None
    best_cost = inf
    trace = GreedyTrace([], 0)
    for it in range(max_iterations):
        if budget is not None and it > 0 and budget.expired():
            trace.stopped_at_deadline = True
            break
        if it == 0:  # iteration 0: no swap, the rule's choice
            cost, node_of, gpus_of = _iteration(sd, [inf] * instance.num_jobs, None)
        else:
            draws = list(starmap(draw, repeat((), sd.n_draws)))  # n_draws calls of draw()
            cost, node_of, gpus_of = _iteration(sd, [*draws[: sd.n_swaps], inf], draws)
        if cost < best_cost:  # Alg. 1 lines 18-20
            best_cost = cost
            best_assign = tuple([None if n < 0 else (n, g) for n, g in zip(node_of, gpus_of)])
            trace.improvements += 1
        trace.best_per_iteration.append(best_cost)
    assert best_assign is not None
    return best_assign, best_cost, trace
