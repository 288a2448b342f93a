"""Randomized Greedy iterations run side by side with numpy (clusters of many node classes).

:func:`energyopt.capacity.greedy.randomized_greedy` builds one schedule per iteration
in a Python loop over the jobs. Iterations do not depend on each other: each one reads
its own random draws (a fixed number per iteration, taken in order from one stream) and
starts from an empty cluster. This module runs a batch of iterations as the rows of
numpy arrays and steps through the job positions once for the whole batch, making, row
by row, the same decisions as the loop:

* the visiting order (the swaps) depends on the swap draws alone, so it is computed for
  every row first, then the rule's pick of every job (``bisect_right`` on the
  cumulative 1/score, per job with ``np.searchsorted``);
* a node's state is its index in a table of (node, free GPUs) pairs; per job, the table
  holds the first configuration of its fallback order that fits a node in that state,
  with closed nodes ranked after open ones, so ASSIGN_TO_SUBOPTIMAL's two passes are one
  minimum over the nodes;
* the node chosen among its class is the one with the fewest free GPUs that fit, the
  longest at that level first (the Python loop's buckets), closed nodes last by index:
  the least of one key per node, ``free * (J + 2) + step it reached that level``.

Every floating-point value is computed with the same operations in the same order as
the loop, so schedules, f_OBJ and traces are identical
(tests/capacity/test_capacity_greedy_batch.py). The cost of a batch is O(J * rows * N)
and does not depend on the number of node classes.
"""

from __future__ import annotations

import dataclasses
import random
from time import perf_counter

import numpy as np

from energyopt.capacity.instance import CapacityInstance
from energyopt.core.timelimit import TimeBudget


@dataclasses.dataclass
class Tables:
    """What a batch reads, built once per call. Configurations are indexed ``j * kp + k``
    (job j, position k of its fallback order); nodes ``0..N-1`` plus a dummy node ``N``
    that never fits (postponed jobs "go" there with 0 GPUs)."""

    kp: int
    vstride: int  # row length of ``value`` (node states of one job)
    conf_row: np.ndarray  # candidate row of a configuration (its class, or C + j: keep)
    conf_g: np.ndarray
    conf_t: np.ndarray
    conf_tard: np.ndarray
    cum: list[np.ndarray]  # per job: the rule's cumulative 1/score
    multi: np.ndarray  # per job: whether it draws (more than one candidate)
    value: np.ndarray  # per job and node state: first fitting position (see _state_values)
    cand: np.ndarray  # candidate rows: their nodes, padded with N
    node_off: np.ndarray  # per node: index of its state with 0 free GPUs
    cap: np.ndarray  # per node: GPUs (dummy: -1, never opens)
    idle: np.ndarray
    gpu_rate: np.ndarray  # per node and g: g * gpu_power_w
    run_n: np.ndarray  # per job: the node it runs on (N when waiting) and its g
    run_g: np.ndarray
    keep_t: np.ndarray
    keep_tard: np.ndarray
    swap_p: np.ndarray
    base_order: np.ndarray
    postpone_bw: np.ndarray
    postpone_late: np.ndarray


