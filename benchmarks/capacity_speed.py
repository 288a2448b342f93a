"""Randomized Greedy time per call (MaxIt 1000) on rescheduling points of the N = 100 scenarios.

The paper reports under 0.1 s per optimizer call (Sec. V-B). Points are drawn from a
simulated run of each scenario (J = 1000 jobs; the run is driven by Randomized Greedy
with MaxIt 10, or by FIFO with --driver fifo), every --every calls up to --calls calls;
each point is then solved once more by Randomized Greedy with MaxIt 1000 and timed:
wall clock of energyopt.solve (evaluator included) and the CPU time of this process
during the call, which other jobs on a shared machine do not inflate; the load average
is printed with the table. Simulated data; timings are of this machine.

``--heterogeneous`` times instead ``randomized_greedy`` itself (MaxIt 1000) on
heterogeneous clusters, side by side with the version of ``greedy.py`` at git revision
``--reference`` (loaded from ``git show``; default ``ed733db``, main before issue 17),
alternating the two on each point: ``random_point(seed, N, J, max_gpus=4)`` has every
node in its own class (random powers, V100 or T4, 1-4 GPUs) and half the jobs running.
Each pair must return the same schedule, f_OBJ and trace (the script raises otherwise).

``--class-sweep`` times the current ``randomized_greedy`` on N = 100, J = 100 points of
``random_point`` whose nodes keep their GPU type and count but take the powers of node
``n mod K`` (K power profiles; K = 0: one class per GPU type), so that the number of
node classes goes from 2 to N; each point is run through the Python loop and through the numpy batch
(``greedy.LOOP_CLASSES`` forced), which must agree exactly.

    .venv/bin/python benchmarks/capacity_speed.py
    .venv/bin/python benchmarks/capacity_speed.py --heterogeneous
    .venv/bin/python benchmarks/capacity_speed.py --class-sweep
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import energyopt
from energyopt.capacity import greedy
from energyopt.capacity.generators import job_stream, random_point, scenario_cluster
from energyopt.capacity.simulator import simulate

ROOT = Path(__file__).resolve().parents[1]


def reference_greedy(revision: str):
    """``energyopt.capacity.greedy`` as it was at git ``revision``, as a separate module."""
    source = subprocess.run(
        ["git", "show", f"{revision}:energyopt/capacity/greedy.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    spec = importlib.util.spec_from_loader("greedy_reference", loader=None)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    exec(compile(source, f"{revision}:greedy.py", "exec"), module.__dict__)
    return module


def cpu_call(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` and the CPU seconds of this process it took."""
    tick = time.process_time()
    out = fn(*args, **kwargs)
    return out, time.process_time() - tick


def heterogeneous(args) -> None:
    """The ``--heterogeneous`` table: current against reference, same points, one run."""
    ref = reference_greedy(args.reference)
    print(f"reference: greedy.py at {args.reference}; MaxIt {args.max_it}, seed 0")
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print("| nodes | jobs | points | reference CPU median s | current CPU median s | ratio |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in args.het_nodes:
        old_t, new_t = [], []
        for seed in range(args.points):
            inst = random_point(seed, n, args.het_jobs, max_gpus=4, running_fraction=0.5)
            for turn in range(2):  # alternate which version runs first
                runs = (ref, greedy) if (seed + turn) % 2 == 0 else (greedy, ref)
                out = {}
                for mod in runs:
                    res, cpu = cpu_call(mod.randomized_greedy, inst, args.max_it, seed=0)
                    out[mod] = res
                    (old_t if mod is ref else new_t).append(cpu)
                a, b = out[ref], out[greedy]
                if (
                    a[0] != b[0]
                    or a[1] != b[1]
                    or a[2].best_per_iteration != b[2].best_per_iteration
                ):
                    raise AssertionError(f"N={n} seed={seed}: the two versions disagree")
        mo, mn = statistics.median(old_t), statistics.median(new_t)
        print(f"| {n} | {args.het_jobs} | {args.points} | {mo:.3f} | {mn:.3f} | {mo / mn:.1f}x |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


def profiled(inst, k: int):
    """``inst`` with node n drawing the powers of node ``n mod k`` (type, GPUs kept); with
    ``k = 0`` every node of a GPU type a copy of the type's first node with the type's
    largest GPU count (one class per type; running jobs still fit)."""
    nodes, first, size = inst.nodes, {}, {}
    for node in nodes:
        first.setdefault(node.gpu_type, node)
        size[node.gpu_type] = max(size.get(node.gpu_type, 0), node.num_gpus)
    return dataclasses.replace(
        inst,
        nodes=tuple(
            dataclasses.replace(first[node.gpu_type], name=node.name, num_gpus=size[node.gpu_type])
            if k == 0
            else dataclasses.replace(
                node,
                idle_power_w=nodes[n % k].idle_power_w,
                gpu_power_w=nodes[n % k].gpu_power_w,
            )
            for n, node in enumerate(nodes)
        ),
    )


def class_sweep(args) -> None:
    """The ``--class-sweep`` table: loop and batch on points of K power profiles."""
    n, jobs = 100, args.het_jobs
    print(f"N = {n}, J = {jobs}, MaxIt {args.max_it}, seed 0; LOOP_CLASSES = {greedy.LOOP_CLASSES}")
    print(f"load average before: {os.getloadavg()[0]:.2f}\n")
    print("| power profiles K | node classes | loop CPU median s | batch CPU median s | path |")
    print("|---:|---:|---:|---:|---|")
    default = greedy.LOOP_CLASSES
    for k in args.profiles:
        times: dict[str, list[float]] = {"loop": [], "batch": []}
        classes = []
        for seed in range(args.points):
            inst = profiled(random_point(seed, n, jobs, max_gpus=4, running_fraction=0.5), k)
            classes.append(len({node.node_class for node in inst.nodes}))
            out = {}
            for path in ("loop", "batch"):
                greedy.LOOP_CLASSES = 10**9 if path == "loop" else -1
                out[path], cpu = cpu_call(greedy.randomized_greedy, inst, args.max_it, seed=0)
                times[path].append(cpu)
            greedy.LOOP_CLASSES = default
            a, b = out["loop"], out["batch"]
            if a[0] != b[0] or a[1] != b[1] or a[2].best_per_iteration != b[2].best_per_iteration:
                raise AssertionError(f"K={k} seed={seed}: loop and batch disagree")
        c = statistics.median(classes)
        lo, ba = statistics.median(times["loop"]), statistics.median(times["batch"])
        path = "loop" if c <= default else "batch"
        print(f"| {k} | {c:.0f} | {lo:.3f} | {ba:.3f} | {path} |")
    print(f"\nload average after: {os.getloadavg()[0]:.2f}")


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
    ap.add_argument("--heterogeneous", action="store_true", help="see the module docstring")
    ap.add_argument("--reference", default="ed733db", help="git revision to compare with")
    ap.add_argument("--het-nodes", type=int, nargs="+", default=[20, 50, 100])
    ap.add_argument("--het-jobs", type=int, default=100)
    ap.add_argument("--points", type=int, default=3, help="heterogeneous points per size")
    ap.add_argument("--class-sweep", action="store_true", help="see the module docstring")
    ap.add_argument("--profiles", type=int, nargs="+", default=[0, 1, 2, 4, 8, 16, 100])
    args = ap.parse_args()
    if args.class_sweep:
        class_sweep(args)
        return
    if args.heterogeneous:
        heterogeneous(args)
        return
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
