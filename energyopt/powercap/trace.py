"""Job traces for the simulator: a synthetic Alibaba-like trace (simulated, labelled so).

The paper replays 1901 jobs of the public Alibaba trace (PowerFlow 6.1), assigning
each a DNN and batch size from Table 1 and turning the trace duration into an
iteration count with the measured throughput. That trace is not available here, so
:func:`synthetic_trace` draws jobs with the same fields: Poisson arrivals, GPU
requests of 1, 2, 4 or 8 with most jobs on one GPU, and log-normal durations, and
converts durations to iterations exactly as the paper does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from energyopt.core.instance import InstanceError, check
from energyopt.powercap.instance import IterationModel, is_power_of_two
from energyopt.powercap.profilegen import CLOCKS_MHZ, WORKLOADS


@dataclasses.dataclass(frozen=True)
class TraceJob:
    """One job of a trace.

    Attributes
    ----------
    name
        Identifier.
    arrival_s
        Submission time.
    workload, global_batch_size
        What it trains (Table 1 pool).
    requested_gpus
        GPUs the user asked for (non-elastic schedulers use exactly this).
    iterations
        Training iterations to finish.
    """

    name: str
    arrival_s: float
    workload: str
    global_batch_size: int
    requested_gpus: int
    iterations: float


@dataclasses.dataclass(frozen=True)
class Trace:
    """A list of jobs and where they came from."""

    jobs: tuple[TraceJob, ...]
    source: str = ""

    def validate(self, num_gpus: int) -> None:
        """Clear errors for impossible jobs (e.g. more GPUs than the cluster has)."""
        names = set()
        for i, j in enumerate(self.jobs):
            f = f"trace.jobs[{i}]"
            check(j.name not in names, f"{f}.name", j.name, "duplicate job name")
            names.add(j.name)
            check(j.arrival_s >= 0, f"{f}.arrival_s", j.arrival_s, "must be >= 0")
            check(j.iterations > 0, f"{f}.iterations", j.iterations, "must be positive")
            check(
                is_power_of_two(j.requested_gpus),
                f"{f}.requested_gpus",
                j.requested_gpus,
                "must be a power of two (network packing)",
            )
            check(
                j.requested_gpus <= num_gpus,
                f"{f}.requested_gpus",
                j.requested_gpus,
                f"job {j.name!r} needs more GPUs than the cluster has ({num_gpus})",
            )

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "jobs": [dataclasses.asdict(j) for j in self.jobs]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Trace:
        try:
            jobs = tuple(TraceJob(**j) for j in d["jobs"])
        except TypeError as exc:
            raise InstanceError(f"trace.jobs: {exc}") from None
        return cls(jobs, str(d.get("source", "")))


def synthetic_trace(
    num_jobs: int,
    *,
    span_s: float,
    models: Mapping[str, IterationModel],
    max_gpus: int = 8,
    median_duration_s: float = 1800.0,
    duration_sigma: float = 1.0,
    gpu_mix: Sequence[float] = (0.7, 0.12, 0.1, 0.08),
    workloads: Sequence[str] | None = None,
    seed: int = 0,
) -> Trace:
    """An Alibaba-like synthetic trace (simulated).

    Parameters
    ----------
    num_jobs
        How many jobs.
    span_s
        Arrivals are uniform (Poisson process conditioned on the count) over ``[0, span_s)``.
    models
        Used to turn each duration into iterations at the requested GPUs and the
        highest clock (PowerFlow 6.1).
    max_gpus
        Largest request; ``gpu_mix`` gives the probabilities of 1, 2, 4, 8, ... GPUs.
    median_duration_s, duration_sigma
        Log-normal durations, clipped to [60 s, 12 h].
    seed
        Random seed.
    """
    rng = np.random.default_rng(seed)
    names = list(workloads or WORKLOADS)
    sizes = [1 << k for k in range(len(gpu_mix)) if (1 << k) <= max_gpus]
    probs = np.asarray(gpu_mix[: len(sizes)], float)
    probs = probs / probs.sum()
    arrivals = np.sort(rng.uniform(0.0, span_s, num_jobs))
    jobs = []
    fmax = float(max(CLOCKS_MHZ))
    for i, a in enumerate(arrivals):
        w = names[int(rng.integers(len(names)))]
        n = int(rng.choice(sizes, p=probs))
        bs_pool = [b for b in WORKLOADS[w].batch_sizes if b >= n] if w in WORKLOADS else [32]
        bs = int(rng.choice(bs_pool))
        dur = float(np.clip(median_duration_s * np.exp(rng.normal(0, duration_sigma)), 60, 43200))
        t, _ = models[w].iteration(float(n), fmax, float(bs))
        jobs.append(
            TraceJob(f"job{i:04d}", float(round(a, 3)), w, bs, n, max(1.0, round(dur / float(t))))
        )
    src = (
        f"simulated (energyopt.powercap.trace.synthetic_trace: {num_jobs} jobs over "
        f"{span_s:.0f} s, seed={seed}; Alibaba-like, not the Alibaba trace)"
    )
    return Trace(tuple(jobs), src)