def _grid(instance: CapacityInstance, members: list[list[int]]):
    """Per job, class and g: time, cost and tardiness of every class configuration, and
    whether it exists (the job runs on that GPU type and the class has g GPUs); per job
    the same for its "keep" configuration (valid only for running jobs)."""
    jobs, nodes, now = instance.jobs, instance.nodes, instance.now_s
    J, C = len(jobs), len(members)
    top = [nodes[m[0]].num_gpus for m in members]
    gmax = max(top)
    types = sorted({nodes[m[0]].gpu_type for m in members})
    epoch = np.full((J, len(types), gmax), np.nan)
    for j, job in enumerate(jobs):
        for ti, name in enumerate(types):
            row = job.epoch_time_s.get(name)
            if row is not None:
                k = min(len(row), gmax)
                epoch[j, ti, :k] = row[:k]
    ctype = np.array([types.index(nodes[m[0]].gpu_type) for m in members])
    rate = np.zeros((C, gmax))
    for c, m in enumerate(members):
        for g in range(1, top[c] + 1):
            rate[c, g - 1] = instance.cost_rate_eur_per_s(m[0], g)
    restart = np.array([instance.restart_epochs(j) for j in range(J)])
    t = restart[:, None, None] * epoch[:, ctype, :]  # restart * times[g - 1]
    valid = ~np.isnan(t) & (np.arange(1, gmax + 1)[None, :] <= np.array(top)[:, None])
    t = np.where(valid, t, 0.0).reshape(J, C * gmax)
    valid = valid.reshape(J, C * gmax)
    cost = t * np.broadcast_to(rate.reshape(1, -1), t.shape)
    keep = np.zeros((J, 3))  # time, cost, valid
    for j, job in enumerate(jobs):
        if job.running is not None:
            n, g = job.running
            kt = instance.remaining_time_s(j, n, g)
            keep[j] = (kt, kt * instance.cost_rate_eur_per_s(n, g), 1.0)
    t = np.concatenate([t, keep[:, :1]], axis=1)
    cost = np.concatenate([cost, keep[:, 1:2]], axis=1)
    valid = np.concatenate([valid, keep[:, 2:] > 0], axis=1)
    w = np.array([job.tardiness_weight_eur_per_s for job in jobs])
    due = np.array([job.due_s for job in jobs])
    tard = w[:, None] * np.maximum(0.0, now + t - due[:, None])
    due_ok = valid & (now + t < due[:, None])  # D_j (Alg. 1 line 8)
    return t, cost, tard, valid, due_ok, gmax


def _fallback_order(t, cost, valid, due_ok):
    """Per job, its columns of the grid in fallback order (the rule's candidates, best
    first, then the rest, fastest first; ties in grid order as Python's stable sort),
    the rule's scores in that order, and per job the counts of rule and fallback."""
    has_due = due_ok.any(axis=1)[:, None]
    by_cost = has_due & due_ok
    group = np.where(valid, np.where(has_due & ~due_ok, 1, 0), 2)
    k1 = np.where(by_cost, cost, t)
    k2 = np.where(by_cost, t, cost)
    order = np.lexsort((k2, k1, group), axis=-1)
    group = np.take_along_axis(group, order, axis=1)
    score = np.take_along_axis(k1, order, axis=1)
    return order, score, (group == 0).sum(axis=1), (group <= 1).sum(axis=1)


def _state_values(order, valid, kp, cls_of, cap, run_n, run_g, gmax):
    """``value[j, s]``: for a node in state s (node n with f free GPUs, s = node_off[n] +
    f), the first position of job j's fallback order that fits it: a configuration of
    n's class with g <= f, or the job's own configuration on its own node (f >= its g);
    ``kp + 1`` more when n is closed (f = G_n), so that open nodes come first;
    ``3 kp + 3`` when none fits. The last state is the dummy node's. Also ``node_off``."""
    J, M = order.shape
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(M), order.shape), axis=1)
    first = np.where(valid, pos, kp)
    by_class = np.minimum.accumulate(first[:, :-1].reshape(J, -1, gmax), axis=2)
    node_off = np.concatenate([[0], np.cumsum(cap + 1)])
    st_node = np.repeat(np.arange(len(cap)), cap + 1)
    st_f = np.arange(node_off[-1]) - node_off[st_node]
    col = cls_of[st_node] * gmax + np.maximum(st_f - 1, 0)
    value = np.where(st_f[None, :] > 0, by_class.reshape(J, -1)[:, col], kp)
    for j in np.flatnonzero(run_g > 0):  # the own node fits the keep with >= g free GPUs
        n = run_n[j]
        own = slice(node_off[n] + run_g[j], node_off[n + 1])
        value[j, own] = np.minimum(value[j, own], first[j, -1])
    big = 3 * kp + 3
    closed = (st_f == cap[st_node])[None, :]
    value = np.where(value >= kp, big, value + closed * (kp + 1))
    value = np.concatenate([value, np.full((J, 1), big)], axis=1)  # the dummy node
    return value.astype(np.int32), node_off


