"""PowerFlow's Table 2 on measured profiles: fit error of each job's model.

Fits the power-limit model of :mod:`energyopt.powercap.measured` to every workload of
the Zeus NSDI'23 power traces (V100, A40; one GPU, per batch size and power limit),
to every ZeusMonitor JIT profile (A40, 1 and 4 GPUs), and to any profile given with
``--profile`` (the project's schema with knob ``power_limit_w``, e.g. from
``energyopt profile --knob power_limit_w``), and prints the 10-fold cross-validated
MAPE of throughput and energy per job, as PowerFlow's Table 2 does (fit on 90 %,
test on 10 %). All inputs are measurements (Apache-2.0, ml-energy/zeus); nothing is
simulated here.

Usage::

    .venv/bin/python benchmarks/measured_fit.py [--data ../shared/data] [--profile FILE ...]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from energyopt.powercap.measured import (
    MeasuredFit,
    fit_power_limit_profile,
    fit_table,
    format_fit_table,
    split_jobs,
)

ROOT = Path(__file__).resolve().parents[1]


def measured_fits(data: Path, profiles: list[Path]) -> dict[str, MeasuredFit]:
    """Every job's fit: trace workloads per GPU, ZeusMonitor files, extra profiles."""
    from energyopt.profiles.readers import read_zeus_power_trace
    from energyopt.profiles.schema import read_profile
    from energyopt.profiles.zeusmonitor import read_zeus_monitor_log

    fits: dict[str, MeasuredFit] = {}
    for path in sorted((data / "zeus-nsdi23").glob("summary_power_*.csv")):
        df = read_zeus_power_trace(path)
        for label, d in split_jobs(df):
            gpu = path.stem.removeprefix("summary_power_")
            fits[f"{gpu} {label} (trace)"] = fit_power_limit_profile(d)
    for path in sorted((data / "zeus-monitor-profiles").glob("*.csv")):
        fits[f"{path.stem} (ZeusMonitor)"] = fit_power_limit_profile(read_zeus_monitor_log(path))
    for path in profiles:
        df = read_profile(path)
        for label, d in split_jobs(df):
            fits[f"{path.name} {label}"] = fit_power_limit_profile(d, where=str(path))
    return fits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT / ".." / "shared" / "data"))
    ap.add_argument("--profile", action="append", default=[], help="a power-limit profile")
    args = ap.parse_args(argv)
    data = Path(args.data)
    if not (data / "zeus-nsdi23").exists() and not args.profile:
        print(f"no measurements under {data}: nothing to fit")
        return 0
    t0 = time.process_time()
    fits = measured_fits(data, [Path(p) for p in args.profile])
    rows = fit_table(fits)
    print(format_fit_table(rows))
    for kind in ("trace", "ZeusMonitor"):
        sel = [r for r in rows if kind in r["job"]]
        if sel:
            thr = statistics.mean(r["throughput_mape"] for r in sel)
            en = statistics.mean(r["energy_mape"] for r in sel)
            print(f"{kind}: {len(sel)} jobs, mean throughput MAPE {thr:.3f}, energy {en:.3f}")
    print(f"CPU {time.process_time() - t0:.1f} s; measured inputs ({data})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
