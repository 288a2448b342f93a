"""Simulated GPU profiles for the PowerFlow family (no GPU needed, labelled simulated).

The "ground truth" here is a small physical DVFS model, deliberately *not* the
PowerFlow model form, so that fitting Eqs. 1-15 to it is a real test of the model
family:

* voltage flat below a knee clock and linear above it (the shape PowerFlow 4.2
  cites), dynamic power ``u(bs) * C * V(f)^2 * f`` with a saturating utilisation
  ``u(bs) = 1 - 0.6 exp(-bs / b0)``, static power ``I_leak * V(f) + P_board``;
* gradient time ``c0 + bs (c1 + w / f)``, I/O time linear in the node's batch,
  ring all-reduce ``2 (n-1)/n * M / B`` over NVLink within a node and over the
  network across nodes, and partial overlap ``(T_IO^3 + T_grad^3)^(1/3) + 0.6 T_sync``;
* multiplicative log-normal measurement noise on time and energy.

Parameter values are hand-set to V100-like magnitudes (300 W board, 1530 MHz
maximum clock) for the five workloads of the paper's Table 1. Nothing here was
measured; every table says so in its ``source`` column.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from energyopt.profiles.schema import profile_row

if TYPE_CHECKING:  # pandas is imported where a profile is built: no method needs it
    import pandas as pd

#: Supported SM clocks of the simulated GPU (MHz): 585..1530 in the hardware step of 105 MHz.
CLOCKS_MHZ: tuple[int, ...] = tuple(range(585, 1531, 105))
#: Clock step Delta_f of Algorithm 1 (MHz).
CLOCK_STEP_MHZ = 105
#: GPU name written into simulated profiles.
GPU_NAME = "simulated V100-like GPU (energyopt.powercap.profilegen)"
GPUS_PER_NODE = 8
#: Power of an idle GPU on a powered node (W), and the board limit.
IDLE_POWER_W = 40.0
TDP_W = 300.0
_KNEE_GHZ, _V0, _KV = 1.0, 0.75, 0.35
_C_DYN, _I_LEAK, _P_BOARD = 150.0, 40.0, 25.0
_NVLINK_GBPS, _NET_GBPS = 150.0, 12.5


@dataclasses.dataclass(frozen=True)
class Workload:
    """One DNN of the paper's Table 1, with simulated per-sample costs."""

    name: str
    batch_sizes: tuple[int, ...]
    work_s_ghz: float  # GPU seconds per sample at 1 GHz
    mem_s: float  # seconds per sample that do not scale with the clock
    fixed_s: float  # per-iteration launch overhead
    io_s: float  # seconds per sample of data loading, per GPU on the node
    model_gb: float  # gradient bytes all-reduced per iteration (GB)
    b0: float  # batch size at which utilisation saturates


#: The pool of Table 1 (batch-size ranges as in the paper; costs simulated).
WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("resnet18", (32, 64, 128, 256, 512), 2.4e-3, 4e-4, 8e-3, 6e-5, 0.047, 24),
        Workload("vgg16", (32, 64, 128, 256, 512), 9.5e-3, 1.2e-3, 1e-2, 6e-5, 0.55, 16),
        Workload(
            "inception_v3", (16, 32, 64, 128, 256, 512), 6.0e-3, 1.0e-3, 1.5e-2, 8e-5, 0.1, 20
        ),
        Workload("gpt2", (8, 16, 32, 64, 128), 2.6e-2, 4e-3, 1.2e-2, 2e-5, 0.5, 6),
        Workload("deepspeech2", (8, 16, 32, 64, 128, 256), 1.4e-2, 2e-3, 1e-2, 1e-4, 0.35, 10),
    )
}


def voltage(x_ghz: Any) -> np.ndarray:
    """Simulated supply voltage: flat below the knee, linear above."""
    x = np.asarray(x_ghz, float)
    return np.where(x < _KNEE_GHZ, _V0, _V0 + _KV * (x - _KNEE_GHZ))


