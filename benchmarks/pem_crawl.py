"""Perseus frontier crawl: speed beside the authors' ``lowtime``, quality against the authors.

    .venv/bin/python benchmarks/pem_crawl.py [--quick] [--no-lowtime]
        [--sections speed,table6,reference,exact,gaps] [--variants default,both]
        [--profile FILE (--p-blocking W | --gpu a100|a40)] [--frontier M=FILE ...]
        [--repeats 3] [--lowtime-repeats 3] [--baseline-rev ed733db]
    .venv/bin/python benchmarks/pem_crawl.py --profile FILE --write-noisy-profile OUT
        [--noise 0.02] [--seed 0]

The profile defaults to GPT-3 175B on A100 (``../shared/data/perseus-sosp24``, 83.64 W)
with the authors' 12 and 24 microbatch frontier files; ``--profile`` takes any stage
profile in the Perseus format, ``--frontier`` any frontier file of theirs.

Sections:

``speed``
    Identical DAGs and options, tau = 1 ms: synthetic 1F1B 4 x 8 and 8 x 16 with
    10 clocks (``synthetic_instance``, seed 0, simulated) and the profile at 8 x 12
    and 8 x 96 (``--speed-microbatches``). ``energyopt.solve(inst, "perseus",
    **variant)`` with its defaults (``--variants``: default, both = cost_model
    "both", grid = crawl "grid"), ``--repeats`` runs, CPU median / minimum; the
    default call of the revision ``--baseline-rev`` in a subprocess (synthetic rows
    and ``--baseline-microbatches``); lowtime 0.3.0 (exponential model; CPU clock
    after its imports; its starting plan counted) on rows up to
    ``--lowtime-max-mb`` microbatches. Every plan of both is scored with the
    evaluator; the quality columns compare, at each lowtime / baseline plan's
    measured makespan, our frontier's energy.
``table6``
    Perseus Table 6 (8 stages, 1F1B): saving of the crawl's fastest point against
    every computation at the highest clock, for 12, 24, 48, 96 microbatches, beside
    the paper's (default profile only); with EnvPipe and the Zeus baselines at the
    same (no-slowdown) iteration time.
``reference``
    Our frontier against the authors' frontier files, aligned and strict.
``exact``
    The profile at 8 x 12 at the all-f_max iteration time and 10 % above it: the
    crawl against the HiGHS MILP (``highs``, ``--exact-time-limit`` seconds), with
    its proven bound.
``repair``
    The default (both end repairs of :mod:`energyopt.pipeline.crawl.repair`) and
    ``repair=False`` against lowtime (one run each) on the benchmark rows, two noisy
    copies of the profile (``--noise``, seeds 1 and 2, 12 microbatches; simulated), the
    profile at ``--repair-microbatches`` (default 12; 96 costs lowtime about 40 minutes
    of CPU) and two synthetic instances where the crawl had lost; not in the default
    ``--sections``.
``gaps``
    Gaps to the exact optimum (brute force) on random 7-computation DAGs and on
    synthetic 1F1B 2 x 2 (4 clocks): at the instance deadline, and over every
    frontier point at its own iteration time.

``lowtime`` is not a dependency of energyopt: install it into the virtual
environment for this benchmark only (``.venv/bin/pip install lowtime==0.3.0``);
without it the lowtime columns are skipped with a message.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

import energyopt
from energyopt.core.instance import InstanceError
from energyopt.core.table import format_table
from energyopt.pipeline import (
    PemSolution,
    best_at,
    evaluate,
    instance_from_perseus_profile,
    random_dag_instance,
    synthetic_instance,
)
from energyopt.pipeline.evaluator import uniform_clock_choice
from energyopt.pipeline.exact.bruteforce import brute_force
from energyopt.pipeline.instance import PemInstance
from energyopt.pipeline.readers import blocking_power

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "perseus-sosp24"
PROFILE = DATA / "gpt3-175b+a100_sxm_bf16.csv"
PB = 83.64
TABLE6 = {12: 15.20, 24: 14.19, 48: 13.62, 96: 13.32}


def lowtime_version() -> str | None:
    try:
        from importlib.metadata import version

        import lowtime  # noqa: F401

        return version("lowtime")
    except Exception:  # any import problem means "not available"
        return None


def run_lowtime(instance: PemInstance, tau_s: float = 1e-3) -> dict:
    """Crawl with lowtime; return reported (time, cost) per iteration and the plans.

    lowtime 0.3.0's Rust core panics on some inputs ("Max flow on unbounded DAG didn't
    saturate", seen at a 0.1 ms unit on noisy profiles): the iterations reported
    until then are returned, with the reason under ``"stopped"`` (empty otherwise).
    """
    from lowtime.cost_model import ExponentialModel
    from lowtime.operation import (
        CandidateExecutionOptions,
        DummyOperation,
        ExecutionOption,
        Operation,
        OperationSpec,
    )
    from lowtime.solver import PhillipsDessouky

    logging.getLogger("lowtime").setLevel(logging.WARNING)
    tick, ctick = time.perf_counter(), time.process_time()  # after lowtime's imports
    pb = instance.p_blocking_w
    specs = {}
    for name, table in instance.tables.items():
        opts = [
            ExecutionOption(real_time=t, unit_time=tau_s, cost=e - pb * t, knob=k)
            for k, (t, e) in enumerate(zip(table.time_s, table.energy_j))
        ]
        cand = CandidateExecutionOptions(options=opts)
        specs[name] = OperationSpec(options=cand, cost_model=ExponentialModel(cand))
    fit_s = time.perf_counter() - tick
    n = instance.num_computations
    dag = nx.DiGraph()
    src, snk = n, n + 1
    dag.add_node(src, op=DummyOperation())
    dag.add_node(snk, op=DummyOperation())
    ops = []
    for i, c in enumerate(instance.computations):
        op = Operation(spec=specs[c.table])
        ops.append(op)
        dag.add_node(i, op=op)
    dag.add_edges_from(instance.edges)
    for i in range(n):
        if not instance.predecessors[i]:
            dag.add_edge(src, i)
        if not instance.successors[i]:
            dag.add_edge(i, snk)
    dag.graph["source_node"] = src
    dag.graph["sink_node"] = snk
    # Every operation starts at its longest duration: lowtime's starting plan (not yielded).
    start = tuple(int(op.assigned_knob) for op in ops)
    solver = PhillipsDessouky(dag)
    reported_time, reported_cost, choices = [], [], [start]
    stopped = ""
    try:
        for res in solver.run():
            reported_time.append(res.real_time)
            reported_cost.append(res.cost)
            choices.append(tuple(int(op.assigned_knob) for op in ops))
    except BaseException as exc:  # lowtime's Rust core panics (a BaseException) on some inputs
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        stopped = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        choices = choices[: len(reported_time) + 1]  # a plan read after its report only
    return {
        "stopped": stopped,
        "runtime_s": time.perf_counter() - tick,
        "cpu_s": time.process_time() - ctick,
        "fit_s": fit_s,
        "reported_time_s": np.asarray(reported_time),
        "reported_cost_j": np.asarray(reported_cost),
        "solutions": [PemSolution(c) for c in choices],
    }


def energy_at(instance: PemInstance, points, T: float) -> float:
    """Our frontier's least energy at iteration time T (blocking up to T); inf if none."""
    best = best_at(instance, points, T)
    if best is None:
        return float("inf")
    return best.objective + instance.p_blocking_w * instance.num_stages * (T - best.makespan_s)


