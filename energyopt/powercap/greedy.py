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
        self.clocks = [sorted({o.sm_clock_mhz for o in job.options}) for job in inst.jobs]

    def option(self, j: int, n: int, f: int) -> JobOption | None:
        return self.inst.jobs[j].option(n, f)

    def jct(self, j: int, n: int, f: int) -> float:
        if n == 0:
            return self.inst.queued_jct_s(j)
        return self.inst.jct_s(j, self.option(j, n, f))

    def energy(self, j: int, n: int, f: int) -> float:
        """Energy to finish job j in (n, f); a queued job will spend its one-GPU efficient energy."""
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


def marginal_return_greedy(instance: PowercapInstance) -> GreedyOutcome:
    """Algorithm 1 of PowerFlow on one scheduling event (see the module docstring)."""
    st = _State(instance)
    cap = instance.power_cap_w * (1 - 1e-12)
    jobs = range(len(instance.jobs))
    for j in jobs:
        m = instance.jobs[j].min_gpus
        if m > 0:
            ns = sorted({o.num_gpus for o in instance.jobs[j].options if o.num_gpus >= m})
            st.n[j] = ns[0]
            if st.option(j, st.n[j], st.f[j]) is None:
                st.f[j] = min(
                    o.sm_clock_mhz for o in instance.jobs[j].options if o.num_gpus == ns[0]
                )
    if sum(st.n) > instance.num_gpus or st.power(st.n, st.f) > cap:
        return GreedyOutcome(
            None, 0, 0, "the jobs' minimum GPU counts at their efficient clocks break the cap"
        )
    gpu_steps = clock_steps = 0
    # Phase 1: GPU allocation (Algorithm 1, lines 10-20; Eq. 20).
    active = set(jobs)
    while active:
        jct_tot, e_tot = st.totals()
        best, best_key = None, (-1, 0.0)
        for j in sorted(active):
            n = st.n[j]
            n2 = 1 if n == 0 else 2 * n
            if sum(st.n) - n + n2 > instance.num_gpus or st.option(j, n2, st.f[j]) is None:
                active.discard(j)
                continue
            key = _priority(
                st.jct(j, n, st.f[j]) - st.jct(j, n2, st.f[j]),
                st.energy(j, n2, st.f[j]) - st.energy(j, n, st.f[j]),
                jct_tot,
                e_tot,
            )
            if key[0] < 0:
                active.discard(j)
                continue
            # Ties (e.g. several queued jobs with free starts) go to the shortest job.
            key = (*key, -st.jct(j, n2, st.f[j]))
            if best is None or key > best_key:
                best, best_key = j, key
        if best is None:
            break
        n_new = list(st.n)
        n_new[best] = 1 if st.n[best] == 0 else 2 * st.n[best]
        if st.power(n_new, st.f) > cap:
            active.discard(best)
            continue
        st.n = n_new
        gpu_steps += 1
    # Phase 2: clock raises by one hardware step (lines 21-30; Eq. 21).
    active = {j for j in jobs if st.n[j] > 0}
    while active:
        jct_tot, e_tot = st.totals()
        best, best_key, best_f = None, (-1, 0.0), 0
        for j in sorted(active):
            higher = [c for c in st.clocks[j] if c > st.f[j]]
            f2 = higher[0] if higher else None
            if f2 is None or st.option(j, st.n[j], f2) is None:
                active.discard(j)
                continue
            key = _priority(
                st.jct(j, st.n[j], st.f[j]) - st.jct(j, st.n[j], f2),
                st.energy(j, st.n[j], f2) - st.energy(j, st.n[j], st.f[j]),
                jct_tot,
                e_tot,
            )
            if key[0] < 0:
                active.discard(j)
                continue
            if best is None or key > best_key:
                best, best_key, best_f = j, key, f2
        if best is None:
            break
        f_new = list(st.f)
        f_new[best] = best_f
        if st.power(st.n, f_new) > cap:
            active.discard(best)
            continue
        st.f = f_new
        clock_steps += 1
    config = tuple((st.n[j], st.f[j] if st.n[j] > 0 else 0) for j in jobs)
    assert all(math.isfinite(st.jct(j, st.n[j], st.f[j])) for j in jobs)
    return GreedyOutcome(config, gpu_steps, clock_steps)
