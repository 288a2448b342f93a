"""Perseus frontier crawl: speed beside the authors' ``lowtime``, quality against the authors.

    .venv/bin/python benchmarks/pem_crawl.py [--quick] [--no-lowtime] [--lowtime-gpt3]
        [--sections speed,table6,reference,gaps]

Sections:

``speed``
    Identical DAGs and options, tau = 1 ms: synthetic 1F1B 4 x 8 and 8 x 16 with
    10 clocks (``synthetic_instance``, seed 0, simulated) and the GPT-3 175B A100
    profile at 8 x 12 and 8 x 96 (``../shared/data/perseus-sosp24``). Our crawl with the
    hull and the exponential cost model, lowtime 0.3.0 (exponential model) when
    installed; lowtime on 8 x 96 only with ``--lowtime-gpt3`` (long). Every plan
    of both is scored with the evaluator (measured times); the quality columns
    compare, at each lowtime plan's measured makespan, our frontier's energy.
``table6``
    Perseus Table 6 (GPT-3 175B, A100, 8 stages, 1F1B, P_blocking 83.64 W):
    saving of the crawl's fastest point against every computation at 1410 MHz,
    for 12, 24, 48, 96 microbatches, beside the paper's; with EnvPipe and the
    Zeus baselines at the same (no-slowdown) iteration time.
``reference``
    Our frontier against the authors' frontier files (12 and 24 microbatches).
``exact``
    GPT-3 8 x 12 at the all-1410 MHz iteration time and 10 % above it: the crawl
    against the HiGHS MILP (``highs``, ``--exact-time-limit`` seconds), with its
    proven bound.
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
import logging
import os
import platform
import time
from pathlib import Path

import networkx as nx
import numpy as np
import pandas as pd

import energyopt
from energyopt.core.table import format_table
from energyopt.pipeline import (
    PemSolution,
    best_at,
    evaluate,
    instance_from_perseus_profile,
    random_dag_instance,
    synthetic_instance,
)
from energyopt.pipeline.bruteforce import brute_force
from energyopt.pipeline.evaluator import uniform_clock_choice
from energyopt.pipeline.instance import PemInstance

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
    """Crawl with lowtime; return reported (time, cost) per iteration and the plans."""
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
    tick = time.perf_counter()
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
    solver = PhillipsDessouky(dag)
    reported_time, reported_cost, choices = [], [], []
    for res in solver.run():
        reported_time.append(res.real_time)
        reported_cost.append(res.cost)
        choices.append(tuple(int(op.assigned_knob) for op in ops))
    return {
        "runtime_s": time.perf_counter() - tick,
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
    return best.objective + instance.p_blocking_w * instance.num_stages * (T - best.deadline_s)


def speed(args) -> None:
    cases = [
        ("synthetic 4x8 k10", synthetic_instance(4, 8, 10, seed=0)),
        ("synthetic 8x16 k10", synthetic_instance(8, 16, 10, seed=0)),
    ]
    if PROFILE.exists():
        cases.append(
            ("GPT-3 A100 8x12", instance_from_perseus_profile(PROFILE, 12, p_blocking_w=PB))
        )
        cases.append(
            ("GPT-3 A100 8x96", instance_from_perseus_profile(PROFILE, 96, p_blocking_w=PB))
        )
    else:
        print("GPT-3 profile absent: 8x96 row skipped")
    have_lt = lowtime_version()
    if have_lt is None:
        print(
            "lowtime is not installed: lowtime columns skipped "
            "(.venv/bin/pip install lowtime==0.3.0, for benchmarks only)"
        )
    # Warm up imports and compiled paths once, outside the timings.
    energyopt.solve(synthetic_instance(2, 3, 4), "perseus", cost_model="both", progress=False)
    variants = ("hull", "exponential", "both")
    rows = []
    for label, inst in cases:
        ours, cpu = {}, {}
        for cm in variants:
            tick, ctick = time.perf_counter(), time.process_time()
            res = energyopt.solve(inst, "perseus", cost_model=cm, progress=False, verify=False)
            ours[cm] = (time.perf_counter() - tick, res)
            cpu[cm] = time.process_time() - ctick
        tick = time.perf_counter()
        for p in ours["hull"][1].frontier:
            evaluate(inst, p.solution, None)
        verify_s = time.perf_counter() - tick
        run_lt = have_lt is not None and ("8x96" not in label or args.lowtime_gpt3)
        lt = None
        if run_lt:
            ctick = time.process_time()
            lt = run_lowtime(inst)
            lt_cpu = time.process_time() - ctick
            evs = [evaluate(inst, s, None) for s in lt["solutions"]]
            T = np.array([e.iteration_time_s for e in evs])
            E = np.array([e.energy_j for e in evs])
            diff = T - lt["reported_time_s"]
        for cm in variants:
            row = [
                label if cm == "hull" else "",
                inst.num_computations if cm == "hull" else "",
                cm,
                f"{ours[cm][0]:.2f} ({cpu[cm]:.2f})",
                len(ours[cm][1].frontier),
                f"{verify_s:.1f}" if cm == "hull" else "",
            ]
            if lt is not None:
                r = np.array(
                    [energy_at(inst, ours[cm][1].frontier, t) / e - 1 for t, e in zip(T, E)]
                )
                row += [
                    f"{lt['runtime_s']:.1f} ({lt_cpu:.1f})" if cm == "hull" else "",
                    f"{lt['runtime_s'] / ours[cm][0]:.0f}x ({lt_cpu / cpu[cm]:.0f}x)",
                    f"{100 * r.max():+.3f} / {100 * np.median(r):+.3f} / "
                    f"{100 * (r > 1e-9).mean():.0f}",
                    f"{1000 * diff.min():+.1f} .. {1000 * diff.max():+.1f}" if cm == "hull" else "",
                ]
            else:
                row += ["-"] * 4
            rows.append(row)
        print(f"  done {label}", flush=True)
    print(
        format_table(
            [
                "instance",
                "n",
                "cost model",
                "ours s (cpu)",
                "points",
                "evaluate() all s",
                "lowtime s (cpu)",
                "speed-up wall (cpu)",
                "ours vs lowtime % max / median / % worse",
                "lowtime measured-reported ms",
            ],
            rows,
        )
    )
    print(
        "ours vs lowtime: at each lowtime plan's measured makespan, our frontier's energy over\n"
        "that plan's measured energy, minus 1 (negative: ours lower); '% worse': share of\n"
        "lowtime plans that beat our frontier. Times: wall-clock s (process CPU s); 'both' =\n"
        "union of the hull and exponential crawls. Ours scored by the batch evaluator\n"
        "(verify=False); 'evaluate() all s': scoring every hull point with evaluate() instead."
    )


def table6(args) -> None:
    if not PROFILE.exists():
        print("table6: GPT-3 profile absent, skipped")
        return
    rows = []
    for M in (12, 24) if args.quick else (12, 24, 48, 96):
        inst = instance_from_perseus_profile(PROFILE, M, p_blocking_w=PB)
        base = evaluate(inst, uniform_clock_choice(inst, 1410), None)
        inst_T = inst.with_deadline(base.iteration_time_s)
        tick = time.perf_counter()
        res = energyopt.solve(inst_T, "perseus", progress=False, verify=False)
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
                f"{fastest.deadline_s:.4f}",
                f"{fastest.objective:.1f}",
                f"{100 * (1 - res.objective / base.energy_j):.2f}",
                f"{TABLE6[M]:.2f}",
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
                "T 1410MHz s",
                "E 1410MHz J",
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
    print("Savings at the all-1410 MHz iteration time (no slowdown), against all-1410 MHz.")


def reference(args) -> None:
    if not PROFILE.exists():
        print("reference: data absent, skipped")
        return
    rows = []
    for M in (12, 24):
        inst = instance_from_perseus_profile(PROFILE, M, p_blocking_w=PB)
        res = energyopt.solve(inst, "perseus", progress=False, verify=False)
        ref = pd.read_csv(DATA / f"frontier_gpt3-175b_a100_sxm_mb{M}.csv")
        off = res.frontier[0].deadline_s - float(ref.time.min())
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
        "aligned: their time t read as t + offset (fastest ends matched); strict: at t itself,\n"
        "where our measured frontier reaches t. Percent: our energy over theirs, minus 1."
    )


def exact(args) -> None:
    if not PROFILE.exists():
        print("exact: GPT-3 profile absent, skipped")
        return
    inst = instance_from_perseus_profile(PROFILE, 12, p_blocking_w=PB)
    base = evaluate(inst, uniform_clock_choice(inst, 1410), None)
    rows = []
    for frac in (1.0, 1.1):
        inst_T = inst.with_deadline(base.iteration_time_s * frac)
        ours = energyopt.solve(inst_T, "perseus", progress=False, verify=False)
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
                "T / T(1410 MHz)",
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
                _, ex = brute_force(inst, p.deadline_s)
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--quick", action="store_true", help="fewer gap instances, Table 6 for 12/24 only"
    )
    ap.add_argument("--no-lowtime", action="store_true")
    ap.add_argument("--lowtime-gpt3", action="store_true", help="also run lowtime on 8x96 (long)")
    ap.add_argument("--sections", default="speed,table6,reference,exact,gaps")
    ap.add_argument("--exact-time-limit", type=float, default=240.0)
    args = ap.parse_args()
    logging.getLogger("lowtime").setLevel(logging.WARNING)
    if args.no_lowtime:
        globals()["lowtime_version"] = lambda: None
    print(
        f"energyopt {energyopt.__version__}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, lowtime {lowtime_version() or 'not installed'}, "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for name in args.sections.split(","):
        print(f"\n== {name}")
        sections = {"speed": speed, "table6": table6, "reference": reference, "exact": exact}
        sections["gaps"] = gaps
        sections[name](args)


if __name__ == "__main__":
    main()
