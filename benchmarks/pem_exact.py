"""Exact PEM methods side by side: 1F1B, 4 stages x 8 microbatches, 10 clocks per computation.

The deadline is halfway between the fastest and the minimal-energy iteration time
(``deadline_between(instance, 0.5)``). Each variant runs on the same instances; the
table gives wall time, termination, objective (evaluated), proven bound and gap.

    .venv/bin/python benchmarks/pem_exact.py [--seeds 0 1 2] [--time-limit 120]
    .venv/bin/python benchmarks/pem_exact.py \
        --profile ../shared/data/perseus-sosp24/gpt3-175b+a100_sxm_bf16.csv

Synthetic instances (``synthetic_instance``) have simulated DVFS options, labelled so.
With ``--profile``, the first stages of a Perseus stage profile are used with
``--clocks`` clocks picked evenly from the measured ones (P_blocking 83.64 W).
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

import energyopt
from energyopt.core.table import format_table
from energyopt.pipeline import PemInstance, read_perseus_profile, synthetic_instance
from energyopt.pipeline.evaluator import deadline_between

VARIANTS = {
    "highs (plain: assignment only)": (
        "highs",
        {
            "formulation": "assignment",
            "warm_start": False,
            "filter_dominated": False,
            "time_windows": False,
        },
    ),
    "highs (assignment + time windows)": (
        "highs",
        {"formulation": "assignment", "warm_start": False, "filter_dominated": False},
    ),
    "highs (assignment + warm start + filter)": ("highs", {"formulation": "assignment"}),
    "highs (incremental + warm start + filter) [default]": ("highs", {}),
    "cpsat (0.1 ms ticks, primal + bound model)": ("cpsat", {}),
}


def profile_instance(path: str, stages: int, microbatches: int, clocks: int) -> PemInstance:
    """The first ``stages`` stages of a Perseus profile, ``clocks`` measured clocks each."""
    tables = read_perseus_profile(path)
    picked = {}
    for s in range(stages):
        for kind in ("forward", "backward"):
            t = tables[f"s{s}/{kind}"]
            idx = np.unique(np.linspace(0, len(t) - 1, clocks).round().astype(int)).tolist()
            picked[f"s{s}/{kind}"] = t.subset(idx)
    return PemInstance.from_schedule(
        "1f1b",
        stages,
        microbatches,
        picked,
        83.64,
        name=f"{path.split('/')[-1]} 1f1b {stages}x{microbatches} k{clocks}",
        source="measured (Perseus profile)",
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--time-limit", type=float, default=120.0)
    ap.add_argument("--stages", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=8)
    ap.add_argument("--clocks", type=int, default=10)
    ap.add_argument("--profile", default=None, help="Perseus stage-profile CSV instead")
    ap.add_argument("--only", nargs="*", default=None, help="substrings of variant names to run")
    args = ap.parse_args()
    print(
        f"machine: {platform.processor() or platform.machine()}, python {platform.python_version()}"
    )
    rows = []
    for seed in args.seeds:
        if args.profile:
            inst = profile_instance(args.profile, args.stages, args.microbatches, args.clocks)
        else:
            inst = synthetic_instance(args.stages, args.microbatches, args.clocks, seed=seed)
        inst = inst.with_deadline(deadline_between(inst, 0.5))
        print(f"instance: {inst.name} ({inst.source}); deadline {inst.deadline_s:.6f} s")
        for label, (method, opts) in VARIANTS.items():
            if args.only and not any(s in label for s in args.only):
                continue
            tick = time.perf_counter()
            r = energyopt.solve(inst, method, time_limit=args.time_limit, **opts)
            wall = time.perf_counter() - tick
            g = r.gap
            rows.append(
                [
                    seed,
                    label,
                    f"{wall:.2f}",
                    r.termination.value,
                    r.objective,
                    r.bound,
                    "-" if g is None else f"{100 * g:.4f}%",
                ]
            )
            print(f"  {label}: {wall:.2f} s, {r.termination.value}, gap {rows[-1][-1]}", flush=True)
    print()
    print(
        format_table(
            ["seed", "method", "wall_s", "termination", "energy_j", "bound_j", "gap"], rows
        )
    )


if __name__ == "__main__":
    main()
