"""PowerFlow's marginal-return greedy (Algorithm 1, Eqs. 20-21).

Phase 1 (GPU allocation, lines 10-20): every job starts at its minimum GPU count
(0 for a preemptible job) at its most energy-efficient clock; GPUs go step by step
to the job with the largest marginal return (Eq. 20): relative JCT reduction over
relative energy increase. With network packing a step doubles a job's GPUs (0 -> 1
-> 2 -> 4 ...). Phase 2 (clock raise, lines 21-30): the job with the largest
marginal return of Eq. 21 gets its clock raised by one hardware step.

Departure from the paper (stated in formulations/powercap.md, PC-16): the paper
allocates and then stops once the cluster power reaches the cap, which can overshoot
it; here a step that would break the cap (PC-15) or the GPU count is not taken and
the job leaves that phase's queue, so the result is always feasible.
"""

from __future__ import annotations

import dataclasses
import heapq
import math

from energyopt.powercap.instance import JobOption, PowercapInstance


@dataclasses.dataclass(frozen=True)
class GreedyOutcome:
    """The greedy's decision, or ``None`` when even the minimum configuration breaks the cap."""

    config: tuple[tuple[int, int], ...] | None
    gpu_steps: int
    clock_steps: int
    message: str = ""


class _State:
    def __init__(self, inst: PowercapInstance):
        self.inst = inst
        self.n = [0] * len(inst.jobs)
        self.f = [inst.efficient_option(j).sm_clock_mhz for j in range(len(inst.jobs))]
        self.clocks = [job.clocks_mhz for job in inst.jobs]
        self.index = [job.option_index for job in inst.jobs]
        self.queued = [inst.queued_jct_s(j) for j in range(len(inst.jobs))]

    def option(self, j: int, n: int, f: int) -> JobOption | None:
        return self.index[j].get((n, f))

    def jct(self, j: int, n: int, f: int) -> float:
        if n == 0:
            return self.queued[j]
        return self.inst.jct_s(j, self.option(j, n, f))

    def energy(self, j: int, n: int, f: int) -> float:
        """Energy to finish job j in (n, f); queued: its one-GPU energy at the efficient clock."""
        job = self.inst.jobs[j]
        o = self.inst.efficient_option(j) if n == 0 else self.option(j, n, f)
        return job.remaining_iterations * o.energy_per_iter_j

    def power(self, n: list[int], f: list[int]) -> float:
        inst = self.inst
        used = sum(n)
        p = sum(self.option(j, n[j], f[j]).power_w for j in range(len(n)) if n[j] > 0)
        r = inst.gpus_per_node
        return p + inst.idle_power_w * (-(-used // r) * r - used)

    def totals(self) -> tuple[float, float]:
        jobs = range(len(self.n))
        return (
            sum(self.jct(j, self.n[j], self.f[j]) for j in jobs),
            sum(self.energy(j, self.n[j], self.f[j]) for j in jobs),
        )


class _Queue:
    """Max-priority queue of (key, job, payload); each job is in it at most once."""

    def __init__(self, items):
        self.heap = [(_neg(k), j, p) for k, j, p in (i for i in items if i is not None)]
        heapq.heapify(self.heap)

    def __bool__(self) -> bool:
        return bool(self.heap)

    def pop(self):
        k, j, p = heapq.heappop(self.heap)
        return j, (k, *p)

    def push(self, item) -> None:
        if item is not None:
            k, j, p = item
            heapq.heappush(self.heap, (_neg(k), j, p))


def _neg(key: tuple) -> tuple:
    return tuple(-v for v in key)


def _priority(d_jct: float, d_energy: float, jct_tot: float, e_tot: float) -> tuple[int, float]:
    """Eqs. 20-21 as a sortable key; ``None``-like ``(-1, .)`` when the step does not help.

    A step that cuts JCT without costing energy has an infinite marginal return; such
    steps rank first, by their JCT reduction.
    """
    if not d_jct > 1e-12:
        return (-1, 0.0)
    if d_energy <= 1e-12:
        return (1, d_jct)
    return (0, (d_jct / jct_tot) / (d_energy / e_tot))


def _step_to(st: _State, j: int, n: int, n2: int):
    """Key and details of moving job j from n to n2 GPUs at its clock (None: no option)."""
    o2 = st.option(j, n2, st.f[j])
    if o2 is None:
        return None
    d_jct = st.jct(j, n, st.f[j]) - st.jct(j, n2, st.f[j])
    d_e = st.energy(j, n2, st.f[j]) - st.energy(j, n, st.f[j])
    return _priority(d_jct, d_e, 1.0, 1.0), n2, o2, d_jct, d_e


def _gpu_step(st: _State, j: int, n: int):
    """The next GPU step of job j (network packing: 0 -> 1 -> 2 -> 4 ...), or None.

    Starting a queued job gains only its waiting estimate w (its JCT then counts
    its run on one GPU instead of w plus that run). With w = 0 that gain is nil,
    and the paper's step rule would never start a queued job, although more GPUs
    shorten it; so a start with no gain of its own is ranked by the start that
    gains most, straight to 2, 4, ... GPUs (a documented departure,
    ``formulations/powercap.md``).
    """
    first = _step_to(st, j, n, 1 if n == 0 else 2 * n)
    if first is not None and first[0][0] >= 0:
        return first
    if n != 0:
        return None
    best = None
    n2 = 2
    while n2 <= st.inst.num_gpus:
        cand = _step_to(st, j, 0, n2)
        if cand is not None and cand[0][0] >= 0 and (best is None or cand[0] > best[0]):
            best = cand
        n2 *= 2
    return best


def _lowest_power_clocks(instance: PowercapInstance, st: _State) -> None:
    """Put every running job at the clock with the least power for its GPU count.

    Non-preemptible jobs start at their most efficient clock; when that breaks the
    cap, a slower clock may fit (issue: the greedy answered ``infeasible`` on such
    feasible events). Phase 2 raises clocks again where the cap allows.
    """
    for j, job in enumerate(instance.jobs):
        if st.n[j] > 0:
            opts = [o for o in job.options if o.num_gpus == st.n[j]]
            st.f[j] = min(opts, key=lambda o: (o.power_w, -o.sm_clock_mhz)).sm_clock_mhz


NO_START = "the jobs' minimum GPU counts at their lowest-power clocks break the cap"


def start_state(instance: PowercapInstance) -> _State | None:
    """Algorithm 1's starting point: no GPU, each job at its most efficient clock.

    Non-preemptible jobs (not in the paper) keep their minimum GPU count; when that
    breaks the cap at the efficient clocks, every running job moves to its
    lowest-power clock. ``None`` when even that breaks the cap or the GPU count.
    """
    st = _State(instance)
    cap = instance.power_cap_w * (1 - 1e-12)
    for j, job in enumerate(instance.jobs):
        if job.min_gpus > 0:
            ns = sorted({o.num_gpus for o in job.options if o.num_gpus >= job.min_gpus})
            st.n[j] = ns[0]
            if st.option(j, st.n[j], st.f[j]) is None:
                st.f[j] = min(o.sm_clock_mhz for o in job.options if o.num_gpus == ns[0])
    if sum(st.n) <= instance.num_gpus and st.power(st.n, st.f) > cap:
        _lowest_power_clocks(instance, st)
    if sum(st.n) > instance.num_gpus or st.power(st.n, st.f) > cap:
        return None
    return st


def marginal_return_greedy(instance: PowercapInstance) -> GreedyOutcome:
    """Algorithm 1 of PowerFlow on one scheduling event (see the module docstring).

    The normalisers ``JCT`` and ``E`` of Eqs. 20-21 (cluster totals) are common to all
    jobs at a step, so the ranking only needs each job's (JCT reduction, energy
    increase); a job's key is recomputed only when its configuration changes, as in
    the paper's priority queues (lines 16-17 and 29-30).
    """
    st = start_state(instance)
    if st is None:
        return GreedyOutcome(None, 0, 0, NO_START)
    cap = instance.power_cap_w * (1 - 1e-12)
    jobs = range(len(instance.jobs))
    r = instance.gpus_per_node
    idle_w = instance.idle_power_w
    job_w = [st.option(j, st.n[j], st.f[j]).power_w if st.n[j] else 0.0 for j in jobs]
    job_w_sum = sum(job_w)
    used = sum(st.n)

    def total_power(used_: int, job_w_sum: float) -> float:
        return job_w_sum + idle_w * (-(-used_ // r) * r - used_)

    def gpu_key(j: int):
        n = st.n[j]
        step = _gpu_step(st, j, n)
        if step is None:
            return None
        key, n2, o2, d_jct, d_e = step
        # Ties (e.g. queued jobs whose start costs no energy: all gain the same waiting
        # estimate) go to the least remaining time, then the lower index. Not the
        # smallest JCT: that includes the age and would starve jobs that waited long.
        rem_s = instance.jobs[j].remaining_iterations * o2.iter_time_s
        return (*key, -rem_s, -j), j, (n2, o2, d_jct, d_e)

    def clock_key(j: int):
        higher = [c for c in st.clocks[j] if c > st.f[j]]
        if not higher:
            return None
        f2 = higher[0]
        o2 = st.option(j, st.n[j], f2)
        if o2 is None:
            return None
        d_jct = st.jct(j, st.n[j], st.f[j]) - st.jct(j, st.n[j], f2)
        d_e = st.energy(j, st.n[j], f2) - st.energy(j, st.n[j], st.f[j])
        key = _priority(d_jct, d_e, 1.0, 1.0)
        if key[0] < 0:
            return None
        return (*key, -j), j, (f2, o2, d_jct, d_e)

    gpu_steps = clock_steps = 0
    # Phase 1: GPU allocation (Algorithm 1, lines 10-20; Eq. 20).
    queue = _Queue(gpu_key(j) for j in jobs)
    while queue:
        j, (_, n2, o2, _, _) = queue.pop()
        add = n2 - st.n[j]
        w_new = job_w_sum - job_w[j] + o2.power_w
        if used + add > instance.num_gpus or total_power(used + add, w_new) > cap:
            continue  # this step breaks the GPU count or the cap: the job leaves the queue
        st.n[j] = n2
        job_w[j], job_w_sum = o2.power_w, w_new
        used += add
        gpu_steps += 1
        queue.push(gpu_key(j))
    # Phase 2: clock raises by one hardware step (lines 21-30; Eq. 21).
    queue = _Queue(clock_key(j) for j in jobs if st.n[j] > 0)
    while queue:
        j, (_, f2, o2, _, _) = queue.pop()
        w_new = job_w_sum - job_w[j] + o2.power_w
        if total_power(used, w_new) > cap:
            continue
        st.f[j] = f2
        job_w[j], job_w_sum = o2.power_w, w_new
        clock_steps += 1
        queue.push(clock_key(j))
    config = tuple((st.n[j], st.f[j] if st.n[j] > 0 else 0) for j in jobs)
    assert all(math.isfinite(st.jct(j, st.n[j], st.f[j])) for j in jobs)
    return GreedyOutcome(config, gpu_steps, clock_steps)
