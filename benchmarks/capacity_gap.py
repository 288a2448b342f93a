"""Gap of Randomized Greedy (MaxIt 1, 10, 100, 1000) against the proven MILP optimum.

Rescheduling points are drawn from simulated runs (Randomized Greedy, MaxIt 100,
driving small clusters of the paper's two scenarios); each point is solved in both
postponement variants by the MILP (HiGHS, proven optimum) and by the greedy.
Everything is simulated (synthetic jobs, assumed node powers).

    .venv/bin/python benchmarks/capacity_gap.py            # the table in docs/capacity.md
    .venv/bin/python benchmarks/capacity_gap.py --quick    # a smaller run
"""

from __future__ import annotations

import argparse
import statistics
import time

import energyopt
from energyopt.capacity.generators import job_stream, scenario_cluster
from energyopt.capacity.simulator import simulate

MAX_ITS = (1, 10, 100, 1000)


def points(nodes_per_run: int, jobs_per_run: int, seeds: range, every: int, load: float):
    out = []
    for scenario in (1, 2):
        nodes = scenario_cluster(nodes_per_run, scenario)
        for seed in seeds:
            jobs = job_stream(nodes, jobs_per_run, seed=seed, load=load)
            run = simulate(
                nodes, jobs, "randomized-greedy", max_iterations=100, keep_points_every=every
            )
            out += [p for p in run.points if p.num_jobs >= 2]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--jobs", type=int, default=40)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--every", type=int, default=4)
    ap.add_argument("--load", type=float, default=1.5)
    ap.add_argument("--time-limit", type=float, default=60.0)
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.every = 1, 8
    pts = points(args.nodes, args.jobs, range(args.seeds), args.every, args.load)
    sizes = [p.num_jobs for p in pts]
    print(
        f"{len(pts)} rescheduling points, {args.nodes} nodes, jobs in system: "
        f"min {min(sizes)}, median {statistics.median(sizes)}, max {max(sizes)} (simulated)"
    )
    rows = []
    for wc in (True, False):
        gaps = {k: [] for k in MAX_ITS}
        times = {k: [] for k in MAX_ITS}
        milp_times, unsolved = [], 0
        for p in pts:
            point = p.with_variant(wc)
            exact = energyopt.solve(point, "highs", time_limit=args.time_limit)
            if exact.termination.value != "optimal":
                unsolved += 1
                continue
            milp_times.append(exact.runtime_s)
            for k in MAX_ITS:
                r = energyopt.solve(point, "randomized-greedy", seed=0, max_iterations=k)
                g = energyopt.gap(r.objective, exact.bound)
                if g < -1e-9:
                    raise AssertionError(f"greedy below the proven optimum on {point.name}")
                gaps[k].append(g)
                times[k].append(r.runtime_s)
        for k in MAX_ITS:
            g = gaps[k]
            rows.append(
                (
                    "work-conserving" if wc else "free postponement",
                    k,
                    len(g),
                    100 * statistics.mean(g),
                    100 * statistics.median(g),
                    100 * max(g),
                    100 * sum(x <= 1e-9 for x in g) / len(g),
                    1e3 * statistics.mean(times[k]),
                    statistics.mean(milp_times),
                    unsolved,
                )
            )
    print()
    print(
        "| variant | MaxIt | points | mean gap % | median gap % | max gap % | at optimum % "
        "| RG ms/call | MILP s/call | MILP not proven |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.2f} | {r[4]:.2f} | {r[5]:.2f} | {r[6]:.0f} "
            f"| {r[7]:.1f} | {r[8]:.2f} | {r[9]} |"
        )


if __name__ == "__main__":
    tick = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - tick:.0f} s)")
