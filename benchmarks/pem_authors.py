"""Against the Perseus authors' published results, case by case, in their units.

    python benchmarks/pem_authors.py [--data DIR]
        [--sections frontier,table6,bound,fits,emulated,envpipe]
        [--max-m M] [--fit-times K] [--emulated-m M] [--units U,U] [--seeds S ...]
        [--time-scale X] [--energy-scale X] [--noise X] [--copy-gpu GPU]

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
``bound``
    Both frontiers against the proven bound, in their units: the convex-hull
    relaxation's bound curve (``bound_curve``) on the floored instance at each of
    their planned times (blocking up to that time). ``ours %``: our energy there
    (as in ``frontier``) over the bound, minus 1, max and median; ``theirs %``:
    their file's, min and median. A frontier whose gap is smaller than ours
    anywhere could beat ours there; theirs never is (not in the default sections:
    one bound curve per case, about 25 s of CPU on 8 x 96).
``fits``
    The crawl's two ways from the LP's durations to clocks
    (``ClockFitter.fit_rows``, ``fit_down_rows``) on the floored instance, at
    ``--fit-times`` times evenly over their frontier's range, with the relaxation's
    durations at each: how much cheaper each plan is than the other at best (energy
    with blocking up to the time), and where (not in the default sections).
``emulated``
    The same comparison on profiles we have no authors' frontier for: simulated
    copies of each published profile (times x ``--time-scale``, energies x
    ``--energy-scale``, each value x (1 +- ``--noise``), seeds ``--seeds``, the
    blocking power of ``--copy-gpu``, A40's 70.38 W by default), at
    ``--emulated-m`` microbatches and the units ``--units``. Their frontier is
    emulated as the published ones were made: lowtime 0.3.0 on the options Pareto-
    optimal in (time, raw energy), its reported cost plus blocking (on the A100 files
    this gives their exact times and energies within 0.11 %: the ``lowtime`` row of
    each case, 1 ms). Needs lowtime installed (``.venv/bin/pip install
    lowtime==0.3.0``); skipped otherwise. Not in the default sections.
``envpipe``
    ``envpipe`` (EnvPipe's own planner, default) against their EnvPipe result file:
    the file's time and energy over ours (10 and 80 on A100, the same in every row).
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import energyopt
from energyopt.core.table import format_table
from energyopt.pipeline import evaluate, instance_from_perseus_profile
from energyopt.pipeline.crawl.clockfit import ClockFitter
from energyopt.pipeline.evaluator import fastest_choice, uniform_clock_choice
from energyopt.pipeline.options import OptionTable
from energyopt.pipeline.reference import (
    PublishedFrontier,
    compare_with_frontier,
    crawl_on_their_input,
    energy_at_horizon,
    floored_instance,
    planned_frontier,
    published_cases,
    read_perseus_frontier,
)
from energyopt.pipeline.relaxation.hull import HullRelaxation, bound_curve

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


def bound_row(case, inst, ref, plans):
    """Our and their gaps to the relaxation's bound on the floored instance, at their times."""
    comp = compare_with_frontier(inst, plans, ref)
    tick = time.process_time()
    lb = bound_curve(floored_instance(inst, ref.unit_s)).energy_bounds(ref.time_s)
    cpu = time.process_time() - tick
    ours, theirs = comp.ours / lb - 1, ref.energy_j / lb - 1
    return [
        case.model,
        case.gpu,
        case.num_microbatches,
        f"{100 * np.nanmax(ours):.3f}",
        f"{100 * np.nanmedian(ours):.3f}",
        f"{100 * np.nanmin(theirs):.3f}",
        f"{100 * np.nanmedian(theirs):.3f}",
        f"{cpu:.1f}",
    ]


