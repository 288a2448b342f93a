"""Zeus with concurrent submissions vs one recurrence after another (paper Sec. 4.4).

Jobs arrive as a Poisson process whose mean interarrival time is ``--load`` times
Default's expected TTA, so that about ``1 / load`` jobs overlap; the arrivals are
SYNTHETIC (the Alibaba group trace of paper Sec. 6.3 is not in ../shared/data).
Prints the cumulative regret (Eq. 8) and the last-five ETA relative to Default
of both replays, mean ± std over seeds.

Usage::

    .venv/bin/python benchmarks/tuning_concurrency.py --seeds 10 --load 0.25
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import energyopt
from energyopt.tuning.suites import DATA, suite, trace_available

sys.path.insert(0, str(Path(__file__).resolve().parent))
from tuning_replay import default_expected


def ms(xs: list[float], scale: float = 1.0, fmt: str = ".3g") -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs) / scale:{fmt}} ± {sd / scale:{fmt}}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--load", type=float, default=0.25, help="interarrival / Default TTA")
    ap.add_argument("--gpu", default="v100")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    args = ap.parse_args(argv)
    real = trace_available(args.data_dir)
    print(f"data: {'Zeus trace' if real else 'GENERATED instances (no trace)'}; arrivals: "
          f"synthetic Poisson, mean interarrival = {args.load} x Default TTA")  # fmt: skip
    head = ("workload", "regret seq (MJ)", "regret conc (MJ)", "ETA/Def seq", "ETA/Def conc")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for inst in suite("paper", data_dir=args.data_dir):
        if real and inst.gpu != args.gpu:
            continue
        e_def, t_def = default_expected(inst)
        res = {"seq": ([], []), "conc": ([], [])}
        for seed in range(args.seeds):
            for key, opts in (("seq", {}), ("conc", {"interarrival_s": args.load * t_def})):
                r = energyopt.solve(inst, "zeus", seed=seed, **opts)
                if r.objective is None:
                    raise SystemExit(f"{inst.name} seed {seed} {key}: {r.message}")
                res[key][0].append(r.extra["cumulative_regret"])
                res[key][1].append(r.extra["last5_energy_j"] / e_def)
        print(
            f"| {inst.name} | {ms(res['seq'][0], 1e6)} | {ms(res['conc'][0], 1e6)} | "
            f"{ms(res['seq'][1])} | {ms(res['conc'][1])} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
