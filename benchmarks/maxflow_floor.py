"""The Perseus crawl's max-flow floor: CPU seconds of its OR-Tools max flows alone.

Usage::

    .venv/bin/python benchmarks/maxflow_floor.py [--cases 8x16 gpt96] [--repeats 3]

The default ``perseus`` method (hull crawl + both end repairs) solves one maximum flow
per event of the hull crawl and one per step of the repairs' grid crawl. This runs it
once as is (CPU median of ``--repeats``) and once with OR-Tools' ``SimpleMaxFlow.solve``
wrapped in a CPU timer, and prints the number of max flows, the CPU seconds spent
inside them (the hull crawl's and the repairs' apart), and their share of the whole.
However the rest of the crawl is sped up, a crawl that solves these max flows cannot
take less than their sum. ``--budget CASE=REFERENCE/FACTOR`` compares that floor with a
budget measured in the same run: the CPU median (of ``--repeats``) of ``REFERENCE``
on the case, divided by ``FACTOR``. ``REFERENCE`` is ``lowtime`` (the authors' crawl,
when installed; as in ``benchmarks/pem_crawl.py``) or a git revision of energyopt (its
default ``perseus``), for example ``--budget 8x16=lowtime/100 gpt96=ed733db/3``. The
figures are ratios of CPU seconds taken on the same machine at the same time, and the
load average is printed beside them: a budget measured on another day is not a budget.

Cases: synthetic 1F1B ``SxM`` (10 clocks, seed 0, simulated) and ``gptM`` (the Perseus
GPT-3 175B A100 profile of ``../shared/data/perseus-sosp24`` at M microbatches, 8
stages, 83.64 W blocking power).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

from ortools.graph.python import max_flow

import energyopt
from energyopt.core.table import format_table
from energyopt.pipeline import instance_from_perseus_profile, synthetic_instance
from energyopt.pipeline.crawl import hullcrawl

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # pem_crawl's reference runners
PROFILE = ROOT.parent / "shared/data/perseus-sosp24/gpt3-175b+a100_sxm_bf16.csv"

#: CPU seconds inside max flows, by who asked: the hull crawl or the repairs.
SPENT = {"hull crawl": [0, 0.0], "repairs": [0, 0.0]}
_WHO = ["repairs"]


class TimedMaxFlow(max_flow.SimpleMaxFlow):
    """OR-Tools' max flow, its ``solve`` timed in CPU seconds."""

    def solve(self, source: int, sink: int):
        """``SimpleMaxFlow.solve``, timed."""
        tick = time.process_time()
        status = super().solve(source, sink)
        entry = SPENT[_WHO[-1]]
        entry[0] += 1
        entry[1] += time.process_time() - tick
        return status


def _timed_hull_path(original):
    def wrapper(*args, **kwargs):
        _WHO.append("hull crawl")
        try:
            return original(*args, **kwargs)
        finally:
            _WHO.pop()

    return wrapper


def instance(case: str):
    """The instance of a case name (see the module docstring)."""
    if case.startswith("gpt"):
        return instance_from_perseus_profile(PROFILE, int(case[3:]), p_blocking_w=83.64)
    stages, microbatches = map(int, case.split("x"))
    return synthetic_instance(stages, microbatches, 10, seed=0)


def cpu_seconds(inst, repeats: int) -> float:
    """CPU median of ``repeats`` default ``perseus`` solves."""
    runs = []
    for _ in range(repeats):
        tick = time.process_time()
        energyopt.solve(inst, "perseus", progress=False)
        runs.append(time.process_time() - tick)
    return statistics.median(runs)


def reference_cpu(case: str, reference: str, repeats: int) -> float:
    """CPU median of ``repeats`` runs of ``reference`` (``lowtime`` or a git revision of
    energyopt) on ``case``, measured now."""
    import pem_crawl

    inst = instance(case)
    if reference == "lowtime":
        if pem_crawl.lowtime_version() is None:
            raise SystemExit("lowtime is not installed (.venv/bin/pip install lowtime==0.3.0)")
        return statistics.median(pem_crawl.run_lowtime(inst)["cpu_s"] for _ in range(repeats))
    if case.startswith("gpt"):
        spec = ["profile", str(PROFILE.resolve()), int(case[3:]), 0, 83.64]
    else:
        stages, microbatches = map(int, case.split("x"))
        spec = ["synthetic", stages, microbatches, 10, 0]
    return statistics.median(pem_crawl.run_baseline(reference, spec, repeats)["cpu"])


def budgets(items: list[str], floors: dict[str, float], repeats: int) -> list[list]:
    """Rows of the budget table: each budget measured in this run (``CASE=REF/FACTOR``)."""
    rows = []
    for item in items:
        case, ref = item.split("=")
        reference, factor = ref.rsplit("/", 1)
        ref_cpu = reference_cpu(case, reference, repeats)
        budget, floor = ref_cpu / float(factor), floors[case]
        rows.append(
            [case, reference, f"{ref_cpu:.3f}", f"/ {factor}", f"{budget:.3f}", f"{floor:.3f}",
             f"{floor / budget:.2f}", "above" if floor > budget else "within"]
        )  # fmt: skip
    return rows


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", nargs="+", default=["8x16", "gpt96"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", nargs="*", default=[], metavar="CASE=REFERENCE/FACTOR")
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    load_before = _load()
    energyopt.solve(synthetic_instance(2, 3, 4), "perseus", progress=False)  # warm up
    rows = []
    for case in args.cases:
        inst = instance(case)
        whole = cpu_seconds(inst, args.repeats)
        for entry in SPENT.values():
            entry[:] = [0, 0.0]
        plain, path = max_flow.SimpleMaxFlow, hullcrawl.hull_path
        max_flow.SimpleMaxFlow, hullcrawl.hull_path = TimedMaxFlow, _timed_hull_path(path)
        try:
            energyopt.solve(inst, "perseus", progress=False)
        finally:
            max_flow.SimpleMaxFlow, hullcrawl.hull_path = plain, path
        (n_hull, s_hull), (n_rep, s_rep) = SPENT["hull crawl"], SPENT["repairs"]
        floor = s_hull + s_rep
        rows.append(
            [case, f"{whole:.3f}", n_hull, f"{s_hull:.3f}", n_rep, f"{s_rep:.3f}",
             f"{floor:.3f}", f"{100 * floor / whole:.0f} %"]
        )  # fmt: skip
    head = ["case", "perseus CPU (s)", "hull max flows", "their CPU (s)", "repair max flows"]
    head += ["their CPU (s)", "max flows, CPU (s)", "share"]
    floors = {row[0]: float(row[6]) for row in rows}
    budget_rows = budgets(args.budget, floors, args.repeats)
    print(
        f"energyopt {energyopt.__version__}; CPU medians of {args.repeats}; synthetic = simulated;"
        f" load average {load_before} before, {_load()} after"
    )
    print(format_table(head, rows))
    if budget_rows:
        head = ["case", "reference", "its CPU (s)", "factor", "budget (s)", "max flows (s)"]
        print(format_table([*head, "floor / budget", "floor"], budget_rows))


if __name__ == "__main__":
    main()
