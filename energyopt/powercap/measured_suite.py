"""Scheduling events whose jobs come from measured profiles (the ``paper`` suite's part).

Jobs and their option tables come from PowerFlow-style models fitted
(:mod:`energyopt.powercap.measured`) to the published Zeus measurements in
``../shared/data`` (Apache-2.0, ml-energy/zeus):

* the NSDI'23 power traces ``summary_power_{v100,a40}.csv``: one job per (workload,
  global batch), one unit of work = one epoch; settings = the trace's power limits;
  GPU counts 1, 2, 4, 8 with per-GPU batch ``B / n`` inside the measured batch range,
  carried from one GPU by the **assumption** of :mod:`energyopt.profiles.scaling`;
* ZeusMonitor's A40 profiles ``A40+<model>+gpu<ids>.csv``: one job per file, one unit
  = one profiling window, only at its measured GPU count (a 4-GPU job is not
  preemptible: ``min_gpus = 4``), since the windows' work is not recorded.

The idle power of a GPU on a powered node is **assumed** (not in the data). Without
the data the library's committed copies are read back, so a clone without
``../shared/data`` has the same suite.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from energyopt.core.instance import load_instance
from energyopt.powercap.instance import EventJob, JobOption, PowercapInstance
from energyopt.powercap.measured import PowerLimitModel, fit_power_limit_profile, split_jobs

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / ".." / "shared" / "data"
LIBRARY = ROOT / "instances" / "powercap" / "paper"
#: Assumed power of an idle GPU on a powered node (W); the data do not measure it.
IDLE_POWER_W = {"v100": 40.0, "a40": 30.0}
#: GPU counts a trace job may use (one node of 8).
TRACE_GPU_COUNTS = (1, 2, 4, 8)
LICENCE = "Apache-2.0, ml-energy/zeus"
#: The events: (GPU, jobs, GPUs, GPUs per node, eta, seed).
EVENTS = (("v100", 10, 16, 8, 0.5, 0), ("v100", 10, 16, 8, 0.8, 1))
EVENTS_A40 = (("a40", 12, 16, 4, 0.5, 2), ("a40", 12, 16, 4, 0.8, 3))


@dataclasses.dataclass(frozen=True)
class MeasuredJob:
    """A job that a measured profile defines: its model, batch, settings, GPU counts."""

    name: str
    model: PowerLimitModel
    global_batch_size: int
    settings_w: tuple[int, ...]
    gpu_counts: tuple[int, ...]

    def options(self) -> tuple[JobOption, ...]:
        out = []
        for n in self.gpu_counts:
            t, e = self.model.iteration(
                np.full(len(self.settings_w), float(n)),
                np.array(self.settings_w, float),
                float(self.global_batch_size),
            )
            out += [
                JobOption(n, w, float(ti), float(ei / ti))
                for w, ti, ei in zip(self.settings_w, t, e)
            ]
        return tuple(out)


def data_available(data: Path = DATA) -> bool:
    """Whether the Zeus traces and ZeusMonitor profiles are there."""
    trace = data / "zeus-nsdi23"
    return all((trace / f"summary_power_{g}.csv").exists() for g in IDLE_POWER_W) and any(
        (data / "zeus-monitor-profiles").glob("A40+*.csv")
    )


def trace_jobs(gpu: str, data: Path = DATA) -> list[MeasuredJob]:
    """One job per (workload, global batch) of a Zeus power trace, models fitted."""
    from energyopt.profiles.readers import read_zeus_power_trace

    df = read_zeus_power_trace(data / "zeus-nsdi23" / f"summary_power_{gpu}.csv")
    out = []
    for label, d in split_jobs(df):
        fit = fit_power_limit_profile(d, folds=0)
        batches = sorted(int(b) for b in d["batch_size"].unique())
        settings = tuple(sorted(int(p) for p in d["knob_value"].unique()))
        for b in batches:
            counts = tuple(n for n in TRACE_GPU_COUNTS if b / n >= batches[0])
            out.append(MeasuredJob(f"{gpu}:{label}:b{b}", fit.model, b, settings, counts))
    return out


def monitor_jobs(data: Path = DATA) -> list[MeasuredJob]:
    """One job per ZeusMonitor A40 profile, at its measured GPU count only."""
    from energyopt.profiles.zeusmonitor import read_zeus_monitor_log

    out = []
    for path in sorted((data / "zeus-monitor-profiles").glob("A40+*.csv")):
        df = read_zeus_monitor_log(path)
        fit = fit_power_limit_profile(df, folds=0)
        settings = tuple(sorted(int(p) for p in df["knob_value"]))
        n = int(df.attrs["num_gpus"])
        out.append(MeasuredJob(f"zeusmonitor:{path.stem}", fit.model, 1, settings, (n,)))
    return out


def measured_event(
    jobs: list[MeasuredJob],
    num_jobs: int,
    num_gpus: int,
    gpus_per_node: int,
    eta: float,
    *,
    gpu: str,
    seed: int,
    always: tuple[MeasuredJob, ...] = (),
) -> PowercapInstance:
    """An event with ``always`` and jobs drawn from ``jobs`` (seeded): remaining work
    spread so that one-GPU remaining times span about 5 minutes to 3 hours."""
    rng = np.random.default_rng(seed)
    pool = [j for j in jobs if j not in always]
    picked = list(always) + [
        pool[int(k)] for k in rng.choice(len(pool), num_jobs - len(always), replace=False)
    ]
    ev = []
    for i, mj in enumerate(picked):
        opts = mj.options()
        n0 = min(mj.gpu_counts)
        t_eff = min((o for o in opts if o.num_gpus == n0), key=lambda o: o.energy_per_iter_j)
        remaining_s = float(np.exp(rng.uniform(np.log(300), np.log(3 * 3600))))
        ev.append(
            EventJob(
                f"j{i}-{mj.name}",
                max(1.0, round(remaining_s / t_eff.iter_time_s, 2)),
                float(round(rng.uniform(0, 7200), 1)),
                opts,
                0 if n0 == 1 else n0,
                mj.model.workload,
                mj.global_batch_size,
            )
        )
    top = [
        max(
            (o for o in j.options if o.num_gpus == min(mj.gpu_counts)), key=lambda o: o.sm_clock_mhz
        )
        for j, mj in zip(ev, picked)
    ]
    p_max = float(np.mean([o.power_w / o.num_gpus for o in top]))
    base = PowercapInstance(
        num_gpus, gpus_per_node, eta, p_max, IDLE_POWER_W[gpu], 0.0, tuple(ev), knob="power_limit_w"
    )
    wait = float(
        np.mean(
            [
                j.remaining_iterations * base.efficient_option(k).iter_time_s
                for k, j in enumerate(ev)
            ]
        )
    )
    return dataclasses.replace(
        base,
        wait_estimate_s=wait,
        name=f"measured-{gpu}-j{num_jobs}-g{num_gpus}x{gpus_per_node}-eta{eta:g}",
        source=_source(gpu, seed),
    )


def _source(gpu: str, seed: int) -> str:
    files = f"zeus-nsdi23/summary_power_{gpu}.csv"
    if gpu == "a40":
        files += " and zeus-monitor-profiles/A40+*.csv"
    return (
        f"measured: {files} ({LICENCE}); PowerFlow-style model fitted by "
        "energyopt.powercap.measured; settings are power limits (W); times on GPU counts "
        "not measured assumed by energyopt.profiles.scaling; idle power "
        f"{IDLE_POWER_W[gpu]:g} W assumed; energyopt.powercap.measured_suite seed={seed}"
    )


def measured_instances(data: Path = DATA) -> list[PowercapInstance]:
    """The paper suite's measured events, from the data or the library's copies."""
    if not data_available(data):
        return [load_instance(p) for p in sorted(LIBRARY.glob("*-measured-*.json"))]
    out = []
    v100 = trace_jobs("v100", data)
    for gpu, jobs, g, r, eta, seed in EVENTS:
        out.append(measured_event(v100, jobs, g, r, eta, gpu=gpu, seed=seed))
    a40, monitor = trace_jobs("a40", data), monitor_jobs(data)
    for gpu, jobs, g, r, eta, seed in EVENTS_A40:
        out.append(
            measured_event(
                a40 + monitor, jobs, g, r, eta, gpu=gpu, seed=seed, always=tuple(monitor)
            )
        )
    return out
