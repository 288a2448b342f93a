"""Against the Perseus authors' published results, case by case, in their units.

    python benchmarks/pem_authors.py [--data DIR] [--sections frontier,table6,envpipe] [--max-m M]

Reads every case of ``DIR`` (default ``../shared/data/perseus-sosp24``) by the
artifact's file names (``energyopt.pipeline.reference.published_cases``): any
model, GPU and microbatch count; the time unit comes from each frontier file.

``frontier``
    Why their fastest point is faster than ours, and the frontiers in their units.
    ``their T0``: their fastest planned time; ``T0 floored``: the makespan of every
    computation at its fastest option with durations floored to the unit, as
    lowtime plans (equal to ``their T0`` when quantisation is the whole offset);
    ``our T0``: the default crawl's fastest measured makespan on the profile.
    Then the default crawl (``perseus``, tau = the unit) run on the floored instance
    (lowtime's input), its plans scored as the file scores its own (planned time, energy with
    blocking for the planned idle time): at each of their points our least energy at
    or before their time; ``max %`` / ``median %``: ours over theirs minus 1, and
    the points above theirs.
``table6``
    Perseus Table 6 with the authors' convention: the all-maximum-clock baseline
    charged blocking power only up to the frontier's fastest time. ``theirs``: from
    their file; ``ours``: the floored crawl's fastest point, same baseline.
``envpipe``
    ``envpipe`` (EnvPipe's own planner, default) against their EnvPipe result file:
    the file's time and energy over ours (10 and 80 on A100, the same in every row).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd

import energyopt
from energyopt.core.table import format_table
from energyopt.pipeline import evaluate, instance_from_perseus_profile
from energyopt.pipeline.evaluator import fastest_choice, uniform_clock_choice
from energyopt.pipeline.reference import (
    compare_with_frontier,
    crawl_on_their_input,
    energy_at_horizon,
    planned_frontier,
    published_cases,
    read_perseus_frontier,
)

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "perseus-sosp24"
#: Perseus Table 6 (%), by (model, GPU) and microbatch count.
TABLE6 = {
    ("gpt3-175b", "a100_sxm"): {12: 15.20, 24: 14.19, 48: 13.62, 96: 13.32},
    ("bloom", "a100_sxm"): {12: 10.47, 24: 7.06, 48: 5.23, 96: 4.28},
    ("gpt3-175b", "a40"): {12: 11.81, 24: 10.22, 48: 9.34, 96: 8.88},
    ("bloom", "a40"): {12: 6.97, 24: 4.49, 48: 3.12, 96: 2.41},
}


def max_clock(inst) -> int:
    return max(max(c for c in inst.options(i).sm_clock_mhz) for i in range(len(inst.computations)))


def case_run(case):
    """The instance, their frontier, and the default crawl on the floored instance."""
    inst = instance_from_perseus_profile(case.profile, case.num_microbatches, gpu=case.gpu)
    ref = read_perseus_frontier(case.frontier)
    tick = time.process_time()
    plans = crawl_on_their_input(inst, ref)
    return inst, ref, plans, time.process_time() - tick


def frontier_row(case, inst, ref, plans, cpu):
    comp = compare_with_frontier(inst, plans, ref)
    ex = comp.excess
    fast = fastest_choice(inst).choice
    t0_floor, _ = planned_frontier(inst, np.array([fast]), ref.unit_s)
    t0 = evaluate(inst, fast, None).iteration_time_s
    return [
        case.model,
        case.gpu,
        case.num_microbatches,
        f"{ref.unit_s:g}",
        f"{ref.time_s.min():.4f}",
        f"{t0_floor[0] * ref.unit_s:.4f}",
        f"{t0:.4f}",
        f"{1000 * (t0 - ref.time_s.min()):.1f}",
        f"{100 * ex.max():+.4f}",
        f"{100 * np.median(ex):+.3f}",
        f"{int((ex > 0).sum())}/{len(ex)}",
        f"{cpu:.1f}",
    ]


def table6_row(case, inst, ref, plans):
    """Savings with the authors' convention: baseline blocking up to the fastest time."""
    base_choice = uniform_clock_choice(inst, max_clock(inst)).choice
    k = int(np.argmin(ref.time_s))
    theirs = 1 - ref.energy_j[k] / energy_at_horizon(inst, base_choice, float(ref.time_s[k]))
    units, energy = planned_frontier(inst, plans, ref.unit_s)
    j = int(np.lexsort((energy, units))[0])  # our fastest planned point, its least energy
    t_ours = float(units[j]) * ref.unit_s
    ours = 1 - energy[j] / energy_at_horizon(inst, base_choice, t_ours)
    paper = TABLE6.get((case.model, case.gpu), {}).get(case.num_microbatches)
    return [
        case.model,
        case.gpu,
        case.num_microbatches,
        "-" if paper is None else f"{paper:.2f}",
        f"{100 * theirs:.2f}",
        f"{t_ours:.4f}",
        f"{100 * ours:.2f}",
        "-" if paper is None else f"{100 * ours - paper:+.2f}",
    ]


def envpipe_rows(cases) -> list[list]:
    rows = []
    for case in cases:
        if case.envpipe is None:
            continue
        ref = pd.read_csv(case.envpipe).set_index("num_microbatches")
        if case.num_microbatches not in ref.index:
            continue
        inst = instance_from_perseus_profile(case.profile, case.num_microbatches, gpu=case.gpu)
        row = ref.loc[case.num_microbatches]
        res = energyopt.solve(inst, "envpipe")
        paper = energyopt.solve(inst, "envpipe", planner="paper")
        rows.append(
            [
                case.model,
                case.gpu,
                case.num_microbatches,
                f"{row.iteration_time / res.extra['iteration_time_s']:.5f}",
                f"{row.energy / res.objective:.5f}",
                f"{100 * (80 * res.objective / row.energy - 1):+.5f}",
                f"{100 * (80 * paper.objective / row.energy - 1):+.3f}",
            ]
        )
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sections", default="frontier,table6,envpipe")
    ap.add_argument("--max-m", type=int, default=None, help="only cases with M at most this")
    args = ap.parse_args()
    cases = [
        c
        for c in published_cases(args.data)
        if args.max_m is None or c.num_microbatches <= args.max_m
    ]
    if not cases:
        print(f"{args.data}: no published cases, skipped")
        return
    sections = set(args.sections.split(","))
    f_rows, t_rows = [], []
    if sections & {"frontier", "table6"}:
        for case in cases:
            inst, ref, plans, cpu = case_run(case)
            f_rows.append(frontier_row(case, inst, ref, plans, cpu))
            t_rows.append(table6_row(case, inst, ref, plans))
            print(f"  done {case.model} {case.gpu} M={case.num_microbatches}", flush=True)
    if "frontier" in sections:
        print("== frontier (their units)")
        head = ["model", "gpu", "M", "unit s", "their T0", "T0 floored", "our T0", "offset ms"]
        head += ["max %", "median %", "above", "crawl CPU s"]
        print(format_table(head, f_rows))
    if "table6" in sections:
        print("== table6 (authors' convention)")
        head = [
            "model",
            "gpu",
            "M",
            "paper %",
            "theirs %",
            "our T0 planned",
            "ours %",
            "ours-paper",
        ]
        print(format_table(head, t_rows))
    if "envpipe" in sections:
        print("== envpipe (file / ours; ours x 80 against the file)")
        head = ["model", "gpu", "M", "T ratio", "E ratio", "authors planner %", "paper planner %"]
        print(format_table(head, envpipe_rows(cases)))


if __name__ == "__main__":
    main()