def tables(
    instance: CapacityInstance,
    of_node: list[int],
    members: list[list[int]],
    swap_p: list[float],
    base_order: list[int],
    postpone_base: list[tuple[float, float]],
) -> Tables:
    """The tables of one call; the last three arguments as in greedy._search."""
    J, N, C = instance.num_jobs, instance.num_nodes, len(members)
    t, cost, tard, valid, due_ok, gmax = _grid(instance, members)
    order, score, n_rule, n_fall = _fallback_order(t, cost, valid, due_ok)
    kp = int(n_fall.max())
    run_n = np.array([N if job.running is None else job.running[0] for job in instance.jobs])
    run_g = np.array([-1 if job.running is None else job.running[1] for job in instance.jobs])
    cap = np.array([node.num_gpus for node in instance.nodes])
    cls_of = np.array(of_node)
    value, node_off = _state_values(order, valid, kp, cls_of, cap, run_n, run_g, gmax)
    order = order[:, :kp]
    in_rule = np.arange(kp)[None, :] < n_rule[:, None]
    inv = np.where(in_rule, 1.0 / np.maximum(score[:, :kp], 1e-12), 0.0)
    cum = np.cumsum(inv, axis=1)  # sequential, as the loop's running sum
    is_keep = order == C * gmax
    conf_row = np.where(is_keep, C + np.arange(J)[:, None], order // gmax)
    conf_g = np.where(is_keep, run_g[:, None], order % gmax + 1)
    width = max(len(m) for m in members)
    cand = np.full((C + J, width), N)
    for c, m in enumerate(members):
        cand[c, : len(m)] = m
    cand[C:, 0] = run_n
    keep = np.flatnonzero(run_g > 0)  # running jobs: the grid's last column
    keep_t, keep_tard = np.zeros(J), np.zeros(J)
    keep_t[keep] = t[keep, -1]
    keep_tard[keep] = tard[keep, -1]
    gpu_rate = np.zeros((N + 1, gmax + 1))
    for n, node in enumerate(instance.nodes):
        gpu_rate[n, : node.num_gpus + 1] = [g * node.gpu_power_w for g in range(node.num_gpus + 1)]
    return Tables(
        kp=kp,
        vstride=value.shape[1],
        conf_row=conf_row.ravel(),
        conf_g=conf_g.ravel(),
        conf_t=np.take_along_axis(t, order, axis=1).ravel(),
        conf_tard=np.take_along_axis(tard, order, axis=1).ravel(),
        cum=[cum[j, : n_rule[j]] for j in range(J)],
        multi=n_rule > 1,
        value=value.ravel(),
        cand=cand,
        node_off=node_off,
        cap=np.append(cap, -1),
        idle=np.array([node.idle_power_w for node in instance.nodes] + [0.0]),
        gpu_rate=gpu_rate,
        run_n=run_n,
        run_g=run_g,
        keep_t=keep_t,
        keep_tard=keep_tard,
        swap_p=np.array(swap_p),
        base_order=np.array(base_order, dtype=np.intp),
        postpone_bw=np.array([b for b, _ in postpone_base]),
        postpone_late=np.array([late for _, late in postpone_base]),
    )


def _orders(tb: Tables, swaps: np.ndarray) -> np.ndarray:
    """Per row, the jobs in visiting order: ``swaps[:, k] < swap_p[job]`` swaps the job
    at position k with the next one (Section 5, choice 2; the loop in greedy._iteration)."""
    B, J = swaps.shape[0], len(tb.base_order)
    out = np.empty((B, J), dtype=np.intp)
    if J == 0:
        return out
    cur = np.full(B, tb.base_order[0])
    for s in range(J - 1):
        nxt = tb.base_order[s + 1]
        swapped = swaps[:, s] < tb.swap_p[cur]
        out[:, s] = np.where(swapped, nxt, cur)
        cur = np.where(swapped, cur, nxt)
    out[:, J - 1] = cur
    return out


def _picks(tb: Tables, order: np.ndarray, draws: np.ndarray) -> np.ndarray:
    """Per row and position, the index of the rule's pick: ``bisect_right(cum, u * tot)``
    with u the row's next configuration draw (jobs with one candidate draw none)."""
    picks = np.zeros(order.shape, dtype=np.intp)
    if draws.shape[1] == 0:
        return picks
    J = order.shape[1]
    multi = tb.multi[order]
    slot = np.cumsum(multi, axis=1) - multi  # the draw of position s
    u = np.take_along_axis(draws, np.minimum(slot, draws.shape[1] - 1), axis=1)
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.broadcast_to(np.arange(J), order.shape), axis=1)
    by_job = np.take_along_axis(u, pos, axis=1)  # column j: job j's draw in each row
    for j in np.flatnonzero(tb.multi):
        cum = tb.cum[j]
        picks[:, j] = np.searchsorted(cum, by_job[:, j] * cum[-1], side="right")
    return np.take_along_axis(picks, order, axis=1)