def repeated(fn, repeats: int) -> tuple[list[float], list[float], object]:
    """Wall and CPU seconds of ``repeats`` calls of ``fn`` (returns the last result)."""
    walls, cpus, out = [], [], None
    for _ in range(repeats):
        tick, ctick = time.perf_counter(), time.process_time()
        out = fn()
        walls.append(time.perf_counter() - tick)
        cpus.append(time.process_time() - ctick)
    return walls, cpus, out


def med_min(xs: list[float]) -> str:
    return f"{np.median(xs):.2f} / {min(xs):.2f}"


#: Run in a subprocess on another revision's package: ``energyopt.solve`` with its defaults.
BASELINE_SCRIPT = """
import json, sys, time
import energyopt
from energyopt.pipeline import instance_from_perseus_profile, synthetic_instance
kind, a, b, c, pb, reps = json.loads(sys.argv[1])
energyopt.solve(synthetic_instance(2, 3, 4), "perseus", progress=False)
if kind == "synthetic":
    inst = synthetic_instance(a, b, c, seed=0)
else:
    inst = instance_from_perseus_profile(a, b, p_blocking_w=pb)
walls, cpus = [], []
for _ in range(reps):
    tick, ctick = time.perf_counter(), time.process_time()
    res = energyopt.solve(inst, "perseus", progress=False)
    walls.append(time.perf_counter() - tick)
    cpus.append(time.process_time() - ctick)
pts = [(p.makespan_s, p.objective) for p in res.frontier]
print(json.dumps({"wall": walls, "cpu": cpus, "frontier": pts, "package": energyopt.__file__}))
"""


