"""HiGHS' presolve probing under a time limit: the exact HiGHS methods with it on and off.

Usage::

    .venv/bin/python benchmarks/highs_probing.py [--time-limit 10] [--suite paper]
        [--every 3]

energyopt switches probing off whenever HiGHS gets a time limit
(:data:`energyopt.core.highslp.PROBING_OFF`: in HiGHS 1.12 probing does not read the
clock). This runs each family's HiGHS method (capacity, powercap, pipeline ``highs``)
on the committed instances of ``--suite`` (every ``--every``-th capacity instance) twice
in this process, probing off (energyopt's setting) and on (HiGHS' default), and prints
wall-clock seconds, termination, objective, bound and gap side by side. A second table
gives the seconds past the time limit of both with ``--overrun-limit`` (1 s) on the
instances where probing is longest (the 50- and 100-node capacity points).
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import energyopt
from energyopt.core import highslp
from energyopt.core.highs import highs_version
from energyopt.core.instance import load_instance
from energyopt.core.table import format_table

ROOT = Path(__file__).resolve().parents[1]


def run(path: Path, method: str, time_limit: float, probing: bool) -> list:
    """One solve; the HiGHS setting is switched through the module constant."""
    highslp.PROBING_OFF, saved = (0 if probing else highslp.PROBING_OFF), highslp.PROBING_OFF
    try:
        tick = time.perf_counter()
        res = energyopt.solve(load_instance(path), method, time_limit=time_limit)
        wall = time.perf_counter() - tick
    finally:
        highslp.PROBING_OFF = saved
    gap = "-" if res.gap is None else f"{100 * res.gap:.3f} %"
    return [f"{wall:.2f}", str(res.termination), f"{res.objective}", f"{res.bound}", gap]


def cases(suite: str, every: int) -> list[tuple[Path, str]]:
    """(instance file, method) pairs: each family's HiGHS MILP method."""
    out = [(p, "highs") for p in sorted((ROOT / "instances/capacity" / suite).glob("*.json"))]
    out = out[::every]
    for family in ("powercap", "pipeline"):
        out += [(p, "highs") for p in sorted((ROOT / "instances" / family / suite).glob("*.json"))]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("--overrun-limit", type=float, default=1.0)
    ap.add_argument("--suite", default="paper")
    ap.add_argument("--every", type=int, default=3)
    ap.add_argument("--max-stages-x-microbatches", type=int, default=8 * 24)
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    print(f"energyopt {energyopt.__version__}; HiGHS {highs_version()}")
    head = ["instance", "wall off", "termination off", "objective off", "bound off", "gap off"]
    head += ["wall on", "termination on", "objective on", "bound on", "gap on"]
    rows = []
    for path, method in cases(args.suite, args.every):
        inst = load_instance(path)
        size = getattr(inst, "num_stages", 0) * getattr(inst, "num_microbatches", 0)
        if size > args.max_stages_x_microbatches:
            continue
        off = run(path, method, args.time_limit, probing=False)
        on = run(path, method, args.time_limit, probing=True)
        rows.append([f"{path.parent.parent.name}/{path.stem}", *off, *on])
    print(f"\nTime limit {args.time_limit} s, probing off (energyopt) and on (HiGHS' default)")
    print(format_table(head, rows))
    over = []
    big = sorted((ROOT / "instances/capacity" / args.suite).glob("*.json"))
    for path in [p for p in big if "-n50-" in p.name or "-n100-" in p.name]:
        secs = [float(run(path, "highs", args.overrun_limit, p)[0]) for p in (False, True)]
        over.append([path.stem, *(f"{s - args.overrun_limit:+.2f}" for s in secs)])
    print(f"\nSeconds past a {args.overrun_limit} s limit, capacity `highs`")
    print(format_table(["instance", "probing off", "probing on"], over))


if __name__ == "__main__":
    main()
