"""``energyopt bench``, ``energyopt report`` and ``energyopt instances``."""

from __future__ import annotations

import argparse
import functools
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from energyopt.bench.cells import DEFAULT_GRACE_S
from energyopt.bench.families import SUITE_NAMES


def _one_line_errors(fn: Callable[[argparse.Namespace], int]) -> Callable[..., int]:
    """Turn file-system and SQLite errors into the CLI's one-line ``ValueError``."""

    @functools.wraps(fn)
    def wrapper(args: argparse.Namespace) -> int:
        try:
            return fn(args)
        except sqlite3.Error as exc:
            # Name the file: a page-level corruption surfaces here, far from the open.
            where = getattr(args, "store", None) or "results store"
            raise ValueError(f"{where}: {exc}") from None
        except (IsADirectoryError, PermissionError, NotADirectoryError) as exc:
            raise ValueError(f"{exc.filename}: {exc.strerror}") from None

    return wrapper


def register(sub: Any) -> None:
    p = sub.add_parser(
        "bench",
        help="solve a suite or instance files with several methods and seeds, in parallel",
        description="Every (instance, method, seed) cell runs in its own process under the "
        "time limit; each finished cell is committed to the store at once, and a restarted "
        "run skips the cells already there.",
    )
    p.add_argument("files", nargs="*", help="instance JSON files (any family), besides --suite")
    p.add_argument("--suite", help=f"suite of every family that has one ({', '.join(SUITE_NAMES)})")
    p.add_argument("--family", action="append", help="only this family (repeatable)")
    p.add_argument(
        "--methods", nargs="+", metavar="METHOD", help="method names (default: all of each family)"
    )
    p.add_argument("--seeds", nargs="+", type=int, default=[0], metavar="SEED")
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
        "--allow-failures",
        action="store_true",
        help="exit 0 even when cells failed or were killed (they are listed either way)",
    )
    p.add_argument(
        "--option",
        "-o",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="option for every method (VALUE parsed as JSON when it can be)",
    )
    p.add_argument(
        "--plugin", action="append", default=[], help="module to import first (extra methods)"
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=_bench)

    p = sub.add_parser("report", help="gap report (HTML, Markdown, CSV, plots) from a store")
    p.add_argument("store", help="SQLite results store written by 'energyopt bench'")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=_report)

    p = sub.add_parser("instances", help="the instance library: generate, verify, update-index")
    isub = p.add_subparsers(dest="instances_command", metavar="ACTION", required=True)
    for name, fn, text in (
        ("generate", _generate, "write the library from the families' suites"),
        ("verify", _verify, "check the library byte for byte against the suites"),
    ):
        q = isub.add_parser(name, help=text)
        q.add_argument("--root", default="instances", help="library directory (default instances)")
        q.add_argument("--family", action="append", help="only this family (repeatable)")
        q.add_argument(
            "--suite", action="append", choices=SUITE_NAMES, help="only this suite (repeatable)"
        )
        q.set_defaults(func=fn)
    q = isub.add_parser(
        "update-index", help="best known objective and bound per instance from results stores"
    )
    q.add_argument("stores", nargs="+", help="results stores")
    q.add_argument("--root", default="instances")
    q.set_defaults(func=_update_index)


@_one_line_errors
def _bench(args: argparse.Namespace) -> int:
    from energyopt.bench.runner import plan_cells, run_bench
    from energyopt.commands import _parse_options

    cells = plan_cells(
        suite=args.suite,
        files=args.files,
        families=args.family,
        methods=args.methods,
        seeds=args.seeds,
        time_limit_s=args.time_limit,
        options=_parse_options(args.option),
        plugins=args.plugin,
        grace_s=args.grace,
    )
    if args.jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {args.jobs}")
    summary = run_bench(
        cells,
        args.store,
        jobs=args.jobs,
        executor=args.executor,
        scheduler=args.scheduler,
        retry_failed=args.retry_failed,
        progress=not args.no_progress,
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


@_one_line_errors
def _report(args: argparse.Namespace) -> int:
    from energyopt.bench.report import make_report
    from energyopt.core.table import format_table

    report = make_report(args.store, args.out, plots=not args.no_plots)
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
    print(f"report written to {args.out}/index.html and {args.out}/summary.md")
    return 1 if report.bugs else 0


@_one_line_errors
def _generate(args: argparse.Namespace) -> int:
    from energyopt.bench.library import generate

    files = generate(args.root, args.family, args.suite or SUITE_NAMES)
    fams = sorted({f.family for f in files})
    print(
        f"wrote {len(files)} instance files under {args.root}/ "
        f"({', '.join(fams) or 'no family has suites yet'})"
    )
    return 0


@_one_line_errors
def _verify(args: argparse.Namespace) -> int:
    from energyopt.bench.library import gap_distribution, verify

    if not Path(args.root).is_dir():
        raise FileNotFoundError(f"{args.root}: no such library directory")
    problems = verify(args.root, args.family, args.suite or SUITE_NAMES)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"{args.root}: {len(problems)} problem(s)")
        return 1
    print(f"{args.root}: library matches the suites byte for byte")
    for line in gap_distribution(args.root):
        print(f"  {line}")
    return 0


@_one_line_errors
def _update_index(args: argparse.Namespace) -> int:
    from energyopt.bench.library import update_index

    changed, conflicts = update_index(args.root, args.stores)
    print(f"{changed} index row(s) improved")
    for line in conflicts:
        print(f"CONTRADICTION (a bug), row left unchanged: {line}", file=sys.stderr)
    return 1 if conflicts else 0