def baseline_tree(rev: str) -> Path:
    """``energyopt/`` of git revision ``rev``, extracted once under the temp folder."""
    root = Path(tempfile.gettempdir()) / f"energyopt-{rev}"
    if not (root / "energyopt").exists():
        root.mkdir(parents=True, exist_ok=True)
        repo = Path(__file__).resolve().parents[1]
        tar = subprocess.run(
            ["git", "-C", str(repo), "archive", rev, "energyopt"], check=True, capture_output=True
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(root)], input=tar, check=True)
    return root


def run_baseline(rev: str, spec: list, repeats: int) -> dict:
    """Time revision ``rev``'s default ``perseus`` crawl on one case (``BASELINE_SCRIPT``)."""
    root = baseline_tree(rev)
    env = {**os.environ, "PYTHONPATH": str(root)}
    # cwd = the revision's tree: ``python -c`` puts the working folder first on sys.path,
    # so run from the repository it would import today's package instead.
    out = subprocess.run(
        [sys.executable, "-c", BASELINE_SCRIPT, json.dumps([*spec, repeats])],
        env=env,
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    got = json.loads(out.strip().splitlines()[-1])
    if not Path(got["package"]).resolve().is_relative_to(root.resolve()):
        raise RuntimeError(f"baseline {rev}: imported {got['package']}, not its own package")
    return got


def speed_cases(args) -> list[tuple[str, PemInstance, list]]:
    """(label, instance, spec for ``BASELINE_SCRIPT``) of the speed section."""
    cases = [
        (f"synthetic {S}x{M} k10", synthetic_instance(S, M, 10, seed=0), ["synthetic", S, M, 10, 0])
        for S, M in ((4, 8), (8, 16))
    ]
    path, pb = args.profile_path, args.p_blocking_w
    if path.exists():
        for M in args.speed_microbatches:
            inst = instance_from_perseus_profile(path, M, p_blocking_w=pb)
            cases.append((f"{path.stem} 8x{M}", inst, ["profile", str(path.resolve()), M, 0, pb]))
    else:
        print(f"{path} absent: profile rows skipped")
    return cases


def lowtime_quality(inst: PemInstance, points, lt: dict) -> tuple[np.ndarray, np.ndarray]:
    """Ours over lowtime at each lowtime plan's measured makespan (minus 1), and
    lowtime's measured minus reported makespans (its starting plan has no report)."""
    evs = [evaluate(inst, sol, None) for sol in lt["solutions"]]
    T = np.array([e.iteration_time_s for e in evs])
    E = np.array([e.energy_j for e in evs])
    r = np.array([energy_at(inst, points, t) / e - 1 for t, e in zip(T, E)])
    return r, T[1:] - lt["reported_time_s"]


#: Variants of ``perseus`` the speed section times (keyword arguments of ``energyopt.solve``).
VARIANTS = {"default": {}, "both": {"cost_model": "both"}, "grid": {"crawl": "grid"}}


def speed_row(label, name, inst, walls, cpus, res, base, lt, lt_cpu) -> list:
    """One row of the speed table: ours, against the baseline revision and lowtime."""
    row = [label, name, inst.num_computations, med_min(walls), med_min(cpus), len(res.frontier)]
    if base is not None:
        worse = [energy_at(inst, res.frontier, t) / e - 1 for t, e in base["frontier"]]
        row += [
            med_min(base["cpu"]),
            f"{np.median(base['cpu']) / np.median(cpus):.2f}x",
            f"{100 * max(worse):+.4f}",
        ]
    else:
        row += ["-"] * 3
    if lt is not None:
        r, diff = lowtime_quality(inst, res.frontier, lt)
        row += [
            med_min(lt_cpu),
            f"{np.median(lt_cpu) / np.median(cpus):.0f}x ({min(lt_cpu) / min(cpus):.0f}x)",
            f"{100 * r.max():+.4f} / {100 * np.median(r):+.3f} / {100 * (r > 1e-9).mean():.1f}",
            f"{1000 * diff.min():+.1f} .. {1000 * diff.max():+.1f}",
        ]
    else:
        row += ["-"] * 4
    return row


def speed(args) -> None:
    have_lt = lowtime_version()
    if have_lt is None:
        print(
            "lowtime is not installed: lowtime columns skipped "
            "(.venv/bin/pip install lowtime==0.3.0, for benchmarks only)"
        )
    # Warm up imports once, outside the timings.
    energyopt.solve(synthetic_instance(2, 3, 4), "perseus", cost_model="both", progress=False)
    R = args.repeats
    rows = []
    for label, inst, spec in speed_cases(args):
        base = None
        if args.baseline_rev and (spec[0] == "synthetic" or spec[2] in args.baseline_microbatches):
            base = run_baseline(args.baseline_rev, spec, R)
        lt, lt_cpu = None, []
        if have_lt is not None and (spec[0] == "synthetic" or spec[2] <= args.lowtime_max_mb):
            lts = [run_lowtime(inst) for _ in range(args.lowtime_repeats)]
            lt, lt_cpu = lts[-1], [x["cpu_s"] for x in lts]
        for name in args.variants.split(","):
            kw = VARIANTS[name]
            walls, cpus, res = repeated(
                lambda i=inst, kw=kw: energyopt.solve(i, "perseus", progress=False, **kw), R
            )
            rows.append(
                speed_row(label, name, inst, walls, cpus, res, base, lt, lt_cpu if lt else [])
            )
        print(f"  done {label}", flush=True)
    base = args.baseline_rev or "-"
    print(
        format_table(
            [
                "instance",
                "perseus",
                "n",
                "ours wall s med/min",
                "ours cpu s med/min",
                "points",
                f"{base} cpu s med/min",
                f"speed-up vs {base} (cpu med)",
                f"ours vs {base} % max",
                "lowtime cpu s med/min",
                "speed-up vs lowtime cpu med (min)",
                "ours vs lowtime % max / median / % worse",
                "lowtime measured-reported ms",
            ],
            rows,
        )
    )
    print(
        f"ours: energyopt.solve(inst, 'perseus', **variant) (default: its defaults; both:\n"
        "cost_model='both'; grid: crawl='grid'), every point scored by the evaluator,\n"
        f"{R} runs; {base}: the default call on that revision's package, in a\n"
        f"subprocess, {R} runs; lowtime 0.3.0: {args.lowtime_repeats} run(s), CPU clock started\n"
        "after its imports, its starting plan (every operation at its longest duration)\n"
        "included. 'ours vs X': at each of X's plans' measured makespans, our frontier's\n"
        "energy over that plan's, minus 1 (<= 0: ours at or below); '% worse': share of\n"
        "lowtime plans that beat our frontier."
    )


def max_clock(inst: PemInstance) -> int:
    """The highest SM clock every table of ``inst`` has (Table 6's baseline clock)."""
    common = set.intersection(*(set(tb.sm_clock_mhz) for tb in inst.tables.values()))
    return max(f for f in common if f is not None)


def table6(args) -> None:
    path, pb = args.profile_path, args.p_blocking_w
    if not path.exists():
        print(f"table6: {path} absent, skipped")
        return
    paper = TABLE6 if args.is_default_profile else {}
    rows = []
    for M in (12, 24) if args.quick else (12, 24, 48, 96):
        inst = instance_from_perseus_profile(path, M, p_blocking_w=pb)
        f_max = max_clock(inst)
        base = evaluate(inst, uniform_clock_choice(inst, f_max), None)
        inst_T = inst.with_deadline(base.iteration_time_s)
        tick = time.perf_counter()
        res = energyopt.solve(inst_T, "perseus", progress=False)
        dt = time.perf_counter() - tick
        sav = {}
        for m in ("envpipe", "zeus-global", "zeus-per-stage"):
            r = energyopt.solve(inst_T, m)
            sav[m] = None if r.objective is None else 1 - r.objective / base.energy_j
        fastest = res.frontier[0]
        rows.append(
            [
                M,
                f"{base.iteration_time_s:.4f}",
                f"{base.energy_j:.1f}",
                f"{fastest.makespan_s:.4f}",
                f"{fastest.objective:.1f}",
                f"{100 * (1 - res.objective / base.energy_j):.2f}",
                f"{paper[M]:.2f}" if M in paper else "-",
                *(
                    "-" if sav[m] is None else f"{100 * sav[m]:.2f}"
                    for m in ("envpipe", "zeus-global", "zeus-per-stage")
                ),
                f"{dt:.1f}",
            ]
        )
        print(f"  done M={M}", flush=True)
    print(
        format_table(
            [
                "M",
                "T f_max s",
                "E f_max J",
                "T fastest s",
                "E fastest J",
                "saving %",
                "paper %",
                "EnvPipe %",
                "ZeusGlobal %",
                "ZeusPerStage %",
                "crawl s",
            ],
            rows,
        )
    )
    print(
        f"{path.name}, P_blocking {pb} W. Savings at the iteration time of every computation\n"
        f"at the highest clock (f_max, {max_clock(inst)} MHz; no slowdown), against that plan."
    )


def reference(args) -> None:
    path, pb = args.profile_path, args.p_blocking_w
    pairs = [(M, f) for M, f in args.frontier_files if f.exists()]
    if not path.exists() or not pairs:
        print("reference: profile or frontier files absent, skipped")
        return
    rows = []
    for M, fpath in pairs:
        inst = instance_from_perseus_profile(path, M, p_blocking_w=pb)
        res = energyopt.solve(inst, "perseus", progress=False)
        ref = pd.read_csv(fpath)
        off = res.frontier[0].makespan_s - float(ref.time.min())
        aligned = np.array(
            [energy_at(inst, res.frontier, t + off) / e - 1 for t, e in zip(ref.time, ref.energy)]
        )
        strict = np.array(
            [energy_at(inst, res.frontier, t) / e - 1 for t, e in zip(ref.time, ref.energy)]
        )
        ok = np.isfinite(strict)
        rows.append(
            [
                M,
                len(ref),
                f"{1000 * off:.1f}",
                f"{100 * aligned.max():+.3f}",
                f"{100 * np.median(aligned):+.3f}",
                f"{ok.sum()}",
                f"{100 * strict[ok].max():+.3f}",
                f"{100 * np.median(strict[ok]):+.3f}",
                f"{float(ref.energy.min()):.1f}",
                f"{min(p.objective for p in res.frontier):.1f}",
            ]
        )
    print(
        format_table(
            [
                "M",
                "their points",
                "offset ms",
                "aligned max %",
                "aligned median %",
                "strict covered",
                "strict max %",
                "strict median %",
                "their min E J",
                "our min E J",
            ],
            rows,
        )
    )
    print(
        f"{path.name}, P_blocking {pb} W, frontier files: "
        f"{', '.join(f.name for _, f in pairs)}.\n"
        "aligned: their time t read as t + offset (fastest ends matched); strict: at t itself,\n"
        "where our measured frontier reaches t. Percent: our energy over theirs, minus 1."
    )


def exact(args) -> None:
    path, pb = args.profile_path, args.p_blocking_w
    if not path.exists():
        print(f"exact: {path} absent, skipped")
        return
    inst = instance_from_perseus_profile(path, 12, p_blocking_w=pb)
    base = evaluate(inst, uniform_clock_choice(inst, max_clock(inst)), None)
    rows = []
    for frac in (1.0, 1.1):
        inst_T = inst.with_deadline(base.iteration_time_s * frac)
        ours = energyopt.solve(inst_T, "perseus", progress=False)
        h = energyopt.solve(inst_T, "highs", time_limit=args.exact_time_limit)
        rows.append(
            [
                f"{frac:.1f}",
                f"{ours.objective:.2f}",
                "-" if h.objective is None else f"{h.objective:.2f}",
                "-" if h.bound is None else f"{h.bound:.2f}",
                h.termination.value,
                f"{h.runtime_s:.0f}",
                "-" if h.bound is None else f"{100 * (ours.objective / h.bound - 1):.3f}",
                "-" if h.objective is None else f"{100 * (ours.objective / h.objective - 1):.3f}",
            ]
        )
    print(
        format_table(
            [
                "T / T(f_max)",
                "perseus J",
                "highs J",
                "highs bound J",
                "highs termination",
                "highs s",
                "perseus vs bound %",
                "perseus vs highs %",
            ],
            rows,
        )
    )


def gaps(args) -> None:
    methods = ("perseus", "perseus-exponential", "envpipe", "zeus-global", "zeus-per-stage")
    seeds = range(10 if args.quick else 40)
    stats = {m: {"deadline": [], "points": []} for m in methods}
    insts = [random_dag_instance(7, 3, seed=s, deadline_fraction=0.5) for s in seeds]
    insts += [synthetic_instance(2, 2, 4, seed=s) for s in range(3)]
    insts = [
        i
        if i.deadline_s
        else i.with_deadline(energyopt.pipeline.evaluator.deadline_between(i, 0.5))
        for i in insts
    ]
    for inst in insts:
        for m in methods:
            if m == "envpipe":
                res0 = energyopt.solve(inst.with_deadline(None), m)
                inst_m = inst.with_deadline(res0.extra["iteration_time_s"])
            else:
                inst_m = inst
            res = energyopt.solve(inst_m, m)
            if res.has_solution:
                _, ex = brute_force(inst_m, inst_m.deadline_s)
                stats[m]["deadline"].append(res.objective / ex - 1)
            for p in res.frontier:
                _, ex = brute_force(inst, p.makespan_s)
                stats[m]["points"].append(p.objective / ex - 1)
    rows = []
    for m in methods:
        d, p = np.array(stats[m]["deadline"]), np.array(stats[m]["points"])
        rows.append(
            [
                m,
                len(d),
                f"{100 * d.mean():.2f}" if len(d) else "-",
                f"{100 * d.max():.2f}" if len(d) else "-",
                f"{100 * d.min():.4f}" if len(d) else "-",
                len(p),
                f"{100 * p.mean():.2f}" if len(p) else "-",
                f"{100 * p.max():.2f}" if len(p) else "-",
            ]
        )
    print(
        format_table(
            [
                "method",
                "instances",
                "mean gap %",
                "max gap %",
                "min gap %",
                "frontier points",
                "mean point gap %",
                "max point gap %",
            ],
            rows,
        )
    )
    print(
        f"{len(insts)} instances: random DAGs (7 computations, 3 options, deadline halfway) and "
        "synthetic 1F1B 2x2 k4; EnvPipe at its own (no-slowdown) iteration time. Simulated."
    )


def repair_cases(args, tmp: Path) -> list[tuple[str, PemInstance]]:
    """The instances of the ``repair`` section: three benchmark rows, two noisy copies of
    the profile (simulated, written to ``tmp``) and two synthetic instances that lost;
    the profile at every ``--repair-microbatches`` M (lowtime takes ~40 min at 96)."""
    cases = [
        ("synthetic 1F1B 4 x 8, 10 clocks", synthetic_instance(4, 8, 10, seed=0)),
        ("synthetic 1F1B 8 x 16, 10 clocks", synthetic_instance(8, 16, 10, seed=0)),
    ]
    path, pb = args.profile_path, args.p_blocking_w
    if path.exists():
        for M in args.repair_microbatches:
            inst = instance_from_perseus_profile(path, M, p_blocking_w=pb)
            cases.append((f"{path.stem} 8 x {M}", inst))
        for seed in (1, 2):
            copy = tmp / f"noisy{seed}.csv"
            write_noisy_profile(path, copy, args.noise, seed)
            inst = instance_from_perseus_profile(copy, 12, p_blocking_w=pb)
            cases.append((f"noisy copy, seed {seed}, 8 x 12 (simulated)", inst))
    cases.append(("synthetic 6 x 12, 10 clocks, seed 1", synthetic_instance(6, 12, 10, seed=1)))
    cases.append(("synthetic 8 x 16, 8 clocks, seed 2", synthetic_instance(8, 16, 8, seed=2)))
    return cases


def repair(args) -> None:
    """The default (both end repairs) and ``repair=False`` against lowtime, one run each."""
    if lowtime_version() is None:
        print("lowtime is not installed: section skipped")
        return
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, inst in repair_cases(args, Path(tmp)):
            lt = run_lowtime(inst)
            row = [label]
            cpus = []
            for rep in (False, True):
                ctick = time.process_time()
                res = energyopt.solve(inst, "perseus", progress=False, repair=rep)
                cpus.append(time.process_time() - ctick)
                r, _ = lowtime_quality(inst, res.frontier, lt)
                worse = 100 * (r > 1e-9).mean()
                row.append(f"{100 * r.max():+.4f} / {100 * np.median(r):+.3f} / {worse:.1f}")
            rows.append([*row, f"{cpus[0]:.2f} / {cpus[1]:.2f}", f"{lt['cpu_s']:.2f}"])
            print(f"  done {label}", flush=True)
    print(
        format_table(
            [
                "instance",
                "repair=False: vs lowtime % max / median / % worse",
                "default (both ends repaired)",
                "CPU s off / default",
                "lowtime CPU s",
            ],
            rows,
        )
    )


def write_noisy_profile(src: Path, out: Path, noise: float, seed: int) -> None:
    """A copy of the profile ``src`` with every time and energy scaled by ``1 +- noise``.

    Simulated: neighbouring clocks swap order in time and energy, so the table is
    not monotone in MHz (as measured profiles are not). Same published format.
    """
    df = pd.read_csv(src)
    rng = np.random.default_rng(seed)
    for col in ("time", "energy"):
        df[col] = df[col] * (1 + rng.uniform(-noise, noise, len(df)))
    df.to_csv(out, index=False)
    print(f"wrote {out}: {src.name} with time and energy x (1 +- {noise}), seed {seed} (simulated)")


def frontier_files(values: list[str], is_default: bool) -> list[tuple[int, Path]]:
    """``M=FILE`` or ``FILE`` whose name holds ``mb<M>``; the GPT-3 A100 pair by default."""
    if not values:
        if not is_default:
            return []
        return [(M, DATA / f"frontier_gpt3-175b_a100_sxm_mb{M}.csv") for M in (12, 24)]
    out = []
    for v in values:
        m_eq = re.fullmatch(r"(\d+)=(.+)", v)
        m_mb = re.search(r"mb(\d+)", Path(v).name)
        if m_eq:
            out.append((int(m_eq.group(1)), Path(m_eq.group(2))))
        elif m_mb:
            out.append((int(m_mb.group(1)), Path(v)))
        else:
            raise SystemExit(f"--frontier {v}: give M=FILE or a file name containing mb<M>")
    return out


def parse_args() -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="fewer gap instances, Table 6 for 12/24 only"
    )
    ap.add_argument("--no-lowtime", action="store_true")
    ap.add_argument(
        "--lowtime-max-mb", type=int, default=12, help="run lowtime on profile rows up to this M"
    )
    ap.add_argument("--lowtime-repeats", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3, help="runs of each energyopt crawl")
    ap.add_argument("--baseline-rev", default="ed733db", help="git revision to time beside ours")
    ap.add_argument("--baseline-microbatches", type=int, nargs="*", default=[96])
    ap.add_argument("--sections", default="speed,table6,reference,exact,gaps")
    ap.add_argument("--variants", default="default,both", help=f"of {', '.join(VARIANTS)}")
    ap.add_argument("--speed-microbatches", type=int, nargs="*", default=[12, 96])
    ap.add_argument("--exact-time-limit", type=float, default=240.0)
    ap.add_argument("--repair-microbatches", type=int, nargs="*", default=[12])
    ap.add_argument("--profile", type=Path, help="stage profile in the Perseus format")
    ap.add_argument("--p-blocking", type=float, help="blocking power, W (default: --gpu preset)")
    ap.add_argument("--gpu", help="blocking-power preset: a100 (83.64 W) or a40 (70.38 W)")
    ap.add_argument(
        "--frontier", action="append", default=[], help="authors' frontier: M=FILE or *mb<M>*"
    )
    ap.add_argument("--write-noisy-profile", type=Path, help="write a non-monotone copy, exit")
    ap.add_argument("--noise", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    args.is_default_profile = args.profile is None
    args.profile_path = PROFILE if args.profile is None else args.profile
    if args.profile is not None and not args.profile.exists():
        ap.error(f"--profile {args.profile}: no such file")
    try:
        if args.p_blocking is None and args.gpu is None:
            if not args.is_default_profile:
                ap.error("--profile: give --p-blocking W or --gpu a100|a40")
            args.p_blocking_w = PB
        else:
            args.p_blocking_w = blocking_power(args.gpu, args.p_blocking)
    except InstanceError as exc:
        ap.error(str(exc))
    args.frontier_files = frontier_files(args.frontier, args.is_default_profile)
    return args


def main() -> None:
    args = parse_args()
    if args.write_noisy_profile:
        write_noisy_profile(args.profile_path, args.write_noisy_profile, args.noise, args.seed)
        return
    logging.getLogger("lowtime").setLevel(logging.WARNING)
    if args.no_lowtime:
        globals()["lowtime_version"] = lambda: None
    print(
        f"energyopt {energyopt.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, lowtime {lowtime_version() or 'not installed'}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    sections = {"speed": speed, "table6": table6, "reference": reference, "exact": exact}
    sections["gaps"] = gaps
    sections["repair"] = repair
    for name in args.sections.split(","):
        print(f"\n== {name}")
        sections[name](args)


if __name__ == "__main__":
    main()
