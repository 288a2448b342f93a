"""PowerFlow Fig. 7 and Table 2 on simulated inputs: eta sweep, baselines, JCT ratios.

Usage::

    .venv/bin/python benchmarks/powercap_fig7.py [--gpus 32] [--jobs 150] [--hours 6]
        [--seed 0] [--out DIR]

Everything is simulated and the output says so: profiles from the simulated GPU of
``energyopt.powercap.profilegen`` (2 % noise), models fitted to them (Eqs. 1-15),
a synthetic Alibaba-like trace. Writes fig7.png, fig7.csv, ratios.csv and fit.csv
to ``--out`` and prints the tables.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from energyopt.powercap.experiments import (
    default_setup,
    fig7_sweep,
    fit_quality,
    jct_ratios,
    plot_fig7,
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gpus", type=int, default=32)
    ap.add_argument("--jobs", type=int, default=150)
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--etas", type=float, nargs="+", default=[0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    )
    ap.add_argument("--out", default=str(Path(tempfile.gettempdir()) / "energyopt-powercap"))
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    pd.set_option("display.width", 200)
    tick = time.perf_counter()
    setup = default_setup(
        num_gpus=args.gpus, num_jobs=args.jobs, span_s=args.hours * 3600, seed=args.seed
    )
    print("SETUP:", setup.describe())
    fit = fit_quality(setup)
    fit.to_csv(out / "fit.csv", index=False)
    print("\nTable 2 (held-out 10 %, simulated profiles): MAPE")
    print(fit.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    df, _ = fig7_sweep(setup, etas=args.etas)
    df.to_csv(out / "fig7.csv", index=False)
    cols = ["policy", "knob", "value", "mean_jct_s", "energy_j", "max_power_w", "migrations"]
    print("\nFig. 7 runs (energy in J, JCT in s)")
    print(df[cols].to_string(index=False, float_format=lambda v: f"{v:.6g}"))
    ratios = jct_ratios(df)
    ratios.to_csv(out / "ratios.csv", index=False)
    print("\nMean JCT of each baseline / PowerFlow's best at no more energy")
    print(ratios.to_string(index=False, float_format=lambda v: f"{v:.2f}"))
    plot_fig7(
        df,
        str(out / "fig7.png"),
        f"Mean JCT vs energy: {args.gpus} simulated GPUs, {args.jobs} synthetic jobs "
        f"(seed {args.seed})",
    )
    print(
        f"\nwrote {out}/fig7.png, fig7.csv, ratios.csv, fit.csv "
        f"in {time.perf_counter() - tick:.0f} s"
    )


if __name__ == "__main__":
    main()