def true_iteration(
    workload: str | Workload,
    num_gpus: Any,
    sm_clock_mhz: Any,
    global_batch_size: Any,
    gpus_per_node: int = GPUS_PER_NODE,
) -> tuple[np.ndarray, np.ndarray]:
    """Noise-free simulated (seconds, joules of all GPUs) of one iteration."""
    w = WORKLOADS[workload] if isinstance(workload, str) else workload
    n = np.asarray(num_gpus, float)
    x = np.asarray(sm_clock_mhz, float) / 1000.0
    bs = np.asarray(global_batch_size, float) / n
    r = np.minimum(n, gpus_per_node)
    t_grad = w.fixed_s + bs * (w.mem_s + w.work_s_ghz / x)
    t_io = 2e-3 + w.io_s * bs * r
    ring = 2.0 * (n - 1.0) / n * w.model_gb
    bw = np.where(n <= gpus_per_node, _NVLINK_GBPS, _NET_GBPS)
    lat = np.where(n <= gpus_per_node, 1e-3, 5e-3)
    # The reduction kernels run on the SMs, so part of the sync time scales with the clock.
    t_sync = np.where(n > 1, lat + ring / bw + 2e-3 * ring / x, 0.0)
    t_iter = (t_io**3 + t_grad**3) ** (1.0 / 3.0) + 0.6 * t_sync
    v = voltage(x)
    util = 1.0 - 0.6 * np.exp(-bs / w.b0)
    p_dyn = util * _C_DYN * v**2 * x
    p_comm = 0.35 * _C_DYN * v**2 * x
    p_stat = _I_LEAK * v + _P_BOARD
    power = (p_dyn * t_grad + p_comm * t_sync) / t_iter + p_stat
    power = np.minimum(power, TDP_W)
    return t_iter, n * power * t_iter


class TruthModel:
    """The ground-truth model with the same ``iteration()`` interface as a fitted one."""

    def __init__(self, workload: str, gpus_per_node: int = GPUS_PER_NODE):
        self.workload = workload
        self.gpus_per_node = gpus_per_node
        self.source = "simulated (energyopt.powercap.profilegen ground truth, noise-free)"

    def iteration(
        self, num_gpus: Any, sm_clock_mhz: Any, global_batch_size: Any
    ) -> tuple[np.ndarray, np.ndarray]:
        return true_iteration(
            self.workload, num_gpus, sm_clock_mhz, global_batch_size, self.gpus_per_node
        )


def truth_models(gpus_per_node: int = GPUS_PER_NODE) -> dict[str, TruthModel]:
    """Ground-truth model of every workload of :data:`WORKLOADS`."""
    return {name: TruthModel(name, gpus_per_node) for name in WORKLOADS}


def simulated_profile(
    workloads: Sequence[str] | None = None,
    *,
    clocks_mhz: Sequence[int] = CLOCKS_MHZ,
    num_gpus: Sequence[int] = (1, 2, 4, 8, 16),
    gpus_per_node: int = GPUS_PER_NODE,
    noise: float = 0.02,
    samples: int = 5,
    seed: int = 0,
) -> pd.DataFrame:
    """A profile-schema table measured on the simulated GPU.

    One row per (workload, clock, GPU count, global batch size); ``batch_size``
    is the global batch, ``num_gpus`` the GPUs of the iteration, ``time_s`` and
    ``energy_j`` one iteration (energy of all its GPUs). Global batches whose
    local batch would fall below 1 are skipped.

    Parameters
    ----------
    noise
        Standard deviation of the log-normal measurement noise (0.02 = ~2 %).
    seed
        Seed of the noise.
    """
    rng = np.random.default_rng(seed)
    rows = []
    src = (
        f"simulated (energyopt.powercap.profilegen: physical DVFS model, {noise:.0%} "
        f"log-normal noise, seed={seed})"
    )
    for name in workloads or list(WORKLOADS):
        w = WORKLOADS[name]
        for n in num_gpus:
            for bs in w.batch_sizes:
                if bs < n:
                    continue
                for f in clocks_mhz:
                    t, e = true_iteration(w, n, f, bs, gpus_per_node)
                    t = float(t) * float(np.exp(rng.normal(0.0, noise)))
                    e = float(e) * float(np.exp(rng.normal(0.0, noise)))
                    rows.append(
                        profile_row(
                            gpu=GPU_NAME,
                            knob="sm_clock_mhz",
                            knob_value=float(f),
                            workload=name,
                            operation="iteration",
                            batch_size=int(bs),
                            time_s=t,
                            energy_j=e,
                            samples=samples,
                            source=src,
                            num_gpus=int(n),
                            power_w=e / t / n,  # per GPU here
                            gpus_per_node=gpus_per_node,
                        )
                    )
    import pandas as pd  # here, not at the top: the package starts without pandas (0.14 s)

    df = pd.DataFrame(rows)
    df.attrs.update(
        gpu=GPU_NAME, gpus_per_node=gpus_per_node, source=src, generator="simulated_profile"
    )
    return df
