"""ANDREAS rescheduling points whose jobs' times and GPU power come from measurements.

Source: the Zeus NSDI'23 power traces ``summary_power_{v100,a40}.csv``
(``../shared/data/zeus-nsdi23/``, Apache-2.0, ml-energy/zeus), or any folder of
traces in that format (one ``summary_power_<gpu>.csv`` per GPU type):

* a job is a (workload, global batch ``B``) of the traces; its seconds per epoch on
  one GPU of a type are the trace's ``time_per_epoch`` at that type's highest power
  limit (the GPU's default); a type whose trace lacks the workload is one the job
  cannot run on;
* on ``g`` GPUs: the data-parallel reading of :mod:`energyopt.profiles.scaling`
  (per-GPU batch ``B / g``, synchronisation overhead **assumed**), with the one-GPU
  time at ``B / g`` measured, or interpolated log-log between the measured batch
  sizes around it; no extrapolation: ``B / g`` stays within the measured batches;
* a node's power per busy GPU is the mean ``average_power`` of its type's trace at
  the highest limit (measured); the host power of a node is **assumed**
  (:data:`HOST_IDLE_POWER_W`).

Epoch counts, arrivals, due dates and tardiness weights are drawn as in
:func:`energyopt.capacity.generators.job_stream` (synthetic, seeded).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from energyopt.capacity.generators import (
    DUE_SLACK,
    EPOCHS,
    MIXED_RATES,
    PHASE_JOBS,
    WEIGHT_EUR_PER_S,
    SubmittedJob,
)
from energyopt.capacity.instance import Node
from energyopt.profiles.scaling import data_parallel_factor

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".." / "shared" / "data" / "zeus-nsdi23"
#: GPUs per node of each measured type in the measured clusters.
GPUS_PER_NODE = {"V100": 4, "A40": 2}
#: Assumed host power of a powered node (W): not in the data.
HOST_IDLE_POWER_W = {"V100": 200.0, "A40": 200.0}
LICENCE = "Apache-2.0, ml-energy/zeus"

#: One-GPU seconds per epoch by batch size, per (workload, GPU type).
EpochTimes = dict[tuple[str, str], dict[int, float]]


def trace_types(data: Path = DATA) -> dict[str, Path]:
    """GPU type (upper case, as in the file name) -> its power trace in ``data``."""
    return {
        p.stem.removeprefix("summary_power_").upper(): p
        for p in sorted(Path(data).glob("summary_power_*.csv"))
    }


def measured_tables(data: Path = DATA) -> tuple[EpochTimes, dict[str, float]]:
    """One-GPU epoch times at each type's highest limit, and each type's mean GPU power."""
    from energyopt.profiles.readers import read_zeus_power_trace

    times: EpochTimes = {}
    power: dict[str, float] = {}
    for gpu, path in trace_types(data).items():
        df = read_zeus_power_trace(path)
        top = df[df["knob_value"] == df["knob_value"].max()]
        power[gpu] = float(top["power_w"].mean())
        # A workload measured with several optimizers is one job per optimizer.
        several = top.groupby("workload")["optimizer"].nunique() > 1
        for w, o, b, t in zip(top["workload"], top["optimizer"], top["batch_size"], top["time_s"]):
            times.setdefault((f"{w} ({o})" if several[w] else str(w), gpu), {})[int(b)] = float(t)
    return times, power


def one_gpu_time(by_batch: dict[int, float], batch: float) -> float | None:
    """Seconds per epoch at per-GPU ``batch``: measured, or log-log interpolated between
    the measured batches around it; ``None`` outside the measured range."""
    bs = sorted(by_batch)
    if batch in by_batch:
        return by_batch[int(batch)]
    if not bs[0] <= batch <= bs[-1]:
        return None
    hi = next(b for b in bs if b > batch)
    lo = max(b for b in bs if b < batch)
    w = (math.log(batch) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return math.exp((1 - w) * math.log(by_batch[lo]) + w * math.log(by_batch[hi]))


def epoch_table(by_batch: dict[int, float], batch: int, max_gpus: int) -> tuple[float, ...]:
    """Seconds per epoch on g = 1.. GPUs (as far as ``B / g`` stays measured)."""
    out = []
    for g in range(1, max_gpus + 1):
        t = one_gpu_time(by_batch, batch / g)
        if t is None:
            break
        out.append(t * g * data_parallel_factor(g))
    return tuple(out)


def measured_cluster(num_nodes: int, power: dict[str, float]) -> tuple[Node, ...]:
    """Half the nodes of the first measured type, half of the second (V100, A40)."""
    kinds = sorted(power, key=lambda k: list(GPUS_PER_NODE).index(k) if k in GPUS_PER_NODE else 9)
    nodes = []
    for n in range(num_nodes):
        kind = kinds[0] if n < (num_nodes + 1) // 2 or len(kinds) == 1 else kinds[1]
        g = GPUS_PER_NODE.get(kind, 2)
        host = HOST_IDLE_POWER_W.get(kind, 200.0)
        nodes.append(Node(f"{kind.lower()}-{n:03d}", kind, g, host, round(power[kind], 6)))
    return tuple(nodes)


def job_pool(
    times: EpochTimes, nodes: tuple[Node, ...]
) -> list[tuple[str, int, dict[str, tuple[float, ...]]]]:
    """(workload, B, epoch table by type) of every job some node can run on all its GPUs."""
    cap: dict[str, int] = {}
    for node in nodes:
        cap[node.gpu_type] = max(cap.get(node.gpu_type, 0), node.num_gpus)
    batches = sorted({(w, b) for (w, gpu), tb in times.items() if gpu in cap for b in tb})
    pool = []
    for w, b in batches:
        table = {
            gpu: epoch_table(times[(w, gpu)], b, cap[gpu])
            for gpu in cap
            if (w, gpu) in times and b in times[(w, gpu)]
        }
        table = {k: v for k, v in table.items() if len(v) == cap[k]}
        if table:
            pool.append((w, b, table))
    return pool


def measured_job_stream(
    nodes: tuple[Node, ...], times: EpochTimes, num_jobs: int, seed: int, load: float = 0.8
) -> tuple[SubmittedJob, ...]:
    """``num_jobs`` jobs drawn from the measured pool with mixed-rate Poisson arrivals
    sized to ``load`` of the cluster's GPUs (epochs, due dates, weights synthetic)."""
    rng = np.random.default_rng(seed)
    pool = job_pool(times, nodes)
    if not pool:
        raise ValueError("no measured job fits the cluster's GPU types")
    gpus = sum(n.num_gpus for n in nodes)
    mean_t1 = float(np.mean([min(v[0] for v in table.values()) for _, _, table in pool]))
    base_rate = load * gpus / (mean_t1 * float(np.mean(EPOCHS)))
    t = 0.0
    jobs = []
    for i in range(num_jobs):
        t += float(rng.exponential(1.0 / (base_rate * MIXED_RATES[(i // PHASE_JOBS) % 2])))
        w, b, table = pool[int(rng.integers(len(pool)))]
        epochs = int(rng.integers(EPOCHS[0], EPOCHS[1] + 1))
        fastest = epochs * min(min(v) for v in table.values())
        due = t + float(rng.uniform(*DUE_SLACK)) * fastest
        weight = float(rng.uniform(*WEIGHT_EUR_PER_S))
        name = f"{w.replace('/', '-').replace(' (', '-').rstrip(')')}-b{b}-{i:04d}"
        jobs.append(SubmittedJob(name, w, t, due, weight, epochs, table))
    return tuple(jobs)


def source_note(data: Path = DATA) -> str:
    """What a measured point's figures come from (for its ``source``)."""
    files = ", ".join(p.name for p in trace_types(data).values())
    return (
        f"measured: epoch times and GPU power from {files} ({LICENCE}), highest power "
        "limit; times on g GPUs by energyopt.profiles.scaling (assumed overhead); host "
        "power assumed; epochs, arrivals, due dates, weights synthetic"
    )
