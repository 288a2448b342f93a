"""Online simulation: Randomized Greedy against FIFO, EDF and priority (ANDREAS Sec. V-B).

For each scenario (1: nodes with 2 V100 / 1 T4; 2: 4 V100 / 2 T4), cluster size N and
seed, the same job stream (J = 10 N, mixed arrival rate) runs under each method; the
table gives mean totals over the seeds and Randomized Greedy's cost reduction against
each baseline, plus the optimizer time per call. Everything is simulated (synthetic
jobs, assumed node powers).

    .venv/bin/python benchmarks/capacity_sim.py --nodes 10 20 50 --seeds 3 --max-it 1000
    .venv/bin/python benchmarks/capacity_sim.py --nodes 10 --no-restart-loss
"""

from __future__ import annotations

import argparse
import statistics
import time

from energyopt.capacity.generators import job_stream, scenario_cluster
from energyopt.capacity.simulator import simulate

BASELINES = ("fifo", "edf", "priority")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[10])
    ap.add_argument("--scenarios", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--max-it", type=int, default=1000)
    ap.add_argument("--load", type=float, default=0.8)
    ap.add_argument(
        "--no-restart-loss",
        action="store_true",
        help="moved jobs keep the epoch in progress (the paper's simulator)",
    )
    args = ap.parse_args()
    restart = not args.no_restart_loss
    print(
        f"simulated; RG MaxIt = {args.max_it}; load {args.load}; restart from checkpoint: {restart}"
    )
    print()
    print(
        "| scenario | N | J | method | energy EUR | total EUR | late jobs | RG saving % "
        "| mean call ms | max call ms | moves | lost epochs |"
    )
    print("|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for scenario in args.scenarios:
        for n in args.nodes:
            nodes = scenario_cluster(n, scenario)
            runs: dict[str, list] = {m: [] for m in (*BASELINES, "randomized-greedy")}
            for seed in range(args.seeds):
                jobs = job_stream(nodes, 10 * n, seed=seed, load=args.load)
                for m in BASELINES:
                    runs[m].append(simulate(nodes, jobs, m, restart_from_checkpoint=restart))
                runs["randomized-greedy"].append(
                    simulate(
                        nodes,
                        jobs,
                        "randomized-greedy",
                        max_iterations=args.max_it,
                        restart_from_checkpoint=restart,
                    )
                )
            rg = runs["randomized-greedy"]
            for m, rs in runs.items():
                saving = ""
                if m != "randomized-greedy":
                    # Mean over seeds of the per-seed reduction of the total cost.
                    saving = 100 * statistics.mean(
                        1 - a.total_cost_eur / b.total_cost_eur for a, b in zip(rg, rs)
                    )
                    saving = f"{saving:.1f}"
                print(
                    f"| {scenario} | {n} | {10 * n} | {m} "
                    f"| {statistics.mean(r.energy_cost_eur for r in rs):.2f} "
                    f"| {statistics.mean(r.total_cost_eur for r in rs):.2f} "
                    f"| {statistics.mean(r.late_jobs for r in rs):.1f} | {saving} "
                    f"| {1e3 * statistics.mean(r.mean_optimizer_time_s for r in rs):.1f} "
                    f"| {1e3 * max(r.max_optimizer_time_s for r in rs):.1f} "
                    f"| {statistics.mean(r.preemptions + r.migrations for r in rs):.0f} "
                    f"| {statistics.mean(r.lost_epochs for r in rs):.0f} |",
                    flush=True,
                )


if __name__ == "__main__":
    tick = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - tick:.0f} s)")
