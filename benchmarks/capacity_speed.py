"""Randomized Greedy time per call (MaxIt 1000) on rescheduling points of the N = 100 scenarios.

The paper reports under 0.1 s per optimizer call (Sec. V-B). Points are drawn from a
simulated run of each scenario (J = 1000 jobs; the run is driven by Randomized Greedy
with MaxIt 10, or by FIFO with --driver fifo), every --every calls up to --calls calls;
each point is then solved once more by Randomized Greedy with MaxIt 1000 and timed:
wall clock of energyopt.solve (evaluator included) and the CPU time of this process
during the call, which other jobs on a shared machine do not inflate; the load average
is printed with the table. Simulated data; timings are of this machine.

    .venv/bin/python benchmarks/capacity_speed.py
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import energyopt
from energyopt.capacity.generators import job_stream, scenario_cluster
from energyopt.capacity.simulator import simulate


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=100)
    ap.add_argument("--max-it", type=int, default=1000)
    ap.add_argument("--driver", default="randomized-greedy")
    ap.add_argument("--calls", type=int, default=600)
    ap.add_argument("--every", type=int, default=30)
    ap.add_argument(
        "--no-restart-loss",
        action="store_true",
        help="the driving run moves jobs for free (the paper's simulator)",
    )
    args = ap.parse_args()
    print(
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; simulated points; driver {args.driver}, "
        f"restart from checkpoint: {not args.no_restart_loss}"
    )
    print()
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    print()
    print(
        "| scenario | points | jobs in system (median / max) | wall median s | wall mean s "
        "| wall max s | CPU median s | CPU mean s | CPU p95 s | CPU max s |"
    )
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for scenario in (1, 2):
        nodes = scenario_cluster(args.nodes, scenario)
        jobs = job_stream(nodes, 10 * args.nodes, seed=0)
        opts = {"max_iterations": 10} if args.driver == "randomized-greedy" else {}
        run = simulate(
            nodes,
            jobs,
            args.driver,
            keep_points_every=args.every,
            max_calls=args.calls,
            restart_from_checkpoint=not args.no_restart_loss,
            **opts,
        )
        points = [p for p in run.points if p.num_jobs > 1]
        wall, cpu = [], []
        for p in points:
            tick = time.process_time()
            r = energyopt.solve(p, "randomized-greedy", seed=0, max_iterations=args.max_it)
            cpu.append(time.process_time() - tick)
            wall.append(r.runtime_s)
        wall.sort()
        cpu.sort()
        sizes = sorted(p.num_jobs for p in points)
        p95 = cpu[min(len(cpu) - 1, round(0.95 * (len(cpu) - 1)))]
        print(
            f"| {scenario} | {len(points)} | {statistics.median(sizes):.0f} / {sizes[-1]} "
            f"| {statistics.median(wall):.3f} | {statistics.mean(wall):.3f} | {wall[-1]:.3f} "
            f"| {statistics.median(cpu):.3f} | {statistics.mean(cpu):.3f} | {p95:.3f} "
            f"| {cpu[-1]:.3f} |",
            flush=True,
        )
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    tick = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - tick:.0f} s)")
