"""The one assumption that carries one-GPU measurements to several GPUs.

The published Zeus measurements are one-GPU figures per batch size (the NSDI'23 power
trace) or windows at one GPU count whose work per window is not recorded
(ZeusMonitor's test profiles: the 1- and 4-GPU windows of one model cannot be put on
one scale). Where a family needs a job's time on ``g`` GPUs, it uses this reading
of data-parallel training with the global batch ``B`` kept:

``t_g = t_1(B / g) / g * (1 + DATA_PARALLEL_OVERHEAD * log2(g))``

``t_1(b)`` is the measured (or fitted) one-GPU time of one unit of work (an epoch)
at per-GPU batch ``b``: each of the ``g`` GPUs does ``1/g`` of the epoch at batch
``B / g``. The factor is gradient synchronisation, **assumed** (not measured): 5 % of
the compute time per doubling of the GPU count, within one node. Per-GPU power is
the one-GPU power at batch ``B / g``.
"""

from __future__ import annotations

import math

#: Assumed synchronisation overhead per doubling of the GPU count (not measured).
DATA_PARALLEL_OVERHEAD = 0.05


def data_parallel_factor(num_gpus: float) -> float:
    """``(1 + DATA_PARALLEL_OVERHEAD * log2(g)) / g``: t_g = t_1(B / g) times this."""
    if not num_gpus >= 1:
        raise ValueError(f"num_gpus = {num_gpus!r}: must be >= 1")
    return (1.0 + DATA_PARALLEL_OVERHEAD * math.log2(num_gpus)) / num_gpus
