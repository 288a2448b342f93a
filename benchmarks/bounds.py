"""Proven gaps of the paper suites: best objective, best bound, and who proved each.

Runs the chosen methods on every ``paper`` instance of every family (or of
``--family``) through the batch runner (one process per cell, each within
``--time-limit``), into a results store; prints per instance the best objective,
the best proven bound, their gap, the method and the runtime behind each; and,
unless ``--no-update``, takes the best values into ``instances/index.csv``.

A bound <= 0 below a positive objective is no bound: the table says
"no useful bound" instead of showing a 100 % gap.

    .venv/bin/python benchmarks/bounds.py --family pipeline --time-limit 300 \\
        --methods highs relaxation-rounding perseus
    .venv/bin/python benchmarks/bounds.py --family pipeline --methods lns \\
        --instance "synthetic 1f1b 8x48" --time-limit 600

Without ``--methods`` every method each family registers as exact runs, plus the
methods that report a bound as heuristics do (``relaxation-rounding``, ``lns``).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from energyopt.bench.families import families_with_suites
from energyopt.bench.library import update_index
from energyopt.bench.runner import plan_cells, run_bench
from energyopt.bench.store import ResultsStore
from energyopt.core.gap import gap
from energyopt.core.registry import methods as registered

ROOT = Path(__file__).resolve().parents[1]
#: Heuristics that also prove a bound (and so belong in a bounds run by default).
BOUNDING_HEURISTICS = ("relaxation-rounding", "lns")


def default_methods(families: list[str]) -> list[str]:
    """Every exact method of ``families``, and the heuristics that prove bounds."""
    names: set[str] = set()
    for family in families:
        for name, m in registered(family).items():
            if m.exact or name in BOUNDING_HEURISTICS:
                names.add(name)
    return sorted(names)


def best_per_instance(store: Path) -> list[dict]:
    """Per (family, instance): best objective and best useful bound with their methods."""
    best: dict[tuple[str, str], dict] = {}
    with ResultsStore(store) as st:
        cols = ["family", "instance_id", "instance_name", "method", "status", "objective"]
        for c in st.rows([*cols, "bound", "runtime_s"]):
            row = best.setdefault(
                (c["family"], c["instance_id"]),
                {"family": c["family"], "name": c["instance_name"], "obj": None, "bnd": None},
            )
            if c["status"] in ("optimal", "feasible") and c["objective"] is not None:
                if row["obj"] is None or c["objective"] < row["obj"]:
                    row.update(obj=c["objective"], obj_method=c["method"], obj_s=c["runtime_s"])
            b = c["bound"]
            if b is not None and (b > 0 or c["objective"] == 0):
                if row["bnd"] is None or b > row["bnd"]:
                    row.update(bnd=b, bnd_method=c["method"], bnd_s=c["runtime_s"])
    return sorted(best.values(), key=lambda r: (r["family"], r["name"]))


def print_table(rows: list[dict]) -> None:
    print(
        f"{'family':9} {'instance':40} {'objective':>14} {'by':20} {'bound':>14} {'by':20} "
        f"{'gap':>9} {'t_obj_s':>8} {'t_bnd_s':>8}"
    )
    gaps: dict[str, list[float]] = {}
    for r in rows:
        g = gap(r["obj"], r["bnd"])
        gaps.setdefault(r["family"], []).append(g)
        bound = "no useful bound" if r["bnd"] is None else f"{r['bnd']:.6g}"
        obj = "none" if r["obj"] is None else f"{r['obj']:.6g}"
        print(
            f"{r['family']:9} {r['name'][:40]:40} {obj:>14} {r.get('obj_method', '-'):20} "
            f"{bound:>14} {r.get('bnd_method', '-'):20} "
            f"{'-' if g is None else f'{100 * g:.3f}%':>9} {r.get('obj_s') or 0:8.1f} "
            f"{r.get('bnd_s') or 0:8.1f}"
        )
    for family, gs in gaps.items():
        known = [g for g in gs if g is not None]
        line = f"{family}: {len(gs)} instances, {len(gs) - len(known)} without a useful bound"
        if known:
            line += (
                f"; gap max {100 * max(known):.3f}%, median {100 * statistics.median(known):.3f}%"
            )
        print(line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", action="append", help="only this family (repeatable)")
    ap.add_argument("--methods", nargs="+", help="methods to run (default: see above)")
    ap.add_argument("--time-limit", type=float, default=120.0, help="seconds per cell")
    ap.add_argument("--jobs", type=int, default=1, help="cells at once")
    ap.add_argument(
        "--instance",
        action="append",
        metavar="TEXT",
        help="only instances whose name contains TEXT (repeatable)",
    )
    ap.add_argument("--store", default="out/bounds.sqlite", help="results store")
    ap.add_argument("--no-update", action="store_true", help="leave instances/index.csv alone")
    args = ap.parse_args(argv)
    families = families_with_suites(args.family)
    methods = args.methods or default_methods(families)
    cells = [
        c
        for c in plan_cells(
            suite="paper", families=families, methods=None, time_limit_s=args.time_limit
        )
        if c.method in methods
        and (not args.instance or any(t in c.instance_name for t in args.instance))
    ]
    Path(args.store).parent.mkdir(parents=True, exist_ok=True)
    print(f"{len(cells)} cells: {', '.join(methods)}; {args.time_limit:g} s each", flush=True)
    run_bench(cells, args.store, jobs=args.jobs, progress=False, argv=sys.argv)
    print_table(best_per_instance(Path(args.store)))
    if not args.no_update:
        changed, conflicts = update_index(ROOT / "instances", [args.store])
        print(f"instances/index.csv: {changed} rows improved")
        for c in conflicts:
            print("CONTRADICTION:", c)
        return 1 if conflicts else 0
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
