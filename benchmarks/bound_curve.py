"""Where the time of the hull relaxation's bound curve goes (GPT-3 8x96 by default).

    .venv/bin/python benchmarks/bound_curve.py       # GPT-3 175B, 8 stages, 96 microbatches
    .venv/bin/python benchmarks/bound_curve.py --microbatches 12 96 --repeat 3

Reads the Perseus authors' GPT-3 175B A100 profile from ../shared/data (measured data).
Per microbatch count it builds the LP (lower hulls, rows, the HiGHS model), then runs the
sandwich of ``bound_curve`` with each part timed: HiGHS' LP solves, the weak dual that turns
each solve into a tangent, and the rest (choosing the next deadline); then the bound at every
point of the Perseus frontier (vectorised). Times are wall-clock and CPU seconds of this
process, with the load average beside them: the machine may be shared.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

import energyopt
from energyopt.pipeline import instance_from_perseus_profile
from energyopt.pipeline.readers import blocking_power
from energyopt.pipeline.relaxation.hull import HullRelaxation, bound_curve

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pem_certify import PROFILE  # the same published profile


class _Timed:
    """Wraps a method and sums its wall-clock time and calls."""

    def __init__(self, fn):
        self.fn, self.seconds, self.calls = fn, 0.0, 0

    def __call__(self, *args, **kwargs):
        tick = time.perf_counter()
        try:
            return self.fn(*args, **kwargs)
        finally:
            self.seconds += time.perf_counter() - tick
            self.calls += 1


def measure(inst) -> dict[str, float]:
    """Seconds of each part of one bound curve of ``inst`` (a fresh relaxation)."""
    cpu0, tick = time.process_time(), time.perf_counter()
    relax = HullRelaxation(inst)
    build_s = time.perf_counter() - tick
    run = relax._run = _Timed(relax._run)
    dual = relax._weak_dual = _Timed(relax._weak_dual)
    solve = relax.solve = _Timed(relax.solve)
    tick = time.perf_counter()
    curve = bound_curve(inst, relaxation=relax)
    curve_s = time.perf_counter() - tick
    return {
        "build_s": build_s,
        "curve_s": curve_s,
        "highs_s": run.seconds,
        "dual_s": dual.seconds,
        "solve_other_s": solve.seconds - run.seconds - dual.seconds,
        "sandwich_s": curve_s - solve.seconds,
        "lp_solves": curve.lp_solves,
        "highs_runs": run.calls,
        "tangents": len(curve.tangents),
        "cpu_s": time.process_time() - cpu0,
        "curve": curve,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default=str(PROFILE), help="Perseus stage profile CSV")
    ap.add_argument("--microbatches", type=int, nargs="+", default=[96])
    ap.add_argument("--repeat", type=int, default=1, help="curves per instance (median shown)")
    ap.add_argument("--no-crawl", action="store_true", help="skip the Perseus frontier")
    args = ap.parse_args(argv)
    if not Path(args.profile).exists():
        print(f"{args.profile}: not found (the published data lives in ../shared/data)")
        return 2
    if args.repeat < 1:
        print("bound_curve.py: error: --repeat: at least 1", file=sys.stderr)
        return 2
    pb = blocking_power("a100", None)
    print(f"profile {args.profile} (measured), P_blocking {pb} W, 8 stages, 1F1B")
    print(f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for M in args.microbatches:
        inst = instance_from_perseus_profile(args.profile, M, p_blocking_w=pb)
        runs = [measure(inst) for _ in range(args.repeat)]
        runs.sort(key=lambda r: r["curve_s"] + r["build_s"])
        r = runs[len(runs) // 2]
        total = r["build_s"] + r["curve_s"]
        print(f"\nGPT-3 8x{M}: {inst.num_computations} computations, "
              f"{r['lp_solves']} LP solves ({r['highs_runs']} HiGHS runs), "
              f"{r['tangents']} tangents kept")  # fmt: skip
        print(f"  total            {total:7.2f} s wall, {r['cpu_s']:7.2f} s CPU (median of "
              f"{args.repeat})")  # fmt: skip
        for key, what in (
            ("build_s", "LP build (hulls, rows, HiGHS model)"),
            ("highs_s", "HiGHS LP solves (warm-started)"),
            ("dual_s", "weak dual -> tangent (Eq. PEM-R6)"),
            ("solve_other_s", "deadline change, reading the solution"),
            ("sandwich_s", "sandwich bookkeeping"),
        ):
            print(f"  {what:40s} {r[key]:7.2f} s  {100 * r[key] / total:5.1f} %")
        if r["lp_solves"]:
            print(f"  per LP solve: {1e3 * r['highs_s'] / r['highs_runs']:.1f} ms HiGHS, "
                  f"{1e3 * r['dual_s'] / r['lp_solves']:.2f} ms weak dual")  # fmt: skip
        if not args.no_crawl:
            res = energyopt.solve(inst, "perseus", progress=False)
            times = np.array([p.makespan_s for p in res.frontier])
            tick = time.perf_counter()
            r["curve"].energy_bounds(times)
            print(f"  bounds at the {len(times)} Perseus frontier points: "
                  f"{time.perf_counter() - tick:.3f} s")  # fmt: skip
    print(f"load average at end {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
