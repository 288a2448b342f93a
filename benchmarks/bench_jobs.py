"""Speed-up of ``energyopt bench --jobs 2`` against ``--jobs 1`` on a suite (default smoke).

Each repetition runs the whole suite (every family with suites, every registered
method, seed 0) into a fresh store with ``--jobs 1`` and with ``--jobs 2``,
alternating so that background load hits both alike; the table gives the median
wall-clock time of each and the speed-up. It also checks that every store holds
the same contents (``ResultsStore.contents()``: everything but timings), and with
``--dask`` adds a Dask ``LocalCluster`` run with 2 workers to that check.

    .venv/bin/python benchmarks/bench_jobs.py [--suite smoke] [--repeat 3] [--dask]

The machine's load average is printed: a busy machine shrinks the speed-up.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
from pathlib import Path

import energyopt
from energyopt.bench.runner import plan_cells, run_bench
from energyopt.bench.store import CONTENT_COLUMNS, ResultsStore
from energyopt.core.table import format_table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="smoke")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--time-limit", type=float, default=30.0)
    ap.add_argument("--dask", action="store_true", help="also run with --executor dask")
    args = ap.parse_args()

    cells = plan_cells(suite=args.suite, time_limit_s=args.time_limit)
    families = sorted({c.family for c in cells})
    print(
        f"suite {args.suite!r}: {len(cells)} cells ({', '.join(families)}); "
        f"energyopt {energyopt.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average before {os.getloadavg()[0]:.2f}"
    )
    walls: dict[str, list[float]] = {"--jobs 1": [], "--jobs 2": []}
    contents = {}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.repeat):
            for label, jobs in (("--jobs 1", 1), ("--jobs 2", 2)):
                store = Path(tmp) / f"{rep}-{jobs}.sqlite"
                summary = run_bench(cells, store, jobs=jobs, progress=False, argv=["bench_jobs"])
                walls[label].append(summary.wall_s)
                with ResultsStore(store) as db:
                    contents[(label, rep)] = db.contents()
        if args.dask:
            store = Path(tmp) / "dask.sqlite"
            summary = run_bench(cells, store, jobs=2, executor="dask", progress=False)
            walls["--jobs 2 --executor dask"] = [summary.wall_s]
            with ResultsStore(store) as db:
                contents[("dask", 0)] = db.contents()
    base = statistics.median(walls["--jobs 1"])
    rows = [
        [label, len(ws), f"{statistics.median(ws):.2f}", f"{base / statistics.median(ws):.2f}x"]
        for label, ws in walls.items()
    ]
    print(format_table(["run", "repeats", "median wall (s)", "speed-up vs --jobs 1"], rows))
    first = next(iter(contents.values()))
    same = all(c == first for c in contents.values())
    print(f"store contents identical across all {len(contents)} runs: {same}")
    if not same:
        for run, c in contents.items():
            for x, y in zip(first, c):
                if x != y:
                    diff = [(col, u, v) for col, u, v in zip(CONTENT_COLUMNS, x, y) if u != v]
                    print(f"  {run}: {x[0]}: {diff}")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
