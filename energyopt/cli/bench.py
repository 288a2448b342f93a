"""``energyopt bench`` (batch runs into a results store), ``report`` and ``demo``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from energyopt.bench.cells import DEFAULT_GRACE_S
from energyopt.bench.families import SUITE_NAMES
from energyopt.cli.errors import one_line_errors, seed_argument
from energyopt.cli.solve import add_method_argument, add_option_argument


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="solve a suite or instance files with several methods and seeds, in parallel",
        description="Every (instance, method, seed) cell runs in its own process under the "
        "time limit; each finished cell is committed to the store at once, and a restarted "
        "run skips the cells already there.",
    )
    p.add_argument("files", nargs="*", help="instance JSON files (any family), besides --suite")
    p.add_argument(
        "--suite",
        action="append",
        help=f"suite of every family that has one ({', '.join(SUITE_NAMES)}; repeatable)",
    )
    p.add_argument("--family", action="append", help="only this family (repeatable)")
    add_method_argument(p, required=False)
    p.add_argument("--seeds", nargs="+", type=seed_argument, default=[0], metavar="SEED")
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per cell (default 60)")
    p.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE_S,
        help="seconds a cell may run past its time limit before it is killed "
        f"(default {DEFAULT_GRACE_S:g}; counted once the cell's process has loaded its instance)",
    )
    p.add_argument("--jobs", "-j", type=int, default=1, help="cells at the same time")
    p.add_argument("--store", required=True, help="SQLite results store (created if missing)")
    p.add_argument("--executor", choices=("local", "dask"), default="local")
    p.add_argument("--scheduler", help="address of an existing Dask scheduler (--executor dask)")
    p.add_argument(
        "--retry-failed", action="store_true", help="run again cells stored as failed or killed"
    )
    p.add_argument(
        "--recompute-stale",
        action="store_true",
        help="run again cells stored by other code (another version, commit or source change); "
        "without it they are reused, and the summary says so",
    )
    p.add_argument(
        "--allow-failures",
        action="store_true",
        help="exit 0 even when cells failed or were killed (they are listed either way)",
    )
    add_option_argument(p, "option for every method that takes it (VALUE parsed as JSON)")
    p.add_argument(
        "--plugin", action="append", default=[], help="module to import first (extra methods)"
    )
    add_progress_argument(p)
    p.set_defaults(func=_bench)

    p = sub.add_parser("report", help="gap report (HTML, Markdown, CSV, plots) from a store")
    p.add_argument("store", help="SQLite results store written by 'energyopt bench'")
    p.add_argument(
        "--out",
        default=None,
        help="output directory (default: beside STORE, its name + '-report')",
    )
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_report)

    p = sub.add_parser(
        "demo", help="the README's main job: smoke suite of every family, then the gap report"
    )
    p.add_argument("--out", default="out", help="output directory (default: out)")
    p.add_argument("--jobs", type=int, default=2, help="cells at the same time (default 2)")
    p.add_argument(
        "--recompute-stale",
        action="store_true",
        help="run again stored cells that other code computed (see 'energyopt bench')",
    )
    add_progress_argument(p)
    p.set_defaults(func=_demo)


def add_progress_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (automatic when the output is not a terminal)",
    )


def show_progress(args: argparse.Namespace) -> bool:
    """A progress bar only on a terminal, and not with ``--no-progress``."""
    return not args.no_progress and sys.stdout.isatty() and sys.stderr.isatty()


@one_line_errors
def _bench(args: argparse.Namespace) -> int:
    from energyopt.bench.runner import check_bench_arguments
    from energyopt.cli.options import parse_options

    # Every argument that needs no family is checked before the cell server starts.
    check_bench_arguments(
        suite=args.suite,
        files=args.files,
        time_limit_s=args.time_limit,
        grace_s=args.grace,
        jobs=args.jobs,
    )
    options = parse_options(args.option)
    from energyopt.bench.cellclient import stop_server

    _start_cell_server(args)
    try:
        return _plan_and_run(args, options)
    finally:
        stop_server()


def _plan_and_run(args: argparse.Namespace, options: dict[str, Any]) -> int:
    """Plan the cells here (while the cell server imports), run them, list the lost ones."""
    from energyopt.bench.runner import plan_cells, run_bench

    chosen = args.method or []
    cells = plan_cells(
        suite=args.suite,
        files=args.files,
        families=args.family,
        methods=chosen or None,
        seeds=args.seeds,
        time_limit_s=args.time_limit,
        options=options,
        plugins=args.plugin,
        grace_s=args.grace,
        check_options=True,
    )
    summary = run_bench(
        cells,
        args.store,
        jobs=args.jobs,
        executor=args.executor,
        scheduler=args.scheduler,
        retry_failed=args.retry_failed,
        recompute_stale=args.recompute_stale,
        progress=show_progress(args),
        argv=["energyopt", *sys.argv[1:]],
    )
    print(summary)
    lost = _lost_cells(args.store, summary.run_id)
    for line in lost:
        print(f"  lost: {line}")
    if lost and not args.allow_failures:
        print(f"{len(lost)} cell(s) failed or were killed (--allow-failures to exit 0)")
        return 1
    return 0


def _start_cell_server(args: argparse.Namespace) -> None:
    """Start the cell server once the arguments are checked, and plan meanwhile.

    Its imports (the families and their solvers: most of a run's start) are the longest
    step before the first cell and run in a process of their own, so it starts before
    this one plans (:func:`energyopt.bench.runner.plan_cells`, which imports the planned
    families here) and imports the progress bar: both overlap the server's imports, on
    the other core. Where cells run as fresh interpreters, no server starts.
    """
    from energyopt.bench.cellclient import start_server, warm_cells
    from energyopt.bench.cells import preload_families

    if args.family:
        preload_families(args.family)
    if warm_cells() and args.scheduler is None:
        start_server()
    if show_progress(args):
        import tqdm  # noqa: F401


def _lost_cells(store: str, run_id: str) -> list[str]:
    """The cells of run ``run_id`` that failed or were killed, one line each."""
    from energyopt.bench.store import ResultsStore

    cols = ["run_id", "outcome", "termination", "family", "instance_name", "method", "seed"]
    with ResultsStore(store) as st:
        rows = st.rows([*cols, "message"])
    return [
        f"{r['family']}/{r['instance_name']} {r['method']} seed={r['seed']}: {r['outcome']}, "
        f"{r['termination']} {str(r['message'] or '')[:100]}".rstrip()
        for r in rows
        if r["run_id"] == run_id and (r["outcome"] != "finished" or r["termination"] == "error")
    ]


@one_line_errors
def _report(args: argparse.Namespace) -> int:
    from energyopt.bench.report import make_report
    from energyopt.core.table import format_table

    out = args.out or default_report_dir(args.store)
    report = make_report(args.store, out, plots=not args.no_plots)
    rows = [
        [
            r["family"],
            r["method"],
            r["cells"],
            r["solved"],
            r["proven_optimal"],
            r["failed"],
            None
            if r["mean_gap_to_best_bound"] is None
            else f"{100 * r['mean_gap_to_best_bound']:.4f}%",
            None if r["mean_runtime_s"] is None else f"{r['mean_runtime_s']:.3f}",
        ]
        for r in report.summary
    ]
    print(
        format_table(
            ["family", "method", "cells", "solved", "optimal", "failed", "mean gap", "runtime_s"],
            rows,
        )
    )
    for bug in report.bugs:
        print(f"CONTRADICTION (a bug): {bug}", file=sys.stderr)
    print(f"report written to {out}/index.html and {out}/summary.md")
    return 1 if report.bugs else 0


def default_report_dir(store: str | Path) -> Path:
    """Beside the store: ``out/results.sqlite`` -> ``out/results-report``."""
    store = Path(store)
    return store.with_name(f"{store.stem}-report")


def _demo(args: argparse.Namespace) -> int:
    from energyopt.bench.demo import run

    out = run(
        args.out,
        jobs=args.jobs,
        progress=show_progress(args),
        recompute_stale=args.recompute_stale,
    )
    # A contradiction (an objective below a proven bound) is a bug somewhere: fail loudly.
    return 1 if out["report_data"].bugs else 0