def fits_row(case, count):
    """The two clock fittings of the same LP durations, each against the other, at best."""
    inst = instance_from_perseus_profile(case.profile, case.num_microbatches, gpu=case.gpu)
    ref = read_perseus_frontier(case.frontier)
    fl = floored_instance(inst, ref.unit_s)
    relax, fitter = HullRelaxation(fl), ClockFitter(fl)
    blocking = fl.p_blocking_w * fl.num_stages
    times = np.linspace(ref.time_s.min(), ref.time_s.max(), count)
    energies = []
    for T in times:
        _, d = relax.solve(float(T))
        row = []
        for fit in (fitter.fit_rows, fitter.fit_down_rows):
            pos, _ = fit(np.ascontiguousarray(d[fitter.order][:, None]))
            plan = np.empty((1, fl.num_computations), dtype=np.int16)
            fitter.option_rows(pos, plan)
            ev = evaluate(fl, tuple(int(k) for k in plan[0]), None)
            row.append(ev.energy_j + blocking * (T - ev.iteration_time_s))
        energies.append(row)
    e = np.array(energies)
    down, first = e[:, 0] / e[:, 1] - 1, e[:, 1] / e[:, 0] - 1
    k, j = int(np.argmax(down)), int(np.argmax(first))
    return [
        case.model,
        case.gpu,
        case.num_microbatches,
        f"{100 * down[k]:.3f}",
        f"{times[k]:.3f}",
        f"{100 * first[j]:.3f}",
        f"{times[j]:.3f}",
    ]


def raw_pareto(inst):
    """``inst`` with only the options Pareto-optimal in (time, raw energy), as lowtime's input.

    The slowest clocks cost more raw energy than faster ones, so they drop out: the
    published frontiers end where that option set's slowest plan does.
    """
    tables = {}
    for name, tb in inst.tables.items():
        keep, best = [], math.inf
        for t, e, f in sorted(zip(tb.time_s, tb.energy_j, tb.sm_clock_mhz)):
            if e < best:
                keep.append((f, t, e))
                best = e
        clocks, times, energies = zip(*keep)
        tables[name] = OptionTable(clocks, times, energies)
    return dataclasses.replace(inst, tables=tables)


def _pem_crawl():
    """``benchmarks/pem_crawl.py``, the lowtime runner (imported once, from this folder)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    import pem_crawl

    return pem_crawl


def emulated_frontier(inst, unit_s: float) -> tuple[PublishedFrontier, str]:
    """lowtime's frontier as the published files hold it: planned time, reported energy."""
    lt = _pem_crawl().run_lowtime(raw_pareto(inst), unit_s)
    t = np.rint(lt["reported_time_s"] / unit_s) * unit_s
    e = lt["reported_cost_j"] + inst.p_blocking_w * inst.num_stages * lt["reported_time_s"]
    return PublishedFrontier(t, e, unit_s, "lowtime 0.3.0 (emulated)"), lt["stopped"]


def scaled_copy(case, folder: Path, seed: int, args) -> Path:
    """A simulated copy of the case's profile: scaled, each value x (1 +- noise)."""
    df = pd.read_csv(case.profile)
    rng = np.random.default_rng(seed)
    for col, scale in (("time", args.time_scale), ("energy", args.energy_scale)):
        df[col] = df[col] * scale * (1 + rng.uniform(-args.noise, args.noise, len(df)))
    out = folder / f"{seed}" / case.profile.name
    out.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(out, index=False)
    return out


def emulated_rows(cases, args) -> list[list]:
    """Each published profile and its simulated copies against lowtime's emulated frontier."""
    rows = []
    units = [float(u) for u in args.units.split(",")]
    profiles = {(c.model, c.gpu): c for c in cases}
    with tempfile.TemporaryDirectory() as tmp:
        for (model, gpu), case in profiles.items():
            M = args.emulated_m
            sources = [("file", case.profile, 1e-3)]
            sources += [
                (f"copy, seed {sd} (simulated)", scaled_copy(case, Path(tmp), sd, args), u)
                for sd in args.seeds
                for u in units
            ]
            for label, profile, unit in sources:
                copy_gpu = gpu if label == "file" else args.copy_gpu
                inst = instance_from_perseus_profile(profile, M, gpu=copy_gpu)
                ref, stopped = emulated_frontier(inst, unit)
                check = "-"
                published = case.frontier.with_name(f"frontier_{model}_{gpu}_mb{M}.csv")
                if label == "file" and published.exists():
                    theirs = read_perseus_frontier(published)
                    at = {int(k): e for k, e in zip(theirs.units, theirs.energy_j)}
                    same = [(e, at[k]) for k, e in zip(ref.units, ref.energy_j) if k in at]
                    dev = max(abs(a / b - 1) for a, b in same)
                    check = f"{len(same)}/{len(theirs.units)} times, {100 * dev:.3f} %"
                ex = compare_with_frontier(inst, crawl_on_their_input(inst, ref), ref).excess
                rows.append([model, gpu, M, label, f"{unit:g}", len(ref.units), check,
                             f"{100 * ex.max():+.4f}", f"{int((ex > 0).sum())}/{len(ex)}",
                             stopped or "-"])  # fmt: skip
                print(f"  done {model} {label} unit {unit:g}", flush=True)
    return rows


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