def _construct(tb: Tables, order: np.ndarray, pick: np.ndarray):
    """The constructions of a batch, position by position (greedy._iteration per row).

    Per row and node, ``state`` is the node's state index (see _state_values) and ``key``
    is ``free * (J + 2) + stamp``, stamp being the step at which the node reached its
    level (0 while closed): the node a class configuration of g GPUs goes to is the
    candidate of least key among those with ``key >= g * (J + 2)``.
    Returns per row theta (inf: no job placed), the power rate, the tardiness and per
    job its node (-1: postponed) and GPUs."""
    B, J = order.shape
    N = len(tb.cap) - 1
    rows = np.arange(B)
    base = rows * (N + 1)
    state = np.repeat(np.append(tb.node_off[:-1] + tb.cap[:-1], tb.node_off[-1])[None, :], B, 0)
    span = J + 2
    key = np.repeat(np.maximum(tb.cap, 0)[None, :] * span, B, axis=0).ravel()
    node_of, gpus_of = np.full((B, J), -1), np.zeros((B, J), dtype=np.intp)
    theta, rate, tard = np.full(B, np.inf), np.zeros(B), np.zeros(B)
    kp, big, never = tb.kp, 3 * tb.kp + 3, np.iinfo(np.intp).max
    for s in range(J):
        j = order[:, s]
        fk = j * kp + pick[:, s]
        node, placed = _fitting_node(tb, key, base, fk, span, never)  # Alg. 1 line 10
        if not placed.all():  # ASSIGN_TO_SUBOPTIMAL: the first fitting fallback
            r = np.flatnonzero(~placed)
            best = tb.value[(j[r] * tb.vstride)[:, None] + state[r]].min(axis=1)
            fk[r] = np.where(best < big, j[r] * kp + np.where(best < kp, best, best - kp - 1), 0)
            node, placed = _fitting_node(tb, key, base, fk, span, never)
            placed[r] &= best < big
        g = np.where(placed, tb.conf_g[fk], 0)
        node = np.where(placed, node, N)
        old = state[rows, node]
        opens = old - tb.node_off[node] == tb.cap[node]
        state[rows, node] = old - g
        key[base + node] = (old - g - tb.node_off[node]) * span + s + 1
        own = (node == tb.run_n[j]) & (g == tb.run_g[j])  # a keep, even as a class config
        rate = rate + np.where(opens, tb.idle[node], 0.0)
        rate = rate + tb.gpu_rate[node, g]
        t = np.where(own, tb.keep_t[j], tb.conf_t[fk])
        theta = np.minimum(theta, np.where(placed, t, np.inf))
        tard = tard + np.where(placed, np.where(own, tb.keep_tard[j], tb.conf_tard[fk]), 0.0)
        node_of[rows, j] = np.where(placed, node, -1)
        gpus_of[rows, j] = g
    return theta, rate, tard, node_of, gpus_of


def _fitting_node(tb: Tables, key, base, fk, span: int, never: int):
    """Per row, where configuration ``fk`` goes: among its candidate nodes with at least
    its g free GPUs, the open one with the fewest, longest at that level, else the first
    closed one (the loop's ASSIGN); and whether there is one."""
    cand = tb.cand[tb.conf_row[fk]]
    need = tb.conf_g[fk] * span
    if cand.shape[1] == 1:
        node = cand[:, 0]
        return node, key[base + node] >= need
    k = key[base[:, None] + cand]
    k = np.where(k >= need[:, None], k, never)
    at = k.argmin(axis=1)
    rows = np.arange(len(fk))
    return cand[rows, at], k[rows, at] < never


