"""Zeus's window under a SYNTHETIC drift (paper Sec. 4.4; the Capriccio run of Sec. 6.4
is end to end and has no trace).

The job recurs ``--before`` times on a trace instance, then ``--after`` times on a
drifted copy in which the optimal batch size needs ``--factor`` times more epochs
in every recorded run (the data got harder for it). One Zeus policy lives
through both phases; the replay's early-stopping threshold restarts with the
second phase. Prints the cumulative regret of the second phase (against the
drifted instance's optimum) for several windows, mean ± std over seeds.

Usage::

    .venv/bin/python benchmarks/tuning_drift.py --seeds 10 --window 0 5 10
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import numpy as np

from energyopt.tuning import ZeusPolicy, evaluate, exact_reference, replay
from energyopt.tuning.suites import DATA, suite, trace_available


def drifted(inst, factor: float):
    ref = exact_reference(inst)
    i = inst.index_of_batch(ref.batch_size)
    rows = list(inst.target_epochs)
    rows[i] = tuple(None if e is None else max(1, round(e * factor)) for e in rows[i])
    src = {
        **inst.source,
        "kind": f"{inst.source.get('kind')} + SYNTHETIC drift x{factor} on b={ref.batch_size}",
    }
    return inst.with_knobs(target_epochs=tuple(rows), source=src)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--window", type=int, nargs="+", default=[0, 5, 10])
    ap.add_argument("--before", type=int, default=100)
    ap.add_argument("--after", type=int, default=100)
    ap.add_argument("--factor", type=float, default=1.6)
    ap.add_argument("--workload", default="librispeech/deepspeech2")
    ap.add_argument("--gpu", default="v100")
    ap.add_argument("--data-dir", type=Path, default=DATA)
    args = ap.parse_args(argv)
    insts = suite("paper", data_dir=args.data_dir)
    if trace_available(args.data_dir):
        insts = [i for i in insts if i.name == args.workload and i.gpu == args.gpu]
    a = insts[0].with_knobs(recurrences=args.before)
    b = drifted(a, args.factor).with_knobs(recurrences=args.after)
    ra, rb = exact_reference(a), exact_reference(b)
    print(f"{a.name} ({a.gpu}); source: {b.source['kind']}")
    print(f"optimum before: b={ra.batch_size}, {ra.power_limit_w:g} W; "
          f"after: b={rb.batch_size}, {rb.power_limit_w:g} W")  # fmt: skip
    print("| window | regret after drift (MJ) | runs of the old optimum in the last 20 |")
    print("|---|---|---|")
    for w in args.window:
        regrets, stuck = [], []
        for seed in range(args.seeds):
            seq = np.random.SeedSequence(seed).spawn(2)
            paths, pol = (np.random.default_rng(s) for s in seq)
            policy = ZeusPolicy(a, pol, window=w)
            replay(a, policy, paths)
            policy.instance = b  # same B and P: only the training paths changed
            log = replay(b, policy, paths)
            ev = evaluate(b, log.runs)
            assert ev.feasible, ev.violations[:3]
            regrets.append(sum(ev.recurrence_cost) - b.recurrences * rb.c_star)
            last = [r for r in log.runs if r.recurrence >= b.recurrences - 20]
            stuck.append(sum(r.batch_size == ra.batch_size for r in last))
        sd = statistics.stdev(regrets) if len(regrets) > 1 else 0.0
        print(f"| {w or 'all'} | {statistics.fmean(regrets) / 1e6:.3g} ± {sd / 1e6:.2g} | "
              f"{statistics.fmean(stuck):.1f} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
