"""Time windows of computations under a deadline, from the fastest options.

Used by the exact models as valid bounds (``formulations/pem.md``, Eq. PEM-7):
computation i cannot start before its longest fastest-option head ES_i, and must
leave room for its longest fastest-option tail Q_i, so an option with
``ES_i + t_ik + Q_i > T`` can never be chosen.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from energyopt.pipeline.instance import PemInstance


@dataclasses.dataclass(frozen=True)
class TimeWindows:
    earliest_start: np.ndarray
    tail: np.ndarray
    min_time: np.ndarray
    makespan_lb: float

    def latest_start(self, deadline: float) -> np.ndarray:
        return deadline - self.tail - self.min_time

    def allowed(self, instance: PemInstance, deadline: float, tol: float = 1e-9) -> list[list[int]]:
        """Per computation, the options that fit in the window of ``deadline``."""
        out = []
        for i in range(instance.num_computations):
            room = deadline - self.earliest_start[i] - self.tail[i] + tol * max(1.0, deadline)
            out.append([k for k, t in enumerate(instance.option_times[i]) if t <= room])
        return out


def time_windows(instance: PemInstance) -> TimeWindows:
    n = instance.num_computations
    tmin = np.array([t.min() for t in instance.option_times])
    es = np.zeros(n)
    for i in instance.topological_order:
        p = instance.predecessors[i]
        es[i] = max((es[j] + tmin[j] for j in p), default=0.0)
    tail = np.zeros(n)
    for i in instance.topological_order[::-1]:
        s = instance.successors[i]
        tail[i] = max((tmin[j] + tail[j] for j in s), default=0.0)
    return TimeWindows(es, tail, tmin, float((es + tmin).max()))