FRONTIER_HEAD = ["model", "gpu", "M", "unit s", "their T0", "T0 floored", "our T0", "offset ms",
                 "max %", "median %", "above", "crawl CPU s"]  # fmt: skip
TABLE6_HEAD = ["model", "gpu", "M", "paper %", "theirs %", "our T0 planned", "ours %",
               "ours-paper"]  # fmt: skip
BOUND_HEAD = ["model", "gpu", "M", "ours max %", "ours median %", "theirs min %",
              "theirs median %", "curve CPU s"]  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sections", default="frontier,table6,envpipe")
    ap.add_argument("--max-m", type=int, default=None, help="only cases with M at most this")
    ap.add_argument("--fit-times", type=int, default=41, help="times per case in 'fits'")
    ap.add_argument("--emulated-m", type=int, default=12, help="microbatches in 'emulated'")
    ap.add_argument("--units", default="0.001,0.0001", help="units (s) of 'emulated' copies")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2], help="copies' seeds")
    ap.add_argument("--time-scale", type=float, default=1.6, help="copies' time factor")
    ap.add_argument("--energy-scale", type=float, default=1.2, help="copies' energy factor")
    ap.add_argument("--noise", type=float, default=0.03, help="copies' relative noise")
    ap.add_argument("--copy-gpu", default="a40", help="copies' blocking-power preset")
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
    f_rows, t_rows, b_rows = [], [], []
    if sections & {"frontier", "table6", "bound"}:
        for case in cases:
            inst, ref, plans, cpu = case_run(case)
            f_rows.append(frontier_row(case, inst, ref, plans, cpu))
            t_rows.append(table6_row(case, inst, ref, plans))
            if "bound" in sections:
                b_rows.append(bound_row(case, inst, ref, plans))
            print(f"  done {case.model} {case.gpu} M={case.num_microbatches}", flush=True)
    tables = [
        ("frontier", "frontier (their units)", FRONTIER_HEAD, f_rows),
        ("table6", "table6 (authors' convention)", TABLE6_HEAD, t_rows),
        ("bound", "bound (gap to the relaxation's bound on the floored instance, at their times)",
         BOUND_HEAD, b_rows),
    ]  # fmt: skip
    for name, title, head, rows in tables:
        if name in sections:
            print(f"== {title}")
            print(format_table(head, rows))
    if "fits" in sections:
        print("== fits (each fitting's plan cheaper than the other's, at best, and where)")
        head = [
            "model",
            "gpu",
            "M",
            "fit_down_rows cheaper %",
            "at s",
            "fit_rows cheaper %",
            "at s",
        ]
        rows = [fits_row(c, args.fit_times) for c in cases]
        print(format_table(head, rows))
    if "emulated" in sections:
        if _pem_crawl().lowtime_version() is None:
            print("== emulated: lowtime is not installed (.venv/bin/pip install lowtime==0.3.0)")
        else:
            rows = emulated_rows(cases, args)
            print("== emulated (lowtime's frontier as published; ours over it, max)")
            head = ["model", "gpu", "M", "profile", "unit s", "their points"]
            head += ["emulation vs file", "max %", "above", "lowtime stopped"]
            print(format_table(head, rows))
    if "envpipe" in sections:
        print("== envpipe (file / ours; ours x 80 against the file)")
        head = ["model", "gpu", "M", "T ratio", "E ratio", "authors planner %", "paper planner %"]
        print(format_table(head, envpipe_rows(cases)))


if __name__ == "__main__":
    main()
