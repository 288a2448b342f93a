"""Zeus trace-driven replay over seeds: the figures of docs/tuning.md (paper Figs. 6-7).

For every workload of the paper's Table 1 on each GPU of a Zeus-format trace folder
(``--data-dir``, default ``../shared/data/zeus-nsdi23/``: every ``summary_power_<gpu>.csv``
beside ``summary_train.csv``; workloads a GPU lacks are left out and a missing default
batch size is substituted, both printed as ``note:`` lines; generated instances,
labelled as such, when there is no trace), with eta = 0.5, beta = 2 and 2 x |B| x |P|
recurrences, replays Zeus, grid search with pruning and Default over ``--seeds`` seeds
and prints:

* the ETA and TTA of the last five recurrences relative to Default (paper Fig. 6:
  Zeus uses 15.3 %-75.8 % less energy), mean and spread over seeds; the
  denominator is Default's expected recurrence ETA / TTA (b0 at MAXPOWER, mean
  epochs over the recorded runs), so the seeds' spread is Zeus's own;
* the cumulative regret (Eq. 8 against the exact optimum of the trace) of Zeus
  and of grid search after the last recurrence, mean and std over seeds
  (paper Fig. 7), and their ratio.

Usage::

    .venv/bin/python benchmarks/tuning_replay.py --seeds 10
    .venv/bin/python benchmarks/tuning_replay.py --seeds 10 --json out.json --plot regret.png
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import energyopt
from energyopt.tuning import exact_reference
from energyopt.tuning.suites import DATA, paper_trace_notes, suite, trace_available
from energyopt.tuning.trace import trace_gpus

PAPER_FIG6 = "15.3 %-75.8 % less energy than Default (V100, Fig. 6a)"


def default_expected(inst) -> tuple[float, float]:
    """Expected (ETA, TTA) of one Default recurrence: b0 at MAXPOWER, mean epochs.

    A run that misses the target (possible when b0 was substituted) trains
    ``max_epochs`` and is retried: with a miss probability q, a recurrence trains
    on average the successful runs' mean plus ``q / (1 - q) * max_epochs`` epochs.
    """
    i = inst.index_of_batch(inst.default_batch_size)
    j = inst.index_of_power(max(inst.power_limits_w))
    paths = inst.target_epochs[i]
    runs = [e for e in paths if e is not None and e <= inst.max_epochs]
    if not runs:
        raise ValueError(f"{inst.name}: no run of b0 reaches the target")
    q = 1 - len(runs) / len(paths)
    epochs = sum(runs) / len(runs) + q / (1 - q) * inst.max_epochs
    t = inst.epoch_time_s[i][j]
    return epochs * t * inst.avg_power_w[i][j], epochs * t


def spread(xs: list[float]) -> str:
    m = statistics.fmean(xs)
    s = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{m:.3f} ± {s:.3f} [{min(xs):.3f}, {max(xs):.3f}]"


def mega(xs: list[float]) -> str:
    sd = statistics.stdev(xs) if len(xs) > 1 else 0.0
    return f"{statistics.fmean(xs) / 1e6:.3g} ± {sd / 1e6:.2g}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--data-dir", type=Path, default=DATA)
    ap.add_argument("--json", type=Path, default=None, help="write all figures as JSON")
    ap.add_argument("--plot", type=Path, default=None, help="regret curves PNG (Fig. 7)")
    args = ap.parse_args(argv)
    tick = time.perf_counter()
    real = trace_available(args.data_dir)
    insts = suite("paper", data_dir=args.data_dir)
    print(
        f"data: {'Zeus trace ' + str(args.data_dir) if real else 'GENERATED instances (no trace)'}"
    )
    if real:
        print(f"GPUs (one summary_power_<gpu>.csv each): {', '.join(trace_gpus(args.data_dir))}")
        for note in paper_trace_notes(args.data_dir):
            print(f"note: {note}")
    print(f"seeds: 0..{args.seeds - 1}; eta = 0.5, beta = 2, recurrences = 2 x |B| x |P|\n")
    rows, out = [], []
    for inst in insts:
        ref = exact_reference(inst)
        e_def, t_def = default_expected(inst)
        rec: dict[str, dict[str, list]] = {}
        for m in ("zeus", "grid-search", "default"):
            d = rec.setdefault(m, {"eta": [], "tta": [], "regret": [], "curve": []})
            for seed in range(args.seeds):
                r = energyopt.solve(inst, m, seed=seed)
                if r.objective is None:
                    raise SystemExit(f"{inst.name} {inst.gpu} {m} seed {seed}: {r.message}")
                d["eta"].append(r.extra["last5_energy_j"] / e_def)
                d["tta"].append(r.extra["last5_time_s"] / t_def)
                d["regret"].append(r.extra["cumulative_regret"])
                d["curve"].append(r.extra["regret_curve"])
        z, g = rec["zeus"], rec["grid-search"]
        ratio = statistics.fmean(g["regret"]) / statistics.fmean(z["regret"])
        rows.append(
            (
                inst.gpu,
                inst.name,
                f"{len(inst.batch_sizes)}x{len(inst.power_limits_w)}",
                inst.recurrences,
                spread(z["eta"]),
                spread(z["tta"]),
                spread(g["eta"]),
                mega(z["regret"]),
                mega(g["regret"]),
                f"{ratio:.1f}",
                f"b={ref.batch_size}, {ref.power_limit_w:g} W",
            )
        )
        out.append(
            {
                "gpu": inst.gpu,
                "workload": inst.name,
                "source": inst.source.get("kind"),
                "recurrences": inst.recurrences,
                "optimum": [ref.batch_size, ref.power_limit_w, ref.c_star],
                "default_expected_eta_j": e_def,
                "default_expected_tta_s": t_def,
                **{
                    m: {k: v for k, v in d.items() if k != "curve"}
                    | {"mean_curve": list(np.mean(d["curve"], axis=0))}
                    for m, d in rec.items()
                },
            }
        )
    head = (
        "gpu",
        "workload",
        "BxP",
        "T",
        "Zeus ETA/Default (last 5)",
        "Zeus TTA/Default (last 5)",
        "Grid ETA/Default (last 5)",
        "Zeus regret (MJ)",
        "Grid regret (MJ)",
        "Grid/Zeus",
        "optimum",
    )
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(str(x) for x in row) + " |")
    print("\nETA/TTA: mean ± std [min, max] over seeds of the last five recurrences' mean,")
    print("divided by Default's expected recurrence ETA/TTA. Regret: Eq. 8 after T recurrences.")
    for gpu in sorted({o["gpu"] for o in out}):
        savings = [1 - statistics.fmean(o["zeus"]["eta"]) for o in out if o["gpu"] == gpu]
        print(
            f"{gpu}: Zeus energy saving vs Default, mean over seeds, per workload: "
            f"{min(savings) * 100:.1f} %-{max(savings) * 100:.1f} % (paper: {PAPER_FIG6})"
        )
    print(f"\nwall time {time.perf_counter() - tick:.1f} s")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1))
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        pick = [o for o in out if o["workload"] in ("librispeech/deepspeech2", "imagenet/resnet50")]
        pick = pick or out[:2]
        fig, axes = plt.subplots(1, len(pick), figsize=(4 * len(pick), 3))
        for ax, o in zip(np.atleast_1d(axes), pick):
            for m in ("zeus", "grid-search"):
                ax.plot(np.asarray(o[m]["mean_curve"]) / 1e6, label=m)
            ax.set_title(f"{o['workload']} ({o['gpu']})", fontsize=8)
            ax.set_xlabel("recurrence")
            ax.set_ylabel("cumulative regret (MJ)")
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(args.plot, dpi=120)
    return 0


if __name__ == "__main__":
    sys.exit(main())