def _costs(tb: Tables, instance: CapacityInstance, theta, rate, tard, node_of) -> np.ndarray:
    """f_OBJ per row, as greedy._cost (postponed jobs' terms added by job index)."""
    theta = np.where(theta == np.inf, instance.idle_horizon_s, theta)
    cost = theta * rate * instance.eur_per_joule + tard
    late = tb.postpone_late[None, :] + theta[:, None]
    term = np.where((node_of < 0) & (late > 0), tb.postpone_bw[None, :] * late, 0.0)
    return np.cumsum(np.concatenate([cost[:, None], term], axis=1), axis=1)[:, -1]


def _stream(seed: int) -> np.random.Generator:
    """A numpy generator whose ``random()`` gives the numbers ``random.Random(seed).random()``
    gives, in the same order: both are MT19937 with 53-bit doubles from two 32-bit words."""
    state = random.Random(seed).getstate()[1]
    bits = np.random.MT19937()
    bits.state = {
        "bit_generator": "MT19937",
        "state": {"key": np.array(state[:-1], dtype=np.uint32), "pos": state[-1]},
    }
    return np.random.Generator(bits)


def _batch(tb: Tables, instance: CapacityInstance, first: bool, draws: np.ndarray):
    """f_OBJ, nodes and GPUs of the iterations whose draws are the rows of ``draws``,
    preceded by iteration 0 (no swap, the rule's choice) when ``first``."""
    J = instance.num_jobs
    n_swaps = max(J - 1, 0)
    swaps = draws[:, :n_swaps]
    if first:
        swaps = np.concatenate([np.full((1, n_swaps), np.inf), swaps])
    order = _orders(tb, swaps)
    pick = _picks(tb, order[int(first) :], draws[:, n_swaps:])
    if first:
        pick = np.concatenate([np.zeros((1, J), dtype=np.intp), pick])
    theta, rate, tard, node_of, gpus_of = _construct(tb, order, pick)
    return _costs(tb, instance, theta, rate, tard, node_of), node_of, gpus_of


#: A batch's rows x (draws + jobs + nodes) stays under this many array cells (2**22:
#: 32 MiB per float64 array); 1000 iterations of 100 jobs on 100 nodes fit in one batch.
ROW_CELLS = 2**22


def batch_search(
    instance: CapacityInstance,
    tb: Tables,
    max_iterations: int,
    seed: int,
    budget: TimeBudget | None,
) -> tuple[list[int], list[int], list[float], int, bool]:
    """Iterations 0 .. max_iterations - 1 in batches: the best construction's nodes and
    GPUs, the best f_OBJ after each iteration, the number of improvements and whether the
    time ``budget`` stopped the search. Without a budget batches are as large as allowed;
    with one, iteration 0 runs alone and each later batch is sized to take about half the
    time left (timed on the batch before), and no batch starts once it is spent. A batch
    holds at most ``ROW_CELLS / (draws + J + N)`` rows (at least 64), to bound memory."""
    J = instance.num_jobs
    n_draws = max(J - 1, 0) + int(tb.multi.sum())
    gen = _stream(seed)
    best, best_at, trace, improvements = np.inf, None, [], 0
    most = max(64, ROW_CELLS // (n_draws + J + instance.num_nodes + 1))
    timed = budget is not None and budget.time_limit is not None
    done, size, stopped = 0, 1 if timed else min(most, max_iterations), False
    while done < max_iterations:
        if timed and done and budget.expired():
            stopped = True
            break
        tick = perf_counter()
        rows = size - (done == 0)
        draws = gen.random(rows * n_draws).reshape(rows, n_draws)
        costs, node_of, gpus_of = _batch(tb, instance, done == 0, draws)
        for row, cost in enumerate(costs.tolist()):  # Alg. 1 lines 18-20, in order
            if cost < best:
                best, best_at, improvements = cost, (node_of[row], gpus_of[row]), improvements + 1
            trace.append(best)
        done += size
        if timed:
            per_it = (perf_counter() - tick) / size
            left = 0.5 * budget.remaining(0.0) / per_it
            size = int(min(max_iterations - done, most, max(16, left)))
        else:
            size = min(max_iterations - done, most)
    assert best_at is not None
    return best_at[0].tolist(), best_at[1].tolist(), trace, improvements, stopped
