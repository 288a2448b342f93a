"""Certify a Perseus crawl frontier pointwise with the convex-hull relaxation bound curve.

    .venv/bin/python benchmarks/pem_certify.py                 # GPT-3 8x12 and 8x96
    .venv/bin/python benchmarks/pem_certify.py --microbatches 24 48

Reads the Perseus authors' GPT-3 175B A100 profile from ../shared/data (measured data);
prints, per microbatch count, the crawl's time, the bound curve's time and LP solves,
and the largest and median gap of the frontier points to their proven bounds.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import energyopt
from energyopt.core.errors import InstanceError
from energyopt.pipeline import instance_from_perseus_profile
from energyopt.pipeline.readers import blocking_power
from energyopt.pipeline.relaxation.hull import bound_curve, certify_frontier

PROFILE = (
    Path(__file__).resolve().parents[1]
    / ".."
    / "shared"
    / "data"
    / "perseus-sosp24"
    / "gpt3-175b+a100_sxm_bf16.csv"
)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=str(PROFILE), help="Perseus stage profile CSV")
    power = ap.add_mutually_exclusive_group()
    power.add_argument("--p-blocking", type=float, default=None, help="blocking power (W)")
    power.add_argument(
        "--gpu", default=None, help="blocking-power preset (a100, a40; default a100)"
    )
    ap.add_argument("--microbatches", type=int, nargs="+", default=[12, 96])
    args = ap.parse_args(argv)
    if not Path(args.profile).exists():
        print(f"{args.profile}: not found (the published data lives in ../shared/data)")
        return 2
    try:
        gpu = args.gpu if args.gpu is not None or args.p_blocking is not None else "a100"
        args.p_blocking = blocking_power(gpu, args.p_blocking)
    except InstanceError as exc:
        print(f"pem_certify.py: error: {exc}", file=sys.stderr)
        return 2
    print(f"profile {args.profile} (measured), P_blocking {args.p_blocking} W, 8 stages, 1F1B")
    print(
        f"{'M':>4} {'points':>7} {'crawl_s':>8} {'curve_s':>8} {'LPs':>5} {'gap_max':>9} "
        f"{'gap_median':>10}"
    )
    for M in args.microbatches:
        inst = instance_from_perseus_profile(args.profile, M, p_blocking_w=args.p_blocking)
        tick = time.perf_counter()
        r = energyopt.solve(inst, "perseus", progress=False)
        crawl_s = time.perf_counter() - tick
        curve = bound_curve(inst)
        _, stats = certify_frontier(curve, r.frontier)
        print(
            f"{M:4d} {len(r.frontier):7d} {crawl_s:8.1f} {curve.runtime_s:8.1f} "
            f"{curve.lp_solves:5d} {100 * stats['frontier_gap_max']:8.3f}% "
            f"{100 * stats['frontier_gap_median']:9.3f}%"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
