"""PowerFlow's Algorithm 1 as printed (method ``greedy-printed``).

The paper's pseudocode, with only what a decision needs to be scored:

- **one GPU per step** (Eq. 20: ``JCT_{j,n+1,f}``, lines 13-14). With network
  packing (Sec. 5.3) a job runs on a power of two of GPUs, so a job holding
  ``a`` GPUs runs on the largest GPU count ``<= a`` of its table; the GPUs it
  holds beyond that run nothing until it reaches the next power of two;
- **stored, normalised priorities** (lines 7-8, 16-17, 23-24): a job's key is
  Eq. 20 or 21 with the cluster totals ``JCT`` and ``E`` of the moment it is
  inserted, and stays as stored while the totals change;
- **allocate until no GPU is left** (line 10): steps with no gain are taken too,
  when nothing better is queued; the allocation stops early only at a node
  boundary where the cluster power has reached the cap (lines 18-20);
- **raise clocks while the power is at most the cap** (line 25).

Lines 19 and 25 test the cap *after* a step, so the printed loops end with the
cluster above the cap, which no decision may be. Here the steps that crossed the
cap are taken back, last first, until it holds; that is the only change. The
starting point (non-preemptible jobs at their minimum GPU count, lowest-power
clocks when the efficient ones break the cap) is shared with ``greedy``, whose
departures (doubling steps, zero-gain stops, skipping a step that breaks the
cap) are documented in ``formulations/powercap.md`` (PC-16).
"""

from __future__ import annotations

import bisect

from energyopt.powercap.greedy import NO_START, GreedyOutcome, _Queue, _State, start_state
from energyopt.powercap.instance import PowercapInstance


def _key(d_jct: float, d_energy: float, jct_tot: float, e_tot: float) -> tuple[int, float]:
    """Eq. 20/21 with the cluster totals as printed, as a sortable key.

    A step that cuts JCT at no energy cost has an infinite marginal return (tier 1,
    ranked by its relative gain); a step with no gain and no energy change (a GPU
    that waits for the next power of two) has none (tier -1); otherwise the ratio.
    """
    if d_energy <= 1e-12 * max(1.0, e_tot):
        return (1, d_jct / jct_tot) if d_jct > 0 else (-1, d_jct / jct_tot)
    return (0, (d_jct / jct_tot) / (d_energy / e_tot))


class _Printed:
    """GPUs held per job (``held``) beside the running configuration in ``st``."""

    def __init__(self, instance: PowercapInstance, st: _State) -> None:
        self.inst, self.st = instance, st
        self.held = list(st.n)
        self.cap = instance.power_cap_w * (1 - 1e-12)

    def counts(self, j: int) -> list[int]:
        """GPU counts of job j's options at its current clock, ascending."""
        f = self.st.f[j]
        return sorted(n for (n, g) in self.st.index[j] if g == f)

    def runs_on(self, j: int, held: int) -> int:
        """The largest GPU count of job j's table at its clock that ``held`` GPUs allow."""
        ns = self.counts(j)
        k = bisect.bisect_right(ns, held)
        return ns[k - 1] if k else 0

    def power(self) -> float:
        return self.st.power(self.st.n, self.st.f)

    def gpu_key(self, j: int):
        a = self.held[j]
        ns = self.counts(j)
        if not ns or a + 1 > ns[-1]:
            return None
        st, f = self.st, self.st.f[j]
        n, n2 = self.runs_on(j, a), self.runs_on(j, a + 1)
        d_jct = st.jct(j, n, f) - st.jct(j, n2, f)
        d_e = st.energy(j, n2, f) - st.energy(j, n, f)
        return (*_key(d_jct, d_e, *st.totals()), -j), j, ()

    def clock_key(self, j: int):
        st, n = self.st, self.st.n[j]
        higher = [c for c in st.clocks[j] if c > st.f[j] and st.option(j, n, c) is not None]
        if n == 0 or not higher:
            return None
        f, f2 = st.f[j], higher[0]
        d_jct = st.jct(j, n, f) - st.jct(j, n, f2)
        d_e = st.energy(j, n, f2) - st.energy(j, n, f)
        return (*_key(d_jct, d_e, *st.totals()), -j), j, (f2,)

    def give(self, j: int, delta: int) -> None:
        self.held[j] += delta
        self.st.n[j] = self.runs_on(j, self.held[j])

    def allocate(self) -> tuple[int, int]:
        """Lines 9-20; returns (GPU steps kept, steps taken back for the cap)."""
        inst, R = self.inst, self.inst.gpus_per_node
        g = inst.num_gpus - sum(self.held)
        queue = _Queue(self.gpu_key(j) for j in range(len(inst.jobs)))
        steps: list[int] = []
        while g > 0 and queue:
            j, _ = queue.pop()
            self.give(j, +1)
            g -= 1
            steps.append(j)
            queue.push(self.gpu_key(j))
            if g % R == 0 and self.power() >= self.cap:
                break
        undone = 0
        while steps and self.power() > self.cap:
            self.give(steps.pop(), -1)
            undone += 1
        return len(steps), undone

    def raise_clocks(self) -> tuple[int, int]:
        """Lines 21-30; returns (clock steps kept, 1 when the last one was taken back)."""
        st = self.st
        queue = _Queue(self.clock_key(j) for j in range(len(self.inst.jobs)) if st.n[j] > 0)
        steps = 0
        while queue and self.power() <= self.cap:
            j, (*_, f2) = queue.pop()
            f = st.f[j]
            st.f[j] = f2
            if self.power() > self.cap:
                st.f[j] = f
                return steps, 1
            steps += 1
            queue.push(self.clock_key(j))
        return steps, 0


def printed_greedy(instance: PowercapInstance) -> GreedyOutcome:
    """Algorithm 1 of PowerFlow as printed (see the module docstring)."""
    st = start_state(instance)
    if st is None:
        return GreedyOutcome(None, 0, 0, NO_START)
    alg = _Printed(instance, st)
    gpu_steps, gpu_undone = alg.allocate()
    clock_steps, clock_undone = alg.raise_clocks()
    notes = []
    if gpu_undone:
        notes.append(f"{gpu_undone} GPU step(s) taken back: line 19 let the power pass the cap")
    if clock_undone:
        notes.append("the last clock raise was taken back: it passed the cap (line 25)")
    config = tuple((n, st.f[j] if n > 0 else 0) for j, n in enumerate(st.n))
    return GreedyOutcome(config, gpu_steps, clock_steps, "; ".join(notes))
